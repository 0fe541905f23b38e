// AffineGrid (ops/GridSample.cpp) against numpy: np.einsum('nij,...j->n...i', theta, points) over
// the (x, y[, z], 1) points of an np.meshgrid(indexing='ij') of np.linspace(-1, 1, S)
// (align_corners 1) or (2 * np.arange(S) + 1) / S - 1 (align_corners 0), a one-pixel dim at 0.

#include "TestUtil.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor theta2d() {
    return f64({2, 2, 3}, {1.0, 0.2, 0.1, -0.3, 0.8, 0.0, 0.5, -0.5, 0.25, 0.5, 0.5, -0.25});
}

} // namespace

TEST(AffineGrid, TwoDimensionalBothAlignments) {
    auto y = runOne(OpKind::AffineGrid, {theta2d(), i64({4}, {2, 3, 2, 3})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 2, 3, 2},
                 {-0.6666666666666667, -0.2, 0.0, -0.4, 0.6666666666666667, -0.6000000000000001, -0.4666666666666668,
                  0.6000000000000001, 0.2, 0.4, 0.8666666666666667, 0.2, 0.16666666666666663, -0.8333333333333334, 0.5,
                  -0.5, 0.8333333333333334, -0.16666666666666663, -0.33333333333333337, -0.33333333333333337, 0.0, 0.0,
                  0.33333333333333337, 0.33333333333333337},
                 1e-14);
    auto a = runOne(OpKind::AffineGrid, {theta2d(), i64({4}, {2, 3, 2, 3})}, {{"align_corners", int64_t{1}}});
    ASSERT_EQ(a.size(), 1u);
    expectValues(a[0], {2, 2, 3, 2},
                 {-1.1, -0.5, -0.1, -0.8, 0.9, -1.1, -0.7, 1.1, 0.3, 0.8, 1.3, 0.5, 0.25, -1.25, 0.75, -0.75, 1.25,
                  -0.25, -0.75, -0.25, -0.25, 0.25, 0.25, 0.75},
                 1e-14);
}

TEST(AffineGrid, ThreeDimensionalWithASinglePixelDim) {
    // size [1, 1, 2, 1, 3]: D 2, H 1 (at 0), W 3.
    auto y = runOne(OpKind::AffineGrid,
                    {f64({1, 3, 4}, {1.0, 0.1, 0.0, 0.5, 0.0, 1.0, 0.2, 0.0, 0.3, 0.0, 0.9, -0.1}),
                     i64({5}, {1, 1, 2, 1, 3})},
                    {{"align_corners", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 1, 3, 3},
                 {-0.5, -0.2, -1.3, 0.5, -0.2, -1.0, 1.5, -0.2, -0.7, -0.5, 0.2, 0.5, 0.5, 0.2, 0.8, 1.5, 0.2, 1.1},
                 1e-14);
}

TEST(AffineGrid, RejectsThetaOfTheWrongShapeOrBatch) {
    std::string why = failure(OpKind::AffineGrid, {theta2d(), i64({5}, {2, 3, 2, 3, 4})});
    EXPECT_NE(why.find("is for 2-D grids, but size gives 3 spatial dims"), std::string::npos) << why;
    why = failure(OpKind::AffineGrid, {theta2d(), i64({4}, {1, 3, 2, 3})});
    EXPECT_NE(why.find("differ in batch (1)"), std::string::npos) << why;
    why = failure(OpKind::AffineGrid, {f64({1, 2, 2}, {1, 0, 0, 1}), i64({4}, {1, 1, 2, 2})});
    EXPECT_NE(why.find("theta must be [N, 2, 3] or [N, 3, 4], got [1,2,2]"), std::string::npos) << why;
    why = failure(OpKind::AffineGrid, {theta2d(), i64({3}, {2, 3, 2})});
    EXPECT_NE(why.find("size must be [N, C, H, W] or [N, C, D, H, W]"), std::string::npos) << why;
}
