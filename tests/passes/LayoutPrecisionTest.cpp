// layout and precision passes: which nodes go to NC1HWC0, where the sextant.TransData
// conversions land (entries, exits, shared readers, graph outputs, inverse pairs), the precision
// each node is marked with, their switches and bisection, and that neither changes the float64
// numbers (TransData is the identity on the logical tensor).
#include "PassTestUtil.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/ir/Printer.h"
#include "core/passes/GreyOps.h"
#include "core/passes/Layout.h"
#include "core/passes/Precision.h"

#include <filesystem>

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

ir::AttributeMap convAttrs() {
    return {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
            {"kernel_shape", std::vector<int64_t>{3, 3}}};
}

std::string layoutOf(const ir::Graph& g, const std::string& node) {
    const ir::Node* n = g.findNode(node);
    EXPECT_NE(n, nullptr) << node;
    return n ? n->attrString(kLayoutAttr, "") : "";
}

std::string precisionOf(const ir::Graph& g, const std::string& node) {
    const ir::Node* n = g.findNode(node);
    EXPECT_NE(n, nullptr) << node;
    return n ? std::string(ir::precisionName(n->precision())) : "";
}

/// Gives the group node producing `v` the body these step texts spell.
ir::Value* withBody(ir::Value* v, const std::vector<std::string>& steps) {
    Expected<ir::FusedBody> body = ir::parseBody(steps);
    EXPECT_TRUE(body.ok()) << (body.ok() ? "" : body.error().message);
    if (body.ok())
        v->producer()->setBody(std::make_shared<const ir::FusedBody>(std::move(*body)));
    return v;
}

/// The TransData nodes of `g` converting src -> dst, in graph order.
std::vector<const ir::Node*> transDatas(const ir::Graph& g, const std::string& src,
                                        const std::string& dst) {
    std::vector<const ir::Node*> out;
    for (const ir::Node* n : g.nodes())
        if (n->kind() == OpKind::TransData && n->attrString("src_format", "") == src &&
            n->attrString("dst_format", "") == dst)
            out.push_back(n);
    return out;
}

/// The node producing the value node `reader` reads at input `i`.
const ir::Node* producerOf(const ir::Graph& g, const std::string& reader, size_t i = 0) {
    const ir::Node* n = g.findNode(reader);
    EXPECT_NE(n, nullptr) << reader;
    return n && n->input(i) ? n->input(i)->producer() : nullptr;
}

/// Only the passes under test (fusion off so node names and kinds stay as built). The graphs
/// here start with 3-channel inputs to show the entry conversions, so read-small-channel-input
/// (LayoutGlobalTest) is off.
PipelineConfig onlyLayoutPrecision() {
    PipelineConfig c;
    c.disabled = {"canonicalize", "fold-constants", "cse", "fuse", "dce", kSmallChannelInputRule};
    return c;
}

bool rejectedWith(const PipelineResult& r, const std::string& rule, const std::string& node,
                  const std::string& fragment) {
    for (const RuleRejection& x : r.rejections)
        if (x.rule == rule && x.node == node && x.reason.find(fragment) != std::string::npos)
            return true;
    return false;
}

