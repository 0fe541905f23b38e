// Decomposed LayerNorm and HardSwish recognised as one op: float64 results before/after, the
// spellings exporters use, and the rejections with their reasons.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

struct LnOptions {
    std::vector<int64_t> axes{-1};
    bool affine = true;
    std::vector<int64_t> gammaShape{8};
    bool extraCentredUser = false;
};

/// x[2,3,8] -> decomposed LayerNorm -> Add(x, ln) (x is shared with a residual).
std::unique_ptr<ir::Graph> decomposedLayerNorm(const LnOptions& o) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3, 8});
    ir::Value* mean = b.node(OpKind::ReduceMean, "rm1", {x}, {{"axes", o.axes}});
    ir::Value* d = b.node(OpKind::Sub, "sub", {x, mean});
    ir::Value* sq = b.node(OpKind::Pow, "pow", {d, scalar(b, "two", 2.0)});
    ir::Value* var = b.node(OpKind::ReduceMean, "rm2", {sq}, {{"axes", o.axes}});
    ir::Value* ve = b.node(OpKind::Add, "addeps", {var, scalar(b, "eps", 1e-5)});
    ir::Value* sd = b.node(OpKind::Sqrt, "sqrt", {ve});
    ir::Value* y = b.node(OpKind::Div, "div", {d, sd});
    if (o.affine) {
        y = b.node(OpKind::Mul, "gamma_mul",
                   {y, b.constant("gamma", randomTensor(o.gammaShape, 1, 0.5, 1.5))});
        y = b.node(OpKind::Add, "beta_add",
                   {b.constant("beta", randomTensor(o.gammaShape, 2)), y});
    }
    std::vector<ir::Value*> outs{b.node(OpKind::Add, "residual", {x, y})};
    if (o.extraCentredUser)
        outs.push_back(b.node(OpKind::Relu, "peek", {d}));
    return b.finish(outs);
}

} // namespace

TEST(FuseLayerNorm, DecomposedLayerNormBecomesOneOp) {
    auto g = decomposedLayerNorm({});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-layernorm").applied, 1);
    ASSERT_EQ(countKind(*r.graph, OpKind::LayerNormalization), 1) << ir::printGraph(*r.graph);
    const ir::Node* ln = r.graph->findNode("rm1");
    ASSERT_NE(ln, nullptr);
    EXPECT_EQ(ln->kind(), OpKind::LayerNormalization);
    EXPECT_EQ(ln->attrInt("axis", 0), 2);
    EXPECT_DOUBLE_EQ(ln->attrFloat("epsilon", 0), 1e-5);
    EXPECT_EQ(ln->provenance().origins,
              (std::vector<std::string>{"addeps", "beta_add", "div", "gamma_mul", "pow", "rm1",
                                        "rm2", "sqrt", "sub"}));
    EXPECT_EQ(ln->provenance().createdBy, "fuse/fuse-layernorm");
    // The residual Add is what is left (perhaps grouped); no Reduce/Sub/Pow/Sqrt survives.
    EXPECT_EQ(countKind(*r.graph, OpKind::ReduceMean), 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::Sqrt), 0);
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
}

TEST(FuseLayerNorm, WithoutAffineAndOverTwoTrailingAxes) {
    for (LnOptions o : {LnOptions{{-1}, false, {8}, false}, LnOptions{{1, 2}, true, {3, 8}, false},
                        LnOptions{{-1}, true, {1}, false}}) {
        auto g = decomposedLayerNorm(o);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        EXPECT_EQ(stats(r, "fuse-layernorm").applied, 1);
        const ir::Node* ln = r.graph->findNode("rm1");
        ASSERT_NE(ln, nullptr);
        EXPECT_EQ(ln->kind(), OpKind::LayerNormalization);
        EXPECT_EQ(ln->attrInt("axis", 0), o.axes.size() == 2 ? 1 : 2);
        expectSameOutputs(before, runF64(*r.graph), 1e-12);
    }
}

TEST(FuseLayerNorm, RejectedWhenCentredValueIsUsedElsewhereOrAxesAreNotTrailing) {
    {
        LnOptions o;
        o.extraCentredUser = true;
        auto g = decomposedLayerNorm(o);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        const RuleStats& s = stats(r, "fuse-layernorm");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count("centred value has 3 users; a layernorm's has 2 (Pow and Div)"),
                  1u);
        EXPECT_EQ(countKind(*r.graph, OpKind::LayerNormalization), 0);
        expectSameOutputs(before, runF64(*r.graph), 1e-12);
    }
    {
        LnOptions o;
        o.axes = {1};
        o.gammaShape = {8};
        auto g = decomposedLayerNorm(o);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        const RuleStats& s = stats(r, "fuse-layernorm");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count("mean is not over trailing axes with keepdims"), 1u);
        expectSameOutputs(before, runF64(*r.graph), 1e-12);
    }
}

