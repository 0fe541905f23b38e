// Mish, Swish, RMSNormalization, the bitwise ops, BitShift, ScatterND, Compress, ReverseSequence
// and EyeLike against values computed independently: numpy (python3-numpy, the expressions in
// each test's comment) for the float functions, by hand for the integer and indexing ops. ONNX's
// node tests for the ops its suite has run in tests/conformance.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor u8(std::vector<int64_t> shape, std::vector<uint8_t> v) { return Tensor::fromVector<uint8_t>(std::move(shape), v); }
Tensor i32(std::vector<int64_t> shape, std::vector<int32_t> v) { return Tensor::fromVector<int32_t>(std::move(shape), v); }
Tensor boolean(std::vector<int64_t> shape, std::vector<uint8_t> v) {
    Tensor t(DType::Bool, shape);
    for (size_t i = 0; i < v.size(); ++i)
        t.set(static_cast<int64_t>(i), v[i]);
    return t;
}

const std::vector<double> kFunctionInput = {-3.0, -1.0, -0.25, 0.0, 0.5, 2.0, 25.0};

} // namespace

TEST(Mish, MatchesNumpy) {
    // x * np.tanh(np.log1p(np.exp(x)))
    auto y = runOne(OpKind::Mish, {f64({7}, kFunctionInput)});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {7},
                 {-0.14564746127562458, -0.30340146137410895, -0.129926963679141, 0.0, 0.3752452113048951,
                  1.9439589595339946, 25.0},
                 1e-14);
}

TEST(Swish, MatchesNumpyWithItsAlpha) {
    // x / (1 + np.exp(-0.5 * x))
    auto y = runOne(OpKind::Swish, {f64({7}, kFunctionInput)}, {{"alpha", 0.5}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {7},
                 {-0.5472765714190689, -0.3775406687981454, -0.11719765665656094, 0.0, 0.28108825044289903,
                  1.4621171572600098, 24.999906834017896},
                 1e-14);
}

namespace {

std::vector<double> rmsInput() { // np.arange(1, 13).reshape(2, 2, 3) * 0.7 - 3
    std::vector<double> x;
    for (int i = 1; i <= 12; ++i)
        x.push_back(i * 0.7 - 3);
    return x;
}

} // namespace

TEST(RMSNormalization, OverTheLastAxisScaledPerElement) {
    // X / np.sqrt((X**2).mean(axis=-1, keepdims=True) + 1e-5) * [0.5, 1, 2]
    auto y = runOne(OpKind::RMSNormalization, {f64({2, 2, 3}, rmsInput()), f64({3}, {0.5, 1.0, 2.0})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 2, 3},
                 {-0.6768598750927262, -0.9417180870855322, -1.059432847971224, -0.13168424262590434,
                  0.6584212131295211, 3.160421823021699, 0.3568636360360245, 0.9766794249406988, 2.479263155618697,
                  0.4224199120652136, 0.9926867933532518, 2.281067525152153},
                 1e-12);
}

TEST(RMSNormalization, FromAxisOneWithABroadcastScale) {
    // X / np.sqrt((X**2).mean(axis=(1, 2), keepdims=True) + 0.01) * [[1], [3]]
    auto y = runOne(OpKind::RMSNormalization, {f64({2, 2, 3}, rmsInput()), f64({2, 1}, {1.0, 3.0})},
                    {{"axis", int64_t{1}}, {"epsilon", 0.01}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 2, 3},
                 {-1.7427910299753895, -1.212376368678532, -0.6819617073816745, -0.45464113825444985,
                  1.1366028456361237, 2.727846829526695, 0.4945223265831559, 0.6767147626927398, 0.8589071988023237,
                  3.1232989047357225, 3.6698762130644735, 4.216453521393225},
                 1e-12);
}

TEST(RMSNormalization, AScaleThatDoesNotBroadcastIsAnError) {
    EXPECT_NE(failure(OpKind::RMSNormalization, {f64({2, 3}, {1, 2, 3, 4, 5, 6}), f64({2}, {1, 1})})
                  .find("broadcast"),
              std::string::npos);
}

TEST(Bitwise, AndOrXorNotOnIntegersWithBroadcasting) {
    const Tensor a = i32({2, 2}, {12, -1, 5, 0x0F0F});
    const Tensor b = i32({2}, {10, 0x00FF});
    auto y = runOne(OpKind::BitwiseAnd, {a, b});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 2}, {8, 0x00FF, 0, 0x000F}, 0);
    y = runOne(OpKind::BitwiseOr, {a, b});
    expectValues(y[0], {2, 2}, {14, -1, 15, 0x0FFF}, 0);
    y = runOne(OpKind::BitwiseXor, {a, b});
    expectValues(y[0], {2, 2}, {6, -256, 15, 0x0FF0}, 0);
    y = runOne(OpKind::BitwiseNot, {u8({3}, {0, 1, 0xF0})});
    EXPECT_EQ(y[0].dtype(), DType::U8);
    expectValues(y[0], {3}, {255, 254, 0x0F}, 0);
    EXPECT_NE(failure(OpKind::BitwiseAnd, {f64({1}, {1}), f64({1}, {1})}).find("must be an integer"), std::string::npos);
}

