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
#include <cstring>
#include <limits>

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

Expected<std::vector<TensorType>> bodyOutputTypes(const Node& n, const char* which,
                                                  const std::vector<TensorType>& formals);

/// The output types of `body` when its inputs get the types of the If's captured inputs.
Expected<std::vector<TensorType>> branchOutputTypes(const Node& n, const char* which) {
    std::vector<TensorType> formals;
    for (size_t i = 1; i < n.numInputs(); ++i)
        formals.push_back(n.input(i)->type());
    return bodyOutputTypes(n, which, formals);
}

/// The output types of the subgraph `which` when its inputs have the types `formals`: the stored
/// types when they already agree, else those of a re-inferred copy.
Expected<std::vector<TensorType>> bodyOutputTypes(const Node& n, const char* which,
                                                  const std::vector<TensorType>& formals) {
    const Graph* body = n.attrGraph(which);
    bool same = formals.size() == body->inputs().size();
    for (size_t i = 0; same && i < body->inputs().size(); ++i)
        same = body->inputs()[i]->type() == formals[i];
    std::vector<TensorType> types;
    if (same) {
        for (const Value* o : body->outputs())
            types.push_back(o->type());
        return types;
    }
    SX_ASSIGN(std::unique_ptr<Graph> copy, body->clone());
    bool allStatic = true;
    InputShapes shapes;
    for (size_t i = 0; i < copy->inputs().size() && i < formals.size(); ++i) {
        const TensorType& t = formals[i];
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

// ---- Loop and Scan
//
// The body's inputs are its declared ones (Loop: iteration number, condition, the loop-carried
// values; Scan: the states, one slice of each scan input) followed by the captured outer values;
// the node's inputs are its ONNX ones followed by the same captured values ("num_captured" of
// them). The importer types the declared inputs from the node's inputs and widens a carried
// value's dims to unknown where an iteration changes them, so each iteration's values satisfy
// the body's input types.

namespace {

/// Iterations one Loop may run before it is stopped: a condition that never turns false would
/// otherwise hang the reference executor (hostile input).
constexpr int64_t kMaxLoopIterations = 1'000'000;

int64_t capturedCount(const Node& n) { return n.attrInt("num_captured", 0); }

const Graph* loopBody(const Node& n) { return n.attrGraph("body"); }

/// `t` without dim `axis`.
TensorType dropAxis(TensorType t, size_t axis) {
    t.shape.erase(t.shape.begin() + axis);
    return t;
}

/// `t` with `d` inserted before dim `axis`.
TensorType insertAxis(TensorType t, size_t axis, Dim d) {
    t.shape.insert(t.shape.begin() + axis, d);
    return t;
}

/// Where two types of one carried value disagree: the dims that differ become unknown.
TensorType widen(const TensorType& a, const TensorType& b) {
    if (a.rank() != b.rank())
        return a;
    TensorType t = a;
    for (size_t d = 0; d < a.rank(); ++d)
        if (!(a.shape[d] == b.shape[d]))
            t.shape[d] = ops::unknownDim();
    return t;
}

/// The slice `index` of `x` along `axis` (that dim removed).
Tensor sliceAt(const Tensor& x, size_t axis, int64_t index) {
    std::vector<int64_t> shape = x.shape();
    const int64_t len = shape[axis];
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
    Tensor out = Tensor::uninitialized(x.dtype(), shape);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d)
        outer *= x.shape()[d];
    for (size_t d = axis + 1; d < x.rank(); ++d)
        inner *= x.shape()[d];
    const size_t bytes = static_cast<size_t>(inner) * dtypeSize(x.dtype());
    for (int64_t o = 0; o < outer; ++o)
        std::memcpy(out.mutableBytes() + static_cast<size_t>(o) * bytes,
                    x.bytes() + static_cast<size_t>(o * len + index) * bytes, bytes);
    return out;
}

/// The slices stacked along a new dim `axis` (slice k at position k); all have `slice`'s type.
/// With no slices the result has extent 0 there and the body's declared dims elsewhere.
Expected<Tensor> stack(const Node& n, const std::vector<Tensor>& slices, size_t axis, const TensorType& declared) {
    std::vector<int64_t> sliceShape;
    DType dtype = declared.dtype;
    if (!slices.empty()) {
        sliceShape = slices.front().shape();
        dtype = slices.front().dtype();
    } else {
        for (const Dim& d : declared.shape)
            sliceShape.push_back(d.isKnown() ? d.value : 0);
    }
    if (axis > sliceShape.size())
        return opError(n, "scan output axis " + std::to_string(axis) + " is out of range for rank " +
                              std::to_string(sliceShape.size()) + " slices");
    for (const Tensor& t : slices)
        if (t.shape() != sliceShape || t.dtype() != dtype)
            return opError(n, "the body's per-iteration output changes from " + TensorType::of(dtype, sliceShape).str() +
                                  " to " + t.type().str() + " between iterations; they cannot be stacked");
    std::vector<int64_t> shape = sliceShape;
    const int64_t count = static_cast<int64_t>(slices.size());
    shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(axis), count);
    SX_TRY(ops::checkAllocation(n, shape));
    Tensor out = Tensor::uninitialized(dtype, shape);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < axis; ++d)
        outer *= sliceShape[d];
    for (size_t d = axis; d < sliceShape.size(); ++d)
        inner *= sliceShape[d];
    const size_t bytes = static_cast<size_t>(inner) * dtypeSize(dtype);
    for (int64_t k = 0; k < count; ++k)
        for (int64_t o = 0; o < outer; ++o)
            std::memcpy(out.mutableBytes() + static_cast<size_t>(o * count + k) * bytes,
                        slices[static_cast<size_t>(k)].bytes() + static_cast<size_t>(o) * bytes, bytes);
    return out;
}