/// x -> conv1 -> relu -> add(conv2(x)) -> pool -> transpose(NHWC) -> sigmoid
std::unique_ptr<ir::Graph> convBlock() {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* w1 = b.constant("w1", randomTensor({16, 3, 3, 3}, 1));
    ir::Value* w2 = b.constant("w2", randomTensor({16, 3, 3, 3}, 2));
    ir::Value* c1 = b.node(OpKind::Conv, "conv1", {x, w1}, convAttrs());
    ir::Value* r = b.node(OpKind::Relu, "relu", {c1});
    ir::Value* c2 = b.node(OpKind::Conv, "conv2", {x, w2}, convAttrs());
    ir::Value* a = b.node(OpKind::Add, "add", {r, c2});
    ir::Value* bias = b.constant("bias", randomTensor({16, 1, 1}, 3));
    ir::Value* ab = b.node(OpKind::Add, "add_bias", {a, bias});
    ir::Value* p = b.node(
        OpKind::MaxPool, "pool", {ab},
        {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    ir::Value* t =
        b.node(OpKind::Transpose, "to_nhwc", {p}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {t});
    return b.finish({s});
}

} // namespace

// write-small-channel-output: a head convolution with one output channel (a score map) that
// only plain nodes read writes NCHW itself: no exit TransData, no 16-lane padding in its output.
// Switched off, the exit comes back. Numbers unchanged either way.
TEST(LayoutPass, ASmallChannelHeadWritesItsOutputPlain) {
    for (const bool graphOutput : {true, false}) {
        SCOPED_TRACE(graphOutput ? "conv output is the graph output" : "a plain Sigmoid reads it");
        Builder b;
        ir::Value* x = b.input("x", {1, 16, 8, 8});
        ir::Value* c1 = b.node(OpKind::Conv, "conv1", {x, b.constant("w1", randomTensor({16, 16, 3, 3}, 1))}, convAttrs());
        ir::Value* r = b.node(OpKind::Relu, "relu", {c1});
        ir::Value* head = b.node(OpKind::Conv, "head", {r, b.constant("w2", randomTensor({1, 16, 1, 1}, 2))});
        ir::Value* y = graphOutput ? head : b.node(OpKind::Softmax, "soft", {head}, {{"axis", int64_t{3}}});
        auto g = b.finish({y});
        auto before = runF64(*g);
        PipelineResult on = pipeline(*g, onlyLayoutPrecision());
        ASSERT_TRUE(on.graph);
        const std::string text = ir::printGraph(*on.graph);
        EXPECT_EQ(layoutOf(*on.graph, "head"), "NC1HWC0") << text;
        EXPECT_NE(on.graph->findNode("head")->output(0)->type().layout, ir::LayoutKind::NC1HWC0) << text;
        EXPECT_TRUE(transDatas(*on.graph, "NC1HWC0", "NCHW").empty()) << text;
        EXPECT_EQ(stats(on, kSmallChannelOutputRule).applied, 1);
        expectSameOutputs(before, runF64(*on.graph));

        PipelineConfig cfg = onlyLayoutPrecision();
        cfg.disabled.insert(kSmallChannelOutputRule);
        PipelineResult off = pipeline(*g, cfg);
        ASSERT_TRUE(off.graph);
        EXPECT_EQ(transDatas(*off.graph, "NC1HWC0", "NCHW").size(), 1u) << ir::printGraph(*off.graph);
        EXPECT_EQ(off.graph->findNode("head")->output(0)->type().layout, ir::LayoutKind::NC1HWC0);
        expectSameOutputs(before, runF64(*off.graph));
    }
}

TEST(LayoutPass, ConvRegionIsBlockedWithOneTransDataAtEachBoundary) {
    auto g = convBlock();
    auto before = runF64(*g);
    EXPECT_EQ(countGreyOps(*g).layoutConversions, 0);
    PipelineConfig cfg = onlyLayoutPrecision();
    cfg.disabled.insert(kAbsorbTransposeRule); // keep the Transpose: the plain NCHW exit
    PipelineResult r = pipeline(*g, cfg);
    ASSERT_TRUE(r.graph);
    const std::string text = ir::printGraph(*r.graph);
    for (const char* n : {"conv1", "relu", "conv2", "add", "add_bias", "pool"})
        EXPECT_EQ(layoutOf(*r.graph, n), "NC1HWC0") << n << "\n" << text;
    EXPECT_EQ(r.graph->findValue("pool_out")->type().layout, ir::LayoutKind::NC1HWC0);
    // Entry: x feeds both convolutions through one shared TransData NCHW -> NC1HWC0.
    auto entries = transDatas(*r.graph, "NCHW", "NC1HWC0");
    ASSERT_EQ(entries.size(), 1u) << text;
    EXPECT_EQ(entries[0]->input(0)->name(), "x");
    EXPECT_EQ(producerOf(*r.graph, "conv1"), entries[0]);
    EXPECT_EQ(producerOf(*r.graph, "conv2"), entries[0]);
    EXPECT_EQ(entries[0]->output(0)->type().layout, ir::LayoutKind::NC1HWC0);
    // Exit: the Transpose reads the pool through one TransData NC1HWC0 -> NCHW; the plain
    // Transpose itself carries no layout marker any more.
    auto exits = transDatas(*r.graph, "NC1HWC0", "NCHW");
    ASSERT_EQ(exits.size(), 1u) << text;
    EXPECT_EQ(exits[0]->input(0)->name(), "pool_out");
    EXPECT_EQ(producerOf(*r.graph, "to_nhwc"), exits[0]);
    EXPECT_EQ(exits[0]->output(0)->type().layout, ir::LayoutKind::NCHW);
    EXPECT_EQ(layoutOf(*r.graph, "to_nhwc"), "");
    EXPECT_EQ(layoutOf(*r.graph, "sig"), "");
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, 2);
    // One region, so one application; the conversions record the pass and rule that made them.
    EXPECT_EQ(stats(r, kAssignLayoutRule).applied, 1);
    for (const ir::Node* t : {entries[0], exits[0]}) {
        EXPECT_EQ(t->provenance().createdBy, "layout/assign-npu-layout");
        EXPECT_FALSE(t->provenance().origins.empty()) << t->name();
    }
    EXPECT_NE(text.find("@NC1HWC0"), std::string::npos);
    EXPECT_NE(text.find("sextant.TransData"), std::string::npos);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(LayoutPass, ARegionPlacedBeforeIsNotAppliedAgain) {
    // Compiling an already laid-out graph again: every region is marked already, so the rule
    // counts no application (a bisection limit is not spent on it) and adds no conversion.
    auto g = convBlock();
    PipelineConfig cfg = onlyLayoutPrecision();
    PipelineResult first = pipeline(*g, cfg);
    ASSERT_TRUE(first.graph);
    EXPECT_EQ(stats(first, kAssignLayoutRule).applied, 1);
    PipelineResult second = pipeline(*first.graph, cfg);
    ASSERT_TRUE(second.graph);
    EXPECT_EQ(stats(second, kAssignLayoutRule).applied, 0);
    EXPECT_EQ(countGreyOps(*second.graph).layoutConversions, 2);
    for (const char* n : {"conv1", "relu", "conv2", "add", "add_bias", "pool"})
        EXPECT_EQ(layoutOf(*second.graph, n), "NC1HWC0") << n;
}

TEST(LayoutPass, BlockedGraphOutputConvertsBackAndKeepsItsName) {
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 6, 6});
    // 16 channels: no padding, so the Relu stays with the convolution (with 8 it would compute
    // on 16 lanes for 8 channels and the conversion would come before it, as many conversions).
    ir::Value* c = b.node(OpKind::Conv, "conv",
                          {x, b.constant("w", randomTensor({16, 4, 3, 3}, 4))}, convAttrs());
    ir::Value* r = b.node(OpKind::Relu, "relu", {c});
    auto g = b.finish({r});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(layoutOf(*res.graph, "relu"), "NC1HWC0");
    // The user receives plain NCHW data under the model's own output name.
    const ir::Value* out = res.graph->outputs()[0];
    EXPECT_EQ(out->name(), "relu_out");
    ASSERT_NE(out->producer(), nullptr);
    EXPECT_EQ(out->producer()->kind(), OpKind::TransData);
    EXPECT_EQ(out->producer()->attrString("src_format", ""), "NC1HWC0");
    EXPECT_EQ(out->type().layout, ir::LayoutKind::NCHW);
    EXPECT_EQ(res.graph->findNode("relu")->output(0)->type().layout, ir::LayoutKind::NC1HWC0);
    EXPECT_EQ(res.graph->inputs()[0]->type().layout, ir::LayoutKind::Any);
    EXPECT_EQ(countGreyOps(*res.graph).layoutConversions, 2);
    expectSameOutputs(before, runF64(*res.graph));
}

