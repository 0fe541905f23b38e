// Real models through the whole pass pipeline: ort-examples/mnist.onnx (with onnxruntime's output
// as the oracle) and the project's residual CNN sample. The compiled-graph results must match the
// imported graph's in float64, and the expected fusions must happen.
#include "PassTestUtil.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/passes/TextDiff.h"

#include <filesystem>

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

std::vector<ir::Tensor> interpretF64(const ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F64;
    auto out = ir::interpret(g, inputs, ctx);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? *out : std::vector<ir::Tensor>{};
}

int64_t argmax(const ir::Tensor& t) {
    int64_t best = 0;
    for (int64_t i = 1; i < t.numel(); ++i)
        if (t.at(i) > t.at(best))
            best = i;
    return best;
}

} // namespace

TEST(Models, MnistFusesAndMatchesOnnxRuntime) {
    const std::string dir = std::string(SEXTANT_SHARED_DIR) + "/models/ort-examples";
    if (!std::filesystem::exists(dir))
        GTEST_SKIP() << "../shared not found: skipping the mnist pipeline test";
    auto g = frontend::importOnnx(dir + "/mnist.onnx");
    ASSERT_TRUE(g.ok()) << g.error().message;
    auto inputs = frontend::loadTestDataSet(dir + "/test_data/mnist/test_data_set_0", "input");
    auto expected = frontend::loadTestDataSet(dir + "/test_data/mnist/test_data_set_0", "output");
    ASSERT_TRUE(inputs.ok() && expected.ok());

    PipelineResult r = pipeline(**g);
    ASSERT_TRUE(r.graph);
    // Both Conv+Add(bias)+Relu stages and the final MatMul+Add fuse; the weight Reshape folds.
    EXPECT_EQ(stats(r, "fuse-conv-bias-act").applied, 2);
    EXPECT_EQ(stats(r, "fuse-gemm-bias-act").applied, 1);
    EXPECT_GE(stats(r, "fold-constant-node").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::FusedConv), 2);
    EXPECT_EQ(countKind(*r.graph, OpKind::FusedGemm), 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Add), 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::Relu), 0);
    EXPECT_EQ(r.graph->outputs()[0]->name(), (*g)->outputs()[0]->name());
    // Constants made by passes say where they came from.
    ASSERT_EQ(r.constantProvenance.count("Parameter193_reshape1"), 1u);
    EXPECT_EQ(r.constantProvenance["Parameter193_reshape1"].origins,
              (std::vector<std::string>{"Times212_reshape1"}));
    EXPECT_EQ(r.constantProvenance["Parameter193_reshape1"].createdBy,
              "fold-constants/fold-constant-node");
    ASSERT_EQ(r.constantProvenance.count("Convolution28_bias"), 1u);
    EXPECT_EQ(r.constantProvenance["Convolution28_bias"].origins,
              (std::vector<std::string>{"Convolution28", "Plus30"}));

    auto before = interpretF64(**g, *inputs);
    auto after = interpretF64(*r.graph, *inputs);
    // Folded f32 weights round once more than the unfused graph: 1e-5 relative.
    expectSameOutputs(before, after, 1e-5);
    ASSERT_EQ(after.size(), 1u);
    for (int64_t i = 0; i < after[0].numel(); ++i)
        EXPECT_LE(std::abs(after[0].at(i) - (*expected)[0].at(i)),
                  1e-4 + 1e-3 * std::abs((*expected)[0].at(i)));
    EXPECT_EQ(argmax(after[0]), 7);

    // Every changed pass has a non-empty diff against the previous snapshot.
    for (size_t i = 1; i < r.snapshots.size(); ++i)
        EXPECT_EQ(unifiedDiff(r.snapshots[i - 1].text(), r.snapshots[i].text(), "a", "b").empty(),
                  !r.snapshots[i].changed)
            << r.snapshots[i].passId;
}

TEST(Models, ResidualSampleFoldsBatchNormAndKeepsResults) {
    const std::string path = std::string(SEXTANT_SOURCE_DIR) + "/samples/residual_cnn.onnx";
    if (!std::filesystem::exists(path))
        GTEST_SKIP() << "samples/residual_cnn.onnx not generated: skipping";
    auto g = frontend::importOnnx(path);
    ASSERT_TRUE(g.ok()) << g.error().message;
    auto input = frontend::loadTensorProto(std::string(SEXTANT_SOURCE_DIR) +
                                           "/samples/residual_cnn/input_0.pb");
    ASSERT_TRUE(input.ok()) << input.error().message;

    PipelineResult r = pipeline(**g);
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(stats(r, "fuse-conv-bn").applied, 2);
    EXPECT_EQ(countKind(*r.graph, OpKind::BatchNormalization), 0);
    EXPECT_GE(countKind(*r.graph, OpKind::FusedConv), 1);
    std::vector<ir::Tensor> inputs{*input};
    expectSameOutputs(interpretF64(**g, inputs), interpretF64(*r.graph, inputs), 1e-5);
}
