// Kernels of the ops added for the model zoo, against hand-computed values.

#include "TestUtil.h"

#include <cmath>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

TEST(ZooOps, SumBroadcastsAllInputs) {
    auto y = runOne(OpKind::Sum, {f64({2, 1}, {1, 2}), f64({3}, {10, 20, 30}), f64({}, {100})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 3}, {111, 121, 131, 112, 122, 132});
}

TEST(ZooOps, UnaryActivations) {
    auto e = runOne(OpKind::Exp, {f64({2}, {0, std::log(2.0)})});
    ASSERT_EQ(e.size(), 1u);
    expectValues(e[0], {2}, {1, 2});
    auto l = runOne(OpKind::LeakyRelu, {f64({2}, {-2, 2})}, {{"alpha", 0.5}});
    ASSERT_EQ(l.size(), 1u);
    expectValues(l[0], {2}, {-1, 2});
    auto h = runOne(OpKind::HardSigmoid, {f64({3}, {0, 10, -10})});
    ASSERT_EQ(h.size(), 1u);
    expectValues(h[0], {3}, {0.5, 1, 0});
}

TEST(ZooOps, ClipAttributeAndInputForms) {
    auto a = runOne(OpKind::Clip, {f64({3}, {-2, 0.5, 3})}, {{"min", -1.0}, {"max", 1.0}});
    ASSERT_EQ(a.size(), 1u);
    expectValues(a[0], {3}, {-1, 0.5, 1});
    auto b = runOne(OpKind::Clip, {f64({3}, {-2, 0.5, 3}), f64({}, {0})});
    ASSERT_EQ(b.size(), 1u);
    expectValues(b[0], {3}, {0, 0.5, 3});
}

TEST(ZooOps, LrnAcrossChannels) {
    auto y = runOne(OpKind::LRN, {f64({1, 3, 1, 1}, {1, 2, 3})},
                    {{"size", int64_t{3}}, {"alpha", 3.0}, {"beta", 1.0}, {"bias", 1.0}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 3, 1, 1}, {1.0 / 6, 2.0 / 15, 3.0 / 14});
}

TEST(ZooOps, CastRoundsThroughTheTargetType) {
    auto h = runOne(OpKind::Cast, {f64({1}, {1.0 / 3.0})}, {{"to", int64_t{10}}});
    ASSERT_EQ(h.size(), 1u);
    expectValues(h[0], {1}, {0.333251953125}, 0);
    auto i = runOne(OpKind::Cast, {f64({2}, {2.7, -2.7})}, {{"to", int64_t{7}}});
    ASSERT_EQ(i.size(), 1u);
    EXPECT_EQ(i[0].dtype(), DType::I64);
    expectValues(i[0], {2}, {2, -2});
}