TEST(LayoutPass, RejectsPlainOperandAndKeepsUnalignedChannelConcatBlocked) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* y = b.input("y", {1, 24, 8, 8});
    ir::Value* c = b.node(OpKind::Conv, "conv",
                          {x, b.constant("w", randomTensor({24, 3, 3, 3}, 5))}, convAttrs());
    // y never went through a convolution: adding it needs a conversion, so add stays plain.
    ir::Value* a = b.node(OpKind::Add, "add_plain", {c, y});
    ir::Value* c2 = b.node(OpKind::Conv, "conv2",
                           {x, b.constant("w2", randomTensor({24, 3, 3, 3}, 6))}, convAttrs());
    // 24 channels is not a multiple of C0 = 16: the concat shifts lanes as it copies.
    ir::Value* cat = b.node(OpKind::Concat, "cat", {c, c2}, {{"axis", int64_t{1}}});
    ir::Value* r = b.node(OpKind::Relu, "relu", {cat});
    ir::Value* c3 = b.node(OpKind::Conv, "conv3",
                           {r, b.constant("w3", randomTensor({16, 48, 3, 3}, 7))}, convAttrs());
    ir::Value* sa = b.node(OpKind::Sigmoid, "sig_plain", {a});
    auto g = b.finish({sa, c3});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    const std::string text = ir::printGraph(*res.graph);
    EXPECT_EQ(layoutOf(*res.graph, "conv"), "NC1HWC0");
    EXPECT_EQ(layoutOf(*res.graph, "add_plain"), "");
    EXPECT_TRUE(rejectedWith(res, kAssignLayoutRule, "add_plain", "'y' is a plain"));
    EXPECT_EQ(layoutOf(*res.graph, "cat"), "NC1HWC0");
    EXPECT_EQ(layoutOf(*res.graph, "relu"), "NC1HWC0");
    // conv's output is read by the blocked concat directly and by the plain add through an exit.
    EXPECT_EQ(producerOf(*res.graph, "cat", 0)->name(), "conv");
    const ir::Node* exit = producerOf(*res.graph, "add_plain", 0);
    ASSERT_NE(exit, nullptr);
    EXPECT_EQ(exit->kind(), OpKind::TransData) << text;
    EXPECT_EQ(exit->input(0)->name(), "conv_out");
    EXPECT_EQ(res.graph->findValue("y")->users().size(), 1u) << "y enters add_plain unconverted";
    // One region (conv, conv2, cat, relu, conv3), one shared entry for x, exits for add and the
    // output. (Converting y in instead would cost one more: add's output would convert back.)
    EXPECT_EQ(stats(res, kAssignLayoutRule).applied, 1);
    EXPECT_EQ(stats(res, kAssignLayoutRule).rejected, 1);
    EXPECT_EQ(transDatas(*res.graph, "NCHW", "NC1HWC0").size(), 1u) << text;
    EXPECT_EQ(transDatas(*res.graph, "NC1HWC0", "NCHW").size(), 2u) << text;
    EXPECT_EQ(countGreyOps(*res.graph).layoutConversions, 3);
    expectSameOutputs(before, runF64(*res.graph));
}

// A blocked value read by a blocked op and by two plain ops: one exit shared by both plain readers.
TEST(LayoutPass, PlainReadersOfABlockedValueShareOneExit) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* c = b.node(OpKind::Conv, "conv",
                          {x, b.constant("w", randomTensor({16, 3, 3, 3}, 12))}, convAttrs());
    ir::Value* r = b.node(OpKind::Relu, "relu", {c});
    ir::Value* f = b.node(OpKind::Flatten, "flat", {c});
    ir::Value* t =
        b.node(OpKind::Transpose, "t", {c}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    ir::Value* p = b.node(OpKind::GlobalAveragePool, "gap", {r});
    ir::Value* pf = b.node(OpKind::Flatten, "gap_flat", {p});
    auto g = b.finish({f, t, pf});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    const std::string text = ir::printGraph(*res.graph);
    const ir::Node* exitFlat = producerOf(*res.graph, "flat");
    ASSERT_NE(exitFlat, nullptr);
    EXPECT_EQ(exitFlat->kind(), OpKind::TransData) << text;
    EXPECT_EQ(producerOf(*res.graph, "t"), exitFlat) << "one exit shared by the plain readers";
    // Relu and GlobalAveragePool read that plain copy too: kept blocked they would need a
    // second exit after the pool (a locally judged layout converted three times, not two).
    EXPECT_EQ(producerOf(*res.graph, "relu"), exitFlat);
    EXPECT_EQ(layoutOf(*res.graph, "relu"), "");
    EXPECT_EQ(layoutOf(*res.graph, "gap"), "");
    EXPECT_EQ(countGreyOps(*res.graph).layoutConversions, 2) << text; // x in, conv out
    expectSameOutputs(before, runF64(*res.graph));
}

