// The silero-vad models (If subgraphs, LSTM) on the reference executor in float64 and float32 against
// onnxruntime's outputs, specialised to their test input shapes, and compiled for the NPU, which
// refuses the If by name (control flow runs on the host).
#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/ir/Specialize.h"
#include "core/runtime/Compare.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace sextant::runtime {
namespace {

namespace fs = std::filesystem;

const fs::path kSilero = fs::path(SEXTANT_SHARED_DIR) / "models" / "silero-vad";

class Silero : public ::testing::TestWithParam<const char*> {};

TEST_P(Silero, MatchesOnnxruntimeSpecialisesAndIsRefusedByTheNpuByName) {
    const std::string stem = GetParam();
    const fs::path model = kSilero / (stem + ".onnx");
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping " << stem;
    const fs::path data = kSilero / "test_data" / stem / "test_data_set_0";
    auto inputs = frontend::loadTestDataSet(data.string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    auto expected = frontend::loadTestDataSet(data.string(), "output");
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    auto graph = frontend::importOnnx(model.string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;

    for (ir::DType compute : {ir::DType::F64, ir::DType::F32}) {
        auto got = runReference(**graph, *inputs, compute);
        ASSERT_TRUE(got.ok()) << got.error().message;
        ASSERT_EQ(got->size(), expected->size());
        for (size_t i = 0; i < got->size(); ++i) {
            TensorComparison c = compareTensors((*graph)->outputs()[i]->name(), (*got)[i], (*expected)[i], 1e-4, 1e-3);
            EXPECT_TRUE(c.pass) << formatComparison(c);
        }
    }

    // Specialised to the test shapes, every value of the main graph gets static dims.
    ir::InputShapes shapes;
    for (size_t i = 0; i < inputs->size(); ++i)
        shapes[(*graph)->inputs()[i]->name()] = (*inputs)[i].shape();
    Status s = ir::specializeInputs(**graph, shapes);
    ASSERT_TRUE(s.ok()) << s.error().message;
    for (const ir::Value* v : (*graph)->values())
        EXPECT_TRUE(v->type().isStatic()) << v->name() << " " << v->type().str();
    auto again = runReference(**graph, *inputs, ir::DType::F64);
    ASSERT_TRUE(again.ok()) << again.error().message;
    for (size_t i = 0; i < again->size(); ++i)
        EXPECT_TRUE(compareTensors("out", (*again)[i], (*expected)[i], 1e-4, 1e-3).pass);

    auto compiled = compileGraph(**graph, CompileOptions{});
    ASSERT_FALSE(compiled.ok());
    EXPECT_NE(compiled.error().message.find("op 'If' at node"), std::string::npos) << compiled.error().message;
    EXPECT_NE(compiled.error().message.find("cannot be lowered to the NPU"), std::string::npos)
        << compiled.error().message;

    // What the GUI asks for: the pipeline's result anyway, with the reason lowering failed.
    CompileOptions keep;
    keep.keepPipelineOnLoweringError = true;
    auto kept = compileGraph(**graph, keep);
    ASSERT_TRUE(kept.ok()) << kept.error().message;
    ASSERT_TRUE(kept->loweringError.has_value());
    EXPECT_NE(kept->loweringError->message.find("op 'If' at node"), std::string::npos);
    EXPECT_TRUE(kept->pipeline.graph);
    EXPECT_GE(kept->pipeline.snapshots.size(), 2u);
    EXPECT_TRUE(kept->program.tasks.empty());
}

INSTANTIATE_TEST_SUITE_P(Models, Silero, ::testing::Values("silero_vad_legacy", "silero_vad_v5"));

} // namespace
} // namespace sextant::runtime