TEST(BitShift, ShiftsUnsignedBytesAndDropsWhatFallsOff) {
    auto y = runOne(OpKind::BitShift, {u8({4}, {1, 0x81, 16, 255}), u8({4}, {1, 1, 4, 8})}, {{"direction", std::string("LEFT")}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {4}, {2, 2, 0, 0}, 0);
    y = runOne(OpKind::BitShift, {u8({4}, {1, 0x81, 16, 255}), u8({1}, {1})}, {{"direction", std::string("RIGHT")}});
    expectValues(y[0], {4}, {0, 0x40, 8, 127}, 0);
    EXPECT_NE(failure(OpKind::BitShift, {u8({1}, {1}), u8({1}, {1})}).find("direction"), std::string::npos);
}

TEST(ScatterND, ReplacesAndReducesSlicesAtIndexTuples) {
    // data 2 x 3; indices [[1], [0], [1]] pick rows; updates one row each.
    const Tensor data = f64({2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor rows = i64({2, 1}, {1, -2});
    auto y = runOne(OpKind::ScatterND, {data, rows, f64({2, 3}, {7, 8, 9, 10, 11, 12})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 3}, {10, 11, 12, 7, 8, 9}, 0);
    // Element tuples with a repeated index: add sums both updates, max keeps the larger.
    const Tensor cells = i64({3, 2}, {0, 1, 1, 2, 0, 1});
    const Tensor updates = f64({3}, {10, -1, 5});
    y = runOne(OpKind::ScatterND, {data, cells, updates}, {{"reduction", std::string("add")}});
    expectValues(y[0], {2, 3}, {1, 17, 3, 4, 5, 5}, 0);
    y = runOne(OpKind::ScatterND, {data, cells, updates}, {{"reduction", std::string("max")}});
    expectValues(y[0], {2, 3}, {1, 10, 3, 4, 5, 6}, 0);
    y = runOne(OpKind::ScatterND, {data, cells, updates}, {{"reduction", std::string("min")}});
    expectValues(y[0], {2, 3}, {1, 2, 3, 4, 5, -1}, 0);
    // Empty index tuples (k = 0) address all of data: two of them, added.
    y = runOne(OpKind::ScatterND, {data, Tensor(DType::I64, {2, 0}), f64({2, 2, 3}, {1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2})},
               {{"reduction", std::string("add")}});
    expectValues(y[0], {2, 3}, {4, 5, 6, 7, 8, 9}, 0);
    EXPECT_NE(failure(OpKind::ScatterND, {data, i64({1, 1}, {2}), f64({1, 3}, {0, 0, 0})}).find("outside 0..1"),
              std::string::npos);
    EXPECT_NE(failure(OpKind::ScatterND, {data, rows, f64({2, 2}, {0, 0, 0, 0})}).find("updates"), std::string::npos);
}

TEST(Compress, KeepsTheSlicesItsConditionSelects) {
    const Tensor x = f64({2, 3}, {1, 2, 3, 4, 5, 6});
    // Along axis 1, a condition shorter than the axis: column 0 kept, 1 dropped, 2 dropped.
    auto y = runOne(OpKind::Compress, {x, boolean({2}, {1, 0})}, {{"axis", int64_t{1}}}, 1, DType::F64, {1});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 1}, {1, 4}, 0);
    // No axis: the flattened input.
    y = runOne(OpKind::Compress, {x, boolean({5}, {0, 1, 1, 0, 1})}, {}, 1, DType::F64, {1});
    expectValues(y[0], {3}, {2, 3, 5}, 0);
    EXPECT_NE(failure(OpKind::Compress, {x, boolean({3}, {1, 1, 1})}, {{"axis", int64_t{0}}}).find("more than the 2"),
              std::string::npos);
}

TEST(ReverseSequence, ReversesEachEntrysFirstSteps) {
    // batch_axis 0, time_axis 1: entry 0 reverses its first 3 steps, entry 1 its first 1 (none).
    const Tensor x = f64({2, 4}, {0, 1, 2, 3, 10, 11, 12, 13});
    auto y = runOne(OpKind::ReverseSequence, {x, i64({2}, {3, 1})}, {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 4}, {2, 1, 0, 3, 10, 11, 12, 13}, 0);
    // time_axis 0 (the default), with a trailing dim that moves along.
    const Tensor z = f64({3, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    y = runOne(OpKind::ReverseSequence, {z, i64({2}, {3, 2})});
    expectValues(y[0], {3, 2, 2}, {8, 9, 6, 7, 4, 5, 2, 3, 0, 1, 10, 11}, 0);
    EXPECT_NE(failure(OpKind::ReverseSequence, {x, i64({2}, {5, 1})}, {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}})
                  .find("outside 0..4"),
              std::string::npos);
}

TEST(EyeLike, OnesOnTheKthDiagonalInItsDtype) {
    auto y = runOne(OpKind::EyeLike, {f64({3, 4}, std::vector<double>(12, 7.0))}, {{"k", int64_t{1}}, {"dtype", int64_t{7}}});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::I64);
    expectValues(y[0], {3, 4}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 0);
    y = runOne(OpKind::EyeLike, {f64({3, 2}, std::vector<double>(6, 0.0))}, {{"k", int64_t{-1}}});
    expectValues(y[0], {3, 2}, {0, 0, 1, 0, 0, 1}, 0);
    EXPECT_NE(failure(OpKind::EyeLike, {f64({2}, {0, 0})}).find("must be 2-D"), std::string::npos);
}

TEST(ScatterElements, ReducesWithMaxAndMinAsOpset18Allows) {
    const Tensor data = f64({1, 4}, {1, 5, 3, 7});
    const Tensor indices = i64({1, 3}, {1, 1, 3});
    const Tensor updates = f64({1, 3}, {9, 2, 4});
    auto y = runOne(OpKind::ScatterElements, {data, indices, updates}, {{"axis", int64_t{1}}, {"reduction", std::string("max")}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 4}, {1, 9, 3, 7}, 0);
    y = runOne(OpKind::ScatterElements, {data, indices, updates}, {{"axis", int64_t{1}}, {"reduction", std::string("min")}});
    expectValues(y[0], {1, 4}, {1, 2, 3, 4}, 0);
}
