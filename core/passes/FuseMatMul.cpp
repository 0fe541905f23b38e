// Matrix-product fusions: Gemm/MatMul + constant bias + activation -> sextant.FusedGemm, MatMul +
// computed addend -> Gemm with C, and 2-D Transposes absorbed into Gemm's transA/transB.
#include "FuseUtil.h"

#include <algorithm>

namespace sextant::passes::fuse {

namespace {

using ir::OpKind;

/// Why `bias` cannot be Gemm's C for an output of `outDims` (empty if it can): right-aligned
/// unidirectional broadcasting, so C must not grow the output.
std::string gemmBiasReason(const std::vector<int64_t>& bias, const std::vector<int64_t>& outDims) {
    bool ok = bias.size() <= outDims.size();
    for (size_t j = 0; ok && j < bias.size(); ++j) {
        int64_t o = outDims[outDims.size() - bias.size() + j];
        ok = bias[j] == 1 || bias[j] == o;
    }
    if (ok)
        return {};
    return "add bias of shape " + shapeStr(bias) + " does not broadcast to the product's shape " +
           shapeStr(outDims);
}

/// Why MatMul `n` cannot become a Gemm-like node (empty if it can): A of rank >= 2 (FusedGemm
/// takes a batched A), B 2-D, both with known shapes. `plainGemm` demands a 2-D A too.
std::string matmulShapeReason(const ir::Node& n) {
    for (size_t i = 0; i < 2; ++i) {
        const ir::TensorType& t = n.input(i)->type();
        if (!t.isStatic())
            return "matmul operand '" + n.input(i)->name() + "' has an unknown shape";
    }
    const size_t ra = n.input(0)->type().rank(), rb = n.input(1)->type().rank();
    if (ra < 2)
        return "matmul operand '" + n.input(0)->name() + "' has rank " + std::to_string(ra) +
               "; a gemm needs A of rank >= 2";
    if (rb != 2)
        return "matmul operand '" + n.input(1)->name() + "' has rank " + std::to_string(rb) +
               "; a gemm needs a 2-D B";
    return {};
}

/// Checks an Add's operand as a constant bias for a product with output `out`: Matched with
/// `bias` set, or Rejected with the reason.
Match biasOperand(const ir::Node& add, const ir::Value* out, const std::string& what,
                  ir::Value*& bias) {
    ir::Value* other = otherOperand(add, out);
    if (!other)
        return Match::none();
    const ir::Tensor* c = constantOf(other);
    if (!c)
        return Match::rejected("add operand '" + other->name() + "' is not a constant");
    if (!out->type().isStatic())
        return Match::rejected(what + " output shape is not known");
    if (std::string why = gemmBiasReason(c->shape(), out->type().dims()); !why.empty())
        return Match::rejected(why);
    if (c->dtype() != out->type().dtype)
        return Match::rejected("add bias '" + other->name() + "' is " +
                               std::string(ir::dtypeName(c->dtype())) + " but the " + what +
                               " output is " + std::string(ir::dtypeName(out->type().dtype)));
    bias = other;
    return Match::matched();
}

ir::AttributeMap plainGemmAttrs() {
    return {{"transA", int64_t{0}}, {"transB", int64_t{0}}, {"alpha", 1.0}, {"beta", 1.0}};
}

// ---- fuse-matmul-add

/// MatMul(A, B) + C where C is a computed value (a residual, a bias that is not a constant) ->
/// Gemm(A, B, C) when A is 2-D, sextant.FusedGemm (no activation) when A is batched: the add
/// runs in the product's epilogue instead of as a second pass over the output. Constant biases
/// are fuse-gemm-bias-act's.
class FuseMatMulAdd : public FusionRule {
public:
    std::string id() const override { return "fuse-matmul-add"; }
    std::string summary() const override {
        return "fuse MatMul with a following Add of a computed value (residual) into Gemm's C "
               "(2-D) or sextant.FusedGemm's (batched A, 2-D B)";
    }
    std::vector<OpKind> targets() const override { return {OpKind::MatMul}; }

