// Convolution fusions: BatchNormalization and per-channel scale folding, bias + activation into
// sextant.FusedConv, zero Pad folded into the Conv's pads, and the accuracy-trading f16 BN fold.
#include "FuseUtil.h"
#include "PassManager.h"

#include "core/ir/Half.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

namespace sextant::passes::fuse {

namespace {

using ir::OpKind;

/// Why the optional bias of `conv` cannot be folded (empty when absent or a constant of
/// `channels` elements).
std::string convBiasReason(const ir::Node& conv, int64_t channels) {
    const ir::Value* b = conv.input(2);
    if (!b)
        return {};
    const ir::Tensor* t = constantOf(b);
    if (!t)
        return "conv bias '" + b->name() + "' is not a constant";
    if (t->numel() != channels)
        return "conv bias '" + b->name() + "' has " + std::to_string(t->numel()) +
               " elements for " + std::to_string(channels) + " output channels";
    return {};
}

/// A copy of weight `w` (output channels first) with every element x of output channel c
/// replaced by f(x, c), computed in double and stored in w's dtype as Tensor::set stores it.
/// f32 weights take a loop without a call and a dtype switch per element: on a real model the
/// weights are megabytes, and the element-wise at()/set() made these folds most of the fuse
/// pass's time.
template <typename F> ir::Tensor mapPerOutputChannel(const ir::Tensor& w, F f) {
    const int64_t m = w.shape()[0];
    const int64_t perChannel = m ? w.numel() / m : 0;
    ir::Tensor out = ir::Tensor::uninitialized(w.dtype(), w.shape()); // every element is set
    if (w.dtype() == ir::DType::F32) {
        const float* src = w.data<float>();
        float* dst = out.mutableData<float>();
        for (int64_t c = 0; c < m; ++c)
            for (int64_t i = c * perChannel; i < (c + 1) * perChannel; ++i)
                dst[i] = static_cast<float>(f(static_cast<double>(src[i]), c));
        return out;
    }
    for (int64_t i = 0; i < w.numel(); ++i)
        out.set(i, f(w.at(i), i / perChannel));
    return out;
}

/// Why constant `what` of shape `bias` cannot act per channel on an NC... conv output `outDims`
/// (empty if it can): right-aligned, every dim but the channel dim must be 1.
std::string perChannelReason(const std::string& what, const std::vector<int64_t>& bias,
                             const std::vector<int64_t>& outDims) {
    const size_t r = outDims.size();
    bool ok = r >= 2 && bias.size() <= r;
    for (size_t j = 0; ok && j < r; ++j) {
        size_t lead = r - bias.size();
        int64_t bj = j >= lead ? bias[j - lead] : 1;
        ok = j == 1 ? (bj == 1 || bj == outDims[1]) : bj == 1;
    }
    if (ok)
        return {};
    return what + " of shape " + shapeStr(bias) + " is not per-channel for conv output " +
           shapeStr(outDims);
}

/// Whether FusedConv `n` adds a residual (input 3) before its activation.
bool hasResidual(const ir::Node& n) { return n.numInputs() > 3 && n.input(3); }

/// A Conv, or a FusedConv that has no activation and no residual yet (so it can still take a
/// bias and one).
bool isOpenConv(const ir::Node& n) {
    if (n.kind() == OpKind::Conv)
        return true;
    return n.kind() == OpKind::FusedConv && n.attrString("activation", "").empty() && !hasResidual(n) &&
           !n.attr("post_affine") && !ir::hasInputPrologue(n);
}

// ---- fuse-conv-bn, fuse-conv-bn-f16

/// Folds an inference BatchNormalization into the Conv feeding it:
/// W'[m] = W[m] * s[m], b'[m] = (b[m] - mean[m]) * s[m] + beta[m], s = gamma / sqrt(var + eps).
/// The f16 variant rounds the folded weights and bias to f16 (what a cube unit storing f16
/// weights would get if the fold happened after the cast): faster to load, less accurate.
class FuseConvBn : public FusionRule {
public:
    explicit FuseConvBn(bool f16) : m_f16(f16) {}
    std::string id() const override { return m_f16 ? "fuse-conv-bn-f16" : "fuse-conv-bn"; }
    std::string summary() const override {
        return m_f16 ? "O3, trades accuracy: fold BatchNormalization into the Conv with the folded "
                       "weights and bias rounded to f16"
                     : "fold an inference BatchNormalization into the preceding Conv's weights "
                       "and bias";
    }
    bool tradesAccuracy() const override { return m_f16; }
    std::vector<OpKind> targets() const override { return {OpKind::Conv}; }

    Match matchHere(const ir::Node& conv) const override {
        ir::Node* bn = nullptr;
        if (!hasInputs(conv, 2))
            return Match::none();
        Match m = soleUserOfKind(conv.output(0), {OpKind::BatchNormalization}, "conv", bn);
        if (m.kind != Match::Kind::Matched)
            return m;
        if (bn->input(0) != conv.output(0))
            return Match::none();
        const ir::Tensor* w = constantOf(conv.input(1));
        if (!w)
            return Match::rejected("conv weight '" + conv.input(1)->name() + "' is not a constant");
        if (!ir::isFloat(w->dtype()) || w->rank() < 3)
            return Match::rejected("conv weight '" + conv.input(1)->name() +
                                   "' is not a float tensor of rank >= 3");
        const int64_t m0 = w->shape()[0];
        if (std::string why = convBiasReason(conv, m0); !why.empty())
            return Match::rejected(why);
        if (std::string why = bnFoldReason(*bn, m0); !why.empty())
            return Match::rejected(why);
        return matchedWith(bn);
    }

    Status apply(ir::Graph& g, ir::Node& conv, const Match& match, RewriteContext& rc) const override {
        ir::Node* bn = match.planAs<PairPlan>().other;
        const ir::Tensor& w = *constantOf(conv.input(1));
        const ir::Tensor* b = constantOf(conv.input(2));
        const ir::Tensor& gamma = *constantOf(bn->input(1));
        const ir::Tensor& beta = *constantOf(bn->input(2));
        const ir::Tensor& mean = *constantOf(bn->input(3));
        const ir::Tensor& var = *constantOf(bn->input(4));
        const double eps = bn->attrFloat("epsilon", 1e-5);
        const int64_t m = w.shape()[0];
        auto round = [&](double v) {
            return m_f16 ? static_cast<double>(ir::roundToHalf(static_cast<float>(v))) : v;
        };

        std::vector<double> scale(static_cast<size_t>(m));
        for (int64_t c = 0; c < m; ++c)
            scale[c] = gamma.at(c) / std::sqrt(var.at(c) + eps);
        ir::Tensor w2 = mapPerOutputChannel(w, [&](double x, int64_t c) { return round(x * scale[c]); });
        ir::Tensor b2(b ? b->dtype() : w.dtype(), {m});
        for (int64_t c = 0; c < m; ++c)
            b2.set(c, round(((b ? b->at(c) : 0.0) - mean.at(c)) * scale[c] + beta.at(c)));

        SX_ASSIGN(ir::Value * wv, addDerivedConstant(g, conv.name() + "_bn_w", std::move(w2)));
        SX_ASSIGN(ir::Value * bv, addDerivedConstant(g, conv.name() + "_bn_b", std::move(b2)));
        rc.noteConstant(wv->name(), {&conv, bn});
        rc.noteConstant(bv->name(), {&conv, bn});
        SX_ASSIGN(ir::Node * fused,
                  replaceChain(g, {&conv, bn}, OpKind::Conv, {conv.input(0), wv, bv}, conv.attrs(),
                               rc.createdBy()));
        (void)fused;
        return {};
    }

private:
    bool m_f16;
};

// ---- fuse-conv-scale

/// Folds a per-channel constant scale into the Conv feeding it: Conv(x, W, b) * s ==
/// Conv(x, W * s, b * s). Together with fuse-conv-bias-act this absorbs the BatchNormalization
/// + Mul + Add (scale/shift) chains that some exporters emit.
class FuseConvScale : public FusionRule {
public:
    std::string id() const override { return "fuse-conv-scale"; }
    std::string summary() const override {
        return "fold a following Mul by a per-channel constant into the Conv's weights and bias";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Conv}; }

