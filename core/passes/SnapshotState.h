#pragma once

#include "core/ir/Graph.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace sextant::passes {

/// A value that no node produces (a graph input or a constant), frozen as plain data.
struct ValueRecord {
    std::string name;
    ir::TensorType type;
    std::optional<ir::Tensor> constant; ///< shares storage with the live graph's tensor
    bool isInput = false;
};

/// One node frozen as plain data: what printGraph shows of it, nothing that points into a Graph.
/// Records are immutable and shared between snapshots: a pass that leaves a node alone makes the
/// next snapshot point at the same record. A pass that changes a node's types (say) makes a new
/// record that still shares the parts that did not change (inputs, attributes, provenance).
struct NodeRecord {
    std::string name;
    ir::OpKind kind{};
    std::shared_ptr<const std::vector<std::string>> inputs; ///< value names; "" for an omitted one
    std::vector<std::string> outputNames;
    std::vector<ir::TensorType> outputTypes;
    std::shared_ptr<const ir::AttributeMap> attrs;
    std::shared_ptr<const ir::Provenance> provenance;
    ir::Precision precision = ir::Precision::Unset;
    bool view = false;
    std::shared_ptr<const ir::FusedBody> body; ///< shared with the node (immutable)
};

class RecordStore;

/// The immutable, structurally shared state of one pipeline snapshot: the graph as sequences of
/// shared records. Consecutive snapshots share every record their passes did not touch, so a
/// pipeline's snapshots cost about one graph plus what the passes changed. A Graph is built from
/// the records on demand (graph()) and its text printed on demand (text()).
class SnapshotState {
public:
    /// Freezes `graph`. Records equal to `previous`'s (matched by node / value name, compared
    /// field by field, tensors by content) are shared instead of copied. `changed` (if given)
    /// receives whether the graph differs from `previous` in anything printGraph shows; when it
    /// does not, the caller should keep `previous` itself. `previous` may be null.
    static std::shared_ptr<const SnapshotState> capture(const ir::Graph& graph,
                                                        const SnapshotState* previous,
                                                        bool* changed = nullptr);

    /// The graph this state describes, built from the records on first use and kept only while
    /// a caller holds it (a weak cache), so browsing snapshots does not pin a copy of each.
    /// Hold the returned pointer while using nodes or values from it.
    std::shared_ptr<const ir::Graph> graph() const;
    /// ir::printGraph of graph(), printed on first use and kept.
    const std::string& text() const;
    /// True once text() has been asked for (its bytes are then part of the footprint).
    bool hasText() const;
    /// The graph if it is currently built and held by someone, else null (for footprints).
    std::shared_ptr<const ir::Graph> cachedGraph() const;

    const std::string& graphName() const { return m_name; }
    /// Graph inputs and constants, in the live graph's creation order.
    const std::vector<const ValueRecord*>& sources() const { return m_sources; }
    /// Nodes in graph order.
    const std::vector<const NodeRecord*>& nodes() const { return m_nodes; }
    /// Graph output value names, in order.
    const std::vector<std::string>& outputs() const { return m_outputs; }
    size_t numNodes() const { return m_nodes.size(); }
    /// Bytes of the per-node keys that let the next capture skip unchanged nodes (footprints).
    size_t keyBytes() const {
        return m_nodeKeys.capacity() * sizeof(NodeKey) + m_sourceStamps.capacity() * sizeof(uint64_t);
    }
    /// The store that owns this snapshot's records, shared by every snapshot captured against
    /// it (for footprints: count each store once).
    const RecordStore* store() const { return m_store.get(); }
    /// Bytes the store has reserved for records it has not made yet (for footprints).
    size_t storeSlackBytes() const;

private:
    Expected<std::unique_ptr<ir::Graph>> build() const;

    std::string m_name;
    /// Owns the records. Snapshots captured one against another share it, so a record lives as
    /// long as any snapshot that may point at it, and sharing a record is copying a pointer.
    std::shared_ptr<RecordStore> m_store;
    std::vector<const ValueRecord*> m_sources;
    std::vector<const NodeRecord*> m_nodes;
    /// For each record: the live node it was made from (Node::uid) and that node's version then.
    /// The next capture shares the record of a node whose uid and version are still these
    /// without comparing anything else.
    struct NodeKey {
        uint64_t uid = 0;
        uint32_t version = 0;
    };
    std::vector<NodeKey> m_nodeKeys;
    /// For each source record: the live value's Value::stamp() when the record was made or last
    /// found equal. The next capture shares the record of a value that still has this stamp.
    std::vector<uint64_t> m_sourceStamps;
    std::vector<std::string> m_outputs;

    mutable std::mutex m_mutex; ///< guards the two caches (views read snapshots from threads)
    mutable std::weak_ptr<const ir::Graph> m_graph;
    mutable std::optional<std::string> m_text;
};

} // namespace sextant::passes
