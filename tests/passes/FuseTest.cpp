// Every fusion rule: fires where it should (stats), preserves float64 results within 1e-9,
// leaves the graph alone when disabled by id, and rejects what it must with the reason.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"
#include "core/passes/RewriteUtil.h"

#include <algorithm>
#include <numeric>

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

/// x[1,4,7,9] -> Conv(6 out, groups 2, kernel 3x2, strides 2x1, asymmetric pads, bias)
///   -> BatchNormalization(non-trivial gamma/beta/mean/var, eps 1e-3) -> Relu.
std::unique_ptr<ir::Graph> convBnRelu() {
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 7, 9});
    ir::Value* w = b.constant("w", randomTensor({6, 2, 3, 2}, 1));
    ir::Value* bias = b.constant("b", randomTensor({6}, 2));
    ir::Value* c = b.node(OpKind::Conv, "conv1", {x, w, bias},
                          {{"group", int64_t{2}},
                           {"kernel_shape", std::vector<int64_t>{3, 2}},
                           {"strides", std::vector<int64_t>{2, 1}},
                           {"pads", std::vector<int64_t>{1, 0, 2, 1}}});
    ir::Value* gamma = b.constant("gamma", randomTensor({6}, 3, 0.5, 2.0));
    ir::Value* beta = b.constant("beta", randomTensor({6}, 4));
    ir::Value* mean = b.constant("mean", randomTensor({6}, 5));
    ir::Value* var = b.constant("var", randomTensor({6}, 6, 0.1, 3.0));
    ir::Value* bn =
        b.node(OpKind::BatchNormalization, "bn1", {c, gamma, beta, mean, var}, {{"epsilon", 1e-3}});
    ir::Value* r = b.node(OpKind::Relu, "relu1", {bn});
    return b.finish({r});
}

} // namespace

TEST(FuseConvBn, FoldsBatchNormThenFusesReluAndKeepsResults) {
    auto g = convBnRelu();
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(stats(r, "fuse-conv-bn").applied, 1);
    EXPECT_EQ(stats(r, "fuse-conv-bias-act").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    const ir::Node* n = r.graph->nodes()[0];
    EXPECT_EQ(n->kind(), OpKind::FusedConv);
    EXPECT_EQ(n->name(), "conv1");
    EXPECT_EQ(n->attrString("activation", "?"), "Relu");
    EXPECT_EQ(n->attrInt("group", 0), 2);
    EXPECT_EQ(n->provenance().origins, (std::vector<std::string>{"bn1", "conv1", "relu1"}));
    EXPECT_EQ(n->provenance().createdBy, "fuse/fuse-conv-bias-act");
    ASSERT_EQ(r.constantProvenance.count("conv1_bn_w"), 1u);
    EXPECT_EQ(r.constantProvenance["conv1_bn_w"].origins,
              (std::vector<std::string>{"bn1", "conv1"}));
    EXPECT_EQ(r.constantProvenance["conv1_bn_w"].createdBy, "fuse/fuse-conv-bn");
    // The model's output keeps its name.
    EXPECT_EQ(r.graph->outputs()[0]->name(), "relu1_out");
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseConvBn, ConvWithoutBiasStillFolds) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3, 5, 4});
    ir::Value* w = b.constant("w", randomTensor({5, 3, 1, 3}, 11));
    ir::Value* c =
        b.node(OpKind::Conv, "conv", {x, w}, {{"pads", std::vector<int64_t>{0, 1, 0, 1}}});
    ir::Value* bn =
        b.node(OpKind::BatchNormalization, "bn",
               {c, b.constant("g", randomTensor({5}, 12, 0.5, 1.5)),
                b.constant("be", randomTensor({5}, 13)), b.constant("m", randomTensor({5}, 14)),
                b.constant("v", randomTensor({5}, 15, 0.2, 2.0))});
    auto g = b.finish({bn});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-conv-bn").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::BatchNormalization), 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::Conv), 1);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseConvBn, DisabledByIdLeavesBatchNorm) {
    auto g = convBnRelu();
    auto before = runF64(*g);
    PipelineConfig cfg;
    // With the conv rule off, the BatchNormalization and the Relu after it become one group
    // (fuse-batchnorm-chain); with that off too, the op stays.
    cfg.disabled = {"fuse-conv-bn"};
    EXPECT_EQ(stats(pipeline(*g, cfg), "fuse-batchnorm-chain").applied, 1);
    cfg.disabled.insert("fuse-batchnorm-chain");
    PipelineResult r = pipeline(*g, cfg);
    EXPECT_EQ(stats(r, "fuse-conv-bn").matched, 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::BatchNormalization), 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Conv), 1);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseConvBn, RejectedWhenConvOutputHasTwoUsers) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* c =
        b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({3, 2, 3, 3}, 21))},
               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Value* bn =
        b.node(OpKind::BatchNormalization, "bn",
               {c, b.constant("g", randomTensor({3}, 22, 0.5, 1.5)),
                b.constant("be", randomTensor({3}, 23)), b.constant("m", randomTensor({3}, 24)),
                b.constant("v", randomTensor({3}, 25, 0.2, 2.0))});
    ir::Value* other = b.node(OpKind::Sigmoid, "side", {c});
    auto g = b.finish({bn, other});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    const RuleStats& s = stats(r, "fuse-conv-bn");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.rejected, 1);
    ASSERT_EQ(s.reasons.count("conv output has 2 users"), 1u);
    ASSERT_FALSE(r.rejections.empty());
    EXPECT_EQ(r.rejections[0].node, "conv");
    EXPECT_EQ(r.rejections[0].pass, "fuse");
    EXPECT_EQ(countKind(*r.graph, OpKind::BatchNormalization), 1);
    expectSameOutputs(before, runF64(*r.graph));
}

namespace {
std::unique_ptr<ir::Graph> convAddRelu(std::vector<int64_t> biasShape, bool convBias = false) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 6, 9});
    std::vector<ir::Value*> ins{x, b.constant("w", randomTensor({4, 3, 2, 3}, 31))};
    if (convBias)
        ins.push_back(b.constant("cb", randomTensor({4}, 32)));
    ir::Value* c = b.node(OpKind::Conv, "conv", ins, {{"strides", std::vector<int64_t>{1, 2}}});
    ir::Value* a = b.node(OpKind::Add, "add", {c, b.constant("bias", randomTensor(biasShape, 33))});
    ir::Value* r = b.node(OpKind::Relu, "relu", {a});
    return b.finish({r});
}
} // namespace

