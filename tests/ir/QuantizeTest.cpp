// The linear quantization ops against values worked out independently (numpy in float32, the
// arithmetic onnxruntime's CPU kernels use; QLinearMatMul is ONNX's own documented example):
// rounding ties to even, saturation, per-tensor, per-axis and blocked scales, zero points in
// the padding of an integer convolution, per-channel requantisation, and clear refusals.

#include "TestUtil.h"

#include <random>
#include <set>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor f32(std::vector<int64_t> shape, std::vector<float> v) { return Tensor::fromVector<float>(std::move(shape), v); }
Tensor u8(std::vector<int64_t> shape, std::vector<uint8_t> v) { return Tensor::fromVector<uint8_t>(std::move(shape), v); }
Tensor s8(std::vector<int64_t> shape, std::vector<int8_t> v) { return Tensor::fromVector<int8_t>(std::move(shape), v); }
Tensor s32(std::vector<int64_t> shape, std::vector<int32_t> v) {
    return Tensor::fromVector<int32_t>(std::move(shape), v);
}

/// The elements as integers, for exact comparison.
std::vector<int64_t> ints(const Tensor& t) {
    std::vector<int64_t> out;
    for (double v : t.toDoubles())
        out.push_back(static_cast<int64_t>(v));
    return out;
}

} // namespace

TEST(Quantize, PerTensorRoundsHalfToEvenAndSaturatesToUint8) {
    // No zero point: uint8. 2.5 -> 2, 3.5 -> 4, 0.5 -> 0; 600 saturates to 255, -2 to 0.
    auto y = runOne(OpKind::QuantizeLinear, {f32({8}, {0, 1.25f, 1.75f, -1, 300, 3.75f, -0.5f, 0.25f}), f32({}, {0.5f})},
                    {}, 1, DType::F32, {1});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::U8);
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{0, 2, 4, 0, 255, 8, 0, 0}));
}

// int4 and uint4 (opset 21): saturate to [-8, 7] and [0, 15], the type from the zero point or
// output_dtype (22 int4, 21 uint4); DequantizeLinear reads them back.
TEST(Quantize, Int4AndUint4SaturateToFourBits) {
    Tensor z4(DType::I4, {});
    z4.set(0, -1);
    auto y = runOne(OpKind::QuantizeLinear, {f32({6}, {0, 1.25f, 3.5f, 100, -100, -2}), f32({}, {0.5f}), z4}, {}, 1,
                    DType::F32, {1, 2});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::I4);
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{-1, 1, 6, 7, -8, -5}));
    auto u = runOne(OpKind::QuantizeLinear, {f32({4}, {0, 3, 100, -1}), f32({}, {0.5f})},
                    {{"output_dtype", int64_t{21}}}, 1, DType::F32, {1});
    ASSERT_EQ(u.size(), 1u);
    EXPECT_EQ(u[0].dtype(), DType::U4);
    EXPECT_EQ(ints(u[0]), (std::vector<int64_t>{0, 6, 15, 0}));
    auto back = runOne(OpKind::DequantizeLinear, {y[0], f32({}, {0.5f}), z4}, {}, 1, DType::F32, {1, 2});
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back[0].toDoubles(), (std::vector<double>{0, 1, 3.5, 4, -3.5, -2}));
}

TEST(Quantize, PerAxisUsesEachChannelsScaleAndZeroPoint) {
    auto y = runOne(OpKind::QuantizeLinear,
                    {f32({1, 2, 3}, {1, -2, 3.3f, 4, 5, -6.1f}), f32({2}, {0.5f, 0.25f}), s8({2}, {0, -10})}, {}, 1,
                    DType::F32, {1});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::I8);
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{2, -4, 7, 6, 10, -34}));
}

TEST(Quantize, BlockedScalesCoverBlockSizeElementsAlongTheAxis) {
    auto y = runOne(OpKind::QuantizeLinear,
                    {f32({2, 4}, {1, 2, 3, 4, -1, -2, -3, -4}), f32({2, 2}, {1, 0.5f, 2, 0.25f}), s8({2, 2}, {0, 1, 2, 3})},
                    {{"axis", int64_t{1}}, {"block_size", int64_t{2}}}, 1, DType::F32, {1});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{1, 2, 7, 9, 2, 1, -9, -13}));
}

