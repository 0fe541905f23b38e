// ONNX export (issue 23): each decomposition of the standard form computes what the op it
// replaces computes. A graph of one fused op is exported, read back by the importer (which then
// holds only standard ops) and run by the reference executor beside the original; the shared
// models' snapshots are checked in onnxruntime by tests/models (model.*.onnx-export-*).
#include "TestUtil.h"

#include "core/frontend/OnnxExport.h"
#include "core/frontend/OnnxImporter.h"
#include "core/ir/Interpreter.h"

#include <random>

namespace sextant::frontend {
namespace {

using namespace ir;
using test::tempDir;
using test::writeBytes;

Tensor randomTensor(DType dtype, std::vector<int64_t> shape, uint32_t seed, double lo = -1, double hi = 1) {
    Tensor t(dtype, std::move(shape));
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, isFloat(dtype) ? dist(gen) : std::round(dist(gen)));
    return t;
}

/// One node of `kind` reading graph input x (and constants), as the fusion passes make it.
struct OneOp {
    std::unique_ptr<Graph> graph = std::make_unique<Graph>("one");
    Node* node = nullptr;
    Tensor input;
};

OneOp oneOp(OpKind kind, Tensor x, std::vector<Tensor> constants, AttributeMap attrs, size_t outputs = 1) {
    OneOp o;
    o.input = x;
    std::vector<Value*> ins{*o.graph->addInput("x", x.type())};
    for (size_t i = 0; i < constants.size(); ++i)
        ins.push_back(constants[i].valid() ? *o.graph->addConstant("c" + std::to_string(i), constants[i]) : nullptr);
    std::vector<std::string> outs;
    for (size_t i = 0; i < outputs; ++i)
        outs.push_back("y" + std::to_string(i));
    Expected<Node*> n = o.graph->addNode(kind, "op", ins, outs, std::move(attrs));
    EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.error().message);
    o.node = *n;
    EXPECT_TRUE(o.graph->inferTypes().ok());
    std::vector<Value*> results;
    for (Value* v : o.node->outputs())
        results.push_back(v);
    o.graph->setOutputs(results);
    return o;
}

/// Exports `o` in the standard form at `opset`, imports it back and checks that it holds no
/// sextant op and computes what the original does (within `tol` of the largest magnitude).
void expectSameAfterExport(const OneOp& o, int64_t opset, double tol = 1e-5) {
    OnnxExportOptions options;
    options.form = OnnxExportForm::Standard;
    options.opsets = {{"", opset}};
    Expected<std::string> bytes = exportOnnx(*o.graph, options);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    Expected<std::string> again = exportOnnx(*o.graph, options);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*bytes, *again) << "the same graph exports to the same bytes";
    const std::string path = (tempDir() / "exported.onnx").string();
    writeBytes(path, *bytes);
    Expected<std::unique_ptr<Graph>> back = importOnnx(path);
    ASSERT_TRUE(back.ok()) << back.error().message;
    for (const Node* n : (*back)->nodeOrder())
        EXPECT_TRUE(n->info().domain.empty()) << n->name() << " is " << qualifiedOpName(n->kind());
    KernelContext ctx;
    ctx.compute = DType::F32;
    std::vector<Tensor> in{o.input};
    Expected<std::vector<Tensor>> want = interpret(*o.graph, in, ctx);
    ASSERT_TRUE(want.ok()) << want.error().message;
    Expected<std::vector<Tensor>> got = interpret(**back, in, ctx);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
        const std::vector<double> w = (*want)[i].toDoubles(), g = (*got)[i].toDoubles();
        ASSERT_EQ((*got)[i].shape(), (*want)[i].shape());
        ASSERT_EQ((*got)[i].dtype(), (*want)[i].dtype());
        double scale = 1;
        for (double v : w)
            scale = std::max(scale, std::abs(v));
        for (size_t k = 0; k < w.size(); ++k)
            ASSERT_NEAR(g[k], w[k], tol * scale) << "output " << i << " element " << k;
    }
}

