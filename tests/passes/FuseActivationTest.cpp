// Producer + activation fusion for every activation a fused kernel applies (Relu, LeakyRelu,
// Clip as Relu6 and with general bounds, Sigmoid, HardSigmoid, HardSwish), zero-Pad folding into
// Conv and Transpose absorption into Gemm: float64 results before/after, stats, rejections.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

struct Act {
    OpKind kind;
    ir::AttributeMap attrs;
    std::string name;
    std::vector<double> params;
    bool clipInputs = false; ///< opset-11 Clip: bounds as constant inputs
};

std::vector<Act> activations() {
    return {
        {OpKind::Relu, {}, "Relu", {}},
        {OpKind::LeakyRelu, {{"alpha", 0.3}}, "LeakyRelu", {0.3}},
        {OpKind::Clip, {{"min", 0.0}, {"max", 6.0}}, "Clip", {0.0, 6.0}},
        {OpKind::Clip, {}, "Clip", {-0.25, 0.5}, true},
        {OpKind::Sigmoid, {}, "Sigmoid", {}},
        {OpKind::HardSigmoid, {{"alpha", 0.3}, {"beta", 0.4}}, "HardSigmoid", {0.3, 0.4}},
        {OpKind::HardSwish, {}, "HardSwish", {}},
    };
}

ir::Value* addAct(Builder& b, const Act& a, ir::Value* in) {
    std::vector<ir::Value*> ins{in};
    if (a.clipInputs) {
        ins.push_back(b.constant("lo", ir::Tensor::fromVector<double>({}, {a.params[0]})));
        ins.push_back(b.constant("hi", ir::Tensor::fromVector<double>({}, {a.params[1]})));
    }
    return b.node(a.kind, "act", ins, a.attrs);
}

} // namespace

