// layout pass, whole-graph assignment: the blocked regions grow through every op that can run
// in NC1HWC0 (elementwise with per-channel broadcasting, pooling, concat) whenever that saves a
// conversion, so a residual chain of any length converts once in and once out, and a branchy
// block converts no more than its plain inputs and outputs force. The numbers never change
// (TransData is the identity on the logical tensor) and the result is the same on every run.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"
#include "core/passes/GreyOps.h"
#include "core/passes/Layout.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

ir::AttributeMap conv3x3() {
    return {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
            {"kernel_shape", std::vector<int64_t>{3, 3}}};
}

/// Only the layout pass and shape inference (node names and kinds stay as built).
PipelineConfig onlyLayout() {
    PipelineConfig c;
    c.disabled = {"canonicalize", "fold-constants", "cse", "fuse", "precision", "dce"};
    return c;
}

/// The TransData nodes of `g` converting src -> dst.
int conversions(const ir::Graph& g, const std::string& src, const std::string& dst) {
    int count = 0;
    for (const ir::Node* n : g.nodes())
        count += n->kind() == OpKind::TransData && n->attrString("src_format", "") == src &&
                 n->attrString("dst_format", "") == dst;
    return count;
}

bool blocked(const ir::Graph& g, const std::string& node) {
    const ir::Node* n = g.findNode(node);
    EXPECT_NE(n, nullptr) << node;
    return n && n->attrString(kLayoutAttr, "") == "NC1HWC0";
}

/// The residual chain of bench/residual-chain.py: `blocks` times Conv 3x3, BatchNormalization,
/// Relu and an Add of the block's input, 16 channels at 6x6.
std::unique_ptr<ir::Graph> residualChain(int blocks) {
    Builder b;
    ir::Value* x = b.input("x", {1, 16, 6, 6});
    for (int i = 0; i < blocks; ++i) {
        const std::string k = std::to_string(i);
        const unsigned seed = static_cast<unsigned>(10 * i);
        ir::Value* w = b.constant("w" + k, randomTensor({16, 16, 3, 3}, seed, -0.05, 0.05));
        ir::Value* c = b.node(OpKind::Conv, "conv" + k, {x, w}, conv3x3());
        std::vector<ir::Value*> bn{c};
        for (const char* p : {"s", "b", "m"})
            bn.push_back(b.constant(p + k, randomTensor({16}, seed + 1 + bn.size(), -0.5, 0.5)));
        bn.push_back(b.constant("v" + k, randomTensor({16}, seed + 5, 0.5, 1.5)));
        ir::Value* n = b.node(OpKind::BatchNormalization, "bn" + k, bn);
        ir::Value* r = b.node(OpKind::Relu, "relu" + k, {n});
        x = b.node(OpKind::Add, "add" + k, {r, x});
    }
    return b.finish({x});
}

} // namespace

// Each Add reads the previous block's output, which only the first block's input makes plain:
// judged locally every block would convert in and out (2 per block); judged globally the chain
// is one region with one conversion from the graph input and one to the graph output.
TEST(LayoutGlobal, ResidualChainOfAnyLengthConvertsOnceInAndOnceOut) {
    for (int blocks : {1, 2, 3, 8, 40, 300}) {
        SCOPED_TRACE("blocks = " + std::to_string(blocks));
        auto g = residualChain(blocks);
        PipelineResult r = pipeline(*g, onlyLayout());
        ASSERT_TRUE(r.graph);
        EXPECT_EQ(conversions(*r.graph, "NCHW", "NC1HWC0"), 1);
        EXPECT_EQ(conversions(*r.graph, "NC1HWC0", "NCHW"), 1);
        EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, 2);
        for (int i = 0; i < blocks; ++i)
            for (const char* op : {"conv", "bn", "relu", "add"})
                EXPECT_TRUE(blocked(*r.graph, op + std::to_string(i))) << op << i;
        // One region: one application, whatever the length.
        EXPECT_EQ(stats(r, kAssignLayoutRule).applied, 1);
        // The graph input's one conversion feeds both readers of x, the first Conv and Add.
        const ir::Node* entry = r.graph->findNode("conv0")->input(0)->producer();
        ASSERT_NE(entry, nullptr);
        EXPECT_EQ(entry->kind(), OpKind::TransData);
        EXPECT_EQ(r.graph->findNode("add0")->input(1)->producer(), entry);
        if (blocks <= 8)
            expectSameOutputs(runF64(*g), runF64(*r.graph));
    }
}

