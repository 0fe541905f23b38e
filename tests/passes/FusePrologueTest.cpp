// fuse-conv-prologue: a BatchNormalization + Relu that no Conv absorbed (a pre-activation
// network's, as DenseNet and ResNet v2 put one before a convolution) becomes the input prologue
// of the convolutions it feeds: float64 results before/after, the FusedConv's inputs and
// attributes, rejections with their reasons, and the verifier on malformed prologues.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

TEST(FuseConvPrologue, ABatchNormAndReluBeforeConvolutionsBecomeTheirPrologue) {
    // x -> BN -> Relu -> two 1x1 convolutions (one padded, one strided with a bias): both take
    // the scale and shift as inputs 4 and 5 and the group is gone. The padded one shows that the
    // prologue applies before the zero padding, as the group did.
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 6, 6});
    ir::Value* act = b.node(OpKind::Relu, "relu", {batchNorm(b, "bn", x, 4, 1)});
    ir::Value* c3 = b.node(OpKind::Conv, "conv3", {act, b.constant("w3", randomTensor({5, 4, 1, 1}, 11))},
                           {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Value* c1 = b.node(OpKind::Conv, "conv1",
                           {act, b.constant("w1", randomTensor({3, 4, 1, 1}, 12)), b.constant("b1", randomTensor({3}, 13))},
                           {{"strides", std::vector<int64_t>{2, 2}}});
    auto g = b.finish({c3, c1});
    const auto before = runF64(*g, 5);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    EXPECT_EQ(stats(r, "fuse-batchnorm-chain").applied, 1);
    EXPECT_EQ(stats(r, "fuse-conv-prologue").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::ElementwiseGroup), 0) << ir::printGraph(*r.graph);
    ASSERT_EQ(countKind(*r.graph, OpKind::FusedConv), 2) << ir::printGraph(*r.graph);
    for (const ir::Node* n : r.graph->nodes()) {
        SCOPED_TRACE(n->name());
        ASSERT_EQ(n->kind(), OpKind::FusedConv);
        EXPECT_TRUE(ir::hasInputPrologue(*n));
        EXPECT_EQ(n->input(0)->name(), "x");
        EXPECT_EQ(n->attrString("prologue_activation", "?"), "Relu");
        EXPECT_EQ(n->input(4)->type().numel(), 4);
        EXPECT_EQ(n->input(5)->type().numel(), 4);
        // The node keeps its convolution's name and adds the normalisation's origins.
        const std::vector<std::string>& o = n->provenance().origins;
        EXPECT_NE(std::find(o.begin(), o.end(), "bn"), o.end());
        EXPECT_NE(std::find(o.begin(), o.end(), "relu"), o.end());
        EXPECT_TRUE(n->name() == "conv3" || n->name() == "conv1") << n->name();
    }
    EXPECT_TRUE(ir::verifyGraph(*r.graph).ok());
    expectSameOutputs(before, runF64(*r.graph, 5));
    // Switched off, the group stays a Task of its own and the numbers agree.
    PipelineResult off = pipeline(*g, {.disabled = {"layout", "fuse-conv-prologue"}});
    EXPECT_EQ(countKind(*off.graph, OpKind::ElementwiseGroup), 1);
    expectSameOutputs(before, runF64(*off.graph, 5));
}

TEST(FuseConvPrologue, ABatchNormWithoutReluIsAnAffinePrologue) {
    // BN -> Mul by a per-channel constant (a Caffe Scale layer, which fuse-batchnorm-chain folds
    // into the scale and shift) -> Conv: the group is [Mul, Add], a prologue without activation.
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 5, 5});
    ir::Value* bn = batchNorm(b, "bn", x, 3, 3);
    ir::Value* scaled = b.node(OpKind::Mul, "scale", {bn, b.constant("k", randomTensor({3, 1, 1}, 7))});
    ir::Value* c = b.node(OpKind::Conv, "conv", {scaled, b.constant("w", randomTensor({2, 3, 1, 1}, 8))});
    auto g = b.finish({c});
    const auto before = runF64(*g, 2);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    EXPECT_EQ(stats(r, "fuse-conv-prologue").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    const ir::Node& n = *r.graph->nodes()[0];
    EXPECT_TRUE(ir::hasInputPrologue(n));
    EXPECT_FALSE(n.attr("prologue_activation")) << ir::printGraph(*r.graph);
    expectSameOutputs(before, runF64(*r.graph, 2));
}