TEST(FuseConvBiasAct, FusesPerChannelBiasAndRelu) {
    for (auto shape : {std::vector<int64_t>{1, 4, 1, 1}, std::vector<int64_t>{4, 1, 1},
                       std::vector<int64_t>{1}}) {
        for (bool convBias : {false, true}) {
            auto g = convAddRelu(shape, convBias);
            auto before = runF64(*g);
            PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
            EXPECT_EQ(stats(r, "fuse-conv-bias-act").applied, 1);
            ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
            const ir::Node* n = r.graph->nodes()[0];
            EXPECT_EQ(n->kind(), OpKind::FusedConv);
            EXPECT_EQ(n->name(), "conv");
            EXPECT_EQ(n->attrString("activation", "?"), "Relu");
            EXPECT_EQ(n->provenance().origins, (std::vector<std::string>{"add", "conv", "relu"}));
            EXPECT_EQ(n->provenance().createdBy, "fuse/fuse-conv-bias-act");
            expectSameOutputs(before, runF64(*r.graph));
        }
    }
}

TEST(FuseConvBiasAct, ReluOnlyAndBiasOnly) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 5, 5});
    ir::Value* c1 =
        b.node(OpKind::Conv, "c1", {x, b.constant("w1", randomTensor({2, 2, 3, 3}, 41))});
    ir::Value* r1 = b.node(OpKind::Relu, "r1", {c1});
    ir::Value* c2 =
        b.node(OpKind::Conv, "c2", {r1, b.constant("w2", randomTensor({3, 2, 1, 1}, 42))});
    ir::Value* a2 =
        b.node(OpKind::Add, "a2", {b.constant("b2", randomTensor({1, 3, 1, 1}, 43)), c2});
    auto g = b.finish({a2});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    EXPECT_EQ(stats(r, "fuse-conv-bias-act").applied, 2);
    ASSERT_EQ(r.graph->numNodes(), 2u);
    EXPECT_EQ(r.graph->nodes()[0]->attrString("activation", "?"), "Relu");
    EXPECT_EQ(r.graph->nodes()[1]->attrString("activation", "?"), "");
    EXPECT_EQ(r.graph->nodes()[1]->numInputs(), 3u);
    EXPECT_EQ(r.graph->outputs()[0]->name(), "a2_out");
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseConvBiasAct, RejectsBiasAlongTheLastAxis) {
    // A [C] bias broadcasts along W in ONNX, not along channels: fusing it would be wrong.
    auto g = convAddRelu({4});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    const RuleStats& s = stats(r, "fuse-conv-bias-act");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.rejected, 1);
    EXPECT_EQ(s.reasons.count("add bias of shape [4] is not per-channel for conv output [1,4,5,4]"),
              1u)
        << (s.reasons.empty() ? "" : s.reasons.begin()->first);
    EXPECT_EQ(countKind(*r.graph, OpKind::Conv), 1);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseConvBiasAct, RejectsNonConstantAddOperand) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* c =
        b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({2, 2, 3, 3}, 51))},
               {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Value* a = b.node(OpKind::Add, "skip", {c, x});
    ir::Value* r = b.node(OpKind::Relu, "relu", {a});
    auto g = b.finish({r});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g);
    const RuleStats& s = stats(res, "fuse-conv-bias-act");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.reasons.count("add operand 'x' is not a constant"), 1u);
    expectSameOutputs(before, runF64(*res.graph));
}

TEST(FuseConvBiasAct, DisabledByIdLeavesGraphUnchanged) {
    auto g = convAddRelu({1, 4, 1, 1});
    auto before = runF64(*g);
    PipelineConfig cfg;
    cfg.disabled = {"fuse-conv-bias-act"};
    PipelineResult r = pipeline(*g, cfg);
    EXPECT_EQ(stats(r, "fuse-conv-bias-act").matched, 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::FusedConv), 0);
    // What the conv rule leaves, the elementwise-group rule takes (Add + Relu in one kernel).
    EXPECT_EQ(stats(r, "fuse-elementwise-chain").applied, 1);
    expectSameOutputs(before, runF64(*r.graph));
    // With that one off too (and the layout/precision annotations), nothing changes.
    cfg.disabled.insert("fuse-elementwise-chain");
    cfg.disabled.insert("layout");
    cfg.disabled.insert("precision");
    PipelineResult r2 = pipeline(*g, cfg);
    EXPECT_EQ(r2.snapshots.front().text(), r2.snapshots.back().text());
}

TEST(FuseGemmBiasAct, MatMulAddReluBecomesFusedGemm) {
    for (auto shape :
         {std::vector<int64_t>{4}, std::vector<int64_t>{1, 4}, std::vector<int64_t>{3, 4}}) {
        Builder b;
        ir::Value* x = b.input("x", {3, 5});
        ir::Value* m = b.node(OpKind::MatMul, "mm", {x, b.constant("w", randomTensor({5, 4}, 61))});
        ir::Value* a = b.node(OpKind::Add, "add", {m, b.constant("bias", randomTensor(shape, 62))});
        ir::Value* r = b.node(OpKind::Relu, "relu", {a});
        auto g = b.finish({r});
        auto before = runF64(*g);
        PipelineResult res = pipeline(*g);
        EXPECT_EQ(stats(res, "fuse-gemm-bias-act").applied, 1);
        ASSERT_EQ(res.graph->numNodes(), 1u);
        const ir::Node* n = res.graph->nodes()[0];
        EXPECT_EQ(n->kind(), OpKind::FusedGemm);
        EXPECT_EQ(n->name(), "mm");
        EXPECT_EQ(n->attrString("activation", "?"), "Relu");
        EXPECT_EQ(n->provenance().origins, (std::vector<std::string>{"add", "mm", "relu"}));
        expectSameOutputs(before, runF64(*res.graph));
    }
}

