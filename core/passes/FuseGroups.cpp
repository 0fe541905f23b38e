// Group fusions: the attention block as one sextant.Attention, chains of elementwise ops as one
// sextant.ElementwiseGroup, and the accuracy-trading rewrites (softmax without max-subtraction,
// division by a constant as multiplication by its reciprocal).
#include "FuseUtil.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace sextant::passes::fuse {

namespace {

using ir::OpKind;

// ---- fuse-attention

/// The last-axis Softmax test: true when `sm` normalises along its input's last dim only.
bool lastAxisSoftmax(const ir::Node& sm) {
    const ir::Value* in = sm.input(0);
    if (!in)
        return false;
    const int64_t rank = static_cast<int64_t>(in->type().rank());
    const int64_t opset = sm.attrInt("_opset", 13);
    int64_t axis = sm.attrInt("axis", opset < 13 ? 1 : -1);
    if (axis < 0)
        axis += rank;
    return rank >= 2 && axis == rank - 1;
}

/// A constant scalar factor applied by Mul or Div to `v` (through node `n`): the factor, or
/// nullopt when `n` is not such a scaling.
std::optional<double> scaling(const ir::Node& n, const ir::Value* v) {
    if (n.kind() == OpKind::Mul) {
        auto c = scalarConstant(otherOperand(n, v));
        if (c && constantOf(otherOperand(n, v))->numel() == 1)
            return c;
    }
    if (n.kind() == OpKind::Div && n.input(0) == v && n.input(1) != v) {
        auto c = scalarConstant(n.input(1));
        if (c && *c != 0.0 && constantOf(n.input(1))->numel() == 1)
            return 1.0 / *c;
    }
    return std::nullopt;
}

/// MatMul(Q [* s], K^T) [* s] -> Softmax(last axis) -> MatMul(., V) -> sextant.Attention(Q, K, V)
/// with the scale as an attribute; a Transpose swapping K's last two dims is absorbed (transB).
class FuseAttention : public FusionRule {
public:
    std::string id() const override { return "fuse-attention"; }
    std::string summary() const override {
        return "replace an attention block (MatMul Q.K^T, constant scale, last-axis Softmax, MatMul "
               "by V) by one sextant.Attention, absorbing K's transpose";
    }
    Phase phase() const override { return Phase::Recognise; }
    std::vector<OpKind> targets() const override { return {OpKind::Softmax}; }

    struct Plan : MatchPlan {
        ir::Node* preScale = nullptr;  ///< Mul/Div on Q before the product
        ir::Node* transpose = nullptr; ///< Transpose of K
        ir::Node* mm1 = nullptr;
        ir::Node* postScale = nullptr; ///< Mul/Div on the scores
        ir::Node* mm2 = nullptr;
        ir::Value *q = nullptr, *k = nullptr, *v = nullptr;
        double scale = 1.0;
        bool transB = false;
    };

    static Match plan(const ir::Node& sm, Plan& p) {
        const ir::Value* scores = sm.input(0);
        if (!scores || !scores->producer())
            return Match::none();
        ir::Node* prod = scores->producer();
        if (prod->kind() != OpKind::MatMul) {
            auto s = scaling(*prod, prod->input(0)) ? prod->input(0) : prod->input(1);
            auto f = s ? scaling(*prod, s) : std::nullopt;
            if (!f || !s->producer() || s->producer()->kind() != OpKind::MatMul)
                return Match::none();
            if (useCount(scores) != 1)
                return Match::rejected(usersReason("attention scale", scores));
            p.postScale = prod;
            p.scale *= *f;
            prod = s->producer();
        }
        p.mm1 = prod;
        if (!hasInputs(*p.mm1, 2))
            return Match::none();
        ir::Node* mm2 = nullptr;
        Match m = soleUserOfKind(sm.output(0), {OpKind::MatMul}, "softmax", mm2);
        if (m.kind != Match::Kind::Matched)
            return m;
        if (mm2->input(0) != sm.output(0) || mm2->input(1) == sm.output(0))
            return Match::rejected("softmax output is not the left operand of the second matmul");
        p.mm2 = mm2;
        if (!lastAxisSoftmax(sm))
            return Match::rejected("softmax is not along the last axis");
        if (useCount(p.mm1->output(0)) != 1)
            return Match::rejected(usersReason("scores matmul", p.mm1->output(0)));
        p.q = p.mm1->input(0);
        p.k = p.mm1->input(1);
        p.v = mm2->input(1);
        if (ir::Node* qs = p.q->producer(); qs && useCount(p.q) == 1) {
            for (size_t i = 0; i < qs->numInputs() && i < 2; ++i)
                if (auto f = qs->input(i) ? scaling(*qs, qs->input(i)) : std::nullopt;
                    f && !qs->input(i)->isConstant()) {
                    p.preScale = qs;
                    p.scale *= *f;
                    p.q = qs->input(i);
                    break;
                }
        }
        if (ir::Node* t = p.k->producer();
            t && t->kind() == OpKind::Transpose && useCount(p.k) == 1 && t->input(0)) {
            const size_t r = t->input(0)->type().rank();
            std::vector<int64_t> swap;
            for (size_t i = 0; i < r; ++i)
                swap.push_back(static_cast<int64_t>(i + 2 == r ? r - 1 : i + 1 == r ? r - 2 : i));
            if (r >= 2 && t->attrInts("perm") == swap) {
                p.transpose = t;
                p.transB = true;
                p.k = t->input(0);
            }
        }
        for (const ir::Value* x : {p.q, p.k, p.v})
            if (!x->type().isStatic())
                return Match::rejected("attention operand '" + x->name() +
                                       "' has an unknown shape");
        const size_t r = p.q->type().rank();
        if (r < 2 || p.k->type().rank() != r || p.v->type().rank() != r)
            return Match::rejected("attention operands have different ranks");
        const auto qd = p.q->type().dims(), kd = p.k->type().dims(), vd = p.v->type().dims();
        for (size_t i = 0; i + 2 < r; ++i)
            if (qd[i] != kd[i] || qd[i] != vd[i])
                return Match::rejected("attention operands " + shapeStr(qd) + ", " +
                                       shapeStr(kd) + ", " + shapeStr(vd) +
                                       " broadcast their batch dims");
        if (p.q->type().dtype != p.k->type().dtype || p.q->type().dtype != p.v->type().dtype)
            return Match::rejected("attention operands have different dtypes");
        return Match::matched();
    }