TEST(OnnxExport, FusedConvWithResidualAndClipAtOldAndNewOpsets) {
    const Tensor x = randomTensor(DType::F32, {1, 3, 6, 6}, 1);
    const Tensor w = randomTensor(DType::F32, {4, 3, 3, 3}, 2), b = randomTensor(DType::F32, {4}, 3);
    const Tensor r = randomTensor(DType::F32, {1, 4, 6, 6}, 4);
    AttributeMap attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                       {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                       {"activation", std::string("Clip")},
                       {"activation_params", std::vector<double>{-0.5, 0.75}}};
    const OneOp o = oneOp(OpKind::FusedConv, x, {w, b, r}, attrs);
    expectSameAfterExport(o, 9);  // Clip's bounds as attributes
    expectSameAfterExport(o, 13); // Clip's bounds as inputs
}

// A residual with fewer channels (fold-zero-channel-pad) is added to the first ones: in standard
// ops it is padded back with zero channels before the Add.
TEST(OnnxExport, FusedConvWithAResidualOfFewerChannels) {
    const Tensor x = randomTensor(DType::F32, {1, 3, 5, 5}, 11);
    const Tensor w = randomTensor(DType::F32, {6, 3, 1, 1}, 12), b = randomTensor(DType::F32, {6}, 13);
    const Tensor r = randomTensor(DType::F32, {1, 4, 5, 5}, 14);
    const OneOp o = oneOp(OpKind::FusedConv, x, {w, b, r},
                          {{"kernel_shape", std::vector<int64_t>{1, 1}}, {"activation", std::string("Relu")}});
    expectSameAfterExport(o, 13);
}

TEST(OnnxExport, FusedConvWithLeakyReluHardSwishAndPostAffine) {
    const Tensor x = randomTensor(DType::F32, {1, 2, 5, 5}, 5, -4, 4);
    const Tensor w = randomTensor(DType::F32, {3, 2, 1, 1}, 6), b = randomTensor(DType::F32, {3}, 7);
    expectSameAfterExport(oneOp(OpKind::FusedConv, x, {w, b},
                                {{"activation", std::string("LeakyRelu")}, {"activation_params", std::vector<double>{0.2}}}),
                          11);
    // HardSwish is opset 14: at 9 it is written as x * HardSigmoid(x).
    expectSameAfterExport(oneOp(OpKind::FusedConv, x, {w, b},
                                {{"activation", std::string("HardSwish")}, {"post_affine", std::vector<double>{1.5, -0.25}}}),
                          9);
}

TEST(OnnxExport, FusedGemmOfRankThreeIsMatMulWithAlphaAndBeta) {
    const Tensor a = randomTensor(DType::F32, {2, 3, 4}, 8);
    const Tensor bT = randomTensor(DType::F32, {5, 4}, 9), c = randomTensor(DType::F32, {5}, 10);
    expectSameAfterExport(oneOp(OpKind::FusedGemm, a, {bT, c},
                                {{"alpha", 0.5}, {"beta", 2.0}, {"transB", int64_t{1}}, {"activation", std::string("Relu")}}),
                          13);
}

TEST(OnnxExport, LayerNormalizationBelowOpset17IsWrittenAsItsSteps) {
    const Tensor x = randomTensor(DType::F32, {2, 3, 8}, 11, -3, 3);
    const Tensor s = randomTensor(DType::F32, {8}, 12), b = randomTensor(DType::F32, {8}, 13);
    const OneOp o = oneOp(OpKind::LayerNormalization, x, {s, b}, {{"axis", int64_t{-1}}, {"epsilon", 1e-3}});
    expectSameAfterExport(o, 9);
    expectSameAfterExport(o, 17);
    // Its mean and inverse deviation outputs have no older form: an error naming the node.
    const OneOp three = oneOp(OpKind::LayerNormalization, x, {s, b}, {}, 3);
    OnnxExportOptions options;
    options.form = OnnxExportForm::Standard;
    options.opsets = {{"", 9}};
    Expected<std::string> bytes = exportOnnx(*three.graph, options);
    ASSERT_FALSE(bytes.ok());
    EXPECT_EQ(bytes.error().subject, "op");
    EXPECT_NE(bytes.error().message.find("cannot export node 'op' (LayerNormalization) as standard ONNX at opset 9"),
              std::string::npos)
        << bytes.error().message;
}

