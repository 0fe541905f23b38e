// layout and precision passes: which nodes go to NC1HWC0 and where the conversions land, the
// precision each node is marked with, their switches and bisection, and that neither changes
// the float64 numbers (both annotate; kernels keep computing on logical NCHW tensors).
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
    return n ? n->attrString(kPrecisionAttr, "") : "";
}

/// Only the passes under test (fusion off so node names and kinds stay as built).
PipelineConfig onlyLayoutPrecision() {
    PipelineConfig c;
    c.disabled = {"canonicalize", "fold-constants", "cse", "fuse", "dce"};
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

TEST(LayoutPass, ConvRegionIsBlockedAndConvertsOnceWhereItEnds) {
    auto g = convBlock();
    auto before = runF64(*g);
    EXPECT_EQ(countGreyOps(*g).layoutConversions, 0);
    PipelineResult r = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(r.graph);
    for (const char* n : {"conv1", "relu", "conv2", "add", "add_bias", "pool"})
        EXPECT_EQ(layoutOf(*r.graph, n), "NC1HWC0") << n << "\n" << ir::printGraph(*r.graph);
    EXPECT_EQ(r.graph->findValue("pool_out")->type().layout, ir::LayoutKind::NC1HWC0);
    // The Transpose is where the blocked region ends: the one conversion, counted by GreyOps.
    EXPECT_EQ(layoutOf(*r.graph, "to_nhwc"), "NCHW");
    EXPECT_EQ(layoutOf(*r.graph, "sig"), "");
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, 1);
    EXPECT_EQ(stats(r, kAssignLayoutRule).applied, 6);
    EXPECT_NE(ir::printGraph(*r.graph).find("@NC1HWC0"), std::string::npos);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(LayoutPass, GraphOutputsStayPlainAndUntagged) {
    Builder b;
    ir::Value* x = b.input("x", {1, 4, 6, 6});
    ir::Value* c = b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({8, 4, 3, 3}, 4))},
                          convAttrs());
    ir::Value* r = b.node(OpKind::Relu, "relu", {c});
    auto g = b.finish({r});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(layoutOf(*res.graph, "relu"), "NC1HWC0");
    // The user receives logical NCHW data: the output value keeps no layout tag.
    EXPECT_EQ(res.graph->outputs()[0]->type().layout, ir::LayoutKind::Any);
    EXPECT_EQ(res.graph->inputs()[0]->type().layout, ir::LayoutKind::Any);
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
    ir::Value* sa = b.node(OpKind::Sigmoid, "sig_plain", {a});
    auto g = b.finish({sa, r});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(layoutOf(*res.graph, "conv"), "NC1HWC0");
    EXPECT_EQ(layoutOf(*res.graph, "add_plain"), "NCHW");
    EXPECT_TRUE(rejectedWith(res, kAssignLayoutRule, "add_plain", "'y' is a plain"));
    EXPECT_EQ(layoutOf(*res.graph, "cat"), "NC1HWC0");
    EXPECT_EQ(layoutOf(*res.graph, "relu"), "NC1HWC0");
    EXPECT_EQ(stats(res, kAssignLayoutRule).applied, 4);
    EXPECT_EQ(stats(res, kAssignLayoutRule).rejected, 1);
    EXPECT_EQ(countGreyOps(*res.graph).layoutConversions, 1) << "only add_plain converts";
    expectSameOutputs(before, runF64(*res.graph));
}

TEST(LayoutPass, SwitchedOffAndBisected) {
    auto g = convBlock();
    PipelineConfig off = onlyLayoutPrecision();
    off.disabled.insert(kAssignLayoutRule);
    PipelineResult r = pipeline(*g, off);
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(layoutOf(*r.graph, "conv1"), "");
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, 0);

    // Precision off too, so the application sequence is only layout's.
    PipelineConfig bisect = onlyLayoutPrecision();
    bisect.disabled.insert("precision");
    bisect.bisectLimit = 2;
    PipelineResult rb = pipeline(*g, bisect);
    ASSERT_TRUE(rb.graph);
    EXPECT_EQ(layoutOf(*rb.graph, "conv1"), "NC1HWC0");
    EXPECT_EQ(layoutOf(*rb.graph, "relu"), "NC1HWC0");
    // conv2 was not allowed: add reads a plain conv2 output, so the region ends at add.
    EXPECT_EQ(layoutOf(*rb.graph, "conv2"), "");
    EXPECT_EQ(layoutOf(*rb.graph, "add"), "NCHW");
    EXPECT_EQ(rb.applications.size(), 2u);
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

TEST(PrecisionPass, OnlyAtO2AndAbove) {
    auto g = convBlock();
    PipelineConfig o1;
    o1.optLevel = 1;
    PipelineResult r = pipeline(*g, o1);
    ASSERT_TRUE(r.graph);
    for (const ir::Node* n : r.graph->nodes()) {
        EXPECT_FALSE(n->hasAttr(kPrecisionAttr)) << n->name();
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
    int convs = 0, exits = 0;
    for (const ir::Node* n : r.graph->nodes()) {
        if (n->kind() == OpKind::Conv || n->kind() == OpKind::FusedConv) {
            ++convs;
            EXPECT_EQ(n->attrString(kLayoutAttr, ""), "NC1HWC0") << n->name();
            EXPECT_EQ(n->attrString(kPrecisionAttr, ""), "f16-acc-f32") << n->name();
        }
        if (n->attrString(kLayoutAttr, "") == "NCHW") {
            ++exits;
            EXPECT_EQ(n->kind(), OpKind::Transpose) << n->name() << " converts out of NC1HWC0";
        }
    }
    EXPECT_GT(convs, 30);
    EXPECT_GT(exits, 0);
    EXPECT_EQ(countGreyOps(*r.graph).layoutConversions, exits);
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
    ir::Value* grp = b.node(OpKind::ElementwiseGroup, "affine", {scale, c, shift},
                            {{"body", std::vector<std::string>{"Mul(i0,i1)", "Add(t0,i2)"}}});
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
    EXPECT_EQ(countGreyOps(*res.graph).layoutConversions, 1) << "only at the Transpose";
    EXPECT_EQ(precisionOf(*res.graph, "affine"), "f16");
    expectSameOutputs(before, runF64(*res.graph));
}

TEST(PrecisionPass, FusedGroupWithAnExponentialStaysF32) {
    Builder b;
    ir::Value* x = b.input("x", {2, 5});
    ir::Value* grp = b.node(OpKind::ElementwiseGroup, "grp", {x},
                            {{"body", std::vector<std::string>{"Neg(i0)", "Exp(t0)"}}});
    ir::Value* plain = b.node(OpKind::ElementwiseGroup, "plain", {grp},
                              {{"body", std::vector<std::string>{"Relu(i0)"}}});
    auto g = b.finish({plain});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyLayoutPrecision());
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(precisionOf(*res.graph, "grp"), "f32");
    EXPECT_EQ(precisionOf(*res.graph, "plain"), "f16");
    expectSameOutputs(before, runF64(*res.graph));
}