TEST(FuseGemmBiasAct, GemmWithTransposeAndRelu) {
    Builder b;
    ir::Value* x = b.input("x", {2, 6});
    ir::Value* gm = b.node(
        OpKind::Gemm, "fc",
        {x, b.constant("w", randomTensor({3, 6}, 71)), b.constant("c", randomTensor({3}, 72))},
        {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
    ir::Value* r = b.node(OpKind::Relu, "relu", {gm});
    auto g = b.finish({r});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g);
    EXPECT_EQ(stats(res, "fuse-gemm-bias-act").applied, 1);
    ASSERT_EQ(res.graph->numNodes(), 1u);
    EXPECT_EQ(res.graph->nodes()[0]->kind(), OpKind::FusedGemm);
    expectSameOutputs(before, runF64(*res.graph));
}

TEST(FuseGemmBiasAct, BatchedAFusesButBatchedBIsRejected) {
    // [2,3,5] x [5,4]: FusedGemm takes a batched A (the Linear layers of transformers).
    {
        Builder b;
        ir::Value* x = b.input("x", {2, 3, 5});
        ir::Value* m = b.node(OpKind::MatMul, "mm", {x, b.constant("w", randomTensor({5, 4}, 81))});
        ir::Value* r = b.node(OpKind::Relu, "relu", {m});
        auto g = b.finish({r});
        auto before = runF64(*g);
        PipelineResult res = pipeline(*g);
        EXPECT_EQ(stats(res, "fuse-gemm-bias-act").applied, 1);
        ASSERT_EQ(res.graph->numNodes(), 1u);
        EXPECT_EQ(res.graph->nodes()[0]->kind(), OpKind::FusedGemm);
        expectSameOutputs(before, runF64(*res.graph));
    }
    // [2,3,5] x [2,5,4]: B is batched, a gemm cannot read it.
    {
        Builder b;
        ir::Value* x = b.input("x", {2, 3, 5});
        ir::Value* w = b.input("w", {2, 5, 4});
        ir::Value* m = b.node(OpKind::MatMul, "mm", {x, w});
        ir::Value* r = b.node(OpKind::Relu, "relu", {m});
        auto g = b.finish({r});
        PipelineResult res = pipeline(*g);
        const RuleStats& s = stats(res, "fuse-gemm-bias-act");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count("matmul operand 'w' has rank 3; a gemm needs a 2-D B"), 1u);
        EXPECT_EQ(countKind(*res.graph, OpKind::MatMul), 1);
    }
}

TEST(FuseConvScale, BatchNormMulAddReluChainBecomesOneFusedConv) {
    // The shape of onnx "light" densenet/inception blocks: Conv -> BN -> Mul(s) -> Add(t) -> Relu.
    for (auto scaleShape : {std::vector<int64_t>{5, 1, 1}, std::vector<int64_t>{1}}) {
        Builder b;
        ir::Value* x = b.input("x", {1, 3, 6, 6});
        ir::Value* c = b.node(OpKind::Conv, "conv",
                              {x, b.constant("w", randomTensor({5, 3, 3, 3}, 91)),
                               b.constant("cb", randomTensor({5}, 92))});
        ir::Value* bn =
            b.node(OpKind::BatchNormalization, "bn",
                   {c, b.constant("g", randomTensor({5}, 93, 0.5, 1.5)),
                    b.constant("be", randomTensor({5}, 94)), b.constant("m", randomTensor({5}, 95)),
                    b.constant("v", randomTensor({5}, 96, 0.2, 2.0))});
        ir::Value* m =
            b.node(OpKind::Mul, "mul", {bn, b.constant("s", randomTensor(scaleShape, 97))});
        ir::Value* a =
            b.node(OpKind::Add, "add", {m, b.constant("t", randomTensor({5, 1, 1}, 98))});
        ir::Value* r = b.node(OpKind::Relu, "relu", {a});
        auto g = b.finish({r});
        auto before = runF64(*g);
        PipelineResult res = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(res, "fuse-conv-bn").applied, 1);
        EXPECT_EQ(stats(res, "fuse-conv-scale").applied, 1);
        EXPECT_EQ(stats(res, "fuse-conv-bias-act").applied, 1);
        ASSERT_EQ(res.graph->numNodes(), 1u) << res.snapshots.back().text();
        EXPECT_EQ(res.graph->nodes()[0]->provenance().origins,
                  (std::vector<std::string>{"add", "bn", "conv", "mul", "relu"}));
        expectSameOutputs(before, runF64(*res.graph));

        PipelineConfig cfg;
        // (the elementwise-group rule would take the Mul -> Add -> Relu that is left)
        cfg.disabled = {"fuse-conv-scale", "fuse-elementwise-chain"};
        PipelineResult off = pipeline(*g, cfg);
        EXPECT_EQ(countKind(*off.graph, OpKind::Mul), 1);
        expectSameOutputs(before, runF64(*off.graph));
    }
}

TEST(FuseRobustness, MalformedGraphsAreRejectedNotCrashedOn) {
    // A conv bias with the wrong number of elements, verification off: the rule must say why.
    {
        Builder b;
        ir::Value* x = b.input("x", {1, 2, 4, 4});
        ir::Value* c = b.node(OpKind::Conv, "conv",
                              {x, b.constant("w", randomTensor({3, 2, 1, 1}, 1)),
                               b.constant("cb", randomTensor({2}, 2))});
        ir::Value* r =
            b.node(OpKind::Add, "add", {c, b.constant("bias", randomTensor({1, 3, 1, 1}, 3))});
        b.g->setOutputs({r});
        (void)b.g->inferTypes(); // may or may not complain about the bias; either way we go on
        PipelineConfig cfg;
        cfg.verifyEach = false;
        cfg.disabled = {"infer-shapes"};
        auto res = runPipeline(*b.g, cfg);
        if (res.ok()) {
            EXPECT_EQ(stats(*res, "fuse-conv-bias-act").applied, 0);
        }
    }
    // A Conv with its weight omitted: infer-shapes fails and names the node.
    {
        Builder b;
        ir::Value* x = b.input("x", {1, 2, 4, 4});
        ir::Value* c = b.node(OpKind::Conv, "conv", {x, nullptr});
        ir::Value* r = b.node(OpKind::Relu, "relu", {c});
        b.g->setOutputs({r});
        PipelineConfig cfg;
        cfg.verifyEach = false;
        auto res = runPipeline(*b.g, cfg);
        ASSERT_FALSE(res.ok());
        EXPECT_EQ(res.error().subject, "infer-shapes");
        EXPECT_NE(res.error().message.find("conv"), std::string::npos) << res.error().message;
        // With inference disabled the fusion rules still must not touch the broken node.
        cfg.disabled = {"infer-shapes"};
        auto res2 = runPipeline(*b.g, cfg);
        if (res2.ok()) {
            EXPECT_EQ(stats(*res2, "fuse-conv-bias-act").applied, 0);
        }
    }
}

// ---- fold-channel-shuffle

namespace {

ir::Tensor dims64(std::vector<int64_t> v) {
    return ir::Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, std::move(v));
}

