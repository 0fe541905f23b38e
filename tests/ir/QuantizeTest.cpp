// The linear quantization ops against values worked out independently (numpy in float32, the
// arithmetic onnxruntime's CPU kernels use; QLinearMatMul is ONNX's own documented example):
// rounding ties to even, saturation, per-tensor, per-axis and blocked scales, zero points in
// the padding of an integer convolution, per-channel requantisation, and clear refusals.

#include "TestUtil.h"

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