    Match matchHere(const ir::Node& sm) const override {
        return matchWithPlan<Plan>(sm, plan);
    }

    Status apply(ir::Graph& g, ir::Node& sm, const Match& match, RewriteContext& rc) const override {
        const Plan& p = match.planAs<Plan>();
        std::vector<ir::Node*> chain{p.mm1};
        if (p.postScale)
            chain.push_back(p.postScale);
        chain.push_back(&sm);
        chain.push_back(p.mm2);
        std::vector<const ir::Node*> covered(chain.begin(), chain.end());
        for (ir::Node* n : {p.preScale, p.transpose})
            if (n)
                covered.push_back(n);
        std::vector<std::string> origins = unionOrigins(covered);
        ir::AttributeMap attrs{{"scale", p.scale},
                               {"transB", int64_t{p.transB ? 1 : 0}},
                               {"fast_softmax", int64_t{0}}};
        // Q and K are read from before the scaling and the transpose, which then go too.
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::Attention, {p.q, p.k, p.v},
                                                 std::move(attrs), rc.createdBy()));
        fused->mutableProvenance().origins = std::move(origins);
        for (ir::Node* n : {p.transpose, p.preScale})
            if (n)
                SX_TRY(g.eraseNode(n));
        g.removeUnusedConstants();
        return {};
    }
};

// ---- fuse-elementwise-chain

/// A QuantizeLinear or DequantizeLinear with one constant scale (and zero point) for the whole
/// tensor, which a group replays without its integer attributes (axis, saturate and block_size
/// mean nothing for one scale; a QuantizeLinear's type is its zero point's).
bool perTensorQuantStep(const ir::Node& n) {
    if (n.kind() != OpKind::QuantizeLinear && n.kind() != OpKind::DequantizeLinear)
        return false;
    const ir::Tensor* scale = n.numInputs() > 1 ? constantOf(n.input(1)) : nullptr;
    const ir::Value* zpv = n.numInputs() > 2 ? n.input(2) : nullptr;
    const ir::Tensor* zp = constantOf(zpv);
    if (!scale || scale->numel() != 1 || (zpv && (!zp || zp->numel() != 1)) || n.attrInt("block_size", 0) != 0)
        return false;
    if (n.kind() == OpKind::QuantizeLinear && !zp && n.attr("output_dtype"))
        return false;
    return n.input(0) && !n.input(0)->isConstant();
}

/// The body operand naming group input `v`: its place in `inputs`, where it is appended when new.
ir::BodyOperand groupInput(std::vector<ir::Value*>& inputs, ir::Value* v) {
    auto it = std::find(inputs.begin(), inputs.end(), v);
    if (it == inputs.end()) {
        inputs.push_back(v);
        it = inputs.end() - 1;
    }
    return ir::BodyOperand::input(static_cast<uint32_t>(it - inputs.begin()));
}

/// Whether `n` may be a step of a group: its op may (the op table's Fusable column, which the
/// group kernel in ops/FusionOps.cpp checks too), and it computes floats from at least one
/// computed value with float attributes only, or it is a per-tensor QuantizeLinear or
/// DequantizeLinear (perTensorQuantStep).
bool groupable(const ir::Node& n) {
    if (n.info().fusable != ir::Fusable::Group)
        return false;
    if (n.kind() == OpKind::QuantizeLinear || n.kind() == OpKind::DequantizeLinear)
        return n.numOutputs() == 1 && perTensorQuantStep(n);
    if (n.numOutputs() != 1 || !ir::isFloat(n.output(0)->type().dtype))
        return false;
    for (const auto& [key, value] : n.attrs())
        if (!std::holds_alternative<double>(value))
            return false;
    bool computed = false;
    for (const ir::Value* in : n.inputs()) {
        if (in && !ir::isFloat(in->type().dtype))
            return false;
        computed |= in && !in->isConstant();
    }
    // An op on constants only is fold-constants' business (and a value, not a kernel), even
    // where folding is switched off or the result is too large to fold.
    return computed;
}

