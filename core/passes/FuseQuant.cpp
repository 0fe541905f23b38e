// Quantized fusions: fuse-qdq-conv and fuse-qdq-matmul make an int8 cube op (sextant.Int8Conv,
// sextant.Int8Gemm) of the DequantizeLinear -> Conv | MatMul | Gemm [-> Relu | Clip] ->
// QuantizeLinear pattern of onnxruntime's QDQ format, as onnxruntime's own QDQ selectors make a
// QLinearConv or QLinearMatMul of it.
#include "FuseUtil.h"

#include "core/ir/Interpreter.h"

#include <cmath>
#include <limits>

namespace sextant::passes::fuse {

namespace {

using ir::OpKind;

/// A QuantizeLinear's or DequantizeLinear's constant parameters.
struct QuantParams {
    std::vector<double> scales;
    std::vector<int64_t> zeros; ///< one per scale (0 without a zero point)
    ir::DType integer = ir::DType::U8; ///< the quantized side's type
    bool perAxis = false;
    int64_t axis = 0; ///< normalised against the quantized tensor's rank (per axis only)
};

/// The parameters of Q/DQ node `n` whose quantized side has rank `rank`, or the reason they
/// cannot be fixed at compile time.
std::optional<QuantParams> quantParams(const ir::Node& n, size_t rank, std::string& why) {
    const std::string what = n.kind() == OpKind::QuantizeLinear ? "QuantizeLinear" : "DequantizeLinear";
    const ir::Tensor* s = constantOf(n.numInputs() > 1 ? n.input(1) : nullptr);
    if (!s) {
        why = what + " '" + n.name() + "' has no constant scale";
        return std::nullopt;
    }
    if (s->dtype() != ir::DType::F32) {
        why = what + " '" + n.name() + "' has a " + std::string(ir::dtypeName(s->dtype())) +
              " scale (the int8 kernels requantise in float32)";
        return std::nullopt;
    }
    if (n.attrInt("block_size", 0) != 0) {
        why = what + " '" + n.name() + "' has a blocked scale";
        return std::nullopt;
    }
    const ir::Value* zpv = n.numInputs() > 2 ? n.input(2) : nullptr;
    const ir::Tensor* zp = constantOf(zpv);
    if (zpv && !zp) {
        why = what + " '" + n.name() + "' has no constant zero point";
        return std::nullopt;
    }
    QuantParams p;
    p.integer = zp ? zp->dtype() : n.kind() == OpKind::DequantizeLinear && n.input(0)
                                       ? n.input(0)->type().dtype
                                       : ir::DType::U8;
    if (n.kind() == OpKind::QuantizeLinear && !zp)
        if (const int64_t code = n.attrInt("output_dtype", 0); code == 3)
            p.integer = ir::DType::I8;
    if (p.integer != ir::DType::I8 && p.integer != ir::DType::U8) {
        why = what + " '" + n.name() + "' is " + std::string(ir::dtypeName(p.integer)) + ", not int8 or uint8";
        return std::nullopt;
    }
    if (zp && zp->numel() != s->numel()) {
        why = what + " '" + n.name() + "' has " + std::to_string(s->numel()) + " scales but " +
              std::to_string(zp->numel()) + " zero points";
        return std::nullopt;
    }
    p.perAxis = s->numel() != 1;
    if (p.perAxis) {
        int64_t axis = n.attrInt("axis", 1);
        if (axis < 0)
            axis += static_cast<int64_t>(rank);
        p.axis = axis;
    }
    for (int64_t i = 0; i < s->numel(); ++i) {
        const double v = s->at(i);
        if (!(v > 0.0) || !std::isfinite(v)) {
            why = what + " '" + n.name() + "' has scale " + std::to_string(v) + " (not finite and above 0)";
            return std::nullopt;
        }
        p.scales.push_back(v);
        p.zeros.push_back(zp ? static_cast<int64_t>(zp->at(i)) : 0);
    }
    return p;
}

/// Whether quantizing with `y` gives back exactly what dequantizing with `x` took: the same type,
/// scales, zero points and axis.
bool sameQuantization(const QuantParams& x, const QuantParams& y) {
    return x.integer == y.integer && x.scales == y.scales && x.zeros == y.zeros && x.perAxis == y.perAxis &&
           (!x.perAxis || x.axis == y.axis);
}

/// The DequantizeLinear producing `v`, or nullptr.
const ir::Node* dequantizer(const ir::Value* v) {
    const ir::Node* p = v ? v->producer() : nullptr;
    return p && p->kind() == OpKind::DequantizeLinear && p->numInputs() >= 2 && p->input(0) ? p : nullptr;
}

struct QdqPlan : MatchPlan {
    const ir::Node* dqX = nullptr;
    const ir::Node* dqW = nullptr;
    ir::Node* act = nullptr;
    ir::Node* q = nullptr;
    ActivationSpec spec;
    QuantParams x, w, y;
    std::optional<ir::Tensor> bias; ///< int32, at scale x_scale * w_scale[m]
    bool transposeWeight = false;   ///< a Gemm's transB: the int8 weight is stored [K, N]
};

/// The int32 bias at scale x_scale * w_scale[m] of product `op` (its input 2: a DequantizeLinear
/// of an int32 constant, or a float constant of `m` entries), quantized as onnxruntime's
/// quantizer does: round half to even. Empty `why` and no tensor when the op has no bias.
std::optional<ir::Tensor> int32Bias(const ir::Node& op, const QdqPlan& p, int64_t m, std::string& why) {
    const ir::Value* b = op.numInputs() > 2 ? op.input(2) : nullptr;
    if (!b)
        return std::nullopt;
    const std::string what = std::string(op.info().name) + " bias '" + b->name() + "'";
    // The accumulator's scale for output channel c, in float32 as the quantizer computes it.
    auto accScale = [&p](int64_t c) {
        return static_cast<float>(p.x.scales[0]) *
               static_cast<float>(p.w.scales[p.w.scales.size() == 1 ? 0 : static_cast<size_t>(c)]);
    };
    std::vector<double> real; // the bias in real units, exactly as the float graph has it
    std::vector<double> given; // its int32 entries when a DequantizeLinear at the right scale holds them
    if (const ir::Node* dq = dequantizer(b); dq && constantOf(dq->input(0)) &&
                                             constantOf(dq->input(0))->dtype() == ir::DType::I32) {
        const ir::Tensor& q = *constantOf(dq->input(0));
        const ir::Tensor* s = constantOf(dq->input(1));
        const ir::Tensor* z = dq->numInputs() > 2 ? constantOf(dq->input(2)) : nullptr;
        if (!s || (dq->numInputs() > 2 && dq->input(2) && !z) || q.numel() != m ||
            (s->numel() != 1 && s->numel() != m)) {
            why = "bias DequantizeLinear '" + dq->name() + "' is not a constant per-channel int32 bias";
            return std::nullopt;
        }
        bool exact = true;
        for (int64_t c = 0; c < m; ++c) {
            const double sc = s->at(s->numel() == 1 ? 0 : c);
            const double zc = z ? z->at(z->numel() == 1 ? 0 : c) : 0.0;
            exact &= zc == 0.0 && static_cast<float>(sc) == accScale(c);
            given.push_back(q.at(c) - zc);
            real.push_back((q.at(c) - zc) * sc);
        }
        if (!exact)
            given.clear();
    } else if (const ir::Tensor* t = constantOf(b); t && t->numel() == m) {
        for (int64_t c = 0; c < m; ++c)
            real.push_back(t->at(c));
    } else {
        why = what + " is not a constant of one entry per output channel";
        return std::nullopt;
    }
    ir::Tensor out(ir::DType::I32, {m});
    for (int64_t c = 0; c < m; ++c) {
        const double v = given.empty() ? std::nearbyint(real[static_cast<size_t>(c)] / accScale(c))
                                       : given[static_cast<size_t>(c)];
        if (!std::isfinite(v) || std::abs(v) > 2147483647.0) {
            why = what + " does not fit int32 at scale x_scale * w_scale (channel " + std::to_string(c) + ")";
            return std::nullopt;
        }
        out.set(c, v);
    }
    return out;
}

/// Where product `op`'s result goes: [Relu | Clip ->] a per-tensor QuantizeLinear and nothing
/// else. Fills p.act, p.spec, p.q and p.y, or says why the result cannot be requantised in the
/// int8 epilogue (none: the result stays float).
Match planQuantizedResult(const ir::Node& op, QdqPlan& p) {
    const ir::Value* out = op.output(0);
    const std::string opName(op.info().name);
    std::string why;
    ir::Node* next = singleUser(out);
    if (!next)
        return Match::rejected(usersReason(opName, out));
    if (next->kind() != OpKind::QuantizeLinear) {
        if (next->kind() != OpKind::Relu && next->kind() != OpKind::Clip) {
            if (std::string ignored; activationOf(*next, ignored))
                return Match::rejected(std::string(next->info().name) + " '" + next->name() + "' between the " +
                                       opName + " and its QuantizeLinear is not an activation the int8 epilogue "
                                       "applies (Relu, Clip)");
            return Match::none(); // a float product whose result stays float
        }
        auto spec = activationOf(*next, why);
        if (!spec)
            return Match::rejected(why);
        p.act = next;
        p.spec = *spec;
        next = singleUser(next->output(0));
        if (!next)
            return Match::rejected(usersReason(p.spec.name, p.act->output(0)));
        if (next->kind() != OpKind::QuantizeLinear)
            return Match::none();
    }
    p.q = next;
    if (p.q->input(0) != (p.act ? p.act->output(0) : out))
        return Match::none(); // the value is the scale, not the data
    auto y = quantParams(*p.q, out->type().rank(), why);
    if (!y)
        return Match::rejected(why);
    if (y->perAxis)
        return Match::rejected("output QuantizeLinear '" + p.q->name() + "' has one scale per channel; the int8 "
                               "epilogue requantises to one scale");
    p.y = *y;
    return Match::matched();
}

/// Where product `op` (Conv, MatMul, Gemm) keeps its output channels: the weight's axis that
/// holds them, and how many there are; or why the op cannot be an int8 cube op.
struct WeightLayout {
    int64_t axis = 0;
    int64_t channels = 0;
    const char* name = "output channel";
};

std::optional<WeightLayout> weightLayout(const ir::Node& op, std::string& why) {
    const ir::TensorType& xt = op.input(0)->type();
    const ir::TensorType& wt = op.input(1)->type();
    if (!wt.isStatic() || !op.output(0)->type().isStatic()) {
        why = "weight or output shape is not known";
        return std::nullopt;
    }
    const std::vector<int64_t> wd = wt.dims();
    if (op.kind() == OpKind::Conv) {
        if (wd.size() < 3) {
            why = "conv weight has rank " + std::to_string(wd.size());
            return std::nullopt;
        }
        return WeightLayout{0, wd[0], "output channel"};
    }
    if (wd.size() != 2 || xt.rank() < 2 || (op.kind() == OpKind::Gemm && xt.rank() != 2)) {
        why = std::string(op.info().name) + " of a rank-" + std::to_string(xt.rank()) + " input by a rank-" +
              std::to_string(wd.size()) + " weight (the int8 cube takes [..., M, K] @ [K, N])";
        return std::nullopt;
    }
    if (op.kind() == OpKind::Gemm) {
        if (op.attrInt("transA", 0) != 0) {
            why = "Gemm with transA";
            return std::nullopt;
        }
        if (op.attrFloat("alpha", 1.0) != 1.0 || (op.numInputs() > 2 && op.input(2) && op.attrFloat("beta", 1.0) != 1.0)) {
            why = "Gemm with alpha or beta other than 1";
            return std::nullopt;
        }
        if (op.attrInt("transB", 0) != 0)
            return WeightLayout{0, wd[0], "output column"};
    }
    return WeightLayout{1, wd[1], "output column"};
}

/// Whether product `op` reads int8 data and weights through DequantizeLinear and its result
/// (after an optional Relu or Clip) goes only to a per-tensor QuantizeLinear: the plan, or the
/// reason it cannot run as an int8 cube op.
Match planQdqProduct(const ir::Node& op, QdqPlan& p) {
    if ((op.kind() != OpKind::Conv && op.kind() != OpKind::MatMul && op.kind() != OpKind::Gemm) || !hasInputs(op, 2))
        return Match::none();
    p.dqX = dequantizer(op.input(0));
    p.dqW = dequantizer(op.input(1));
    if (!p.dqX || !p.dqW)
        return Match::none();
    const std::string opName(op.info().name);
    std::string why;
    const std::optional<WeightLayout> layout = weightLayout(op, why);
    if (!layout)
        return Match::rejected(why);
    auto x = quantParams(*p.dqX, op.input(0)->type().rank(), why);
    if (!x)
        return Match::rejected(why);
    if (x->perAxis)
        return Match::rejected("input DequantizeLinear '" + p.dqX->name() + "' has one scale per channel (axis " +
                               std::to_string(x->axis) + "); the int8 cube takes one scale for its input");
    if (!constantOf(p.dqW->input(0)))
        return Match::rejected("weight DequantizeLinear '" + p.dqW->name() + "' does not read a constant");
    auto w = quantParams(*p.dqW, op.input(1)->type().rank(), why);
    if (!w)
        return Match::rejected(why);
    if (w->perAxis && (w->axis != layout->axis || static_cast<int64_t>(w->scales.size()) != layout->channels))
        return Match::rejected("per-axis scale on axis " + std::to_string(w->axis) + " of a " + opName +
                               " weight (the int8 cube takes one per " + layout->name + ", axis " +
                               std::to_string(layout->axis) + ")");
    if (Match tail = planQuantizedResult(op, p); tail.kind != Match::Kind::Matched)
        return tail;
    p.x = *x;
    p.w = *w;
    p.transposeWeight = op.kind() == OpKind::Gemm && op.attrInt("transB", 0) != 0;
    p.bias = int32Bias(op, p, layout->channels, why);
    if (!why.empty())
        return Match::rejected(why);
    return Match::matched();
}

int64_t onnxCode(ir::DType t) { return t == ir::DType::I8 ? 3 : 2; }

/// The [K, N] transpose of 2-D constant `w` ([N, K]).
ir::Tensor transposed2d(const ir::Tensor& w) {
    const int64_t rows = w.shape()[0], cols = w.shape()[1];
    ir::Tensor out(w.dtype(), {cols, rows});
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            out.set(c * rows + r, w.at(r * cols + c));
    return out;
}

// ---- fuse-qdq-conv, fuse-qdq-matmul

/// DequantizeLinear -> product [-> Relu | Clip] -> QuantizeLinear as one int8 cube op.
class FuseQdqProduct : public FusionRule {
public:
    FuseQdqProduct(std::string id, std::string summary, std::vector<OpKind> targets, OpKind fused)
        : m_id(std::move(id)), m_summary(std::move(summary)), m_targets(std::move(targets)), m_fused(fused) {}
    std::string id() const override { return m_id; }
    std::string summary() const override { return m_summary; }
    std::vector<OpKind> targets() const override { return m_targets; }
    // Before every float fusion of the product (bias, activation, residual): once those took the
    // Relu, the pattern would be gone.
    Phase phase() const override { return Phase::Recognise; }

