// Data propagation: the values of small integer tensors that are known before the graph runs.

#include "OpUtil.h"

#include "core/ir/Interpreter.h"

namespace sextant::ir {

namespace {

/// Deep enough for the shape arithmetic exporters write (Shape -> Gather -> Unsqueeze -> Concat
/// -> Reshape is five); bounded so that a long chain cannot make inference expensive.
constexpr int kMaxDepth = 16;

bool small(const Tensor& t) {
    return isInteger(t.dtype()) && t.numel() <= kKnownValueElements;
}

/// The ops whose kernels are cheap and whose output size is bounded by their inputs' (or, for
/// ConstantOfShape, checked before running): only these are evaluated.
bool propagates(OpKind k) {
    switch (k) {
    case OpKind::Identity: case OpKind::Cast: case OpKind::Unsqueeze: case OpKind::Squeeze:
    case OpKind::Reshape: case OpKind::Flatten: case OpKind::Concat: case OpKind::Gather:
    case OpKind::Slice: case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div:
    case OpKind::Neg: case OpKind::Abs: case OpKind::Min: case OpKind::Max:
    case OpKind::ReduceProd: case OpKind::ReduceSum: case OpKind::ConstantOfShape:
        return true;
    default:
        return false;
    }
}

std::optional<Tensor> known(const Value* v, int depth);

std::optional<Tensor> evaluated(const Value* v, int depth) {
    const Node& p = *v->producer();
    std::vector<Tensor> inputs;
    inputs.reserve(p.numInputs());
    for (const Value* in : p.inputs()) {
        if (!in) {
            inputs.emplace_back();
            continue;
        }
        std::optional<Tensor> t = known(in, depth - 1);
        if (!t)
            return std::nullopt;
        inputs.push_back(std::move(*t));
    }
    if (p.kind() == OpKind::ConstantOfShape) {
        if (inputs.empty()) // malformed: the verifier names it
            return std::nullopt;
        int64_t count = 1;
        for (int64_t i = 0; i < inputs[0].numel(); ++i) {
            const double d = inputs[0].at(i);
            if (d < 0 || d > kKnownValueElements)
                return std::nullopt;
            count *= static_cast<int64_t>(d);
            if (count > kKnownValueElements)
                return std::nullopt;
        }
    }
    KernelContext ctx;
    ctx.compute = DType::F64;
    auto outs = evaluateNode(p, inputs, ctx);
    const auto index = static_cast<size_t>(v->producerOutput());
    if (!outs.ok() || index >= outs->size() || !small((*outs)[index]))
        return std::nullopt; // an invalid node: the verifier reports it on its own terms
    return std::move((*outs)[index]);
}

std::optional<Tensor> known(const Value* v, int depth) {
    if (const Tensor* c = v->constant())
        return small(*c) ? std::optional<Tensor>(*c) : std::nullopt;
    const Node* p = v->producer();
    if (!p || depth <= 0 || !isInteger(v->type().dtype))
        return std::nullopt;
    if (p->kind() == OpKind::Shape || p->kind() == OpKind::Size)
        return staticShapeValue(*p);
    if (!propagates(p->kind()))
        return std::nullopt;
    return evaluated(v, depth);
}

} // namespace

std::optional<Tensor> staticShapeValue(const Node& n) {
    if (n.kind() != OpKind::Shape && n.kind() != OpKind::Size)
        return std::nullopt;
    const Value* x = n.input(0);
    if (!x || !x->type().isStatic())
        return std::nullopt;
    const std::vector<int64_t> dims = x->type().dims();
    if (n.kind() == OpKind::Size)
        return Tensor::fromVector<int64_t>({}, {product(dims)});
    auto [start, end] = ops::shapeRange(n, static_cast<int64_t>(dims.size()));
    return Tensor::fromVector<int64_t>({end - start},
                                       std::vector<int64_t>(dims.begin() + start, dims.begin() + end));
}

std::optional<Tensor> knownValue(const Value* v) {
    return v ? known(v, kMaxDepth) : std::nullopt;
}

} // namespace sextant::ir
