#include "FloatRange.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace sextant::runtime {

namespace {

struct Extent {
    double maxAbs = 0;   ///< over the finite elements
    bool infinite = false;
};

Extent extentOf(const ir::Tensor& t) {
    Extent e;
    if (!t.valid() || t.dtype() != ir::DType::F32)
        return e;
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
        const float v = p[i];
        if (std::isinf(v))
            e.infinite = true;
        else if (std::isfinite(v))
            e.maxAbs = std::max(e.maxAbs, static_cast<double>(std::fabs(v)));
    }
    return e;
}

bool isSoftmaxLike(ir::OpKind kind) { return kind == ir::OpKind::Softmax || kind == ir::OpKind::LogSoftmax; }

} // namespace

double float32Spacing(double x) {
    const float f = static_cast<float>(std::fabs(x));
    if (!std::isfinite(f))
        return std::numeric_limits<double>::infinity();
    return static_cast<double>(std::nextafter(f, std::numeric_limits<float>::infinity())) - static_cast<double>(f);
}

decltype(ir::KernelContext::onNode) FloatRangeWatch::observer() {
    return [this](const ir::Node& node, std::span<const ir::Tensor> inputs, std::span<const ir::Tensor> outputs) {
        observe(node, inputs, outputs);
    };
}

void FloatRangeWatch::observe(const ir::Node& node, std::span<const ir::Tensor> inputs,
                              std::span<const ir::Tensor> outputs) {
    // Overflow: an output holds an infinity and no float input does. Outputs are scanned first, so
    // a run without an infinity reads each value once.
    if (!m_overflow) {
        for (size_t i = 0; i < outputs.size() && i < node.outputs().size(); ++i) {
            if (!extentOf(outputs[i]).infinite)
                continue;
            double inputMax = 0;
            bool inputInfinite = false;
            for (const ir::Tensor& t : inputs) {
                const Extent e = extentOf(t);
                inputMax = std::max(inputMax, e.maxAbs);
                inputInfinite = inputInfinite || e.infinite;
            }
            if (!inputInfinite)
                m_overflow = FloatRangeFinding{FloatRangeFinding::Kind::Overflow, node.name(),
                                               std::string(node.info().name), node.output(i)->name(), inputMax,
                                               float32Spacing(inputMax)};
            break;
        }
    }
    // Unresolved: half the spacing at the largest logit is the least error rounding put in every
    // logit, and it moves the probabilities by about as much.
    if (!isSoftmaxLike(node.kind()) || inputs.empty() || inputs[0].dtype() != ir::DType::F32)
        return;
    const Extent logits = extentOf(inputs[0]);
    const double spacing = float32Spacing(logits.maxAbs);
    if (logits.infinite || spacing / 2 <= kSoftmaxResolution)
        return;
    const ir::Value* in = node.input(0);
    m_unresolved.push_back(FloatRangeFinding{FloatRangeFinding::Kind::Unresolved, node.name(),
                                             std::string(node.info().name), in ? in->name() : std::string(),
                                             logits.maxAbs, spacing});
}

std::vector<FloatRangeFinding> FloatRangeWatch::findings() const {
    std::vector<FloatRangeFinding> all;
    if (m_overflow)
        all.push_back(*m_overflow);
    all.insert(all.end(), m_unresolved.begin(), m_unresolved.end());
    return all;
}

std::string formatFinding(const FloatRangeFinding& f) {
    char magnitude[32], spacing[32];
    std::snprintf(magnitude, sizeof magnitude, "%.2g", f.magnitude);
    // Spacings are powers of two: whole ones below 1e5 read best as they are (1024), others short.
    if (f.spacing >= 1 && f.spacing < 1e5)
        std::snprintf(spacing, sizeof spacing, "%.0f", f.spacing);
    else
        std::snprintf(spacing, sizeof spacing, "%.2g", f.spacing);
    switch (f.kind) {
    case FloatRangeFinding::Kind::Overflow:
        return "float32 overflows first at '" + f.value + "' (" + f.op + " node '" + f.node +
               "'): its inputs reach " + magnitude + " and it holds an infinity (the largest float32 is 3.4e+38)";
    case FloatRangeFinding::Kind::Unresolved:
        return "float32 cannot resolve the logits of " + f.op + " '" + f.node + "': '" + f.value + "' reaches " +
               magnitude + ", where float32 numbers are " + spacing +
               " apart, so rounding alone decides its outputs (float64 resolves them)";
    }
    return {};
}

} // namespace sextant::runtime
