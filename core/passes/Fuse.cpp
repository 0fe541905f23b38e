// fuse: rules that merge a producer with its elementwise consumers into one NPU kernel.
#include "Passes.h"
#include "RewriteRule.h"
#include "RewriteUtil.h"

#include <cmath>

namespace sextant::passes {

namespace {

using ir::OpKind;

std::string usersReason(const char* what, const ir::Value* v) {
    return std::string(what) + " output has " + std::to_string(useCount(v)) + " users";
}

bool hasUserOfKind(const ir::Value* v, std::initializer_list<OpKind> kinds) {
    for (const ir::Node* u : v->users())
        for (OpKind k : kinds)
            if (u->kind() == k)
                return true;
    return false;
}

/// True when the first `count` inputs of `n` are present (a malformed graph may omit them).
bool hasInputs(const ir::Node& n, size_t count) {
    if (n.numInputs() < count)
        return false;
    for (size_t i = 0; i < count; ++i)
        if (!n.input(i))
            return false;
    return true;
}

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

/// The operand of binary `node` that is not `v` (nullptr when both are `v`).
ir::Value* otherOperand(const ir::Node& node, const ir::Value* v) {
    if (node.numInputs() != 2)
        return nullptr;
    if (node.input(0) == v && node.input(1) != v)
        return node.input(1);
    if (node.input(1) == v && node.input(0) != v)
        return node.input(0);
    return nullptr;
}

// ---- fuse-conv-bn

/// Folds an inference BatchNormalization into the Conv feeding it:
/// W'[m] = W[m] * s[m], b'[m] = (b[m] - mean[m]) * s[m] + beta[m], s = gamma / sqrt(var + eps).
class FuseConvBn : public RewriteRule {
public:
    std::string id() const override { return "fuse-conv-bn"; }
    std::string summary() const override {
        return "fold an inference BatchNormalization into the preceding Conv's weights and bias";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Conv}; }

    Match match(const ir::Node& conv) const override {
        const ir::Value* out = conv.output(0);
        if (!hasInputs(conv, 2) || !hasUserOfKind(out, {OpKind::BatchNormalization}))
            return Match::none();
        if (useCount(out) != 1)
            return Match::rejected(usersReason("conv", out));
        const ir::Node* bn = out->users()[0];
        if (bn->input(0) != out)
            return Match::none();
        if (bn->attrInt("training_mode", 0) != 0)
            return Match::rejected("batchnorm '" + bn->name() + "' is in training mode");
        if (bn->attrInt("spatial", 1) == 0)
            return Match::rejected("batchnorm '" + bn->name() + "' has spatial=0");
        const ir::Tensor* w = constantOf(conv.input(1));
        if (!w)
            return Match::rejected("conv weight '" + conv.input(1)->name() + "' is not a constant");
        if (!ir::isFloat(w->dtype()) || w->rank() < 3)
            return Match::rejected("conv weight '" + conv.input(1)->name() +
                                   "' is not a float tensor of rank >= 3");
        const int64_t m = w->shape()[0];
        if (std::string why = convBiasReason(conv, m); !why.empty())
            return Match::rejected(why);
        for (size_t i = 1; i <= 4; ++i) {
            const ir::Value* p = bn->input(i);
            if (!p)
                return Match::rejected("batchnorm '" + bn->name() + "' lacks input " +
                                       std::to_string(i));
            const ir::Tensor* t = constantOf(p);
            if (!t)
                return Match::rejected("batchnorm parameter '" + p->name() + "' is not a constant");
            if (t->numel() != m)
                return Match::rejected("batchnorm parameter '" + p->name() + "' has " +
                                       std::to_string(t->numel()) + " elements but the conv has " +
                                       std::to_string(m) + " output channels");
        }
        return Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& conv, RewriteContext& rc) const override {
        ir::Node* bn = conv.output(0)->users()[0];
        const ir::Tensor& w = *constantOf(conv.input(1));
        const ir::Tensor* b = constantOf(conv.input(2));
        const ir::Tensor& gamma = *constantOf(bn->input(1));
        const ir::Tensor& beta = *constantOf(bn->input(2));
        const ir::Tensor& mean = *constantOf(bn->input(3));
        const ir::Tensor& var = *constantOf(bn->input(4));
        const double eps = bn->attrFloat("epsilon", 1e-5);
        const int64_t m = w.shape()[0];
        const int64_t perChannel = m ? w.numel() / m : 0;

        std::vector<double> scale(static_cast<size_t>(m));
        for (int64_t c = 0; c < m; ++c)
            scale[c] = gamma.at(c) / std::sqrt(var.at(c) + eps);
        ir::Tensor w2(w.dtype(), w.shape());
        for (int64_t i = 0; i < w.numel(); ++i)
            w2.set(i, w.at(i) * scale[i / perChannel]);
        ir::Tensor b2(b ? b->dtype() : w.dtype(), {m});
        for (int64_t c = 0; c < m; ++c)
            b2.set(c, ((b ? b->at(c) : 0.0) - mean.at(c)) * scale[c] + beta.at(c));

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
};

// ---- fuse-conv-bias-act

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

// ---- fuse-conv-scale

/// Folds a per-channel constant scale into the Conv feeding it: Conv(x, W, b) * s ==
/// Conv(x, W * s, b * s). Together with fuse-conv-bias-act this absorbs the BatchNormalization
/// + Mul + Add (scale/shift) chains that some exporters emit.
class FuseConvScale : public RewriteRule {
public:
    std::string id() const override { return "fuse-conv-scale"; }
    std::string summary() const override {
        return "fold a following Mul by a per-channel constant into the Conv's weights and bias";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Conv}; }

