// Decomposed normalisations and activations recognised as one op: the LayerNorm that exporters
// spell as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div(/Mul/Add), the HardSwish spelled as
// x * Clip(x + 3, 0, 6) / 6 or x * HardSigmoid(x), and the accuracy-trading f16 LayerNorm stash.
#include "FuseUtil.h"

#include <algorithm>

namespace sextant::passes::fuse {

namespace {

using ir::OpKind;

/// The axes a ReduceMean reduces as a trailing block [first, rank), or -1 when they are not
/// one (or not constant, or keepdims = 0).
int64_t trailingReduceAxis(const ir::Node& rm) {
    if (rm.attrInt("keepdims", 1) != 1 || !rm.input(0))
        return -1;
    const int64_t rank = static_cast<int64_t>(rm.input(0)->type().rank());
    std::vector<int64_t> axes;
    if (rm.numInputs() >= 2 && rm.input(1)) {
        const ir::Tensor* t = constantOf(rm.input(1));
        if (!t)
            return -1;
        for (int64_t i = 0; i < t->numel(); ++i)
            axes.push_back(static_cast<int64_t>(t->at(i)));
    } else {
        axes = rm.attrInts("axes");
    }
    if (axes.empty() || rank == 0)
        return -1;
    for (int64_t& a : axes)
        a = a < 0 ? a + rank : a;
    std::sort(axes.begin(), axes.end());
    for (size_t i = 0; i < axes.size(); ++i)
        if (axes[i] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i))
            return -1;
    return axes.front();
}

// ---- fuse-layernorm

/// ReduceMean(x) -> Sub(x, mean) -> Pow(d, 2) -> ReduceMean -> Add(eps) -> Sqrt -> Div(d, .)
/// [-> Mul(gamma) [-> Add(beta)]] -> LayerNormalization(x, gamma, beta, axis, epsilon).
class FuseLayerNorm : public FusionRule {
public:
    std::string id() const override { return "fuse-layernorm"; }
    std::string summary() const override {
        return "replace a decomposed LayerNorm (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, "
               "Div, Mul gamma, Add beta) by one LayerNormalization";
    }
    Phase phase() const override { return Phase::Recognise; }
    std::vector<OpKind> targets() const override { return {OpKind::ReduceMean}; }

    struct Plan : MatchPlan {
        std::vector<ir::Node*> chain; ///< in graph order
        int64_t axis = -1;
        double eps = 0;
        ir::Value* gamma = nullptr;
        ir::Value* beta = nullptr;
    };

    static Match plan(const ir::Node& rm1, Plan& p) {
        ir::Value* x = rm1.input(0);
        if (!x)
            return Match::none();
        Chain c;
        if (Match m = matchCentring(rm1, c); m.kind != Match::Kind::Matched)
            return m;
        if (Match m = matchVariance(rm1, c); m.kind != Match::Kind::Matched)
            return m;
        if (!x->type().isStatic())
            return Match::rejected("layernorm input '" + x->name() + "' has an unknown shape");
        p.chain = {const_cast<ir::Node*>(&rm1), c.sub, c.pow, c.rm2, c.addEps, c.sqrt, c.div};
        p.axis = c.axis;
        p.eps = c.eps;
        planAffineTail(*x, *c.div, p);
        return Match::matched();
    }

    /// The core chain after the mean, found by matchCentring and matchVariance.
    struct Chain {
        ir::Node* sub = nullptr;
        ir::Node* pow = nullptr;
        ir::Node* div = nullptr;
        ir::Node* rm2 = nullptr;
        ir::Node* addEps = nullptr;
        ir::Node* sqrt = nullptr;
        int64_t axis = -1;
        double eps = 0;
    };

    /// mean -> Sub(x, mean), whose result feeds a Pow and a Div.
    static Match matchCentring(const ir::Node& rm1, Chain& c) {
        ir::Value* x = rm1.input(0);
        Match m = soleUserOfKind(rm1.output(0), {OpKind::Sub}, "mean", c.sub);
        if (m.kind != Match::Kind::Matched)
            return m;
        if (c.sub->input(0) != x || c.sub->input(1) != rm1.output(0))
            return Match::none();
        const ir::Value* d = c.sub->output(0);
        // The centred value feeds Pow (variance) and Div (normalisation), nothing else.
        for (ir::Node* u : d->users()) {
            if (u->kind() == OpKind::Pow && u->input(0) == d)
                c.pow = u;
            else if (u->kind() == OpKind::Div && u->input(0) == d)
                c.div = u;
        }
        if (!c.pow)
            return Match::none();
        if (!c.div || useCount(d) != 2)
            return Match::rejected("centred value has " + std::to_string(useCount(d)) +
                                   " users; a layernorm's has 2 (Pow and Div)");
        return Match::matched();
    }