TEST(Quantize, DequantizePerAxisAndInt32WithoutZeroPoint) {
    auto y = runOne(OpKind::DequantizeLinear,
                    {s8({2, 3}, {-128, 0, 127, 5, -5, 10}), f32({2}, {0.1f, 2}), s8({2}, {-1, 3})},
                    {{"axis", int64_t{0}}}, 1, DType::F32, {1});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::F32);
    const std::vector<float> want = {-12.7f, 0.1f, 12.8f, 4.0f, -16.0f, 14.0f};
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_EQ(y[0].data<float>()[i], want[i]) << i; // bit for bit: (x - zp) * scale in float
    auto wide = runOne(OpKind::DequantizeLinear, {s32({2}, {-70000, 3}), f32({}, {0.5f})}, {}, 1, DType::F32, {1});
    ASSERT_EQ(wide.size(), 1u);
    expectValues(wide[0], {2}, {-35000.0, 1.5});
}

TEST(Quantize, DynamicQuantizationTakesItsRangeIncludingZero) {
    // ONNX's example: range [-3, 2], scale 5 / 255, zero point 153.
    auto y = runOne(OpKind::DynamicQuantizeLinear, {f32({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f})}, {}, 3, DType::F32);
    ASSERT_EQ(y.size(), 3u);
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{153, 255, 0, 26, 221, 179}));
    EXPECT_EQ(y[1].data<float>()[0], 0.019607844f);
    EXPECT_EQ(ints(y[2]), (std::vector<int64_t>{153}));
    // All zeros: nothing to divide by; everything is the zero point, 0.
    auto zeros = runOne(OpKind::DynamicQuantizeLinear, {f32({3}, {0, 0, 0})}, {}, 3, DType::F32);
    ASSERT_EQ(zeros.size(), 3u);
    EXPECT_EQ(ints(zeros[0]), (std::vector<int64_t>{0, 0, 0}));
    EXPECT_EQ(ints(zeros[2]), (std::vector<int64_t>{0}));
}

TEST(Quantize, MatMulIntegerSubtractsPerTensorAndPerColumnZeroPoints) {
    auto y = runOne(OpKind::MatMulInteger,
                    {u8({2, 3}, {11, 7, 3, 10, 6, 2}), u8({3, 2}, {1, 4, 2, 5, 3, 6}), u8({}, {1}), u8({2}, {1, 2})});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::I32);
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{10, 46, 7, 37}));
}

TEST(Quantize, ConvIntegerPadsWithTheZeroPoint) {
    // x - 1 padded by one zero on each side, summed over 2x2 windows.
    auto y = runOne(OpKind::ConvInteger, {u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10}), u8({1, 1, 2, 2}, {1, 1, 1, 1}),
                                          u8({}, {1})},
                    {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{1, 1, 4, 4}));
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
}

TEST(Quantize, QLinearMatMulRequantisesTheInt32Product) {
    auto y = runOne(OpKind::QLinearMatMul,
                    {u8({2, 4}, {208, 236, 0, 238, 3, 214, 255, 29}), f32({}, {0.0066f}), u8({}, {113}),
                     u8({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247}), f32({}, {0.00705f}),
                     u8({}, {114}), f32({}, {0.0107f}), u8({}, {118})},
                    {}, 1, DType::F32, {1, 4, 6});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::U8);
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{168, 115, 255, 1, 66, 151}));
}

TEST(Quantize, QLinearConvAddsItsBiasAndScalesEachOutputChannel) {
    // Channel 0: (-1 + 2) + 10 = 11, x 1.25 = 13.75 -> 14, - 3 = 11.
    // Channel 1: (-3 - 4) - 20 = -27, x 0.625 = -16.875 -> -17, - 3 = -20.
    auto y = runOne(OpKind::QLinearConv,
                    {u8({1, 1, 2, 2}, {1, 2, 3, 4}), f32({}, {0.5f}), u8({}, {2}),
                     s8({2, 1, 2, 2}, {1, -1, 2, 0, 3, 1, 0, -2}), f32({2}, {0.25f, 0.125f}), s8({}, {0}),
                     f32({}, {0.1f}), s8({}, {-3}), s32({2}, {10, -20})},
                    {}, 1, DType::F32, {1, 4, 6});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::I8);
    EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{1, 2, 1, 1}));
    EXPECT_EQ(ints(y[0]), (std::vector<int64_t>{11, -20}));
}