/// ShuffleNet's channel shuffle of `x` ([N, groups * perGroup, S...]): Reshape to [N, groups,
/// perGroup, S...], swap those two dims, Reshape back.
ir::Value* channelShuffle(Builder& b, ir::Value* x, const std::vector<int64_t>& dims, int64_t groups,
                          std::vector<int64_t> perm = {}) {
    std::vector<int64_t> split{dims[0], groups, dims[1] / groups};
    split.insert(split.end(), dims.begin() + 2, dims.end());
    if (perm.empty()) {
        perm.resize(split.size());
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[1], perm[2]);
    }
    ir::Value* r = b.node(OpKind::Reshape, "split", {x, b.constant("split_dims", dims64(split))});
    ir::Value* t = b.node(OpKind::Transpose, "swap", {r}, {{"perm", perm}});
    return b.node(OpKind::Reshape, "join", {t, b.constant("join_dims", dims64(dims))});
}

/// x[1,6,5,5] -> Conv(3 groups, 3x3, bias) -> BatchNormalization -> Relu -> shuffle of 3 groups
/// -> depthwise 3x3 conv: a ShuffleNet v1 unit's first half.
std::unique_ptr<ir::Graph> groupedConvShuffle() {
    Builder b;
    ir::Value* x = b.input("x", {1, 6, 5, 5});
    ir::AttributeMap pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{3}}};
    ir::Value* c = b.node(OpKind::Conv, "gconv",
                          {x, b.constant("w", randomTensor({6, 2, 3, 3}, 71)), b.constant("b", randomTensor({6}, 72))},
                          pads);
    ir::Value* r = b.node(OpKind::Relu, "relu", {batchNorm(b, "bn", c, 6, 73)});
    ir::Value* s = channelShuffle(b, r, {1, 6, 5, 5}, 3);
    pads["group"] = int64_t{6};
    ir::Value* d = b.node(OpKind::Conv, "dw", {s, b.constant("dw_w", randomTensor({6, 1, 3, 3}, 77))}, pads);
    return b.finish({d});
}

/// The one reason fold-channel-shuffle gives for x -> Conv (weights of shape `w`, `group`
/// groups, padded to keep the map's size) -> a shuffle of `shuffleGroups` groups, which it must
/// refuse ("applied" when it does not).
std::string shuffleRefusal(std::vector<int64_t> x, std::vector<int64_t> w, int64_t group, int64_t shuffleGroups,
                           uint64_t fixed = 700) {
    Builder b;
    ir::Value* in = b.input("x", x);
    const int64_t pad = (w[2] - 1) / 2;
    ir::Value* c = b.node(OpKind::Conv, "conv", {in, b.constant("w", randomTensor(w, 94))},
                          {{"group", group}, {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
    auto g = b.finish({channelShuffle(b, c, x, shuffleGroups)});
    PipelineConfig config;
    config.disabled = {"layout"};
    config.taskFixedCycles = fixed;
    PipelineResult r = pipeline(*g, config);
    const RuleStats& s = stats(r, "fold-channel-shuffle");
    if (s.applied > 0)
        return "applied";
    return s.reasons.size() == 1 ? s.reasons.begin()->first : std::to_string(s.reasons.size()) + " reasons";
}

const ir::Node* nodeNamed(const ir::Graph& g, const std::string& name) {
    for (const ir::Node* n : g.nodes())
        if (n->name() == name)
            return n;
    return nullptr;
}

} // namespace

TEST(FoldChannelShuffle, AGroupedConvTakesTheShuffledChannelOrderAndKeepsResults) {
    auto g = groupedConvShuffle();
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(stats(r, "fold-channel-shuffle").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Reshape), 0) << ir::printGraph(*r.graph);
    EXPECT_EQ(countKind(*r.graph, OpKind::Transpose), 0);
    const ir::Node* conv = nodeNamed(*r.graph, "gconv");
    ASSERT_NE(conv, nullptr) << ir::printGraph(*r.graph);
    EXPECT_EQ(conv->kind(), OpKind::FusedConv);
    EXPECT_EQ(conv->attrString("activation", "?"), "Relu");
    EXPECT_EQ(conv->attrInt("group", 0), 1) << "the shuffled rows read other groups' channels";
    EXPECT_EQ(conv->output(0)->name(), "join_out") << "it computes what the shuffle did";
    const std::vector<std::string>& origins = conv->provenance().origins;
    EXPECT_NE(std::find(origins.begin(), origins.end(), "swap"), origins.end());
    // Output channel 1 is the input's channel 2 (group 1, position 0): its row reads input
    // channels 2 and 3 only, with zeros for the rest.
    const ir::Tensor* w = conv->input(1)->constant();
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(w->shape(), (std::vector<int64_t>{6, 6, 3, 3}));
    for (int64_t ci = 0; ci < 6; ++ci)
        for (int64_t k = 0; k < 9; ++k)
            EXPECT_EQ(w->at((1 * 6 + ci) * 9 + k) == 0.0, ci != 2 && ci != 3) << ci << " " << k;
    expectSameOutputs(before, runF64(*r.graph));

    PipelineResult off = pipeline(*g, {.disabled = {"layout", "fold-channel-shuffle"}});
    EXPECT_EQ(countKind(*off.graph, OpKind::Transpose), 1);
    EXPECT_EQ(nodeNamed(*off.graph, "gconv")->attrInt("group", 0), 3);
}

TEST(FoldChannelShuffle, AnUngroupedConvWithoutBiasOnAOneDimensionalMap) {
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 7});
    ir::Value* c = b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({6, 4, 3}, 81))},
                          {{"pads", std::vector<int64_t>{1, 1}}});
    ir::Value* s = channelShuffle(b, c, {1, 6, 7}, 2);
    ir::Value* y = b.node(OpKind::Sigmoid, "sig", {s});
    auto g = b.finish({y});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    EXPECT_EQ(stats(r, "fold-channel-shuffle").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Transpose), 0) << ir::printGraph(*r.graph);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FoldChannelShuffle, RejectsWhatItCannotReorderAndLeavesOtherTransposes) {
    // The conv's output is read by the shuffle and by a graph output.
    {
        Builder b;
        ir::Value* x = b.input("x", {1, 4, 3, 3});
        ir::Value* c = b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({4, 4, 1, 1}, 91))});
        auto g = b.finish({channelShuffle(b, c, {1, 4, 3, 3}, 2), c});
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        const RuleStats& s = stats(r, "fold-channel-shuffle");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count("conv output has 2 users"), 1u) << s.reasons.size();
    }
    // A residual added before the shuffle would have to be reordered too.
    {
        Builder b;
        ir::Value* x = b.input("x", {1, 4, 3, 3});
        ir::Value* c = b.node(OpKind::Conv, "conv",
                              {x, b.constant("w", randomTensor({4, 4, 1, 1}, 92)), b.constant("b", randomTensor({4}, 93))});
        ir::Value* sum = b.node(OpKind::Relu, "relu", {b.node(OpKind::Add, "add", {c, x})});
        auto g = b.finish({channelShuffle(b, sum, {1, 4, 3, 3}, 2)});
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(r, "fuse-conv-residual").applied, 1);
        const RuleStats& s = stats(r, "fold-channel-shuffle");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count("conv adds a residual, which the shuffle would reorder too"), 1u);
        expectSameOutputs(before, runF64(*r.graph));
    }
    // 512 groups on a 1x1 map (f64): the dense weights would grow by 8 MiB, more than the
    // shuffle's three Tasks move and cost (6 x 8 KiB, and 700 cycles each at 512 bytes a cycle).
    EXPECT_EQ(shuffleRefusal({1, 1024, 1, 1}, {1024, 2, 1, 1}, 512, 32),
              "conv of 512 groups would be dense: its weights would grow by 8372224 bytes, more than the 1124352 "
              "the shuffle costs (its 8192-byte map read and written by three Tasks, and their dispatches, DRAM "
              "latencies and events)");
    // 32 groups on a 1x1 map: the weights grow by 62x the map (31,744 bytes), far less than the
    // shuffle's Tasks cost in dispatches, latencies and events: folded.
    EXPECT_EQ(shuffleRefusal({1, 64, 1, 1}, {64, 2, 1, 1}, 32, 32), "applied");
    // On a target whose Tasks cost nothing beside their bytes, only the map's passes count.
    EXPECT_EQ(shuffleRefusal({1, 64, 1, 1}, {64, 2, 1, 1}, 32, 32, 0),
              "conv of 32 groups would be dense: its weights would grow by 31744 bytes, more than the 3072 the "
              "shuffle costs (its 512-byte map read and written by three Tasks, and their dispatches, DRAM "
              "latencies and events)");
    // A depthwise conv of 512 channels on a 32x32 map: its weights would grow by less than the
    // shuffle moves, but every output would sum 511 more windows of zeros.
    EXPECT_EQ(shuffleRefusal({1, 512, 32, 32}, {512, 1, 3, 3}, 512, 4),
              "conv of 512 groups would be dense: 2411200512 more MACs, over 64 per byte the shuffle costs "
              "(26241024)");
    // A conv read by a plain Reshape (a flatten) and by another op has no shuffle after it: no
    // rejection is counted.
    {
        Builder b;
        ir::Value* x = b.input("x", {1, 4, 3, 3});
        ir::Value* c = b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({4, 4, 1, 1}, 96))});
        ir::Value* flat = b.node(OpKind::Reshape, "flat", {c, b.constant("flat_dims", dims64({1, 36}))});
        auto g = b.finish({flat, b.node(OpKind::Sigmoid, "sig", {c})});
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        const RuleStats& s = stats(r, "fold-channel-shuffle");
        EXPECT_EQ(s.matched, 0);
        EXPECT_EQ(s.rejected, 0);
    }
    // Another transpose of the split dims is no shuffle: nothing matches.
    {
        Builder b;
        ir::Value* x = b.input("x", {1, 4, 3, 3});
        ir::Value* c = b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({4, 4, 1, 1}, 95))});
        auto g = b.finish({channelShuffle(b, c, {1, 4, 3, 3}, 2, {0, 1, 2, 4, 3})});
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        const RuleStats& s = stats(r, "fold-channel-shuffle");
        EXPECT_EQ(s.matched, 0);
        EXPECT_EQ(s.rejected, 0);
        EXPECT_EQ(countKind(*r.graph, OpKind::Transpose), 1);
    }
}