    Match matchHere(const ir::Node& mm) const override {
        ir::Node* add = nullptr;
        if (!hasInputs(mm, 2))
            return Match::none();
        Match m = soleUserOfKind(mm.output(0), {OpKind::Add}, "matmul", add);
        if (m.kind == Match::Kind::Rejected) {
            // Only this rule's concern when the addend is computed.
            for (const ir::Node* u : mm.output(0)->users())
                if (u->kind() == OpKind::Add)
                    if (const ir::Value* o = otherOperand(*u, mm.output(0)); o && !o->isConstant())
                        return m;
            return Match::none();
        }
        if (m.kind != Match::Kind::Matched)
            return m;
        const ir::Value* c = otherOperand(*add, mm.output(0));
        if (!c || c->isConstant())
            return Match::none();
        if (std::string why = matmulShapeReason(mm); !why.empty())
            return Match::rejected(why);
        const ir::Value* out = mm.output(0);
        if (!c->type().isStatic() || !out->type().isStatic())
            return Match::rejected("addend '" + c->name() + "' or the product has an unknown shape");
        if (std::string why = gemmBiasReason(c->type().dims(), out->type().dims()); !why.empty())
            return Match::rejected("addend '" + c->name() + "' of shape " +
                                   shapeStr(c->type().dims()) +
                                   " does not broadcast into the product's shape " +
                                   shapeStr(out->type().dims()));
        if (c->type().dtype != out->type().dtype)
            return Match::rejected("addend '" + c->name() + "' has another dtype than the product");
        if (c->producer() == &mm)
            return Match::none();
        return matchedWith(add);
    }

