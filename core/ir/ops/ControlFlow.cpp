// If: runs one of two subgraphs (attributes then_branch / else_branch) chosen by a one-element bool
// condition.
//
// Subgraphs are isolated from above (like MLIR's IsolatedFromAbove): the importer turns every
// outer-scope value a branch reads into an explicit If input after the condition, and each branch
// declares one graph input per captured value, in the same order and with the same names. So
// input i + 1 of the If node feeds graph input i of both branches, def-use chains stay inside one
// graph, and passes that know nothing about subgraphs (DCE, CSE, topoSort, clone) stay correct.
//
// Output types: ONNX lets the branches disagree on shapes. When the condition can be computed
// before run time (a constant, or shape arithmetic over static shapes such as
// Equal(Gather(Shape(x), -1), 1)), the chosen branch gives the types. Otherwise equal dims are
// kept and differing dims become unknown; when even the ranks differ the then-branch's types are
// used provisionally, and the interpreter re-infers the graph from the concrete input shapes
// before running it (Interpreter.cpp), which resolves such conditions. When the If's inputs have
// types other than those the branches were built with (after shape specialisation), each branch
// is re-inferred on a copy, specialised with folding when every captured input is static; a
// branch that cannot be typed for those inputs leaves the types to the other one while the
// condition is unknown (it would fail only if taken, as in onnxruntime).

#include "OpUtil.h"

#include "core/ir/Interpreter.h"
#include "core/ir/Specialize.h"

#include <algorithm>