    Match matchHere(const ir::Node& op) const override { return matchWithPlan<QdqPlan>(op, planQdqProduct); }

    Status apply(ir::Graph& g, ir::Node& op, const Match& match, RewriteContext& rc) const override {
        const QdqPlan& p = match.planAs<QdqPlan>();
        std::vector<ir::Node*> chain{&op};
        if (p.act)
            chain.push_back(p.act);
        chain.push_back(p.q);
        std::vector<ir::Value*> inputs{p.dqX->input(0), p.dqW->input(0)};
        if (p.transposeWeight) {
            SX_ASSIGN(ir::Value * wt, addDerivedConstant(g, op.name() + "_w_kn", transposed2d(*constantOf(inputs[1]))));
            rc.noteConstant(wt->name(), {p.dqW});
            inputs[1] = wt;
        }
        if (p.bias) {
            SX_ASSIGN(ir::Value * bv, addDerivedConstant(g, op.name() + "_bias_i32", *p.bias));
            std::vector<const ir::Node*> from{&op};
            if (const ir::Node* dq = dequantizer(op.input(2)))
                from.push_back(dq);
            rc.noteConstant(bv->name(), from);
            inputs.push_back(bv);
        }
        // A Conv keeps its window attributes; a Gemm's alpha, beta and transposes are applied.
        ir::AttributeMap attrs = op.kind() == OpKind::Conv ? op.attrs() : ir::AttributeMap{};
        attrs["x_scale"] = p.x.scales[0];
        attrs["x_zero_point"] = p.x.zeros[0];
        attrs["w_scale"] = p.w.scales;
        attrs["w_zero_point"] = p.w.zeros;
        attrs["y_scale"] = p.y.scales[0];
        attrs["y_zero_point"] = p.y.zeros[0];
        attrs["output_dtype"] = onnxCode(p.y.integer);
        if (p.act)
            setActivation(attrs, p.spec);
        else
            attrs["activation"] = std::string();
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, m_fused, std::move(inputs), std::move(attrs),
                                                 rc.createdBy()));
        (void)fused;
        return {};
    }

private:
    std::string m_id, m_summary;
    std::vector<OpKind> m_targets;
    OpKind m_fused;
};