    Status apply(ir::Graph& g, ir::Node& mm, const Match& match, RewriteContext& rc) const override {
        ir::Node* add = match.planAs<PairPlan>().other;
        ir::Value* c = otherOperand(*add, mm.output(0));
        const bool batched = mm.input(0)->type().rank() > 2;
        ir::AttributeMap attrs = plainGemmAttrs();
        if (batched)
            attrs["activation"] = std::string();
        SX_ASSIGN(ir::Node * fused,
                  replaceChain(g, {&mm, add}, batched ? OpKind::FusedGemm : OpKind::Gemm,
                               {mm.input(0), mm.input(1), c}, std::move(attrs), rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- fuse-gemm-bias-act

/// MatMul / Gemm / FusedGemm without activation [+ Add(constant)] [+ activation] ->
/// sextant.FusedGemm (a MatMul's A may be batched, its B must be 2-D).
class FuseGemmBiasAct : public FusionRule {
public:
    std::string id() const override { return "fuse-gemm-bias-act"; }
    std::string summary() const override {
        return "fuse Gemm (or MatMul) with a following constant bias Add and/or activation (Relu, "
               "LeakyRelu, Clip/Relu6, Sigmoid, HardSigmoid, HardSwish) into sextant.FusedGemm";
    }
    std::vector<OpKind> targets() const override {
        return {OpKind::MatMul, OpKind::Gemm, OpKind::FusedGemm};
    }

    using Plan = BiasActPlan;

    static Match plan(const ir::Node& n, Plan& p) {
        const bool isMatMul = n.kind() == OpKind::MatMul;
        if (n.kind() == OpKind::FusedGemm && !n.attrString("activation", "").empty())
            return Match::none();
        const std::string what = isMatMul ? "matmul" : "gemm";
        const ir::Value* out = n.output(0);
        if (!hasInputs(n, 2))
            return Match::none();
        std::vector<OpKind> kinds(activationKinds());
        kinds.push_back(OpKind::Add);
        ir::Node* u = nullptr;
        for (ir::Node* cand : out->users())
            if (std::find(kinds.begin(), kinds.end(), cand->kind()) != kinds.end()) {
                u = cand;
                break;
            }
        if (!u)
            return Match::none();
        if (useCount(out) != 1)
            return Match::rejected(usersReason(what, out));
        if (isMatMul)
            if (std::string why = matmulShapeReason(n); !why.empty())
                return Match::rejected(why);
        if (u->kind() == OpKind::Add) {
            const ir::Value* addend = otherOperand(*u, out);
            if (!addend || (!addend->isConstant() && isMatMul))
                return Match::none(); // a computed addend is fuse-matmul-add's
            if (n.input(2))
                return Match::rejected("gemm already has a bias input '" + n.input(2)->name() +
                                       "'");
            Match m = biasOperand(*u, out, what, p.bias);
            if (m.kind != Match::Kind::Matched)
                return m;
            p.add = u;
            planActivationAfterAdd(p);
            return Match::matched();
        }
        return planActivation(*u, p);
    }

    Match matchHere(const ir::Node& n) const override {
        return matchWithPlan<Plan>(n, plan);
    }

    Status apply(ir::Graph& g, ir::Node& n, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        std::vector<ir::Node*> chain{&n};
        std::vector<ir::Value*> inputs{n.input(0), n.input(1)};
        ir::AttributeMap attrs;
        if (n.kind() == OpKind::MatMul) {
            attrs = plainGemmAttrs();
        } else {
            attrs = n.attrs();
            if (n.input(2))
                inputs.push_back(n.input(2));
        }
        if (p.add) {
            chain.push_back(p.add);
            inputs.push_back(p.bias);
            attrs["beta"] = 1.0;
        }
        if (p.act) {
            chain.push_back(p.act);
            setActivation(attrs, p.spec);
        } else {
            attrs["activation"] = std::string();
        }
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::FusedGemm, std::move(inputs),
                                                 std::move(attrs), rc.createdBy()));
        (void)fused;
        return {};
    }
};

// ---- absorb-transpose-gemm

/// The 2-D Transpose (perm [1, 0]) producing `v` whose only use is `user`, or nullptr.
ir::Node* swapTranspose(const ir::Value* v) {
    ir::Node* t = v ? v->producer() : nullptr;
    if (!t || t->kind() != OpKind::Transpose || !t->input(0))
        return nullptr;
    if (t->input(0)->type().rank() != 2)
        return nullptr;
    std::vector<int64_t> perm = t->attrInts("perm", {1, 0});
    if (perm != std::vector<int64_t>{1, 0})
        return nullptr;
    return t;
}

/// MatMul/Gemm/FusedGemm reading a 2-D Transpose's output -> the product with transA/transB
/// flipped, reading the Transpose's input (the cube unit reads either layout).
class AbsorbTransposeGemm : public FusionRule {
public:
    std::string id() const override { return "absorb-transpose-gemm"; }
    std::string summary() const override {
        return "absorb a 2-D Transpose feeding MatMul/Gemm into the product's transA/transB";
    }
    std::vector<OpKind> targets() const override {
        return {OpKind::MatMul, OpKind::Gemm, OpKind::FusedGemm};
    }

    /// Which operands (bit 0: A, bit 1: B) can absorb their Transpose.
    static int absorbable(const ir::Node& n, std::string& why) {
        int mask = 0;
        const bool isMatMul = n.kind() == OpKind::MatMul;
        for (size_t i = 0; i < 2; ++i) {
            ir::Node* t = swapTranspose(n.input(i));
            if (!t)
                continue;
            if (useCount(t->output(0)) != 1) {
                why = usersReason("transpose", t->output(0));
                continue;
            }
            if (n.input(0) == n.input(1)) {
                why = "both operands are the same transpose";
                continue;
            }
            const size_t ra = n.input(0)->type().rank();
            if (i == 0 && ra != 2) {
                why = "A has rank " + std::to_string(ra) + "; transA needs a 2-D A";
                continue;
            }
            if (isMatMul && (ra != 2 || n.input(1)->type().rank() != 2)) {
                why = "matmul operands are not both 2-D";
                continue;
            }
            mask |= 1 << i;
        }
        return mask;
    }

    Match matchHere(const ir::Node& n) const override {
        if (!hasInputs(n, 2))
            return Match::none();
        if (!swapTranspose(n.input(0)) && !swapTranspose(n.input(1)))
            return Match::none();
        std::string why;
        if (absorbable(n, why) == 0)
            return Match::rejected(why);
        return Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        std::string why;
        const int mask = absorbable(n, why);
        ir::AttributeMap attrs = n.kind() == OpKind::MatMul ? plainGemmAttrs() : n.attrs();
        std::vector<ir::Value*> inputs(n.inputs().begin(), n.inputs().end());
        std::vector<ir::Node*> transposes;
        for (size_t i = 0; i < 2; ++i) {
            if (!(mask & (1 << i)))
                continue;
            ir::Node* t = n.input(i)->producer();
            transposes.push_back(t);
            inputs[i] = t->input(0);
            const char* key = i == 0 ? "transA" : "transB";
            attrs[key] = int64_t{n.attrInt(key, 0) ? 0 : 1};
        }
        const OpKind kind = n.kind() == OpKind::MatMul ? OpKind::Gemm : n.kind();
        std::vector<const ir::Node*> covered{&n};
        covered.insert(covered.end(), transposes.begin(), transposes.end());
        std::vector<std::string> origins = unionOrigins(covered);
        SX_ASSIGN(ir::Node * fused,
                  replaceChain(g, {&n}, kind, std::move(inputs), std::move(attrs), rc.createdBy()));
        fused->mutableProvenance().origins = std::move(origins);
        for (ir::Node* t : transposes)
            SX_TRY(g.eraseNode(t));
        return {};
    }
};

} // namespace

std::vector<std::unique_ptr<FusionRule>> matmulRules() {
    std::vector<std::unique_ptr<FusionRule>> rules;
    // Transposes first, so the bias and activation rules see the final Gemm.
    rules.push_back(std::make_unique<AbsorbTransposeGemm>());
    rules.push_back(std::make_unique<FuseGemmBiasAct>());
    rules.push_back(std::make_unique<FuseMatMulAdd>());
    return rules;
}

} // namespace sextant::passes::fuse
