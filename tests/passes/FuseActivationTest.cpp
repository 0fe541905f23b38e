// Producer + activation fusion for every activation a fused kernel applies (Relu, LeakyRelu,
// Clip as Relu6 and with general bounds, Sigmoid, HardSigmoid, HardSwish), zero-Pad folding into
// Conv and Transpose absorption into Gemm: float64 results before/after, stats, rejections.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

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

TEST(FuseConvPostAffine, ScalarScaleAndShiftAfterTheActivationJoinTheEpilogue) {
    // PP-LCNet's learnable affine: conv -> HardSwish -> Mul(s) -> Add(b) is one FusedConv with
    // post_affine [s, b]; Mul alone and Add alone fuse too, with 1 and 0 for the other.
    struct Case {
        bool mul, add;
        std::vector<double> post;
        std::vector<std::string> origins;
    };
    for (const Case& k : {Case{true, true, {0.75, -0.5}, {"act", "conv", "mul", "shift"}},
                          Case{true, false, {0.75, 0.0}, {"act", "conv", "mul"}},
                          Case{false, true, {1.0, -0.5}, {"act", "conv", "shift"}}}) {
        SCOPED_TRACE(std::to_string(k.mul) + std::to_string(k.add));
        Builder b;
        ir::Value* x = b.input("x", {1, 3, 5, 5});
        ir::Value* c = b.node(OpKind::Conv, "conv",
                              {x, b.constant("w", randomTensor({4, 3, 3, 3}, 1)),
                               b.constant("cb", randomTensor({4}, 2))},
                              {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        ir::Value* y = b.node(OpKind::HardSwish, "act", {c});
        if (k.mul)
            y = b.node(OpKind::Mul, "mul", {b.constant("s", ir::Tensor::fromVector<double>({1}, {0.75})), y});
        if (k.add)
            y = b.node(OpKind::Add, "shift", {y, b.constant("b", ir::Tensor::fromVector<double>({1}, {-0.5}))});
        auto g = b.finish({y});
        auto before = runF64(*g, 5);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(r, "fuse-conv-post-affine").applied, 1);
        ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
        const ir::Node* n = r.graph->nodes()[0];
        EXPECT_EQ(n->kind(), OpKind::FusedConv);
        EXPECT_EQ(n->attrString("activation", "?"), "HardSwish");
        EXPECT_EQ(n->attrFloats("post_affine"), k.post);
        EXPECT_EQ(n->provenance().origins, k.origins);
        expectSameOutputs(before, runF64(*r.graph, 5));
        // Switched off, the affine stays a separate elementwise node and the numbers agree.
        PipelineResult off = pipeline(*g, {.disabled = {"layout", "fuse-conv-post-affine"}});
        EXPECT_EQ(off.graph->numNodes(), 2u) << ir::printGraph(*off.graph);
        expectSameOutputs(before, runF64(*off.graph, 5));
    }
}

TEST(FuseConvPostAffine, APerChannelOrComputedOperandIsRejectedWithReason) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* c1 = b.node(OpKind::Conv, "conv1", {x, b.constant("w1", randomTensor({2, 2, 1, 1}, 1))});
    ir::Value* a1 = b.node(OpKind::Relu, "relu1", {c1});
    ir::Value* m1 = b.node(OpKind::Mul, "mul1", {a1, b.constant("s1", randomTensor({2, 1, 1}, 2))});
    ir::Value* c2 = b.node(OpKind::Conv, "conv2", {x, b.constant("w2", randomTensor({2, 2, 1, 1}, 3))});
    ir::Value* a2 = b.node(OpKind::Relu, "relu2", {c2});
    ir::Value* m2 = b.node(OpKind::Mul, "mul2", {a2, x});
    auto g = b.finish({m1, m2});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    const RuleStats& s = stats(r, "fuse-conv-post-affine");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.reasons.count("Mul operand 's1' is not a scalar constant"), 1u);
    EXPECT_EQ(s.reasons.count("Mul operand 'x' is not a scalar constant"), 1u);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseConvPostAffine, PostAffineWithoutAnActivationOrMalformedIsAnError) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* c = b.node(OpKind::FusedConv, "conv", {x, b.constant("w", randomTensor({2, 2, 1, 1}, 1))},
                          {{"activation", std::string()}, {"post_affine", std::vector<double>{2.0, 1.0}}});
    auto g = b.finish({c});
    Status st = ir::verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("'post_affine' needs an activation"), std::string::npos) << st.error().message;
    g->nodes()[0]->setAttr("activation", std::string("Relu"));
    g->nodes()[0]->setAttr("post_affine", std::vector<double>{2.0});
    st = ir::verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("two floats [scale, shift]"), std::string::npos) << st.error().message;
}

