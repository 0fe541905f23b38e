// InstanceNormalization: the ONNX node suite only has opset-6 cases (skipped by the importer), so
// the kernel is checked here by hand-computed values.

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor f64t(std::vector<int64_t> shape, std::vector<double> v) { return Tensor::fromVector(std::move(shape), v); }

} // namespace

TEST(InstanceNormalizationKernel, NormalisesEachChannelOverItsSpatialDims) {
    // Channel 0: [1, 3] has mean 2, variance 1; channel 1: [4, 8] has mean 6, variance 4.
    auto y = runOne(OpKind::InstanceNormalization,
                    {f64t({1, 2, 2}, {1, 3, 4, 8}), f64t({2}, {2, 1}), f64t({2}, {0.5, 0})},
                    {{"epsilon", 0.0}});
    ASSERT_EQ(y.size(), 1u);
    ASSERT_EQ(y[0].shape(), (std::vector<int64_t>{1, 2, 2}));
    const std::vector<double> want{-1.5, 2.5, -1, 1};
    for (int64_t i = 0; i < 4; ++i)
        EXPECT_NEAR(y[0].at(i), want[static_cast<size_t>(i)], 1e-12) << "element " << i;
}

// A scale with one entry per channel too many: the run stops with an error that names the node
// and says how many entries scale and bias need, instead of reading past the channels.
TEST(InstanceNormalizationKernel, RejectsScaleOfTheWrongLength) {
    OneNode one = makeOneNode(OpKind::InstanceNormalization,
                              {f64t({1, 2, 2}, {1, 3, 4, 8}), f64t({3}, {1, 1, 1}), f64t({2}, {0, 0})}, {});
    auto types = one.graph->inferTypes();
    ASSERT_TRUE(types.ok()) << types.error().message;
    KernelContext ctx;
    ctx.compute = DType::F64;
    auto r = interpret(*one.graph, one.feeds, ctx);
    ASSERT_FALSE(r.ok());
    const std::string& message = r.error().message;
    EXPECT_NE(message.find("node 'n'"), std::string::npos) << message;
    EXPECT_NE(message.find("scale and bias must have 2 entries"), std::string::npos) << message;
}
