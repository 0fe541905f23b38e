// Ops the fusion rules create: HardSwish and LayerNormalization (ai.onnx, opsets 14 and 17), and
// the compiler's own sextant.Attention and sextant.ElementwiseGroup.

#include "OpUtil.h"

#include "core/ir/Half.h"
#include "core/ir/Interpreter.h"
#include "core/ir/Printer.h"

#include <cstdio>

namespace sextant::ir {

using ops::opError;
using ops::Shape;

// ---- HardSwish: x * clamp(x / 6 + 0.5, 0, 1)

Status verifyHardSwish(const Node& n) { return ops::requireFloatInput(n, 0, "hardswish input"); }

Expected<std::vector<TensorType>> inferHardSwish(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "missing input");
    return std::vector<TensorType>{*x};
}

Expected<std::vector<Tensor>> runHardSwish(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    Tensor y = inputs[0].clone();
    ops::Activation act;
    act.kind = ops::Activation::Kind::HardSwish;
    if (y.dtype() == DType::F64)
        ops::applyActivation(act, y.mutableData<double>(), y.numel());
    else if (y.dtype() == DType::F32)
        ops::applyActivation(act, y.mutableData<float>(), y.numel());
    else
        return opError(n, "hardswish needs a float input", ErrorKind::Unsupported);
    return std::vector<Tensor>{std::move(y)};
}

// ---- LayerNormalization: (x - mean) / sqrt(var + eps) * scale + bias over dims [axis, rank)

namespace {

/// ONNX TensorProto data type numbers accepted as stash_type: FLOAT (1), FLOAT16 (10), DOUBLE (11).
constexpr int64_t kStashFloat = 1, kStashHalf = 10, kStashDouble = 11;

Expected<int64_t> layerNormAxis(const Node& n, size_t rank) {
    return ops::normaliseAxis(n, n.attrInt("axis", -1), static_cast<int64_t>(rank),
                              "layer normalization axis");
}

} // namespace

Status verifyLayerNormalization(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "epsilon"));
    SX_TRY(ops::checkIntAttr(n, "axis", -64, 64));
    const int64_t stash = n.attrInt("stash_type", kStashFloat);
    if (stash != kStashFloat && stash != kStashHalf && stash != kStashDouble)
        return opError(n, "stash_type " + std::to_string(stash) +
                              " is not supported (1 float, 10 float16, 11 double)",
                       ErrorKind::Unsupported);
    for (size_t i = 0; i < 3; ++i)
        SX_TRY(ops::requireFloatInput(n, i, "layer normalization input"));
    return {};
}

Expected<std::vector<TensorType>> inferLayerNormalization(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* scale = ops::inputType(n, 1);
    if (!x || !scale)
        return opError(n, "layer normalization needs X and Scale");
    if (x->rank() == 0)
        return opError(n, "layer normalization input must have rank >= 1");
    SX_ASSIGN(int64_t axis, layerNormAxis(n, x->rank()));
    for (size_t i = 1; i < 3; ++i) {
        const TensorType* p = ops::inputType(n, i);
        if (p && p->dtype != x->dtype)
            return opError(n, std::string(i == 1 ? "scale" : "bias") + " is " +
                                  std::string(dtypeName(p->dtype)) + " but the input is " +
                                  std::string(dtypeName(x->dtype)));
    }
    // Optional Mean and InvStdDev: the dims before axis, 1 from axis on, in the stash type
    // (double for 11, else float: a float16 stash still reports its statistics as float).
    std::vector<TensorType> out{*x};
    if (n.numOutputs() > 1) {
        TensorType stats;
        stats.dtype = n.attrInt("stash_type", kStashFloat) == kStashDouble ? DType::F64 : DType::F32;
        stats.shape = x->shape;
        for (size_t i = static_cast<size_t>(axis); i < stats.shape.size(); ++i)
            stats.shape[i] = Dim::known(1);
        out.resize(n.numOutputs(), stats);
    }
    return out;
}

