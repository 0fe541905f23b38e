// canonicalize: local clean-ups that make later patterns simpler to match.
#include "Passes.h"
#include "RewriteRule.h"
#include "RewriteUtil.h"

namespace sextant::passes {

namespace {

using ir::OpKind;

/// Identity: its output is its input.
class RemoveIdentity : public RewriteRule {
public:
    std::string id() const override { return "remove-identity"; }
    std::string summary() const override { return "remove Identity nodes (uses read the input)"; }
    std::vector<OpKind> targets() const override { return {OpKind::Identity}; }
    Match match(const ir::Node& n) const override {
        if (!n.input(0))
            return Match::none();
        std::string why = cannotForward(n.output(0), n.input(0));
        return why.empty() ? Match::matched() : Match::rejected(why);
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        rc.noteRemoved(n, "no-op: its output equals its input");
        return forwardAndErase(g, &n, n.output(0), n.input(0));
    }
};

/// Dropout at inference is the identity, unless its mask is used or it is in training mode.
class RemoveDropout : public RewriteRule {
public:
    std::string id() const override { return "remove-dropout"; }
    std::string summary() const override {
        return "remove inference-mode Dropout nodes whose mask output is unused";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Dropout}; }
    Match match(const ir::Node& n) const override {
        if (!n.input(0))
            return Match::none();
        if (n.numOutputs() > 1 && useCount(n.output(1)) > 0)
            return Match::rejected("dropout mask output is used");
        if (ir::Value* training = n.input(2)) {
            const ir::Tensor* t = constantOf(training);
            if (!t)
                return Match::rejected("dropout training_mode input '" + training->name() +
                                       "' is not a constant");
            if (t->numel() > 0 && t->at(0) != 0)
                return Match::rejected("dropout is in training mode");
        }
        std::string why = cannotForward(n.output(0), n.input(0));
        return why.empty() ? Match::matched() : Match::rejected(why);
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        rc.noteRemoved(n, "no-op: its output equals its input");
        return forwardAndErase(g, &n, n.output(0), n.input(0));
    }
};

/// Shared by x*1 and x+0: finds which operand is the neutral constant.
class RemoveNeutral : public RewriteRule {
public:
    Match match(const ir::Node& n) const override {
        int k = neutralOperand(n);
        if (k < 0)
            return Match::none();
        const ir::Value* x = n.input(1 - k);
        const ir::Value* out = n.output(0);
        if (!x->type().isStatic() || !out->type().isStatic())
            return Match::rejected("shapes of '" + x->name() + "' and '" + out->name() +
                                   "' are not known");
        if (x->type().dtype != out->type().dtype || x->type().dims() != out->type().dims())
            return Match::rejected("constant '" + n.input(k)->name() + "' broadcasts " +
                                   shapeStr(x->type().dims()) + " to " +
                                   shapeStr(out->type().dims()));
        std::string why = cannotForward(n.output(0), n.input(1 - k));
        return why.empty() ? Match::matched() : Match::rejected(why);
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        int k = neutralOperand(n);
        rc.noteRemoved(n, "neutral constant operand '" + n.input(k)->name() + "'");
        return forwardAndErase(g, &n, n.output(0), n.input(1 - k));
    }

protected:
    /// The index (0 or 1) of the operand that is a neutral constant, or -1.
    virtual int neutralOperand(const ir::Node& n) const = 0;
    static bool isConst(const ir::Node& n, int i, double v) {
        const ir::Tensor* t = constantOf(n.input(i));
        return t && allEqual(*t, v);
    }
};

class RemoveMulOne : public RemoveNeutral {
public:
    std::string id() const override { return "remove-mul-one"; }
    std::string summary() const override {
        return "remove x*1, 1*x and x/1 when the constant does not change the shape";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Mul, OpKind::Div}; }

protected:
    int neutralOperand(const ir::Node& n) const override {
        if (n.numInputs() != 2 || !n.input(0) || !n.input(1))
            return -1;
        if (isConst(n, 1, 1.0))
            return 1;
        if (n.kind() == OpKind::Mul && isConst(n, 0, 1.0))
            return 0;
        return -1;
    }
};

class RemoveAddZero : public RemoveNeutral {
public:
    std::string id() const override { return "remove-add-zero"; }
    std::string summary() const override {
        return "remove x+0, 0+x and x-0 when the constant does not change the shape";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Add, OpKind::Sub}; }

