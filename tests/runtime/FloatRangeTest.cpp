// FloatRangeWatch tells a model float32 cannot compute from a float32 kernel that is wrong: the
// first value that overflows, and the Softmax whose logits float32 cannot resolve.
#include "core/ir/Parser.h"
#include "core/runtime/FloatRange.h"
#include "core/runtime/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sextant::runtime {
namespace {

/// Runs `text` in float32 on one input [1,4] holding `input`, watched.
FloatRangeWatch runWatched(const char* text, const std::vector<float>& input) {
    auto graph = ir::parseGraph(text);
    EXPECT_TRUE(graph.ok()) << graph.error().message;
    FloatRangeWatch watch;
    if (!graph.ok())
        return watch;
    std::vector<ir::Tensor> inputs{ir::Tensor::fromVector<float>({1, 4}, input)};
    auto out = runReference(**graph, inputs, ir::DType::F32, nullptr, watch.observer());
    EXPECT_TRUE(out.ok()) << out.error().message;
    return watch;
}

constexpr const char* kScaledSoftmax = R"(graph @g(%x: f32[1,4]) -> (%p: f32[1,4]) {
  %k = const f32[1] [SCALE]
  %y: f32[1,4] = Mul(%x, %k) @scale
  %z: f32[1,4] = Mul(%y, %k) @square
  %p: f32[1,4] = Softmax(%z) {axis = 1} @softmax
  return %p
}
)";

std::string withScale(const char* scale) {
    std::string text = kScaledSoftmax;
    text.replace(text.find("SCALE"), 5, scale);
    return text;
}

TEST(FloatRange, OrdinaryLogitsGiveNoFinding) {
    FloatRangeWatch w = runWatched(withScale("3.0").c_str(), {1, 2, 3, 4}); // logits up to 36
    EXPECT_FALSE(w.firstOverflow());
    EXPECT_TRUE(w.unresolved().empty());
}

TEST(FloatRange, LogitsPastFloat32ResolutionNameTheSoftmaxAndTheSpacing) {
    // Logits up to 4e10: float32 numbers there are 4096 apart.
    FloatRangeWatch w = runWatched(withScale("1e5").c_str(), {1, 2, 3, 4});
    EXPECT_FALSE(w.firstOverflow());
    ASSERT_EQ(w.unresolved().size(), 1u);
    const FloatRangeFinding& f = w.unresolved()[0];
    EXPECT_EQ(f.kind, FloatRangeFinding::Kind::Unresolved);
    EXPECT_EQ(f.node, "softmax");
    EXPECT_EQ(f.op, "Softmax");
    EXPECT_EQ(f.value, "z");
    EXPECT_NEAR(f.magnitude, 4e10, 4e10 * 1e-6);
    EXPECT_EQ(f.spacing, 4096.0);
    EXPECT_EQ(formatFinding(f), "float32 cannot resolve the logits of Softmax 'softmax': 'z' reaches 4e+10, "
                                "where float32 numbers are 4096 apart, so rounding alone decides its "
                                "outputs (float64 resolves them)");
}

TEST(FloatRange, ResolutionLimitIsWhereHalfTheSpacingPassesTheTolerance) {
    // 2^14 = 16384: spacing 2^-9, half of it just under 1e-3. 2^15: half the spacing is 2e-3.
    EXPECT_TRUE(runWatched(withScale("1.0").c_str(), {1, 2, 3, 16384}).unresolved().empty());
    EXPECT_EQ(runWatched(withScale("1.0").c_str(), {1, 2, 3, 32768}).unresolved().size(), 1u);
    EXPECT_EQ(float32Spacing(16384.0), 1.0 / 512);
    EXPECT_EQ(float32Spacing(-16384.0), 1.0 / 512);
}

TEST(FloatRange, FirstOverflowIsTheNodeWhoseFiniteInputsGiveAnInfinity) {
    // x * 1e20 is finite (4e20); squaring it again passes 3.4e38 at 'square', and the Softmax of
    // infinities is NaN, which is not a second overflow.
    FloatRangeWatch w = runWatched(withScale("1e20").c_str(), {1, 2, 3, 4});
    ASSERT_TRUE(w.firstOverflow());
    const FloatRangeFinding& f = *w.firstOverflow();
    EXPECT_EQ(f.kind, FloatRangeFinding::Kind::Overflow);
    EXPECT_EQ(f.node, "square");
    EXPECT_EQ(f.op, "Mul");
    EXPECT_EQ(f.value, "z");
    EXPECT_NEAR(f.magnitude, 4e20, 4e20 * 1e-6);
    EXPECT_EQ(formatFinding(f), "float32 overflows first at 'z' (Mul node 'square'): its inputs reach 4e+20 and "
                                "it holds an infinity (the largest float32 is 3.4e+38)");
    EXPECT_TRUE(w.unresolved().empty()) << "the softmax read infinities: that is the overflow, not resolution";
    EXPECT_EQ(w.findings().size(), 1u);
}

TEST(FloatRange, Float64RunsAreNotJudged) {
    auto graph = ir::parseGraph(withScale("1e5").c_str());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    FloatRangeWatch watch;
    std::vector<ir::Tensor> inputs{ir::Tensor::fromVector<float>({1, 4}, {1, 2, 3, 4})};
    ASSERT_TRUE(runReference(**graph, inputs, ir::DType::F64, nullptr, watch.observer()).ok());
    EXPECT_TRUE(watch.findings().empty());
}

} // namespace
} // namespace sextant::runtime