Expected<std::vector<Tensor>> runBody(const Node& n, const Graph& body, std::span<const Tensor> inputs,
                                      const KernelContext& ctx, int64_t iteration) {
    auto outs = ctx.runSubgraph ? ctx.runSubgraph(body, inputs) : interpret(body, inputs, ctx);
    if (!outs.ok()) {
        Error e = outs.takeError();
        e.message = "body, iteration " + std::to_string(iteration) + ": " + e.message;
        return e;
    }
    if (outs->size() != body.outputs().size())
        return opError(n, "the body gave " + std::to_string(outs->size()) + " outputs, expected " +
                              std::to_string(body.outputs().size()));
    return outs;
}

/// A Loop's counts: N carried values, S per-iteration (scan) outputs.
struct LoopShape {
    size_t carried = 0, scans = 0;
};

Expected<LoopShape> loopShape(const Node& n) {
    const Graph* body = loopBody(n);
    if (!body)
        return opError(n, "needs graph attribute 'body'");
    const int64_t captured = capturedCount(n);
    if (captured < 0 || static_cast<size_t>(captured) + 2 > n.numInputs())
        return opError(n, "has " + std::to_string(n.numInputs()) + " inputs, fewer than the trip count, the "
                              "condition and " + std::to_string(captured) + " captured values");
    LoopShape ls;
    ls.carried = n.numInputs() - 2 - static_cast<size_t>(captured);
    if (body->inputs().size() != n.numInputs())
        return opError(n, "body '" + body->name() + "' takes " + std::to_string(body->inputs().size()) +
                              " inputs, expected 2 + " + std::to_string(ls.carried) + " carried + " +
                              std::to_string(captured) + " captured");
    if (body->outputs().size() < 1 + ls.carried)
        return opError(n, "body '" + body->name() + "' has " + std::to_string(body->outputs().size()) +
                              " outputs, fewer than the condition and " + std::to_string(ls.carried) +
                              " carried values");
    ls.scans = body->outputs().size() - 1 - ls.carried;
    if (n.numOutputs() != ls.carried + ls.scans)
        return opError(n, "has " + std::to_string(n.numOutputs()) + " outputs, but its body gives " +
                              std::to_string(ls.carried) + " carried and " + std::to_string(ls.scans) +
                              " per-iteration values");
    return ls;
}