TEST(FuseConvTransposeBiasBn, BiasAddAndBatchNormFoldIntoTheWeightsAndBias) {
    // Grouped, strided, with and without its own bias: the folded ConvTranspose computes what
    // the chain did (float64), and each of Add alone and BN alone folds too.
    struct Case {
        bool ownBias, add, bn;
        int64_t group;
    };
    for (const Case& k : {Case{false, true, true, 1}, Case{true, true, true, 2}, Case{true, false, true, 2},
                          Case{false, true, false, 1}}) {
        SCOPED_TRACE(std::to_string(k.ownBias) + std::to_string(k.add) + std::to_string(k.bn) + " group " +
                     std::to_string(k.group));
        Builder b;
        ir::Value* x = b.input("x", {1, 4, 3, 3});
        // W: [Cin 4, Cout/group, 2, 2]; Cout = 6.
        std::vector<ir::Value*> ins{x, b.constant("w", randomTensor({4, 6 / k.group, 2, 2}, 1))};
        if (k.ownBias)
            ins.push_back(b.constant("cb", randomTensor({6}, 2)));
        ir::Value* y = b.node(OpKind::ConvTranspose, "up", ins,
                              {{"strides", std::vector<int64_t>{2, 2}}, {"group", k.group}});
        if (k.add)
            y = b.node(OpKind::Add, "bias", {y, b.constant("a", randomTensor({1, 6, 1, 1}, 3))});
        if (k.bn) {
            ir::Tensor var = randomTensor({6}, 7);
            for (int64_t i = 0; i < var.numel(); ++i)
                var.set(i, std::abs(var.at(i)) + 0.5);
            y = b.node(OpKind::BatchNormalization, "bn",
                       {y, b.constant("gamma", randomTensor({6}, 4)), b.constant("beta", randomTensor({6}, 5)),
                        b.constant("mean", randomTensor({6}, 6)), b.constant("var", std::move(var))});
        }
        ir::Value* r = b.node(OpKind::Relu, "relu", {y});
        auto g = b.finish({r});
        auto before = runF64(*g, 5);
        // The Relu stays apart so the folded ConvTranspose is the node looked at.
        PipelineResult res = pipeline(*g, {.disabled = {"layout", "fuse-convtranspose-act"}});
        EXPECT_EQ(stats(res, "fuse-convtranspose-bias-bn").applied, 1);
        EXPECT_EQ(countKind(*res.graph, OpKind::ConvTranspose), 1);
        EXPECT_EQ(countKind(*res.graph, OpKind::Add), 0);
        EXPECT_EQ(countKind(*res.graph, OpKind::BatchNormalization), 0);
        ASSERT_EQ(res.graph->numNodes(), 2u) << ir::printGraph(*res.graph);
        expectSameOutputs(before, runF64(*res.graph, 5));
    }
}

TEST(FuseConvTransposeAct, AnActivationAfterAConvTransposeRunsInItsEpilogue) {
    // PaddleOCR det's head: ConvTranspose [+ BN] -> Relu, and ConvTranspose -> Sigmoid as the
    // graph's output. Grouped or not, with and without a bias and a BN folded first: one node
    // that computes what the chain did (float64).
    struct Case {
        bool ownBias, bn;
        int64_t group;
        OpKind act;
    };
    for (const Case& k : {Case{true, true, 1, OpKind::Relu}, Case{false, false, 2, OpKind::Sigmoid},
                          Case{true, false, 1, OpKind::LeakyRelu}}) {
        SCOPED_TRACE(std::to_string(k.ownBias) + std::to_string(k.bn) + " group " + std::to_string(k.group));
        Builder b;
        ir::Value* x = b.input("x", {1, 4, 3, 3});
        std::vector<ir::Value*> ins{x, b.constant("w", randomTensor({4, 6 / k.group, 2, 2}, 1))};
        if (k.ownBias)
            ins.push_back(b.constant("cb", randomTensor({6}, 2)));
        ir::Value* y = b.node(OpKind::ConvTranspose, "up", ins,
                              {{"strides", std::vector<int64_t>{2, 2}}, {"group", k.group}});
        if (k.bn) {
            ir::Tensor var = randomTensor({6}, 7);
            for (int64_t i = 0; i < var.numel(); ++i)
                var.set(i, std::abs(var.at(i)) + 0.5);
            y = b.node(OpKind::BatchNormalization, "bn",
                       {y, b.constant("gamma", randomTensor({6}, 4)), b.constant("beta", randomTensor({6}, 5)),
                        b.constant("mean", randomTensor({6}, 6)), b.constant("var", std::move(var))});
        }
        ir::Value* r = b.node(k.act, "act", {y});
        auto g = b.finish({r});
        auto before = runF64(*g, 5);
        PipelineResult res = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(res, "fuse-convtranspose-act").applied, 1);
        ASSERT_EQ(res.graph->numNodes(), 1u) << ir::printGraph(*res.graph);
        EXPECT_EQ(countKind(*res.graph, OpKind::FusedConvTranspose), 1);
        const ir::Node* n = res.graph->findNode("up");
        ASSERT_NE(n, nullptr);
        EXPECT_EQ(n->attrString("activation", "?"), ir::opInfo(k.act).name);
        expectSameOutputs(before, runF64(*res.graph, 5));

        // Switched off, the activation stays a node of its own.
        PipelineResult off = pipeline(*g, {.disabled = {"layout", "fuse-convtranspose-act"}});
        EXPECT_EQ(countKind(*off.graph, OpKind::FusedConvTranspose), 0);
        EXPECT_EQ(countKind(*off.graph, k.act), 1);
    }
}

