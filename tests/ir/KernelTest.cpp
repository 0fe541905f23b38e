// Reference kernels against hand-computed values.

#include "TestUtil.h"

#include <cmath>
#include <random>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor grid3x3() { return f64({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }
Tensor ones2x2() { return f64({1, 1, 2, 2}, {1, 1, 1, 1}); }

Tensor randomTensor(std::vector<int64_t> shape, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    Tensor t(DType::F64, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, dist(rng));
    return t;
}

} // namespace

TEST(ConvKernel, ValidWindowSums) {
    auto y = runOne(OpKind::Conv, {grid3x3(), ones2x2()});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST(ConvKernel, PadsAndStrides) {
    auto y = runOne(OpKind::Conv, {grid3x3(), ones2x2()},
                    {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 2, 2}, {1, 5, 11, 28});
}

TEST(ConvKernel, AutoPadSameUpperAndLower) {
    auto up = runOne(OpKind::Conv, {grid3x3(), ones2x2()}, {{"auto_pad", std::string("SAME_UPPER")}});
    ASSERT_EQ(up.size(), 1u);
    expectValues(up[0], {1, 1, 3, 3}, {12, 16, 9, 24, 28, 15, 15, 17, 9});
    auto low = runOne(OpKind::Conv, {grid3x3(), ones2x2()}, {{"auto_pad", std::string("SAME_LOWER")}});
    ASSERT_EQ(low.size(), 1u);
    expectValues(low[0], {1, 1, 3, 3}, {1, 3, 5, 5, 12, 16, 11, 24, 28});
}

TEST(ConvKernel, Dilations) {
    auto y = runOne(OpKind::Conv, {grid3x3(), ones2x2()}, {{"dilations", std::vector<int64_t>{2, 2}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 1, 1}, {20});
}

TEST(ConvKernel, GroupsWithBias) {
    Tensor x = f64({1, 2, 1, 2}, {1, 2, 3, 4});
    Tensor w = f64({2, 1, 1, 1}, {2, 3});
    Tensor b = f64({2}, {1, -1});
    auto y = runOne(OpKind::Conv, {x, w, b}, {{"group", int64_t{2}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 1, 2}, {3, 5, 8, 11});
}

TEST(ConvKernel, OneDimensional) {
    Tensor x = f64({1, 1, 5}, {1, 2, 3, 4, 5});
    Tensor w = f64({1, 1, 3}, {1, 0, -1});
    auto y = runOne(OpKind::Conv, {x, w}, {{"pads", std::vector<int64_t>{1, 1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 5}, {-2, -2, -2, -2, 4});
}

TEST(ConvKernel, ChannelMismatchIsNamed) {
    OneNode one = makeOneNode(OpKind::Conv, {Tensor(DType::F32, {1, 3, 4, 4}), Tensor(DType::F32, {8, 1, 3, 3})}, {});
    Status st = one.graph->inferTypes();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("conv input has 3 channels but weight expects 1 (group 1)"),
              std::string::npos)
        << st.error().message;
    EXPECT_NE(st.error().message.find("node 'n'"), std::string::npos);
}

TEST(PoolKernel, MaxPoolPadsAndCeil) {
    auto padded = runOne(OpKind::MaxPool, {grid3x3()},
                         {{"kernel_shape", std::vector<int64_t>{2, 2}},
                          {"strides", std::vector<int64_t>{2, 2}},
                          {"pads", std::vector<int64_t>{0, 0, 1, 1}}});
    ASSERT_EQ(padded.size(), 1u);
    expectValues(padded[0], {1, 1, 2, 2}, {5, 6, 8, 9});
    auto ceil = runOne(OpKind::MaxPool, {grid3x3()},
                       {{"kernel_shape", std::vector<int64_t>{2, 2}},
                        {"strides", std::vector<int64_t>{2, 2}},
                        {"ceil_mode", int64_t{1}}});
    ASSERT_EQ(ceil.size(), 1u);
    expectValues(ceil[0], {1, 1, 2, 2}, {5, 6, 8, 9});
    auto floor = runOne(OpKind::MaxPool, {grid3x3()},
                        {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    ASSERT_EQ(floor.size(), 1u);
    expectValues(floor[0], {1, 1, 1, 1}, {5});
}

TEST(PoolKernel, MaxPoolIndices) {
    Tensor x = f64({1, 1, 2, 2}, {3, 9, 1, 2});
    auto y = runOne(OpKind::MaxPool, {x}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {1, 1, 1, 1}, {9});
    ASSERT_EQ(y[1].dtype(), DType::I64);
    EXPECT_EQ(y[1].data<int64_t>()[0], 1);
}

TEST(PoolKernel, AveragePoolCountIncludePad) {
    AttributeMap attrs{{"kernel_shape", std::vector<int64_t>{2, 2}},
                       {"strides", std::vector<int64_t>{2, 2}},
                       {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    auto excl = runOne(OpKind::AveragePool, {grid3x3()}, attrs);
    ASSERT_EQ(excl.size(), 1u);
    expectValues(excl[0], {1, 1, 2, 2}, {1, 2.5, 5.5, 7});
    attrs["count_include_pad"] = int64_t{1};
    auto incl = runOne(OpKind::AveragePool, {grid3x3()}, attrs);
    ASSERT_EQ(incl.size(), 1u);
    expectValues(incl[0], {1, 1, 2, 2}, {0.25, 1.25, 2.75, 7});
}

TEST(PoolKernel, GlobalAveragePool) {
    Tensor x = f64({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
    auto y = runOne(OpKind::GlobalAveragePool, {x});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 1, 1}, {2.5, 25});
}

TEST(GemmKernel, TransFlagsAlphaBetaBroadcastC) {
    Tensor a = f64({2, 2}, {1, 2, 3, 4}); // transA: op(A) = [[1,3],[2,4]]
    Tensor b = f64({2, 2}, {1, 0, 0, 1});
    Tensor c = f64({2}, {10, 20});
    auto y = runOne(OpKind::Gemm, {a, b, c},
                    {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 2.0}, {"beta", 0.5}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 2}, {7, 16, 9, 18});
}

TEST(GemmKernel, TransBRectangular) {
    Tensor a = f64({1, 3}, {1, 2, 3});
    Tensor b = f64({2, 3}, {1, 1, 1, 0, 1, 0}); // op(B) = B^T: [3,2]
    auto y = runOne(OpKind::Gemm, {a, b}, {{"transB", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2}, {6, 2});
}

TEST(MatMulKernel, BatchedBroadcastAndVector) {
    Tensor a = f64({2, 1, 2}, {1, 2, 3, 4});
    Tensor b = f64({2, 3}, {1, 0, 1, 0, 1, 1});
    auto y = runOne(OpKind::MatMul, {a, b});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 1, 3}, {1, 2, 3, 3, 4, 7});
    auto v = runOne(OpKind::MatMul, {f64({2}, {1, 2}), b});
    ASSERT_EQ(v.size(), 1u);
    expectValues(v[0], {3}, {1, 2, 3});
    Tensor bb = f64({2, 2, 1}, {1, 1, 2, 0}); // broadcast batch on B
    auto w = runOne(OpKind::MatMul, {f64({1, 2}, {3, 4}), bb});
    ASSERT_EQ(w.size(), 1u);
    expectValues(w[0], {2, 1, 1}, {7, 6});
}

TEST(ElementwiseKernel, Broadcasting) {
    Tensor a = f64({2, 1}, {1, 2});
    Tensor b = f64({1, 3}, {10, 20, 30});
    auto add = runOne(OpKind::Add, {a, b});
    ASSERT_EQ(add.size(), 1u);
    expectValues(add[0], {2, 3}, {11, 21, 31, 12, 22, 32});
    auto sub = runOne(OpKind::Sub, {a, b});
    ASSERT_EQ(sub.size(), 1u);
    expectValues(sub[0], {2, 3}, {-9, -19, -29, -8, -18, -28});
    auto div = runOne(OpKind::Div, {f64({3}, {2, 4, 6}), f64({}, {2})});
    ASSERT_EQ(div.size(), 1u);
    expectValues(div[0], {3}, {1, 2, 3});
    auto mul = runOne(OpKind::Mul, {f64({1, 2, 1}, {1, 2}), f64({3, 1, 2}, {1, 2, 3, 4, 5, 6})});
    ASSERT_EQ(mul.size(), 1u);
    expectValues(mul[0], {3, 2, 2}, {1, 2, 2, 4, 3, 4, 6, 8, 5, 6, 10, 12});
}

TEST(ElementwiseKernel, IncompatibleShapesAreAnError) {
    OneNode one = makeOneNode(OpKind::Add, {Tensor(DType::F32, {2, 3}), Tensor(DType::F32, {4})}, {});
    Status st = one.graph->inferTypes();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("cannot broadcast"), std::string::npos) << st.error().message;
}

TEST(ElementwiseKernel, ReluAndSigmoid) {
    auto r = runOne(OpKind::Relu, {f64({3}, {-1, 0, 2})});
    ASSERT_EQ(r.size(), 1u);
    expectValues(r[0], {3}, {0, 0, 2});
    auto s = runOne(OpKind::Sigmoid, {f64({2}, {0, std::log(3.0)})});
    ASSERT_EQ(s.size(), 1u);
    expectValues(s[0], {2}, {0.5, 0.75});
}

TEST(SoftmaxKernel, AxisAndOpsetSemantics) {
    Tensor x = f64({2, 2}, {0, std::log(3.0), 0, 0});
    auto last = runOne(OpKind::Softmax, {x});
    ASSERT_EQ(last.size(), 1u);
    expectValues(last[0], {2, 2}, {0.25, 0.75, 0.5, 0.5});
    auto axis0 = runOne(OpKind::Softmax, {x}, {{"axis", int64_t{0}}});
    ASSERT_EQ(axis0.size(), 1u);
    expectValues(axis0[0], {2, 2}, {0.5, 0.75, 0.5, 0.25});
    // Before opset 13, axis 0 flattens everything into one row.
    auto old = runOne(OpKind::Softmax, {x}, {{"axis", int64_t{0}}, {"_opset", int64_t{11}}});
    ASSERT_EQ(old.size(), 1u);
    expectValues(old[0], {2, 2}, {1.0 / 6, 3.0 / 6, 1.0 / 6, 1.0 / 6});
}

TEST(NormalizationKernel, BatchNormalization) {
    Tensor x = f64({1, 2, 1, 2}, {1, 3, 2, 4});
    auto y = runOne(OpKind::BatchNormalization,
                    {x, f64({2}, {2, 1}), f64({2}, {0, 1}), f64({2}, {1, 0}), f64({2}, {3, 3})},
                    {{"epsilon", 1.0}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 1, 2}, {0, 2, 2, 3});
}

TEST(ShapeKernel, ReshapeZeroAndMinusOne) {
    Tensor x = randomTensor({2, 3, 4}, 1);
    auto y = runOne(OpKind::Reshape, {x, i64({2}, {0, -1})});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{2, 12}));
    EXPECT_EQ(y[0].toDoubles(), x.toDoubles());
    OneNode bad = makeOneNode(OpKind::Reshape, {x, i64({2}, {5, -1})}, {});
    EXPECT_FALSE(bad.graph->inferTypes().ok());
}

TEST(ShapeKernel, FlattenTransposeConcat) {
    Tensor x = f64({2, 3}, {1, 2, 3, 4, 5, 6});
    auto t = runOne(OpKind::Transpose, {x});
    ASSERT_EQ(t.size(), 1u);
    expectValues(t[0], {3, 2}, {1, 4, 2, 5, 3, 6});
    auto f = runOne(OpKind::Flatten, {f64({1, 2, 2}, {1, 2, 3, 4})}, {{"axis", int64_t{0}}});
    ASSERT_EQ(f.size(), 1u);
    expectValues(f[0], {1, 4}, {1, 2, 3, 4});
    auto c = runOne(OpKind::Concat, {x, f64({2, 1}, {7, 8})}, {{"axis", int64_t{-1}}});
    ASSERT_EQ(c.size(), 1u);
    expectValues(c[0], {2, 4}, {1, 2, 3, 7, 4, 5, 6, 8});
    Tensor cube = f64({2, 1, 3}, {1, 2, 3, 4, 5, 6});
    auto p = runOne(OpKind::Transpose, {cube}, {{"perm", std::vector<int64_t>{1, 2, 0}}});
    ASSERT_EQ(p.size(), 1u);
    expectValues(p[0], {1, 3, 2}, {1, 4, 2, 5, 3, 6});
}

TEST(ShapeKernel, DropoutIsIdentityWithTrueMask) {
    auto y = runOne(OpKind::Dropout, {f64({2}, {1, -1})}, {{"ratio", 0.5}}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {2}, {1, -1});
    ASSERT_EQ(y[1].dtype(), DType::Bool);
    EXPECT_EQ(y[1].at(0), 1.0);
}

TEST(FusedKernel, FusedConvEqualsConvPlusActivation) {
    Tensor x = randomTensor({1, 2, 5, 5}, 2), w = randomTensor({3, 2, 3, 3}, 3), b = randomTensor({3}, 4);
    AttributeMap attrs{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    auto conv = runOne(OpKind::Conv, {x, w, b}, attrs);
    ASSERT_EQ(conv.size(), 1u);
    attrs["activation"] = std::string("LeakyRelu");
    attrs["activation_params"] = std::vector<double>{0.1};
    auto fused = runOne(OpKind::FusedConv, {x, w, b}, attrs);
    ASSERT_EQ(fused.size(), 1u);
    std::vector<double> c = conv[0].toDoubles();
    for (double& v : c)
        v = v >= 0 ? v : 0.1 * v;
    expectValues(fused[0], {1, 3, 5, 5}, c, 1e-12);
}

TEST(FusedKernel, FusedGemmMatMulPlusBiasRelu) {
    Tensor a = f64({2, 1, 2}, {1, 2, -3, -4});
    Tensor b = f64({2, 2}, {1, 0, 0, 1});
    Tensor c = f64({2}, {0.5, -0.5});
    auto y = runOne(OpKind::FusedGemm, {a, b, c}, {{"activation", std::string("Relu")}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 1, 2}, {1.5, 1.5, 0, 0});
}

TEST(Precision, Float32AgreesWithFloat64) {
    Tensor x = randomTensor({1, 4, 9, 9}, 5), w = randomTensor({6, 2, 3, 3}, 6), b = randomTensor({6}, 7);
    AttributeMap attrs{{"group", int64_t{2}}, {"strides", std::vector<int64_t>{2, 2}},
                       {"pads", std::vector<int64_t>{1, 0, 1, 2}}};
    auto d = runOne(OpKind::Conv, {x, w, b}, attrs, 1, DType::F64);
    auto f = runOne(OpKind::Conv, {x, w, b}, attrs, 1, DType::F32);
    ASSERT_EQ(d.size(), 1u);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(d[0].dtype(), DType::F64);
    EXPECT_EQ(f[0].dtype(), DType::F32);
    expectValues(f[0], d[0].shape(), d[0].toDoubles(), 1e-5);
    // And the f64 result matches a direct evaluation of one output element.
    double direct = b.at(1);
    for (int64_t c = 0; c < 2; ++c)
        for (int64_t ky = 0; ky < 3; ++ky)
            for (int64_t kx = 0; kx < 3; ++kx) {
                int64_t iy = 1 * 2 - 1 + ky, ix = 2 * 2 - 0 + kx;
                direct += x.at((c * 9 + iy) * 9 + ix) * w.at(((1 * 2 + c) * 3 + ky) * 3 + kx);
            }
    EXPECT_NEAR(d[0].at((1 * d[0].shape()[2] + 1) * d[0].shape()[3] + 2), direct, 1e-12);
}