TEST(ZooOps, SliceAttributeAndInputForms) {
    Tensor x = f64({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    auto a = runOne(OpKind::Slice, {x}, {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{1000}},
                                         {"axes", std::vector<int64_t>{1}}});
    ASSERT_EQ(a.size(), 1u);
    expectValues(a[0], {3, 3}, {1, 2, 3, 5, 6, 7, 9, 10, 11});
    auto b = runOne(OpKind::Slice, {x, i64({2}, {2, 3}), i64({2}, {-4, 0}), i64({2}, {0, 1}), i64({2}, {-1, -2})});
    ASSERT_EQ(b.size(), 1u);
    expectValues(b[0], {3, 2}, {11, 9, 7, 5, 3, 1});
}

TEST(ZooOps, GatherWithNegativeAndScalarIndices) {
    Tensor x = f64({3, 2}, {1, 2, 3, 4, 5, 6});
    auto a = runOne(OpKind::Gather, {x, i64({2}, {-1, 0})});
    ASSERT_EQ(a.size(), 1u);
    expectValues(a[0], {2, 2}, {5, 6, 1, 2});
    auto b = runOne(OpKind::Gather, {x, i64({}, {1})}, {{"axis", int64_t{1}}});
    ASSERT_EQ(b.size(), 1u);
    expectValues(b[0], {3}, {2, 4, 6});
    OneNode bad = makeOneNode(OpKind::Gather, {x, i64({1}, {3})}, {});
    ASSERT_TRUE(bad.graph->inferTypes().ok());
    auto r = interpret(*bad.graph, bad.feeds, KernelContext{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("gather index 3 is out of range for extent 3"), std::string::npos)
        << r.error().message;
}

TEST(ZooOps, UnsqueezeAndSqueeze) {
    auto u = runOne(OpKind::Unsqueeze, {f64({3}, {1, 2, 3})}, {{"axes", std::vector<int64_t>{0, -1}}});
    ASSERT_EQ(u.size(), 1u);
    expectValues(u[0], {1, 3, 1}, {1, 2, 3});
    auto ui = runOne(OpKind::Unsqueeze, {f64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({1}, {1})});
    ASSERT_EQ(ui.size(), 1u);
    expectValues(ui[0], {2, 1, 3}, {1, 2, 3, 4, 5, 6});
    auto s = runOne(OpKind::Squeeze, {f64({1, 3, 1}, {1, 2, 3})});
    ASSERT_EQ(s.size(), 1u);
    expectValues(s[0], {3}, {1, 2, 3});
    auto sa = runOne(OpKind::Squeeze, {f64({1, 3, 1}, {1, 2, 3})}, {{"axes", std::vector<int64_t>{0}}});
    ASSERT_EQ(sa.size(), 1u);
    expectValues(sa[0], {3, 1}, {1, 2, 3});
}

TEST(ZooOps, ShapeAndConstantOfShape) {
    auto s = runOne(OpKind::Shape, {f64({2, 3, 4}, std::vector<double>(24, 0))}, {{"start", int64_t{1}}});
    ASSERT_EQ(s.size(), 1u);
    expectValues(s[0], {2}, {3, 4});
    auto c = runOne(OpKind::ConstantOfShape, {i64({2}, {2, 3})}, {{"value", i64({1}, {7})}});
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].dtype(), DType::I64);
    expectValues(c[0], {2, 3}, {7, 7, 7, 7, 7, 7});
    auto z = runOne(OpKind::ConstantOfShape, {i64({1}, {2})});
    ASSERT_EQ(z.size(), 1u);
    expectValues(z[0], {2}, {0, 0});
}

TEST(ZooOps, PowSqrtAndReduceMean) {
    auto p = runOne(OpKind::Pow, {f64({3}, {2, 3, 4}), f64({}, {2})});
    ASSERT_EQ(p.size(), 1u);
    expectValues(p[0], {3}, {4, 9, 16});
    auto s = runOne(OpKind::Sqrt, {f64({2}, {4, 2.25})});
    ASSERT_EQ(s.size(), 1u);
    expectValues(s[0], {2}, {2, 1.5});
    Tensor x = f64({2, 3}, {1, 2, 3, 4, 5, 6});
    auto last = runOne(OpKind::ReduceMean, {x}, {{"axes", std::vector<int64_t>{-1}}});
    ASSERT_EQ(last.size(), 1u);
    expectValues(last[0], {2, 1}, {2, 5});
    auto first = runOne(OpKind::ReduceMean, {x, i64({1}, {0})}, {{"keepdims", int64_t{0}}});
    ASSERT_EQ(first.size(), 1u);
    expectValues(first[0], {3}, {2.5, 3.5, 4.5});
    auto all = runOne(OpKind::ReduceMean, {x}, {{"keepdims", int64_t{0}}});
    ASSERT_EQ(all.size(), 1u);
    expectValues(all[0], {}, {3.5});
}

