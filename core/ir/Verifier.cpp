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
    if (n.isView() && n.info().layout != LayoutClass::View)
        return nodeError(n, "is marked a view but its op never is one");
    for (std::string_view field : {kPrecisionFieldName, kViewFieldName, kBodyFieldName})
        if ((field != kBodyFieldName || n.kind() == OpKind::ElementwiseGroup) &&
            n.hasAttr(std::string(field)))
            return nodeError(n, "attribute '" + std::string(field) +
                                    "' must be set as the node's field, not as an attribute");
    return {};
}

} // namespace

Status verifyGraph(const Graph& graph) {
    // Which of this graph's values are defined so far, one bit per Value::id (a value of another
    // graph with the same id is told apart by Graph::owns first). Bits, not a table of pointers:
    // the table was the size of every value the graph ever had, cleared and read at random on
    // every verification, which on a big graph meant a cache miss per operand.
    std::vector<bool> defined(graph.valueIdBound());
    // One walk over the values: define the constants, and remember the first constant that also
    // has a producer (reported after any error in the graph inputs).
    const Value* producedConstant = nullptr;
    graph.forEachValue([&](const Value* v) {
        if (!v->isConstant())
            return;
        defined[v->id()] = true;
        if (v->producer() && !producedConstant)
            producedConstant = v;
    });
    auto owns = [&](const Value* v) { return graph.owns(v); };
    auto isDefined = [&](const Value* v) { return owns(v) && defined[v->id()]; };
    auto define = [&](const Value* v) {
        if (owns(v))
            defined[v->id()] = true;
    };
    for (const Value* v : graph.inputs()) {
        if (v->producer() || v->isConstant())
            return makeError(ErrorKind::Verify,
                             "graph input '" + v->name() + "' is also produced by a node or a constant",
                             v->name());
        define(v);
    }
    if (const Value* c = producedConstant)
        return makeError(ErrorKind::Verify,
                         "constant '" + c->name() + "' is also produced by node '" +
                             c->producer()->name() + "'",
                         c->name());
    for (const Node* n : graph.nodeOrder()) {
        const OpInfo& info = n->info();
        const int nin = static_cast<int>(n->numInputs());
        const int nout = static_cast<int>(n->numOutputs());
        if (nin < info.minInputs || (info.maxInputs >= 0 && nin > info.maxInputs))
            return nodeError(*n, "has " + std::to_string(nin) + " inputs, the op takes " +
                                     std::to_string(info.minInputs) + ".." +
                                     (info.maxInputs < 0 ? std::string("n")
                                                         : std::to_string(info.maxInputs)));
        if (nout < info.minOutputs || nout > info.maxOutputs)
            return nodeError(*n, "has " + std::to_string(nout) + " outputs, the op gives " +
                                     std::to_string(info.minOutputs) + ".." +
                                     std::to_string(info.maxOutputs));
        for (int i = 0; i < nin; ++i) {
            const Value* in = n->input(static_cast<size_t>(i));
            if (!in) {
                if (i < info.minInputs)
                    return nodeError(*n, "required input " + std::to_string(i) + " is missing");
                continue;
            }
            if (!owns(in))
                return nodeError(*n, "input '" + in->name() + "' does not belong to this graph");
            if (!isDefined(in))
                return nodeError(*n, "input '" + in->name() + "' is used before it is defined" +
                                         (in->producer() ? " (by node '" + in->producer()->name() + "')"
                                                         : std::string()));
        }
        for (int i = 0; i < nout; ++i) {
            const Value* o = n->output(static_cast<size_t>(i));
            if (o->producer() != n || o->producerOutput() != i)
                return nodeError(*n, "output '" + o->name() + "' does not name this node as its producer");
            if (isDefined(o))
                return nodeError(*n, "output '" + o->name() + "' is defined twice");
        }
        SX_TRY(checkFields(*n));
        Status st = info.verify(*n);
        if (!st.ok())
            return nodeError(*n, st.error().message);
        auto types = info.infer(*n);
        if (!types.ok())
            return nodeError(*n, types.error().message);
        if (types->size() < static_cast<size_t>(nout))
            return nodeError(*n, "shape inference gave " + std::to_string(types->size()) + " types for " +
                                     std::to_string(nout) + " outputs");
        // Subgraphs are verified as graphs of their own; their inputs bind to the node's inputs
        // after the first (If: after the condition), positionally.
        for (const auto& [attrName, a] : n->attrs()) {
            auto* sub = std::get_if<std::shared_ptr<const Graph>>(&a);
            if (!sub)
                continue;
            if (!*sub)
                return nodeError(*n, "graph attribute '" + attrName + "' is empty");
            const Graph& body = **sub;
            if (body.inputs().size() + 1 != n->numInputs())
                return nodeError(*n, "subgraph '" + attrName + "' takes " + std::to_string(body.inputs().size()) +
                                         " inputs but the node passes " + std::to_string(nin - 1) +
                                         " captured values");
            if (body.outputs().size() != static_cast<size_t>(nout))
                return nodeError(*n, "subgraph '" + attrName + "' has " + std::to_string(body.outputs().size()) +
                                         " outputs but the node has " + std::to_string(nout));
            for (size_t i = 0; i < body.inputs().size(); ++i) {
                const Value* outer = n->input(i + 1);
                const Value* formal = body.inputs()[i];
                if (outer && !compatible(outer->type(), formal->type()))
                    return nodeError(*n, "subgraph '" + attrName + "' input '" + formal->name() + "' is " +
                                             printType(formal->type()) + " but the node passes '" + outer->name() +
                                             "' of type " + printType(outer->type()));
            }
            if (Status st = verifyGraph(body); !st.ok())
                return nodeError(*n, "in subgraph '" + attrName + "': " + st.error().message);
        }
        for (int i = 0; i < nout; ++i) {
            const Value* o = n->output(static_cast<size_t>(i));
            const TensorType& inferred = (*types)[static_cast<size_t>(i)];
            if (!compatible(inferred, o->type()))
                return nodeError(*n, "output '" + o->name() + "' has type " + printType(o->type()) +
                                         " but inference gives " + printType(inferred));
            define(o);
        }
    }
    for (const Value* o : graph.outputs()) {
        if (!o)
            return makeError(ErrorKind::Verify, "graph '" + graph.name() + "' has a null output",
                             graph.name());
        if (!isDefined(o))
            return makeError(ErrorKind::Verify,
                             "graph output '" + o->name() + "' is not defined in the graph", o->name());
    }
    return {};
}

} // namespace sextant::ir
