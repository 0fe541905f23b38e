// RotaryEmbedding (ops/AttentionOps.cpp) against numpy, following ONNX's description step by step:
// X to [batch, sequence, heads, head_size] (transpose of 4-D, reshape of 3-D), caches gathered by
// position_ids, x1, x2 = np.split(x[..., :rot], 2, -1) (or x[..., 0::2], x[..., 1::2] interleaved),
// real = cos * x1 - sin * x2, imag = sin * x1 + cos * x2, concatenated (or stacked pairwise) with
// the unrotated rest, then back to X's layout.

#include "TestUtil.h"

#include <cmath>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor ramp(std::vector<int64_t> shape, double step, double start) {
    std::vector<double> v;
    for (int64_t i = 0; i < product(shape); ++i)
        v.push_back(static_cast<double>(i) * step + start);
    return f64(std::move(shape), v);
}

/// cos or sin of angles[i].
Tensor trig(std::vector<int64_t> shape, const std::vector<double>& angles, bool sine) {
    std::vector<double> v;
    for (double a : angles)
        v.push_back(sine ? std::sin(a) : std::cos(a));
    return f64(std::move(shape), v);
}

/// The caches [5, 2] of angles p * [1, 0.1], p = 0..4.
std::vector<double> positionAngles() {
    std::vector<double> a;
    for (int p = 0; p < 5; ++p) {
        a.push_back(p * 1.0);
        a.push_back(p * 0.1);
    }
    return a;
}

} // namespace

TEST(RotaryEmbedding, FourDimensionalWithPositionIdsHalvesAndInterleaved) {
    // x = (np.arange(24) * 0.3 - 3).reshape(1, 2, 3, 4), position_ids [[4, 0, 2]]
    const std::vector<Tensor> ins{ramp({1, 2, 3, 4}, 0.3, -3.0), trig({5, 2}, positionAngles(), false),
                                  trig({5, 2}, positionAngles(), true), i64({1, 3}, {4, 0, 2})};
    auto y = runOne(OpKind::RotaryEmbedding, ins);
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 3, 4},
                 {0.14460487385180776, -1.6690861649596236, 3.839152175996454, -2.9856576116394153, -1.8, -1.5,
                  -1.2000000000000002, -0.8999999999999999, 0.24968810192828547, -0.35362077259089114,
                  -0.545578456095409, 0.23441917411385393, 0.5159768218513472, 0.24482738113962066,
                  -1.2384538422210913, 1.7320679990821128, 1.7999999999999998, 2.0999999999999996,
                  2.3999999999999995, 2.7, -4.521911246213881, 2.459409316775359, 1.2297636689073324,
                  4.477868445204544},
                 1e-12);
    auto z = runOne(OpKind::RotaryEmbedding, ins, {{"interleaved", int64_t{1}}, {"num_heads", int64_t{2}}});
    ASSERT_EQ(z.size(), 1u);
    expectValues(z[0], {1, 2, 3, 4},
                 {-0.0824358747405709, 4.035245262255538, -1.392767866758758, -2.86883210894682, -1.8, -1.5,
                  -1.2000000000000002, -0.8999999999999999, 0.5224773299759902, -0.42073440513126614,
                  -0.05960079923851834, 0.29401997335237234, 0.2889360732589686, -1.0423607559620076,
                  0.5211456793404865, 1.8488935017747081, 1.7999999999999998, 2.0999999999999996,
                  2.3999999999999995, 2.7, -4.249122018166176, 1.354607719871475, 2.7534292901277313,
                  4.537469244443063},
                 1e-12);
}

