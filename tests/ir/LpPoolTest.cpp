// LpPool and GlobalLpPool against values computed independently (numpy: the padded window's
// (sum |x|^p)^(1/p)), with pads, strides and p of 2 and 3, float32, and rejected attributes.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

/// x = (arange(40) - 17) / 4 as [1, 2, 4, 5]: negative and positive values, so |x| matters.
Tensor ramp() {
    std::vector<double> v(40);
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = (static_cast<double>(i) - 17.0) / 4.0;
    return f64({1, 2, 4, 5}, v);
}

std::string failure(OpKind kind, const Tensor& x, AttributeMap attrs) {
    OneNode one = makeOneNode(kind, {x}, std::move(attrs));
    if (Status st = one.graph->inferTypes(); !st.ok())
        return st.error().message;
    auto r = interpret(*one.graph, one.feeds, KernelContext{});
    return r.ok() ? std::string() : r.error().message;
}

} // namespace

TEST(LpPool, TwoNormOverPaddedStridedWindows) {
    // kernel 2x3, strides 2x1, pads (top 1, left 1, bottom 0, right 1): zeros in the padding.
    auto y = runOne(OpKind::LpPool, {ramp()},
                    {{"kernel_shape", std::vector<int64_t>{2, 3}},
                     {"strides", std::vector<int64_t>{2, 1}},
                     {"pads", std::vector<int64_t>{1, 1, 0, 1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 2, 5},
                 {5.836308764964376, 6.937218462755804, 6.504805915628844, 6.072478900745559, 4.7762432936357,
                  4.677071733467427, 5.448623679425842, 4.866980583482946, 4.293891009329417, 3.2596012026013246,
                  1.25, 1.7677669529663689, 2.1937410968480306, 2.622022120425379, 2.3048861143232218,
                  5.645794895318107, 7.224091638399945, 7.8222439235810075, 8.422440263961509, 7.115124735378854},
                 1e-12);
}

TEST(LpPool, ThreeNorm) {
    auto y = runOne(OpKind::LpPool, {ramp()},
                    {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{1, 2}},
                     {"p", int64_t{3}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 2, 2},
                 {6.44417176781488, 5.521438365715662, 4.20305899598308, 3.3775700588670685, 5.521438365715662,
                  6.44417176781488, 7.874338568785734, 8.849344009597905},
                 1e-12);
}

TEST(LpPool, Float32StaysFloat32) {
    auto y = runOne(OpKind::LpPool, {Tensor::fromVector<float>({1, 1, 2, 2}, {3.0f, -4.0f, 0.0f, 0.0f})},
                    {{"kernel_shape", std::vector<int64_t>{2, 2}}}, 1, DType::F32);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::F32);
    expectValues(y[0], {1, 1, 1, 1}, {5.0}, 1e-6);
}

TEST(GlobalLpPool, NormOfEachPlane) {
    auto two = runOne(OpKind::GlobalLpPool, {ramp()});
    ASSERT_EQ(two.size(), 1u);
    expectValues(two[0], {1, 2, 1, 1}, {10.57709790065309, 15.390743971621385}, 1e-12);
    auto one = runOne(OpKind::GlobalLpPool, {ramp()}, {{"p", int64_t{1}}});
    ASSERT_EQ(one.size(), 1u);
    expectValues(one[0], {1, 2, 1, 1}, {39.0, 62.5}, 1e-12);
}

TEST(LpPool, BadAttributesAreRejected) {
    const std::string p0 = failure(OpKind::LpPool, ramp(), {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"p", int64_t{0}}});
    EXPECT_NE(p0.find("attribute 'p' has value 0"), std::string::npos) << p0;
    const std::string noKernel = failure(OpKind::LpPool, ramp(), {});
    EXPECT_NE(noKernel.find("kernel_shape"), std::string::npos) << noKernel;
    const std::string global = failure(OpKind::GlobalLpPool, ramp(), {{"p", int64_t{-2}}});
    EXPECT_NE(global.find("attribute 'p' has value -2"), std::string::npos) << global;
}

TEST(LpPool, RowsMakeThemPoolingOnTheVectorUnit) {
    EXPECT_EQ(findOp("", "LpPool"), OpKind::LpPool);
    EXPECT_EQ(findOp("", "GlobalLpPool"), OpKind::GlobalLpPool);
    EXPECT_EQ(opInfo(OpKind::LpPool).work, WorkModel::Pool);
    EXPECT_EQ(opInfo(OpKind::GlobalLpPool).work, WorkModel::GlobalPool);
    EXPECT_EQ(opInfo(OpKind::LpPool).cost, CostClass::Vector);
}