    Match matchHere(const ir::Node& conv) const override {
        const ir::Value* out = conv.output(0);
        ir::Node* mul = nullptr;
        if (!hasInputs(conv, 2))
            return Match::none();
        Match m = soleUserOfKind(out, {OpKind::Mul}, "conv", mul);
        if (m.kind != Match::Kind::Matched)
            return m;
        const ir::Value* other = otherOperand(*mul, out);
        if (!other)
            return Match::none();
        const ir::Tensor* s = constantOf(other);
        if (!s)
            return Match::rejected("mul operand '" + other->name() + "' is not a constant");
        if (!out->type().isStatic())
            return Match::rejected("conv output shape is not known");
        std::string why = perChannelReason("mul scale", s->shape(), out->type().dims());
        if (!why.empty())
            return Match::rejected(why);
        if (s->dtype() != out->type().dtype)
            return Match::rejected("mul scale '" + other->name() +
                                   "' has another dtype than the conv");
        const ir::Tensor* w = constantOf(conv.input(1));
        if (!w)
            return Match::rejected("conv weight '" + conv.input(1)->name() + "' is not a constant");
        if (w->rank() < 3 || w->shape()[0] != out->type().dims()[1])
            return Match::rejected("conv weight '" + conv.input(1)->name() +
                                   "' has an unexpected shape");
        if (std::string why2 = convBiasReason(conv, w->shape()[0]); !why2.empty())
            return Match::rejected(why2);
        return matchedWith(mul);
    }