// x -> conv1 -> relu -> Transpose -> Transpose back -> conv2 -> relu2: two regions, each one
// application, so bisection can keep the first and drop the second.
TEST(LayoutPass, SwitchedOffAndBisectedPerRegion) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* c1 = b.node(OpKind::Conv, "conv1",
                           {x, b.constant("w1", randomTensor({16, 3, 3, 3}, 13))}, convAttrs());
    ir::Value* r1 = b.node(OpKind::Relu, "relu1", {c1});
    ir::Value* t1 =
        b.node(OpKind::Transpose, "t1", {r1}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {t1});
    ir::Value* t2 =
        b.node(OpKind::Transpose, "t2", {s}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
    ir::Value* c2 = b.node(OpKind::Conv, "conv2",
                           {t2, b.constant("w2", randomTensor({8, 16, 3, 3}, 14))}, convAttrs());
    ir::Value* r2 = b.node(OpKind::Relu, "relu2", {c2});
    auto g = b.finish({r2});
    auto before = runF64(*g);

    PipelineConfig off = onlyLayoutPrecision();
    off.disabled.insert(kAssignLayoutRule);
    PipelineResult r = pipeline(*g, off);
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(layoutOf(*r.graph, "conv1"), "");
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, 0);

    // Precision off too, so the application sequence is only layout's.
    PipelineConfig all = onlyLayoutPrecision();
    all.disabled.insert("precision");
    all.disabled.insert(kAbsorbTransposeRule);
    PipelineResult ra = pipeline(*g, all);
    ASSERT_TRUE(ra.graph);
    ASSERT_EQ(ra.applications.size(), 2u);
    EXPECT_EQ(ra.applications[0].node, "conv1");
    EXPECT_EQ(ra.applications[1].node, "conv2");
    EXPECT_EQ(countGreyOps(*ra.graph).layoutConversions, 4); // in and out of each region
    expectSameOutputs(before, runF64(*ra.graph));

    PipelineConfig bisect = all;
    bisect.bisectLimit = 1;
    PipelineResult rb = pipeline(*g, bisect);
    ASSERT_TRUE(rb.graph);
    EXPECT_EQ(layoutOf(*rb.graph, "conv1"), "NC1HWC0");
    EXPECT_EQ(layoutOf(*rb.graph, "relu1"), "NC1HWC0");
    // The second region was not allowed: it stays plain as a whole, with no conversions.
    EXPECT_EQ(layoutOf(*rb.graph, "conv2"), "");
    EXPECT_EQ(layoutOf(*rb.graph, "relu2"), "");
    EXPECT_EQ(producerOf(*rb.graph, "conv2")->name(), "t2");
    EXPECT_EQ(countGreyOps(*rb.graph).layoutConversions, 2);
    EXPECT_EQ(rb.applications.size(), 1u);
    expectSameOutputs(before, runF64(*rb.graph));
}

// A target without the blocked layout: no regions, no conversions, no markers.
TEST(LayoutPass, PlainTargetLayoutMakesNoRegions) {
    auto g = convBlock();
    PipelineConfig cfg = onlyLayoutPrecision();
    cfg.npuLayout = ir::NpuLayout::NCHW;
    PipelineResult r = pipeline(*g, cfg);
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, 0);
    for (const ir::Node* n : r.graph->nodes())
        EXPECT_FALSE(n->hasAttr(kLayoutAttr)) << n->name();
    EXPECT_EQ(stats(r, kAssignLayoutRule).applied, 0);
}

// Inverse TransData pairs (here written by hand, as a parsed graph could hold them) cancel,
// also when the second one is a graph output; a lone conversion stays.
TEST(LayoutPass, InverseTransDataPairsCancel) {
    Builder b;
    ir::Value* x = b.input("x", {1, 20, 4, 4});
    auto td = [&](const std::string& name, ir::Value* v, const char* src, const char* dst) {
        return b.node(OpKind::TransData, name, {v},
                      {{"src_format", std::string(src)}, {"dst_format", std::string(dst)}});
    };
    ir::Value* in1 = td("in1", x, "NCHW", "NC1HWC0");
    ir::Value* out1 = td("out1", in1, "NC1HWC0", "NCHW");
    ir::Value* r = b.node(OpKind::Relu, "relu", {out1});
    ir::Value* in2 = td("in2", r, "NCHW", "NC1HWC0");
    ir::Value* out2 = td("out2", in2, "NC1HWC0", "NCHW");
    ir::Value* lone = td("lone", r, "NCHW", "NC1HWC0");
    ir::Value* s = b.node(OpKind::Transpose, "tr", {lone},
                          {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    auto g = b.finish({out2, s});
    EXPECT_EQ(g->findValue("in1_out")->type().layout, ir::LayoutKind::NC1HWC0);
    EXPECT_EQ(g->findValue("out1_out")->type().layout, ir::LayoutKind::NCHW);
    auto before = runF64(*g);
    EXPECT_EQ(countGreyOps(*g).layoutConversions, 5);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    const std::string text = ir::printGraph(*res.graph);
    EXPECT_EQ(countGreyOps(*res.graph).layoutConversions, 1) << text;
    EXPECT_NE(res.graph->findNode("lone"), nullptr);
    EXPECT_EQ(producerOf(*res.graph, "relu"), nullptr) << "relu reads x again\n" << text;
    EXPECT_EQ(res.graph->outputs()[0]->name(), "out2_out") << "the output keeps its name";
    EXPECT_EQ(res.graph->outputs()[0]->producer()->name(), "relu");
    int removed = 0;
    for (const NodeRemoval& rm : res.removals)
        removed += rm.rule == kAssignLayoutRule;
    EXPECT_EQ(removed, 4);
    expectSameOutputs(before, runF64(*res.graph));
}

TEST(TransDataOp, IdentityOnTheLogicalTensorAndTagsTheDestination) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3, 4, 5});
    ir::Value* t = b.node(OpKind::TransData, "t", {x},
                          {{"src_format", std::string("NCHW")}, {"dst_format", std::string("NC1HWC0")}});
    auto g = b.finish({t});
    EXPECT_EQ(g->findValue("t_out")->type().dims(), (std::vector<int64_t>{2, 3, 4, 5}));
    EXPECT_EQ(g->findValue("t_out")->type().layout, ir::LayoutKind::NC1HWC0);
    ir::Tensor in = randomTensor({2, 3, 4, 5}, 21);
    ir::KernelContext ctx;
    auto out = ir::interpret(*g, std::vector<ir::Tensor>{in}, ctx);
    ASSERT_TRUE(out.ok()) << out.error().message;
    expectSameOutputs({in}, *out, 0.0);

    // Bad attributes are verifier errors naming the node, not crashes.
    for (auto [src, dst] : {std::pair<std::string, std::string>{"NCHW", "NCHW"},
                            {"NCHW", "NHWC4"}}) {
        Builder bb;
        ir::Value* y = bb.input("y", {1, 2, 3, 4});
        bb.node(OpKind::TransData, "bad", {y}, {{"src_format", src}, {"dst_format", dst}});
        ir::Node* n = bb.g->findNode("bad");
        Status st = n->info().verify(*n);
        ASSERT_FALSE(st.ok()) << src << "->" << dst;
        EXPECT_EQ(st.error().subject, "bad") << st.error().message;
    }
}