// ---- fold-zero-channel-pad

namespace {

/// BlazeFace's block: x[batch,4,5,5] -> depthwise 3x3 -> 1x1 conv to 6 channels, plus x padded to 6
/// channels with zeros (a Concat with a constant, or a Pad of the channel dim's end), -> Relu.
std::unique_ptr<ir::Graph> paddedShortcut(bool viaPad, bool padReadTwice = false, int64_t batch = 1) {
    Builder b;
    ir::Value* x = b.input("x", {batch, 4, 5, 5});
    ir::Value* d = b.node(OpKind::Conv, "dw", {x, b.constant("dw_w", randomTensor({4, 1, 3, 3}, 101))},
                          {{"group", int64_t{4}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Value* c = b.node(OpKind::Conv, "pw", {d, b.constant("pw_w", randomTensor({6, 4, 1, 1}, 102)),
                                               b.constant("pw_b", randomTensor({6}, 103))});
    ir::Value* padded =
        viaPad ? b.node(OpKind::Pad, "pad", {x, b.constant("pads", dims64({0, 0, 0, 0, 0, 2, 0, 0}))})
               : b.node(OpKind::Concat, "pad", {x, b.constant("zeros", ir::Tensor(ir::DType::F64, {batch, 2, 5, 5}))},
                        {{"axis", int64_t{1}}});
    ir::Value* y = b.node(OpKind::Relu, "relu", {b.node(OpKind::Add, "add", {c, padded})});
    return padReadTwice ? b.finish({y, b.node(OpKind::Sigmoid, "side", {padded})}) : b.finish({y});
}

} // namespace

TEST(FoldZeroChannelPad, TheResidualIsReadWithoutItsZeroChannels) {
    for (int64_t batch : {1, 3}) {
        for (bool viaPad : {false, true}) {
            SCOPED_TRACE(std::string(viaPad ? "Pad" : "Concat") + ", batch " + std::to_string(batch));
            auto g = paddedShortcut(viaPad, false, batch);
            auto before = runF64(*g);
            PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
            ASSERT_TRUE(r.graph);
            EXPECT_EQ(stats(r, "fuse-conv-residual").applied, 1);
            EXPECT_EQ(stats(r, "fold-zero-channel-pad").applied, 1);
            EXPECT_EQ(countKind(*r.graph, OpKind::Concat) + countKind(*r.graph, OpKind::Pad), 0)
                << ir::printGraph(*r.graph);
            const ir::Node* conv = nodeNamed(*r.graph, "pw");
            ASSERT_NE(conv, nullptr) << ir::printGraph(*r.graph);
            ASSERT_EQ(conv->numInputs(), 4u);
            EXPECT_EQ(conv->input(3)->name(), "x");
            EXPECT_EQ(conv->output(0)->type().dims()[1], 6);
            const std::vector<std::string>& origins = conv->provenance().origins;
            EXPECT_NE(std::find(origins.begin(), origins.end(), "pad"), origins.end());
            expectSameOutputs(before, runF64(*r.graph));
        }
    }
}

TEST(FoldZeroChannelPad, APaddedTensorReadElsewhereStaysAndOtherPadsAreLeft) {
    // The padded tensor is also a graph output's input: the FusedConv still reads x, the pad stays.
    {
        auto g = paddedShortcut(false, true);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        EXPECT_EQ(stats(r, "fold-zero-channel-pad").applied, 1);
        EXPECT_EQ(countKind(*r.graph, OpKind::Concat), 1);
        expectSameOutputs(before, runF64(*r.graph));
    }
    // Zero channels ahead of the tensor are not added to its first channels; a Concat of two maps
    // is no pad at all.
    {
        Builder b;
        ir::Value* x = b.input("x", {1, 4, 5, 5});
        ir::Value* c = b.node(OpKind::Conv, "pw", {x, b.constant("w", randomTensor({6, 4, 1, 1}, 111)),
                                                   b.constant("b", randomTensor({6}, 112))});
        ir::Value* ahead = b.node(OpKind::Pad, "pad", {x, b.constant("pads", dims64({0, 2, 0, 0, 0, 0, 0, 0}))});
        ir::Value* t = b.node(OpKind::Tanh, "tanh", {x});
        ir::Value* other = b.node(OpKind::Concat, "cat", {x, t}, {{"axis", int64_t{1}}});
        ir::Value* c2 = b.node(OpKind::Conv, "pw2", {x, b.constant("w2", randomTensor({8, 4, 1, 1}, 113)),
                                                     b.constant("b2", randomTensor({8}, 114))});
        auto g = b.finish({b.node(OpKind::Add, "add", {c, ahead}), b.node(OpKind::Add, "add2", {c2, other})});
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        const RuleStats& s = stats(r, "fold-zero-channel-pad");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(stats(r, "fuse-conv-residual").applied, 2);
        EXPECT_EQ(s.reasons.count("residual 'pad_out' is padded, but pad [0,2,0,0,0,0,0,0] pads more than the end "
                                  "of the channel dim"),
                  1u)
            << (s.reasons.empty() ? "no reason" : s.reasons.begin()->first);
        expectSameOutputs(before, runF64(*r.graph));
    }
}

TEST(FoldZeroChannelPad, AFusedConvRefusesAResidualOfMoreChannels) {
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 5, 5});
    ir::Value* r = b.input("r", {1, 8, 5, 5});
    b.g->addNode(OpKind::FusedConv, "fc", {x, b.constant("w", randomTensor({6, 4, 1, 1}, 121)),
                                           b.constant("b", randomTensor({6}, 122)), r},
                 {"y"}, {{"activation", std::string()}})
        .value();
    Status s = b.g->inferTypes();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("residual 'r' is f64[1,8,5,5] but the convolution computes f64[1,6,5,5]"),
              std::string::npos)
        << s.error().message;
}