/// A chain of at least two elementwise ops, each feeding only the next ->
/// sextant.ElementwiseGroup whose body (Node::body()) records the ops, printed "Mul(i0,i1)",
/// "Sigmoid(t0)", "Clip(t1) min=0 max=6", ... Other operands become the group's inputs.
class FuseElementwiseChain : public FusionRule {
public:
    std::string id() const override { return "fuse-elementwise-chain"; }
    std::string summary() const override {
        return "merge a chain of elementwise ops (each feeding only the next) into one "
               "sextant.ElementwiseGroup that replays them in one vector kernel";
    }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override {
        std::vector<OpKind> kinds;
        for (const ir::OpInfo& op : ir::allOps())
            if (op.fusable == ir::Fusable::Group)
                kinds.push_back(op.kind);
        return kinds;
    }

    static std::vector<ir::Node*> chainFrom(const ir::Node& head) {
        std::vector<ir::Node*> chain;
        if (!groupable(head))
            return chain;
        chain.push_back(const_cast<ir::Node*>(&head));
        for (;;) {
            ir::Node* next = singleUser(chain.back()->output(0));
            if (!next || !groupable(*next))
                break;
            chain.push_back(next);
        }
        return chain;
    }

    struct Plan : MatchPlan {
        std::vector<ir::Node*> chain; ///< the anchor, then each node its predecessor alone feeds
    };

    Match matchHere(const ir::Node& n) const override {
        auto plan = std::make_unique<Plan>();
        plan->chain = chainFrom(n);
        return plan->chain.size() >= 2 ? Match::matched(std::move(plan)) : Match::none();
    }

    Status apply(ir::Graph& g, ir::Node& n, const Match& match, RewriteContext& rc) const override {
        const std::vector<ir::Node*>& chain = match.planAs<Plan>().chain;
        std::vector<ir::Value*> inputs;
        auto body = std::make_shared<ir::FusedBody>();
        std::vector<const ir::Node*> inlined;
        appendSteps(chain, nullptr, *body, inputs, &inlined);
        SX_ASSIGN(ir::Node * fused, replaceChain(g, chain, OpKind::ElementwiseGroup,
                                                 std::move(inputs), {}, rc.createdBy()));
        fused->setBody(std::move(body));
        // A DequantizeLinear the group now computes: its origins are the group's too (the node
        // itself is dead; dce removes it).
        if (!inlined.empty()) {
            std::vector<std::string>& origins = fused->mutableProvenance().origins;
            for (const ir::Node* dq : inlined)
                origins.insert(origins.end(), dq->provenance().origins.begin(), dq->provenance().origins.end());
            std::sort(origins.begin(), origins.end());
            origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
        }
        return {};
    }

    /// Appends a step per node of `chain` to `body`: an operand that is the previous node's
    /// output (or, for the first node, `head`, the output of the steps already in the body) is
    /// that step; any other becomes one of the group's `inputs` (each value once). An operand
    /// made by a per-tensor DequantizeLinear that only the chain reads (the shortcut of a
    /// quantized residual block) becomes a step too, reading the int8 tensor: its node is then
    /// dead, and listed in `inlined` (for the group's provenance).
    static void appendSteps(const std::vector<ir::Node*>& chain, const ir::Value* head, ir::FusedBody& body,
                            std::vector<ir::Value*>& inputs, std::vector<const ir::Node*>* inlined = nullptr) {
        const ir::Value* prev = head;
        int64_t prevStep = static_cast<int64_t>(body.steps.size()) - 1;
        std::map<const ir::Value*, uint32_t> dequantized; // inlined DequantizeLinear output -> its step
        auto inputOperand = [&](ir::Value* v) { return groupInput(inputs, v); };
        for (const ir::Node* step : chain) {
            ir::BodyStep b;
            b.op = step->kind();
            for (size_t a = 0; a < step->numInputs(); ++a) {
                ir::Value* in = step->input(a);
                if (!in) {
                    b.operands.push_back(ir::BodyOperand::omitted());
                } else if (prev && in == prev) {
                    b.operands.push_back(ir::BodyOperand::step(static_cast<uint32_t>(prevStep)));
                } else if (auto d = dequantized.find(in); d != dequantized.end()) {
                    b.operands.push_back(ir::BodyOperand::step(d->second));
                } else if (const ir::Node* dq = onlyChainReadsDequantized(in, chain)) {
                    ir::BodyStep ds;
                    ds.op = OpKind::DequantizeLinear;
                    for (size_t k = 0; k < dq->numInputs(); ++k)
                        ds.operands.push_back(dq->input(k) ? inputOperand(dq->input(k)) : ir::BodyOperand::omitted());
                    body.steps.push_back(std::move(ds));
                    const auto index = static_cast<uint32_t>(body.steps.size() - 1);
                    dequantized.emplace(in, index);
                    b.operands.push_back(ir::BodyOperand::step(index));
                    if (inlined)
                        inlined->push_back(dq);
                } else {
                    b.operands.push_back(inputOperand(in));
                }
            }
            if (!perTensorQuantStep(*step)) // its integer attributes do not apply (groupable)
                for (const auto& [key, value] : step->attrs())
                    b.attrs.emplace_back(key, std::get<double>(value)); // groupable: floats only
            body.steps.push_back(std::move(b));
            prev = step->output(0);
            prevStep = static_cast<int64_t>(body.steps.size()) - 1;
        }
    }