namespace sextant::ir {

using ops::opError;

namespace {

const char* const kBranches[2] = {"then_branch", "else_branch"};

/// The value of `v` when it can be computed without running the graph: a constant, Shape / Size of
/// a value with a static type, or a cheap node (not a matrix op, not control flow) over such values.
/// Small tensors only; `budget` bounds the nodes evaluated.
std::optional<Tensor> staticValue(const Value* v, int depth, int& budget) {
    if (!v)
        return std::nullopt;
    if (const Tensor* c = v->constant())
        return *c;
    const Node* p = v->producer();
    if (!p || depth > 24 || --budget < 0)
        return std::nullopt;
    if (p->kind() == OpKind::Shape || p->kind() == OpKind::Size) {
        const Value* x = p->input(0);
        if (!x || !x->type().isStatic())
            return std::nullopt;
        const std::vector<int64_t> dims = x->type().dims();
        if (p->kind() == OpKind::Size)
            return Tensor::fromVector<int64_t>({}, {product(dims)});
        const int64_t rank = static_cast<int64_t>(dims.size());
        auto clampAxis = [rank](int64_t a) {
            if (a < 0)
                a += rank;
            return std::clamp<int64_t>(a, 0, rank);
        };
        const int64_t start = clampAxis(p->attrInt("start", 0));
        const int64_t end = std::max(start, clampAxis(p->attrInt("end", rank)));
        return Tensor::fromVector<int64_t>({end - start},
                                           std::vector<int64_t>(dims.begin() + start, dims.begin() + end));
    }
    if (p->info().cost == CostClass::Cube || p->kind() == OpKind::If || p->kind() == OpKind::LSTM ||
        p->kind() == OpKind::RNN || p->kind() == OpKind::GRU)
        return std::nullopt;
    std::vector<Tensor> ins;
    for (const Value* in : p->inputs()) {
        if (!in) {
            ins.emplace_back();
            continue;
        }
        std::optional<Tensor> t = staticValue(in, depth + 1, budget);
        if (!t || t->numel() > 4096)
            return std::nullopt;
        ins.push_back(std::move(*t));
    }
    auto outs = evaluateNode(*p, ins, KernelContext{});
    if (!outs.ok())
        return std::nullopt;
    return std::move(outs->at(static_cast<size_t>(v->producerOutput())));
}

/// The condition of an If node when it is known before run time.
std::optional<bool> staticCondition(const Node& n) {
    int budget = 64;
    std::optional<Tensor> c = staticValue(n.input(0), 0, budget);
    if (!c || c->numel() != 1)
        return std::nullopt;
    return c->at(0) != 0.0;
}

/// The output types of `body` when its inputs get the types of the If's captured inputs: the
/// stored types when they already agree, else those of a re-inferred copy.
Expected<std::vector<TensorType>> branchOutputTypes(const Node& n, const char* which) {
    const Graph* body = n.attrGraph(which);
    bool same = true;
    for (size_t i = 0; i < body->inputs().size(); ++i)
        same = same && body->inputs()[i]->type() == n.input(i + 1)->type();
    std::vector<TensorType> types;
    if (same) {
        for (const Value* o : body->outputs())
            types.push_back(o->type());
        return types;
    }
    SX_ASSIGN(std::unique_ptr<Graph> copy, body->clone());
    bool allStatic = true;
    InputShapes shapes;
    for (size_t i = 0; i < copy->inputs().size(); ++i) {
        const TensorType& t = n.input(i + 1)->type();
        copy->inputs()[i]->setType(t);
        allStatic = allStatic && t.isStatic();
        if (t.isStatic())
            shapes[copy->inputs()[i]->name()] = t.dims();
    }
    // With every captured input static, the branch is specialised like a graph of its own: the
    // shape arithmetic inside it folds, so its output dims resolve as the main graph's do. A dim it
    // still cannot resolve is not an error here (the If's output keeps it unknown).
    if (allStatic && specializeInputs(*copy, shapes).ok()) {
        for (const Value* o : copy->outputs())
            types.push_back(o->type());
        return types;
    }
    if (Status st = copy->inferTypes(); !st.ok())
        return opError(n, std::string(which) + ": " + st.error().message, st.error().kind);
    for (const Value* o : copy->outputs())
        types.push_back(o->type());
    return types;
}

} // namespace

// ---- If

Status verifyIf(const Node& n) {
    for (const char* which : kBranches) {
        const Attribute* a = n.attr(which);
        if (!a)
            return opError(n, std::string("needs graph attribute '") + which + "'");
        const Graph* body = n.attrGraph(which);
        if (!body)
            return opError(n, std::string("attribute '") + which + "' must be a graph");
        if (body->inputs().size() + 1 != n.numInputs())
            return opError(n, std::string(which) + " '" + body->name() + "' declares " +
                                  std::to_string(body->inputs().size()) + " captured inputs but the node passes " +
                                  std::to_string(n.numInputs() - 1));
        if (body->outputs().size() != n.numOutputs())
            return opError(n, std::string(which) + " '" + body->name() + "' has " +
                                  std::to_string(body->outputs().size()) + " outputs but the node has " +
                                  std::to_string(n.numOutputs()));
        for (size_t i = 0; i + 1 < n.numInputs(); ++i) {
            const Value* in = n.input(i + 1);
            if (!in)
                return opError(n, "captured input " + std::to_string(i + 1) + " is missing");
            // Binding is positional: a pass may rename or replace the outer value (CSE, renames).
            const Value* formal = body->inputs()[i];
            if (formal->type().dtype != in->type().dtype)
                return opError(n, std::string(which) + " input '" + formal->name() + "' is " +
                                      formal->type().str() + " but the node passes " + in->type().str());
        }
    }
    if (const TensorType* c = ops::inputType(n, 0)) {
        if (c->dtype != DType::Bool)
            return opError(n, "condition must be bool, got " + c->str());
        if (c->isStatic() && c->numel() != 1)
            return opError(n, "condition must hold one element, got " + c->str());
    }
    return {};
}

Expected<std::vector<TensorType>> inferIf(const Node& n) {
    SX_TRY(verifyIf(n));
    if (std::optional<bool> c = staticCondition(n))
        return branchOutputTypes(n, *c ? kBranches[0] : kBranches[1]);
    auto thenResult = branchOutputTypes(n, kBranches[0]);
    auto elseResult = branchOutputTypes(n, kBranches[1]);
    // A branch that cannot be typed for these inputs would fail if it ran; while the condition is
    // unknown the other branch gives the types (e.g. silero's 8 kHz path under 16 kHz shapes).
    if (!thenResult.ok() && elseResult.ok())
        return elseResult;
    if (!elseResult.ok() && thenResult.ok())
        return thenResult;
    if (!thenResult.ok())
        return thenResult.takeError();
    std::vector<TensorType> thenTypes = std::move(thenResult).value();
    std::vector<TensorType> elseTypes = std::move(elseResult).value();
    std::vector<TensorType> types;
    for (size_t k = 0; k < thenTypes.size(); ++k) {
        const TensorType& a = thenTypes[k];
        const TensorType& b = elseTypes[k];
        if (a.dtype != b.dtype)
            return opError(n, "output " + std::to_string(k) + " is " + a.str() + " in then_branch but " + b.str() +
                                  " in else_branch");
        TensorType t = a;
        if (a.rank() == b.rank())
            for (size_t d = 0; d < a.rank(); ++d)
                if (!(a.shape[d] == b.shape[d]))
                    t.shape[d] = ops::unknownDim();
        types.push_back(std::move(t));
    }
    return types;
}

Expected<std::vector<Tensor>> runIf(const Node& n, std::span<const Tensor> inputs, const KernelContext& ctx) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& cond = inputs[0];
    if (cond.numel() != 1)
        return opError(n, "condition must hold one element, got " + cond.type().str());
    const char* which = cond.at(0) != 0.0 ? kBranches[0] : kBranches[1];
    const Graph* body = n.attrGraph(which);
    if (!body)
        return opError(n, std::string("attribute '") + which + "' must be a graph");
    std::span<const Tensor> captured = inputs.subspan(1);
    auto outs = ctx.runSubgraph ? ctx.runSubgraph(*body, captured) : interpret(*body, captured, ctx);
    if (!outs.ok()) {
        Error e = outs.takeError();
        e.message = std::string(which) + ": " + e.message;
        return e;
    }
    return outs;
}

} // namespace sextant::ir