Expected<std::vector<Tensor>> runLayerNormalization(const Node& n, std::span<const Tensor> inputs,
                                                    const KernelContext&) {
    const Tensor& x = inputs[0];
    SX_ASSIGN(int64_t axis, layerNormAxis(n, x.rank()));
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < x.rank(); ++i)
        (static_cast<int64_t>(i) < axis ? outer : inner) *= x.shape()[i];
    const Tensor& scale = inputs[1];
    const Tensor* bias = inputs.size() > 2 && inputs[2].valid() && inputs[2].numel() > 0
                             ? &inputs[2]
                             : nullptr;
    // Scale and bias broadcast to the normalised shape: one value, or one per normalised element.
    for (const Tensor* p : {&scale, bias})
        if (p && p->numel() != 1 && p->numel() != inner)
            return opError(n, "scale/bias of " + std::to_string(p->numel()) +
                                  " elements does not broadcast to the normalised size " +
                                  std::to_string(inner));
    const double eps = n.attrFloat("epsilon", 1e-5);
    const bool half = n.attrInt("stash_type", kStashFloat) == kStashHalf;
    auto stash = [&](double v) {
        return half ? static_cast<double>(roundToHalf(static_cast<float>(v))) : v;
    };
    const std::vector<double> xs = x.toDoubles();
    Tensor y(x.dtype(), x.shape());
    std::vector<int64_t> statShape = x.shape();
    for (size_t i = static_cast<size_t>(axis); i < statShape.size(); ++i)
        statShape[i] = 1;
    const DType statType =
        n.attrInt("stash_type", kStashFloat) == kStashDouble || x.dtype() == DType::F64 ? DType::F64
                                                                                       : DType::F32;
    Tensor meanOut(statType, statShape), invStdOut(statType, statShape);
    for (int64_t o = 0; o < outer; ++o) {
        const double* row = xs.data() + o * inner;
        double mean = 0;
        for (int64_t i = 0; i < inner; ++i)
            mean += row[i];
        mean = stash(mean / static_cast<double>(inner ? inner : 1));
        double var = 0;
        for (int64_t i = 0; i < inner; ++i)
            var += (row[i] - mean) * (row[i] - mean);
        var = stash(var / static_cast<double>(inner ? inner : 1));
        const double denom = std::sqrt(var + eps);
        meanOut.set(o, mean);
        invStdOut.set(o, 1.0 / denom);
        for (int64_t i = 0; i < inner; ++i) {
            double v = (row[i] - mean) / denom * scale.at(scale.numel() == 1 ? 0 : i);
            if (bias)
                v += bias->at(bias->numel() == 1 ? 0 : i);
            y.set(o * inner + i, v);
        }
    }
    std::vector<Tensor> out;
    out.push_back(std::move(y));
    if (n.numOutputs() > 1) {
        out.push_back(std::move(meanOut));
        out.push_back(std::move(invStdOut));
    }
    return out;
}

// ---- sextant.Attention: softmax(scale * Q x K^T) x V over the last two dims

namespace {

struct AttentionShapes {
    std::vector<int64_t> batch;
    int64_t sq = 0, sk = 0, d = 0, dv = 0;
};

/// Checks Q [..., Sq, D], K [..., Sk, D] (transB = 1) or [..., D, Sk] (transB = 0) and
/// V [..., Sk, Dv] with identical batch dims; known dims only (symbolic ones are accepted).
Expected<Shape> attentionShape(const Node& n, const Shape& q, const Shape& k, const Shape& v) {
    if (q.size() < 2 || k.size() != q.size() || v.size() != q.size())
        return opError(n, "attention needs Q, K and V of one rank >= 2, got " + ops::shapeStr(q) +
                              ", " + ops::shapeStr(k) + ", " + ops::shapeStr(v));
    const size_t r = q.size();
    const bool transB = n.attrInt("transB", 0) != 0;
    auto mismatch = [](const Dim& a, const Dim& b) {
        return a.isKnown() && b.isKnown() && a.value != b.value;
    };
    for (size_t i = 0; i + 2 < r; ++i)
        if (mismatch(q[i], k[i]) || mismatch(q[i], v[i]))
            return opError(n, "attention batch dims differ: " + ops::shapeStr(q) + ", " +
                                  ops::shapeStr(k) + ", " + ops::shapeStr(v));
    const Dim& kd = transB ? k[r - 1] : k[r - 2];
    const Dim& ks = transB ? k[r - 2] : k[r - 1];
    if (mismatch(q[r - 1], kd))
        return opError(n, "attention Q " + ops::shapeStr(q) + " and K " + ops::shapeStr(k) +
                              " disagree on the head size");
    if (mismatch(ks, v[r - 2]))
        return opError(n, "attention K " + ops::shapeStr(k) + " and V " + ops::shapeStr(v) +
                              " disagree on the key count");
    Shape out(q.begin(), q.end() - 1);
    out.push_back(v[r - 1]);
    return out;
}

template <typename T>
void attentionImpl(const Tensor& qt, const Tensor& kt, const Tensor& vt, Tensor& yt,
                   const AttentionShapes& s, double scale, bool transB, bool fastSoftmax) {
    int64_t batch = 1;
    for (int64_t b : s.batch)
        batch *= b;
    const T* q = qt.data<T>();
    const T* k = kt.data<T>();
    const T* v = vt.data<T>();
    T* y = yt.mutableData<T>();
    std::vector<T> p(static_cast<size_t>(s.sk));
    for (int64_t b = 0; b < batch; ++b) {
        const T* qb = q + b * s.sq * s.d;
        const T* kb = k + b * s.sk * s.d;
        const T* vb = v + b * s.sk * s.dv;
        T* yb = y + b * s.sq * s.dv;
        for (int64_t i = 0; i < s.sq; ++i) {
            T mx = -std::numeric_limits<T>::infinity();
            for (int64_t j = 0; j < s.sk; ++j) {
                T acc = 0;
                for (int64_t d = 0; d < s.d; ++d)
                    acc += qb[i * s.d + d] * (transB ? kb[j * s.d + d] : kb[d * s.sk + j]);
                p[j] = acc * static_cast<T>(scale);
                mx = std::max(mx, p[j]);
            }
            // The accuracy-trading variant skips the max-subtraction: exp may overflow on large
            // scores, which is exactly what bisection has to be able to find.
            const T shift = fastSoftmax ? T(0) : mx;
            T sum = 0;
            for (int64_t j = 0; j < s.sk; ++j) {
                p[j] = std::exp(p[j] - shift);
                sum += p[j];
            }
            for (int64_t e = 0; e < s.dv; ++e) {
                T acc = 0;
                for (int64_t j = 0; j < s.sk; ++j)
                    acc += p[j] * vb[j * s.dv + e];
                yb[i * s.dv + e] = acc / sum;
            }
        }
    }
}

} // namespace