// ---- cancel-dq-q

/// QuantizeLinear(DequantizeLinear(q)) with the same scales, zero points and type is q itself:
/// (q - z) * s / s rounds back to q - z exactly. Such pairs are left where a quantizer wrapped an
/// op that a rewrite removed (and around the int8 tensor a fused convolution now writes).
class CancelDqQ : public FusionRule {
public:
    std::string id() const override { return "cancel-dq-q"; }
    std::string summary() const override {
        return "remove a QuantizeLinear of a DequantizeLinear with the same scale, zero point and type: its "
               "result is the DequantizeLinear's int8 input (exact)";
    }
    std::vector<OpKind> targets() const override { return {OpKind::QuantizeLinear}; }
    Phase phase() const override { return Phase::Recognise; }

    Match matchHere(const ir::Node& q) const override {
        const ir::Node* dq = dequantizer(q.input(0));
        if (!dq)
            return Match::none();
        std::string why;
        auto y = quantParams(q, q.input(0)->type().rank(), why);
        auto x = y ? quantParams(*dq, dq->input(0)->type().rank(), why) : std::nullopt;
        if (!x || !y)
            return Match::rejected(why);
        if (!sameQuantization(*x, *y) || dq->input(0)->type().dtype != q.output(0)->type().dtype)
            return Match::rejected("DequantizeLinear '" + dq->name() + "' and QuantizeLinear '" + q.name() +
                                   "' differ in scale, zero point or type: the values are requantised");
        if (std::string cannot = cannotForward(q.output(0), dq->input(0)); !cannot.empty())
            return Match::rejected(cannot);
        return Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& q, const Match&, RewriteContext& rc) const override {
        ir::Value* ints = dequantizer(q.input(0))->input(0);
        rc.noteRemoved(q, "cancels DequantizeLinear '" + q.input(0)->producer()->name() + "'");
        return forwardAndErase(g, &q, q.output(0), ints);
    }
};