TEST(FuseConvBiasAct, EveryActivationFusesWithItsParameters) {
    for (const Act& a : activations()) {
        SCOPED_TRACE(a.name);
        Builder b;
        ir::Value* x = b.input("x", {1, 3, 5, 5});
        ir::Value* c = b.node(OpKind::Conv, "conv",
                              {x, b.constant("w", randomTensor({4, 3, 3, 3}, 1)),
                               b.constant("cb", randomTensor({4}, 2))},
                              {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        ir::Value* add =
            b.node(OpKind::Add, "add", {b.constant("bias", randomTensor({4, 1, 1}, 3)), c});
        auto g = b.finish({addAct(b, a, add)});
        auto before = runF64(*g, 5);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(r, "fuse-conv-bias-act").applied, 1);
        ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
        const ir::Node* n = r.graph->nodes()[0];
        EXPECT_EQ(n->kind(), OpKind::FusedConv);
        EXPECT_EQ(n->attrString("activation", "?"), a.name);
        EXPECT_EQ(n->attrFloats("activation_params"), a.params);
        EXPECT_EQ(n->provenance().origins, (std::vector<std::string>{"act", "add", "conv"}));
        expectSameOutputs(before, runF64(*r.graph, 5));
    }
}

TEST(FuseGemmBiasAct, EveryActivationFusesIntoGemmAndBatchedMatMul) {
    for (const Act& a : activations()) {
        for (std::vector<int64_t> xShape : {std::vector<int64_t>{3, 6}, {2, 3, 6}}) {
            SCOPED_TRACE(a.name + " rank " + std::to_string(xShape.size()));
            Builder b;
            ir::Value* x = b.input("x", xShape);
            ir::Value* m =
                b.node(OpKind::MatMul, "mm", {x, b.constant("w", randomTensor({6, 4}, 11))});
            // Broadcast bias [1,4] over the rows (and the batch).
            ir::Value* add =
                b.node(OpKind::Add, "add", {m, b.constant("bias", randomTensor({1, 4}, 12))});
            auto g = b.finish({addAct(b, a, add)});
            auto before = runF64(*g);
            PipelineResult r = pipeline(*g);
            EXPECT_EQ(stats(r, "fuse-gemm-bias-act").applied, 1);
            ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
            const ir::Node* n = r.graph->nodes()[0];
            EXPECT_EQ(n->kind(), OpKind::FusedGemm);
            EXPECT_EQ(n->name(), "mm");
            EXPECT_EQ(n->attrString("activation", "?"), a.name);
            expectSameOutputs(before, runF64(*r.graph));
        }
    }
}

TEST(FuseConvBiasAct, ClipWithNonConstantBoundIsRejectedWithReason) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* hi = b.input("hi", {});
    ir::Value* c =
        b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({2, 2, 1, 1}, 1))});
    ir::Value* clip = b.node(OpKind::Clip, "clip", {c, b.constant("lo", ir::Tensor::fromVector<double>({}, {0.0})), hi});
    auto g = b.finish({clip});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    const RuleStats& s = stats(r, "fuse-conv-bias-act");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.reasons.count("clip bound 'hi' is not a constant scalar"), 1u);
    EXPECT_EQ(countKind(*r.graph, OpKind::Clip), 1);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseMatMulAdd, ComputedAddendBecomesGemmCAndSharedInputsStayCorrect) {
    // mm1 = x.x (x shared by both operands) + r (a computed residual) -> Gemm(x, x, r);
    // mm2 = x.w has a second user -> rejected with the reason.
    for (std::vector<int64_t> rShape : {std::vector<int64_t>{4, 4}, {4}, {1, 4}}) {
        Builder b;
        ir::Value* x = b.input("x", {4, 4});
        ir::Value* res = b.node(OpKind::Relu, "res", {b.input("r", rShape)});
        ir::Value* m1 = b.node(OpKind::MatMul, "mm1", {x, x});
        ir::Value* a1 = b.node(OpKind::Add, "add1", {res, m1});
        ir::Value* m2 = b.node(OpKind::MatMul, "mm2", {x, b.input("w", {4, 4})});
        ir::Value* s = b.node(OpKind::Sigmoid, "side", {m2});
        ir::Value* a2 = b.node(OpKind::Add, "add2", {m2, x});
        auto g = b.finish({a1, a2, s});
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        const RuleStats& st = stats(r, "fuse-matmul-add");
        EXPECT_EQ(st.applied, 1);
        EXPECT_EQ(st.reasons.count("matmul output has 2 users"), 1u);
        const ir::Node* gemm = r.graph->findNode("mm1");
        ASSERT_NE(gemm, nullptr);
        ASSERT_EQ(gemm->kind(), OpKind::Gemm);
        ASSERT_NE(gemm->input(2), nullptr);
        EXPECT_EQ(gemm->input(2)->name(), "res_out");
        EXPECT_EQ(r.graph->findNode("mm2")->kind(), OpKind::MatMul);
        expectSameOutputs(before, runF64(*r.graph));
    }
}

TEST(FuseMatMulAdd, BatchedProductTakesTheResidualThenAnActivation) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3, 5});
    ir::Value* res = b.input("res", {2, 3, 4});
    ir::Value* m = b.node(OpKind::MatMul, "mm", {x, b.constant("w", randomTensor({5, 4}, 24))});
    ir::Value* a = b.node(OpKind::Add, "add", {m, res});
    ir::Value* act = b.node(OpKind::LeakyRelu, "act", {a}, {{"alpha", 0.1}});
    auto g = b.finish({act});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-matmul-add").applied, 1);
    EXPECT_EQ(stats(r, "fuse-gemm-bias-act").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    EXPECT_EQ(r.graph->nodes()[0]->kind(), OpKind::FusedGemm);
    EXPECT_EQ(r.graph->nodes()[0]->attrString("activation", ""), "LeakyRelu");
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseGemmBiasAct, BiasThatWouldGrowTheOutputIsRejected) {
    Builder b;
    ir::Value* x = b.input("x", {1, 5});
    ir::Value* m = b.node(OpKind::MatMul, "mm", {x, b.constant("w", randomTensor({5, 3}, 31))});
    ir::Value* a = b.node(OpKind::Add, "add", {m, b.constant("bias", randomTensor({4, 3}, 32))});
    auto g = b.finish({a});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    const RuleStats& s = stats(r, "fuse-gemm-bias-act");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.reasons.count("add bias of shape [4,3] does not broadcast to the product's shape "
                              "[1,3]"),
              1u);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FusePadConv, ZeroPadFoldsIntoConvPads) {
    for (bool attrForm : {false, true}) {
        Builder b;
        ir::Value* x = b.input("x", {1, 2, 5, 6});
        const std::vector<int64_t> amounts{0, 0, 1, 2, 0, 0, 3, 1};
        ir::Value* p = attrForm
                           ? b.node(OpKind::Pad, "pad", {x}, {{"pads", amounts}, {"value", 0.0}})
                           : b.node(OpKind::Pad, "pad",
                                    {x, b.constant("amounts", ir::Tensor::fromVector<int64_t>(
                                                                  {8}, amounts))});
        ir::Value* c = b.node(OpKind::Conv, "conv",
                              {p, b.constant("w", randomTensor({3, 2, 3, 2}, 41))},
                              {{"pads", std::vector<int64_t>{1, 0, 0, 1}}});
        auto g = b.finish({c});
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(r, "fuse-pad-conv").applied, 1);
        ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
        const ir::Node* n = r.graph->nodes()[0];
        // [h0, w0, h1, w1] = conv's [1, 0, 0, 1] + the pad's spatial [1, 2] and [3, 1].
        EXPECT_EQ(n->attrInts("pads"), (std::vector<int64_t>{2, 2, 3, 2}));
        EXPECT_EQ(n->provenance().origins, (std::vector<std::string>{"conv", "pad"}));
        expectSameOutputs(before, runF64(*r.graph));
    }
}