TEST(PrecisionPass, CubeF16AccF32VectorF16CriticalOpsF32) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* c = b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({4, 3, 3, 3}, 7))},
                          convAttrs());
    ir::Value* r = b.node(OpKind::Relu, "relu", {c});
    ir::Value* f = b.node(OpKind::Flatten, "flat", {r});
    ir::Value* s = b.node(OpKind::Softmax, "softmax", {f}, {{"axis", int64_t{1}}});
    ir::Value* e = b.node(OpKind::Exp, "exp", {s});
    ir::Value* m = b.node(OpKind::ReduceMean, "mean", {e}, {{"axes", std::vector<int64_t>{1}}});
    auto g = b.finish({m});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(precisionOf(*res.graph, "conv"), "f16-acc-f32");
    EXPECT_EQ(precisionOf(*res.graph, "relu"), "f16");
    EXPECT_EQ(precisionOf(*res.graph, "flat"), "") << "data movement has no precision";
    EXPECT_EQ(precisionOf(*res.graph, "softmax"), "f32");
    EXPECT_EQ(precisionOf(*res.graph, "exp"), "f32");
    EXPECT_EQ(precisionOf(*res.graph, "mean"), "f32");
    EXPECT_EQ(stats(res, kAssignPrecisionRule).applied, 2);
    EXPECT_EQ(stats(res, kKeepF32Rule).applied, 3);
    expectSameOutputs(before, runF64(*res.graph));

    // Switching the accuracy guard off lets softmax run in f16 (what bisection would find).
    PipelineConfig noGuard = onlyLayoutPrecision();
    noGuard.disabled.insert(kKeepF32Rule);
    PipelineResult r2 = pipeline(*g, noGuard);
    ASSERT_TRUE(r2.graph);
    EXPECT_EQ(precisionOf(*r2.graph, "softmax"), "f16");
    EXPECT_EQ(precisionOf(*r2.graph, "conv"), "f16-acc-f32");
}

// A QDQ model's convolution reads dequantized int8 values and its Relu feeds the next
// QuantizeLinear: f16 would move those values off their steps and the requantised result by whole
// steps, so both stay f32 (rule keep-f32-quantized), looking through the layout conversions the
// blocked region puts between them. Switched off, the convolution is f16 again.
TEST(PrecisionPass, OpsAtTheEdgeOfAQuantizedRegionStayF32) {
    Builder b;
    ir::Value* x = b.input("x", {1, 16, 8, 8});
    ir::Value* s = b.constant("s", ir::Tensor::scalar(0.05, ir::DType::F64));
    ir::Value* z = b.constant("z", ir::Tensor::scalar(128, ir::DType::U8));
    ir::Value* q = b.node(OpKind::QuantizeLinear, "q", {x, s, z});
    ir::Value* dq = b.node(OpKind::DequantizeLinear, "dq", {q, s, z});
    ir::Value* c = b.node(OpKind::Conv, "conv", {dq, b.constant("w", randomTensor({16, 16, 3, 3}, 7))}, convAttrs());
    ir::Value* r = b.node(OpKind::Relu, "relu", {c});
    ir::Value* q2 = b.node(OpKind::QuantizeLinear, "q2", {r, s, z});
    ir::Value* dq2 = b.node(OpKind::DequantizeLinear, "dq2", {q2, s, z});
    ir::Value* sig = b.node(OpKind::Sigmoid, "sig", {b.node(OpKind::Neg, "neg", {dq2})});
    auto g = b.finish({sig});
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(layoutOf(*res.graph, "conv"), "NC1HWC0") << "the conversions the walk looks through";
    EXPECT_EQ(precisionOf(*res.graph, "conv"), "f32");
    EXPECT_EQ(precisionOf(*res.graph, "relu"), "f32");
    EXPECT_EQ(precisionOf(*res.graph, "neg"), "f32") << "it reads dq2";
    EXPECT_EQ(precisionOf(*res.graph, "sig"), "f16") << "two ops from the quantized values";
    EXPECT_EQ(precisionOf(*res.graph, "q"), "") << "it writes integers: no precision to choose";
    EXPECT_EQ(precisionOf(*res.graph, "dq"), "f32");
    EXPECT_EQ(precisionOf(*res.graph, "dq2"), "f32");
    EXPECT_EQ(stats(res, kKeepF32QuantizedRule).applied, 5);

    PipelineConfig off = onlyLayoutPrecision();
    off.disabled.insert(kKeepF32QuantizedRule);
    PipelineResult r2 = pipeline(*g, off);
    ASSERT_TRUE(r2.graph);
    EXPECT_EQ(precisionOf(*r2.graph, "conv"), "f16-acc-f32");
    EXPECT_EQ(precisionOf(*r2.graph, "relu"), "f16");
}