    /// The per-tensor DequantizeLinear that makes `v`, when every reader of `v` is in `chain`
    /// (and `v` is no graph output), else nullptr.
    static const ir::Node* onlyChainReadsDequantized(const ir::Value* v, const std::vector<ir::Node*>& chain) {
        const ir::Node* dq = v->producer();
        if (!dq || dq->kind() != OpKind::DequantizeLinear || !perTensorQuantStep(*dq) || v->isGraphOutput())
            return nullptr;
        if (std::find(chain.begin(), chain.end(), dq) != chain.end())
            return nullptr;
        for (const ir::Node* u : v->users())
            if (std::find(chain.begin(), chain.end(), u) == chain.end())
                return nullptr;
        return dq;
    }
};

// ---- fold-squeeze-excite

/// Whether `t` holds one value per channel (static, rank 3 or more, every spatial dim 1), as a
/// group's pooled step must give (the group's verifier checks the same).
bool onePerChannel(const ir::TensorType& t) {
    if (t.rank() < 3 || !t.isStatic())
        return false;
    const std::vector<int64_t> d = t.dims();
    return std::all_of(d.begin() + 2, d.end(), [](int64_t x) { return x == 1; });
}

/// A squeeze-excite tail: a global pooling, then 1x1 convolutions (with their activations, and
/// elementwise ops or groups between them such as EfficientNet's SiLU) on the pooled vector,
/// giving one scale per channel that only an elementwise group (or a single
/// elementwise op) reads -> the group computes that scale itself, as a pooled prologue of its
/// body: "GlobalAveragePool(i3)", "Conv(t0,i4,i5)", "Relu(t1)", "Conv(t2,i6,i7)",
/// "HardSigmoid(t3) alpha=0.2 beta=0.5", then the group's own steps.
/// Before, one Task pooled and ran the tiny convolutions on one core while the group's parts
/// waited for it: an event there and one back, and each part loaded the scale from DRAM. Now
/// each part computes the tail whole from the pooled input (the few rows split-global-pool leaves,
/// or a small map), reading it and the weights whole: one event from the pooling's producers, no
/// Task on one core in between. The pooled input is bounded (kMaxPooledElements), so every
/// part's extra read stays small.
class FoldSqueezeExcite : public FusionRule {
public:
    /// Elements of the pooled input beyond which a part's whole read of it costs more than the
    /// Task and the event it saves: 16 Ki f16 elements are 32 KiB, about 64 cycles of npu-a's DRAM
    /// bandwidth per part, against a Task's DRAM latency and an event (600 cycles).
    static constexpr int64_t kMaxPooledElements = 16 * 1024;

    std::string id() const override { return "fold-squeeze-excite"; }
    std::string summary() const override {
        return "compute a squeeze-excite tail (global pooling, 1x1 convolutions on the pooled vector) inside the "
               "elementwise group that applies its scale: every part pools and runs the tiny convolutions itself "
               "instead of waiting for one Task on one core";
    }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override { return {OpKind::ElementwiseGroup, OpKind::Mul}; }

    struct Plan : MatchPlan {
        uint32_t input = 0;                 ///< the group input the tail computes
        ir::Node* pool = nullptr;
        std::vector<ir::Node*> tail;        ///< the convolutions and elementwise ops after it, in data order
    };

    /// The one computed input of `n`, when `n` is an elementwise op or group on one value per
    /// channel whose other inputs are constants (a SiLU between the convolutions: Sigmoid and
    /// Mul, as a group); else nullptr.
    static ir::Value* vectorStepInput(const ir::Node& n) {
        if (n.kind() != OpKind::ElementwiseGroup && !groupable(n))
            return nullptr;
        if (n.kind() == OpKind::ElementwiseGroup && !n.body())
            return nullptr;
        ir::Value* computed = nullptr;
        for (ir::Value* in : n.inputs()) {
            if (!in || in->isConstant())
                continue;
            if (computed && computed != in)
                return nullptr;
            computed = in;
        }
        return onePerChannel(n.output(0)->type()) ? computed : nullptr;
    }

