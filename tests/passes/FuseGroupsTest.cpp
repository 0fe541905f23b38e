// The attention block as one sextant.Attention and elementwise chains as one
// sextant.ElementwiseGroup: float64 results before/after, recorded bodies, rejections.
#include "PassTestUtil.h"

#include "core/ir/Parser.h"
#include "core/ir/Printer.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

struct AttnOptions {
    bool preScale = true;     ///< Mul(q, s) before the product (SVTR); else Div(scores, d)
    bool transposeK = true;   ///< K as [B,H,S,D] through a Transpose; else given as [B,H,D,S]
    bool softmaxShared = false;
    std::vector<int64_t> kBatch{2, 2};
};

std::unique_ptr<ir::Graph> attention(const AttnOptions& o) {
    Builder b;
    ir::Value* q = b.input("q", {2, 2, 5, 4});
    std::vector<int64_t> kShape = o.kBatch;
    if (o.transposeK) {
        kShape.insert(kShape.end(), {6, 4});
    } else {
        kShape.insert(kShape.end(), {4, 6});
    }
    ir::Value* k = b.input("k", kShape);
    ir::Value* v = b.input("v", {2, 2, 6, 3});
    ir::Value* qs = o.preScale ? b.node(OpKind::Mul, "qscale", {q, scalar(b, "s", 0.35)}) : q;
    ir::Value* kt = o.transposeK ? b.node(OpKind::Transpose, "kt", {k},
                                          {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})
                                 : k;
    ir::Value* scores = b.node(OpKind::MatMul, "qk", {qs, kt});
    if (!o.preScale)
        scores = b.node(OpKind::Div, "scale", {scores, scalar(b, "d", 2.0)});
    ir::Value* p = b.node(OpKind::Softmax, "softmax", {scores}, {{"axis", int64_t{3}}});
    ir::Value* out = b.node(OpKind::MatMul, "pv", {p, v});
    std::vector<ir::Value*> outs{out};
    if (o.softmaxShared)
        outs.push_back(p);
    return b.finish(outs);
}

} // namespace

TEST(FuseAttention, SvtrBlockBecomesOneAttention) {
    auto g = attention({});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-attention").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    const ir::Node* n = r.graph->nodes()[0];
    EXPECT_EQ(n->kind(), OpKind::Attention);
    EXPECT_EQ(n->name(), "qk");
    EXPECT_DOUBLE_EQ(n->attrFloat("scale", 0), 0.35);
    EXPECT_EQ(n->attrInt("transB", 0), 1);
    EXPECT_EQ(n->input(0)->name(), "q");
    EXPECT_EQ(n->input(1)->name(), "k");
    EXPECT_EQ(n->provenance().origins,
              (std::vector<std::string>{"kt", "pv", "qk", "qscale", "softmax"}));
    EXPECT_EQ(r.graph->outputs()[0]->name(), "pv_out");
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
}

TEST(FuseAttention, ScaleAfterTheProductAndUntransposedK) {
    AttnOptions o;
    o.preScale = false;
    o.transposeK = false;
    auto g = attention(o);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-attention").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    const ir::Node* n = r.graph->nodes()[0];
    EXPECT_DOUBLE_EQ(n->attrFloat("scale", 0), 0.5);
    EXPECT_EQ(n->attrInt("transB", 1), 0);
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
}

TEST(FuseAttention, SharedSoftmaxAndBroadcastBatchAreRejected) {
    {
        AttnOptions o;
        o.softmaxShared = true;
        auto g = attention(o);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        const RuleStats& s = stats(r, "fuse-attention");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count("softmax output has 2 users"), 1u);
        EXPECT_EQ(countKind(*r.graph, OpKind::Softmax), 1);
        expectSameOutputs(before, runF64(*r.graph), 1e-12);
    }
    {
        AttnOptions o;
        o.kBatch = {1, 2};
        auto g = attention(o);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        const RuleStats& s = stats(r, "fuse-attention");
        EXPECT_EQ(s.applied, 0);
        EXPECT_EQ(s.reasons.count(
                      "attention operands [2,2,5,4], [1,2,6,4], [2,2,6,3] broadcast their batch dims"),
                  1u);
        expectSameOutputs(before, runF64(*r.graph), 1e-12);
    }
}