TEST(FuseConvPrologue, AGroupReadByMoreThanConvolutionsIsRejectedWithReason) {
    // The normalised map also feeds a MaxPool, is a graph output, or is a convolution's residual
    // as well as its data (the Add after conv1 becomes its epilogue): the group must be computed
    // anyway, so the convolutions keep reading it. A 3x3 convolution does not take a prologue
    // (measured slower on inception v2).
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* a1 = b.node(OpKind::Relu, "relu1", {batchNorm(b, "bn1", x, 2, 1)});
    ir::Value* c1 = b.node(OpKind::Conv, "conv1", {a1, b.constant("w1", randomTensor({2, 2, 1, 1}, 2))});
    ir::Value* sum = b.node(OpKind::Add, "sum", {c1, a1});
    ir::Value* a2 = b.node(OpKind::Relu, "relu2", {batchNorm(b, "bn2", x, 2, 5)});
    ir::Value* c2 = b.node(OpKind::Conv, "conv2", {a2, b.constant("w2", randomTensor({2, 2, 1, 1}, 3))});
    ir::Value* a3 = b.node(OpKind::Relu, "relu3", {batchNorm(b, "bn3", x, 2, 9)});
    ir::Value* c3 = b.node(OpKind::Conv, "conv3", {a3, b.constant("w3", randomTensor({2, 2, 1, 1}, 4))});
    ir::Value* pool = b.node(OpKind::MaxPool, "pool", {a3}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
    ir::Value* a4 = b.node(OpKind::Relu, "relu4", {batchNorm(b, "bn4", x, 2, 13)});
    ir::Value* c4 = b.node(OpKind::Conv, "conv4", {a4, b.constant("w4", randomTensor({2, 2, 3, 3}, 5))});
    auto g = b.finish({sum, c2, a2, c3, pool, c4});
    const auto before = runF64(*g);
    PipelineResult r = pipeline(*g, {.disabled = {"layout"}});
    const RuleStats& s = stats(r, "fuse-conv-prologue");
    EXPECT_EQ(s.applied, 0);
    EXPECT_EQ(s.reasons.count("'conv1' reads 'relu1_out' as more than its data"), 1u) << ir::printGraph(*r.graph);
    EXPECT_EQ(s.reasons.count("'relu2_out' is a graph output"), 1u) << ir::printGraph(*r.graph);
    EXPECT_EQ(s.reasons.count("'relu3_out' is read by MaxPool 'pool', not only by convolutions"), 1u)
        << ir::printGraph(*r.graph);
    EXPECT_EQ(s.reasons.count("'conv4' is not a 1x1 convolution"), 1u) << ir::printGraph(*r.graph);
    EXPECT_EQ(countKind(*r.graph, OpKind::ElementwiseGroup), 4);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FuseConvPrologue, AMalformedPrologueIsAnError) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* w = b.constant("w", randomTensor({2, 2, 1, 1}, 1));
    ir::Value* s = b.constant("s", randomTensor({2, 1, 1}, 2));
    ir::Value* t3 = b.constant("t3", randomTensor({3, 1, 1}, 3));
    // Scale without shift.
    ir::Value* c = b.node(OpKind::FusedConv, "conv", {x, w, nullptr, nullptr, s, nullptr});
    auto g = b.finish({c});
    Status st = ir::verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("needs both its scale (input 4) and its shift (input 5)"), std::string::npos)
        << st.error().message;
    // A shift of three values for two channels.
    g->setInput(g->nodes()[0], 5, t3);
    st = ir::verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("prologue shift 't3'"), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find("not one value per channel"), std::string::npos) << st.error().message;
    // An activation the prologue does not apply.
    g->setInput(g->nodes()[0], 5, s);
    g->nodes()[0]->setAttr("prologue_activation", std::string("Sigmoid"));
    st = ir::verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("prologue_activation 'Sigmoid'"), std::string::npos) << st.error().message;
    g->nodes()[0]->setAttr("prologue_activation", std::string("Relu"));
    EXPECT_TRUE(ir::verifyGraph(*g).ok());
}