    /// Pow(d, 2) -> ReduceMean over the mean's trailing axes -> Add(eps) -> Sqrt -> the Div.
    static Match matchVariance(const ir::Node& rm1, Chain& c) {
        std::optional<double> two = scalarConstant(c.pow->input(1));
        if (!two || *two != 2.0)
            return Match::rejected("pow exponent is not the constant 2");
        if (soleUserOfKind(c.pow->output(0), {OpKind::ReduceMean}, "pow", c.rm2).kind !=
            Match::Kind::Matched)
            return Match::rejected("variance is not a ReduceMean of the square alone");
        const int64_t axis = trailingReduceAxis(rm1);
        if (axis < 0)
            return Match::rejected("mean is not over trailing axes with keepdims");
        if (trailingReduceAxis(*c.rm2) != axis)
            return Match::rejected("mean and variance reduce different axes");
        if (soleUserOfKind(c.rm2->output(0), {OpKind::Add}, "variance", c.addEps).kind !=
            Match::Kind::Matched)
            return Match::rejected("variance is not followed by an Add of epsilon alone");
        std::optional<double> eps = scalarConstant(otherOperand(*c.addEps, c.rm2->output(0)));
        if (!eps || *eps < 0)
            return Match::rejected("epsilon is not a non-negative constant scalar");
        if (soleUserOfKind(c.addEps->output(0), {OpKind::Sqrt}, "epsilon add", c.sqrt).kind !=
            Match::Kind::Matched)
            return Match::rejected("variance + epsilon is not followed by Sqrt alone");
        if (singleUser(c.sqrt->output(0)) != c.div || c.div->input(1) != c.sqrt->output(0))
            return Match::rejected("the standard deviation does not feed the Div alone");
        c.axis = axis;
        c.eps = *eps;
        return Match::matched();
    }

    /// Optional affine tail: Mul by a constant gamma, then Add of a constant beta, each per
    /// normalised element (or one value); joins p.chain when found.
    static void planAffineTail(const ir::Value& x, const ir::Node& div, Plan& p) {
        ir::Node* mul = singleUser(div.output(0));
        if (mul && mul->kind() == OpKind::Mul && (p.gamma = affineOperand(*mul, div.output(0), x, p.axis))) {
            p.chain.push_back(mul);
            ir::Node* add = singleUser(mul->output(0));
            if (add && add->kind() == OpKind::Add && (p.beta = affineOperand(*add, mul->output(0), x, p.axis)))
                p.chain.push_back(add);
        }
    }

    /// The constant operand of `n` other than `in` when it can scale or shift a LayerNorm of
    /// static `x` over [axis, rank): x's dtype, one value or one per normalised element, and
    /// not broadcasting the output beyond x's shape; nullptr otherwise.
    static ir::Value* affineOperand(const ir::Node& n, const ir::Value* in, const ir::Value& x, int64_t axis) {
        const std::vector<int64_t> dims = x.type().dims();
        int64_t inner = 1;
        for (size_t i = static_cast<size_t>(axis); i < dims.size(); ++i)
            inner *= dims[i];
        ir::Value* c = otherOperand(n, in);
        const ir::Tensor* t = constantOf(c);
        if (!t || t->dtype() != x.type().dtype)
            return nullptr;
        if (t->numel() != 1 && t->numel() != inner)
            return nullptr;
        // Its shape must not broadcast the output beyond x's shape.
        if (t->rank() > dims.size())
            return nullptr;
        for (size_t j = 0; j < t->rank(); ++j) {
            int64_t dj = t->shape()[t->rank() - 1 - j];
            int64_t xj = dims[dims.size() - 1 - j];
            if (dj != 1 && dj != xj)
                return nullptr;
            if (dj != 1 && static_cast<int64_t>(dims.size() - 1 - j) < axis)
                return nullptr;
        }
        return c;
    }

    Match matchHere(const ir::Node& rm1) const override {
        return matchWithPlan<Plan>(rm1, plan);
    }