namespace {

/// A squeeze-excite block as PP-OCR's exports write it: x scaled per channel by
/// HardSigmoid(Conv(Relu(Conv(GlobalAveragePool(x))))), plus x itself when `residual` (RSE).
/// `grouped`: the first 1x1 conv has two groups. `scaleOut`: the scale is a graph output too.
/// `silu`: the first conv's activation is x * Sigmoid(x) (EfficientNet's), which no conv takes.
std::unique_ptr<ir::Graph> squeezeExcite(std::vector<int64_t> dims, bool residual, bool grouped = false,
                                         bool scaleOut = false, bool silu = false) {
    Builder b;
    const int64_t c = dims[1], squeezed = 8;
    ir::Value* x = b.input("x", dims);
    ir::Value* pooled = b.node(OpKind::GlobalAveragePool, "gap", {x});
    ir::AttributeMap attrs;
    if (grouped)
        attrs.emplace("group", int64_t{2});
    ir::Value* fc1 = b.node(OpKind::Conv, "fc1",
                            {pooled, b.constant("w1", randomTensor({squeezed, grouped ? c / 2 : c, 1, 1}, 201)),
                             b.constant("b1", randomTensor({squeezed}, 202))},
                            std::move(attrs));
    ir::Value* h = silu ? b.node(OpKind::Mul, "silu", {fc1, b.node(OpKind::Sigmoid, "gate", {fc1})})
                        : b.node(OpKind::Relu, "relu", {fc1});
    ir::Value* s = b.node(OpKind::HardSigmoid, "hsig",
                          {b.node(OpKind::Conv, "fc2",
                                  {h, b.constant("w2", randomTensor({c, squeezed, 1, 1}, 203)),
                                   b.constant("b2", randomTensor({c}, 204))})},
                          {{"alpha", 0.2}, {"beta", 0.5}});
    ir::Value* y = b.node(OpKind::Mul, "scale", {x, s});
    if (residual)
        y = b.node(OpKind::Add, "shortcut", {y, x});
    std::vector<ir::Value*> outs{y};
    if (scaleOut)
        outs.push_back(s);
    return b.finish(outs);
}

} // namespace

TEST(FoldSqueezeExcite, TheGroupComputesTheScaleFromThePooledMap) {
    // A group (Mul, Add), a single Mul, and a map large enough for split-global-pool: the group
    // then pools the few rows its first step leaves.
    for (auto [dims, residual] : {std::pair{std::vector<int64_t>{1, 32, 9, 9}, true},
                                  std::pair{std::vector<int64_t>{2, 32, 9, 9}, false},
                                  std::pair{std::vector<int64_t>{1, 16, 64, 64}, true}}) {
        SCOPED_TRACE(shapeStr(dims) + (residual ? " with the shortcut" : ""));
        auto g = squeezeExcite(dims, residual);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        ASSERT_TRUE(r.graph);
        EXPECT_EQ(stats(r, "fold-squeeze-excite").applied, 1);
        EXPECT_EQ(countKind(*r.graph, OpKind::FusedConv) + countKind(*r.graph, OpKind::Conv), 0)
            << ir::printGraph(*r.graph);
        EXPECT_EQ(countKind(*r.graph, OpKind::GlobalAveragePool), 0) << ir::printGraph(*r.graph);
        const bool rows = dims[2] == 64;
        EXPECT_EQ(countKind(*r.graph, OpKind::AveragePool), rows ? 1 : 0) << ir::printGraph(*r.graph);
        ASSERT_EQ(countKind(*r.graph, OpKind::ElementwiseGroup), 1);
        const ir::Node* group = nullptr;
        for (const ir::Node* n : r.graph->nodes())
            if (n->kind() == OpKind::ElementwiseGroup)
                group = n;
        ASSERT_TRUE(group && group->body());
        const std::vector<std::string> text = ir::bodyText(*group->body());
        ASSERT_GE(text.size(), 6u);
        EXPECT_EQ(text[0].rfind("GlobalAveragePool(i", 0), 0u) << text[0];
        EXPECT_EQ(text[1].rfind("Conv(t0,", 0), 0u) << text[1];
        EXPECT_EQ(text[4].rfind("HardSigmoid(t3)", 0), 0u) << text[4];
        const std::vector<std::string>& origins = group->provenance().origins;
        for (const char* name : {"gap", "fc1", "fc2", "scale"})
            EXPECT_NE(std::find(origins.begin(), origins.end(), name), origins.end()) << name;
        expectSameOutputs(before, runF64(*r.graph));
    }
}