    /// A 1x1 convolution on one value per channel that a body step can replay: no attribute
    /// but defaults (a step has float attributes only), no residual or post affine. Empty when
    /// it is one; else why not.
    static std::string convStepReason(const ir::Node& c) {
        if (!onePerChannel(c.output(0)->type()))
            return "'" + c.name() + "' does not compute one value per channel";
        if (!c.input(1) || !c.input(1)->isConstant() || (c.numInputs() > 2 && c.input(2) && !c.input(2)->isConstant()))
            return "'" + c.name() + "' has weights that are not constant";
        if (c.numInputs() > 3 && c.input(3))
            return "'" + c.name() + "' adds a residual";
        if (c.attr("post_affine"))
            return "'" + c.name() + "' has a post affine";
        if (ir::hasInputPrologue(c))
            return "'" + c.name() + "' has an input prologue";
        if (const ActivationSpec act = activationAttrs(c); !act.name.empty() && !activationOp(act))
            return "'" + c.name() + "' has activation '" + act.name + "', which no body step computes";
        if (c.attrInt("group", 1) != 1)
            return "'" + c.name() + "' is a grouped convolution";
        const std::vector<int64_t> wd = c.input(1)->type().dims();
        if (std::any_of(wd.begin() + std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(wd.size())), wd.end(),
                        [](int64_t d) { return d != 1; }))
            return "'" + c.name() + "' is not a 1x1 convolution";
        for (const char* key : {"strides", "dilations"})
            for (int64_t v : c.attrInts(key, {}))
                if (v != 1)
                    return "'" + c.name() + "' has " + key + " other than 1";
        for (int64_t v : c.attrInts("pads", {}))
            if (v != 0)
                return "'" + c.name() + "' pads its input";
        if (c.attrString("auto_pad", "NOTSET") != "NOTSET" && c.attrString("auto_pad", "NOTSET") != "VALID")
            return "'" + c.name() + "' pads its input";
        return {};
    }

    Match matchHere(const ir::Node& g) const override {
        if (g.numOutputs() != 1 || !ir::isFloat(g.output(0)->type().dtype))
            return Match::none();
        // A Mul that starts a chain becomes a group first (fuse-elementwise-chain).
        if (g.kind() == OpKind::Mul && (!groupable(g) || FuseElementwiseChain::chainFrom(g).size() >= 2))
            return Match::none();
        // The group that applies the scale to a map; one on the pooled vector is part of the tail.
        if (vectorStepInput(g))
            return Match::none();
        for (uint32_t j = 0; j < g.numInputs(); ++j) {
            const ir::Value* s = g.input(j);
            if (!s || s->isConstant() || singleUser(s) != &g)
                continue;
            // Walk back through the convolutions (and elementwise ops on the vector) to the pooling.
            std::vector<ir::Node*> tail;
            bool convs = false;
            const ir::Value* v = s;
            ir::Node* p = v->producer();
            for (;;) {
                if (!p)
                    break;
                const bool conv = p->kind() == OpKind::Conv || p->kind() == OpKind::FusedConv;
                ir::Value* next = conv ? p->input(0) : vectorStepInput(*p);
                if (!next)
                    break;
                convs |= conv;
                tail.push_back(p);
                v = next;
                p = v->producer();
                if (p && singleUser(v) != tail.back())
                    p = nullptr;
            }
            if (!p || !convs || (p->kind() != OpKind::GlobalAveragePool && p->kind() != OpKind::GlobalMaxPool))
                continue; // not a squeeze-excite tail: nothing to count
            std::reverse(tail.begin(), tail.end());
            for (const ir::Node* c : tail)
                if (c->kind() == OpKind::Conv || c->kind() == OpKind::FusedConv)
                    if (std::string why = convStepReason(*c); !why.empty())
                        return Match::rejected(why);
            const ir::Value* pooled = p->input(0);
            const int64_t numel = pooled ? pooled->type().numel() : -1;
            if (numel < 0)
                return Match::rejected("pooled input of '" + p->name() + "' has no static shape");
            if (numel > kMaxPooledElements)
                return Match::rejected("'" + p->name() + "' pools " + std::to_string(numel) +
                                       " elements, more than each part should read whole (" +
                                       std::to_string(kMaxPooledElements) + ")");
            auto plan = std::make_unique<Plan>();
            plan->input = j;
            plan->pool = p;
            plan->tail = std::move(tail);
            return Match::matched(std::move(plan));
        }
        return Match::none();
    }

    /// The steps of elementwise op or group `e` (vectorStepInput) appended to `body`, its computed
    /// input read from step `prev`, its constants as group inputs (`inputOperand`).
    template <class InputOperand>
    static void appendVectorStep(const ir::Node& e, uint32_t prev, ir::FusedBody& body, InputOperand&& inputOperand) {
        const ir::Value* computed = vectorStepInput(e);
        auto operand = [&](ir::Value* in) {
            return !in ? ir::BodyOperand::omitted() : in == computed ? ir::BodyOperand::step(prev) : inputOperand(in);
        };
        if (e.kind() != OpKind::ElementwiseGroup) {
            ir::BodyStep only{e.kind(), {}, {}};
            for (ir::Value* in : e.inputs())
                only.operands.push_back(operand(in));
            for (const auto& [key, value] : e.attrs())
                only.attrs.emplace_back(key, std::get<double>(value)); // groupable: floats only
            body.steps.push_back(std::move(only));
            return;
        }
        const auto base = static_cast<uint32_t>(body.steps.size());
        for (ir::BodyStep step : e.body()->steps) {
            for (ir::BodyOperand& o : step.operands) {
                if (o.kind == ir::BodyOperand::Kind::Step)
                    o.index += base;
                else if (o.kind == ir::BodyOperand::Kind::Input)
                    o = operand(e.input(o.index));
            }
            body.steps.push_back(std::move(step));
        }
    }

    Status apply(ir::Graph& graph, ir::Node& g, const Match& match, RewriteContext& rc) const override {
        const Plan& plan = match.planAs<Plan>();
        // The group's inputs but the scale, then the pooled map and the convolutions' weights.
        std::vector<ir::Value*> inputs;
        std::vector<uint32_t> renumber(g.numInputs(), 0);
        for (uint32_t j = 0; j < g.numInputs(); ++j)
            if (j != plan.input) {
                renumber[j] = static_cast<uint32_t>(inputs.size());
                inputs.push_back(g.input(j));
            }
        auto inputOperand = [&](ir::Value* v) { return groupInput(inputs, v); };
        auto body = std::make_shared<ir::FusedBody>();
        body->steps.push_back(ir::BodyStep{plan.pool->kind(), {inputOperand(plan.pool->input(0))}, {}});
        for (const ir::Node* c : plan.tail) {
            const auto prev = static_cast<uint32_t>(body->steps.size() - 1);
            if (c->kind() != OpKind::Conv && c->kind() != OpKind::FusedConv) {
                appendVectorStep(*c, prev, *body, inputOperand);
                continue;
            }
            ir::BodyStep conv{OpKind::Conv, {ir::BodyOperand::step(prev), inputOperand(c->input(1))}, {}};
            if (c->numInputs() > 2 && c->input(2))
                conv.operands.push_back(inputOperand(c->input(2)));
            body->steps.push_back(std::move(conv));
            const ActivationSpec act = activationAttrs(*c);
            if (act.name.empty())
                continue;
            auto op = activationOp(act); // convStepReason checked that there is one
            body->steps.push_back(ir::BodyStep{
                op->first, {ir::BodyOperand::step(static_cast<uint32_t>(body->steps.size() - 1))}, op->second});
        }
        const auto scale = static_cast<uint32_t>(body->steps.size() - 1);
        const auto shift = static_cast<uint32_t>(body->steps.size());
        // The group's own steps (a single op: itself), reading the scale from the prologue.
        std::vector<ir::BodyStep> own;
        if (const ir::FusedBody* old = g.body()) {
            own = old->steps;
        } else {
            ir::BodyStep only{g.kind(), {}, {}};
            for (uint32_t j = 0; j < g.numInputs(); ++j)
                only.operands.push_back(ir::BodyOperand::input(j));
            for (const auto& [key, value] : g.attrs())
                only.attrs.emplace_back(key, std::get<double>(value)); // groupable: floats only
            own.push_back(std::move(only));
        }
        for (ir::BodyStep step : own) {
            for (ir::BodyOperand& o : step.operands) {
                if (o.kind == ir::BodyOperand::Kind::Step)
                    o.index += shift;
                else if (o.kind == ir::BodyOperand::Kind::Input)
                    o = o.index == plan.input ? ir::BodyOperand::step(scale) : ir::BodyOperand::input(renumber[o.index]);
            }
            body->steps.push_back(std::move(step));
        }
        ir::AttributeMap attrs;
        for (const auto& [key, value] : g.attrs())
            if (g.kind() == OpKind::ElementwiseGroup)
                attrs.emplace(key, value);
        std::vector<std::string> origins = g.provenance().origins;
        std::vector<ir::Node*> tail{plan.pool};
        tail.insert(tail.end(), plan.tail.begin(), plan.tail.end());
        for (const ir::Node* n : tail)
            origins.insert(origins.end(), n->provenance().origins.begin(), n->provenance().origins.end());
        SX_ASSIGN(ir::Node * fused, replaceChain(graph, {&g}, OpKind::ElementwiseGroup, std::move(inputs),
                                                 std::move(attrs), rc.createdBy()));
        fused->setBody(std::move(body));
        for (auto it = tail.rbegin(); it != tail.rend(); ++it)
            SX_TRY(graph.eraseNode(*it));
        std::sort(origins.begin(), origins.end());
        origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
        fused->mutableProvenance().origins = std::move(origins);
        return {};
    }
};

