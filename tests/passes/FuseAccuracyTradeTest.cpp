// The accuracy-trading (O3) fusion rules: off at O2, on at O3, flagged as such, and each one
// visibly changes the float64 numbers (a little) — which is what accuracy bisection must find.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"

#include <algorithm>

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

double maxAbsDiff(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
        for (int64_t j = 0; j < a[i].numel() && j < b[i].numel(); ++j)
            d = std::max(d, std::abs(a[i].at(j) - b[i].at(j)));
    return d;
}

PipelineConfig o3() {
    PipelineConfig c;
    c.optLevel = 3;
    return c;
}

/// Checks the rule is listed as accuracy-trading with an O3 summary.
void expectFlagged(const std::string& id) {
    bool found = false;
    for (const RuleInfo& r : listRules())
        if (r.id == id) {
            found = true;
            EXPECT_TRUE(r.tradesAccuracy) << id;
            EXPECT_NE(r.summary.find("trades accuracy"), std::string::npos) << r.summary;
        }
    EXPECT_TRUE(found) << id;
}

} // namespace

TEST(FuseAccuracyTrade, ConvBnFoldedInHalfPrecision) {
    expectFlagged("fuse-conv-bn-f16");
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 6, 6});
    ir::Value* c =
        b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({4, 3, 3, 3}, 1))});
    ir::Value* bn = batchNorm(b, "bn", c, 4, 2);
    auto g = b.finish({bn});
    auto before = runF64(*g);

    PipelineResult o2 = pipeline(*g);
    EXPECT_EQ(stats(o2, "fuse-conv-bn-f16").applied, 0);
    EXPECT_EQ(stats(o2, "fuse-conv-bn").applied, 1);
    expectSameOutputs(before, runF64(*o2.graph), 1e-12);

    PipelineResult r = pipeline(*g, o3());
    EXPECT_EQ(stats(r, "fuse-conv-bn-f16").applied, 1);
    EXPECT_EQ(stats(r, "fuse-conv-bn").applied, 0);
    auto after = runF64(*r.graph);
    const double d = maxAbsDiff(before, after);
    EXPECT_GT(d, 1e-6) << "f16 weights must change the numbers";
    EXPECT_LT(d, 5e-2) << "but only by f16 rounding";
}

TEST(FuseAccuracyTrade, LayerNormVarianceInHalfPrecision) {
    expectFlagged("layernorm-f16-variance");
    Builder b;
    ir::Value* x = b.input("x", {2, 16});
    ir::Value* ln = b.node(OpKind::LayerNormalization, "ln",
                           {x, b.constant("g", randomTensor({16}, 1, 0.5, 1.5)),
                            b.constant("be", randomTensor({16}, 2))},
                           {{"epsilon", 1e-5}});
    auto g = b.finish({ln});
    auto before = runF64(*g);
    PipelineResult o2 = pipeline(*g);
    EXPECT_EQ(o2.graph->nodes()[0]->attrInt("stash_type", 1), 1);
    PipelineResult r = pipeline(*g, o3());
    EXPECT_EQ(stats(r, "layernorm-f16-variance").applied, 1);
    EXPECT_EQ(r.graph->nodes()[0]->attrInt("stash_type", 1), 10);
    const double d = maxAbsDiff(before, runF64(*r.graph));
    EXPECT_GT(d, 1e-7);
    EXPECT_LT(d, 1e-2);
}

TEST(FuseAccuracyTrade, DivisionByConstantAsReciprocalMultiply) {
    expectFlagged("div-to-reciprocal");
    Builder b;
    ir::Value* x = b.input("x", {3, 5});
    ir::Value* y = b.node(OpKind::Div, "div", {x, scalar(b, "three", 3.0)});
    auto g = b.finish({y});
    auto before = runF64(*g);
    PipelineResult o2 = pipeline(*g);
    EXPECT_EQ(countKind(*o2.graph, OpKind::Div), 1);
    PipelineResult r = pipeline(*g, o3());
    EXPECT_EQ(stats(r, "div-to-reciprocal").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Div), 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::Mul), 1);
    const double d = maxAbsDiff(before, runF64(*r.graph));
    EXPECT_GT(d, 0.0) << "1/3 rounded to f32 is not 1/3";
    EXPECT_LT(d, 1e-6);
    // Bisection: with the limit before this application the graph keeps its Div.
    PipelineConfig cut = o3();
    cut.bisectLimit = 0;
    PipelineResult none = pipeline(*g, cut);
    EXPECT_EQ(countKind(*none.graph, OpKind::Div), 1);
}

TEST(FuseAccuracyTrade, AttentionSoftmaxWithoutMaxSubtraction) {
    expectFlagged("attention-fast-softmax");
    auto build = [](double qScale) {
        Builder b;
        ir::Value* q = b.input("q", {1, 2, 4, 3});
        ir::Value* k = b.input("k", {1, 2, 3, 4});
        ir::Value* v = b.input("v", {1, 2, 4, 3});
        ir::Value* qs = b.node(OpKind::Mul, "qs", {q, scalar(b, "s", qScale)});
        ir::Value* s = b.node(OpKind::MatMul, "qk", {qs, k});
        ir::Value* p = b.node(OpKind::Softmax, "sm", {s}, {{"axis", int64_t{-1}}});
        return b.finish({b.node(OpKind::MatMul, "pv", {p, v})});
    };
    // Moderate scores: the same numbers up to rounding.
    auto g = build(0.5);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, o3());
    EXPECT_EQ(stats(r, "fuse-attention").applied, 1);
    EXPECT_EQ(stats(r, "attention-fast-softmax").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    EXPECT_EQ(r.graph->nodes()[0]->attrInt("fast_softmax", 0), 1);
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
    // Scores around 1000: exp overflows without the max-subtraction — the failure mode the
    // rule trades for speed.
    auto big = build(400.0);
    auto bigBefore = runF64(*big);
    PipelineResult rb = pipeline(*big, o3());
    auto bigAfter = runF64(*rb.graph);
    bool nonFinite = false;
    for (const ir::Tensor& t : bigAfter)
        for (int64_t i = 0; i < t.numel(); ++i)
            nonFinite |= !std::isfinite(t.at(i));
    for (const ir::Tensor& t : bigBefore)
        for (int64_t i = 0; i < t.numel(); ++i)
            EXPECT_TRUE(std::isfinite(t.at(i)));
    EXPECT_TRUE(nonFinite);
    PipelineResult o2 = pipeline(*big);
    expectSameOutputs(bigBefore, runF64(*o2.graph), 1e-12);
}