/// The iterations a Loop runs when that is known before run time: a known trip count and a
/// condition that stays true (absent, or a constant true the body passes on unchanged).
std::optional<int64_t> staticTripCount(const Node& n) {
    const Graph* body = loopBody(n);
    int budget = 64;
    std::optional<Tensor> m = n.input(0) ? staticValue(n.input(0), 0, budget) : std::nullopt;
    std::optional<Tensor> c = n.input(1) ? staticValue(n.input(1), 0, budget) : std::nullopt;
    if (c && c->numel() == 1 && c->at(0) == 0.0)
        return 0;
    if (!m || m->numel() != 1 || (n.input(1) && !c))
        return std::nullopt;
    // The body's condition: its input passed through (maybe by Identity), or a constant true.
    const Value* out = body->outputs().front();
    while (out && out->producer() && out->producer()->kind() == OpKind::Identity)
        out = out->producer()->input(0);
    const bool keeps = out == body->inputs()[1] || (out && out->constant() && out->constant()->numel() == 1 &&
                                                     out->constant()->at(0) != 0.0);
    if (!keeps)
        return std::nullopt;
    return std::max<int64_t>(0, static_cast<int64_t>(m->at(0)));
}

} // namespace

Status verifyLoop(const Node& n) {
    SX_ASSIGN(LoopShape ls, loopShape(n));
    const Graph* body = loopBody(n);
    if (const TensorType* m = ops::inputType(n, 0); m && (m->dtype != DType::I64 || (m->isStatic() && m->numel() != 1)))
        return opError(n, "trip count M must be one i64 element, got " + m->str());
    if (const TensorType* c = ops::inputType(n, 1); c && (c->dtype != DType::Bool || (c->isStatic() && c->numel() != 1)))
        return opError(n, "condition must be one bool element, got " + c->str());
    if (body->inputs()[0]->type().dtype != DType::I64 || body->inputs()[1]->type().dtype != DType::Bool)
        return opError(n, "body '" + body->name() + "' must take the iteration number (i64) and the condition (bool) first");
    if (body->outputs().front()->type().dtype != DType::Bool)
        return opError(n, "body '" + body->name() + "' must give the condition (bool) first, got " +
                              body->outputs().front()->type().str());
    for (size_t i = 2; i < n.numInputs(); ++i) {
        const Value* in = n.input(i);
        if (!in)
            return opError(n, "input " + std::to_string(i) + " is missing");
        if (in->type().dtype != body->inputs()[i]->type().dtype)
            return opError(n, "body input '" + body->inputs()[i]->name() + "' is " +
                                  body->inputs()[i]->type().str() + " but the node passes " + in->type().str());
    }
    for (size_t i = 0; i < ls.carried; ++i)
        if (body->outputs()[1 + i]->type().dtype != n.input(2 + i)->type().dtype)
            return opError(n, "carried value " + std::to_string(i) + " enters as " + n.input(2 + i)->type().str() +
                                  " but the body gives " + body->outputs()[1 + i]->type().str());
    return {};
}

Expected<std::vector<TensorType>> inferLoop(const Node& n) {
    SX_TRY(verifyLoop(n));
    SX_ASSIGN(LoopShape ls, loopShape(n));
    const Graph* body = loopBody(n);
    std::vector<TensorType> formals;
    for (size_t i = 0; i < body->inputs().size(); ++i)
        formals.push_back(i < 2 ? body->inputs()[i]->type() : widen(n.input(i)->type(), body->inputs()[i]->type()));
    SX_ASSIGN(std::vector<TensorType> outs, bodyOutputTypes(n, "body", formals));
    const std::optional<int64_t> trips = staticTripCount(n);
    std::vector<TensorType> types;
    for (size_t i = 0; i < ls.carried; ++i)
        types.push_back(trips && *trips == 0 ? n.input(2 + i)->type() : widen(n.input(2 + i)->type(), outs[1 + i]));
    for (size_t k = 0; k < ls.scans; ++k)
        types.push_back(insertAxis(outs[1 + ls.carried + k], 0, trips ? Dim::known(*trips) : ops::unknownDim()));
    return types;
}

