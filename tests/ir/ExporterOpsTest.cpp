// CastLike, MeanVarianceNormalization and GatherND (ops/ExporterOps.cpp) against values computed
// independently: numpy for MeanVarianceNormalization (ONNX's defining function), by hand for the
// others. ONNX's own node tests for them run in tests/conformance.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

#include <cmath>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

std::vector<double> mvnInput() {
    std::vector<double> x;
    for (int i = 0; i < 24; ++i)
        x.push_back(std::pow(static_cast<double>(i), 1.5) / 7.0);
    return x;
}

} // namespace

TEST(CastLike, TakesTheSecondInputsDtype) {
    auto y = runOne(OpKind::CastLike, {f64({3}, {1.7, -2.5, 3.0}), i64({1}, {0})});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::I64);
    expectValues(y[0], {3}, {1, -2, 3}, 0); // float to integer truncates toward zero, as Cast
    auto h = runOne(OpKind::CastLike, {f64({2}, {1.0 / 3.0, 65504.0}), Tensor::fromVector<float>({1}, {0.0f})}, {}, 1,
                    DType::F32);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0].dtype(), DType::F32);
    expectValues(h[0], {2}, {static_cast<double>(1.0f / 3.0f), 65504.0}, 0);
}

TEST(MeanVarianceNormalization, DefaultAxesAreBatchHeightAndWidth) {
    const std::vector<double> want = {
        -1.2612990900196237, -1.1768159687604616, -1.0223447382669884,  -0.822311914811011,  -0.5854341199463278,
        -0.31674907958540466, -0.01965585624387537, 0.3033502118201723,  0.6503357240014584,  1.0197451839777498,
        1.4102917801718187,  1.820887867662493,    -1.5131054178893764, -1.2678120456924438, -1.0128932696911523,
        -0.7486996963763023, -0.4755461867643819,  -0.19371754858490448, 0.09652696544292125, 0.39495004928056604,
        0.7013334107973873,  1.0154753601132385,   1.33718880570214,     1.6662995736623072};
    auto y = runOne(OpKind::MeanVarianceNormalization, {f64({1, 2, 3, 4}, mvnInput())});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 3, 4}, want, 1e-12);
}

TEST(MeanVarianceNormalization, OverTheLastAxisOnly) {
    auto y = runOne(OpKind::MeanVarianceNormalization, {f64({1, 2, 3, 4}, mvnInput())},
                    {{"axes", std::vector<int64_t>{-1}}});
    ASSERT_EQ(y.size(), 1u);
    const std::vector<double> got = y[0].toDoubles();
    const std::vector<double> want = {-1.141009194690046, -0.6352751873868052, 0.2894225894730285, 1.486861792603823,
                                      -1.299184963946432, -0.4889205371366498, 0.4070134902901524, 1.3810920107929296};
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-12) << i;
    const std::string bad = failure(OpKind::MeanVarianceNormalization, {f64({1, 2}, {1, 2})},
                                    {{"axes", std::vector<int64_t>{5}}});
    EXPECT_NE(bad.find("mean variance normalization axis"), std::string::npos) << bad;
}

TEST(GatherND, PicksElementsAndSlicesByIndexTuples) {
    // data [[0, 1], [2, 3]]: tuples (0, 0), (1, 1) pick elements; tuples (1), (0) pick rows.
    const Tensor data = f64({2, 2}, {0, 1, 2, 3});
    auto elements = runOne(OpKind::GatherND, {data, i64({2, 2}, {0, 0, 1, 1})});
    ASSERT_EQ(elements.size(), 1u);
    expectValues(elements[0], {2}, {0, 3}, 0);
    auto rows = runOne(OpKind::GatherND, {data, i64({2, 1}, {1, -2})});
    ASSERT_EQ(rows.size(), 1u);
    expectValues(rows[0], {2, 2}, {2, 3, 0, 1}, 0);
}

TEST(GatherND, BatchDimsShareLeadingDims) {
    // data [2, 2, 2] = 0..7, batch_dims 1, indices [[1], [0]]: batch 0 row 1, batch 1 row 0.
    auto y = runOne(OpKind::GatherND, {f64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), i64({2, 1}, {1, 0})},
                    {{"batch_dims", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 2}, {2, 3, 4, 5}, 0);
}

TEST(GatherND, OutOfRangeIndexAndTooDeepTuplesAreErrors) {
    const Tensor data = f64({2, 2}, {0, 1, 2, 3});
    const std::string range = failure(OpKind::GatherND, {data, i64({1, 2}, {0, 2})});
    EXPECT_NE(range.find("index 2 is outside 0..1 on dim 1"), std::string::npos) << range;
    const std::string deep = failure(OpKind::GatherND, {data, i64({1, 3}, {0, 0, 0})});
    EXPECT_NE(deep.find("index 3 dims past batch_dims 0"), std::string::npos) << deep;
}