// With the default pipeline the chain fuses (Conv+BN+Relu, then the Add) and still converts
// once each way; compiling twice prints the same IR.
TEST(LayoutGlobal, FusedResidualChainConvertsOnceEachWayAndIsDeterministic) {
    auto g = residualChain(12);
    PipelineResult a = pipeline(*g);
    PipelineResult b = pipeline(*g);
    ASSERT_TRUE(a.graph && b.graph);
    EXPECT_EQ(countGreyOps(*a.graph).layoutConversions, 2);
    EXPECT_EQ(ir::printGraph(*a.graph), ir::printGraph(*b.graph));
    expectSameOutputs(runF64(*g), runF64(*a.graph), 1e-6);
}

// x -> conv1 -> relu, x -> conv2; concat of the two branches; + per-channel constant bias;
// a squeeze-and-excite gate (GlobalAveragePool -> Sigmoid, [1,32,1,1]) multiplied in, which
// broadcasts over H and W only, so it stays blocked; then MaxPool to the graph output. The
// minimum is one conversion in (x, shared by both convolutions) and one out.
TEST(LayoutGlobal, BranchyBlockWithBroadcastingOperandsConvertsOnlyAtTheEnds) {
    Builder b;
    ir::Value* x = b.input("x", {1, 8, 8, 8});
    ir::Value* c1 = b.node(OpKind::Conv, "conv1",
                           {x, b.constant("w1", randomTensor({16, 8, 3, 3}, 1))}, conv3x3());
    ir::Value* r1 = b.node(OpKind::Relu, "relu1", {c1});
    ir::Value* c2 = b.node(OpKind::Conv, "conv2",
                           {x, b.constant("w2", randomTensor({16, 8, 3, 3}, 2))}, conv3x3());
    ir::Value* cat = b.node(OpKind::Concat, "cat", {r1, c2}, {{"axis", int64_t{1}}});
    ir::Value* biased =
        b.node(OpKind::Add, "add_bias", {cat, b.constant("bias", randomTensor({32, 1, 1}, 3))});
    ir::Value* pooled = b.node(OpKind::GlobalAveragePool, "gap", {biased});
    ir::Value* gate = b.node(OpKind::Sigmoid, "gate", {pooled});
    ir::Value* scaled = b.node(OpKind::Mul, "excite", {biased, gate});
    ir::Value* out = b.node(
        OpKind::MaxPool, "pool", {scaled},
        {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    auto g = b.finish({out});
    PipelineResult r = pipeline(*g, onlyLayout());
    ASSERT_TRUE(r.graph);
    const std::string text = ir::printGraph(*r.graph);
    for (const char* n : {"conv1", "relu1", "conv2", "cat", "add_bias", "gap", "gate", "excite",
                          "pool"})
        EXPECT_TRUE(blocked(*r.graph, n)) << n << "\n" << text;
    EXPECT_EQ(conversions(*r.graph, "NCHW", "NC1HWC0"), 1) << text;
    EXPECT_EQ(conversions(*r.graph, "NC1HWC0", "NCHW"), 1) << text;
    EXPECT_EQ(r.graph->outputs()[0]->producer()->kind(), OpKind::TransData);
    expectSameOutputs(runF64(*g), runF64(*r.graph));
}

// A plain graph input added into a blocked chain that continues into another convolution:
// converting the input in (1) beats converting the chain out and back in (2).
TEST(LayoutGlobal, PlainOperandIsConvertedInWhenThatSavesAConversion) {
    Builder b;
    ir::Value* x = b.input("x", {1, 16, 6, 6});
    ir::Value* y = b.input("y", {1, 16, 6, 6});
    ir::Value* c1 = b.node(OpKind::Conv, "conv1",
                           {x, b.constant("w1", randomTensor({16, 16, 3, 3}, 4))}, conv3x3());
    ir::Value* r1 = b.node(OpKind::Relu, "relu1", {c1});
    ir::Value* a = b.node(OpKind::Add, "add", {r1, y});
    ir::Value* c2 = b.node(OpKind::Conv, "conv2",
                           {a, b.constant("w2", randomTensor({16, 16, 3, 3}, 5))}, conv3x3());
    auto g = b.finish({c2});
    PipelineResult r = pipeline(*g, onlyLayout());
    ASSERT_TRUE(r.graph);
    const std::string text = ir::printGraph(*r.graph);
    EXPECT_TRUE(blocked(*r.graph, "add")) << text;
    EXPECT_EQ(conversions(*r.graph, "NCHW", "NC1HWC0"), 2) << text; // x and y
    EXPECT_EQ(conversions(*r.graph, "NC1HWC0", "NCHW"), 1) << text; // the output
    const ir::Node* entryY = r.graph->findNode("add")->input(1)->producer();
    ASSERT_NE(entryY, nullptr) << text;
    EXPECT_EQ(entryY->input(0)->name(), "y");
    expectSameOutputs(runF64(*g), runF64(*r.graph));
}

// Broadcasting along the packed channel axis ([1,1,H,W] against 16 channels) cannot be read
// blocked: that Mul stays plain, with the reason, and the blocked operand converts out for it.
TEST(LayoutGlobal, ChannelBroadcastStaysPlainWithTheReason) {
    Builder b;
    ir::Value* x = b.input("x", {1, 16, 6, 6});
    ir::Value* m = b.input("mask", {1, 1, 6, 6});
    ir::Value* c = b.node(OpKind::Conv, "conv",
                          {x, b.constant("w", randomTensor({16, 16, 3, 3}, 6))}, conv3x3());
    ir::Value* masked = b.node(OpKind::Mul, "masked", {c, m});
    auto g = b.finish({masked});
    PipelineResult r = pipeline(*g, onlyLayout());
    ASSERT_TRUE(r.graph);
    EXPECT_FALSE(blocked(*r.graph, "masked"));
    bool rejected = false;
    for (const RuleRejection& j : r.rejections)
        rejected |= j.node == "masked" && j.reason.find("packed channel axis") != std::string::npos;
    EXPECT_TRUE(rejected);
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, 2);
    expectSameOutputs(runF64(*g), runF64(*r.graph));
}

// An elementwise op on an input of 3 channels before a convolution: blocked it would compute on
// 16 lanes for 3 channels; the conversion costs the same either way, so it stays plain and the
// conversion comes after it.
TEST(LayoutGlobal, PaddedChannelsTipATieTowardsPlain) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* s = b.node(OpKind::Sigmoid, "pre", {x});
    ir::Value* c = b.node(OpKind::Conv, "conv",
                          {s, b.constant("w", randomTensor({16, 3, 3, 3}, 7))}, conv3x3());
    ir::Value* r = b.node(OpKind::Relu, "post", {c});
    auto g = b.finish({r});
    PipelineResult res = pipeline(*g, onlyLayout());
    ASSERT_TRUE(res.graph);
    EXPECT_FALSE(blocked(*res.graph, "pre"));
    EXPECT_TRUE(blocked(*res.graph, "post"));
    // The convolution reads the 3 plain channels as they are (read-small-channel-input).
    EXPECT_EQ(res.graph->findNode("conv")->input(0)->name(), "pre_out");
    EXPECT_EQ(countGreyOps(*res.graph).layoutConversions, 1);

    PipelineConfig off = onlyLayout();
    off.disabled.insert(kSmallChannelInputRule);
    PipelineResult ro = pipeline(*g, off);
    ASSERT_TRUE(ro.graph);
    EXPECT_FALSE(blocked(*ro.graph, "pre"));
    EXPECT_EQ(ro.graph->findNode("conv")->input(0)->producer()->kind(), OpKind::TransData);
    EXPECT_EQ(countGreyOps(*ro.graph).layoutConversions, 2);
}