protected:
    int neutralOperand(const ir::Node& n) const override {
        if (n.numInputs() != 2 || !n.input(0) || !n.input(1))
            return -1;
        if (isConst(n, 1, 0.0))
            return 1;
        if (n.kind() == OpKind::Add && isConst(n, 0, 0.0))
            return 0;
        return -1;
    }
};

/// Reshape(Reshape(x, s1), s2) == Reshape(x, s2) when s2 is a constant that does not copy dims
/// (0 entries) from the inner result.
class MergeReshapeChain : public RewriteRule {
public:
    std::string id() const override { return "merge-reshape-chain"; }
    std::string summary() const override {
        return "make a Reshape of a Reshape read the inner Reshape's input";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Reshape}; }
    Match match(const ir::Node& n) const override {
        const ir::Value* in = n.input(0);
        if (!in || !in->producer() || in->producer()->kind() != OpKind::Reshape)
            return Match::none();
        const ir::Tensor* shape = constantOf(n.input(1));
        if (!shape)
            return Match::rejected("outer reshape's shape is not a constant");
        if (n.attrInt("allowzero", 0) == 0)
            for (int64_t i = 0; i < shape->numel(); ++i)
                if (shape->at(i) == 0)
                    return Match::rejected("outer reshape copies dims (0) from the inner reshape");
        if (!in->producer()->input(0))
            return Match::none();
        return Match::matched();
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext&) const override {
        ir::Node* inner = n.input(0)->producer();
        g.setInput(&n, 0, inner->input(0));
        if (useCount(inner->output(0)) == 0) {
            // The outer Reshape now does the inner one's work: it covers its origins.
            n.mutableProvenance().origins = unionOrigins({&n, inner});
            SX_TRY(g.eraseNode(inner));
        }
        return {};
    }
};

/// Cast to the dtype the input already has does nothing.
class RemoveNoOpCast : public RewriteRule {
public:
    std::string id() const override { return "remove-noop-cast"; }
    std::string summary() const override { return "remove Cast nodes to the dtype their input already has"; }
    std::vector<OpKind> targets() const override { return {OpKind::Cast}; }
    Match match(const ir::Node& n) const override {
        const ir::Value* in = n.input(0);
        if (!in || in->type().dtype != n.output(0)->type().dtype)
            return Match::none();
        std::string why = cannotForward(n.output(0), n.input(0));
        return why.empty() ? Match::matched() : Match::rejected(why);
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        rc.noteRemoved(n, "no-op: its output equals its input");
        return forwardAndErase(g, &n, n.output(0), n.input(0));
    }
};

bool isShapeOnly(OpKind k) {
    return k == OpKind::Reshape || k == OpKind::Squeeze || k == OpKind::Unsqueeze ||
           k == OpKind::Flatten;
}

/// The nodes [inner, anchor] when inner's result is used by anchor only (so both can be replaced
/// and inner's provenance goes to the replacement), else [anchor].
std::vector<ir::Node*> chainOf(ir::Node* inner, ir::Node& anchor) {
    if (singleUser(inner->output(0)) == &anchor)
        return {inner, &anchor};
    return {&anchor};
}

/// Squeeze/Unsqueeze/Reshape/Flatten feeding another of them: one Reshape to the final shape.
class MergeShapeChain : public RewriteRule {
public:
    std::string id() const override { return "merge-shape-chain"; }
    std::string summary() const override {
        return "replace a Squeeze/Unsqueeze/Reshape/Flatten of another by one Reshape to the final "
               "static shape";
    }
    std::vector<OpKind> targets() const override {
        return {OpKind::Reshape, OpKind::Squeeze, OpKind::Unsqueeze, OpKind::Flatten};
    }
    Match match(const ir::Node& n) const override {
        const ir::Value* in = n.input(0);
        if (!in || !in->producer() || !isShapeOnly(in->producer()->kind()))
            return Match::none();
        // Reshape of Reshape is merge-reshape-chain's, which also handles -1 and dynamic dims.
        if (n.kind() == OpKind::Reshape && in->producer()->kind() == OpKind::Reshape)
            return Match::none();
        if (!in->producer()->input(0))
            return Match::none();
        if (!n.output(0)->type().isStatic())
            return Match::rejected("shape of '" + n.output(0)->name() + "' is not static");
        return Match::matched();
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        ir::Node* inner = n.input(0)->producer();
        ir::Value* x = inner->input(0);
        const std::vector<int64_t> dims = n.output(0)->type().dims();
        ir::Tensor shape(ir::DType::I64, {static_cast<int64_t>(dims.size())});
        for (size_t i = 0; i < dims.size(); ++i)
            shape.set(static_cast<int64_t>(i), static_cast<double>(dims[i]));
        SX_ASSIGN(ir::Value * shapeConst, addDerivedConstant(g, n.name() + "_shape", shape));
        rc.noteConstant(shapeConst->name(), {&n});
        SX_ASSIGN(ir::Node * r, replaceChain(g, chainOf(inner, n), OpKind::Reshape,
                                             {x, shapeConst}, {}, rc.createdBy()));
        (void)r;
        return {};
    }
};

