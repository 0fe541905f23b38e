// layout: puts the NPU's 2-D convolutions and the ops that follow them in the blocked NC1HWC0
// layout, in one forward sweep over the graph (producers first), so that a conversion back to
// plain NCHW happens only where the blocked region ends (a Transpose, Reshape, Gemm, graph
// output...) and never between two ops that can both read the blocked layout. Conversions
// therefore "sink" through elementwise, pooling and concat ops and a plain->blocked->plain
// pair around an op that could stay blocked never appears.
//
// Honest scope: the reference kernels compute on logical NCHW tensors, so the pass only
// annotates. Each blocked node gets attribute layout = "NC1HWC0" and its output value the
// type tag NC1HWC0 (not on graph outputs, which the user receives in plain layout); a plain
// node with a 4-D output that reads a blocked value gets layout = "NCHW" and an @NCHW output:
// that node is where the backend has to unblock, and GreyOps counts it as a layout conversion.
#include "Layout.h"

#include "PassContext.h"

#include <chrono>
#include <set>

namespace sextant::passes {

namespace {

bool isUnaryElementwise(ir::OpKind k) {
    using K = ir::OpKind;
    switch (k) {
    case K::Relu:
    case K::Sigmoid:
    case K::LeakyRelu:
    case K::Clip:
    case K::HardSigmoid:
    case K::HardSwish:
    case K::Tanh:
    case K::Abs:
    case K::Neg:
    case K::Exp:
    case K::Log:
    case K::Sqrt:
    case K::Elu:
    case K::Selu:
    case K::Celu:
    case K::Softplus:
    case K::Softsign:
    case K::Erf:
    case K::Reciprocal:
    case K::Floor:
    case K::Ceil:
    case K::Round:
    case K::ThresholdedRelu:
    case K::Shrink:
        return true;
    default:
        return false;
    }
}

bool isBinaryElementwise(ir::OpKind k) {
    using K = ir::OpKind;
    switch (k) {
    case K::Add:
    case K::Sub:
    case K::Mul:
    case K::Div:
    case K::Max:
    case K::Min:
    case K::Pow:
    case K::PRelu:
    case K::Sum:
    case K::Mean:
    case K::ElementwiseGroup:
        return true;
    default:
        return false;
    }
}

bool isConvFamily(ir::OpKind k) {
    return k == ir::OpKind::Conv || k == ir::OpKind::FusedConv || k == ir::OpKind::ConvTranspose;
}

bool isPooling(ir::OpKind k) {
    return k == ir::OpKind::MaxPool || k == ir::OpKind::AveragePool ||
           k == ir::OpKind::GlobalAveragePool || k == ir::OpKind::BatchNormalization;
}

bool isRank4(const ir::Value* v) {
    return v && v->type().rank() == 4;
}

class LayoutPass : public Pass {
public:
    std::string id() const override { return "layout"; }
    std::string summary() const override {
        return "assign the NPU's blocked NC1HWC0 layout to 2-D convolutions and the elementwise, "
               "pooling and concat ops they feed, so layout conversions happen only where the "
               "blocked region ends (annotation: tensors stay logical)";
    }
    std::vector<RuleDescription> describeRules() const override {
        return {{kAssignLayoutRule,
                 "put a Conv/FusedConv, or an op reading only NC1HWC0 activations (elementwise, "
                 "pooling, BatchNormalization, Concat), in NC1HWC0",
                 false}};
    }

    Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
        if (!ctx.isEnabled(kAssignLayoutRule))
            return false;
        auto t0 = std::chrono::steady_clock::now();
        bool changed = false;
        std::set<const ir::Value*> blocked; // values the NPU keeps in NC1HWC0
        for (ir::Node* n : graph.nodes()) {
            std::string why;
            const bool candidate = wantsBlocked(*n, blocked, why);
            if (!why.empty())
                ctx.reject(kAssignLayoutRule, n->name(), why);
            if (candidate && n->attrString(kLayoutAttr, "") != "NC1HWC0" &&
                !ctx.requestApplication(kAssignLayoutRule, n->name()))
                continue; // bisect limit: stays plain
            if (candidate) {
                blocked.insert(n->output(0));
                changed |= mark(*n, ir::LayoutKind::NC1HWC0);
            } else if (isRank4(n->output(0)) && readsBlocked(*n, blocked)) {
                changed |= mark(*n, ir::LayoutKind::NCHW);
            }
        }
        ctx.addRuleTime(kAssignLayoutRule, std::chrono::duration<double, std::milli>(
                                               std::chrono::steady_clock::now() - t0)
                                               .count());
        return changed;
    }

private:
    static bool readsBlocked(const ir::Node& n, const std::set<const ir::Value*>& blocked) {
        for (const ir::Value* v : n.inputs())
            if (v && blocked.count(v))
                return true;
        return false;
    }

