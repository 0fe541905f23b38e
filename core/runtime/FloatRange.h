#pragma once

// What a float32 run could not represent. A float32 result that differs from a float64 one is
// either a bug or arithmetic that float32 cannot carry; this tells the two apart while the run
// goes, at no memory cost: it names the first value that overflows float32's range, and every
// Softmax whose logits are so large that float32's own rounding of them decides its outputs.
//
// onnx-light's SqueezeNet is the example that led here: its generated weights grow the logits to
// about 9.5e9, where neighbouring float32 numbers are 1024 apart, so the float32 probabilities are
// whatever the rounding of each channel's sum makes them. OpenBLAS kernels that round every
// channel alike give onnxruntime's uniform 0.001; others give a different argmax. Every product
// still agrees with float64 to within 5e-6 of its largest value: the products are right, the model is not
// computable in float32.

#include "core/ir/Graph.h"
#include "core/ir/OpRegistry.h"
#include "core/ir/Tensor.h"

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sextant::runtime {

/// One thing float32 could not carry, and where.
struct FloatRangeFinding {
    enum class Kind {
        Overflow,   ///< a node's output holds an infinity though its float inputs are all finite
        Unresolved, ///< a Softmax/LogSoftmax input so large that rounding moves its outputs past 0.1 %
    };
    Kind kind = Kind::Overflow;
    std::string node;     ///< the node's name
    std::string op;       ///< its op type ("Conv", "Softmax")
    std::string value;    ///< Overflow: the output that holds an infinity; Unresolved: the logits
    double magnitude = 0; ///< Overflow: the largest |input|; Unresolved: the largest |logit|
    double spacing = 0;   ///< the distance between neighbouring float32 numbers at `magnitude`
};

/// The relative change of a probability that makes a Softmax's float32 result meaningless: the
/// comparisons' own relative tolerance (1e-3). Half the float32 spacing of the largest logit is the
/// least error its rounding adds to every logit, and a logit error d moves the outputs by about d.
constexpr double kSoftmaxResolution = 1e-3;

/// Watches a reference run (pass observer() to runReference) and keeps the first overflow and each
/// unresolved Softmax, in the order the nodes ran. Only float32 values are looked at.
class FloatRangeWatch {
public:
    /// The callback for runReference / ir::KernelContext::onNode. It refers to this object, which
    /// must outlive the run.
    decltype(ir::KernelContext::onNode) observer();

    /// The first value that overflowed, if any.
    const std::optional<FloatRangeFinding>& firstOverflow() const { return m_overflow; }
    /// Every Softmax/LogSoftmax whose logits float32 cannot resolve, in run order.
    const std::vector<FloatRangeFinding>& unresolved() const { return m_unresolved; }
    /// Both of the above, overflow first.
    std::vector<FloatRangeFinding> findings() const;

private:
    void observe(const ir::Node& node, std::span<const ir::Tensor> inputs, std::span<const ir::Tensor> outputs);

    std::optional<FloatRangeFinding> m_overflow;
    std::vector<FloatRangeFinding> m_unresolved;
};

/// The distance from |x| to the next larger float32 (inf for values past float32's range).
double float32Spacing(double x);

/// One line for a user, starting "float32 ...", e.g. "float32 cannot resolve the logits of
/// Softmax 'n65': 'r65' reaches 9.5e+09, where float32 numbers are 1024 apart; rounding alone
/// decides its outputs (float64 resolves them)".
std::string formatFinding(const FloatRangeFinding& finding);

} // namespace sextant::runtime
