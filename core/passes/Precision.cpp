// precision: the NPU's cube unit multiplies f16 and accumulates in f32; its vector unit runs
// f16 lanes twice as wide as f32 ones. This pass sets the precision each compute node runs in
// (Node::precision: F16AccF32 | F16 | F32, printed precision = "f16-acc-f32" | "f16" | "f32"),
// keeping the ops whose error f16 would blow up (exponentials, normalisation statistics,
// reductions) in f32.
#include "Precision.h"

#include "PassContext.h"

#include "core/ir/FusedBody.h"

#include <chrono>

namespace sextant::passes {

namespace {

/// Why an op must stay in f32 (the op table's F16Risk), or empty when f16 is fine for it.
std::string criticalReason(ir::F16Risk risk) {
    switch (risk) {
    case ir::F16Risk::Safe: return {};
    case ir::F16Risk::Softmax:
        return "softmax: exp and the normalising sum overflow or lose mass in f16";
    case ir::F16Risk::LayerNorm: return "layernorm: mean and variance reductions need f32";
    case ir::F16Risk::Reduction:
        return "reduction: an f16 accumulator loses precision over long axes";
    case ir::F16Risk::Transcendental:
        return "exp/log/pow/sqrt/reciprocal/erf: f16 range and relative error are too coarse";
    case ir::F16Risk::Lrn: return "lrn: sum of squares across channels needs f32";
    case ir::F16Risk::BatchNorm:
        return "batchnorm: raw running statistics (variance, mean) and 1/sqrt(var + eps) leave f16's "
               "range and precision";
    }
    return {};
}

/// A fused elementwise group inherits the most demanding precision of its body: the first step
/// whose op the table marks Transcendental keeps the group in f32.
std::string groupReason(const ir::Node& n) {
    const ir::FusedBody* body = n.body();
    if (!body)
        return {};
    for (const ir::BodyStep& step : body->steps)
        if (ir::opInfo(step.op).f16Risk == ir::F16Risk::Transcendental)
            return "group contains " + std::string(ir::opInfo(step.op).name) + ", kept in f32";
    return {};
}

/// Why an op at the edge of a quantized region (QDQ models) stays in f32, or empty: it is a
/// DequantizeLinear, it reads a DequantizeLinear's output, or a QuantizeLinear reads its output.
/// (A QuantizeLinear itself writes integers: no precision to choose.) Those values are int8 steps
/// times a scale, exact in f32 and not in f16, and f16's rounding would move the next
/// QuantizeLinear's result by whole steps, compounding layer after layer (BlazeFace's QDQ version
/// ends 20 steps off in f16).
/// Layout conversions (the layout pass's TransData) move values without changing them: the
/// walks below look through them.
bool isLayoutConversion(const ir::Node* n) { return n && n->info().grey == ir::GreyClass::LayoutConversion; }

/// Whether `n` quantizes (or dequantizes, `op`) its input `v` in a step: a QuantizeLinear or
/// DequantizeLinear itself, or an ElementwiseGroup with such a step on that input.
bool stepOnInput(const ir::Node& n, const ir::Value* v, ir::OpKind op) {
    if (n.kind() == op)
        return n.input(0) == v;
    const ir::FusedBody* body = n.kind() == ir::OpKind::ElementwiseGroup ? n.body() : nullptr;
    if (!body)
        return false;
    for (size_t k = 0; k < n.numInputs(); ++k)
        if (n.input(k) == v)
            for (const ir::BodyStep& step : body->steps)
                if (step.op == op && !step.operands.empty() &&
                    step.operands[0].kind == ir::BodyOperand::Kind::Input && step.operands[0].index == k)
                    return true;
    return false;
}

/// Whether `n`'s result is dequantized int8: a DequantizeLinear, or a group whose last step is one.
bool dequantizes(const ir::Node* n) {
    if (!n)
        return false;
    if (n->kind() == ir::OpKind::DequantizeLinear)
        return true;
    const ir::FusedBody* body = n->kind() == ir::OpKind::ElementwiseGroup ? n->body() : nullptr;
    return body && !body->steps.empty() && body->steps.back().op == ir::OpKind::DequantizeLinear;
}

bool feedsQuantize(const ir::Value* v, int depth) {
    for (const ir::Node* u : v->users()) {
        if (stepOnInput(*u, v, ir::OpKind::QuantizeLinear))
            return true;
        if (depth < 4 && isLayoutConversion(u) && u->numOutputs() > 0 && u->output(0) &&
            feedsQuantize(u->output(0), depth + 1))
            return true;
    }
    return false;
}

std::string quantizedReason(const ir::Node& n) {
    if (n.kind() == ir::OpKind::DequantizeLinear)
        return "dequantizes int8: (x - zero point) * scale is exact in f32, not in f16";
    if (const ir::FusedBody* body = n.kind() == ir::OpKind::ElementwiseGroup ? n.body() : nullptr)
        for (const ir::BodyStep& step : body->steps)
            if (step.op == ir::OpKind::DequantizeLinear || step.op == ir::OpKind::QuantizeLinear)
                return "group " + std::string(step.op == ir::OpKind::DequantizeLinear ? "dequantizes" : "quantizes") +
                       " int8 in a step: f16 would move the values off their quantization steps";
    for (const ir::Value* v : n.inputs()) {
        const ir::Value* from = v;
        for (int depth = 0; from && depth < 4 && isLayoutConversion(from->producer()); ++depth)
            from = from->producer()->numInputs() > 0 ? from->producer()->input(0) : nullptr;
        if (from && dequantizes(from->producer()))
            return "reads '" + from->name() + "', dequantized int8: f16 would move its values off their quantization steps";
    }
    for (const ir::Value* o : n.outputs())
        if (o && feedsQuantize(o, 0))
            return "feeds a QuantizeLinear: f16 rounding would move its result by whole steps";
    return {};
}

class PrecisionPass : public Pass {
public:
    std::string id() const override { return "precision"; }
    std::string summary() const override {
        return "mark each compute node's NPU precision: cube ops f16 with f32 accumulation, "
               "vector ops f16, accuracy-critical ops (softmax, norms, reductions, exp/log) f32";
    }
    std::vector<RuleDescription> describeRules() const override {
        return {{kAssignPrecisionRule,
                 "mark cube ops precision=f16-acc-f32 and vector ops precision=f16", false},
                {kKeepF32Rule,
                 "keep Softmax, LayerNormalization, BatchNormalization, reductions, "
                 "Exp/Log/Pow/Sqrt/Reciprocal/Erf and groups containing them at precision=f32 "
                 "(disabling it lets them run f16)",
                 false},
                {kKeepF32QuantizedRule,
                 "keep ops that read a DequantizeLinear or feed a QuantizeLinear at precision=f32 "
                 "(dequantized int8 values are exact in f32; f16 moves the requantised steps)",
                 false}};
    }

    Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
        const bool assign = ctx.isEnabled(kAssignPrecisionRule);
        const bool keep = ctx.isEnabled(kKeepF32Rule);
        const bool keepQuantized = ctx.isEnabled(kKeepF32QuantizedRule);
        if (!assign && !keep && !keepQuantized)
            return false;
        auto t0 = std::chrono::steady_clock::now();
        bool changed = false;
        for (ir::Node* n : graph.nodes()) {
            const ir::CostClass cost = n->info().cost;
            if (cost != ir::CostClass::Cube && cost != ir::CostClass::Vector)
                continue;
            if (n->numOutputs() == 0 || !ir::isFloat(n->output(0)->type().dtype))
                continue; // integer and boolean ops have no precision choice
            std::string why =
                cost == ir::CostClass::Vector ? criticalReason(n->info().f16Risk) : "";
            if (why.empty() && n->kind() == ir::OpKind::ElementwiseGroup)
                why = groupReason(*n);
            ir::Precision want = ir::Precision::Unset;
            const char* rule = kAssignPrecisionRule;
            const std::string quantized = keepQuantized && (why.empty() || !keep) ? quantizedReason(*n) : "";
            if (!why.empty() && keep) {
                want = ir::Precision::F32;
                rule = kKeepF32Rule;
            } else if (!quantized.empty()) {
                want = ir::Precision::F32;
                rule = kKeepF32QuantizedRule;
            } else if (assign) {
                // The target's policy (PipelineConfig, copied from the target's JSON).
                const PipelineConfig& cfg = ctx.config();
                if (cost == ir::CostClass::Cube)
                    want = cfg.cubeInputs == ir::Precision::F32 ? ir::Precision::F32
                                                                : ir::Precision::F16AccF32;
                else
                    want = cfg.vectorPrecision == ir::Precision::F32 ? ir::Precision::F32
                                                                     : ir::Precision::F16;
            } else {
                continue;
            }
            if (n->precision() == want)
                continue;
            if (!ctx.requestApplication(rule, n->name()))
                continue;
            n->setPrecision(want);
            changed = true;
        }
        const double ms = millisSince(t0);
        ctx.addRuleTime(assign ? kAssignPrecisionRule : kKeepF32Rule, ms);
        return changed;
    }
};

} // namespace

std::unique_ptr<Pass> makePrecisionPass() {
    return std::make_unique<PrecisionPass>();
}

} // namespace sextant::passes