TEST(PrecisionPass, BatchNormalizationStaysF32) {
    // Its operands are the model's raw running statistics (a variance of 1e5 is no rarity), and
    // it computes 1/sqrt(var + eps): f16 would overflow or lose the statistics.
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* bn = b.node(OpKind::BatchNormalization, "bn",
                           {x, b.constant("scale", randomTensor({2}, 1)), b.constant("bias", randomTensor({2}, 2)),
                            b.constant("mean", randomTensor({2}, 3)), b.constant("var", randomTensor({2}, 4, 0.5, 2.0))});
    ir::Value* r = b.node(OpKind::Relu, "relu", {bn});
    auto g = b.finish({r});
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(precisionOf(*res.graph, "bn"), "f32");
    EXPECT_EQ(precisionOf(*res.graph, "relu"), "f16");
}

TEST(PrecisionPass, OnlyAtO2AndAbove) {
    auto g = convBlock();
    PipelineConfig o1;
    o1.optLevel = 1;
    PipelineResult r = pipeline(*g, o1);
    ASSERT_TRUE(r.graph);
    for (const ir::Node* n : r.graph->nodes()) {
        EXPECT_EQ(n->precision(), ir::Precision::Unset) << n->name();
        EXPECT_FALSE(n->hasAttr(kLayoutAttr)) << n->name();
    }
}

// BlazeFace is an NHWC model: Transposes to NCHW at the input, convolutions, Transposes back to
// NHWC before the heads' Reshapes. At O2 every convolution is blocked, no inverse Transpose pair
// survives, the only layout conversions are at the Transposes that leave the conv region, and
// the optimised graph still matches onnxruntime on the float64 reference.
TEST(LayoutPass, BlazeFaceConvolutionsBlockedConversionsOnlyAtRegionExits) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(SEXTANT_SHARED_DIR) / "models" / "blazeface";
    if (!fs::exists(dir))
        GTEST_SKIP() << "../shared not found: skipping the BlazeFace layout test";
    const std::string model = (dir / "face_detection_front_128x128_barracuda.onnx").string();
    const std::string data =
        (dir / "test_data" / "face_detection_front_128x128_barracuda" / "test_data_set_0").string();
    auto g = frontend::importOnnx(model);
    ASSERT_TRUE(g.ok()) << g.error().message;
    auto inputs = frontend::loadTestDataSet(data, "input");
    auto expected = frontend::loadTestDataSet(data, "output");
    ASSERT_TRUE(inputs.ok() && expected.ok()) << data;
    PipelineResult r = pipeline(**g);
    ASSERT_TRUE(r.graph);
    int convs = 0;
    for (const ir::Node* n : r.graph->nodes()) {
        if (n->kind() == OpKind::Conv || n->kind() == OpKind::FusedConv) {
            ++convs;
            EXPECT_EQ(n->attrString(kLayoutAttr, ""), "NC1HWC0") << n->name();
            EXPECT_EQ(n->precision(), ir::Precision::F16AccF32) << n->name();
        }
    }
    // The NHWC input enters the blocked region in one TransData that absorbed the input
    // Transpose, and the region is left only where the heads went back to NHWC, each exit
    // absorbing that Transpose: no Transpose survives.
    auto entries = transDatas(*r.graph, "NHWC", "NC1HWC0");
    auto exits = transDatas(*r.graph, "NC1HWC0", "NHWC");
    EXPECT_EQ(entries.size(), 1u);
    for (const ir::Node* t : entries)
        EXPECT_TRUE(t->input(0)->isGraphInput()) << t->name();
    EXPECT_GT(convs, 30);
    EXPECT_GT(exits.size(), 0u);
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions,
              static_cast<int>(entries.size() + exits.size()));
    EXPECT_EQ(countGreyOps(*r.graph).transposes, 0);
    EXPECT_EQ(countGreyOps(**g).transposes, 5);
    EXPECT_TRUE(inverseTransposePairs(*r.graph).empty());
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F64;
    auto got = ir::interpret(*r.graph, *inputs, ctx);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->size(), expected->size());
    for (size_t i = 0; i < got->size(); ++i) {
        double maxExp = 0;
        for (int64_t j = 0; j < (*expected)[i].numel(); ++j)
            maxExp = std::max(maxExp, std::abs((*expected)[i].at(j)));
        for (int64_t j = 0; j < (*expected)[i].numel(); ++j)
            ASSERT_NEAR((*got)[i].at(j), (*expected)[i].at(j),
                        1e-4 * std::max(1.0, maxExp) + 1e-3 * std::abs((*expected)[i].at(j)))
                << "output " << i << " element " << j;
    }
}

// A scale * x + bias group reads a constant first (PaddleOCR's learnable HardSwish affine):
// it is still blocked when its activation operand is, so no conversion appears around it.
TEST(LayoutPass, ConstantFirstOperandStaysInTheBlockedRegion) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* c = b.node(OpKind::Conv, "conv",
                          {x, b.constant("w", randomTensor({16, 3, 3, 3}, 8))}, convAttrs());
    ir::Value* scale = b.constant("scale", randomTensor({1}, 9));
    ir::Value* shift = b.constant("shift", randomTensor({1}, 10));
    ir::Value* grp =
        withBody(b.node(OpKind::ElementwiseGroup, "affine", {scale, c, shift}), {"Mul(i0,i1)", "Add(t0,i2)"});
    ir::Value* m = b.node(OpKind::Mul, "mul_first_const",
                          {b.constant("k", randomTensor({16, 1, 1}, 11)), grp});
    ir::Value* r = b.node(OpKind::Relu, "relu", {m});
    ir::Value* t =
        b.node(OpKind::Transpose, "t", {r}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    auto g = b.finish({b.node(OpKind::Sigmoid, "sig", {t})});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    for (const char* n : {"conv", "affine", "mul_first_const", "relu"})
        EXPECT_EQ(layoutOf(*res.graph, n), "NC1HWC0") << n << "\n" << ir::printGraph(*res.graph);
    EXPECT_EQ(countGreyOps(*res.graph).layoutConversions, 2) << "into conv, out at the Transpose";
    EXPECT_EQ(precisionOf(*res.graph, "affine"), "f16");
    expectSameOutputs(before, runF64(*res.graph));
}

