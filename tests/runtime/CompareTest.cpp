#include "core/runtime/Compare.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sextant::runtime {
namespace {

ir::Tensor vec(std::vector<float> v) {
    return ir::Tensor::fromVector<float>({static_cast<int64_t>(v.size())}, v);
}

TEST(Compare, IdenticalTensorsPass) {
    ir::Tensor a = vec({0.1f, 0.7f, 0.2f});
    TensorComparison c = compareTensors("y", a, a, 0, 0);
    EXPECT_TRUE(c.pass);
    EXPECT_EQ(c.maxAbs, 0);
    EXPECT_EQ(c.maxRel, 0);
    EXPECT_EQ(c.rmse, 0);
    EXPECT_NEAR(c.cosine, 1.0, 1e-12);
    EXPECT_EQ(c.argmaxGot, 1);
    EXPECT_EQ(c.argmaxExpected, 1);
    EXPECT_EQ(formatComparison(c),
              "output 'y': max_abs 0.0e+00 max_rel 0.0e+00 cosine 1.000000 argmax 1/1 PASS");
}

TEST(Compare, StatisticsAreExact) {
    ir::Tensor expected = ir::Tensor::fromVector<double>({2, 2}, {1.0, -2.0, 4.0, 0.0});
    ir::Tensor got = ir::Tensor::fromVector<double>({2, 2}, {1.5, -2.0, 3.0, 0.0});
    TensorComparison c = compareTensors("t", got, expected, 0.1, 0.0);
    EXPECT_DOUBLE_EQ(c.maxAbs, 1.0);
    EXPECT_DOUBLE_EQ(c.maxRel, 0.5);           // 0.5 / 1.0 beats 1.0 / 4.0
    EXPECT_DOUBLE_EQ(c.meanAbs, 1.5 / 4);
    EXPECT_DOUBLE_EQ(c.rmse, std::sqrt((0.25 + 1.0) / 4));
    const double dot = 1.5 + 4.0 + 12.0;
    EXPECT_NEAR(c.cosine, dot / (std::sqrt(1.5 * 1.5 + 4 + 9) * std::sqrt(1 + 4 + 16)), 1e-12);
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.mismatches, 2);
    EXPECT_EQ(c.firstMismatch, 0);
    EXPECT_EQ(c.argmaxGot, 2);
    EXPECT_EQ(formatComparison(c), "output 't': max_abs 1.0e+00 max_rel 5.0e-01 cosine 0.977898 "
                                   "argmax 2/2 FAIL (2 elements out of tolerance, first at index 0)");
}

TEST(Compare, ToleranceIsAbsolutePlusRelative) {
    // |d| <= atol + rtol*|e|: with atol 1e-4, rtol 1e-3 and e = 10, up to 0.0101 passes.
    ir::Tensor e = vec({10.0f});
    EXPECT_TRUE(compareTensors("y", vec({10.01f}), e, 1e-4, 1e-3).pass);
    EXPECT_FALSE(compareTensors("y", vec({10.02f}), e, 1e-4, 1e-3).pass);
    ir::Tensor zero = vec({0.0f});
    EXPECT_TRUE(compareTensors("y", vec({5e-5f}), zero, 1e-4, 1e-3).pass);
    EXPECT_FALSE(compareTensors("y", vec({2e-4f}), zero, 1e-4, 1e-3).pass);
}

TEST(Compare, ShapeMismatchFailsWithAReason) {
    ir::Tensor a = ir::Tensor(ir::DType::F32, {1, 10});
    ir::Tensor b = ir::Tensor(ir::DType::F32, {10});
    TensorComparison c = compareTensors("probs", a, b, 1, 1);
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.problem, "shape f32[1,10] differs from expected f32[10]");
    EXPECT_EQ(formatComparison(c),
              "output 'probs': FAIL (shape f32[1,10] differs from expected f32[10])");
}

TEST(Compare, NonFiniteValues) {
    const float nan = std::nanf("");
    const float inf = INFINITY;
    EXPECT_TRUE(compareTensors("y", vec({nan, inf, 1}), vec({nan, inf, 1}), 0, 0).pass);
    TensorComparison c = compareTensors("y", vec({nan, 1}), vec({1, 1}), 1e-4, 1e-3);
    EXPECT_FALSE(c.pass);
    EXPECT_TRUE(std::isinf(c.maxAbs));
    EXPECT_FALSE(compareTensors("y", vec({inf}), vec({-inf}), 1, 1).pass);
    EXPECT_FALSE(compareTensors("y", vec({inf}), vec({1e30f}), 1, 1).pass);
}

TEST(Compare, CosineOfZeroTensors) {
    EXPECT_EQ(compareTensors("y", vec({0, 0}), vec({0, 0}), 0, 0).cosine, 1.0);
    EXPECT_EQ(compareTensors("y", vec({0, 0}), vec({1, 0}), 0, 0).cosine, 0.0);
    EXPECT_NEAR(compareTensors("y", vec({-1, 0}), vec({1, 0}), 0, 0).cosine, -1.0, 1e-12);
}