    Status apply(ir::Graph& g, ir::Node& conv, const Match& match, RewriteContext& rc) const override {
        ir::Node* mul = match.planAs<PairPlan>().other;
        const ir::Tensor& s = *constantOf(otherOperand(*mul, conv.output(0)));
        const ir::Tensor& w = *constantOf(conv.input(1));
        const ir::Tensor* b = constantOf(conv.input(2));
        std::vector<double> factor(static_cast<size_t>(w.shape()[0]));
        for (size_t c = 0; c < factor.size(); ++c)
            factor[c] = s.at(s.numel() == 1 ? 0 : static_cast<int64_t>(c));
        auto scale = [&](int64_t c) { return factor[static_cast<size_t>(c)]; };
        ir::Tensor w2 = mapPerOutputChannel(w, [&](double x, int64_t c) { return x * scale(c); });
        std::vector<ir::Value*> inputs{conv.input(0)};
        SX_ASSIGN(ir::Value * wv, addDerivedConstant(g, conv.name() + "_scaled_w", std::move(w2)));
        rc.noteConstant(wv->name(), {&conv, mul});
        inputs.push_back(wv);
        if (b) {
            ir::Tensor b2(b->dtype(), b->shape());
            for (int64_t c = 0; c < b->numel(); ++c)
                b2.set(c, b->at(c) * scale(c));
            SX_ASSIGN(ir::Value * bv,
                      addDerivedConstant(g, conv.name() + "_scaled_b", std::move(b2)));
            rc.noteConstant(bv->name(), {&conv, mul});
            inputs.push_back(bv);
        }
        SX_ASSIGN(ir::Node * fused, replaceChain(g, {&conv, mul}, OpKind::Conv, std::move(inputs),
                                                 conv.attrs(), rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-conv-bias-act

/// Conv (or a FusedConv without activation) [+ Add(per-channel constant)] [+ activation] ->
/// sextant.FusedConv. Activations: Relu, LeakyRelu, Clip (Relu6 and any constant bounds),
/// Sigmoid, HardSigmoid, HardSwish.
class FuseConvBiasAct : public FusionRule {
public:
    std::string id() const override { return "fuse-conv-bias-act"; }
    std::string summary() const override {
        return "fuse Conv with a following per-channel constant bias Add and/or activation (Relu, "
               "LeakyRelu, Clip/Relu6, Sigmoid, HardSigmoid, HardSwish) into sextant.FusedConv";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Conv, OpKind::FusedConv}; }

    using Plan = BiasActPlan;

    /// The chain to fuse, or the reason it cannot be (Rejected), or NoMatch.
    static Match plan(const ir::Node& conv, Plan& p) {
        const ir::Value* out = conv.output(0);
        if (!hasInputs(conv, 2) || !isOpenConv(conv))
            return Match::none();
        std::vector<OpKind> kinds{OpKind::Add};
        kinds.insert(kinds.end(), activationKinds().begin(), activationKinds().end());
        ir::Node* u = nullptr;
        for (ir::Node* cand : out->users())
            if (std::find(kinds.begin(), kinds.end(), cand->kind()) != kinds.end()) {
                u = cand;
                break;
            }
        if (!u)
            return Match::none();
        if (useCount(out) != 1)
            return Match::rejected(usersReason("conv", out));
        if (u->kind() == OpKind::Add) {
            ir::Value* other = otherOperand(*u, out);
            if (!other)
                return Match::none();
            const ir::Tensor* c = constantOf(other);
            if (!c)
                return Match::rejected("add operand '" + other->name() + "' is not a constant");
            if (!out->type().isStatic())
                return Match::rejected("conv output shape is not known");
            std::string why = perChannelReason("add bias", c->shape(), out->type().dims());
            if (!why.empty())
                return Match::rejected(why);
            if (c->dtype() != out->type().dtype)
                return Match::rejected("add bias '" + other->name() + "' is " +
                                       std::string(ir::dtypeName(c->dtype())) +
                                       " but the conv output is " +
                                       std::string(ir::dtypeName(out->type().dtype)));
            if (std::string why2 = convBiasReason(conv, out->type().dims()[1]); !why2.empty())
                return Match::rejected(why2);
            p.add = u;
            p.bias = other;
            planActivationAfterAdd(p);
            return Match::matched();
        }
        return planActivation(*u, p);
    }

    Match matchHere(const ir::Node& conv) const override {
        return matchWithPlan<Plan>(conv, plan);
    }

    Status apply(ir::Graph& g, ir::Node& conv, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        std::vector<ir::Node*> chain{&conv};
        std::vector<ir::Value*> inputs{conv.input(0), conv.input(1)};
        if (p.add) {
            chain.push_back(p.add);
            const ir::TensorType& outType = conv.output(0)->type();
            const int64_t channels = outType.dims()[1];
            const ir::Tensor& add = *constantOf(p.bias);
            const ir::Tensor* own = constantOf(conv.input(2));
            ir::Tensor bias(outType.dtype, {channels});
            for (int64_t c = 0; c < channels; ++c)
                bias.set(c, (own ? own->at(c) : 0.0) + add.at(add.numel() == 1 ? 0 : c));
            SX_ASSIGN(ir::Value * bv,
                      addDerivedConstant(g, conv.name() + "_bias", std::move(bias)));
            rc.noteConstant(bv->name(), {&conv, p.add});
            inputs.push_back(bv);
        } else if (conv.input(2)) {
            inputs.push_back(conv.input(2));
        }
        ir::AttributeMap attrs = conv.attrs();
        if (p.act) {
            chain.push_back(p.act);
            setActivation(attrs, p.spec);
        } else {
            attrs["activation"] = std::string();
        }
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::FusedConv, std::move(inputs),
                                                 std::move(attrs), rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-conv-residual

/// Conv (or a FusedConv with only a bias) + Add (or two-input Sum) of a computed tensor of the
/// conv output's own type [+ activation] -> sextant.FusedConv with the tensor as input 3, added in the epilogue
/// before the activation: y = act(conv(x, W) + b + r). The residual blocks of ResNet, BlazeFace
/// and MobileNet v2 end this way; alone, the Add (and its Relu) is a vector Task that reads two
/// feature maps and writes a third.
class FuseConvResidual : public FusionRule {
public:
    std::string id() const override { return "fuse-conv-residual"; }
    std::string summary() const override {
        return "fuse Conv with a following Add (or Sum of two) of a computed tensor of its shape (a residual) and an "
               "activation after it into sextant.FusedConv (input 3, added before the activation)";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Conv, OpKind::FusedConv}; }

    struct Plan : MatchPlan {
        ir::Node* add = nullptr;
        ir::Value* residual = nullptr;
        ir::Node* act = nullptr;
        ActivationSpec spec;
    };

    static Match plan(const ir::Node& conv, Plan& p) {
        if (!hasInputs(conv, 2) || !isOpenConv(conv))
            return Match::none();
        const ir::Value* out = conv.output(0);
        ir::Node* add = nullptr;
        // Add, or a Sum of two (what Caffe2 exporters write for ResNet's shortcut).
        Match m = soleUserOfKind(out, {OpKind::Add, OpKind::Sum}, "conv", add);
        if (m.kind != Match::Kind::Matched)
            return m;
        if (add->kind() == OpKind::Sum && add->numInputs() != 2)
            return Match::rejected("sum '" + add->name() + "' has " + std::to_string(add->numInputs()) + " inputs, not 2");
        ir::Value* r = otherOperand(*add, out);
        if (!r || r->isConstant())
            return Match::none(); // x + x, or a bias (fuse-conv-bias-act's)
        if (r->type() != out->type() || add->output(0)->type() != out->type())
            return Match::rejected("residual '" + r->name() + "' does not have the conv output's type (a broadcast)");
        if (conv.input(2) && !constantOf(conv.input(2)))
            return Match::rejected("conv bias '" + conv.input(2)->name() + "' is not a constant");
        p.add = add;
        p.residual = r;
        if (ir::Node* next = singleUser(add->output(0)); next && useCount(add->output(0)) == 1) {
            std::string ignored;
            if (auto spec = activationOf(*next, ignored)) {
                p.act = next;
                p.spec = *spec;
            }
        }
        return Match::matched();
    }

    Match matchHere(const ir::Node& conv) const override { return matchWithPlan<Plan>(conv, plan); }

    Status apply(ir::Graph& g, ir::Node& conv, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        std::vector<ir::Node*> chain{&conv, p.add};
        std::vector<ir::Value*> inputs{conv.input(0), conv.input(1)};
        if (conv.input(2)) {
            inputs.push_back(conv.input(2));
        } else {
            // The residual is input 3, so a conv without a bias gets zeros.
            const ir::TensorType& outType = conv.output(0)->type();
            ir::Tensor zeros(outType.dtype, {outType.dims()[1]});
            SX_ASSIGN(ir::Value * bv, addDerivedConstant(g, conv.name() + "_bias", std::move(zeros)));
            rc.noteConstant(bv->name(), {&conv});
            inputs.push_back(bv);
        }
        inputs.push_back(p.residual);
        ir::AttributeMap attrs = conv.attrs();
        if (p.act) {
            chain.push_back(p.act);
            setActivation(attrs, p.spec);
        } else {
            attrs["activation"] = std::string();
        }
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::FusedConv, std::move(inputs), std::move(attrs),
                                                 rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-conv-post-affine

/// A scalar constant operand of binary `op` (the one that is not `v`), as a double, when `op`
/// computes in `v`'s type (the constant neither widens nor casts it); else the reason.
std::optional<double> scalarOperand(const ir::Node& op, const ir::Value* v, std::string& why) {
    const ir::Value* other = otherOperand(op, v);
    if (!other) {
        why = "both operands are the conv output";
        return std::nullopt;
    }
    const ir::Tensor* c = constantOf(other);
    if (!c || c->numel() != 1) {
        why = ir::qualifiedOpName(op.kind()) + " operand '" + other->name() + "' is not a scalar constant";
        return std::nullopt;
    }
    if (c->dtype() != v->type().dtype || op.output(0)->type() != v->type()) {
        why = ir::qualifiedOpName(op.kind()) + " by '" + other->name() + "' changes the conv output's type";
        return std::nullopt;
    }
    return c->at(0);
}

/// FusedConv with an activation, then Mul by a scalar constant and/or Add of one: the affine
/// becomes the kernel's "post_affine" [scale, shift], applied after the activation in the same
/// epilogue. PP-LCNet (PaddleOCR's backbones) puts such a learnable scale and shift after every
/// activation; alone each is a vector Task that reads and writes the whole feature map.
class FuseConvPostAffine : public FusionRule {
public:
    std::string id() const override { return "fuse-conv-post-affine"; }
    std::string summary() const override {
        return "fuse a scalar constant Mul and/or Add after a FusedConv's activation into its epilogue "
               "(attribute post_affine)";
    }
    std::vector<OpKind> targets() const override { return {OpKind::FusedConv}; }

    struct Plan : MatchPlan {
        ir::Node* mul = nullptr;
        ir::Node* add = nullptr;
        double scale = 1.0, shift = 0.0;
    };

    static Match plan(const ir::Node& conv, Plan& p) {
        if (conv.attrString("activation", "").empty() || conv.attr("post_affine"))
            return Match::none();
        const ir::Value* out = conv.output(0);
        ir::Node* u = nullptr;
        Match m = soleUserOfKind(out, {OpKind::Mul, OpKind::Add}, "fused conv", u);
        if (m.kind != Match::Kind::Matched)
            return m;
        std::string why;
        std::optional<double> c = scalarOperand(*u, out, why);
        if (!c)
            return Match::rejected(why);
        if (u->kind() == OpKind::Add) {
            p.add = u;
            p.shift = *c;
            return Match::matched();
        }
        p.mul = u;
        p.scale = *c;
        // An Add of a scalar right after the Mul is the shift.
        const ir::Value* scaled = u->output(0);
        if (ir::Node* next = singleUser(scaled); next && next->kind() == OpKind::Add && useCount(scaled) == 1) {
            std::string ignored;
            if (std::optional<double> b = scalarOperand(*next, scaled, ignored)) {
                p.add = next;
                p.shift = *b;
            }
        }
        return Match::matched();
    }

    Match matchHere(const ir::Node& conv) const override { return matchWithPlan<Plan>(conv, plan); }

    Status apply(ir::Graph& g, ir::Node& conv, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        std::vector<ir::Node*> chain{&conv};
        if (p.mul)
            chain.push_back(p.mul);
        if (p.add)
            chain.push_back(p.add);
        std::vector<ir::Value*> inputs(conv.inputs().begin(), conv.inputs().end());
        ir::AttributeMap attrs = conv.attrs();
        attrs["post_affine"] = std::vector<double>{p.scale, p.shift};
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::FusedConv, std::move(inputs), std::move(attrs),
                                                 rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-conv-prologue

/// sextant.ElementwiseGroup [Mul(x, scale), Add(., shift) (, Relu)] with a scale and a shift per
/// channel of x (what fuse-batchnorm-chain makes of a BatchNormalization + Relu), read only as
/// the data of convolutions -> each convolution applies it to its input as it loads it (FusedConv
/// inputs 4 and 5, attribute prologue_activation; ir::hasInputPrologue). Pre-activation networks
/// (DenseNet, ResNet v2) put a BatchNormalization + Relu before nearly every convolution; as a
/// group it is a vector Task of its own that reads the map and writes it again, and its
/// convolution waits for all of it.
class FuseConvPrologue : public FusionRule {
public:
    std::string id() const override { return "fuse-conv-prologue"; }
    std::string summary() const override {
        return "apply a per-channel scale and shift [+ Relu] (a BatchNormalization + Relu no Conv absorbed) "
               "as the input prologue of the convolutions it feeds";
    }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override { return {OpKind::ElementwiseGroup}; }

    struct Plan : MatchPlan {
        ir::Value* data = nullptr;
        ir::Value* scale = nullptr;
        ir::Value* shift = nullptr;
        bool relu = false;
        std::vector<ir::Node*> convs;
    };

    /// The group's operand `o` when it names a group input.
    static ir::Value* inputOf(const ir::Node& g, const ir::BodyOperand& o) {
        return o.kind == ir::BodyOperand::Kind::Input && o.index < g.numInputs() ? g.input(o.index) : nullptr;
    }

    /// Whether constant `v` holds one value per channel of `data` (dim 1) in data's dtype,
    /// broadcast as numpy does ([C, 1, 1] or [1, C, 1, 1] against NCHW).
    static bool perInputChannel(const ir::Value* v, const ir::TensorType& data) {
        const ir::Tensor* k = constantOf(v);
        if (!k || k->dtype() != data.dtype || !data.isStatic() || data.rank() < 2)
            return false;
        const std::vector<int64_t> xd = data.dims();
        return k->numel() == xd[1] && perChannelReason("", k->shape(), xd).empty();
    }

    static Match plan(const ir::Node& g, Plan& p) {
        const ir::FusedBody* body = g.body();
        if (!body || g.numOutputs() != 1 || (body->steps.size() != 2 && body->steps.size() != 3))
            return Match::none();
        const ir::BodyStep &mul = body->steps[0], &add = body->steps[1];
        if (mul.op != OpKind::Mul || add.op != OpKind::Add || mul.operands.size() != 2 || add.operands.size() != 2 ||
            !mul.attrs.empty() || !add.attrs.empty())
            return Match::none();
        if (body->steps.size() == 3) {
            const ir::BodyStep& act = body->steps[2];
            if (act.op != OpKind::Relu || act.operands.size() != 1 || act.operands[0] != ir::BodyOperand::step(1) ||
                !act.attrs.empty())
                return Match::none();
            p.relu = true;
        }
        // Mul(x, scale) in either order; Add(that, shift) in either order.
        ir::Value* a = inputOf(g, mul.operands[0]);
        ir::Value* b = inputOf(g, mul.operands[1]);
        if (!a || !b)
            return Match::none();
        p.data = a->isConstant() ? b : a;
        p.scale = a->isConstant() ? a : b;
        const bool addFirst = add.operands[0] == ir::BodyOperand::step(0);
        if (!addFirst && add.operands[1] != ir::BodyOperand::step(0))
            return Match::none();
        p.shift = inputOf(g, add.operands[addFirst ? 1 : 0]);
        if (!p.shift || p.data->isConstant())
            return Match::none();
        const ir::TensorType& x = p.data->type();
        if (!ir::isFloat(x.dtype) || g.output(0)->type() != x)
            return Match::none();
        if (!perInputChannel(p.scale, x) || !perInputChannel(p.shift, x))
            return Match::rejected("scale or shift of '" + g.name() + "' is not one constant per channel of '" +
                                   p.data->name() + "'");
        const ir::Value* out = g.output(0);
        if (out->isGraphOutput())
            return Match::rejected("'" + out->name() + "' is a graph output");
        for (ir::Node* u : out->users()) {
            const bool conv = u->kind() == OpKind::Conv || u->kind() == OpKind::FusedConv;
            if (!conv)
                return Match::rejected("'" + out->name() + "' is read by " + ir::qualifiedOpName(u->kind()) + " '" +
                                       u->name() + "', not only by convolutions");
            for (size_t i = 1; i < u->numInputs(); ++i)
                if (u->input(i) == out)
                    return Match::rejected("'" + u->name() + "' reads '" + out->name() + "' as more than its data");
            if (ir::hasInputPrologue(*u))
                return Match::rejected("'" + u->name() + "' has an input prologue already");
            // Pointwise convolutions only. Measured on inception v2, whose BatchNormalization +
            // Relu groups feed 3x3 convolutions: with the prologue its fastest program ran 2.2 %
            // slower (its candidate programs changed by -1.4 % to +4.1 %), where DenseNet-121, whose
            // groups feed 1x1 convolutions, ran 11.6 % faster.
            const ir::Value* w = u->input(1);
            const std::vector<int64_t> wd = w ? w->type().dims() : std::vector<int64_t>{};
            if (wd.size() < 3 || std::any_of(wd.begin() + 2, wd.end(), [](int64_t d) { return d != 1; }))
                return Match::rejected("'" + u->name() + "' is not a 1x1 convolution");
            if (std::find(p.convs.begin(), p.convs.end(), u) == p.convs.end())
                p.convs.push_back(u);
        }
        return p.convs.empty() ? Match::none() : Match::matched();
    }

    Match matchHere(const ir::Node& g) const override { return matchWithPlan<Plan>(g, plan); }

    Status apply(ir::Graph& graph, ir::Node& g, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        const std::vector<std::string> groupOrigins = g.provenance().origins;
        for (ir::Node* conv : p.convs) {
            std::vector<ir::Value*> inputs(conv->inputs().begin(), conv->inputs().end());
            inputs.resize(4, nullptr);
            inputs[0] = p.data;
            inputs.push_back(p.scale);
            inputs.push_back(p.shift);
            ir::AttributeMap attrs = conv->attrs();
            if (p.relu)
                attrs["prologue_activation"] = std::string("Relu");
            std::vector<std::string> origins = conv->provenance().origins;
            SX_ASSIGN(ir::Node * fused, replaceChain(graph, {conv}, OpKind::FusedConv, std::move(inputs),
                                                     std::move(attrs), rc.createdBy()));
            origins.insert(origins.end(), groupOrigins.begin(), groupOrigins.end());
            std::sort(origins.begin(), origins.end());
            origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
            fused->mutableProvenance().origins = std::move(origins);
        }
        return graph.eraseNode(&g);
    }
};

// ---- fuse-convtranspose-bias-bn

/// ConvTranspose [+ Add(per-channel constant)] [+ inference BatchNormalization] -> the
/// ConvTranspose with folded weights and bias: y = (conv(x, W) + B + a) * s + t, with
/// s = gamma / sqrt(var + eps) and t = beta - mean * s, is conv(x, W * s) + (B + a) * s + t, where
/// W's output channel for element [ci, j, ...] is (ci / (Cin / group)) * (Cout / group) + j.
/// Exporters that write the bias as a separate Add (paddle2onnx) leave three full-size Tasks
/// after a decoder's upsampling otherwise.
class FuseConvTransposeBiasBn : public FusionRule {
public:
    std::string id() const override { return "fuse-convtranspose-bias-bn"; }
    std::string summary() const override {
        return "fold a per-channel constant Add and/or an inference BatchNormalization after a "
               "ConvTranspose into its weights and bias";
    }
    std::vector<OpKind> targets() const override { return {OpKind::ConvTranspose}; }

    struct Plan : MatchPlan {
        ir::Node* add = nullptr;
        const ir::Tensor* addend = nullptr;
        ir::Node* bn = nullptr;
    };

    static Match plan(const ir::Node& ct, Plan& p) {
        if (!hasInputs(ct, 2))
            return Match::none();
        const ir::Value* out = ct.output(0);
        ir::Node* u = nullptr;
        Match m = soleUserOfKind(out, {OpKind::Add, OpKind::BatchNormalization}, "conv transpose", u);
        if (m.kind != Match::Kind::Matched)
            return m;
        if (!out->type().isStatic() || out->type().rank() < 3)
            return Match::rejected("conv transpose output shape is not known");
        const int64_t channels = out->type().dims()[1];
        const ir::Tensor* w = constantOf(ct.input(1));
        if (!w || !ir::isFloat(w->dtype()) || w->rank() < 3)
            return Match::rejected("conv transpose weight '" + ct.input(1)->name() + "' is not a float constant");
        const int64_t group = ct.attrInt("group", 1);
        if (group < 1 || w->shape()[0] % group != 0 || w->shape()[1] * group != channels)
            return Match::rejected("conv transpose weight '" + ct.input(1)->name() + "' has an unexpected shape");
        if (std::string why = convBiasReason(ct, channels); !why.empty())
            return Match::rejected(why);
        if (u->kind() == OpKind::Add) {
            const ir::Value* other = otherOperand(*u, out);
            if (!other)
                return Match::none();
            const ir::Tensor* c = constantOf(other);
            if (!c)
                return Match::rejected("add operand '" + other->name() + "' is not a constant");
            if (std::string why = perChannelReason("add bias", c->shape(), out->type().dims()); !why.empty())
                return Match::rejected(why);
            if (c->dtype() != out->type().dtype || u->output(0)->type() != out->type())
                return Match::rejected("add bias '" + other->name() + "' changes the conv transpose output's type");
            p.add = u;
            p.addend = c;
            const ir::Value* sum = u->output(0);
            ir::Node* next = singleUser(sum);
            if (next && useCount(sum) == 1 && next->kind() == OpKind::BatchNormalization && next->input(0) == sum &&
                bnFoldReason(*next, channels).empty())
                p.bn = next;
            return Match::matched();
        }
        if (u->input(0) != out)
            return Match::none();
        if (std::string why = bnFoldReason(*u, channels); !why.empty())
            return Match::rejected(why);
        p.bn = u;
        return Match::matched();
    }

    Match matchHere(const ir::Node& ct) const override { return matchWithPlan<Plan>(ct, plan); }

    Status apply(ir::Graph& g, ir::Node& ct, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        const ir::Tensor& w = *constantOf(ct.input(1));
        const ir::Tensor* b = constantOf(ct.input(2));
        const int64_t channels = ct.output(0)->type().dims()[1];
        std::vector<double> scale(static_cast<size_t>(channels), 1.0), bias(static_cast<size_t>(channels), 0.0);
        for (int64_t c = 0; c < channels; ++c) {
            double v = b ? b->at(c) : 0.0;
            if (p.addend)
                v += p.addend->at(p.addend->numel() == 1 ? 0 : c);
            bias[static_cast<size_t>(c)] = v;
        }
        std::vector<ir::Node*> chain{&ct};
        if (p.add)
            chain.push_back(p.add);
        if (p.bn) {
            chain.push_back(p.bn);
            const ir::Tensor& gamma = *constantOf(p.bn->input(1));
            const ir::Tensor& beta = *constantOf(p.bn->input(2));
            const ir::Tensor& mean = *constantOf(p.bn->input(3));
            const ir::Tensor& var = *constantOf(p.bn->input(4));
            const double eps = p.bn->attrFloat("epsilon", 1e-5);
            for (int64_t c = 0; c < channels; ++c) {
                const size_t i = static_cast<size_t>(c);
                scale[i] = gamma.at(c) / std::sqrt(var.at(c) + eps);
                bias[i] = (bias[i] - mean.at(c)) * scale[i] + beta.at(c);
            }
        }
        std::vector<ir::Value*> inputs{ct.input(0)};
        if (p.bn) {
            // W is [Cin, Cout / group, k...]: element [ci, j, ...] feeds output channel
            // (ci / (Cin / group)) * (Cout / group) + j.
            const int64_t group = ct.attrInt("group", 1);
            const int64_t cin = w.shape()[0], perOut = w.shape()[1];
            const int64_t cinPerGroup = cin / group;
            const int64_t kernel = w.numel() / (cin * perOut);
            ir::Tensor w2 = ir::Tensor::uninitialized(w.dtype(), w.shape());
            for (int64_t ci = 0; ci < cin; ++ci)
                for (int64_t j = 0; j < perOut; ++j) {
                    const double s = scale[static_cast<size_t>((ci / cinPerGroup) * perOut + j)];
                    for (int64_t k = 0; k < kernel; ++k) {
                        const int64_t at = (ci * perOut + j) * kernel + k;
                        w2.set(at, w.at(at) * s);
                    }
                }
            SX_ASSIGN(ir::Value * wv, addDerivedConstant(g, ct.name() + "_bn_w", std::move(w2)));
            rc.noteConstant(wv->name(), std::vector<const ir::Node*>(chain.begin(), chain.end()));
            inputs.push_back(wv);
        } else {
            inputs.push_back(ct.input(1));
        }
        ir::Tensor b2(ct.output(0)->type().dtype, {channels});
        for (int64_t c = 0; c < channels; ++c)
            b2.set(c, bias[static_cast<size_t>(c)]);
        SX_ASSIGN(ir::Value * bv, addDerivedConstant(g, ct.name() + "_bias", std::move(b2)));
        rc.noteConstant(bv->name(), std::vector<const ir::Node*>(chain.begin(), chain.end()));
        inputs.push_back(bv);
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::ConvTranspose, std::move(inputs), ct.attrs(),
                                                 rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-convtranspose-act

/// ConvTranspose [with its bias] + an activation it alone feeds -> sextant.FusedConvTranspose,
/// the activation applied in the cube's epilogue. A decoder's upsampling (PaddleOCR det's head:
/// ConvTranspose, Relu, ConvTranspose, Sigmoid) otherwise leaves a full-size vector Task after
/// each ConvTranspose that reads the map back and writes it again. Offered after
/// fuse-convtranspose-bias-bn, so the bias and BatchNormalization are folded first.
class FuseConvTransposeAct : public FusionRule {
public:
    std::string id() const override { return "fuse-convtranspose-act"; }
    std::string summary() const override {
        return "fuse an activation after a ConvTranspose into sextant.FusedConvTranspose";
    }
    std::vector<OpKind> targets() const override { return {OpKind::ConvTranspose}; }

    static Match plan(const ir::Node& ct, BiasActPlan& p) {
        if (!hasInputs(ct, 2))
            return Match::none();
        const ir::Value* out = ct.output(0);
        ir::Node* u = nullptr;
        Match m = soleUserOfKind(out, activationKinds(), "conv transpose", u);
        if (m.kind != Match::Kind::Matched)
            return m;
        if (u->input(0) != out)
            return Match::none(); // Clip's bound, not its data
        if (u->output(0)->type() != out->type())
            return Match::rejected("activation '" + u->name() + "' changes the conv transpose output's type");
        if (ct.input(2) && !constantOf(ct.input(2)))
            return Match::rejected("conv transpose bias '" + ct.input(2)->name() + "' is not a constant");
        return planActivation(*u, p);
    }

    Match matchHere(const ir::Node& ct) const override { return matchWithPlan<BiasActPlan>(ct, plan); }

    Status apply(ir::Graph& g, ir::Node& ct, const Match& match, RewriteContext& rc) const override {
        const BiasActPlan& p = match.planAs<BiasActPlan>();
        std::vector<ir::Value*> inputs{ct.input(0), ct.input(1)};
        if (ct.input(2))
            inputs.push_back(ct.input(2));
        ir::AttributeMap attrs = ct.attrs();
        setActivation(attrs, p.spec);
        SX_ASSIGN(ir::Node * fused, replaceChain(g, {&ct, p.act}, OpKind::FusedConvTranspose, std::move(inputs),
                                                 std::move(attrs), rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-pad-conv

/// The pads of a Pad node, from its attribute (opset < 11) or constant input 1, or nullopt with
/// the reason.
std::optional<std::vector<int64_t>> padAmounts(const ir::Node& pad, std::string& why) {
    if (pad.numInputs() >= 2 && pad.input(1)) {
        const ir::Tensor* t = constantOf(pad.input(1));
        if (!t) {
            why = "pad amounts '" + pad.input(1)->name() + "' are not a constant";
            return std::nullopt;
        }
        std::vector<int64_t> v;
        for (int64_t i = 0; i < t->numel(); ++i)
            v.push_back(static_cast<int64_t>(t->at(i)));
        return v;
    }
    if (pad.hasAttr("pads"))
        return pad.attrInts("pads");
    why = "pad '" + pad.name() + "' has no pad amounts";
    return std::nullopt;
}

/// The amounts of `pad` (one per dim's begin, then one per dim's end) when it pads with the
/// constant 0 over all dims (no axes input); otherwise nothing, with the reason in `why`.
std::optional<std::vector<int64_t>> zeroPadAmounts(const ir::Node& pad, std::string& why) {
    if (pad.attrString("mode", "constant") != "constant") {
        why = "pad mode is '" + pad.attrString("mode", "") + "', not constant";
        return std::nullopt;
    }
    double value = pad.attrFloat("value", 0.0);
    if (pad.numInputs() >= 3 && pad.input(2)) {
        std::optional<double> c = scalarConstant(pad.input(2));
        if (!c) {
            why = "pad value '" + pad.input(2)->name() + "' is not a constant";
            return std::nullopt;
        }
        value = *c;
    }
    if (value != 0.0) {
        why = "pad value is " + std::to_string(value) + ", not 0";
        return std::nullopt;
    }
    if (pad.numInputs() >= 4 && pad.input(3)) {
        why = "pad has an axes input";
        return std::nullopt;
    }
    std::optional<std::vector<int64_t>> amounts = padAmounts(pad, why);
    const size_t rank = pad.input(0)->type().rank();
    if (amounts && amounts->size() != 2 * rank) {
        why = "pad amounts " + shapeStr(*amounts) + " do not fit rank " + std::to_string(rank);
        return std::nullopt;
    }
    return amounts;
}

/// Pad(x, constant 0) feeding only a Conv's data input -> the Conv with larger pads. Only spatial
/// dims may be padded, by non-negative amounts, and the Conv must not use auto_pad.
class FusePadConv : public FusionRule {
public:
    std::string id() const override { return "fuse-pad-conv"; }
    std::string summary() const override {
        return "fold a zero constant Pad of the spatial dims into the following Conv's pads";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Pad}; }

    Match matchHere(const ir::Node& pad) const override {
        ir::Node* conv = nullptr;
        if (!hasInputs(pad, 1))
            return Match::none();
        Match m = soleUserOfKind(pad.output(0), {OpKind::Conv, OpKind::FusedConv}, "pad", conv);
        if (m.kind != Match::Kind::Matched)
            return m;
        if (conv->input(0) != pad.output(0))
            return Match::rejected("pad output feeds conv '" + conv->name() +
                                   "' as weight or bias, not as data");
        std::string why;
        auto amounts = zeroPadAmounts(pad, why);
        if (!amounts)
            return Match::rejected(why);
        const size_t rank = pad.input(0)->type().rank();
        if (rank < 3)
            return Match::rejected("pad amounts " + shapeStr(*amounts) + " do not fit rank " +
                                   std::to_string(rank));
        for (size_t i = 0; i < amounts->size(); ++i) {
            const size_t dim = i % rank;
            if ((dim < 2 && (*amounts)[i] != 0))
                return Match::rejected("pad touches the batch or channel dim");
            if ((*amounts)[i] < 0)
                return Match::rejected("pad crops (negative amount " +
                                       std::to_string((*amounts)[i]) + ")");
        }
        const std::string autoPad = conv->attrString("auto_pad", "NOTSET");
        if (autoPad != "NOTSET" && !autoPad.empty())
            return Match::rejected("conv '" + conv->name() + "' uses auto_pad " + autoPad);
        return matchedWith(conv);
    }

    Status apply(ir::Graph& g, ir::Node& pad, const Match& match, RewriteContext& rc) const override {
        ir::Node* conv = match.planAs<PairPlan>().other;
        std::string why;
        std::vector<int64_t> amounts = *padAmounts(pad, why);
        const size_t rank = pad.input(0)->type().rank();
        const size_t spatial = rank - 2;
        std::vector<int64_t> pads = conv->attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
        if (pads.size() != 2 * spatial)
            return makeError(ErrorKind::Verify, "conv pads do not match its spatial rank",
                             conv->name());
        for (size_t i = 0; i < spatial; ++i) {
            pads[i] += amounts[2 + i];
            pads[spatial + i] += amounts[rank + 2 + i];
        }
        // The Conv takes over the Pad's input; the Pad goes, and the Conv's provenance grows.
        g.setInput(conv, 0, pad.input(0));
        conv->setAttr("pads", pads);
        conv->mutableProvenance().origins = unionOrigins({conv, &pad});
        conv->mutableProvenance().createdBy = rc.createdBy();
        SX_TRY(g.eraseNode(&pad));
        g.removeUnusedConstants();
        return {};
    }
};

// ---- fold-channel-shuffle

/// A channel shuffle with `a` groups of `b` channels: Reshape [N, C, S...] -> [N, a, b, S...],
/// Transpose perm [0, 2, 1, 3, ...], Reshape back to [N, C, S...] (ShuffleNet's, as PyTorch and
/// Caffe2 export it). Channel j * a + i of the result is channel i * b + j of the input.
struct ShufflePlan : MatchPlan {
    ir::Node* reshapeIn = nullptr;
    ir::Node* transpose = nullptr;
    ir::Node* reshapeOut = nullptr;
    int64_t groups = 1; ///< a
    int64_t perGroup = 1; ///< b
};

/// The channel the shuffle puts at `c` (of `channels`): a channel of group i, position j, goes
/// to j * a + i.
int64_t shuffledFrom(int64_t c, const ShufflePlan& p) { return (c % p.groups) * p.perGroup + c / p.groups; }

/// The elements of one kernel window of conv weight `w` ([C, Cin / group, k...]): k... multiplied.
int64_t kernelElements(const ir::Tensor& w) {
    int64_t kernel = 1;
    for (size_t d = 2; d < w.shape().size(); ++d)
        kernel *= w.shape()[d];
    return kernel;
}

/// A copy of conv weight `w` ([C, Cin / group, k...]) whose output channel c is w's channel
/// `from(c)`, with `group` groups made one: each row keeps its group's input channels and has
/// zeros in the others, so the dense convolution sums exactly the products the grouped one did.
template <typename From> ir::Tensor permutedDense(const ir::Tensor& w, int64_t group, From from) {
    const std::vector<int64_t>& wd = w.shape();
    const int64_t co = wd[0], ciPerGroup = wd[1], kernel = kernelElements(w);
    std::vector<int64_t> dense = wd;
    dense[1] = ciPerGroup * group;
    ir::Tensor out(w.dtype(), dense); // zeros
    const size_t elem = ir::dtypeSize(w.dtype());
    const size_t row = static_cast<size_t>(ciPerGroup * kernel) * elem; // one output channel of w
    const int64_t coPerGroup = std::max<int64_t>(co / group, 1);
    for (int64_t c = 0; c < co; ++c) {
        const int64_t s = from(c);
        const size_t offset = static_cast<size_t>((s / coPerGroup) * ciPerGroup * kernel) * elem;
        std::memcpy(out.mutableBytes() + static_cast<size_t>(c * dense[1] * kernel) * elem + offset,
                    w.bytes() + static_cast<size_t>(s) * row, row);
    }
    return out;
}

/// How many times a channel shuffle moves its map through DRAM: three data-movement Tasks (in
/// the blocked layout, a conversion out, the transpose, a conversion back), each reading and
/// writing it.
constexpr uint64_t kShuffleMapPasses = 6;

/// What the rules that trade Tasks for bytes or MACs weigh, from the target's facts in the
/// pipeline (PipelineConfig; npu-a by default).
struct TaskTrade {
    /// What a Task costs beside its bytes (a dispatch, a DRAM latency and a cross-core event), as
    /// the bytes the DRAM moves meanwhile: on npu-a (100 + 400 + 200) x 512.
    uint64_t fixedBytes = 0;
    /// The MACs the cubes do per byte the DRAM moves, the target's balance point: on npu-a
    /// 8 cores x 4,096 MACs against 512 bytes a cycle, 64. Beyond it added products cost the
    /// cubes more time than the traffic they replace cost the DMA.
    uint64_t macsPerByte = 0;

    static TaskTrade of(const PipelineConfig& c) {
        const uint64_t bandwidth = std::max<uint64_t>(c.dramBytesPerCycle, 1);
        return {c.taskFixedCycles * bandwidth,
                static_cast<uint64_t>(std::max(c.numCores, 1)) * c.cubeMacsPerCycle / bandwidth};
    }
};

/// What a channel shuffle of a `mapBytes` map costs, in bytes moved: its map passes and its
/// three Tasks' fixed costs. A grouped conv is made dense for the fold only while its weights
/// grow by no more than that: one kind of traffic traded for less of another. On a small map the
/// fixed costs dominate: in ShuffleNet's 7x7 stage the shuffle held each unit's critical path for
/// about 2,150 cycles, where the dense conv takes about 1,200 more than the grouped one.
uint64_t shuffleCostBytes(uint64_t mapBytes, const TaskTrade& trade) {
    return kShuffleMapPasses * mapBytes + 3 * trade.fixedBytes;
}

/// Conv (or FusedConv) -> channel shuffle  ==>  the same conv with its output channels (weights,
/// bias) in the shuffled order: the shuffle's three data-movement steps, which in the NPU's
/// blocked layout are a conversion out, a transpose and a conversion back, each a DRAM round
/// trip, disappear. A grouped conv becomes one group (its shuffled rows read other groups'
/// channels), with zeros for the channels a row did not read: exact, but more weight bytes and
/// MACs, so it is done only while the weights grow by at most the bytes the shuffle moved and the
/// MACs by at most the target's MACs per byte (shuffleCostBytes, TaskTrade).
class FoldChannelShuffle : public FusionRule {
public:
    std::string id() const override { return "fold-channel-shuffle"; }
    std::string summary() const override {
        return "fold a channel shuffle (Reshape, Transpose of the two group dims, Reshape back) into the Conv "
               "before it by reordering its output channels (a grouped conv becomes dense, with zeros)";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Conv, OpKind::FusedConv}; }

    /// The shuffle after `conv`'s output: NoMatch when no Reshape reading it starts one, Rejected
    /// when the conv's output has other readers too.
    static Match shuffleAfter(const ir::Node& conv, ShufflePlan& p) {
        const ir::Value* out = conv.output(0);
        if (!out->type().isStatic())
            return Match::none();
        for (ir::Node* u : out->users())
            if (u->kind() == OpKind::Reshape && u->input(0) == out && shuffleFrom(*u, p))
                return useCount(out) == 1 ? Match::matched() : Match::rejected(usersReason("conv", out));
        return Match::none();
    }

    /// Whether Reshape `in` begins a channel shuffle of its input; fills `p`.
    static bool shuffleFrom(ir::Node& in, ShufflePlan& p) {
        p.reshapeIn = &in;
        const ir::Value* out = in.input(0);
        ir::Node* t = singleUser(in.output(0));
        if (!t || t->kind() != OpKind::Transpose)
            return false;
        ir::Node* back = singleUser(t->output(0));
        if (!back || back->kind() != OpKind::Reshape || back->input(0) != t->output(0))
            return false;
        const ir::TensorType& xt = out->type();
        const ir::TensorType& split = in.output(0)->type();
        const std::vector<int64_t>& x = xt.dims();
        const size_t r = x.size();
        if (r < 3 || !split.isStatic() || split.dims().size() != r + 1 || back->output(0)->type() != xt)
            return false;
        const std::vector<int64_t>& s = split.dims();
        if (s[0] != x[0] || s[1] * s[2] != x[1] || !std::equal(x.begin() + 2, x.end(), s.begin() + 3))
            return false;
        std::vector<int64_t> perm(r + 1);
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[1], perm[2]);
        if (t->attrInts("perm") != perm)
            return false;
        p.transpose = t;
        p.reshapeOut = back;
        p.groups = s[1];
        p.perGroup = s[2];
        return true;
    }

    void configure(const PipelineConfig& config) override { m_trade = TaskTrade::of(config); }

    Match plan(const ir::Node& conv, ShufflePlan& p) const {
        if (!hasInputs(conv, 2))
            return Match::none();
        if (Match m = shuffleAfter(conv, p); m.kind != Match::Kind::Matched)
            return m;
        if (conv.kind() == OpKind::FusedConv && hasResidual(conv))
            return Match::rejected("conv adds a residual, which the shuffle would reorder too");
        const ir::Tensor* w = constantOf(conv.input(1));
        if (!w)
            return Match::rejected("conv weight '" + conv.input(1)->name() + "' is not a constant");
        const ir::TensorType& xt = conv.output(0)->type();
        const int64_t channels = xt.dims()[1];
        if (!ir::isFloat(w->dtype()) || w->rank() != xt.dims().size() ||
            w->shape()[0] != channels)
            return Match::rejected("conv weight '" + conv.input(1)->name() + "' is not a float tensor of " +
                                   std::to_string(channels) + " output channels");
        if (std::string why = convBiasReason(conv, channels); !why.empty())
            return Match::rejected(why);
        const int64_t group = conv.attrInt("group", 1);
        if (group < 1 || channels % group != 0)
            return Match::rejected("conv group " + std::to_string(group) + " does not divide its " +
                                   std::to_string(channels) + " output channels");
        const uint64_t growth = w->byteSize() * static_cast<uint64_t>(group - 1);
        const uint64_t mapBytes = static_cast<uint64_t>(xt.numel()) * ir::dtypeSize(xt.dtype);
        const uint64_t moved = shuffleCostBytes(mapBytes, m_trade);
        if (growth > moved)
            return Match::rejected("conv of " + std::to_string(group) + " groups would be dense: its weights would grow by " +
                                   std::to_string(growth) + " bytes, more than the " + std::to_string(moved) +
                                   " the shuffle costs (its " + std::to_string(mapBytes) +
                                   "-byte map read and written by three Tasks, and their dispatches, DRAM latencies "
                                   "and events)");
        // Each output element sums group - 1 more of the row's channel windows, all zeros.
        const uint64_t extraMacs = static_cast<uint64_t>(xt.numel()) * static_cast<uint64_t>(w->numel() / channels) *
                                   static_cast<uint64_t>(group - 1);
        if (extraMacs > m_trade.macsPerByte * moved)
            return Match::rejected("conv of " + std::to_string(group) + " groups would be dense: " +
                                   std::to_string(extraMacs) + " more MACs, over " + std::to_string(m_trade.macsPerByte) +
                                   " per byte the shuffle costs (" + std::to_string(moved) + ")");
        return Match::matched();
    }

    Match matchHere(const ir::Node& conv) const override {
        return matchWithPlan<ShufflePlan>(conv, [this](const ir::Node& n, ShufflePlan& p) { return plan(n, p); });
    }

    Status apply(ir::Graph& g, ir::Node& conv, const Match& match, RewriteContext& rc) const override {
        const ShufflePlan& p = match.planAs<ShufflePlan>();
        const ir::Tensor& w = *constantOf(conv.input(1));
        const int64_t group = conv.attrInt("group", 1);
        auto from = [&p](int64_t c) { return shuffledFrom(c, p); };
        std::vector<ir::Value*> inputs{conv.input(0)};
        SX_ASSIGN(ir::Value * wv, addDerivedConstant(g, conv.name() + "_shuffled_w", permutedDense(w, group, from)));
        rc.noteConstant(wv->name(), {&conv, p.transpose});
        inputs.push_back(wv);
        if (const ir::Tensor* b = constantOf(conv.input(2))) {
            ir::Tensor b2(b->dtype(), b->shape());
            for (int64_t c = 0; c < b->numel(); ++c)
                b2.set(c, b->at(from(c)));
            SX_ASSIGN(ir::Value * bv, addDerivedConstant(g, conv.name() + "_shuffled_b", std::move(b2)));
            rc.noteConstant(bv->name(), {&conv, p.transpose});
            inputs.push_back(bv);
        }
        ir::AttributeMap attrs = conv.attrs();
        attrs["group"] = int64_t{1};
        SX_ASSIGN(ir::Node * folded, replaceChain(g, {&conv, p.reshapeIn, p.transpose, p.reshapeOut}, conv.kind(),
                                                  std::move(inputs), std::move(attrs), rc.createdBy()));
        (void)folded;
        g.removeUnusedConstants();
        return {};
    }

private:
    TaskTrade m_trade = TaskTrade::of(PipelineConfig{});
};

// ---- split-conv-over-concat

/// The most inputs a Concat may have for split-conv-over-concat: each becomes a convolution (a
/// Task, or a Task per core) and each but the last a partial sum.
constexpr size_t kMaxConcatPieces = 4;

/// Columns [begin, begin + count) of dim 1 of `w` ([Co, Ci, k...]): the weights a convolution
/// applies to those input channels.
ir::Tensor inputChannels(const ir::Tensor& w, int64_t begin, int64_t count) {
    const std::vector<int64_t>& wd = w.shape();
    const int64_t kernel = kernelElements(w);
    std::vector<int64_t> dims = wd;
    dims[1] = count;
    ir::Tensor out(w.dtype(), dims);
    const size_t elem = ir::dtypeSize(w.dtype());
    const size_t run = static_cast<size_t>(count * kernel) * elem;
    for (int64_t co = 0; co < wd[0]; ++co)
        std::memcpy(out.mutableBytes() + static_cast<size_t>(co) * run,
                    w.bytes() + static_cast<size_t>((co * wd[1] + begin) * kernel) * elem, run);
    return out;
}

/// Conv (or FusedConv) over Concat(x0, ..., xn) along the channels, the Concat read by nothing
/// else  ==>  one convolution per piece, each adding the one before it as its residual:
/// conv(x0, W[:, c0]) + bias, then conv(x1, W[:, c1]) + that, ..., the last with the original
/// epilogue. A convolution sums over its input channels, so the result is the same sum in
/// another order. The Concat was a DRAM tensor its writers stored and the convolution loaded
/// back; each piece can now stay on chip from its producer to its own convolution (SqueezeNet's
/// fire modules: an expand 1x1 and an expand 3x3 concatenated into the next squeeze 1x1).
/// A residual the convolution added goes to the first piece. The partial sums are stored as the
/// residual is read, in f16 on the default NPU (one more rounding of each partial sum). Grouped
/// convolutions and input prologues are left alone, and so are Concats of more than
/// kMaxConcatPieces inputs.
class SplitConvOverConcat : public FusionRule {
public:
    std::string id() const override { return "split-conv-over-concat"; }
    std::string summary() const override {
        return "compute a Conv over a channel Concat only it reads as one Conv per Concat input, each adding the "
               "one before as its residual (the Concat's tensor is never built)";
    }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override { return {OpKind::Conv, OpKind::FusedConv}; }

    struct Plan : MatchPlan {
        ir::Node* concat = nullptr;
        std::vector<int64_t> channels; ///< per Concat input
    };

    void configure(const PipelineConfig& config) override { m_trade = TaskTrade::of(config); }

    Match plan(const ir::Node& conv, Plan& p) const {
        if (!hasInputs(conv, 2))
            return Match::none();
        ir::Node* concat = conv.input(0)->producer();
        if (!concat || concat->kind() != OpKind::Concat)
            return Match::none();
        const ir::TensorType& xt = conv.input(0)->type();
        if (!xt.isStatic() || xt.rank() < 3)
            return Match::none();
        int64_t axis = concat->attrInt("axis", 0);
        if (axis < 0)
            axis += static_cast<int64_t>(xt.rank());
        if (axis != 1)
            return Match::none();
        if (useCount(conv.input(0)) != 1)
            return Match::rejected(usersReason("concat", conv.input(0)));
        for (size_t i = 1; i < conv.numInputs(); ++i)
            if (conv.input(i) == conv.input(0))
                return Match::rejected("conv reads the concat as more than its data");
        if (concat->numInputs() < 2)
            return Match::none();
        if (concat->numInputs() > kMaxConcatPieces)
            return Match::rejected("concat of " + std::to_string(concat->numInputs()) + " inputs: more than " +
                                   std::to_string(kMaxConcatPieces) + " convolutions");
        if (conv.attrInt("group", 1) != 1)
            return Match::rejected("conv has " + std::to_string(conv.attrInt("group", 1)) +
                                   " groups: a piece's channels would cut across them");
        if (conv.kind() == OpKind::FusedConv && ir::hasInputPrologue(conv))
            return Match::rejected("conv applies an input prologue, which its pieces would have to share out");
        const ir::Tensor* w = constantOf(conv.input(1));
        if (!w || !ir::isFloat(w->dtype()) || w->rank() != xt.rank() || w->shape()[1] != xt.dims()[1])
            return Match::rejected("conv weight '" + conv.input(1)->name() + "' is not a float constant over the " +
                                   std::to_string(xt.dims()[1]) + " channels of the concat");
        if (conv.input(2) && !constantOf(conv.input(2)))
            return Match::rejected("conv bias '" + conv.input(2)->name() + "' is not a constant");
        for (const ir::Value* x : concat->inputs()) {
            if (!x || !x->type().isStatic() || x->type().rank() != xt.rank() || x->type().dtype != xt.dtype)
                return Match::none();
            if (x->isConstant())
                return Match::rejected("concat input '" + x->name() + "' is a constant");
            p.channels.push_back(x->type().dims()[1]);
        }
        // The trade, in bytes as fold-channel-shuffle weighs it (TaskTrade): the Concat's tensor
        // written and read back against each added convolution's dispatch, DRAM latency and event.
        const uint64_t roundTrip = 2 * static_cast<uint64_t>(xt.numel()) * ir::dtypeSize(xt.dtype);
        const uint64_t added = (concat->numInputs() - 1) * m_trade.fixedBytes;
        if (roundTrip <= added)
            return Match::rejected("concat of " + std::to_string(roundTrip / 2) + " bytes: its round trip (" +
                                   std::to_string(roundTrip) + ") costs less than the " +
                                   std::to_string(concat->numInputs() - 1) + " convolution" +
                                   (concat->numInputs() > 2 ? "s" : "") + " the split adds (" +
                                   std::to_string(added) + ")");
        p.concat = concat;
        return Match::matched();
    }

    Match matchHere(const ir::Node& conv) const override {
        return matchWithPlan<Plan>(conv, [this](const ir::Node& n, Plan& p) { return plan(n, p); });
    }

    Status apply(ir::Graph& g, ir::Node& conv, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        ir::Node* concat = p.concat;
        const ir::Tensor& w = *constantOf(conv.input(1));
        const ir::TensorType outType = conv.output(0)->type();
        const std::vector<std::string> origins = unionOrigins({&conv, concat});
        // The pieces before the last: no activation, no post-affine (those act on the whole sum).
        ir::AttributeMap partial = conv.attrs();
        partial["activation"] = std::string();
        partial.erase("activation_params");
        partial.erase("post_affine");
        ir::Value* zeros = nullptr; // the bias of every piece but the first (the residual is input 3)
        ir::Value* sum = nullptr;
        int64_t begin = 0;
        const size_t n = concat->numInputs();
        for (size_t k = 0; k < n; ++k) {
            const std::string piece = conv.name() + "_in" + std::to_string(k);
            SX_ASSIGN(ir::Value * wk, addDerivedConstant(g, piece + "_w", inputChannels(w, begin, p.channels[k])));
            rc.noteConstant(wk->name(), {&conv, concat});
            begin += p.channels[k];
            std::vector<ir::Value*> inputs{concat->input(k), wk};
            if (k == 0) { // the bias, and the residual the conv added (UltraFace's RFB shortcut)
                for (size_t i = 2; i < std::min<size_t>(conv.numInputs(), 4); ++i)
                    inputs.push_back(conv.input(i));
            } else {
                if (!zeros) {
                    ir::Tensor z(outType.dtype, {outType.dims()[1]});
                    SX_ASSIGN(zeros, addDerivedConstant(g, conv.name() + "_partial_bias", std::move(z)));
                    rc.noteConstant(zeros->name(), {&conv, concat});
                }
                inputs.push_back(zeros);
                inputs.push_back(sum);
            }
            if (k + 1 == n) {
                SX_ASSIGN(ir::Node * last, replaceChain(g, {&conv}, OpKind::FusedConv, std::move(inputs),
                                                        conv.kind() == OpKind::Conv ? openAttrs(conv.attrs()) : conv.attrs(),
                                                        rc.createdBy()));
                last->mutableProvenance().origins = origins;
                break;
            }
            SX_ASSIGN(ir::Node * part, g.addNode(OpKind::FusedConv, g.uniqueName(piece), std::move(inputs),
                                                 {g.uniqueName(conv.output(0)->name() + "_in" + std::to_string(k))},
                                                 partial, &conv));
            part->output(0)->setType(outType);
            part->mutableProvenance() = ir::Provenance{origins, rc.createdBy()};
            sum = part->output(0);
        }
        SX_TRY(g.eraseNode(concat));
        g.removeUnusedConstants();
        return {};
    }

private:
    /// A plain Conv's attributes as a FusedConv's: no activation.
    static ir::AttributeMap openAttrs(ir::AttributeMap attrs) {
        attrs["activation"] = std::string();
        return attrs;
    }

    TaskTrade m_trade = TaskTrade::of(PipelineConfig{});
};

// ---- fold-zero-channel-pad

/// What a residual padded with zero channels came from: Concat(x, zeros) along the channels,
/// or a constant Pad of zeros at the channel dim's end.
struct ZeroPadPlan : MatchPlan {
    ir::Node* pad = nullptr;
    ir::Value* unpadded = nullptr;
};

/// Why `pad` (a Pad) is not x padded with zeros at the end of its channel dim only; empty when
/// it is.
std::string zeroChannelPadReason(const ir::Node& pad) {
    std::string why;
    std::optional<std::vector<int64_t>> amounts = zeroPadAmounts(pad, why);
    if (!amounts)
        return why;
    const size_t rank = pad.input(0)->type().rank();
    for (size_t i = 0; i < amounts->size(); ++i)
        if ((*amounts)[i] != 0 && i != rank + 1)
            return "pad " + shapeStr(*amounts) + " pads more than the end of the channel dim";
    return {};
}

/// FusedConv whose residual is a tensor padded with zero channels (BlazeFace's shortcut from
/// 24 to 28 channels: Concat with a constant of zeros) ==> the FusedConv reads the tensor as it
/// is and adds it to its first channels only. The padding is a data-movement Task that reads and
/// writes the map in DRAM; the epilogue adds nothing to the other channels.
class FoldZeroChannelPad : public FusionRule {
public:
    std::string id() const override { return "fold-zero-channel-pad"; }
    std::string summary() const override {
        return "read a FusedConv's residual without the zero channels a Concat with zeros (or a constant Pad) "
               "appends to it: the epilogue adds it to the first channels only";
    }
    std::vector<OpKind> targets() const override { return {OpKind::FusedConv}; }

    static Match plan(const ir::Node& conv, ZeroPadPlan& p) {
        if (!hasResidual(conv))
            return Match::none();
        const ir::Value* r = conv.input(3);
        ir::Node* pad = r->producer();
        if (!pad || (pad->kind() != OpKind::Concat && pad->kind() != OpKind::Pad) || !pad->input(0) ||
            !r->type().isStatic())
            return Match::none();
        const std::vector<int64_t>& rd = r->type().dims();
        const size_t rank = rd.size();
        if (pad->kind() == OpKind::Concat) {
            int64_t axis = pad->attrInt("axis", 0);
            axis = axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
            if (axis != 1 || pad->numInputs() != 2 || !pad->input(1))
                return Match::none();
            const ir::Tensor* zeros = constantOf(pad->input(1));
            if (!zeros || !allEqual(*zeros, 0.0))
                return Match::none(); // a concat of two maps
        } else if (std::string why = zeroChannelPadReason(*pad); !why.empty()) {
            return Match::rejected("residual '" + r->name() + "' is padded, but " + why);
        }
        ir::Value* x = pad->input(0);
        if (x->isConstant() || !x->type().isStatic() || x->type().dtype != r->type().dtype)
            return Match::none();
        const std::vector<int64_t>& xd = x->type().dims();
        if (xd.size() != rank || rank < 3 || xd[1] >= rd[1] || xd[0] != rd[0] ||
            !std::equal(xd.begin() + 2, xd.end(), rd.begin() + 2))
            return Match::none();
        p.pad = pad;
        p.unpadded = x;
        return Match::matched();
    }

    Match matchHere(const ir::Node& conv) const override { return matchWithPlan<ZeroPadPlan>(conv, plan); }

    Status apply(ir::Graph& g, ir::Node& conv, const Match& match, RewriteContext& rc) const override {
        const ZeroPadPlan& p = match.planAs<ZeroPadPlan>();
        ir::Node* c = &conv;
        g.setInput(c, 3, p.unpadded);
        c->mutableProvenance().origins = unionOrigins({c, p.pad});
        c->mutableProvenance().createdBy = rc.createdBy();
        if (p.pad->output(0)->users().empty() && !p.pad->output(0)->isGraphOutput()) {
            SX_TRY(g.eraseNode(p.pad));
            g.removeUnusedConstants();
        }
        return {};
    }
};

} // namespace

std::vector<std::unique_ptr<FusionRule>> convRules() {
    std::vector<std::unique_ptr<FusionRule>> rules;
    rules.push_back(std::make_unique<FusePadConv>());
    // The f16 fold first: where it is enabled (O3) it takes the pattern; elsewhere it is off and
    // the exact fold does. Then Conv+BN, so the Conv it leaves behind is offered to the rest.
    rules.push_back(std::make_unique<FuseConvBn>(true));
    rules.push_back(std::make_unique<FuseConvBn>(false));
    // Then scales, so that the bias/activation rule sees Conv -> Add -> activation.
    rules.push_back(std::make_unique<FuseConvScale>());
    rules.push_back(std::make_unique<FuseConvBiasAct>());
    rules.push_back(std::make_unique<FuseConvResidual>());
    rules.push_back(std::make_unique<FuseConvPostAffine>());
    // A shuffle after a conv reorders its channels (after its epilogue: bias, activation and
    // post-affine act per channel or per element, so they follow the weights' rows).
    rules.push_back(std::make_unique<FoldChannelShuffle>());
    rules.push_back(std::make_unique<FoldZeroChannelPad>());
    rules.push_back(std::make_unique<FuseConvTransposeBiasBn>());
    rules.push_back(std::make_unique<FuseConvTransposeAct>());
    // Late: after fuse-batchnorm-chain has made the group it takes.
    rules.push_back(std::make_unique<FuseConvPrologue>());
    rules.push_back(std::make_unique<SplitConvOverConcat>());
    return rules;
}

} // namespace sextant::passes::fuse