TEST(FusePadConv, NonZeroValueAndChannelPadsAreRejected) {
    struct Case {
        std::vector<int64_t> amounts;
        double value;
        std::string reason;
    };
    for (const Case& k : {Case{{0, 0, 1, 1, 0, 0, 1, 1}, 0.5, "pad value is 0.500000, not 0"},
                          Case{{0, 1, 1, 1, 0, 0, 1, 1}, 0.0, "pad touches the batch or channel dim"}}) {
        Builder b;
        ir::Value* x = b.input("x", {1, 2, 4, 4});
        ir::Value* p = b.node(OpKind::Pad, "pad", {x}, {{"pads", k.amounts}, {"value", k.value}});
        const int64_t cin = 2 + k.amounts[1] + k.amounts[5];
        ir::Value* c =
            b.node(OpKind::Conv, "conv", {p, b.constant("w", randomTensor({2, cin, 3, 3}, 51))});
        auto g = b.finish({c});
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        const RuleStats& s = stats(r, "fuse-pad-conv");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count(k.reason), 1u) << k.reason;
        EXPECT_EQ(countKind(*r.graph, OpKind::Pad), 1);
        expectSameOutputs(before, runF64(*r.graph));
    }
}

TEST(AbsorbTransposeGemm, TransposedOperandsBecomeTransFlags) {
    Builder b;
    ir::Value* a = b.input("a", {5, 3});
    ir::Value* w = b.input("w", {4, 5});
    ir::Value* at = b.node(OpKind::Transpose, "ta", {a}, {{"perm", std::vector<int64_t>{1, 0}}});
    ir::Value* wt = b.node(OpKind::Transpose, "tw", {w}, {{"perm", std::vector<int64_t>{1, 0}}});
    ir::Value* m = b.node(OpKind::MatMul, "mm", {at, wt});
    auto g = b.finish({m});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "absorb-transpose-gemm").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    const ir::Node* n = r.graph->nodes()[0];
    EXPECT_EQ(n->kind(), OpKind::Gemm);
    EXPECT_EQ(n->attrInt("transA", 0), 1);
    EXPECT_EQ(n->attrInt("transB", 0), 1);
    EXPECT_EQ(n->provenance().origins, (std::vector<std::string>{"mm", "ta", "tw"}));
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(AbsorbTransposeGemm, SharedTransposeIsRejected) {
    Builder b;
    ir::Value* w = b.input("w", {4, 5});
    ir::Value* x = b.input("x", {4, 3});
    ir::Value* wt = b.node(OpKind::Transpose, "tw", {w}, {{"perm", std::vector<int64_t>{1, 0}}});
    ir::Value* m = b.node(OpKind::MatMul, "mm", {wt, x});
    ir::Value* side = b.node(OpKind::Relu, "side", {wt});
    auto g = b.finish({m, side});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    const RuleStats& s = stats(r, "absorb-transpose-gemm");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.reasons.count("transpose output has 2 users"), 1u);
    expectSameOutputs(before, runF64(*r.graph));
}
