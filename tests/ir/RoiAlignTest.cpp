// RoiAlign on a map whose values are linear in the position (v = 4y + x), where bilinear samples
// are exact, so each bin's average is the map at the bin's mean sample position; plus the
// version-10 default, bad batch indices, and the row.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"
#include "core/ir/Verifier.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor linearMap() {
    std::vector<double> v(16);
    for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x)
            v[static_cast<size_t>(4 * y + x)] = 4.0 * y + x;
    return f64({1, 1, 4, 4}, v);
}

AttributeMap grid2x2(const char* mode) {
    return {{"output_height", int64_t{2}},
            {"output_width", int64_t{2}},
            {"sampling_ratio", int64_t{2}},
            {"coordinate_transformation_mode", std::string(mode)}};
}

} // namespace

TEST(RoiAlign, HalfPixelShiftsTheRegionByHalfAPixel) {
    // (0.5, 0.5)-(2.5, 2.5) becomes (0, 0)-(2, 2): bins of one pixel, centred at 0.5 and 1.5.
    auto y = runOne(OpKind::RoiAlign, {linearMap(), f64({1, 4}, {0.5, 0.5, 2.5, 2.5}), i64({1}, {0})},
                    grid2x2("half_pixel"));
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 2, 2}, {2.5, 3.5, 6.5, 7.5}, 1e-12);
}

TEST(RoiAlign, OutputHalfPixelTakesTheCornersAsGiven) {
    // Bins centred at 1 and 2.
    auto y = runOne(OpKind::RoiAlign, {linearMap(), f64({1, 4}, {0.5, 0.5, 2.5, 2.5}), i64({1}, {0})},
                    grid2x2("output_half_pixel"));
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 2, 2}, {5.0, 6.0, 9.0, 10.0}, 1e-12);
    // Version 10 had only this behaviour: a node of opset 10 without the attribute reads it so.
    AttributeMap v10 = grid2x2("output_half_pixel");
    v10.erase("coordinate_transformation_mode");
    v10["_opset"] = int64_t{10};
    auto old = runOne(OpKind::RoiAlign, {linearMap(), f64({1, 4}, {0.5, 0.5, 2.5, 2.5}), i64({1}, {0})}, v10);
    ASSERT_EQ(old.size(), 1u);
    expectValues(old[0], {1, 1, 2, 2}, {5.0, 6.0, 9.0, 10.0}, 1e-12);
}

TEST(RoiAlign, SpatialScaleAndSamplesOffTheMap) {
    // Scale 0.5 maps (2, 2)-(6, 6) to (1, 1)-(3, 3), half_pixel to (0.5, 0.5)-(2.5, 2.5): one bin,
    // its 2 x 2 samples at 1 and 2, mean position (1.5, 1.5).
    AttributeMap one{{"sampling_ratio", int64_t{2}}, {"spatial_scale", 0.5}};
    auto y = runOne(OpKind::RoiAlign, {linearMap(), f64({1, 4}, {2, 2, 6, 6}), i64({1}, {0})}, one);
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 1, 1}, {7.5}, 1e-12);
    // A region far outside the map: every sample counts as 0.
    auto off = runOne(OpKind::RoiAlign, {linearMap(), f64({1, 4}, {20, 20, 30, 30}), i64({1}, {0})},
                      AttributeMap{{"sampling_ratio", int64_t{2}}});
    ASSERT_EQ(off.size(), 1u);
    expectValues(off[0], {1, 1, 1, 1}, {0.0}, 0);
}

TEST(RoiAlign, ABatchIndexPastTheInputIsAnError) {
    OneNode one = makeOneNode(OpKind::RoiAlign, {linearMap(), f64({1, 4}, {0, 0, 2, 2}), i64({1}, {3})}, {});
    ASSERT_TRUE(one.graph->inferTypes().ok());
    auto r = interpret(*one.graph, one.feeds, KernelContext{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("batch_indices[0] = 3 is not an image of the input's 1"), std::string::npos)
        << r.error().message;
    OneNode mode = makeOneNode(OpKind::RoiAlign, {linearMap(), f64({1, 4}, {0, 0, 2, 2}), i64({1}, {0})},
                               {{"mode", std::string("median")}});
    ASSERT_TRUE(mode.graph->inferTypes().ok());
    Status st = verifyGraph(*mode.graph);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("attribute 'mode'"), std::string::npos) << st.error().message;
}