TEST(Quantize, UnsupportedTypesAndMismatchedScalesAreRefusedByName) {
    const std::string fp8 = failure(OpKind::QuantizeLinear, {f32({2}, {1, 2}), f32({}, {1})}, {{"output_dtype", int64_t{17}}});
    EXPECT_NE(fp8.find("output_dtype 17"), std::string::npos) << fp8;
    EXPECT_NE(fp8.find("float8"), std::string::npos) << fp8;
    const std::string axis = failure(OpKind::QuantizeLinear, {f32({1, 3}, {1, 2, 3}), f32({2}, {1, 1})});
    EXPECT_NE(axis.find("y_scale has 2 entries but axis 1"), std::string::npos) << axis;
    const std::string floaty = failure(OpKind::DequantizeLinear, {f32({2}, {1, 2}), f32({}, {1})});
    EXPECT_NE(floaty.find("dequantize input must be"), std::string::npos) << floaty;
    const std::string zero = failure(OpKind::QuantizeLinear, {f32({2}, {1, 2}), f32({}, {0})});
    EXPECT_NE(zero.find("y_scale holds 0"), std::string::npos) << zero;
    const std::string mixed = failure(OpKind::MatMulInteger, {u8({1, 2}, {1, 2}), u8({2, 1}, {1, 2}), s8({}, {0})});
    EXPECT_NE(mixed.find("zero point is i8"), std::string::npos) << mixed;
}

// sextant.Int8Conv (what fuse-qdq-conv makes) computes what QLinearConv computes on the same
// integers, bit for bit: random int8 weights per output channel, uint8 data, an int32 bias,
// padding and a stride. Its activation clamps in the quantized domain: Relu at the zero point,
// Clip at the quantized bounds.
TEST(Quantize, Int8ConvIsQLinearConvWithItsParametersAsAttributes) {
    std::mt19937 gen(11);
    std::vector<uint8_t> xv(2 * 3 * 7 * 7);
    for (uint8_t& v : xv)
        v = static_cast<uint8_t>(gen() % 256);
    std::vector<int8_t> wv(5 * 3 * 3 * 3);
    for (int8_t& v : wv)
        v = static_cast<int8_t>(static_cast<int>(gen() % 255) - 127);
    const std::vector<float> ws{0.011f, 0.0042f, 0.0307f, 0.0009f, 0.02f};
    const std::vector<int32_t> bias{1200, -5000, 0, 77, -31000};
    const float xs = 0.0213f, ys = 0.0871f;
    const Tensor x = u8({2, 3, 7, 7}, xv), w = s8({5, 3, 3, 3}, wv), b = s32({5}, bias);
    AttributeMap conv{{"pads", std::vector<int64_t>{1, 0, 1, 2}}, {"strides", std::vector<int64_t>{2, 1}}};
    auto ref = runOne(OpKind::QLinearConv,
                      {x, f32({}, {xs}), u8({}, {131}), w, f32({5}, ws), s8({}, {0}), f32({}, {ys}), u8({}, {97}), b},
                      conv, 1, DType::F32, {1, 4, 6});
    ASSERT_EQ(ref.size(), 1u);
    AttributeMap attrs = conv;
    attrs["x_scale"] = double{xs};
    attrs["x_zero_point"] = int64_t{131};
    attrs["w_scale"] = std::vector<double>(ws.begin(), ws.end());
    attrs["w_zero_point"] = std::vector<int64_t>{0};
    attrs["y_scale"] = double{ys};
    attrs["y_zero_point"] = int64_t{97};
    attrs["output_dtype"] = int64_t{2};
    auto y = runOne(OpKind::Int8Conv, {x, w, b}, attrs, 1, DType::F32, {1, 2});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::U8);
    EXPECT_EQ(y[0].shape(), ref[0].shape());
    EXPECT_EQ(ints(y[0]), ints(ref[0]));
    const std::vector<int64_t> plain = ints(ref[0]);
    ASSERT_TRUE(std::any_of(plain.begin(), plain.end(), [](int64_t v) { return v < 97; })) << "nothing for Relu to clamp";

    attrs["activation"] = std::string("Relu");
    auto relu = runOne(OpKind::Int8Conv, {x, w, b}, attrs, 1, DType::F32, {1, 2});
    ASSERT_EQ(relu.size(), 1u);
    const std::vector<int64_t> r = ints(relu[0]);
    for (size_t i = 0; i < r.size(); ++i)
        ASSERT_EQ(r[i], std::max<int64_t>(plain[i], 97)) << i;

    // Clip [-1, 2] in real units: quantized bounds round(-1 / ys) + 97 = 86 and round(2 / ys) + 97 = 120.
    attrs["activation"] = std::string("Clip");
    attrs["activation_params"] = std::vector<double>{-1.0, 2.0};
    auto clip = runOne(OpKind::Int8Conv, {x, w, b}, attrs, 1, DType::F32, {1, 2});
    ASSERT_EQ(clip.size(), 1u);
    const std::vector<int64_t> c = ints(clip[0]);
    for (size_t i = 0; i < c.size(); ++i)
        ASSERT_EQ(c[i], std::clamp<int64_t>(plain[i], 86, 120)) << i;
}