Status verifyAttention(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "scale"));
    SX_TRY(ops::checkIntAttr(n, "transB", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "fast_softmax", 0, 1));
    for (size_t i = 0; i < 3; ++i)
        SX_TRY(ops::requireFloatInput(n, i, "attention input"));
    return {};
}

Expected<std::vector<TensorType>> inferAttention(const Node& n) {
    const TensorType* q = ops::inputType(n, 0);
    const TensorType* k = ops::inputType(n, 1);
    const TensorType* v = ops::inputType(n, 2);
    if (!q || !k || !v)
        return opError(n, "attention needs Q, K and V");
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        return opError(n, "attention Q, K and V have different dtypes");
    SX_ASSIGN(Shape out, attentionShape(n, q->shape, k->shape, v->shape));
    TensorType t;
    t.dtype = q->dtype;
    t.shape = std::move(out);
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runAttention(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext& ctx) {
    const Tensor& q = inputs[0];
    const Tensor& k = inputs[1];
    const Tensor& v = inputs[2];
    SX_ASSIGN(Shape outShape, attentionShape(n, ops::shapeOf(q), ops::shapeOf(k), ops::shapeOf(v)));
    for (size_t i = 0; i + 2 < q.rank(); ++i)
        if (q.shape()[i] != k.shape()[i] || q.shape()[i] != v.shape()[i])
            return opError(n, "attention batch dims differ");
    const size_t r = q.rank();
    const bool transB = n.attrInt("transB", 0) != 0;
    AttentionShapes s;
    s.batch.assign(q.shape().begin(), q.shape().end() - 2);
    s.sq = q.shape()[r - 2];
    s.d = q.shape()[r - 1];
    s.sk = transB ? k.shape()[r - 2] : k.shape()[r - 1];
    s.dv = v.shape()[r - 1];
    const double scale = n.attrFloat("scale", 1.0);
    const bool fast = n.attrInt("fast_softmax", 0) != 0;
    Tensor y(q.dtype(), ops::extents(outShape));
    if (q.dtype() == DType::F64 && k.dtype() == DType::F64 && v.dtype() == DType::F64)
        attentionImpl<double>(q, k, v, y, s, scale, transB, fast);
    else if (q.dtype() == DType::F32 && k.dtype() == DType::F32 && v.dtype() == DType::F32)
        attentionImpl<float>(q, k, v, y, s, scale, transB, fast);
    else
        return opError(n, "attention needs Q, K and V of one float dtype (compute " +
                              std::string(dtypeName(ctx.compute)) + ")",
                       ErrorKind::Unsupported);
    return std::vector<Tensor>{std::move(y)};
}

// ---- sextant.ElementwiseGroup: a recorded chain of elementwise ops replayed in one kernel

namespace {

/// Builds the body as a graph whose inputs have the given types; its one output is the last
/// step's result. The steps are checked (checkBody) before they are followed.
Expected<std::unique_ptr<Graph>> buildBody(const Node& n, const std::vector<TensorType>& inputs) {
    const FusedBody* body = n.body();
    if (!body)
        return opError(n, "a group needs a body (at least one step)");
    if (Status s = checkBody(*body, inputs.size()); !s.ok())
        return opError(n, s.error().message);
    auto g = std::make_unique<Graph>(n.name() + ".body");
    std::vector<Value*> ins, steps;
    for (size_t i = 0; i < inputs.size(); ++i) {
        SX_ASSIGN(Value * v, g->addInput("i" + std::to_string(i), inputs[i]));
        ins.push_back(v);
    }
    for (size_t i = 0; i < body->steps.size(); ++i) {
        const BodyStep& s = body->steps[i];
        std::vector<Value*> args;
        for (const BodyOperand& o : s.operands) {
            switch (o.kind) {
            case BodyOperand::Kind::Omitted: args.push_back(nullptr); break;
            case BodyOperand::Kind::Input: args.push_back(ins[o.index]); break;
            case BodyOperand::Kind::Step: args.push_back(steps[o.index]); break;
            }
        }
        AttributeMap attrs;
        for (const auto& [key, value] : s.attrs)
            attrs.emplace(key, value);
        SX_ASSIGN(Node * step, g->addNode(s.op, "s" + std::to_string(i), std::move(args),
                                          {"t" + std::to_string(i)}, std::move(attrs)));
        steps.push_back(step->output(0));
    }
    g->setOutputs({steps.back()});
    return g;
}

} // namespace

namespace {

/// The group's inputs' types (none may be omitted).
Expected<std::vector<TensorType>> inputTypes(const Node& n) {
    std::vector<TensorType> types;
    for (const Value* v : n.inputs()) {
        if (!v)
            return opError(n, "group inputs may not be omitted");
        types.push_back(v->type());
    }
    return types;
}

/// The body built for the group's input types, with every step's type inferred.
Expected<std::unique_ptr<Graph>> typedBody(const Node& n) {
    SX_ASSIGN(std::vector<TensorType> types, inputTypes(n));
    SX_ASSIGN(auto body, buildBody(n, types));
    if (Status s = body->inferTypes(); !s.ok())
        return opError(n, "group body: " + s.error().message);
    return body;
}

} // namespace

Status verifyElementwiseGroup(const Node& n) {
    SX_ASSIGN(std::vector<TensorType> types, inputTypes(n));
    SX_ASSIGN(auto body, buildBody(n, types));
    // A pooled step computes one value per channel: the backend prices it, and every part reads
    // its inputs, whole. A map-sized one would need a window of its neighbours' slices.
    if (body->inferTypes().ok()) {
        const std::vector<Node*> steps = body->nodes();
        for (size_t i = 0; i < steps.size(); ++i) {
            if (opInfo(steps[i]->kind()).fusable != Fusable::Pooled)
                continue;
            const TensorType& t = steps[i]->output(0)->type();
            bool pooled = t.rank() >= 3 && t.isStatic();
            for (size_t d = 2; pooled && d < t.rank(); ++d)
                pooled = t.dims()[d] == 1;
            if (!pooled)
                return opError(n, "body step " + std::to_string(i) + " '" + bodyStepText(n.body()->steps[i]) +
                                      "' gives " + printType(t) + ", not one value per channel (every spatial dim 1)");
        }
    }
    return {};
}

Expected<std::vector<TensorType>> groupStepTypes(const Node& n) {
    SX_ASSIGN(auto body, typedBody(n));
    std::vector<TensorType> out;
    for (const Node* step : body->nodes())
        out.push_back(step->output(0)->type());
    return out;
}

Expected<std::vector<TensorType>> inferElementwiseGroup(const Node& n) {
    SX_ASSIGN(auto body, typedBody(n));
    return std::vector<TensorType>{body->outputs()[0]->type()};
}

Expected<std::vector<Tensor>> runElementwiseGroup(const Node& n, std::span<const Tensor> inputs,
                                                  const KernelContext& ctx) {
    std::vector<TensorType> types;
    for (const Tensor& t : inputs)
        types.push_back(t.type());
    SX_ASSIGN(auto body, buildBody(n, types));
    Status s = body->inferTypes();
    if (!s.ok())
        return opError(n, "group body: " + s.error().message);
    auto out = interpret(*body, inputs, ctx);
    if (!out.ok())
        return opError(n, "group body: " + out.error().message);
    return std::move(*out);
}

} // namespace sextant::ir