TEST(FoldSqueezeExcite, AnElementwiseGroupBetweenTheConvsIsReplayedToo) {
    // EfficientNet's SE: the first conv's SiLU stays a group of its own (Sigmoid, Mul); the
    // prologue replays its steps between the two convs.
    auto g = squeezeExcite({1, 32, 9, 9}, false, false, false, true);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(stats(r, "fold-squeeze-excite").applied, 1);
    ASSERT_EQ(countKind(*r.graph, OpKind::ElementwiseGroup), 1) << ir::printGraph(*r.graph);
    EXPECT_EQ(countKind(*r.graph, OpKind::GlobalAveragePool) + countKind(*r.graph, OpKind::FusedConv) +
                  countKind(*r.graph, OpKind::Conv),
              0)
        << ir::printGraph(*r.graph);
    for (const ir::Node* n : r.graph->nodes())
        if (n->kind() == OpKind::ElementwiseGroup) {
            const std::vector<std::string> text = ir::bodyText(*n->body());
            ASSERT_GE(text.size(), 5u);
            EXPECT_EQ(text[2].rfind("Sigmoid(t1)", 0), 0u) << text[2];
            EXPECT_EQ(text[3].rfind("Mul(t1,t2)", 0), 0u) << text[3];
            EXPECT_EQ(text[4].rfind("Conv(t3,", 0), 0u) << text[4];
        }
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FoldSqueezeExcite, RefusesWhatItCannotReplayOrShouldNotRead) {
    {
        // 128 channels are 8 blocks, so split-global-pool leaves the pooling whole: every part
        // would read 32,768 elements.
        auto g = squeezeExcite({1, 128, 16, 16}, true);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        const RuleStats& s = stats(r, "fold-squeeze-excite");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count("'gap' pools 32768 elements, more than each part should read whole (16384)"), 1u)
            << (s.reasons.empty() ? "no reason" : s.reasons.begin()->first);
        EXPECT_EQ(countKind(*r.graph, OpKind::GlobalAveragePool), 1);
    }
    {
        auto g = squeezeExcite({1, 32, 9, 9}, true, true);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        const RuleStats& s = stats(r, "fold-squeeze-excite");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count("'fc1' is a grouped convolution"), 1u)
            << (s.reasons.empty() ? "no reason" : s.reasons.begin()->first);
        expectSameOutputs(before, runF64(*r.graph));
    }
    {
        // The scale is also an output: the tail stays for it, and nothing is counted.
        auto g = squeezeExcite({1, 32, 9, 9}, true, false, true);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
        const RuleStats& s = stats(r, "fold-squeeze-excite");
        EXPECT_EQ(s.applied + s.rejected, 0);
        EXPECT_EQ(countKind(*r.graph, OpKind::GlobalAveragePool), 1);
        expectSameOutputs(before, runF64(*r.graph));
    }
}

TEST(FoldSqueezeExcite, APooledStepMustGiveOneValuePerChannel) {
    // The IR parser and the verifier hold a group to what the backend can split: a pooled step
    // whose result is a map (a Conv over the whole input) is refused, naming the step.
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 5, 5});
    ir::Value* w = b.constant("w", randomTensor({4, 4, 1, 1}, 301));
    auto g = b.finish({b.node(OpKind::Relu, "r", {x})});
    ir::Node* r = g->findNode("r");
    ASSERT_TRUE(r);
    Expected<ir::Node*> group =
        g->addNode(OpKind::ElementwiseGroup, "grp", {x, w}, {"grp_out"}, {});
    ASSERT_TRUE(group.ok());
    Expected<ir::FusedBody> body = ir::parseBody({"Conv(i0,i1)", "Mul(i0,t0)"});
    ASSERT_TRUE(body.ok()) << body.error().message;
    (*group)->setBody(std::make_shared<ir::FusedBody>(std::move(*body)));
    Status s = ir::opInfo(OpKind::ElementwiseGroup).verify(**group);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("body step 0 'Conv(i0,i1)' gives f64[1,4,5,5], not one value per channel"),
              std::string::npos)
        << s.error().message;
}

// ---- split-conv-over-concat

namespace {

/// SqueezeNet's fire module on x[1,8,s,s]: an expand 1x1 and an expand 3x3 conv (16 channels
/// each, bias, Relu) concatenated into `pieces` inputs (the 3x3 one repeated beyond two) and read
/// by a squeeze 1x1 conv to 8 channels (bias, Relu) of `group` groups; `alsoOut` makes the Concat
/// a graph output too; `residual` adds x to the squeeze before its Relu.
std::unique_ptr<ir::Graph> fireModule(int64_t s, int pieces = 2, int64_t group = 1, bool alsoOut = false,
                                      bool residual = false) {
    Builder b;
    ir::Value* x = b.input("x", {1, 8, s, s});
    ir::Value* e1 = b.node(OpKind::Relu, "relu1",
                           {b.node(OpKind::Conv, "expand1",
                                   {x, b.constant("w1", randomTensor({16, 8, 1, 1}, 41)), b.constant("b1", randomTensor({16}, 42))})});
    ir::Value* e3 = b.node(OpKind::Relu, "relu3",
                           {b.node(OpKind::Conv, "expand3",
                                   {x, b.constant("w3", randomTensor({16, 8, 3, 3}, 43)), b.constant("b3", randomTensor({16}, 44))},
                                   {{"pads", std::vector<int64_t>{1, 1, 1, 1}}})});
    std::vector<ir::Value*> in{e1};
    for (int k = 1; k < pieces; ++k)
        in.push_back(e3);
    const int64_t channels = 16 * pieces;
    ir::Value* cat = b.node(OpKind::Concat, "cat", in, {{"axis", int64_t{1}}});
    ir::Value* conv = b.node(OpKind::Conv, "squeeze",
                             {cat, b.constant("wsq", randomTensor({8, channels / group, 1, 1}, 45)),
                              b.constant("bsq", randomTensor({8}, 46))},
                             {{"group", group}});
    if (residual)
        conv = b.node(OpKind::Add, "shortcut", {conv, x});
    ir::Value* sq = b.node(OpKind::Relu, "relu_sq", {conv});
    std::vector<ir::Value*> outs{sq};
    if (alsoOut)
        outs.push_back(cat);
    return b.finish(outs);
}

/// The one reason split-conv-over-concat gives for `g` ("applied" when it does not refuse), on a
/// target whose Tasks cost `fixed` cycles beside their work (npu-a's 700 by default).
std::string splitRefusal(const ir::Graph& g, uint64_t fixed = 700) {
    PipelineConfig config;
    config.disabled = {"layout"};
    config.taskFixedCycles = fixed;
    PipelineResult r = pipeline(g, config);
    const RuleStats& s = stats(r, "split-conv-over-concat");
    if (s.applied > 0)
        return "applied";
    return s.reasons.size() == 1 ? s.reasons.begin()->first : std::to_string(s.reasons.size()) + " reasons";
}

} // namespace