// ---- quantized-passthrough

/// Ops that only select or move values: on dequantized values they pick what they would pick on
/// the integers (dequantizing is increasing), so between a DequantizeLinear and a QuantizeLinear
/// of the same scale and zero point they can run on the int8 tensor itself.
bool passesValuesThrough(OpKind k) {
    switch (k) {
    case OpKind::MaxPool:
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Transpose:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Identity:
    case OpKind::Concat: return true;
    default: return false;
    }
}

class QuantizedPassthrough : public FusionRule {
public:
    std::string id() const override { return "quantized-passthrough"; }
    std::string summary() const override {
        return "run MaxPool, Concat, Reshape, Flatten, Transpose, Squeeze, Unsqueeze or Identity between "
               "DequantizeLinear and QuantizeLinear of the same scale and zero point on the int8 tensor itself "
               "(exact: they only select or move values, and quantizing a dequantized value gives it back)";
    }
    std::vector<OpKind> targets() const override { return {OpKind::QuantizeLinear}; }
    Phase phase() const override { return Phase::Recognise; }

    struct Plan : MatchPlan {
        ir::Node* op = nullptr;
        std::vector<std::pair<size_t, ir::Value*>> ints; ///< data input index -> the int8 tensor
    };

    Match matchHere(const ir::Node& q) const override {
        const ir::Node* op = q.input(0) ? q.input(0)->producer() : nullptr;
        if (!op || !passesValuesThrough(op->kind()))
            return Match::none();
        const std::string opName = std::string(op->info().name) + " '" + op->name() + "'";
        std::string why;
        auto y = quantParams(q, q.input(0)->type().rank(), why);
        if (!y)
            return Match::rejected(why);
        if (y->perAxis)
            return Match::rejected("QuantizeLinear '" + q.name() + "' has one scale per channel");
        for (size_t o = 1; o < op->numOutputs(); ++o)
            if (!op->output(o)->users().empty() || op->output(o)->isGraphOutput())
                return Match::rejected(opName + " has a second output in use");
        if (useCount(op->output(0)) != 1)
            return Match::rejected(usersReason(opName, op->output(0)));
        auto plan = std::make_unique<Plan>();
        plan->op = const_cast<ir::Node*>(op);
        const size_t data = op->kind() == OpKind::Concat ? op->numInputs() : 1;
        for (size_t i = 0; i < data; ++i) {
            const ir::Node* dq = dequantizer(op->input(i));
            if (!dq)
                return Match::none(); // a float input: nothing quantized passes through
            auto x = quantParams(*dq, dq->input(0)->type().rank(), why);
            if (!x)
                return Match::rejected(why);
            if (!sameQuantization(*x, *y))
                return Match::rejected("DequantizeLinear '" + dq->name() + "' and QuantizeLinear '" + q.name() +
                                       "' differ in scale, zero point or type: the values would be requantised");
            plan->ints.emplace_back(i, dq->input(0));
        }
        return Match::matched(std::move(plan));
    }