    /// Sets the node attribute and, unless the value is a graph output, the output's type tag.
    static bool mark(ir::Node& n, ir::LayoutKind layout) {
        const std::string name(ir::layoutName(layout));
        bool changed = n.attrString(kLayoutAttr, "") != name;
        n.setAttr(kLayoutAttr, name);
        ir::Value* out = n.output(0);
        if (!out->isGraphOutput() && out->type().layout != layout) {
            ir::TensorType t = out->type();
            t.layout = layout;
            out->setType(std::move(t));
            changed = true;
        }
        return changed;
    }

    /// Whether `n` can run in NC1HWC0. `why` gets a rejection reason when the node is of a kind
    /// that could, but some condition fails (left empty for kinds the rule does not handle).
    static bool wantsBlocked(const ir::Node& n, const std::set<const ir::Value*>& blocked,
                             std::string& why) {
        const ir::OpKind k = n.kind();
        const bool conv = isConvFamily(k);
        if (!conv && !isUnaryElementwise(k) && !isBinaryElementwise(k) && !isPooling(k) &&
            k != ir::OpKind::Concat)
            return false;
        if (n.numOutputs() == 0 || !n.input(0))
            return false;
        // The activation operand of a conv, unary or pooling op is input 0; binary ops and fused
        // groups may read a constant first (scale * x + bias), checked operand by operand below.
        const bool firstIsActivation = conv || isUnaryElementwise(k) || isPooling(k);
        if (!isRank4(n.output(0)) || (firstIsActivation && !isRank4(n.input(0)))) {
            if (conv)
                why = "convolution is not 2-D (rank " + std::to_string(n.output(0)->type().rank()) +
                      "); only 2-D convolutions are blocked";
            return false;
        }
        if (n.numOutputs() > 1 && !n.output(1)->users().empty()) {
            why = "second output '" + n.output(1)->name() + "' is used";
            return false;
        }
        if (conv)
            return true;
        if (isUnaryElementwise(k) || isPooling(k)) {
            // Only worth it when the activation is already blocked; otherwise nothing to keep.
            return blocked.count(n.input(0)) != 0;
        }
        // Binary elementwise and Concat: every activation operand must be blocked (constants
        // are repacked at compile time). Silent when none is: nothing blocked to keep.
        bool anyBlocked = false;
        for (const ir::Value* v : n.inputs())
            anyBlocked |= v && blocked.count(v) != 0;
        if (!anyBlocked)
            return false;
        for (size_t i = 0; i < n.numInputs(); ++i) {
            const ir::Value* v = n.input(i);
            if (!v || v->isConstant())
                continue;
            if (!blocked.count(v)) {
                why = "operand " + std::to_string(i) + " '" + v->name() +
                      "' is a plain (not NC1HWC0) activation";
                return false;
            }
            if (k != ir::OpKind::Concat && v->type().dims() != n.output(0)->type().dims()) {
                why = "operand " + std::to_string(i) + " '" + v->name() +
                      "' is broadcast to the output shape";
                return false;
            }
        }
        // A channel Concat whose inputs are not multiples of C0 = 16 still writes NC1HWC0: the
        // concat is a copy either way and shifts the lanes while it copies, so no extra
        // conversion (BlazeFace pads 24 channels to 32 this way in every residual block).
        return true;
    }
};

} // namespace

std::unique_ptr<Pass> makeLayoutPass() {
    return std::make_unique<LayoutPass>();
}

} // namespace sextant::passes