TEST(PrecisionPass, FusedGroupWithAnExponentialStaysF32) {
    Builder b;
    ir::Value* x = b.input("x", {2, 5});
    ir::Value* grp = withBody(b.node(OpKind::ElementwiseGroup, "grp", {x}), {"Neg(i0)", "Exp(t0)"});
    ir::Value* plain = withBody(b.node(OpKind::ElementwiseGroup, "plain", {grp}), {"Relu(i0)"});
    auto g = b.finish({plain});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(precisionOf(*res.graph, "grp"), "f32");
    EXPECT_EQ(precisionOf(*res.graph, "plain"), "f16");
    expectSameOutputs(before, runF64(*res.graph));
}

// reshape-as-view: a Reshape/Flatten/Squeeze/Unsqueeze of a plain tensor is marked view=1 (the
// backend gives it no Task); one of a blocked tensor, or one producing a graph output, is not.
TEST(ReshapeAsView, MarksReshapesOfPlainTensorsOnly) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* c = b.node(OpKind::Conv, "conv",
                          {x, b.constant("w", randomTensor({16, 3, 3, 3}, 31))}, convAttrs());
    ir::Value* flat = b.node(OpKind::Flatten, "flat", {c});
    ir::Value* unsq = b.node(OpKind::Unsqueeze, "unsq", {flat},
                             {{"axes", std::vector<int64_t>{0}}});
    ir::Value* sq = b.node(OpKind::Squeeze, "sq", {unsq}, {{"axes", std::vector<int64_t>{0}}});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {sq});
    ir::Value* out = b.node(OpKind::Flatten, "out_flat", {s}, {{"axis", int64_t{0}}});
    auto g = b.finish({out});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(r.graph);
    // flat reads conv's output through the exit TransData: a plain tensor, so a view.
    EXPECT_EQ(producerOf(*r.graph, "flat")->kind(), OpKind::TransData);
    for (const char* n : {"flat", "unsq", "sq"})
        EXPECT_TRUE(r.graph->findNode(n)->isView()) << n;
    EXPECT_FALSE(r.graph->findNode("out_flat")->isView());
    EXPECT_TRUE(rejectedWith(r, kReshapeViewRule, "out_flat", "graph output"));
    EXPECT_EQ(stats(r, kReshapeViewRule).applied, 3);
    expectSameOutputs(before, runF64(*r.graph));

    // Switched off: no marks.
    PipelineConfig off = onlyLayoutPrecision();
    off.disabled.insert(kReshapeViewRule);
    PipelineResult ro = pipeline(*g, off);
    ASSERT_TRUE(ro.graph);
    EXPECT_FALSE(ro.graph->findNode("flat")->isView());
}

// concat-in-place: a Concat whose inputs are contiguous parts of its output is marked view=1
// (the backend writes them in place); one whose padded channel blocks would overlap, one that
// is a graph output or one joining a graph input is not, each with the reason.
TEST(ConcatInPlace, MarksConcatsOfWholeChannelBlocksOnly) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 8, 8});
    ir::Value* c16 = b.node(OpKind::Conv, "c16", {x, b.constant("w16", randomTensor({16, 3, 3, 3}, 41))}, convAttrs());
    ir::Value* d16 = b.node(OpKind::Conv, "d16", {x, b.constant("v16", randomTensor({16, 3, 3, 3}, 42))}, convAttrs());
    ir::Value* c8 = b.node(OpKind::Conv, "c8", {x, b.constant("w8", randomTensor({8, 3, 3, 3}, 43))}, convAttrs());
    ir::Value* whole = b.node(OpKind::Concat, "whole", {c16, d16}, {{"axis", int64_t{1}}});
    ir::Value* ragged = b.node(OpKind::Concat, "ragged", {c8, c16}, {{"axis", int64_t{1}}});
    ir::Value* head = b.node(OpKind::Conv, "head", {whole, b.constant("wh", randomTensor({4, 32, 3, 3}, 44))}, convAttrs());
    ir::Value* tail = b.node(OpKind::Conv, "tail", {ragged, b.constant("wt", randomTensor({4, 24, 3, 3}, 45))}, convAttrs());
    ir::Value* out = b.node(OpKind::Concat, "out", {head, tail}, {{"axis", int64_t{1}}});
    auto g = b.finish({out});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(r.graph);
    EXPECT_TRUE(r.graph->findNode("whole")->isView()) << ir::printGraph(*r.graph);
    EXPECT_FALSE(r.graph->findNode("ragged")->isView());
    EXPECT_FALSE(r.graph->findNode("out")->isView());
    EXPECT_TRUE(rejectedWith(r, kConcatInPlaceRule, "ragged", "8 channels, not whole blocks of 16"));
    // The graph output leaves through a TransData back to NCHW; the Concat before it joins two
    // 4-channel maps.
    EXPECT_TRUE(rejectedWith(r, kConcatInPlaceRule, "out", "4 channels, not whole blocks of 16"));
    EXPECT_EQ(stats(r, kConcatInPlaceRule).applied, 1);
    expectSameOutputs(before, runF64(*r.graph));
    // The verifier (run after every pass) takes the mark on a Concat, and it prints.
    EXPECT_NE(ir::printGraph(*r.graph).find("view = 1"), std::string::npos);

    PipelineConfig off = onlyLayoutPrecision();
    off.disabled.insert(kConcatInPlaceRule);
    PipelineResult ro = pipeline(*g, off);
    ASSERT_TRUE(ro.graph);
    EXPECT_FALSE(ro.graph->findNode("whole")->isView());
}