    Status apply(ir::Graph& g, ir::Node& q, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        std::vector<ir::Value*> inputs(p.op->inputs().begin(), p.op->inputs().end());
        for (const auto& [i, v] : p.ints)
            inputs[i] = v;
        SX_ASSIGN(ir::Node * moved, replaceChain(g, {p.op, &q}, p.op->kind(), std::move(inputs), p.op->attrs(),
                                                 rc.createdBy()));
        (void)moved;
        return {};
    }
};

// ---- sink-dequantize-maxpool

/// MaxPool(DequantizeLinear(q)) = DequantizeLinear(MaxPool(q)): dequantizing is increasing (one
/// positive scale per tensor, or per channel, which a pooling window never mixes), so the
/// maximum of the dequantized window is the dequantized maximum, and MaxPool pads with -inf on
/// either side. The pooling then reads and writes int8 (a quarter of the f32 bytes, at the
/// vector unit's int8 rate) and dequantizes only its smaller result.
class SinkDequantizeMaxPool : public FusionRule {
public:
    std::string id() const override { return "sink-dequantize-maxpool"; }
    std::string summary() const override {
        return "run a MaxPool of dequantized values on the int8 tensor and dequantize its result instead "
               "(exact: dequantizing with a positive scale keeps the order of values)";
    }
    std::vector<OpKind> targets() const override { return {OpKind::MaxPool}; }
    Phase phase() const override { return Phase::Recognise; }