TEST(Compare, NothingFiniteToCompareIsNoSimilarity) {
    // An NPU result of NaNs against finite probabilities: no pair is finite, so the cosine of
    // "the finite pairs" would be that of two empty vectors. It reads 0, not 1.
    const float nan = std::nanf("");
    const TensorComparison c = compareTensors("p", vec({nan, nan}), vec({0.5f, 0.5f}), 1e-4, 1e-3);
    EXPECT_FALSE(c.pass);
    EXPECT_EQ(c.cosine, 0.0);
    EXPECT_TRUE(c.gotNonFinite);
    EXPECT_EQ(c.expectedMaxAbs, 0.5);
}

TEST(Compare, NamesWhereF16RanOutOfRange) {
    // The first value whose computed tensor holds an infinity where float64 is finite and past
    // 65504; an infinity where float64 is small (what follows the overflow) is not it.
    ValueDrift d;
    d.values.push_back(compareTensors("x", vec({1, 2}), vec({1, 2}), 1e-4, 1e-3));
    d.values.push_back(compareTensors("y", vec({INFINITY, 3}), vec({1.2e5f, 3}), 1e-4, 1e-3));
    d.values.push_back(compareTensors("z", vec({INFINITY, 3}), vec({7e4f, 3}), 1e-4, 1e-3));
    d.nodes = {"", "conv", "relu"};
    EXPECT_EQ(f16OverflowNote(d), "f16 overflows first at 'y' (node 'conv'): the float64 reference reaches 1.2e+05 "
                                  "there and the computed value holds an infinity or NaN (the largest f16 is 65504)");
    // Large but held (f16 rounds 6e4 to a finite value): nothing to say.
    ValueDrift held;
    held.values.push_back(compareTensors("y", vec({60000, 3}), vec({6e4f, 3}), 1e-4, 1e-3));
    held.nodes = {"conv"};
    EXPECT_EQ(f16OverflowNote(held), "");
    // An infinity where float64 stays in range is another problem, not f16's range.
    ValueDrift wrong;
    wrong.values.push_back(compareTensors("y", vec({INFINITY, 3}), vec({2, 3}), 1e-4, 1e-3));
    wrong.nodes = {"conv"};
    EXPECT_EQ(f16OverflowNote(wrong), "");
}

TEST(Compare, MixedFloatDTypes) {
    ir::Tensor f32 = vec({0.25f, 0.5f});
    ir::Tensor f64 = ir::Tensor::fromVector<double>({2}, {0.25, 0.5});
    TensorComparison c = compareTensors("y", f32, f64, 0, 0);
    EXPECT_TRUE(c.pass) << formatComparison(c);
}

} // namespace
} // namespace sextant::runtime

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/runtime/ReferenceExecutor.h"

#include <filesystem>

namespace sextant::runtime {
namespace {

const std::filesystem::path kSample = std::filesystem::path(SEXTANT_SOURCE_DIR) / "samples";

TEST(CompareValues, FindsWhereTheNumbersStartToDrift) {
    auto graph = frontend::importOnnx((kSample / "residual_cnn.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    auto inputs = frontend::loadTestDataSet((kSample / "residual_cnn").string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    std::map<std::string, ir::Tensor> f64, f32;
    ASSERT_TRUE(runReference(**graph, *inputs, ir::DType::F64, &f64).ok());
    ASSERT_TRUE(runReference(**graph, *inputs, ir::DType::F32, &f32).ok());

    // Every computed value is compared, in computation order, starting with the input.
    ValueDrift loose = compareValues(**graph, f32, f64, 1e-4, 1e-3);
    ASSERT_EQ(loose.values.size(), 1 + (*graph)->numNodes());
    EXPECT_EQ(loose.values.front().name, "image");
    EXPECT_EQ(loose.values.back().name, "probs");
    EXPECT_EQ(loose.firstFailing, -1) << formatComparison(loose.values[loose.firstFailing]);

    // float32 rounding shows first in the first convolution; the cast input is exact.
    ValueDrift tight = compareValues(**graph, f32, f64, 0, 1e-12);
    EXPECT_TRUE(tight.values.front().pass);
    EXPECT_EQ(tight.firstFailingNode, "block1_conv");

    // A corrupted intermediate is found by the node that made it.
    std::map<std::string, ir::Tensor> broken = f64;
    ir::Tensor bad = broken.at("block2_bn_out").clone();
    bad.set(5, bad.at(5) + 1.0);
    broken["block2_bn_out"] = bad;
    ValueDrift found = compareValues(**graph, broken, f64, 1e-4, 1e-3);
    EXPECT_EQ(found.firstFailingNode, "block2_bn");
    ASSERT_GE(found.firstFailing, 0);
    EXPECT_EQ(found.values[found.firstFailing].name, "block2_bn_out");
    EXPECT_EQ(found.values[found.firstFailing].firstMismatch, 5);
}

} // namespace
} // namespace sextant::runtime