TEST(Quantize, Int8ConvRefusesMismatchedParametersByName) {
    AttributeMap attrs{{"x_scale", 0.5}, {"y_scale", 0.25}, {"w_scale", std::vector<double>{0.1, 0.2, 0.3}},
                       {"output_dtype", int64_t{3}}};
    const std::string three =
        failure(OpKind::Int8Conv, {u8({1, 1, 2, 2}, {1, 2, 3, 4}), s8({2, 1, 1, 1}, {1, 2})}, attrs);
    EXPECT_NE(three.find("w_scale has 3 entries"), std::string::npos) << three;
    attrs["w_scale"] = std::vector<double>{0.1};
    attrs["activation"] = std::string("Sigmoid");
    const std::string act = failure(OpKind::Int8Conv, {u8({1, 1, 2, 2}, {1, 2, 3, 4}), s8({2, 1, 1, 1}, {1, 2})}, attrs);
    EXPECT_NE(act.find("activation 'Sigmoid'"), std::string::npos) << act;
}

// sextant.Int8Gemm (what fuse-qdq-matmul makes) computes what QLinearMatMul computes on the same
// integers, bit for bit (a batched A, one weight scale per output column), and adds its int32
// bias to the accumulator before requantising.
TEST(Quantize, Int8GemmIsQLinearMatMulWithItsParametersAsAttributes) {
    std::mt19937 gen(12);
    std::vector<uint8_t> xv(2 * 3 * 9);
    for (uint8_t& v : xv)
        v = static_cast<uint8_t>(gen() % 256);
    std::vector<int8_t> wv(9 * 4);
    for (int8_t& v : wv)
        v = static_cast<int8_t>(static_cast<int>(gen() % 255) - 127);
    const std::vector<float> ws{0.011f, 0.0042f, 0.0307f, 0.0009f};
    const float xs = 0.0213f, ys = 0.0371f;
    const Tensor x = u8({2, 3, 9}, xv), w = s8({9, 4}, wv);
    auto ref = runOne(OpKind::QLinearMatMul,
                      {x, f32({}, {xs}), u8({}, {131}), w, f32({4}, ws), s8({}, {0}), f32({}, {ys}), u8({}, {97})}, {},
                      1, DType::F32, {1, 4, 6});
    ASSERT_EQ(ref.size(), 1u);
    AttributeMap attrs{{"x_scale", double{xs}},
                       {"x_zero_point", int64_t{131}},
                       {"w_scale", std::vector<double>(ws.begin(), ws.end())},
                       {"w_zero_point", std::vector<int64_t>{0}},
                       {"y_scale", double{ys}},
                       {"y_zero_point", int64_t{97}},
                       {"output_dtype", int64_t{2}}};
    auto y = runOne(OpKind::Int8Gemm, {x, w}, attrs, 1, DType::F32, {1, 2});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::U8);
    EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(ints(y[0]), ints(ref[0]));
    const std::vector<int64_t> r = ints(ref[0]);
    ASSERT_GT(std::set<int64_t>(r.begin(), r.end()).size(), 8u) << "the test's numbers are spread out";

    // Column 0: (3-2)*1 + (5-2)*2 + 10 = 17, x 0.5*0.25/0.1 = 21.25 -> 21, - 3 = 18.
    // Column 1: (3-2)*-1 + (5-2)*0 - 20 = -21, x 0.5*0.125/0.1 = -13.125 -> -13, - 3 = -16.
    AttributeMap small{{"x_scale", 0.5},
                       {"x_zero_point", int64_t{2}},
                       {"w_scale", std::vector<double>{0.25, 0.125}},
                       {"y_scale", 0.1},
                       {"y_zero_point", int64_t{-3}},
                       {"output_dtype", int64_t{3}}};
    auto biased = runOne(OpKind::Int8Gemm, {u8({1, 2}, {3, 5}), s8({2, 2}, {1, -1, 2, 0}), s32({2}, {10, -20})}, small,
                         1, DType::F32, {1, 2});
    ASSERT_EQ(biased.size(), 1u);
    EXPECT_EQ(biased[0].dtype(), DType::I8);
    EXPECT_EQ(ints(biased[0]), (std::vector<int64_t>{18, -16}));
    const std::string cols = failure(OpKind::Int8Gemm, {u8({1, 2}, {3, 5}), s8({2, 2}, {1, -1, 2, 0}), s32({3}, {1, 2, 3})}, small);
    EXPECT_NE(cols.find("one entry per output column"), std::string::npos) << cols;
}