Expected<std::vector<Tensor>> runLoop(const Node& n, std::span<const Tensor> inputs, const KernelContext& ctx) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(LoopShape ls, loopShape(n));
    const Graph& body = *loopBody(n);
    const bool haveM = n.input(0) != nullptr, haveCond = n.input(1) != nullptr;
    if (haveM && inputs[0].numel() != 1)
        return opError(n, "trip count M must hold one element, got " + inputs[0].type().str());
    if (haveCond && inputs[1].numel() != 1)
        return opError(n, "condition must hold one element, got " + inputs[1].type().str());
    if (!haveM && !haveCond)
        return opError(n, "has neither a trip count nor a condition: it would never end");
    const int64_t trips = haveM ? static_cast<int64_t>(inputs[0].at(0)) : std::numeric_limits<int64_t>::max();
    bool cond = !haveCond || inputs[1].at(0) != 0.0;
    // The iteration number and the condition as the body declares them: a scalar or one element.
    auto asDeclared = [&](size_t formal, DType dtype, double v) {
        std::vector<int64_t> shape(body.inputs()[formal]->type().rank(), 1);
        Tensor t(dtype, shape);
        t.set(0, v);
        return t;
    };
    std::vector<Tensor> state(inputs.begin(), inputs.end()); // [M, cond, carried..., captured...]
    std::vector<std::vector<Tensor>> scans(ls.scans);
    int64_t i = 0;
    for (; i < trips && cond; ++i) {
        if (i >= kMaxLoopIterations)
            return opError(n, "ran " + std::to_string(kMaxLoopIterations) +
                                  " iterations and its condition still holds; stopped (a trip count or a condition that turns false is needed)",
                           ErrorKind::Unsupported);
        state[0] = asDeclared(0, DType::I64, static_cast<double>(i));
        state[1] = asDeclared(1, DType::Bool, cond ? 1.0 : 0.0);
        SX_ASSIGN(std::vector<Tensor> outs, runBody(n, body, state, ctx, i));
        if (outs[0].numel() != 1)
            return opError(n, "the body's condition must hold one element, got " + outs[0].type().str());
        cond = outs[0].at(0) != 0.0;
        for (size_t c = 0; c < ls.carried; ++c)
            state[2 + c] = std::move(outs[1 + c]);
        for (size_t k = 0; k < ls.scans; ++k)
            scans[k].push_back(std::move(outs[1 + ls.carried + k]));
    }
    std::vector<Tensor> result;
    for (size_t c = 0; c < ls.carried; ++c)
        result.push_back(std::move(state[2 + c]));
    for (size_t k = 0; k < ls.scans; ++k) {
        SX_ASSIGN(Tensor t, stack(n, scans[k], 0, body.outputs()[1 + ls.carried + k]->type()));
        result.push_back(std::move(t));
    }
    return result;
}