    Match matchHere(const ir::Node& pool) const override {
        const ir::Node* dq = dequantizer(pool.input(0));
        if (!dq)
            return Match::none();
        std::string why;
        const ir::TensorType& xt = dq->input(0)->type();
        auto x = quantParams(*dq, xt.rank(), why);
        if (!x)
            return Match::rejected(why);
        if (x->perAxis && x->axis != 1)
            return Match::rejected("DequantizeLinear '" + dq->name() + "' has one scale per entry of axis " +
                                   std::to_string(x->axis) + ", which a pooling window mixes");
        if (useCount(pool.input(0)) != 1 || pool.input(0)->isGraphOutput())
            return Match::rejected(usersReason("DequantizeLinear '" + dq->name() + "'", pool.input(0)));
        for (size_t o = 1; o < pool.numOutputs(); ++o)
            if (!pool.output(o)->users().empty() || pool.output(o)->isGraphOutput())
                return Match::rejected("MaxPool '" + pool.name() + "' has its Indices output in use");
        if (!pool.output(0)->type().isStatic())
            return Match::rejected("MaxPool '" + pool.name() + "' output shape is not known");
        return Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& pool, const Match&, RewriteContext& rc) const override {
        ir::Node* dq = pool.input(0)->producer();
        ir::Value* y = pool.output(0);
        const std::string poolName = pool.name(), dqName = dq->name(), yName = y->name();
        const ir::TensorType yType = y->type();
        std::vector<ir::Value*> params(dq->inputs().begin() + 1, dq->inputs().end());
        SX_ASSIGN(ir::Node * intPool, g.addNode(OpKind::MaxPool, g.uniqueName(poolName + ".int8"), {dq->input(0)},
                                                {g.uniqueName(yName + "_int8")}, pool.attrs(), &pool));
        ir::TensorType intType = yType;
        intType.dtype = dq->input(0)->type().dtype;
        intPool->output(0)->setType(intType);
        intPool->mutableProvenance() = {pool.provenance().origins, rc.createdBy()};
        params.insert(params.begin(), intPool->output(0));
        SX_ASSIGN(ir::Node * after, g.addNode(OpKind::DequantizeLinear, g.uniqueName(dqName + ".sunk"), params,
                                              {g.uniqueName(yName + ".sunk")}, dq->attrs(), &pool));
        after->output(0)->setType(yType);
        after->mutableProvenance() = {dq->provenance().origins, rc.createdBy()};
        g.replaceAllUsesWith(y, after->output(0));
        SX_TRY(g.eraseNode(&pool));
        SX_TRY(g.eraseNode(dq));
        SX_TRY(g.renameNode(intPool, poolName));
        SX_TRY(g.renameNode(after, dqName));
        SX_TRY(g.renameValue(after->output(0), yName));
        return {};
    }
};

