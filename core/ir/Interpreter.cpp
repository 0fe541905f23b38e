#include "Interpreter.h"
#include "core/ir/DimsText.h"

#include <unordered_map>

namespace sextant::ir {

namespace {

std::string nodeLabel(const Node& node) {
    return "node '" + node.name() + "' (" + qualifiedOpName(node.kind()) + ")";
}

Error nodeError(const Node& node, ErrorKind kind, const std::string& message) {
    return makeError(kind, nodeLabel(node) + ": " + message, node.name());
}

/// Checks a tensor against a declared type: float vs float is fine (precision is the executor's
/// choice), other dtypes must match exactly; rank and known dims must agree unless the declared
/// type carries a layout (then the data may be stored in another arrangement).
/// `symbols` binds symbolic dims consistently across checks when given.
std::string typeMismatch(const Tensor& t, const TensorType& declared,
                         std::map<std::string, int64_t>* symbols) {
    const bool floats = isFloat(t.dtype()) && isFloat(declared.dtype);
    if (!floats && t.dtype() != declared.dtype)
        return "is " + std::string(dtypeName(t.dtype())) + " but declared " + declared.str();
    if (declared.layout != LayoutKind::Any)
        return {};
    if (t.rank() != declared.rank())
        return "has shape " + dimsText(t.shape()) + " but declared " + declared.str();
    for (size_t i = 0; i < t.rank(); ++i) {
        const Dim& d = declared.shape[i];
        if (d.isKnown()) {
            if (d.value != t.shape()[i])
                return "has shape " + dimsText(t.shape()) + " but declared " + declared.str();
        } else if (symbols && d.symbol != "?" && !d.symbol.empty()) {
            auto [it, inserted] = symbols->emplace(d.symbol, t.shape()[i]);
            if (!inserted && it->second != t.shape()[i])
                return "has shape " + dimsText(t.shape()) + " but dim '" + d.symbol.str() + "' is already " +
                       std::to_string(it->second);
        }
    }
    return {};
}

bool hasSubgraphs(const Graph& graph) {
    for (const Node* n : graph.nodeOrder())
        for (const auto& [name, a] : n->attrs())
            if (std::holds_alternative<std::shared_ptr<const Graph>>(a))
                return true;
    return false;
}

/// A copy of `graph` whose inputs take the concrete shapes of `inputs` and whose node types are
/// re-inferred from them; nullptr when the declared input types already are those shapes, or when
/// the copy or its re-inference fails (the original graph then runs and reports the problem itself).
std::unique_ptr<Graph> specialisedCopy(const Graph& graph, std::span<const Tensor> inputs) {
    bool exact = true;
    for (size_t i = 0; i < inputs.size() && exact; ++i) {
        const TensorType& t = graph.inputs()[i]->type();
        exact = t.isStatic() && t.dims() == inputs[i].shape();
    }
    if (exact)
        return nullptr;
    Expected<std::unique_ptr<Graph>> cloned = graph.clone();
    if (!cloned.ok())
        return nullptr;
    std::unique_ptr<Graph> copy = std::move(cloned).value();
    for (size_t i = 0; i < inputs.size(); ++i) {
        Value* v = copy->inputs()[i];
        TensorType t = TensorType::of(v->type().dtype, inputs[i].shape());
        t.layout = v->type().layout;
        v->setType(std::move(t));
    }
    if (!copy->inferTypes().ok())
        return nullptr;
    return copy;
}

} // namespace

Expected<std::vector<Tensor>> evaluateNode(const Node& node, std::span<const Tensor> inputs,
                                           const KernelContext& ctx) {
    if (ctx.compute != DType::F64 && ctx.compute != DType::F32)
        return nodeError(node, ErrorKind::Unsupported,
                         "reference compute dtype must be f32 or f64, got " +
                             std::string(dtypeName(ctx.compute)));
    const OpInfo& info = node.info();
    const int nin = static_cast<int>(node.numInputs());
    if (nin < info.minInputs || (info.maxInputs >= 0 && nin > info.maxInputs))
        return nodeError(node, ErrorKind::Invalid,
                         "has " + std::to_string(nin) + " inputs, the op takes " +
                             std::to_string(info.minInputs) + ".." +
                             (info.maxInputs < 0 ? std::string("n") : std::to_string(info.maxInputs)));
    if (inputs.size() != node.numInputs())
        return nodeError(node, ErrorKind::Invalid,
                         "expected " + std::to_string(node.numInputs()) + " input tensors, got " +
                             std::to_string(inputs.size()));
    // Attribute checks are cheap and keep a malformed attribute from being silently defaulted.
    if (Status st = info.verify(node); !st.ok())
        return nodeError(node, st.error().kind, st.error().message);
    std::vector<Tensor> cast;
    cast.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Value* v = node.input(i);
        if (!v) {
            if (static_cast<int>(i) < info.minInputs)
                return nodeError(node, ErrorKind::Invalid,
                                 "required input " + std::to_string(i) + " is missing");
            cast.emplace_back();
            continue;
        }
        const Tensor& t = inputs[i];
        if (!t.valid())
            return nodeError(node, ErrorKind::Invalid, "input '" + v->name() + "' has no data");
        std::string why = typeMismatch(t, v->type(), nullptr);
        if (!why.empty())
            return nodeError(node, ErrorKind::Invalid, "input '" + v->name() + "' " + why);
        cast.push_back(isFloat(t.dtype()) ? t.castTo(ctx.compute) : t);
    }
    auto result = info.kernel(node, cast, ctx);
    if (!result.ok()) {
        Error e = result.takeError();
        e.message = nodeLabel(node) + ": " + e.message;
        e.subject = node.name();
        return e;
    }
    std::vector<Tensor> outs = std::move(result).value();
    if (outs.size() < node.numOutputs())
        return nodeError(node, ErrorKind::Verify,
                         "kernel produced " + std::to_string(outs.size()) + " outputs, node has " +
                             std::to_string(node.numOutputs()));
    outs.resize(node.numOutputs());
    for (Tensor& t : outs)
        if (isFloat(t.dtype()) && t.dtype() != ctx.compute)
            t = t.castTo(ctx.compute);
    return outs;
}