namespace {

/// A Scan's layout: which node inputs are states and scan inputs, their axes and directions.
struct ScanShape {
    bool opset8 = false;    ///< Scan-8: input 0 is sequence_lens, every tensor has a batch dim 0
    size_t first = 0;       ///< node index of the first state
    size_t states = 0, scanIns = 0, scanOuts = 0;
    std::vector<int64_t> inAxes, inDirs, outAxes, outDirs; ///< axes normalised (slice rank for outputs)
};

Expected<ScanShape> scanShape(const Node& n) {
    const Graph* body = loopBody(n);
    if (!body)
        return opError(n, "needs graph attribute 'body'");
    ScanShape sc;
    sc.opset8 = n.attrInt("_opset", 9) < 9;
    sc.first = sc.opset8 ? 1 : 0;
    const int64_t captured = capturedCount(n);
    const int64_t m = n.attrInt("num_scan_inputs", -1);
    if (m < 1)
        return opError(n, "needs attribute 'num_scan_inputs' of at least 1");
    if (captured < 0 || sc.first + static_cast<size_t>(m + captured) > n.numInputs())
        return opError(n, "has " + std::to_string(n.numInputs()) + " inputs, fewer than " + std::to_string(m) +
                              " scan inputs and " + std::to_string(captured) + " captured values");
    sc.scanIns = static_cast<size_t>(m);
    sc.states = n.numInputs() - sc.first - sc.scanIns - static_cast<size_t>(captured);
    if (body->inputs().size() != n.numInputs() - sc.first)
        return opError(n, "body '" + body->name() + "' takes " + std::to_string(body->inputs().size()) +
                              " inputs, expected " + std::to_string(sc.states) + " states + " +
                              std::to_string(sc.scanIns) + " scan slices + " + std::to_string(captured) + " captured");
    if (body->outputs().size() < sc.states || n.numOutputs() != body->outputs().size())
        return opError(n, "has " + std::to_string(n.numOutputs()) + " outputs, but its body '" + body->name() +
                              "' gives " + std::to_string(body->outputs().size()) + " for " +
                              std::to_string(sc.states) + " states");
    sc.scanOuts = body->outputs().size() - sc.states;
    if (sc.opset8) {
        sc.inAxes.assign(sc.scanIns, 1);
        sc.outAxes.assign(sc.scanOuts, 1);
        sc.inDirs = n.attrInts("directions", std::vector<int64_t>(sc.scanIns, 0));
        sc.outDirs.assign(sc.scanOuts, 0);
    } else {
        sc.inAxes = n.attrInts("scan_input_axes", std::vector<int64_t>(sc.scanIns, 0));
        sc.inDirs = n.attrInts("scan_input_directions", std::vector<int64_t>(sc.scanIns, 0));
        sc.outAxes = n.attrInts("scan_output_axes", std::vector<int64_t>(sc.scanOuts, 0));
        sc.outDirs = n.attrInts("scan_output_directions", std::vector<int64_t>(sc.scanOuts, 0));
    }
    if (sc.inAxes.size() != sc.scanIns || sc.inDirs.size() != sc.scanIns)
        return opError(n, "scan input axes and directions must have one entry per scan input (" +
                              std::to_string(sc.scanIns) + ")");
    if (sc.outAxes.size() != sc.scanOuts || sc.outDirs.size() != sc.scanOuts)
        return opError(n, "scan output axes and directions must have one entry per scan output (" +
                              std::to_string(sc.scanOuts) + ")");
    for (int64_t d : sc.inDirs)
        if (d != 0 && d != 1)
            return opError(n, "scan direction " + std::to_string(d) + " is neither 0 nor 1");
    for (int64_t d : sc.outDirs)
        if (d != 0 && d != 1)
            return opError(n, "scan output direction " + std::to_string(d) + " is neither 0 nor 1");
    for (size_t j = 0; j < sc.scanIns; ++j) {
        const Value* in = n.input(sc.first + sc.states + j);
        if (!in)
            return opError(n, "scan input " + std::to_string(j) + " is missing");
        const int64_t rank = static_cast<int64_t>(in->type().rank());
        SX_ASSIGN(sc.inAxes[j], ops::normaliseAxis(n, sc.inAxes[j], rank, "scan input axis"));
    }
    for (size_t k = 0; k < sc.scanOuts; ++k) {
        const int64_t rank = static_cast<int64_t>(body->outputs()[sc.states + k]->type().rank()) + (sc.opset8 ? 2 : 1);
        if (sc.opset8)
            continue;
        SX_ASSIGN(sc.outAxes[k], ops::normaliseAxis(n, sc.outAxes[k], rank, "scan output axis"));
    }
    return sc;
}

/// The body's formal input types for the node's inputs: states as they enter (without the batch
/// dim at opset 8), scan inputs without their scanned dim (and batch dim), captured values as
/// they are.
std::vector<TensorType> scanFormals(const Node& n, const ScanShape& sc) {
    std::vector<TensorType> formals;
    for (size_t i = sc.first; i < n.numInputs(); ++i) {
        TensorType t = n.input(i)->type();
        const size_t j = i - sc.first;
        if (j < sc.states + sc.scanIns && sc.opset8)
            t = dropAxis(t, 0);
        if (j >= sc.states && j < sc.states + sc.scanIns)
            t = dropAxis(t, static_cast<size_t>(sc.inAxes[j - sc.states]) - (sc.opset8 ? 1 : 0));
        formals.push_back(std::move(t));
    }
    return formals;
}

} // namespace