    Match match(const ir::Node& conv) const override {
        const ir::Value* out = conv.output(0);
        if (!hasInputs(conv, 2) || !hasUserOfKind(out, {OpKind::Mul}))
            return Match::none();
        if (useCount(out) != 1)
            return Match::rejected(usersReason("conv", out));
        const ir::Node* mul = out->users()[0];
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
        if (std::string why = convBiasReason(conv, w->shape()[0]); !why.empty())
            return Match::rejected(why);
        return Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& conv, RewriteContext& rc) const override {
        ir::Node* mul = conv.output(0)->users()[0];
        const ir::Tensor& s = *constantOf(otherOperand(*mul, conv.output(0)));
        const ir::Tensor& w = *constantOf(conv.input(1));
        const ir::Tensor* b = constantOf(conv.input(2));
        const int64_t m = w.shape()[0];
        const int64_t perChannel = w.numel() / m;
        auto scale = [&](int64_t c) { return s.at(s.numel() == 1 ? 0 : c); };
        ir::Tensor w2(w.dtype(), w.shape());
        for (int64_t i = 0; i < w.numel(); ++i)
            w2.set(i, w.at(i) * scale(i / perChannel));
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

/// Conv [+ Add(per-channel constant)] [+ Relu] -> sextant.FusedConv.
class FuseConvBiasAct : public RewriteRule {
public:
    std::string id() const override { return "fuse-conv-bias-act"; }
    std::string summary() const override {
        return "fuse Conv with a following per-channel constant bias Add and/or Relu into "
               "sextant.FusedConv";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Conv}; }

    struct Plan {
        ir::Node* add = nullptr;
        ir::Value* bias = nullptr; ///< the Add's constant operand
        ir::Node* relu = nullptr;
    };

    /// The chain to fuse, or the reason it cannot be (Rejected), or NoMatch.
    static Match plan(const ir::Node& conv, Plan& p) {
        const ir::Value* out = conv.output(0);
        if (!hasInputs(conv, 2) || !hasUserOfKind(out, {OpKind::Add, OpKind::Relu}))
            return Match::none();
        if (useCount(out) != 1)
            return Match::rejected(usersReason("conv", out));
        ir::Node* u = out->users()[0];
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
            if (std::string why = convBiasReason(conv, out->type().dims()[1]); !why.empty())
                return Match::rejected(why);
            p.add = u;
            p.bias = other;
            ir::Node* next = singleUser(u->output(0));
            if (next && next->kind() == OpKind::Relu)
                p.relu = next;
            return Match::matched();
        }
        if (u->kind() == OpKind::Relu) {
            p.relu = u;
            return Match::matched();
        }
        return Match::none();
    }

    Match match(const ir::Node& conv) const override {
        Plan p;
        return plan(conv, p);
    }