TEST(FuseConvTransposeAct, AConvTransposeReadTwiceKeepsItsActivationApart) {
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 3, 3});
    ir::Value* y = b.node(OpKind::ConvTranspose, "up", {x, b.constant("w", randomTensor({4, 2, 2, 2}, 1))},
                          {{"strides", std::vector<int64_t>{2, 2}}});
    ir::Value* r = b.node(OpKind::Relu, "act", {y});
    ir::Value* s = b.node(OpKind::Sigmoid, "other", {y});
    auto g = b.finish({r, s});
    PipelineResult res = pipeline(*g, {.disabled = {"layout"}});
    EXPECT_EQ(stats(res, "fuse-convtranspose-act").applied, 0);
    EXPECT_GE(stats(res, "fuse-convtranspose-act").rejected, 1);
    EXPECT_EQ(countKind(*res.graph, OpKind::FusedConvTranspose), 0);
}

TEST(FuseConvResidual, ConvPlusAComputedTensorThenReluIsOneFusedConv) {
    // Residual on either side of the Add; with and without the conv's own bias; with and
    // without the activation after it.
    struct Case {
        bool residualFirst, ownBias, relu;
    };
    for (const Case& k : {Case{false, true, true}, Case{true, false, true}, Case{false, false, false}}) {
        SCOPED_TRACE(std::to_string(k.residualFirst) + std::to_string(k.ownBias) + std::to_string(k.relu));
        Builder b;
        ir::Value* x = b.input("x", {1, 4, 5, 5});
        ir::Value* skip = b.node(OpKind::Sigmoid, "skip", {x});
        std::vector<ir::Value*> ins{x, b.constant("w", randomTensor({4, 4, 3, 3}, 1))};
        if (k.ownBias)
            ins.push_back(b.constant("cb", randomTensor({4}, 2)));
        ir::Value* c = b.node(OpKind::Conv, "conv", ins, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        ir::Value* s = k.residualFirst ? b.node(OpKind::Add, "add", {skip, c}) : b.node(OpKind::Add, "add", {c, skip});
        ir::Value* y = k.relu ? b.node(OpKind::Relu, "relu", {s}) : s;
        auto g = b.finish({y});
        auto before = runF64(*g, 5);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(r, "fuse-conv-residual").applied, 1);
        ASSERT_EQ(r.graph->numNodes(), 2u) << ir::printGraph(*r.graph);
        const ir::Node* n = r.graph->findNode("conv");
        ASSERT_NE(n, nullptr);
        EXPECT_EQ(n->kind(), OpKind::FusedConv);
        ASSERT_EQ(n->numInputs(), 4u);
        EXPECT_EQ(n->input(3)->name(), "skip_out");
        EXPECT_EQ(n->attrString("activation", "?"), k.relu ? "Relu" : "");
        expectSameOutputs(before, runF64(*r.graph, 5));
    }
}

TEST(FuseConvResidual, ABroadcastAddendIsRejectedWithReasonAndTheLayoutConvertsAPlainResidual) {
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 5, 5});
    ir::Value* v = b.input("v", {1, 4, 1, 1});
    ir::Value* c1 = b.node(OpKind::Conv, "conv1", {x, b.constant("w1", randomTensor({4, 4, 1, 1}, 1))});
    ir::Value* s1 = b.node(OpKind::Add, "add1", {c1, v});
    // conv2 + x: x is a graph input, plain; with the layout pass on it converts once and both
    // conv2's data input and its residual read the blocked copy.
    ir::Value* c2 = b.node(OpKind::Conv, "conv2", {x, b.constant("w2", randomTensor({4, 4, 1, 1}, 2))});
    ir::Value* s2 = b.node(OpKind::Add, "add2", {c2, x});
    auto g = b.finish({s1, s2});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    const RuleStats& s = stats(r, "fuse-conv-residual");
    EXPECT_EQ(s.applied, 1);
    EXPECT_EQ(s.reasons.count("residual 'v' does not have the conv output's type (a broadcast)"), 1u);
    const ir::Node* n = r.graph->findNode("conv2");
    ASSERT_NE(n, nullptr);
    ASSERT_EQ(n->numInputs(), 4u);
    EXPECT_EQ(n->input(0), n->input(3));
    EXPECT_EQ(n->input(3)->type().layout, ir::LayoutKind::NC1HWC0) << ir::printGraph(*r.graph);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseConvResidual, ASumOfTwoIsAResidualAddToo) {
    // ResNet-50 as Caffe2 exports it: the shortcut is Sum(branch, shortcut) -> Relu.
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 5, 5});
    ir::Value* c = b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({4, 4, 1, 1}, 1))});
    ir::Value* s = b.node(OpKind::Sum, "sum", {c, x});
    ir::Value* y = b.node(OpKind::Relu, "relu", {s});
    auto g = b.finish({y});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    EXPECT_EQ(stats(r, "fuse-conv-residual").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    EXPECT_EQ(r.graph->nodes()[0]->numInputs(), 4u);
    expectSameOutputs(before, runF64(*r.graph));
}