// A network's RGB input goes straight into its first convolution: no TransData pads the 3
// channels to C0 = 16 in DRAM; one application per convolution, and the numbers do not change.
// With 5 channels, or with the rule off, the input converts as before.
TEST(LayoutGlobal, FirstConvolutionReadsItsSmallChannelInputPlain) {
    for (int64_t channels : {1, 3, 4, 5}) {
        SCOPED_TRACE("channels = " + std::to_string(channels));
        Builder b;
        ir::Value* x = b.input("x", {1, channels, 8, 8});
        ir::Value* c = b.node(OpKind::Conv, "conv",
                              {x, b.constant("w", randomTensor({16, channels, 3, 3}, 9))}, conv3x3());
        ir::Value* r = b.node(OpKind::Relu, "relu", {c});
        ir::Value* c2 = b.node(OpKind::Conv, "conv2",
                               {r, b.constant("w2", randomTensor({16, 16, 3, 3}, 10))}, conv3x3());
        auto g = b.finish({c2});
        PipelineResult res = pipeline(*g, onlyLayout());
        ASSERT_TRUE(res.graph);
        const bool small = channels <= kSmallChannels;
        EXPECT_EQ(conversions(*res.graph, "NCHW", "NC1HWC0"), small ? 0 : 1);
        EXPECT_EQ(res.graph->findNode("conv")->input(0)->name() == "x", small);
        EXPECT_TRUE(blocked(*res.graph, "conv"));
        EXPECT_TRUE(blocked(*res.graph, "relu"));
        EXPECT_EQ(stats(res, kSmallChannelInputRule).applied, small ? 1 : 0);
        expectSameOutputs(runF64(*g), runF64(*res.graph));

        PipelineConfig off = onlyLayout();
        off.disabled.insert(kSmallChannelInputRule);
        PipelineResult ro = pipeline(*g, off);
        ASSERT_TRUE(ro.graph);
        EXPECT_EQ(conversions(*ro.graph, "NCHW", "NC1HWC0"), 1);
    }
}