TEST(SplitConvOverConcat, AConvOverAConcatSumsOneConvPerPiece) {
    auto g = fireModule(48);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(stats(r, "split-conv-over-concat").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Concat), 0) << ir::printGraph(*r.graph);
    const ir::Node* last = nodeNamed(*r.graph, "squeeze");
    const ir::Node* first = nodeNamed(*r.graph, "squeeze_in0");
    ASSERT_NE(last, nullptr) << ir::printGraph(*r.graph);
    ASSERT_NE(first, nullptr) << ir::printGraph(*r.graph);
    // The first piece: the 1x1 expand's channels, the bias, no activation (it acts on the sum).
    EXPECT_EQ(first->kind(), OpKind::FusedConv);
    EXPECT_EQ(first->input(0)->producer()->name(), "expand1");
    EXPECT_EQ(first->attrString("activation", "?"), "");
    EXPECT_EQ(first->numInputs(), 3u);
    // The last: the 3x3 expand's channels, zeros for bias, the first as its residual, the Relu.
    EXPECT_EQ(last->kind(), OpKind::FusedConv);
    EXPECT_EQ(last->input(0)->producer()->name(), "expand3");
    EXPECT_EQ(last->attrString("activation", "?"), "Relu");
    ASSERT_GE(last->numInputs(), 4u);
    EXPECT_EQ(last->input(3), first->output(0));
    const ir::Tensor* zeros = last->input(2)->constant();
    ASSERT_NE(zeros, nullptr);
    EXPECT_TRUE(allEqual(*zeros, 0.0));
    EXPECT_EQ(last->output(0)->name(), "relu_sq_out") << "it computes what the Relu did";
    // Each piece's weights are the columns of its input channels.
    const ir::Tensor* w = g->findValue("wsq")->constant();
    const ir::Tensor* w0 = first->input(1)->constant();
    const ir::Tensor* w1 = last->input(1)->constant();
    ASSERT_TRUE(w && w0 && w1);
    ASSERT_EQ(w0->shape(), (std::vector<int64_t>{8, 16, 1, 1}));
    ASSERT_EQ(w1->shape(), (std::vector<int64_t>{8, 16, 1, 1}));
    for (int64_t co = 0; co < 8; ++co)
        for (int64_t ci = 0; ci < 16; ++ci) {
            EXPECT_EQ(w0->at(co * 16 + ci), w->at(co * 32 + ci));
            EXPECT_EQ(w1->at(co * 16 + ci), w->at(co * 32 + 16 + ci));
        }
    for (const ir::Node* n : {first, last}) {
        const std::vector<std::string>& origins = n->provenance().origins;
        EXPECT_NE(std::find(origins.begin(), origins.end(), "cat"), origins.end());
        EXPECT_NE(std::find(origins.begin(), origins.end(), "squeeze"), origins.end());
    }
    expectSameOutputs(before, runF64(*r.graph), 1e-12);

    PipelineResult off = pipeline(*g, {.disabled = {"layout", "split-conv-over-concat"}});
    EXPECT_EQ(countKind(*off.graph, OpKind::Concat), 1);
}

TEST(SplitConvOverConcat, FourPiecesChainTheirSums) {
    auto g = fireModule(48, 4);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    EXPECT_EQ(stats(r, "split-conv-over-concat").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Concat), 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::FusedConv), 6) << ir::printGraph(*r.graph); // 2 expands, 4 pieces
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
}

TEST(SplitConvOverConcat, TheResidualTheConvAddedGoesToTheFirstPiece) {
    auto g = fireModule(48, 3, 1, false, true);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    EXPECT_EQ(stats(r, "fuse-conv-residual").applied, 1);
    EXPECT_EQ(stats(r, "split-conv-over-concat").applied, 1);
    const ir::Node* first = nodeNamed(*r.graph, "squeeze_in0");
    ASSERT_NE(first, nullptr) << ir::printGraph(*r.graph);
    ASSERT_GE(first->numInputs(), 4u);
    EXPECT_EQ(first->input(3), r.graph->inputs()[0]) << "x, the shortcut";
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
}

TEST(SplitConvOverConcat, RejectsWhatItCannotSplitOrWhatDoesNotPay) {
    // 8x8: the Concat's 32 x 64 elements written and read back cost less than a second Task.
    EXPECT_EQ(splitRefusal(*fireModule(8)),
              "concat of 16384 bytes: its round trip (32768) costs less than the 1 convolution the split adds (358400)");
    EXPECT_EQ(splitRefusal(*fireModule(8, 3)),
              "concat of 24576 bytes: its round trip (49152) costs less than the 2 convolutions the split adds (716800)");
    EXPECT_EQ(splitRefusal(*fireModule(48, 2, 2)), "conv has 2 groups: a piece's channels would cut across them");
    EXPECT_EQ(splitRefusal(*fireModule(48, 2, 1, true)), "concat output has 2 users");
    EXPECT_EQ(splitRefusal(*fireModule(48, 5)), "concat of 5 inputs: more than 4 convolutions");
}

// The trade is the target's: where a Task costs nothing beside its work, even a small Concat's
// round trip is worth a convolution more; where it costs ten times npu-a's, a 48x48 one is not.
TEST(SplitConvOverConcat, TheTradeFollowsTheTargetsTaskCosts) {
    EXPECT_EQ(splitRefusal(*fireModule(8), 0), "applied");
    EXPECT_EQ(splitRefusal(*fireModule(48), 7000),
              "concat of 589824 bytes: its round trip (1179648) costs less than the 1 convolution the split adds "
              "(3584000)");
}