    Status apply(ir::Graph& g, ir::Node& rm1, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        ir::Value* x = rm1.input(0);
        const std::vector<int64_t> dims = x->type().dims();
        std::vector<int64_t> normShape(dims.begin() + p.axis, dims.end());
        const int64_t inner = ir::product(normShape);
        const ir::DType dt = x->type().dtype;
        auto flat = [&](const ir::Value* v, double dflt, const std::string& suffix,
                        ir::Node* from) -> Expected<ir::Value*> {
            ir::Tensor t(dt, normShape);
            const ir::Tensor* c = constantOf(v);
            for (int64_t i = 0; i < inner; ++i)
                t.set(i, c ? c->at(c->numel() == 1 ? 0 : i) : dflt);
            SX_ASSIGN(ir::Value * out, addDerivedConstant(g, rm1.name() + suffix, std::move(t)));
            rc.noteConstant(out->name(), {from ? from : &rm1});
            return out;
        };
        ir::Node* mul = p.gamma ? p.chain[7] : nullptr;
        ir::Node* add = p.beta ? p.chain[8] : nullptr;
        ir::Value* gamma = nullptr;
        ir::Value* beta = nullptr;
        // A gamma/beta already shaped like the normalised dims is used as is.
        auto reusable = [&](const ir::Value* v) {
            return v && constantOf(v)->shape() == normShape;
        };
        if (reusable(p.gamma)) {
            gamma = p.gamma;
        } else {
            SX_ASSIGN(gamma, flat(p.gamma, 1.0, "_ln_scale", mul));
        }
        if (reusable(p.beta)) {
            beta = p.beta;
        } else {
            SX_ASSIGN(beta, flat(p.beta, 0.0, "_ln_bias", add));
        }
        ir::AttributeMap attrs{{"axis", p.axis}, {"epsilon", p.eps}};
        SX_ASSIGN(ir::Node * fused, replaceChain(g, p.chain, OpKind::LayerNormalization,
                                                 {x, gamma, beta}, std::move(attrs),
                                                 rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-hardswish

/// x * Clip(x + 3, 0, 6) / 6 (also Mul by 1/6, or x * (Clip(x + 3, 0, 6) / 6)) and
/// x * HardSigmoid(x) with alpha 1/6, beta 0.5 -> HardSwish(x).
class FuseHardSwish : public FusionRule {
public:
    std::string id() const override { return "fuse-hardswish"; }
    std::string summary() const override {
        return "replace a decomposed HardSwish (x * Clip(x + 3, 0, 6) / 6, x * HardSigmoid(x) with "
               "alpha 1/6, beta 0.5) by one HardSwish";
    }
    Phase phase() const override { return Phase::Recognise; }
    std::vector<OpKind> targets() const override { return {OpKind::Add, OpKind::HardSigmoid}; }

    /// An f32 1/6 is 0.16666667163..., so constants are compared with a relative tolerance
    /// that accepts f32 spellings of 3, 6 and 1/6 and nothing else.
    static constexpr double kTol = 1e-6;

    /// True when `n` divides its input `v` by 6 (Div by 6 or Mul by 1/6).
    static bool isSixth(const ir::Node& n, const ir::Value* v) {
        if (n.kind() == OpKind::Div && n.input(0) == v) {
            auto c = scalarConstant(n.input(1));
            return c && nearlyEqual(*c, 6.0, kTol);
        }
        if (n.kind() == OpKind::Mul) {
            auto c = scalarConstant(otherOperand(n, v));
            return c && nearlyEqual(*c, 1.0 / 6.0, kTol);
        }
        return false;
    }

    struct Plan : MatchPlan {
        std::vector<ir::Node*> chain;
        ir::Value* x = nullptr;
    };

    static Match plan(const ir::Node& anchor, Plan& p) {
        if (anchor.kind() == OpKind::HardSigmoid) {
            ir::Value* x = anchor.input(0);
            if (!x)
                return Match::none();
            const ir::Value* h = anchor.output(0);
            ir::Node* mul = nullptr;
            Match m = soleUserOfKind(h, {OpKind::Mul}, "hardsigmoid", mul);
            if (m.kind == Match::Kind::Rejected) {
                // Only a rejection when some user really is x * hardsigmoid(x).
                for (const ir::Node* u : h->users())
                    if (u->kind() == OpKind::Mul && otherOperand(*u, h) == x)
                        return m;
                return Match::none();
            }
            if (m.kind != Match::Kind::Matched || otherOperand(*mul, h) != x)
                return Match::none();
            if (!nearlyEqual(anchor.attrFloat("alpha", 0.2), 1.0 / 6.0, kTol) ||
                !nearlyEqual(anchor.attrFloat("beta", 0.5), 0.5, kTol))
                return Match::rejected("hardsigmoid alpha/beta are not 1/6 and 0.5");
            p.x = x;
            p.chain = {const_cast<ir::Node*>(&anchor), mul};
            return Match::matched();
        }
        // Add(x, 3) -> Clip(0, 6) -> ...
        const ir::Node& add = anchor;
        ir::Value* x = nullptr;
        for (size_t i = 0; i < 2 && i < add.numInputs(); ++i) {
            auto c = scalarConstant(add.input(i));
            if (c && nearlyEqual(*c, 3.0, kTol) && add.input(1 - i) &&
                !add.input(1 - i)->isConstant())
                x = add.input(1 - i);
        }
        if (!x)
            return Match::none();
        ir::Node* clip = nullptr;
        Match m = soleUserOfKind(add.output(0), {OpKind::Clip}, "add", clip);
        if (m.kind != Match::Kind::Matched)
            return m;
        std::string why;
        auto bounds = clipBounds(*clip, why);
        if (!bounds)
            return Match::rejected(why);
        if (bounds->first != 0.0 || !nearlyEqual(bounds->second, 6.0, kTol))
            return Match::rejected("clip bounds are not [0, 6]");
        ir::Node* next = singleUser(clip->output(0));
        if (!next)
            return Match::rejected(usersReason("clip", clip->output(0)));
        // Either x * clip, then / 6 ...
        if (next->kind() == OpKind::Mul && otherOperand(*next, clip->output(0)) == x) {
            ir::Node* six = singleUser(next->output(0));
            if (!six || !isSixth(*six, next->output(0)))
                return Match::rejected("x * clip(x + 3, 0, 6) is not divided by 6 alone");
            p.chain = {const_cast<ir::Node*>(&add), clip, next, six};
        } else if (isSixth(*next, clip->output(0))) {
            // ... or clip / 6, then x * that.
            ir::Node* mul = singleUser(next->output(0));
            if (!mul || mul->kind() != OpKind::Mul || otherOperand(*mul, next->output(0)) != x)
                return Match::rejected("clip(x + 3, 0, 6) / 6 is not multiplied by x alone");
            p.chain = {const_cast<ir::Node*>(&add), clip, next, mul};
        } else {
            return Match::none();
        }
        p.x = x;
        return Match::matched();
    }

    Match matchHere(const ir::Node& anchor) const override {
        return matchWithPlan<Plan>(anchor, plan);
    }

    Status apply(ir::Graph& g, ir::Node& anchor, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        SX_ASSIGN(ir::Node * fused,
                  replaceChain(g, p.chain, OpKind::HardSwish, {p.x}, {}, rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- layernorm-f16-variance (O3)

/// LayerNormalization computing its mean and variance in f32/f64 -> the same with stash_type 10
/// (f16): halves the reduction's register/SRAM traffic, loses ~3 decimal digits of the variance.
class LayerNormF16Variance : public FusionRule {
public:
    std::string id() const override { return "layernorm-f16-variance"; }
    std::string summary() const override {
        return "O3, trades accuracy: compute LayerNormalization's mean and variance in f16 "
               "(stash_type 10)";
    }
    bool tradesAccuracy() const override { return true; }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override { return {OpKind::LayerNormalization}; }

    Match matchHere(const ir::Node& n) const override {
        return n.attrInt("stash_type", 1) == 10 ? Match::none() : Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        (void)g;
        n.setAttr("stash_type", int64_t{10});
        n.mutableProvenance().createdBy = rc.createdBy();
        return {};
    }
};

} // namespace

std::vector<std::unique_ptr<FusionRule>> normRules() {
    std::vector<std::unique_ptr<FusionRule>> rules;
    rules.push_back(std::make_unique<FuseLayerNorm>());
    rules.push_back(std::make_unique<FuseHardSwish>());
    rules.push_back(std::make_unique<LayerNormF16Variance>());
    return rules;
}

} // namespace sextant::passes::fuse