    Status apply(ir::Graph& g, ir::Node& conv, RewriteContext& rc) const override {
        Plan p;
        if (plan(conv, p).kind != Match::Kind::Matched)
            return makeError(ErrorKind::Verify, "pattern no longer matches", conv.name());
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
        if (p.relu)
            chain.push_back(p.relu);
        ir::AttributeMap attrs = conv.attrs();
        attrs["activation"] = std::string(p.relu ? "Relu" : "");
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::FusedConv, std::move(inputs),
                                                 std::move(attrs), rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-gemm-bias-act

/// Why `bias` cannot be Gemm's C for an [M,N] output (empty if it can): unidirectional
/// broadcasting, so C must not grow the output.
std::string gemmBiasReason(const std::vector<int64_t>& bias, const std::vector<int64_t>& outDims) {
    bool ok = bias.size() <= 2;
    for (size_t j = 0; ok && j < bias.size(); ++j) {
        int64_t o = outDims[2 - bias.size() + j];
        ok = bias[j] == 1 || bias[j] == o;
    }
    if (ok)
        return {};
    return "add bias of shape " + shapeStr(bias) + " does not broadcast to the product's shape " +
           shapeStr(outDims);
}

/// MatMul [+ Add(constant over the last dim)] [+ Relu] and Gemm [+ Add] [+ Relu] ->
/// sextant.FusedGemm.
class FuseGemmBiasAct : public RewriteRule {
public:
    std::string id() const override { return "fuse-gemm-bias-act"; }
    std::string summary() const override {
        return "fuse 2-D MatMul/Gemm with a following constant bias Add and/or Relu into "
               "sextant.FusedGemm";
    }
    std::vector<OpKind> targets() const override { return {OpKind::MatMul, OpKind::Gemm}; }

    struct Plan {
        ir::Node* add = nullptr;
        ir::Value* bias = nullptr;
        ir::Node* relu = nullptr;
    };

    static Match plan(const ir::Node& n, Plan& p) {
        const bool isGemm = n.kind() == OpKind::Gemm;
        const char* what = isGemm ? "gemm" : "matmul";
        const ir::Value* out = n.output(0);
        if (!hasInputs(n, 2) || !hasUserOfKind(out, {OpKind::Add, OpKind::Relu}))
            return Match::none();
        if (useCount(out) != 1)
            return Match::rejected(usersReason(what, out));
        ir::Node* u = out->users()[0];
        if (u->kind() != OpKind::Add && u->kind() != OpKind::Relu)
            return Match::none();
        if (!isGemm) {
            for (size_t i = 0; i < 2; ++i) {
                const ir::TensorType& t = n.input(i)->type();
                if (!t.isStatic())
                    return Match::rejected("matmul operand '" + n.input(i)->name() +
                                           "' has an unknown shape");
                if (t.rank() != 2)
                    return Match::rejected("matmul operand '" + n.input(i)->name() + "' has rank " +
                                           std::to_string(t.rank()) +
                                           "; FusedGemm needs 2-D operands");
            }
        }
        if (u->kind() == OpKind::Add) {
            ir::Value* other = otherOperand(*u, out);
            if (!other)
                return Match::none();
            const ir::Tensor* c = constantOf(other);
            if (!c)
                return Match::rejected("add operand '" + other->name() + "' is not a constant");
            if (isGemm && n.input(2))
                return Match::rejected("gemm already has a bias input '" + n.input(2)->name() +
                                       "'");
            if (!out->type().isStatic() || out->type().rank() != 2)
                return Match::rejected(std::string(what) +
                                       " output shape is not a known 2-D shape");
            std::string why = gemmBiasReason(c->shape(), out->type().dims());
            if (!why.empty())
                return Match::rejected(why);
            if (c->dtype() != out->type().dtype)
                return Match::rejected("add bias '" + other->name() + "' is " +
                                       std::string(ir::dtypeName(c->dtype())) + " but the " + what +
                                       " output is " +
                                       std::string(ir::dtypeName(out->type().dtype)));
            p.add = u;
            p.bias = other;
            ir::Node* next = singleUser(u->output(0));
            if (next && next->kind() == OpKind::Relu)
                p.relu = next;
            return Match::matched();
        }
        p.relu = u;
        return Match::matched();
    }

    Match match(const ir::Node& n) const override {
        Plan p;
        return plan(n, p);
    }

    Status apply(ir::Graph& g, ir::Node& n, RewriteContext& rc) const override {
        Plan p;
        if (plan(n, p).kind != Match::Kind::Matched)
            return makeError(ErrorKind::Verify, "pattern no longer matches", n.name());
        std::vector<ir::Node*> chain{&n};
        std::vector<ir::Value*> inputs{n.input(0), n.input(1)};
        ir::AttributeMap attrs;
        if (n.kind() == OpKind::Gemm) {
            attrs = n.attrs();
            if (n.input(2))
                inputs.push_back(n.input(2));
        } else {
            attrs["transA"] = int64_t{0};
            attrs["transB"] = int64_t{0};
            attrs["alpha"] = 1.0;
            attrs["beta"] = 1.0;
        }
        if (p.add) {
            chain.push_back(p.add);
            inputs.push_back(p.bias);
            attrs["beta"] = 1.0;
        }
        if (p.relu)
            chain.push_back(p.relu);
        attrs["activation"] = std::string(p.relu ? "Relu" : "");
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::FusedGemm, std::move(inputs),
                                                 std::move(attrs), rc.createdBy()));
        (void)fused;
        return {};
    }
};

} // namespace

std::unique_ptr<Pass> makeFusePass() {
    std::vector<std::unique_ptr<RewriteRule>> rules;
    // Conv+BN first: the Conv it leaves behind is then offered to the bias/activation rule.
    rules.push_back(std::make_unique<FuseConvBn>());
    // Then scales, so that the bias/activation rule sees Conv -> Add -> Relu.
    rules.push_back(std::make_unique<FuseConvScale>());
    rules.push_back(std::make_unique<FuseConvBiasAct>());
    rules.push_back(std::make_unique<FuseGemmBiasAct>());
    return std::make_unique<PatternRewritePass>(
        "fuse", "merge producers with their elementwise consumers into NPU kernels",
        std::move(rules));
}

} // namespace sextant::passes