// ---- fuse-batchnorm-chain

/// An inference BatchNormalization that no convolution absorbed (its input is a Concat, a pool,
/// a graph input: DenseNet's pre-activations), followed by an elementwise chain ->
/// one sextant.ElementwiseGroup whose body starts with the normalisation as a per-channel scale
/// and shift, s = gamma / sqrt(var + eps) and t = beta - mean * s, computed once here in double
/// (what TVM's SimplifyInference and TensorRT do): "Mul(i0,i1)", "Add(t0,i2)", then the chain.
/// A Mul or Add by a per-channel constant right after the op (a Caffe Scale layer) folds into s
/// and t as well.
/// The raw statistics and 1/sqrt never reach the NPU, so what made BatchNormalization an f32 op
/// (keep-f32-critical) is gone; a scale or shift outside f16's range keeps the op as it is.
class FuseBatchNormChain : public FusionRule {
public:
    std::string id() const override { return "fuse-batchnorm-chain"; }
    std::string summary() const override {
        return "fold an inference BatchNormalization that no Conv absorbed into a per-channel scale and "
               "shift, and merge it with the elementwise chain after it into one sextant.ElementwiseGroup";
    }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override { return {OpKind::BatchNormalization}; }

    struct Plan : MatchPlan {
        std::vector<ir::Node*> absorbed; ///< per-channel Mul/Add folded into scale and shift
        std::vector<ir::Node*> chain;    ///< the elementwise nodes after those
        std::vector<double> scale, shift;
    };