/// The permutation a Transpose applies (default: reverse), or empty when unknown.
std::vector<int64_t> permOf(const ir::Node& t) {
    std::vector<int64_t> perm = t.attrInts("perm");
    if (!perm.empty())
        return perm;
    const ir::Value* in = t.input(0);
    if (!in || in->type().rank() == 0)
        return {};
    for (int64_t i = static_cast<int64_t>(in->type().rank()) - 1; i >= 0; --i)
        perm.push_back(i);
    return perm;
}

bool isIdentityPerm(const std::vector<int64_t>& perm) {
    for (size_t i = 0; i < perm.size(); ++i)
        if (perm[static_cast<size_t>(i)] != static_cast<int64_t>(i))
            return false;
    return true;
}

/// The permutation Transpose(Transpose(x, p1), p2) applies: p1[p2[k]] (empty when invalid).
std::vector<int64_t> composePerms(const std::vector<int64_t>& p1, const std::vector<int64_t>& p2) {
    if (p1.size() != p2.size())
        return {};
    std::vector<int64_t> c(p2.size());
    for (size_t k = 0; k < p2.size(); ++k) {
        int64_t j = p2[k];
        if (j < 0 || j >= static_cast<int64_t>(p1.size()))
            return {};
        c[k] = p1[static_cast<size_t>(j)];
    }
    return c;
}

/// Transpose(Transpose(x, p1), p2) == Transpose(x, p1[p2[k]]); nothing at all when that is the
/// identity (an inverse pair).
class MergeTransposes : public RewriteRule {
public:
    std::string id() const override { return "merge-transposes"; }
    std::string summary() const override {
        return "compose a Transpose of a Transpose into one, or cancel an inverse pair";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Transpose}; }
    Match match(const ir::Node& n) const override {
        const ir::Value* in = n.input(0);
        if (!in || !in->producer() || in->producer()->kind() != OpKind::Transpose ||
            !in->producer()->input(0))
            return Match::none();
        std::vector<int64_t> p1 = permOf(*in->producer()), p2 = permOf(n);
        if (p1.empty() || p1.size() != p2.size())
            return Match::rejected("permutation ranks are unknown or differ");
        const std::vector<int64_t> both = composePerms(p1, p2);
        if (both.empty())
            return Match::rejected("a permutation is out of range");
        if (isIdentityPerm(both)) {
            std::string why = cannotForward(n.output(0), in->producer()->input(0));
            if (!why.empty())
                return Match::rejected(why);
        }
        return Match::matched();
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        ir::Node* inner = n.input(0)->producer();
        ir::Value* x = inner->input(0);
        std::vector<int64_t> perm = composePerms(permOf(*inner), permOf(n));
        if (isIdentityPerm(perm)) {
            const std::string outer = n.name();
            rc.noteRemoved(n, "cancels Transpose '" + inner->name() + "'");
            SX_TRY(forwardAndErase(g, &n, n.output(0), x));
            if (useCount(inner->output(0)) == 0) {
                rc.noteRemoved(*inner, "cancelled by Transpose '" + outer + "'");
                SX_TRY(g.eraseNode(inner));
            }
            return {};
        }
        ir::AttributeMap attrs;
        attrs["perm"] = perm;
        SX_ASSIGN(ir::Node * t, replaceChain(g, chainOf(inner, n), OpKind::Transpose, {x},
                                             std::move(attrs), rc.createdBy()));
        (void)t;
        return {};
    }
};