// ---- fold-weight-dequantize

/// The DequantizeLinear of a constant that input `i` of `conv` reads, or nullptr.
const ir::Node* constantDequantizer(const ir::Node& conv, size_t i) {
    const ir::Node* dq = i < conv.numInputs() ? dequantizer(conv.input(i)) : nullptr;
    if (!dq)
        return nullptr;
    for (const ir::Value* v : dq->inputs())
        if (v && !v->isConstant())
            return nullptr;
    return dq;
}

/// fold-constants leaves the int8 weights of a Conv, MatMul or Gemm that looks like the QDQ
/// pattern for fuse-qdq-conv or fuse-qdq-matmul; where that rule cannot take it (it said why),
/// they become float weights here, before the float fusions look at the product, as
/// fold-constants would have made them.
class FoldWeightDequantize : public FusionRule {
public:
    std::string id() const override { return "fold-weight-dequantize"; }
    std::string summary() const override {
        return "fold the DequantizeLinear of a Conv's, MatMul's or Gemm's int8 weight or int32 bias into a float "
               "constant where fuse-qdq-conv or fuse-qdq-matmul does not make the product int8 (its rejection "
               "says why)";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Conv, OpKind::MatMul, OpKind::Gemm}; }
    Phase phase() const override { return Phase::Recognise; }

    Match matchHere(const ir::Node& conv) const override {
        if (!constantDequantizer(conv, 1) && !constantDequantizer(conv, 2))
            return Match::none();
        QdqPlan p;
        if (planQdqProduct(conv, p).kind == Match::Kind::Matched)
            return Match::none(); // fuse-qdq-conv takes it (or was held back by a bisection)
        return Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& conv, const Match&, RewriteContext& rc) const override {
        for (size_t i : {size_t{1}, size_t{2}}) {
            const ir::Node* dq = constantDequantizer(conv, i);
            if (!dq)
                continue;
            std::vector<ir::Tensor> ins;
            for (const ir::Value* v : dq->inputs())
                ins.push_back(v ? *v->constant() : ir::Tensor());
            ir::KernelContext ctx;
            ctx.compute = ir::DType::F32;
            SX_ASSIGN(std::vector<ir::Tensor> out, ir::evaluateNode(*dq, ins, ctx));
            SX_ASSIGN(ir::Value * c, addDerivedConstant(g, dq->output(0)->name() + "__folded", std::move(out.at(0))));
            rc.noteConstant(c->name(), {dq});
            g.setInput(&conv, i, c);
        }
        return {};
    }
};

} // namespace