// The target's precision policy reaches the marks: an f32 cube and f32 vector lanes.
TEST(PrecisionPass, FollowsTheTargetPolicy) {
    auto g = convBlock();
    PipelineConfig cfg = onlyLayoutPrecision();
    cfg.cubeInputs = ir::Precision::F32;
    PipelineResult r = pipeline(*g, cfg);
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(precisionOf(*r.graph, "conv1"), "f32");
    EXPECT_EQ(precisionOf(*r.graph, "relu"), "f16");
    cfg.vectorPrecision = ir::Precision::F32;
    PipelineResult r2 = pipeline(*g, cfg);
    ASSERT_TRUE(r2.graph);
    EXPECT_EQ(precisionOf(*r2.graph, "relu"), "f32");
    EXPECT_EQ(precisionOf(*r2.graph, "sig"), "f32");
}

// absorb-transpose-into-transdata: NHWC input -> Transpose -> conv ... -> Transpose back to NHWC
// becomes TransData NHWC -> NC1HWC0 ... TransData NC1HWC0 -> NHWC, same numbers; switched off,
// the Transposes stay next to NCHW conversions.
TEST(LayoutPass, TransposesAtTheBoundaryAreAbsorbed) {
    Builder b;
    ir::Value* x = b.input("x", {1, 8, 8, 3});
    ir::Value* t0 =
        b.node(OpKind::Transpose, "to_nchw", {x}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
    ir::Value* c = b.node(OpKind::Conv, "conv",
                          {t0, b.constant("w", randomTensor({20, 3, 3, 3}, 41))}, convAttrs());
    ir::Value* r = b.node(OpKind::Relu, "relu", {c});
    ir::Value* t1 =
        b.node(OpKind::Transpose, "to_nhwc", {r}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {t1});
    auto g = b.finish({s, t1});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    const std::string text = ir::printGraph(*res.graph);
    EXPECT_EQ(countGreyOps(*res.graph).transposes, 0) << text;
    auto in = transDatas(*res.graph, "NHWC", "NC1HWC0");
    auto out = transDatas(*res.graph, "NC1HWC0", "NHWC");
    ASSERT_EQ(in.size(), 1u) << text;
    ASSERT_EQ(out.size(), 1u) << text;
    EXPECT_EQ(in[0]->input(0)->name(), "x");
    EXPECT_EQ(in[0]->output(0)->type().dims(), (std::vector<int64_t>{1, 3, 8, 8}));
    EXPECT_EQ(out[0]->output(0)->type().dims(), (std::vector<int64_t>{1, 8, 8, 20}));
    EXPECT_EQ(out[0]->output(0)->type().layout, ir::LayoutKind::NHWC);
    // The graph output the Transpose produced keeps its name; the conversions cover its origins.
    EXPECT_EQ(res.graph->outputs()[1]->name(), "to_nhwc_out");
    EXPECT_EQ(in[0]->provenance().origins, (std::vector<std::string>{"conv", "to_nchw"}));
    EXPECT_EQ(out[0]->provenance().origins, (std::vector<std::string>{"relu", "to_nhwc"}));
    EXPECT_EQ(stats(res, kAbsorbTransposeRule).applied, 2);
    expectSameOutputs(before, runF64(*res.graph));

    PipelineConfig off = onlyLayoutPrecision();
    off.disabled.insert(kAbsorbTransposeRule);
    PipelineResult ro = pipeline(*g, off);
    ASSERT_TRUE(ro.graph);
    EXPECT_EQ(countGreyOps(*ro.graph).transposes, 2);
    EXPECT_EQ(transDatas(*ro.graph, "NCHW", "NC1HWC0").size(), 1u);
    EXPECT_EQ(transDatas(*ro.graph, "NC1HWC0", "NCHW").size(), 1u);
    expectSameOutputs(before, runF64(*ro.graph));
}

TEST(TransDataOp, NhwcSidePermutesTheLogicalDims) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3, 4, 5}); // N, H, W, C
    ir::Value* in = b.node(OpKind::TransData, "in", {x},
                           {{"src_format", std::string("NHWC")}, {"dst_format", std::string("NC1HWC0")}});
    ir::Value* back = b.node(OpKind::TransData, "back", {in},
                             {{"src_format", std::string("NC1HWC0")}, {"dst_format", std::string("NHWC")}});
    auto g = b.finish({in, back});
    EXPECT_EQ(g->findValue("in_out")->type().dims(), (std::vector<int64_t>{2, 5, 3, 4}));
    EXPECT_EQ(g->findValue("back_out")->type().dims(), (std::vector<int64_t>{2, 3, 4, 5}));
    ir::Tensor t = randomTensor({2, 3, 4, 5}, 43);
    ir::KernelContext ctx;
    auto out = ir::interpret(*g, std::vector<ir::Tensor>{t}, ctx);
    ASSERT_TRUE(out.ok()) << out.error().message;
    // in[n][c][h][w] = x[n][h][w][c]
    EXPECT_EQ((*out)[0].at(((1 * 5 + 4) * 3 + 2) * 4 + 3), t.at(((1 * 3 + 2) * 4 + 3) * 5 + 4));
    expectSameOutputs({t}, {(*out)[1]}, 0.0);
    Builder bb;
    ir::Value* y = bb.input("y", {1, 2, 3, 4});
    bb.node(OpKind::TransData, "bad", {y},
            {{"src_format", std::string("NHWC")}, {"dst_format", std::string("NCHW")}});
    ir::Node* n = bb.g->findNode("bad");
    Status st = n->info().verify(*n);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("that is a Transpose"), std::string::npos) << st.error().message;
}
