#pragma once
// Shared pieces of the fusion rules (Fuse*.cpp): the rule base class with its phase, and the
// matchers every rule otherwise repeats ("the single user of kind K", "a scalar constant",
// "an activation a fused kernel can apply"). Internal to core/passes.

#include "RewriteRule.h"
#include "RewriteUtil.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sextant::passes::fuse {

/// When a fusion rule may fire. The fuse pass runs each phase's rules to a fixed point in turn:
/// Recognise (decomposed LayerNorm/HardSwish/attention become one op, so a producer no longer
/// sees the decomposition's extra users), Main (producer + consumer fusions), Late (elementwise
/// groups of what is left, accuracy-trading rewrites of fused ops): a later rule never swallows
/// a chain that an earlier one would have fused better.
enum class Phase { Recognise, Main, Late };

/// Base of every fusion rule: match() answers NoMatch outside the rule's phase, so statistics
/// count a rule only where it could act.
class FusionRule : public RewriteRule {
public:
    /// `current` is the fuse pass's phase, shared by all its rules.
    void attachPhase(std::shared_ptr<const Phase> current) { m_current = std::move(current); }
    virtual Phase phase() const { return Phase::Main; }

    bool activeNow() const final { return !m_current || *m_current == phase(); }
    Match match(const ir::Node& anchor) const final {
        if (!activeNow())
            return Match::none();
        return matchHere(anchor);
    }

protected:
    /// The rule's own condition (see RewriteRule::match).
    virtual Match matchHere(const ir::Node& anchor) const = 0;

private:
    std::shared_ptr<const Phase> m_current;
};

/// The plan of a rule whose rewrite takes the anchor and one more node it matched (the
/// BatchNormalization after a Conv, the Mul scaling it, the Conv after a Pad, the Add after a
/// MatMul).
struct PairPlan : MatchPlan {
    ir::Node* other = nullptr;
};
/// Matched, with `other` as the PairPlan.
inline Match matchedWith(ir::Node* other) {
    auto plan = std::make_unique<PairPlan>();
    plan->other = other;
    return Match::matched(std::move(plan));
}

/// The sole user of `v` when some user has one of `kinds`: Matched with `user` set; NoMatch when
/// no user has those kinds; Rejected ("<what> output has N users") when `v` has other uses too.
Match soleUserOfKind(const ir::Value* v, std::initializer_list<ir::OpKind> kinds,
                     const std::string& what, ir::Node*& user);

/// "<what> output has N users".
std::string usersReason(const std::string& what, const ir::Value* v);

/// True when the first `count` inputs of `n` are present (a malformed graph may omit them).
bool hasInputs(const ir::Node& n, size_t count);

/// The operand of binary `node` that is not `v` (nullptr when both or neither are `v`).
ir::Value* otherOperand(const ir::Node& node, const ir::Value* v);

/// The value of a constant whose elements are all equal (a scalar in any shape), else nullopt.
std::optional<double> scalarConstant(const ir::Value* v);

/// True when |a - b| <= tol * max(|a|, |b|).
bool nearlyEqual(double a, double b, double tol);

/// Clip's bounds from its attributes (opset < 11) or constant inputs (opset >= 11); absent
/// bounds are the lowest/largest finite double. nullopt (with `why` set) when a bound is not a constant scalar.
std::optional<std::pair<double, double>> clipBounds(const ir::Node& clip, std::string& why);

/// An activation a fused kernel applies (FusedConv/FusedGemm attribute "activation").
struct ActivationSpec {
    std::string name;           ///< "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish"
    std::vector<double> params; ///< activation_params (empty for Relu, Sigmoid, HardSwish)
};
/// The activation `n` computes, or nullopt: NoMatch when `n` is not an activation op, Rejected
/// (reason in `why`) when it is one the kernel cannot take (Clip with a non-constant bound).
std::optional<ActivationSpec> activationOf(const ir::Node& n, std::string& why);
/// The op kinds activationOf understands.
std::initializer_list<ir::OpKind> activationKinds();
/// Sets "activation" and, when it has parameters, "activation_params" on `attrs`.
void setActivation(ir::AttributeMap& attrs, const ActivationSpec& act);
/// The activation a fused kernel's attributes name ("activation", "activation_params"); an empty
/// name when it has none.
ActivationSpec activationAttrs(const ir::Node& fused);
/// The op that computes `act` on its own, with its float attributes sorted by name (absent
/// parameters left to the op's ONNX defaults), as a group body step replays it: the inverse of
/// activationOf. nullopt for a name it does not know.
std::optional<std::pair<ir::OpKind, std::vector<std::pair<std::string, double>>>>
activationOp(const ActivationSpec& act);

/// What a producer + bias + activation fusion takes along: the bias Add (and its constant
/// operand), the activation after it or right after the producer, and that activation's spec.
struct BiasActPlan : MatchPlan {
    ir::Node* add = nullptr;
    ir::Value* bias = nullptr;
    ir::Node* act = nullptr;
    ActivationSpec spec;
};
/// `user` (the producer's sole user, not an Add) as the plan's activation: Matched when it is
/// one, Rejected with activationOf's reason, NoMatch when it is not an activation at all.
Match planActivation(ir::Node& user, BiasActPlan& p);
/// After the bias Add: takes the Add's sole user along when it is an activation the kernel can apply.
void planActivationAfterAdd(BiasActPlan& p);

/// The rules of each family (FuseConv.cpp, FuseMatMul.cpp, FuseNorm.cpp, FuseGroups.cpp), in the
/// order the fuse pass offers them to a node.
/// Why inference BatchNormalization `bn` cannot fold into `channels` per-channel factors (empty
/// if it can): training mode, spatial=0, or parameters that are not constants of one element per
/// channel.
std::string bnFoldReason(const ir::Node& bn, int64_t channels);

/// FuseQuant.cpp: fuse-qdq-conv and fuse-qdq-matmul (DequantizeLinear -> Conv | MatMul | Gemm ->
/// QuantizeLinear as sextant.Int8Conv | sextant.Int8Gemm) and fold-weight-dequantize (the weights
/// of the products they reject become float).
std::vector<std::unique_ptr<FusionRule>> quantRules();
inline constexpr const char* kFuseQdqConvRule = "fuse-qdq-conv";
inline constexpr const char* kFuseQdqMatMulRule = "fuse-qdq-matmul";
/// Whether DequantizeLinear `dq` of a constant feeds only products that read dequantized data
/// (as their weight or bias), Convs where `convs`, MatMuls and Gemms where `products`:
/// fold-constants then leaves it for fuse-qdq-conv or fuse-qdq-matmul, so the weight can stay
/// int8 (fold-weight-dequantize folds it where that rule says no).
bool keptForInt8(const ir::Node& dq, bool convs, bool products);

std::vector<std::unique_ptr<FusionRule>> convRules();
std::vector<std::unique_ptr<FusionRule>> matmulRules();
std::vector<std::unique_ptr<FusionRule>> normRules();
std::vector<std::unique_ptr<FusionRule>> groupRules();
/// SplitPool.cpp: split-global-pool (a reduction split for the cores, run with the Late rules).
std::vector<std::unique_ptr<FusionRule>> splitRules();

} // namespace sextant::passes::fuse