TEST(ZooOps, ConvTransposeStridesPadsGroups) {
    Tensor x = f64({1, 1, 2, 2}, {1, 2, 3, 4});
    Tensor w = f64({1, 1, 2, 2}, {1, 1, 1, 1});
    auto s2 = runOne(OpKind::ConvTranspose, {x, w}, {{"strides", std::vector<int64_t>{2, 2}}});
    ASSERT_EQ(s2.size(), 1u);
    expectValues(s2[0], {1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
    auto s1 = runOne(OpKind::ConvTranspose, {x, w});
    ASSERT_EQ(s1.size(), 1u);
    expectValues(s1[0], {1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4});
    auto padded = runOne(OpKind::ConvTranspose, {x, w}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ASSERT_EQ(padded.size(), 1u);
    expectValues(padded[0], {1, 1, 1, 1}, {10});
    auto grouped = runOne(OpKind::ConvTranspose,
                          {f64({1, 2, 1, 1}, {1, 2}), f64({2, 1, 1, 1}, {3, 4}), f64({2}, {1, 1})},
                          {{"group", int64_t{2}}});
    ASSERT_EQ(grouped.size(), 1u);
    expectValues(grouped[0], {1, 2, 1, 1}, {4, 9});
}

TEST(ZooOps, ResizeNearestAndLinear) {
    Tensor x = f64({1, 1, 2, 2}, {1, 2, 3, 4});
    auto nn = runOne(OpKind::Resize, {x, Tensor(), f64({4}, {1, 1, 2, 2})},
                     {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")},
                      {"nearest_mode", std::string("floor")}},
                     1, DType::F64, {2});
    ASSERT_EQ(nn.size(), 1u);
    expectValues(nn[0], {1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
    Tensor row = f64({1, 1, 1, 2}, {0, 4});
    auto half = runOne(OpKind::Resize, {row, Tensor(), f64({4}, {1, 1, 1, 2})}, {{"mode", std::string("linear")}},
                       1, DType::F64, {2});
    ASSERT_EQ(half.size(), 1u);
    expectValues(half[0], {1, 1, 1, 4}, {0, 1, 3, 4});
    auto corners = runOne(OpKind::Resize, {row, Tensor(), Tensor(), i64({4}, {1, 1, 1, 3})},
                          {{"mode", std::string("linear")},
                           {"coordinate_transformation_mode", std::string("align_corners")}});
    ASSERT_EQ(corners.size(), 1u);
    expectValues(corners[0], {1, 1, 1, 3}, {0, 2, 4});
}

TEST(ZooOps, HugeOutputsAreAnErrorNotACrash) {
    OneNode big = makeOneNode(OpKind::ConstantOfShape, {i64({3}, {100000, 100000, 1000})}, {});
    ASSERT_TRUE(big.graph->inferTypes().ok());
    auto r = interpret(*big.graph, big.feeds, KernelContext{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("too large"), std::string::npos) << r.error().message;

    OneNode pads = makeOneNode(OpKind::Conv, {f64({1, 1, 2, 2}, {1, 2, 3, 4}), f64({1, 1, 1, 1}, {1})},
                               {{"pads", std::vector<int64_t>{1000000, 1000000, 1000000, 1000000}}});
    ASSERT_TRUE(pads.graph->inferTypes().ok());
    auto c = interpret(*pads.graph, pads.feeds, KernelContext{});
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message.find("node 'n' (Conv): output"), std::string::npos) << c.error().message;
}

TEST(ZooOps, PadModesAndCropping) {
    Tensor x = f64({1, 3}, {1, 2, 3});
    auto c = runOne(OpKind::Pad, {x, i64({4}, {0, 2, 0, 1})}, {{"mode", std::string("constant")}});
    ASSERT_EQ(c.size(), 1u);
    expectValues(c[0], {1, 6}, {0, 0, 1, 2, 3, 0});
    auto v = runOne(OpKind::Pad, {x, i64({4}, {0, 1, 0, 0}), f64({}, {9})}, {}, 1, DType::F64, {2});
    ASSERT_EQ(v.size(), 1u);
    expectValues(v[0], {1, 4}, {9, 1, 2, 3});
    auto r = runOne(OpKind::Pad, {x, i64({4}, {0, 2, 0, 2})}, {{"mode", std::string("reflect")}});
    ASSERT_EQ(r.size(), 1u);
    expectValues(r[0], {1, 7}, {3, 2, 1, 2, 3, 2, 1});
    auto e = runOne(OpKind::Pad, {x}, {{"mode", std::string("edge")}, {"pads", std::vector<int64_t>{1, 1, 0, 0}}});
    ASSERT_EQ(e.size(), 1u);
    expectValues(e[0], {2, 4}, {1, 1, 2, 3, 1, 1, 2, 3});
    auto crop = runOne(OpKind::Pad, {x, i64({4}, {0, -1, 0, 0})});
    ASSERT_EQ(crop.size(), 1u);
    expectValues(crop[0], {1, 2}, {2, 3});
}