TEST(FuseElementwiseChain, SwishBecomesOneGroupWithARecordedBody) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3, 4});
    ir::Value* m = b.node(OpKind::Mul, "scale", {x, scalar(b, "c", 1.5)});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {m});
    ir::Value* y = b.node(OpKind::Mul, "swish", {x, s});
    auto g = b.finish({y});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-elementwise-chain").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    const ir::Node* n = r.graph->nodes()[0];
    EXPECT_EQ(n->kind(), OpKind::ElementwiseGroup);
    EXPECT_EQ(n->name(), "scale");
    ASSERT_NE(n->body(), nullptr);
    EXPECT_FALSE(n->hasAttr("body")) << "the body is the node's field, not an attribute";
    EXPECT_EQ(ir::bodyText(*n->body()), (std::vector<std::string>{"Mul(i0,i1)", "Sigmoid(t0)", "Mul(i0,t1)"}));
    ASSERT_EQ(n->body()->steps.size(), 3u);
    EXPECT_EQ(n->body()->steps[2].op, OpKind::Mul);
    EXPECT_EQ(n->body()->steps[2].operands,
              (std::vector<ir::BodyOperand>{ir::BodyOperand::input(0), ir::BodyOperand::step(1)}));
    EXPECT_EQ(n->provenance().origins, (std::vector<std::string>{"scale", "sig", "swish"}));
    expectSameOutputs(before, runF64(*r.graph));

    // The printed IR parses back into a graph that computes the same.
    std::map<std::string, ir::Tensor> weights;
    for (const ir::Value* c : r.graph->constants())
        weights.emplace(c->name(), *c->constant());
    auto parsed = ir::parseGraph(ir::printGraph(*r.graph), &weights);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    expectSameOutputs(before, runF64(**parsed));
}

TEST(FuseElementwiseChain, AttributesBroadcastAndBranchesAreKept) {
    // x -> LeakyRelu(0.2) -> Clip(-0.5, 0.5) -> Add(bias[4] broadcast) -> Exp; the Add's output
    // also feeds a second branch, so the chain stops there and the rest is grouped separately.
    Builder b;
    ir::Value* x = b.input("x", {3, 4});
    ir::Value* l = b.node(OpKind::LeakyRelu, "leaky", {x}, {{"alpha", 0.2}});
    ir::Value* c = b.node(OpKind::Clip, "clip", {l}, {{"min", -0.5}, {"max", 0.5}});
    ir::Value* a = b.node(OpKind::Add, "add", {c, b.constant("bias", randomTensor({4}, 5))});
    ir::Value* e = b.node(OpKind::Exp, "exp", {a});
    ir::Value* n1 = b.node(OpKind::Neg, "neg", {e});
    ir::Value* branch = b.node(OpKind::Sqrt, "sqrt", {b.node(OpKind::Relu, "relu", {a})});
    auto g = b.finish({n1, branch});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-elementwise-chain").applied, 3);
    EXPECT_EQ(countKind(*r.graph, OpKind::ElementwiseGroup), 3) << ir::printGraph(*r.graph);
    const ir::Node* head = r.graph->findNode("leaky");
    ASSERT_NE(head, nullptr);
    ASSERT_NE(head->body(), nullptr);
    EXPECT_EQ(ir::bodyText(*head->body()), (std::vector<std::string>{"LeakyRelu(i0) alpha=0.20000000000000001",
                                               "Clip(t0) max=0.5 min=-0.5", "Add(t1,i1)"}));
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseElementwiseChain, LeavesProducerActivationsToTheFusedOps) {
    // Conv -> Add(bias) -> Relu -> Sigmoid: the conv takes bias and Relu; Sigmoid alone is no
    // chain.
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* c =
        b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({3, 2, 1, 1}, 6))});
    ir::Value* a = b.node(OpKind::Add, "add", {c, b.constant("bias", randomTensor({3, 1, 1}, 7))});
    ir::Value* r0 = b.node(OpKind::Relu, "relu", {a});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {r0});
    auto g = b.finish({s});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-conv-bias-act").applied, 1);
    EXPECT_EQ(stats(r, "fuse-elementwise-chain").applied, 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::FusedConv), 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Sigmoid), 1);
    expectSameOutputs(before, runF64(*r.graph));
}

namespace {

/// DenseNet's pre-activation: Concat -> BatchNormalization -> Mul/Add (a Caffe Scale layer) ->
/// Relu -> Conv. `var0` is channel 0's running variance.
std::unique_ptr<ir::Graph> preActivation(double var0, std::vector<int64_t> scaleShape = {4, 1, 1}) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* y = b.input("y", {1, 2, 4, 4});
    ir::Value* cat = b.node(OpKind::Concat, "cat", {x, y}, {{"axis", int64_t{1}}});
    ir::Tensor var = randomTensor({4}, 14, 0.5, 2.0);
    var.set(0, var0);
    ir::Value* bn = batchNorm(b, "bn", cat, 4, 11, std::move(var));
    ir::Value* m = b.node(OpKind::Mul, "scale", {bn, b.constant("s", randomTensor(scaleShape, 15))});
    ir::Value* a = b.node(OpKind::Add, "shift", {m, b.constant("t", randomTensor({4, 1, 1}, 16))});
    ir::Value* r = b.node(OpKind::Relu, "relu", {a});
    ir::Value* c = b.node(OpKind::Conv, "conv", {r, b.constant("w", randomTensor({3, 4, 1, 1}, 17))});
    return b.finish({c});
}

} // namespace