    Match matchHere(const ir::Node& bn) const override {
        if (bn.numOutputs() != 1 || !bn.input(0) || !ir::isFloat(bn.output(0)->type().dtype))
            return Match::none();
        ir::Node* next = singleUser(bn.output(0));
        if (!next || !groupable(*next))
            return Match::none(); // nothing to merge with: the op stays one Task either way
        const std::vector<int64_t> dims = bn.input(0)->type().dims();
        if (dims.size() < 2 || dims[1] <= 0)
            return Match::rejected("batchnorm input '" + bn.input(0)->name() + "' has no static channel dim");
        const int64_t channels = dims[1];
        if (std::string why = bnFoldReason(bn, channels); !why.empty())
            return Match::rejected(why);
        auto plan = std::make_unique<Plan>();
        const ir::Tensor& gamma = *constantOf(bn.input(1));
        const ir::Tensor& beta = *constantOf(bn.input(2));
        const ir::Tensor& mean = *constantOf(bn.input(3));
        const ir::Tensor& var = *constantOf(bn.input(4));
        const double eps = bn.attrFloat("epsilon", 1e-5);
        constexpr double kF16Max = 65504.0;
        for (int64_t c = 0; c < channels; ++c) {
            const double s = gamma.at(c) / std::sqrt(var.at(c) + eps);
            const double t = beta.at(c) - mean.at(c) * s;
            if (!std::isfinite(s) || !std::isfinite(t) || std::fabs(s) > kF16Max || std::fabs(t) > kF16Max)
                return Match::rejected("scale or shift of channel " + std::to_string(c) + " of batchnorm '" +
                                       bn.name() + "' is outside f16's range");
            plan->scale.push_back(s);
            plan->shift.push_back(t);
        }
        // A Mul or Add by a per-channel constant right after (a Caffe Scale layer) folds into s and
        // t too: (x * s + t) * k + a = x * (s * k) + (t * k + a).
        std::vector<ir::Node*> chain = FuseElementwiseChain::chainFrom(*next);
        const ir::Value* prev = bn.output(0);
        size_t absorbed = 0;
        for (; absorbed < chain.size(); ++absorbed) {
            const ir::Node& op = *chain[absorbed];
            if ((op.kind() != OpKind::Mul && op.kind() != OpKind::Add) || op.numInputs() != 2)
                break;
            const ir::Value* other = op.input(0) == prev ? op.input(1) : op.input(0);
            const ir::Tensor* k = op.input(0) == prev || op.input(1) == prev ? constantOf(other) : nullptr;
            if (!k || op.output(0)->type().dims() != dims || !perChannel(k->shape(), dims))
                break;
            std::vector<double> s2 = plan->scale, t2 = plan->shift;
            bool fits = true;
            for (int64_t c = 0; c < channels; ++c) {
                const double kc = k->at(k->numel() == 1 ? 0 : c);
                if (op.kind() == OpKind::Mul) {
                    s2[c] *= kc;
                    t2[c] *= kc;
                } else {
                    t2[c] += kc;
                }
                fits = fits && std::isfinite(s2[c]) && std::isfinite(t2[c]) && std::fabs(s2[c]) <= kF16Max &&
                       std::fabs(t2[c]) <= kF16Max;
            }
            if (!fits)
                break;
            plan->scale = std::move(s2);
            plan->shift = std::move(t2);
            prev = op.output(0);
        }
        plan->absorbed.assign(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(absorbed));
        plan->chain.assign(chain.begin() + static_cast<std::ptrdiff_t>(absorbed), chain.end());
        return Match::matched(std::move(plan));
    }

    /// Whether a constant of shape `k` multiplies or adds one value per channel (or one for all)
    /// to a tensor of dims `x`: right-aligned, every dim 1 but the channel dim (x's axis 1).
    static bool perChannel(const std::vector<int64_t>& k, const std::vector<int64_t>& x) {
        if (k.size() > x.size())
            return false;
        for (size_t j = 0; j < k.size(); ++j) {
            const size_t axis = x.size() - k.size() + j;
            if (k[j] != 1 && !(axis == 1 && k[j] == x[1]))
                return false;
        }
        return true;
    }