bool keptForInt8(const ir::Node& dq, bool convs, bool products) {
    if (dq.kind() != OpKind::DequantizeLinear || !dq.input(0) || !constantOf(dq.input(0)) ||
        dq.output(0)->users().empty() || dq.output(0)->isGraphOutput())
        return false;
    // A product reading dequantized data: fuse-qdq-conv or fuse-qdq-matmul decides (and
    // fold-weight-dequantize folds what it rejects, with the reason on record).
    for (const ir::Node* u : dq.output(0)->users()) {
        const bool wanted = u->kind() == OpKind::Conv ? convs
                            : u->kind() == OpKind::MatMul || u->kind() == OpKind::Gemm ? products
                                                                                         : false;
        if (!wanted || u->numInputs() < 2 || u->input(0) == dq.output(0) || !dequantizer(u->input(0)))
            return false;
    }
    return true;
}

std::vector<std::unique_ptr<FusionRule>> quantRules() {
    std::vector<std::unique_ptr<FusionRule>> rules;
    rules.push_back(std::make_unique<FuseQdqProduct>(
        kFuseQdqConvRule,
        "make DequantizeLinear -> Conv [-> Relu | Clip] -> QuantizeLinear one sextant.Int8Conv: int8 data and "
        "weights (stored as int8) on the cube, int32 accumulation and bias, requantised to the QuantizeLinear's "
        "scale in the epilogue, as onnxruntime's QLinearConv computes it",
        std::vector<OpKind>{OpKind::Conv}, OpKind::Int8Conv));
    rules.push_back(std::make_unique<FuseQdqProduct>(
        kFuseQdqMatMulRule,
        "make DequantizeLinear -> MatMul or Gemm (2-D constant weight) [-> Relu | Clip] -> QuantizeLinear one "
        "sextant.Int8Gemm: int8 data and weights (stored as int8, [K, N]) on the cube, int32 accumulation and "
        "bias, requantised to the QuantizeLinear's scale in the epilogue, as onnxruntime's QLinearMatMul "
        "computes it",
        std::vector<OpKind>{OpKind::MatMul, OpKind::Gemm}, OpKind::Int8Gemm));
    rules.push_back(std::make_unique<FoldWeightDequantize>());
    rules.push_back(std::make_unique<CancelDqQ>());
    rules.push_back(std::make_unique<QuantizedPassthrough>());
    rules.push_back(std::make_unique<SinkDequantizeMaxPool>());
    return rules;
}

} // namespace sextant::passes::fuse