/// Transpose with the identity permutation.
class RemoveIdentityTranspose : public RewriteRule {
public:
    std::string id() const override { return "remove-identity-transpose"; }
    std::string summary() const override { return "remove Transpose nodes whose permutation is the identity"; }
    std::vector<OpKind> targets() const override { return {OpKind::Transpose}; }
    Match match(const ir::Node& n) const override {
        if (!n.input(0))
            return Match::none();
        std::vector<int64_t> perm = permOf(n);
        if (perm.empty() || !isIdentityPerm(perm))
            return Match::none();
        std::string why = cannotForward(n.output(0), n.input(0));
        return why.empty() ? Match::matched() : Match::rejected(why);
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        rc.noteRemoved(n, "no-op: its output equals its input");
        return forwardAndErase(g, &n, n.output(0), n.input(0));
    }
};

/// Unary elementwise ops that keep dtype and shape: a Transpose commutes with them.
bool commutesWithTranspose(OpKind k) {
    switch (k) {
    case OpKind::Relu:
    case OpKind::Sigmoid:
    case OpKind::Exp:
    case OpKind::Sqrt:
    case OpKind::Neg:
    case OpKind::LeakyRelu:
    case OpKind::HardSigmoid:
    case OpKind::HardSwish:
        return true;
    default:
        return false;
    }
}

/// Transpose -> unary elementwise ops -> the inverse Transpose: moves the first Transpose below
/// the elementwise op, one step per application, until it meets its inverse and
/// merge-transposes cancels the pair. Only moves a Transpose that has such a partner, so graphs
/// without one do not churn.
class SinkTranspose : public RewriteRule {
public:
    std::string id() const override { return "sink-transpose"; }
    std::string summary() const override {
        return "move a Transpose below unary elementwise ops towards its inverse Transpose so the "
               "pair cancels";
    }
    std::vector<OpKind> targets() const override { return {OpKind::Transpose}; }
    Match match(const ir::Node& t) const override {
        if (!t.input(0))
            return Match::none();
        ir::Node* u = singleUser(t.output(0));
        if (!u || !commutesWithTranspose(u->kind()) || u->input(0) != t.output(0))
            return Match::none();
        // Follow single users through elementwise ops to a Transpose that undoes this one.
        std::vector<int64_t> p = permOf(t);
        const ir::Node* at = u;
        while (at && commutesWithTranspose(at->kind()))
            at = singleUser(at->output(0));
        if (!at || at->kind() != OpKind::Transpose || p.empty())
            return Match::none();
        std::vector<int64_t> both = composePerms(p, permOf(*at));
        if (both.empty() || !isIdentityPerm(both))
            return Match::none();
        if (u->output(0)->isGraphOutput())
            return Match::rejected("'" + u->output(0)->name() + "' is a graph output");
        return Match::matched();
    }
    Status apply(ir::Graph& g, ir::Node& t, const Match&, RewriteContext&) const override {
        ir::Node* u = singleUser(t.output(0));
        ir::Value* x = t.input(0);
        ir::Value* y = t.output(0);
        ir::Value* z = u->output(0);
        std::vector<std::pair<ir::Node*, size_t>> uses;
        for (ir::Node* user : z->users())
            for (size_t i = 0; i < user->numInputs(); ++i)
                if (user->input(i) == z)
                    uses.emplace_back(user, i);
        // x -> U -> T -> (U's old users); names stay on their nodes and values.
        g.setInput(u, 0, x);
        ir::TensorType zt = x->type();
        zt.dtype = z->type().dtype;
        z->setType(zt);
        g.setInput(&t, 0, z);
        for (auto& [user, i] : uses)
            g.setInput(user, i, y);
        return g.topoSort();
    }
};

} // namespace

std::unique_ptr<Pass> makeCanonicalizePass() {
    std::vector<std::unique_ptr<RewriteRule>> rules;
    rules.push_back(std::make_unique<RemoveIdentity>());
    rules.push_back(std::make_unique<RemoveDropout>());
    rules.push_back(std::make_unique<RemoveMulOne>());
    rules.push_back(std::make_unique<RemoveAddZero>());
    rules.push_back(std::make_unique<MergeReshapeChain>());
    rules.push_back(std::make_unique<RemoveNoOpCast>());
    rules.push_back(std::make_unique<MergeShapeChain>());
    rules.push_back(std::make_unique<MergeTransposes>());
    rules.push_back(std::make_unique<RemoveIdentityTranspose>());
    rules.push_back(std::make_unique<SinkTranspose>());
    return std::make_unique<PatternRewritePass>(
        "canonicalize",
        "remove no-op nodes (Identity, Dropout, x*1, x+0, same-dtype Cast, identity Transpose), "
        "merge Reshape/Squeeze/Unsqueeze/Flatten chains and Transpose pairs",
        std::move(rules));
}

} // namespace sextant::passes
