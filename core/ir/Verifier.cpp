#include "Verifier.h"

#include "Printer.h"

#include <vector>

namespace sextant::ir {

namespace {

Error nodeError(const Node& n, const std::string& message) {
    return makeError(ErrorKind::Verify,
                     "node '" + n.name() + "' (" + qualifiedOpName(n.kind()) + "): " + message, n.name());
}

/// Inferred and stored types agree where both are known; a symbolic dim matches anything.
bool compatible(const TensorType& inferred, const TensorType& stored) {
    if (inferred.dtype != stored.dtype || inferred.rank() != stored.rank())
        return false;
    for (size_t i = 0; i < inferred.rank(); ++i) {
        const Dim& a = inferred.shape[i];
        const Dim& b = stored.shape[i];
        if (a.isKnown() && b.isKnown() && a.value != b.value)
            return false;
    }
    return true;
}

/// The typed fields sit on nodes that can have them, and no attribute hides one: text written
/// as `precision = "f16"` is the field (Parser.cpp), so an attribute of that name would print twice.
Status checkFields(const Node& n) {
    if (n.body() && n.kind() != OpKind::ElementwiseGroup)
        return nodeError(n, "has a fused body but is not a sextant.ElementwiseGroup");
    // A reshape viewed in place of a copy, or a Concat written in place (concat-in-place).
    if (n.isView() && n.info().layout != LayoutClass::View && n.kind() != OpKind::Concat)
        return nodeError(n, "is marked a view but its op never is one");
    for (std::string_view field : {kPrecisionFieldName, kViewFieldName, kBodyFieldName})
        if ((field != kBodyFieldName || n.kind() == OpKind::ElementwiseGroup) &&
            n.hasAttr(std::string(field)))
            return nodeError(n, "attribute '" + std::string(field) +
                                    "' must be set as the node's field, not as an attribute");
    return {};
}


/// Which of one graph's values are defined so far, one bit per Value::id (a value of another
/// graph with the same id is told apart by Graph::owns first). Bits, not a table of pointers:
/// the table was the size of every value the graph ever had, cleared and read at random on
/// every verification, which on a big graph meant a cache miss per operand.
class DefinedValues {
public:
    explicit DefinedValues(const Graph& graph) : m_graph(graph), m_bits(graph.valueIdBound()) {}
    bool owns(const Value* v) const { return m_graph.owns(v); }
    bool isDefined(const Value* v) const { return owns(v) && m_bits[v->id()]; }
    void define(const Value* v) {
        if (owns(v))
            m_bits[v->id()] = true;
    }

private:
    const Graph& m_graph;
    std::vector<bool> m_bits;
};

/// Defines the constants and the graph inputs, which no node may produce.
Status defineGraphInputs(const Graph& graph, DefinedValues& defined) {
    // One walk over the values: define the constants, and remember the first constant that also
    // has a producer (reported after any error in the graph inputs).
    const Value* producedConstant = nullptr;
    graph.forEachValue([&](const Value* v) {
        if (!v->isConstant())
            return;
        defined.define(v);
        if (v->producer() && !producedConstant)
            producedConstant = v;
    });
    for (const Value* v : graph.inputs()) {
        if (v->producer() || v->isConstant())
            return makeError(ErrorKind::Verify,
                             "graph input '" + v->name() + "' is also produced by a node or a constant",
                             v->name());
        defined.define(v);
    }
    if (const Value* c = producedConstant)
        return makeError(ErrorKind::Verify,
                         "constant '" + c->name() + "' is also produced by node '" +
                             c->producer()->name() + "'",
                         c->name());
    return {};
}

/// The node has as many inputs and outputs as its op allows.
Status checkArity(const Node& n) {
    const OpInfo& info = n.info();
    const int nin = static_cast<int>(n.numInputs());
    const int nout = static_cast<int>(n.numOutputs());
    if (nin < info.minInputs || (info.maxInputs >= 0 && nin > info.maxInputs))
        return nodeError(n, "has " + std::to_string(nin) + " inputs, the op takes " +
                                std::to_string(info.minInputs) + ".." +
                                (info.maxInputs < 0 ? std::string("n")
                                                    : std::to_string(info.maxInputs)));
    if (nout < info.minOutputs || nout > info.maxOutputs)
        return nodeError(n, "has " + std::to_string(nout) + " outputs, the op gives " +
                                std::to_string(info.minOutputs) + ".." +
                                std::to_string(info.maxOutputs));
    return {};
}

/// The node's inputs are values of this graph defined before it (or optional and absent), and
/// its outputs name it as their producer and are not defined yet.
Status checkOperands(const Node& n, const DefinedValues& defined) {
    const int nin = static_cast<int>(n.numInputs());
    const int nout = static_cast<int>(n.numOutputs());
    for (int i = 0; i < nin; ++i) {
        const Value* in = n.input(static_cast<size_t>(i));
        if (!in) {
            if (i < n.info().minInputs)
                return nodeError(n, "required input " + std::to_string(i) + " is missing");
            continue;
        }
        if (!defined.owns(in))
            return nodeError(n, "input '" + in->name() + "' does not belong to this graph");
        if (!defined.isDefined(in))
            return nodeError(n, "input '" + in->name() + "' is used before it is defined" +
                                    (in->producer() ? " (by node '" + in->producer()->name() + "')"
                                                    : std::string()));
    }
    for (int i = 0; i < nout; ++i) {
        const Value* o = n.output(static_cast<size_t>(i));
        if (o->producer() != &n || o->producerOutput() != i)
            return nodeError(n, "output '" + o->name() + "' does not name this node as its producer");
        if (defined.isDefined(o))
            return nodeError(n, "output '" + o->name() + "' is defined twice");
    }
    return {};
}

/// The op's own verifier and shape inference, which must give a type for every output.
Expected<std::vector<TensorType>> inferTypes(const Node& n) {
    const OpInfo& info = n.info();
    Status st = info.verify(n);
    if (!st.ok())
        return nodeError(n, st.error().message);
    auto types = info.infer(n);
    if (!types.ok())
        return nodeError(n, types.error().message);
    if (types->size() < n.numOutputs())
        return nodeError(n, "shape inference gave " + std::to_string(types->size()) + " types for " +
                                std::to_string(n.numOutputs()) + " outputs");
    return types;
}

/// Subgraphs are verified as graphs of their own; an If's branch inputs bind to the node's inputs
/// after the condition, positionally.
Status checkSubgraph(const Node& n, const std::string& attrName, const Graph& body) {
    // A Loop's or Scan's body binds iteration values, states and slices as well (their op
    // verifiers check it); only the body itself is verified here.
    if (n.kind() == OpKind::Loop || n.kind() == OpKind::Scan) {
        if (Status st = verifyGraph(body); !st.ok())
            return nodeError(n, "in subgraph '" + attrName + "': " + st.error().message);
        return {};
    }
    const int nin = static_cast<int>(n.numInputs());
    const int nout = static_cast<int>(n.numOutputs());
    if (body.inputs().size() + 1 != n.numInputs())
        return nodeError(n, "subgraph '" + attrName + "' takes " + std::to_string(body.inputs().size()) +
                                " inputs but the node passes " + std::to_string(nin - 1) +
                                " captured values");
    if (body.outputs().size() != static_cast<size_t>(nout))
        return nodeError(n, "subgraph '" + attrName + "' has " + std::to_string(body.outputs().size()) +
                                " outputs but the node has " + std::to_string(nout));
    for (size_t i = 0; i < body.inputs().size(); ++i) {
        const Value* outer = n.input(i + 1);
        const Value* formal = body.inputs()[i];
        if (outer && !compatible(outer->type(), formal->type()))
            return nodeError(n, "subgraph '" + attrName + "' input '" + formal->name() + "' is " +
                                    printType(formal->type()) + " but the node passes '" + outer->name() +
                                    "' of type " + printType(outer->type()));
    }
    if (Status st = verifyGraph(body); !st.ok())
        return nodeError(n, "in subgraph '" + attrName + "': " + st.error().message);
    return {};
}

Status checkSubgraphs(const Node& n) {
    for (const auto& [attrName, a] : n.attrs()) {
        auto* sub = std::get_if<std::shared_ptr<const Graph>>(&a);
        if (!sub)
            continue;
        if (!*sub)
            return nodeError(n, "graph attribute '" + attrName + "' is empty");
        SX_TRY(checkSubgraph(n, attrName, **sub));
    }
    return {};
}

/// The outputs' stored types agree with the inferred `types`; then the outputs are defined.
Status defineOutputs(const Node& n, const std::vector<TensorType>& types, DefinedValues& defined) {
    for (size_t i = 0; i < n.numOutputs(); ++i) {
        const Value* o = n.output(i);
        const TensorType& inferred = types[i];
        if (!compatible(inferred, o->type()))
            return nodeError(n, "output '" + o->name() + "' has type " + printType(o->type()) +
                                    " but inference gives " + printType(inferred));
        defined.define(o);
    }
    return {};
}

Status verifyNode(const Node& n, DefinedValues& defined) {
    SX_TRY(checkArity(n));
    SX_TRY(checkOperands(n, defined));
    SX_TRY(checkFields(n));
    SX_ASSIGN(const std::vector<TensorType> types, inferTypes(n));
    SX_TRY(checkSubgraphs(n));
    return defineOutputs(n, types, defined);
}

} // namespace

Status verifyGraph(const Graph& graph) {
    DefinedValues defined(graph);
    SX_TRY(defineGraphInputs(graph, defined));
    for (const Node* n : graph.nodeOrder())
        SX_TRY(verifyNode(*n, defined));
    for (const Value* o : graph.outputs()) {
        if (!o)
            return makeError(ErrorKind::Verify, "graph '" + graph.name() + "' has a null output",
                             graph.name());
        if (!defined.isDefined(o))
            return makeError(ErrorKind::Verify,
                             "graph output '" + o->name() + "' is not defined in the graph", o->name());
    }
    return {};
}

} // namespace sextant::ir
