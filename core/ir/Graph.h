#pragma once

#include "Attribute.h"
#include "Error.h"
#include "FusedBody.h"
#include "InlineVector.h"
#include "NameIndex.h"
#include "OpRegistry.h"
#include "Precision.h"
#include "Tensor.h"
#include "TensorType.h"

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace sextant::ir {

class Graph;
class Node;
class Value;

/// Deleter for nodes and values: they live in their graph's memory pool (see Graph::m_pool).
struct PoolDelete {
    std::pmr::memory_resource* pool = nullptr;
    template <typename T> void operator()(T* p) const {
        p->~T();
        pool->deallocate(p, sizeof(T), alignof(T));
    }
};
using NodeList = std::pmr::list<std::unique_ptr<Node, PoolDelete>>;

/// An SSA value: produced by one node (or a graph input, or a constant), used by many.
class Value {
public:
    const std::string& name() const { return m_name; }
    const TensorType& type() const { return m_type; }
    /// Sets the type (and counts as a change of the producer, see Node::version()).
    void setType(TensorType t);
    /// The node that computes this value; nullptr for graph inputs and constants.
    Node* producer() const { return m_producer; }
    /// Index of this value among its producer's outputs.
    int producerOutput() const { return m_producerOutput; }
    /// One entry per use (a node using the value twice appears twice), in the order uses were made.
    const InlineVector<Node*, 2>& users() const { return m_users; }
    bool isConstant() const { return m_isConstant; }
    /// Constant data (weights, folded values); nullptr unless isConstant().
    const Tensor* constant() const { return m_constant ? &*m_constant : nullptr; }
    bool isGraphInput() const { return m_isInput; }
    bool isGraphOutput() const { return m_isOutput; }
    /// A number unique among the values this graph has ever had, below Graph::valueIdBound():
    /// lets a whole-graph walk keep per-value state in a vector instead of a hash table.
    uint32_t id() const { return m_id; }
    /// A number no value has had before in this process, given when the value is made and again
    /// whenever its name or type changes (its other printed parts, the constant's data and the
    /// graph-input mark, never change). The same stamp means the same printout, so a caller that
    /// saw the value before can tell it is unchanged without comparing it (the snapshots do).
    uint64_t stamp() const { return m_stamp; }

private:
    friend class Graph;
    void restamp();
    // What whole-graph walks read (producer, id, flags, uses) fills the first cache line and the
    // type follows; the name and the constant's data come last.
    Node* m_producer = nullptr;
    uint64_t m_stamp = 0;
    uint32_t m_id = 0;
    int m_producerOutput = 0;
    uint32_t m_slot = 0; ///< index in Graph::m_valueSlots
    bool m_isInput = false;
    bool m_isOutput = false;
    bool m_isConstant = false;       ///< m_constant is set (kept here, beside the other flags)
    bool m_queuedForCleanup = false; ///< listed in Graph::m_cleanupCandidates
    InlineVector<Node*, 2> m_users;
    TensorType m_type;
    std::string m_name;
    std::optional<Tensor> m_constant;
};

/// Where a node came from: the original ONNX node names it covers and the pass/rule that made it.
struct Provenance {
    std::vector<std::string> origins; ///< sorted, unique ONNX node names
    std::string createdBy;            ///< "import", or "<pass-id>/<rule-id>"
};

/// An operation. Its name is a stable id: passes keep it (or derive new ones from it) so that
/// textual diffs between snapshots show real changes, not renumbering.
class Node {
public:
    const std::string& name() const { return m_name; }
    OpKind kind() const { return m_kind; }
    const OpInfo& info() const { return opInfo(m_kind); }
    /// Inputs in order; an omitted optional input is nullptr.
    const InlineVector<Value*, 5>& inputs() const { return m_inputs; }
    Value* input(size_t i) const { return i < m_inputs.size() ? m_inputs[i] : nullptr; }
    size_t numInputs() const { return m_inputs.size(); }
    const InlineVector<Value*, 1>& outputs() const { return m_outputs; }
    Value* output(size_t i = 0) const { return m_outputs[i]; }
    size_t numOutputs() const { return m_outputs.size(); }

    const AttributeMap& attrs() const { return m_attrs ? *m_attrs : emptyAttrs(); }
    /// The attributes as an immutable map that can be kept: a clone of the graph and the
    /// pipeline's snapshots share it instead of copying it. Null when the node has none.
    /// Changing the node's attributes afterwards copies the map first (copy on write), so a
    /// kept map never changes.
    const std::shared_ptr<const AttributeMap>& sharedAttrs() const { return m_sharedAttrs; }
    /// Counts as a change (see version()) when called: change the attributes right away.
    AttributeMap& mutableAttrs() {
        ++m_version;
        return ownAttrs();
    }
    bool hasAttr(const std::string& n) const { return m_attrs && m_attrs->count(n) != 0; }
    const Attribute* attr(const std::string& n) const;
    void setAttr(const std::string& n, Attribute v) {
        ++m_version;
        ownAttrs()[n] = std::move(v);
    }
    int64_t attrInt(const std::string& n, int64_t dflt) const;
    double attrFloat(const std::string& n, double dflt) const;
    std::string attrString(const std::string& n, const std::string& dflt) const;
    std::vector<int64_t> attrInts(const std::string& n, std::vector<int64_t> dflt = {}) const;
    std::vector<double> attrFloats(const std::string& n, std::vector<double> dflt = {}) const;
    const Graph* attrGraph(const std::string& n) const;

    /// The precision the NPU computes this node in, as the `precision` pass chose it (Unset until
    /// it runs). The IR text shows it as the attribute `precision = "f16"` would appear, in its
    /// name's sorted place among the attributes.
    Precision precision() const { return m_precision; }
    /// Counts as a change (see version()).
    void setPrecision(Precision p) {
        ++m_version;
        m_precision = p;
    }
    /// Whether the layout pass marked this reshape-like node a view: it moves no data and shares
    /// its input's buffer (backend::isViewNode has the last word); or this Concat in place: its
    /// inputs are written straight into their parts of its output (backend::lowersInPlace has
    /// the last word). Printed as `view = 1`.
    bool isView() const { return m_view; }
    /// Counts as a change (see version()).
    void setView(bool view) {
        ++m_version;
        m_view = view;
    }
    /// A sextant.ElementwiseGroup's steps (null on other nodes), immutable and shared by clones
    /// and snapshots. Printed as `body = ["Mul(i0,i1)", ...]` (see FusedBody.h).
    const FusedBody* body() const { return m_body.get(); }
    const std::shared_ptr<const FusedBody>& sharedBody() const { return m_body; }
    /// Counts as a change (see version()).
    void setBody(std::shared_ptr<const FusedBody> body) {
        ++m_version;
        m_body = std::move(body);
    }

    const Provenance& provenance() const { return m_provenance; }
    /// Counts as a change (see version()) when called.
    Provenance& mutableProvenance() {
        ++m_version;
        return m_provenance;
    }
    Graph* graph() const { return m_graph; }

    /// Unique among all nodes this process has made (never reused, unlike the node's address).
    uint64_t uid() const { return m_uid; }
    /// Goes up whenever something a printout of the node shows may have changed: its name, its
    /// inputs or their names, its outputs' names or types, its attributes, precision, view mark or
    /// body, or its provenance.
    /// With uid(), lets a caller that saw the node before tell that it is unchanged without
    /// comparing it field by field (the pipeline's snapshots share such nodes' records).
    uint32_t version() const { return m_version; }

    /// A number the running pass may keep on the node, such as its position in a list the pass
    /// made, so that it can look the number up without a hash table keyed by node. Nothing else
    /// reads it; a new node starts at 0, and a pass sets it before it reads it.
    uint32_t scratch() const { return m_scratch; }
    void setScratch(uint32_t s) { m_scratch = s; }

private:
    friend class Graph;
    friend class Value; // Value::setType counts as a change of its producer
    static const AttributeMap& emptyAttrs();
    /// The attribute map, unshared first if anyone else holds it (see sharedAttrs()).
    AttributeMap& ownAttrs();
    void setSharedAttrs(std::shared_ptr<const AttributeMap> a);

    // What whole-graph walks read (kind, identity, operands) fills the first cache line; the
    // name, attributes and provenance follow.
    OpKind m_kind{};
    uint32_t m_version = 0;
    uint64_t m_uid = 0;
    InlineVector<Value*, 5> m_inputs;
    InlineVector<Value*, 1> m_outputs;
    Graph* m_graph = nullptr;
    NodeList::iterator m_pos;
    uint32_t m_scratch = 0;
    Precision m_precision = Precision::Unset;
    bool m_view = false;
    std::string m_name;
    /// The attributes: m_attrs points into m_sharedAttrs (null when there are none). The map is
    /// changed in place only while nothing else shares it.
    std::shared_ptr<const AttributeMap> m_sharedAttrs;
    AttributeMap* m_attrs = nullptr;
    std::shared_ptr<const FusedBody> m_body;
    Provenance m_provenance;
};

/// A node Graph::eraseNode removed, as it tells its erase log (see Graph::setEraseLog).
struct ErasedNode {
    const Node* node;  ///< freed: compare it, never follow it
    std::string name;
    uint32_t scratch;  ///< the node's Node::scratch() when it was erased
};

/// A dataflow graph. Nodes are kept in a topological order that passes may disturb and
/// topoSort() restores (stably). Iteration order never depends on pointer values.
class Graph {
public:
    explicit Graph(std::string name = "main");
    ~Graph();
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    const std::string& name() const { return m_name; }
    void setName(std::string n) { m_name = std::move(n); }

    /// Adds a graph input. Fails if the name is taken.
    Expected<Value*> addInput(const std::string& name, TensorType type);
    /// Adds a constant (weight, folded value). Its type comes from the tensor.
    Expected<Value*> addConstant(const std::string& name, Tensor data);
    /// Adds a node computing `outputNames.size()` new values. Outputs get a placeholder type
    /// until inferTypes() or the caller sets them. Inserts before `before`, or at the end.
    Expected<Node*> addNode(OpKind kind, const std::string& name, std::vector<Value*> inputs,
                            const std::vector<std::string>& outputNames, AttributeMap attrs = {},
                            Node* before = nullptr);
    /// Marks values as the graph's outputs, in order.
    void setOutputs(std::vector<Value*> outputs);

    const std::vector<Value*>& inputs() const { return m_inputs; }
    const std::vector<Value*>& outputs() const { return m_outputs; }
    /// Constants in creation order.
    std::vector<Value*> constants() const;
    size_t numConstants() const { return m_numConstants; }
    /// Nodes in their current order (a snapshot: safe to mutate the graph while walking it).
    std::vector<Node*> nodes() const;
    /// The same order without a copy, for a walk that does not add, erase or reorder nodes
    /// while it runs (any of those invalidates the reference). Kept between such changes, so
    /// walks in a row (a pass, the snapshot after it, the verifier) read one array instead of
    /// each chasing the node list through memory.
    const std::vector<Node*>& nodeOrder() const;
    size_t numNodes() const { return m_nodes.size(); }
    /// Changes whenever a node is added, erased or renamed (never otherwise), so a caller that
    /// looked a node up by name can tell whether the lookup could now give another answer.
    uint64_t structureVersion() const { return m_structureVersion; }
    /// Every live value in creation order.
    std::vector<Value*> values() const;
    /// Calls f(Value*) for every live value in creation order, without copying the list as
    /// values() does (a whole-graph walk after every pass, such as the verifier's, then reads
    /// one array). The graph must not gain or lose values meanwhile.
    template <typename F> void forEachValue(F&& f) const {
        for (Value* v : m_valueSlots)
            if (v)
                f(v);
    }
    /// One more than the largest Value::id() given out so far.
    uint32_t valueIdBound() const { return m_nextValueId; }

    /// Whether `v` is one of this graph's live values (not another graph's, not a freed one).
    bool owns(const Value* v) const {
        return v && v->m_slot < m_valueSlots.size() && m_valueSlots[v->m_slot] == v;
    }

    Value* findValue(const std::string& name) const;
    Node* findNode(const std::string& name) const;
    /// A name not yet used by a value or node: `base`, else `base_1`, `base_2`, ...
    std::string uniqueName(const std::string& base) const;

    /// Rewires input `index` of `node` to `v` (nullptr to omit it).
    void setInput(Node* node, size_t index, Value* v);
    /// Points every use of `from` (including graph outputs) at `to`.
    void replaceAllUsesWith(Value* from, Value* to);
    /// Removes a node whose outputs have no users and are not graph outputs; its inputs lose a use.
    Status eraseNode(Node* node);
    /// While set, eraseNode appends the node, its name and its scratch number to `log` before
    /// freeing it, so a caller walking a list of node pointers it made earlier can tell which of
    /// them are gone (and by which name to look for what replaced them). Null detaches it.
    void setEraseLog(std::vector<ErasedNode>* log) { m_eraseLog = log; }
    /// Removes constants and inputs-free values nothing uses (graph inputs are kept).
    void removeUnusedConstants();
    /// Renames a value (keeps the name index in step). Fails if the name is taken.
    Status renameValue(Value* v, const std::string& newName);
    /// Renames a node (keeps the name index in step). Fails if the name is taken.
    Status renameNode(Node* n, const std::string& newName);

    /// Restores a topological order, keeping the current relative order where possible.
    /// Fails with the names involved if the graph has a cycle.
    Status topoSort();
    /// Runs each node's shape/type inference in order and sets its outputs' types; sets
    /// `*changed` (when given) to whether any type differs from before.
    Status inferTypes(bool* changed = nullptr);

    /// A deep copy of the structure; constant tensors share storage with this graph. Fails
    /// (ErrorKind::Verify, naming the value and its user) when a node or a graph output uses a
    /// value this graph does not define before that use: a node order that is not topological,
    /// or a value of another graph. The verifier reports the same graphs; clone may meet them
    /// first (the interpreter and the pipeline copy their input before verifying it).
    Expected<std::unique_ptr<Graph>> clone() const;

private:
    Value* newValue(const std::string& name);
    /// Removes a value from the slots and the name index and frees it.
    void destroyValue(Value* v);
    void dropUse(Value* v, Node* user);
    /// Lists a constant that has (or may have) lost its last use, so that removeUnusedConstants
    /// looks at the constants that could have become unused, not at every value of the graph:
    /// rewrites call it once per fusion, and a scan of the whole graph each time made the pass
    /// pipeline quadratic in the graph size.
    void queueForCleanup(Value* v);

    std::string m_name;
    /// Nodes, values and their list links are allocated from this pool rather than one by one
    /// from the global heap: they then sit together in memory, in roughly the order they were
    /// made (graph order, for an imported graph), so walks over the whole graph touch far fewer
    /// cache lines and pages. Declared before the lists, so it outlives them.
    std::unique_ptr<std::pmr::unsynchronized_pool_resource> m_pool;
    NodeList m_nodes;
    /// m_nodes as an array (see nodeOrder()), rebuilt on demand after a change to the order.
    /// Const readers on several threads may ask for it at once, hence the lock around rebuilds.
    mutable std::vector<Node*> m_order;
    mutable std::atomic<bool> m_orderValid{false};
    mutable std::mutex m_orderMutex;
    /// Every value, in creation order, with nullptr where a value was removed: values are only
    /// ever appended, so a walk over them is a scan of this array rather than a chase through
    /// list links (on a big graph, a cache miss per value). Compacted once the holes outnumber
    /// the values. The values live in m_pool; the graph frees them itself.
    std::vector<Value*> m_valueSlots;
    size_t m_numValues = 0;
    size_t m_numConstants = 0;
    /// Name indexes, keyed by the values' and nodes' own names (see NameIndex).
    NameIndex<Value> m_valueIndex;
    NameIndex<Node> m_nodeIndex;
    std::vector<Value*> m_inputs;
    std::vector<Value*> m_outputs;
    /// Constants that were unused, or lost a use or their graph-output mark, since the last
    /// removeUnusedConstants (each listed once; see queueForCleanup).
    std::vector<Value*> m_cleanupCandidates;
    uint64_t m_structureVersion = 0;
    uint32_t m_nextValueId = 0;
    std::vector<ErasedNode>* m_eraseLog = nullptr;
};

/// Whether input `index` of `user` is a weight-like operand: a Conv's or BatchNormalization's
/// parameters, a FusedConv's weights, bias and input prologue's scale and shift (its input 3, a
/// residual, is an activation), the second and third operands of Gemm, FusedGemm and MatMul.
bool isWeightOperand(const Node& user, size_t index);
/// Whether FusedConv `n` has an input prologue: inputs 4 and 5, a scale and a shift per input
/// channel applied to its data before the product (x * scale + shift), then the activation its
/// attribute "prologue_activation" names ("" or "Relu"). fuse-conv-prologue makes it from the
/// BatchNormalization + Relu a pre-activation network puts before a convolution.
bool hasInputPrologue(const Node& n);
/// Whether `v` is read, and only ever as a weight operand (isWeightOperand), directly or through
/// ops that only reshape it (Reshape, Flatten, Squeeze, Unsqueeze) into one, and is not a graph
/// output: a value that sits in memory as a constant of the program, whatever computes it.
bool onlyFeedsWeights(const Value* v);

} // namespace sextant::ir