namespace {

enum class HsForm { MulThenDiv, MulThenMulSixth, ClipDivThenMul, HardSigmoid };

/// x -> Conv(no bias) -> decomposed HardSwish; the conv output has the two users of x.
std::unique_ptr<ir::Graph> convHardSwish(HsForm form, bool f32Constants = false) {
    Builder b;
    ir::Value* in = b.input("in", {1, 2, 5, 5});
    ir::Value* x =
        b.node(OpKind::Conv, "conv", {in, b.constant("w", randomTensor({3, 2, 1, 1}, 3, -3, 3))});
    // PaddleOCR's exporter writes f32 constants: 6 and 3 are exact, 1/6 is not.
    const double sixth = f32Constants ? static_cast<double>(1.0f / 6.0f) : 1.0 / 6.0;
    ir::Value* y = nullptr;
    if (form == HsForm::HardSigmoid) {
        ir::Value* h =
            b.node(OpKind::HardSigmoid, "hsig", {x}, {{"alpha", sixth}, {"beta", 0.5}});
        y = b.node(OpKind::Mul, "mul", {x, h});
    } else {
        ir::Value* a = b.node(OpKind::Add, "add3", {x, scalar(b, "three", 3.0)});
        ir::Value* c = b.node(OpKind::Clip, "clip", {a}, {{"min", 0.0}, {"max", 6.0}});
        if (form == HsForm::ClipDivThenMul) {
            ir::Value* d = b.node(OpKind::Div, "div6", {c, scalar(b, "six", 6.0)});
            y = b.node(OpKind::Mul, "mul", {d, x});
        } else {
            ir::Value* m = b.node(OpKind::Mul, "mul", {x, c});
            y = form == HsForm::MulThenDiv ? b.node(OpKind::Div, "div6", {m, scalar(b, "six", 6.0)})
                                           : b.node(OpKind::Mul, "div6", {scalar(b, "sixth", sixth), m});
        }
    }
    return b.finish({y});
}

} // namespace

TEST(FuseHardSwish, EverySpellingBecomesHardSwishThenJoinsTheConv) {
    for (HsForm form :
         {HsForm::MulThenDiv, HsForm::MulThenMulSixth, HsForm::ClipDivThenMul, HsForm::HardSigmoid}) {
        SCOPED_TRACE(static_cast<int>(form));
        auto g = convHardSwish(form);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(r, "fuse-hardswish").applied, 1);
        EXPECT_EQ(stats(r, "fuse-conv-bias-act").applied, 1);
        ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
        const ir::Node* n = r.graph->nodes()[0];
        EXPECT_EQ(n->kind(), OpKind::FusedConv);
        EXPECT_EQ(n->attrString("activation", ""), "HardSwish");
        expectSameOutputs(before, runF64(*r.graph), 1e-12);

        // With the conv rule off, the HardSwish op stands on its own.
        PipelineConfig cfg;
        cfg.disabled = {"fuse-conv-bias-act"};
        PipelineResult r2 = pipeline(*g, cfg);
        EXPECT_EQ(countKind(*r2.graph, OpKind::HardSwish), 1) << ir::printGraph(*r2.graph);
        expectSameOutputs(before, runF64(*r2.graph), 1e-12);
    }
}

TEST(FuseHardSwish, FloatThirtyTwoSixthIsAcceptedWithinItsRounding) {
    auto g = convHardSwish(HsForm::HardSigmoid, true);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-hardswish").applied, 1);
    // 1/6 in f32 is 1/6 * (1 + 3e-8): the op's exact 1/6 differs by that much, no more.
    expectSameOutputs(before, runF64(*r.graph), 1e-7);
}

TEST(FuseHardSwish, WrongBoundsAndSharedProductAreRejected) {
    {
        Builder b;
        ir::Value* x = b.input("x", {4, 4});
        ir::Value* a = b.node(OpKind::Add, "add3", {x, scalar(b, "three", 3.0)});
        ir::Value* c = b.node(OpKind::Clip, "clip", {a}, {{"min", 0.0}, {"max", 5.0}});
        ir::Value* m = b.node(OpKind::Mul, "mul", {x, c});
        ir::Value* y = b.node(OpKind::Div, "div6", {m, scalar(b, "six", 6.0)});
        auto g = b.finish({y});
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        EXPECT_EQ(stats(r, "fuse-hardswish").reasons.count("clip bounds are not [0, 6]"), 1u);
        EXPECT_EQ(countKind(*r.graph, OpKind::HardSwish), 0);
        expectSameOutputs(before, runF64(*r.graph));
    }
    {
        Builder b;
        ir::Value* x = b.input("x", {4, 4});
        ir::Value* a = b.node(OpKind::Add, "add3", {x, scalar(b, "three", 3.0)});
        ir::Value* c = b.node(OpKind::Clip, "clip", {a}, {{"min", 0.0}, {"max", 6.0}});
        ir::Value* m = b.node(OpKind::Mul, "mul", {x, c});
        ir::Value* y = b.node(OpKind::Div, "div6", {m, scalar(b, "six", 6.0)});
        ir::Value* z = b.node(OpKind::Neg, "peek", {m});
        auto g = b.finish({y, z});
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        EXPECT_EQ(stats(r, "fuse-hardswish").reasons.count(
                      "x * clip(x + 3, 0, 6) is not divided by 6 alone"),
                  1u);
        EXPECT_EQ(countKind(*r.graph, OpKind::HardSwish), 0);
        expectSameOutputs(before, runF64(*r.graph));
    }
}