TEST(RotaryEmbedding, ThreeDimensionalPartialRotationWithoutPositionIds) {
    // x = (np.arange(24) * 0.25 - 2).reshape(2, 2, 6), num_heads 1, rotary_embedding_dim 4, caches
    // [2, 2, 3] (one entry more than the 2 used) of angles (k + 1) * [0.5, 0.2, 0.7], k = b * 2 + s.
    std::vector<double> angles;
    for (int k = 0; k < 4; ++k)
        for (double f : {0.5, 0.2, 0.7})
            angles.push_back((k + 1) * f);
    auto y = runOne(OpKind::RotaryEmbedding,
                    {ramp({2, 2, 6}, 0.25, -2.0), trig({2, 2, 3}, angles, false), trig({2, 2, 3}, angles, true)},
                    {{"num_heads", int64_t{1}}, {"rotary_embedding_dim", int64_t{4}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 2, 6},
                 {-1.0360268158744406, -1.4667798477283465, -2.2752249200439647, -1.5727545511929093, -1.0, -0.75,
                  -0.2701511529340698, -0.32761983407788386, -0.42073549240394825, 0.13291066292355863, 0.5, 0.75,
                  -1.4255052782383788, 0.043545190195785954, 1.1036007891056088, 2.1501404178357313, 2.0, 2.25,
                  -3.768259371844901, -0.4154638447187442, 1.0248030574227767, 4.237026055351976, 3.5, 3.75},
                 1e-12);
}

TEST(RotaryEmbedding, ThreeDimensionalTwoHeadsInterleaved) {
    const std::vector<double> angles{0.3, 1.1, 2.0, -0.4};
    auto y = runOne(OpKind::RotaryEmbedding,
                    {ramp({1, 2, 8}, 0.25, -2.0), trig({1, 2, 2}, angles, false), trig({1, 2, 2}, angles, true)},
                    {{"num_heads", int64_t{2}}, {"interleaved", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 8},
                 {-1.3935126165938678, -2.26287926929249, 0.43361501793842816, -1.9038061918741245,
                  -0.7336963341296014, -1.0120225735055441, -0.003996220697429803, -0.559002710387112,
                  -0.2273243567064204, -0.1040367091367856, 0.7525942537329304, 0.4960865743478384,
                  -1.5527686200792443, 0.3891138811417536, 2.063073590044466, 1.027729226042073},
                 1e-12);
}

TEST(RotaryEmbedding, RejectsBadShapesAndAttributes) {
    const Tensor c = trig({5, 2}, positionAngles(), false), s = trig({5, 2}, positionAngles(), true);
    std::string why = failure(OpKind::RotaryEmbedding, {ramp({1, 3, 8}, 1, 0), trig({1, 3, 4}, std::vector<double>(12, 0.1), false),
                                                        trig({1, 3, 4}, std::vector<double>(12, 0.1), true)});
    EXPECT_NE(why.find("3-D input [batch, sequence, hidden] needs attribute num_heads"), std::string::npos) << why;
    why = failure(OpKind::RotaryEmbedding, {ramp({1, 2, 3, 4}, 1, 0), c, s, i64({1, 3}, {4, 0, 5})});
    EXPECT_NE(why.find("position id 5 is outside the caches' 5 rows"), std::string::npos) << why;
    why = failure(OpKind::RotaryEmbedding, {ramp({1, 2, 3, 4}, 1, 0), c, s, i64({1, 3}, {4, 0, 2})},
                  {{"rotary_embedding_dim", int64_t{3}}});
    EXPECT_NE(why.find("rotary_embedding_dim 3 must be even and at most the head size 4"), std::string::npos) << why;
    why = failure(OpKind::RotaryEmbedding, {ramp({1, 2, 3, 4}, 1, 0), c, s});
    EXPECT_NE(why.find("caches must be [batch, sequence, rotary_embedding_dim / 2] = [1,3,2] without position_ids, got [5,2]"),
              std::string::npos) << why;
    why = failure(OpKind::RotaryEmbedding, {ramp({1, 2, 3, 4}, 1, 0), c, s, i64({1, 3}, {0, 1, 2})},
                  {{"num_heads", int64_t{3}}});
    EXPECT_NE(why.find("num_heads 3 differs from the input's 2 heads"), std::string::npos) << why;
}
