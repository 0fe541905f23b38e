// Gelu (opset 20) against values computed independently (Python's math.erf and math.tanh), and
// the facts its op-table row gives the compiler.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

const std::vector<double> kX = {-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0};

} // namespace

TEST(Gelu, ExactFormIsXTimesTheNormalCdf) {
    // 0.5 * x * (1 + erf(x / sqrt(2))); Gelu(1) is the normal CDF at 1.
    const std::vector<double> want = {
        -0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0.0,
        0.34573123063700656,  0.8413447460685429,   2.99595030590511};
    auto y = runOne(OpKind::Gelu, {f64({7}, kX)});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {7}, want, 1e-15);
    auto none = runOne(OpKind::Gelu, {f64({7}, kX)}, {{"approximate", std::string("none")}});
    ASSERT_EQ(none.size(), 1u);
    expectValues(none[0], {7}, want, 1e-15);
}

TEST(Gelu, FarBelowZeroKeepsItsTinyValue) {
    // -10 * Phi(-10) = -7.6e-23: a kernel computing 1 + erf(x) would return exactly 0.
    auto y = runOne(OpKind::Gelu, {f64({1}, {-10.0})});
    ASSERT_EQ(y.size(), 1u);
    const double got = y[0].toDoubles()[0];
    EXPECT_NEAR(got / -7.619853024160593e-23, 1.0, 1e-12) << got;
}

TEST(Gelu, TanhFormFollowsTheApproximation) {
    // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
    const std::vector<double> want = {
        -0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0.0,
        0.34571400982514394,    0.8411919906082768,   2.996362607918227};
    auto y = runOne(OpKind::Gelu, {f64({7}, kX)}, {{"approximate", std::string("tanh")}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {7}, want, 1e-15);
}

TEST(Gelu, Float32InputStaysFloat32) {
    auto y = runOne(OpKind::Gelu, {Tensor::fromVector<float>({2, 2}, {-1.0f, 0.0f, 1.0f, 2.0f})},
                    {}, 1, DType::F32);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::F32);
    expectValues(y[0], {2, 2}, {-0.15865525393145707, 0.0, 0.8413447460685429, 1.9544997361036416},
                 1e-6);
}

TEST(Gelu, UnknownApproximationAndIntegerInputAreRejected) {
    auto failure = [](const Tensor& x, AttributeMap attrs) {
        OneNode one = makeOneNode(OpKind::Gelu, {x}, std::move(attrs));
        if (Status st = one.graph->inferTypes(); !st.ok())
            return st.error().message;
        auto r = interpret(*one.graph, one.feeds, KernelContext{});
        return r.ok() ? std::string() : r.error().message;
    };
    const std::string approx = failure(f64({2}, {1, 2}), {{"approximate", std::string("erf")}});
    EXPECT_NE(approx.find("approximate"), std::string::npos) << approx;
    const std::string ints = failure(i64({2}, {1, 2}), {});
    EXPECT_NE(ints.find("gelu input must be a float tensor"), std::string::npos) << ints;
}

TEST(Gelu, RowTellsTheCompilerItIsATranscendentalElementwiseVectorOp) {
    const OpInfo& op = opInfo(OpKind::Gelu);
    EXPECT_EQ(findOp("", "Gelu"), OpKind::Gelu);
    EXPECT_EQ(op.cost, CostClass::Vector);
    EXPECT_EQ(op.work, WorkModel::Elementwise);
    EXPECT_EQ(op.layout, LayoutClass::Unary);       // stays in NC1HWC0 after a convolution
    EXPECT_EQ(op.f16Risk, F16Risk::Transcendental); // the precision pass keeps it in f32
    EXPECT_EQ(op.compare, CompareClass::Scaled);
}