TEST(FuseBatchNormChain, APreActivationBecomesOneGroupWithTheSameNumbers) {
    auto g = preActivation(0.7);
    auto before = runF64(*g);
    // The group as fuse-batchnorm-chain makes it; fuse-conv-prologue would then move it into
    // the 1x1 convolution it feeds (FusePrologueTest.cpp), which it does when on.
    PipelineResult withPrologue = pipeline(*g);
    EXPECT_EQ(stats(withPrologue, "fuse-conv-prologue").applied, 1);
    EXPECT_EQ(countKind(*withPrologue.graph, OpKind::ElementwiseGroup), 0);
    expectSameOutputs(before, runF64(*withPrologue.graph), 1e-12);
    PipelineResult r = pipeline(*g, {.disabled = {"fuse-conv-prologue"}});
    EXPECT_EQ(stats(r, "fuse-batchnorm-chain").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::BatchNormalization), 0) << ir::printGraph(*r.graph);
    ASSERT_EQ(countKind(*r.graph, OpKind::ElementwiseGroup), 1) << ir::printGraph(*r.graph);
    const ir::Node* n = r.graph->findNode("bn");
    ASSERT_NE(n, nullptr);
    ASSERT_NE(n->body(), nullptr);
    // The normalisation and the Scale layer after it as one scale and shift, then the activation.
    EXPECT_EQ(ir::bodyText(*n->body()), (std::vector<std::string>{"Mul(i0,i1)", "Add(t0,i2)", "Relu(t1)"}));
    EXPECT_EQ(n->provenance().origins, (std::vector<std::string>{"bn", "relu", "scale", "shift"}));
    // No longer kept in f32: the raw statistics and 1/sqrt(var + eps) were computed here.
    EXPECT_NE(n->precision(), ir::Precision::F32);
    expectSameOutputs(before, runF64(*r.graph), 1e-12);

    // Switched off, the BatchNormalization stays an op of its own (and runs in f32).
    PipelineConfig cfg;
    cfg.disabled = {"fuse-batchnorm-chain"};
    PipelineResult off = pipeline(*g, cfg);
    EXPECT_EQ(countKind(*off.graph, OpKind::BatchNormalization), 1);
    EXPECT_EQ(stats(off, "fuse-elementwise-chain").applied, 1);
    expectSameOutputs(before, runF64(*off.graph), 1e-12);
}

TEST(FuseBatchNormChain, AFactorThatIsNotPerChannelStaysAStep) {
    // A Mul by a [4, 1, 4] constant varies along W: it is a step of the group, not folded.
    auto g = preActivation(0.7, {4, 1, 4});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-batchnorm-chain").applied, 1);
    const ir::Node* n = r.graph->findNode("bn");
    ASSERT_NE(n, nullptr);
    ASSERT_NE(n->body(), nullptr);
    EXPECT_EQ(ir::bodyText(*n->body()),
              (std::vector<std::string>{"Mul(i0,i1)", "Add(t0,i2)", "Mul(t1,i3)", "Add(t2,i4)", "Relu(t3)"}));
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
}

TEST(FuseBatchNormChain, AScaleOutsideF16sRangeKeepsTheOp) {
    // A negative running variance (an exporter's bug) makes 1/sqrt(var + eps) NaN: the rule says
    // which channel, and the op stays as it was.
    auto g = preActivation(-1.0);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    const RuleStats& s = stats(r, "fuse-batchnorm-chain");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.reasons.count("scale or shift of channel 0 of batchnorm 'bn' is outside f16's range"), 1u)
        << ::testing::PrintToString(s.reasons);
    EXPECT_EQ(countKind(*r.graph, OpKind::BatchNormalization), 1);
}

TEST(FuseBatchNormChain, ABatchNormAfterAConvStillFoldsIntoIt) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* c = b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({4, 2, 1, 1}, 21))});
    ir::Value* bn = batchNorm(b, "bn", c, 4, 22);
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {b.node(OpKind::Relu, "relu", {bn})});
    auto g = b.finish({s});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fuse-conv-bn").applied, 1);
    EXPECT_EQ(stats(r, "fuse-batchnorm-chain").applied, 0);
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
}