// A Resize of H and W (an FPN's upsampling) stays in NC1HWC0 between convolutions: each packed
// channel block maps to the same block of the output, so no conversion out and back in. A
// Resize that changes C stays plain, with the reason.
TEST(LayoutGlobal, SpatialResizeStaysBlockedAndAChannelResizeDoesNot) {
    for (bool channels : {false, true}) {
        SCOPED_TRACE(channels ? "scales C" : "scales H and W");
        Builder b;
        ir::Value* x = b.input("x", {1, 16, 6, 6});
        ir::Value* c1 = b.node(OpKind::Conv, "conv1",
                               {x, b.constant("w1", randomTensor({16, 16, 3, 3}, 11))}, conv3x3());
        ir::Tensor scales = channels ? ir::Tensor::fromVector<float>({4}, {1, 2, 1, 1}) : ir::Tensor::fromVector<float>({4}, {1, 1, 2, 2});
        ir::Value* up = b.node(OpKind::Resize, "up", {c1, nullptr, b.constant("scales", scales)},
                               {{"mode", std::string("nearest")}});
        ir::Value* c2 = b.node(OpKind::Conv, "conv2",
                               {up, b.constant("w2", randomTensor({16, channels ? 32 : 16, 3, 3}, 12))},
                               conv3x3());
        auto g = b.finish({c2});
        PipelineResult r = pipeline(*g, onlyLayout());
        ASSERT_TRUE(r.graph);
        const std::string text = ir::printGraph(*r.graph);
        EXPECT_EQ(blocked(*r.graph, "up"), !channels) << text;
        EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, channels ? 4 : 2) << text;
        bool rejected = false;
        for (const RuleRejection& j : r.rejections)
            rejected |= j.node == "up" && j.reason.find("only H and W can be resampled") != std::string::npos;
        EXPECT_EQ(rejected, channels);
        expectSameOutputs(runF64(*g), runF64(*r.graph));
    }
}

// AlexNet's, ZFNet's and inception v1's LRN between a convolution and a pooling: it stays in the
// blocked layout (its channel window reads the neighbouring C0 blocks' edges), so the region
// converts once in and once out, not around the LRN as well.
TEST(LayoutGlobal, ALocalResponseNormalisationStaysBlocked) {
    Builder b;
    ir::Value* x = b.input("x", {1, 16, 6, 6});
    ir::Value* c1 = b.node(OpKind::Conv, "conv1", {x, b.constant("w1", randomTensor({32, 16, 3, 3}, 21))}, conv3x3());
    ir::Value* n = b.node(OpKind::LRN, "lrn", {c1}, {{"size", int64_t{5}}, {"alpha", 1e-2}, {"beta", 0.75}, {"bias", 1.0}});
    ir::Value* p = b.node(OpKind::MaxPool, "pool", {n}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    ir::Value* c2 = b.node(OpKind::Conv, "conv2", {p, b.constant("w2", randomTensor({16, 32, 3, 3}, 22))}, conv3x3());
    auto g = b.finish({c2});
    PipelineResult r = pipeline(*g, onlyLayout());
    ASSERT_TRUE(r.graph);
    const std::string text = ir::printGraph(*r.graph);
    EXPECT_TRUE(blocked(*r.graph, "lrn")) << text;
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, 2) << text;
    expectSameOutputs(runF64(*g), runF64(*r.graph));
}