    Status apply(ir::Graph& g, ir::Node& bn, const Match& match, RewriteContext& rc) const override {
        const Plan& plan = match.planAs<Plan>();
        ir::Value* x = bn.input(0);
        // [C, 1, ..., 1]: broadcast against the input's dims from axis 1 on.
        std::vector<int64_t> shape(x->type().dims().size() - 1, 1);
        shape[0] = static_cast<int64_t>(plan.scale.size());
        const ir::DType dt = x->type().dtype;
        ir::Tensor s(dt, shape), t(dt, shape);
        for (size_t c = 0; c < plan.scale.size(); ++c) {
            s.set(static_cast<int64_t>(c), plan.scale[c]);
            t.set(static_cast<int64_t>(c), plan.shift[c]);
        }
        SX_ASSIGN(ir::Value * sv, addDerivedConstant(g, bn.name() + "_scale", std::move(s)));
        SX_ASSIGN(ir::Value * tv, addDerivedConstant(g, bn.name() + "_shift", std::move(t)));
        std::vector<const ir::Node*> from{&bn};
        from.insert(from.end(), plan.absorbed.begin(), plan.absorbed.end());
        rc.noteConstant(sv->name(), from);
        rc.noteConstant(tv->name(), from);
        std::vector<ir::Value*> inputs{x, sv, tv};
        auto body = std::make_shared<ir::FusedBody>();
        body->steps.push_back(ir::BodyStep{OpKind::Mul, {ir::BodyOperand::input(0), ir::BodyOperand::input(1)}, {}});
        body->steps.push_back(ir::BodyStep{OpKind::Add, {ir::BodyOperand::step(0), ir::BodyOperand::input(2)}, {}});
        FuseElementwiseChain::appendSteps(plan.chain, plan.absorbed.empty() ? bn.output(0) : plan.absorbed.back()->output(0),
                                          *body, inputs);
        std::vector<ir::Node*> all{&bn};
        all.insert(all.end(), plan.absorbed.begin(), plan.absorbed.end());
        all.insert(all.end(), plan.chain.begin(), plan.chain.end());

        SX_ASSIGN(ir::Node * fused, replaceChain(g, all, OpKind::ElementwiseGroup, std::move(inputs), {},
                                                 rc.createdBy()));
        fused->setBody(std::move(body));
        return {};
    }
};

// ---- attention-fast-softmax (O3)

class AttentionFastSoftmax : public FusionRule {
public:
    std::string id() const override { return "attention-fast-softmax"; }
    std::string summary() const override {
        return "O3, trades accuracy: attention softmax without max-subtraction (one pass fewer; "
               "exp may overflow on large scores)";
    }
    bool tradesAccuracy() const override { return true; }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override { return {OpKind::Attention}; }

    Match matchHere(const ir::Node& n) const override {
        return n.attrInt("fast_softmax", 0) ? Match::none() : Match::matched();
    }

    Status apply(ir::Graph&, ir::Node& n, const Match&, RewriteContext& rc) const override {
        n.setAttr("fast_softmax", int64_t{1});
        n.mutableProvenance().createdBy = rc.createdBy();
        return {};
    }
};

// ---- div-to-reciprocal (O3)

class DivToReciprocal : public FusionRule {
public:
    std::string id() const override { return "div-to-reciprocal"; }
    std::string summary() const override {
        return "O3, trades accuracy: divide by a constant as multiply by its (rounded) reciprocal";
    }
    bool tradesAccuracy() const override { return true; }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override { return {OpKind::Div}; }

    Match matchHere(const ir::Node& n) const override {
        if (!hasInputs(n, 2) || n.input(0)->isConstant())
            return Match::none();
        const ir::Tensor* c = constantOf(n.input(1));
        if (!c || !ir::isFloat(c->dtype()))
            return Match::none();
        for (int64_t i = 0; i < c->numel(); ++i)
            if (c->at(i) == 0.0)
                return Match::rejected("divisor '" + n.input(1)->name() + "' has a zero");
        return Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        const ir::Tensor& c = *constantOf(n.input(1));
        // Rounded to f32 as a vector unit would hold it: the point of the rule is to be cheap.
        ir::Tensor r(c.dtype(), c.shape());
        for (int64_t i = 0; i < c.numel(); ++i)
            r.set(i, static_cast<double>(static_cast<float>(1.0 / c.at(i))));
        SX_ASSIGN(ir::Value * rv, addDerivedConstant(g, n.input(1)->name() + "_recip",
                                                     std::move(r)));
        rc.noteConstant(rv->name(), {&n});
        SX_ASSIGN(ir::Node * mul, replaceChain(g, {&n}, OpKind::Mul, {n.input(0), rv}, {},
                                               rc.createdBy()));
        (void)mul;
        return {};
    }
};

} // namespace

std::vector<std::unique_ptr<FusionRule>> groupRules() {
    std::vector<std::unique_ptr<FusionRule>> rules;
    rules.push_back(std::make_unique<FuseAttention>());
    // Late: the accuracy trades first (so a group records the rewritten op), then the groups.
    rules.push_back(std::make_unique<AttentionFastSoftmax>());
    rules.push_back(std::make_unique<DivToReciprocal>());
    rules.push_back(std::make_unique<FuseBatchNormChain>());
    rules.push_back(std::make_unique<FuseElementwiseChain>());
    rules.push_back(std::make_unique<FoldSqueezeExcite>());
    return rules;
}

} // namespace sextant::passes::fuse