Expected<std::vector<Tensor>> interpret(const Graph& graph, std::span<const Tensor> inputs,
                                        const KernelContext& ctx,
                                        std::map<std::string, Tensor>* values) {
    const auto& graphInputs = graph.inputs();
    if (inputs.size() != graphInputs.size())
        return makeError(ErrorKind::Invalid,
                         "graph '" + graph.name() + "' takes " + std::to_string(graphInputs.size()) +
                             " inputs, got " + std::to_string(inputs.size()),
                         graph.name());
    // A graph with control flow may have types that depend on its input shapes (an If whose
    // branches differ in rank, chosen by a shape test): run a copy re-inferred from the shapes given.
    if (hasSubgraphs(graph)) {
        bool valid = true;
        for (const Tensor& t : inputs)
            valid = valid && t.valid();
        if (valid)
            if (std::unique_ptr<Graph> copy = specialisedCopy(graph, inputs))
                return interpret(*copy, inputs, ctx, values);
    }
    KernelContext inner = ctx;
    if (!inner.runSubgraph)
        inner.runSubgraph = [&inner](const Graph& g, std::span<const Tensor> ins) {
            return interpret(g, ins, inner);
        };

    // Lookup-only maps keyed by Value*: nothing below iterates them to produce output.
    std::unordered_map<const Value*, Tensor> env;
    std::unordered_map<const Value*, int> remainingUses;
    std::map<std::string, int64_t> symbols;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const Value* v = graphInputs[i];
        if (!inputs[i].valid())
            return makeError(ErrorKind::Invalid, "graph input '" + v->name() + "' has no data",
                             v->name());
        std::string why = typeMismatch(inputs[i], v->type(), &symbols);
        if (!why.empty())
            return makeError(ErrorKind::Invalid, "graph input '" + v->name() + "' " + why, v->name());
        env[v] = isFloat(inputs[i].dtype()) ? inputs[i].castTo(ctx.compute) : inputs[i];
        if (values)
            (*values)[v->name()] = env[v];
    }
    const std::vector<Node*> nodes = graph.nodes();
    for (const Node* n : nodes)
        for (const Value* in : n->inputs())
            if (in)
                ++remainingUses[in];

    auto lookup = [&](const Value* v) -> const Tensor* {
        if (const Tensor* c = v->constant())
            return c;
        auto it = env.find(v);
        return it == env.end() ? nullptr : &it->second;
    };

    std::vector<Tensor> args;
    for (const Node* n : nodes) {
        args.clear();
        for (const Value* in : n->inputs()) {
            if (!in) {
                args.emplace_back();
                continue;
            }
            const Tensor* t = lookup(in);
            if (!t)
                return nodeError(*n, ErrorKind::Invalid,
                                 "input '" + in->name() + "' is not computed before this node");
            args.push_back(*t);
        }
        SX_ASSIGN(std::vector<Tensor> outs, evaluateNode(*n, args, inner));
        if (inner.onNode)
            inner.onNode(*n, args, outs);
        args.clear();
        for (size_t i = 0; i < outs.size(); ++i) {
            const Value* o = n->output(i);
            if (values)
                (*values)[o->name()] = outs[i];
            env[o] = std::move(outs[i]);
        }
        for (const Value* in : n->inputs()) {
            if (!in || in->isConstant())
                continue;
            if (--remainingUses[in] == 0 && !in->isGraphOutput())
                env.erase(in);
        }
        // Outputs nobody reads are dropped at once (e.g. an unused MaxPool index tensor).
        for (const Value* o : n->outputs())
            if (o->users().empty() && !o->isGraphOutput())
                env.erase(o);
    }

    std::vector<Tensor> results;
    for (const Value* o : graph.outputs()) {
        const Tensor* t = lookup(o);
        if (!t)
            return makeError(ErrorKind::Invalid, "graph output '" + o->name() + "' is never computed",
                             o->name());
        results.push_back(isFloat(t->dtype()) ? t->castTo(ctx.compute) : *t);
    }
    return results;
}

} // namespace sextant::ir