Status verifyScan(const Node& n) {
    SX_ASSIGN(ScanShape sc, scanShape(n));
    const Graph* body = loopBody(n);
    if (sc.opset8 && n.input(0)) {
        const TensorType& lens = n.input(0)->type();
        if (lens.dtype != DType::I32 || lens.rank() != 1)
            return opError(n, "sequence_lens must be a 1-D i32 tensor, got " + lens.str());
    }
    for (size_t i = sc.first; i < n.numInputs(); ++i) {
        const Value* in = n.input(i);
        if (!in)
            return opError(n, "input " + std::to_string(i) + " is missing");
        const size_t need = i - sc.first >= sc.states && i - sc.first < sc.states + sc.scanIns ? (sc.opset8 ? 2 : 1)
                            : sc.opset8 && i - sc.first < sc.states                                ? 1
                                                                                                  : 0;
        if (in->type().rank() < need)
            return opError(n, "input '" + in->name() + "' " + in->type().str() + " has no dim to scan or batch");
        const Value* formal = body->inputs()[i - sc.first];
        if (formal->type().dtype != in->type().dtype)
            return opError(n, "body input '" + formal->name() + "' is " + formal->type().str() +
                                  " but the node passes " + in->type().str());
    }
    for (size_t s = 0; s < sc.states; ++s)
        if (body->outputs()[s]->type().dtype != n.input(sc.first + s)->type().dtype)
            return opError(n, "state " + std::to_string(s) + " enters as " + n.input(sc.first + s)->type().str() +
                                  " but the body gives " + body->outputs()[s]->type().str());
    return {};
}

Expected<std::vector<TensorType>> inferScan(const Node& n) {
    SX_TRY(verifyScan(n));
    SX_ASSIGN(ScanShape sc, scanShape(n));
    std::vector<TensorType> formals = scanFormals(n, sc);
    const Graph* body = loopBody(n);
    for (size_t s = 0; s < sc.states; ++s)
        formals[s] = widen(formals[s], body->inputs()[s]->type());
    SX_ASSIGN(std::vector<TensorType> outs, bodyOutputTypes(n, "body", formals));
    // The sequence length: the scanned dim of the scan inputs (all agree at run time).
    Dim length = ops::unknownDim();
    for (size_t j = 0; j < sc.scanIns; ++j) {
        const Dim& d = n.input(sc.first + sc.states + j)->type().shape[static_cast<size_t>(sc.inAxes[j])];
        if (d.isKnown()) {
            if (length.isKnown() && length.value != d.value)
                return opError(n, "scan inputs have sequence lengths " + std::to_string(length.value) + " and " +
                                      std::to_string(d.value));
            length = d;
        }
    }
    const Dim batch = sc.opset8 && sc.scanIns > 0 ? n.input(sc.first + sc.states)->type().shape[0] : Dim{};
    std::vector<TensorType> types;
    for (size_t s = 0; s < sc.states; ++s) {
        TensorType t = widen(formals[s], outs[s]);
        types.push_back(sc.opset8 ? insertAxis(t, 0, n.input(sc.first + s)->type().shape[0]) : t);
    }
    for (size_t k = 0; k < sc.scanOuts; ++k) {
        TensorType t = insertAxis(outs[sc.states + k], static_cast<size_t>(sc.outAxes[k]) - (sc.opset8 ? 1 : 0), length);
        types.push_back(sc.opset8 ? insertAxis(t, 0, batch) : t);
    }
    return types;
}

