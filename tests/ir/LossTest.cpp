// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against values worked out by hand:
// each reduction, class weights, ignore_index, and a target that is not a class.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

// Log-probabilities of 2 samples over 3 classes; the targets pick -3 and -0.5.
Tensor logp() { return f64({2, 3}, {-1, -2, -3, -0.5, -1.5, -2.5}); }

} // namespace

TEST(NegativeLogLikelihoodLoss, Reductions) {
    auto none = runOne(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {2, 0})}, {{"reduction", std::string("none")}});
    ASSERT_EQ(none.size(), 1u);
    expectValues(none[0], {2}, {3.0, 0.5}, 0);
    auto sum = runOne(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {2, 0})}, {{"reduction", std::string("sum")}});
    ASSERT_EQ(sum.size(), 1u);
    expectValues(sum[0], {}, {3.5}, 0);
    auto mean = runOne(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {2, 0})});
    ASSERT_EQ(mean.size(), 1u);
    expectValues(mean[0], {}, {1.75}, 0);
}

TEST(NegativeLogLikelihoodLoss, WeightsAndIgnoredTargets) {
    // Weighted mean: (3 * 0.5 + 0.5 * 0.2) / (0.5 + 0.2).
    auto weighted = runOne(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {2, 0}), f64({3}, {0.2, 0.3, 0.5})});
    ASSERT_EQ(weighted.size(), 1u);
    expectValues(weighted[0], {}, {1.6 / 0.7}, 1e-15);
    // Class 2 ignored: the mean is over the one element left.
    auto ignored = runOne(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {2, 0})}, {{"ignore_index", int64_t{2}}});
    ASSERT_EQ(ignored.size(), 1u);
    expectValues(ignored[0], {}, {0.5}, 0);
    // A negative ignore_index is not a class, but ignored all the same.
    auto negative = runOne(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {-1, 1})},
                           {{"ignore_index", int64_t{-1}}, {"reduction", std::string("none")}});
    ASSERT_EQ(negative.size(), 1u);
    expectValues(negative[0], {2}, {0.0, 1.5}, 0);
}

TEST(NegativeLogLikelihoodLoss, SpatialDimsAfterTheClassDim) {
    // input [1, 2, 2]: classes along dim 1, two positions; targets 1 and 0.
    auto y = runOne(OpKind::NegativeLogLikelihoodLoss, {f64({1, 2, 2}, {-1, -2, -3, -4}), i64({1, 2}, {1, 0})},
                    {{"reduction", std::string("none")}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2}, {3.0, 2.0}, 0);
}

TEST(NegativeLogLikelihoodLoss, ATargetThatIsNoClassIsAnError) {
    OneNode one = makeOneNode(OpKind::NegativeLogLikelihoodLoss, {logp(), i64({2}, {3, 0})}, {});
    ASSERT_TRUE(one.graph->inferTypes().ok());
    auto r = interpret(*one.graph, one.feeds, KernelContext{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("target 3 at position 0 is not a class of the 3"), std::string::npos)
        << r.error().message;
}

TEST(SoftmaxCrossEntropyLoss, IsTheLossOfLogSoftmax) {
    // log(e + e^2 + e^3) = 3.4076059644443806: log_softmax([1, 2, 3]) and the loss of label 2.
    const double lse = 3.4076059644443806;
    auto y = runOne(OpKind::SoftmaxCrossEntropyLoss, {f64({1, 3}, {1, 2, 3}), i64({1}, {2})}, {}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {}, {lse - 3}, 1e-14);
    expectValues(y[1], {1, 3}, {1 - lse, 2 - lse, 3 - lse}, 1e-14);
}
