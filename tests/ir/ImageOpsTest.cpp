// Col2Im and CenterCropPad (ops/ImageOps.cpp) against numpy: Col2Im by a loop that adds each
// column block into a zero-padded image and crops the padding (itertools over block offsets and
// block positions), CenterCropPad by np.take / np.pad per axis.

#include "TestUtil.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

TEST(Col2Im, OneColumnPerRowIsATranspose) {
    // ONNX's own example (its node test test_col2im): 1x5x5 columns, image 5x5, block 1x5.
    std::vector<double> x;
    for (int i = 1; i <= 25; ++i)
        x.push_back(i);
    auto y = runOne(OpKind::Col2Im, {f64({1, 5, 5}, x), i64({2}, {5, 5}), i64({2}, {1, 5})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 5, 5}, {1, 6, 11, 16, 21, 2, 7, 12, 17, 22, 3, 8, 13, 18, 23,
                                      4, 9, 14, 19, 24, 5, 10, 15, 20, 25});
}

TEST(Col2Im, PaddedStridedTwoChannels) {
    // x = ((np.arange(48) % 7 - 3) * 0.5).reshape(1, 8, 6); image 3x4, block 2x2, pads [1, 0, 0, 1],
    // strides [1, 2]: 3 x 2 block positions.
    std::vector<double> x;
    for (int i = 0; i < 48; ++i)
        x.push_back((i % 7 - 3) * 0.5);
    auto y = runOne(OpKind::Col2Im, {f64({1, 8, 6}, x), i64({2}, {3, 4}), i64({2}, {2, 2})},
                    {{"pads", std::vector<int64_t>{1, 0, 0, 1}}, {"strides", std::vector<int64_t>{1, 2}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 3, 4},
                 {0.5, -0.5, 1.5, 0.5, -1.0, 1.5, 0.0, -1.0, -0.5, -1.0, 0.0, -0.5,
                  0.0, -1.0, 1.0, 0.0, -1.5, 1.0, -0.5, -1.5, 1.0, 0.5, 1.5, 1.0});
}

TEST(Col2Im, OneDimensionalDilatedBatchOfTwo) {
    auto y = runOne(OpKind::Col2Im,
                    {f64({2, 2, 3}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}), i64({1}, {5}), i64({1}, {2})},
                    {{"dilations", std::vector<int64_t>{2}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 1, 5}, {1, 2, 7, 5, 6, 10, 20, 70, 50, 60});
}

TEST(Col2Im, RejectsAWrongColumnCountAndBlockTooBig) {
    std::string why = failure(OpKind::Col2Im, {f64({1, 4, 5}, std::vector<double>(20, 1.0)), i64({2}, {3, 3}),
                                               i64({2}, {2, 2})});
    EXPECT_NE(why.find("col2im input's dim 2 (5) must be the number of blocks, 4"), std::string::npos) << why;
    why = failure(OpKind::Col2Im, {f64({1, 3, 4}, std::vector<double>(12, 1.0)), i64({2}, {3, 3}), i64({2}, {2, 2})});
    EXPECT_NE(why.find("is not a multiple of prod(block_shape) 4"), std::string::npos) << why;
    why = failure(OpKind::Col2Im, {f64({1, 4, 1}, std::vector<double>(4, 1.0)), i64({2}, {1, 3}), i64({2}, {2, 2})});
    EXPECT_NE(why.find("does not fit the padded image's 1 along spatial dim 0"), std::string::npos) << why;
    why = failure(OpKind::Col2Im, {f64({1, 4, 4}, std::vector<double>(16, 1.0)), i64({2}, {3, 3}), i64({2}, {2, 2})},
                  {{"strides", std::vector<int64_t>{1}}});
    EXPECT_NE(why.find("need 2 entries"), std::string::npos) << why;
}

namespace {

Tensor arange20() { // np.arange(20).reshape(4, 5)
    std::vector<double> v;
    for (int i = 0; i < 20; ++i)
        v.push_back(i);
    return f64({4, 5}, v);
}

} // namespace

TEST(CenterCropPad, PadsOneAxisAndCropsTheOther) {
    auto y = runOne(OpKind::CenterCropPad, {arange20(), i64({2}, {7, 2})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {7, 2}, {0, 0, 1, 2, 6, 7, 11, 12, 16, 17, 0, 0, 0, 0});
}

TEST(CenterCropPad, NegativeAxisAndIntegerData) {
    auto y = runOne(OpKind::CenterCropPad, {arange20(), i64({1}, {8})}, {{"axes", std::vector<int64_t>{-1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {4, 8}, {0, 0, 1, 2, 3, 4, 0, 0, 0, 5, 6, 7, 8, 9, 0, 0,
                                0, 10, 11, 12, 13, 14, 0, 0, 0, 15, 16, 17, 18, 19, 0, 0});
    // Elements move as bytes: an i64 tensor keeps its type and values.
    auto z = runOne(OpKind::CenterCropPad, {i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({1}, {1})},
                    {{"axes", std::vector<int64_t>{1}}});
    ASSERT_EQ(z.size(), 1u);
    EXPECT_EQ(z[0].dtype(), DType::I64);
    expectValues(z[0], {2, 1}, {2, 5});
}

TEST(CenterCropPad, RejectsRepeatedAxesAndAShapeOfTheWrongLength) {
    std::string why = failure(OpKind::CenterCropPad, {arange20(), i64({2}, {2, 2})}, {{"axes", std::vector<int64_t>{1, -1}}});
    EXPECT_NE(why.find("center crop pad axes name dim 1 twice"), std::string::npos) << why;
    why = failure(OpKind::CenterCropPad, {arange20(), i64({3}, {2, 2, 2})});
    EXPECT_NE(why.find("center crop pad shape has 3 entries for 2 axes"), std::string::npos) << why;
    why = failure(OpKind::CenterCropPad, {arange20(), i64({1}, {2})}, {{"axes", std::vector<int64_t>{2}}});
    EXPECT_NE(why.find("center crop pad axis"), std::string::npos) << why;
}