namespace {

/// One Scan-9 run over `ins` (states, scan inputs, captured; no batch dim), appending the final
/// states and stacked outputs to `result`.
Status scanOnce(const Node& n, const ScanShape& sc, const Graph& body, std::vector<Tensor> ins,
                const KernelContext& ctx, std::vector<Tensor>& result) {
    const int axisShift = sc.opset8 ? 1 : 0;
    int64_t length = -1;
    for (size_t j = 0; j < sc.scanIns; ++j) {
        const Tensor& x = ins[sc.states + j];
        const size_t axis = static_cast<size_t>(sc.inAxes[j] - axisShift);
        if (axis >= x.rank())
            return opError(n, "scan input " + std::to_string(j) + " " + x.type().str() + " has no axis " + std::to_string(axis));
        if (length >= 0 && x.shape()[axis] != length)
            return opError(n, "scan inputs have sequence lengths " + std::to_string(length) + " and " +
                                  std::to_string(x.shape()[axis]));
        length = x.shape()[axis];
    }
    if (length > kMaxLoopIterations)
        return opError(n, "a sequence of " + std::to_string(length) + " steps is longer than the " +
                              std::to_string(kMaxLoopIterations) + " this executor runs", ErrorKind::Unsupported);
    std::vector<Tensor> scanned(ins.begin() + static_cast<std::ptrdiff_t>(sc.states),
                                ins.begin() + static_cast<std::ptrdiff_t>(sc.states + sc.scanIns));
    std::vector<std::vector<Tensor>> outs(sc.scanOuts);
    for (int64_t t = 0; t < length; ++t) {
        for (size_t j = 0; j < sc.scanIns; ++j)
            ins[sc.states + j] = sliceAt(scanned[j], static_cast<size_t>(sc.inAxes[j] - axisShift),
                                         sc.inDirs[j] ? length - 1 - t : t);
        SX_ASSIGN(std::vector<Tensor> o, runBody(n, body, ins, ctx, t));
        for (size_t s = 0; s < sc.states; ++s)
            ins[s] = std::move(o[s]);
        for (size_t k = 0; k < sc.scanOuts; ++k)
            outs[k].push_back(std::move(o[sc.states + k]));
    }
    for (size_t s = 0; s < sc.states; ++s)
        result.push_back(std::move(ins[s]));
    for (size_t k = 0; k < sc.scanOuts; ++k) {
        if (sc.outDirs[k])
            std::reverse(outs[k].begin(), outs[k].end());
        SX_ASSIGN(Tensor y, stack(n, outs[k], static_cast<size_t>(sc.outAxes[k] - axisShift),
                                   body.outputs()[sc.states + k]->type()));
        result.push_back(std::move(y));
    }
    return {};
}

} // namespace

Expected<std::vector<Tensor>> runScan(const Node& n, std::span<const Tensor> inputs, const KernelContext& ctx) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(ScanShape sc, scanShape(n));
    const Graph& body = *loopBody(n);
    std::vector<Tensor> ins(inputs.begin() + static_cast<std::ptrdiff_t>(sc.first), inputs.end());
    std::vector<Tensor> result;
    if (!sc.opset8) {
        SX_TRY(scanOnce(n, sc, body, std::move(ins), ctx, result));
        return result;
    }
    // Scan-8: every state and scan input has a batch dim 0; each batch entry is scanned alone.
    const size_t batched = sc.states + sc.scanIns;
    int64_t batch = -1;
    for (size_t i = 0; i < batched; ++i) {
        if (ins[i].rank() == 0 || (batch >= 0 && ins[i].shape()[0] != batch))
            return opError(n, "inputs disagree on the batch dim: " + ins[i].type().str());
        batch = ins[i].shape()[0];
    }
    if (n.input(0)) {
        const Tensor& lens = inputs[0];
        const int64_t full = sc.scanIns > 0 && ins[sc.states].rank() > 1 ? ins[sc.states].shape()[1] : 0;
        if (lens.numel() != batch)
            return opError(n, "sequence_lens has " + std::to_string(lens.numel()) + " entries for a batch of " +
                                  std::to_string(batch));
        for (int64_t b = 0; b < lens.numel(); ++b)
            if (static_cast<int64_t>(lens.at(b)) != full)
                return opError(n, "sequence_lens " + std::to_string(static_cast<int64_t>(lens.at(b))) +
                                      " is shorter than the sequence (" + std::to_string(full) +
                                      "); Scan-8's padded sequences are not supported",
                               ErrorKind::Unsupported);
    }
    std::vector<std::vector<Tensor>> perBatch;
    for (int64_t b = 0; b < batch; ++b) {
        std::vector<Tensor> one = ins;
        for (size_t i = 0; i < batched; ++i)
            one[i] = sliceAt(ins[i], 0, b);
        std::vector<Tensor> r;
        SX_TRY(scanOnce(n, sc, body, std::move(one), ctx, r));
        perBatch.push_back(std::move(r));
    }
    for (size_t o = 0; o < n.numOutputs(); ++o) {
        std::vector<Tensor> parts;
        for (auto& r : perBatch)
            parts.push_back(std::move(r[o]));
        SX_ASSIGN(Tensor y, stack(n, parts, 0, body.outputs()[o]->type()));
        result.push_back(std::move(y));
    }
    return result;
}

} // namespace sextant::ir