TEST(OnnxExport, AttentionIsMatMulSoftmaxMatMul) {
    const Tensor q = randomTensor(DType::F32, {2, 4, 8}, 14);
    const Tensor k = randomTensor(DType::F32, {2, 4, 8}, 15), v = randomTensor(DType::F32, {2, 4, 8}, 16);
    expectSameAfterExport(oneOp(OpKind::Attention, q, {k, v}, {{"scale", 0.35}, {"transB", int64_t{1}}}), 9);
}

TEST(OnnxExport, Int8GemmWithBiasIsMatMulIntegerThenRequantised) {
    const Tensor x = randomTensor(DType::U8, {3, 6}, 17, 0, 255);
    const Tensor w = randomTensor(DType::I8, {6, 4}, 18, -127, 127), bias = randomTensor(DType::I32, {4}, 19, -500, 500);
    AttributeMap attrs{{"x_scale", 0.02},
                       {"x_zero_point", int64_t{128}},
                       {"w_scale", std::vector<double>{0.01, 0.004, 0.03, 0.002}},
                       {"w_zero_point", std::vector<int64_t>{0}},
                       {"y_scale", 0.05},
                       {"y_zero_point", int64_t{10}},
                       {"output_dtype", int64_t{2}},
                       {"activation", std::string("Relu")}};
    // Requantised in another order of float operations: at most one step apart.
    expectSameAfterExport(oneOp(OpKind::Int8Gemm, x, {w, bias}, attrs), 13, 1.0 / 255);
    expectSameAfterExport(oneOp(OpKind::Int8Gemm, x, {w}, attrs), 13, 1.0 / 255);
}

TEST(OnnxExport, AResizeBelowOpset10IsTheUpsampleItWas) {
    // The importer reads Upsample-7 and -9 as a Resize, which ONNX has only from opset 10.
    const Tensor x = randomTensor(DType::F32, {1, 2, 3, 4}, 22);
    const OneOp o = oneOp(OpKind::Resize, x, {Tensor::fromVector<float>({4}, {1, 1, 2, 3})},
                          {{"mode", std::string("nearest")}});
    expectSameAfterExport(o, 9); // scales as input 1
    expectSameAfterExport(o, 8); // scales as an attribute
}

TEST(OnnxExport, AsIsKeepsTheSextantOpsAndReadsBack) {
    const Tensor x = randomTensor(DType::F32, {1, 2, 4, 4}, 20);
    const OneOp o = oneOp(OpKind::FusedConv, x, {randomTensor(DType::F32, {2, 2, 1, 1}, 21)},
                          {{"activation", std::string("Relu")}});
    OnnxExportOptions options;
    options.opsets = {{"", 13}};
    Expected<std::string> bytes = exportOnnx(*o.graph, options);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    onnx::ModelProto m;
    ASSERT_TRUE(m.ParseFromString(*bytes));
    ASSERT_EQ(m.graph().node_size(), 1);
    EXPECT_EQ(m.graph().node(0).domain(), "sextant");
    EXPECT_EQ(m.graph().node(0).op_type(), "FusedConv");
    const std::string path = (tempDir() / "asis.onnx").string();
    writeBytes(path, *bytes);
    Expected<std::unique_ptr<Graph>> back = importOnnx(path);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ((*back)->nodeOrder().front()->kind(), OpKind::FusedConv);
    EXPECT_EQ((*back)->nodeOrder().front()->attrString("activation", ""), "Relu");
}

TEST(OnnxExport, OpsetImportsAreReadWithoutTheGraph) {
    Expected<std::map<std::string, int64_t>> opsets =
        modelOpsetImports((test::samplesDir() / "residual_cnn.onnx").string());
    ASSERT_TRUE(opsets.ok()) << opsets.error().message;
    EXPECT_EQ(opsets->count(""), 1u);
    const std::string junk = (tempDir() / "junk.onnx").string();
    writeBytes(junk, std::string("\xff\xff\xff\xff not a model", 17));
    Expected<std::map<std::string, int64_t>> bad = modelOpsetImports(junk);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find(junk), std::string::npos) << bad.error().message;
    EXPECT_FALSE(modelOpsetImports((tempDir() / "missing.onnx").string()).ok());
}

} // namespace
} // namespace sextant::frontend
