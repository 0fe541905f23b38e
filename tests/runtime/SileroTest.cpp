// The silero-vad models (If subgraphs, LSTM) on the reference executor in float64 and float32 against
// onnxruntime's outputs, specialised to their test input shapes, and compiled for the NPU with host
// steps: the If whole on the host, or, bound to the test data's sample rate, the branch it takes on
// the NPU with its LSTMs on the host.
#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/ir/Specialize.h"
#include "core/runtime/Compare.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/ModelInputs.h"
#include "core/runtime/Session.h"
#include "core/runtime/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

namespace sextant::runtime {
namespace {

namespace fs = std::filesystem;

const fs::path kSilero = fs::path(SEXTANT_SHARED_DIR) / "models" / "silero-vad";

class Silero : public ::testing::TestWithParam<const char*> {};

TEST_P(Silero, MatchesOnnxruntimeSpecialisesAndRunsOnTheNpuWithHostSteps) {
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

    // The NPU runs what it can and the host the rest (DESIGN §6, partitions): compiled as it is,
    // the top-level If on the sample rate is one host step holding the whole model.
    auto whole = compileGraph(**graph, CompileOptions{});
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    const backend::Program& p = whole->program;
    const auto isHost = [](const backend::Task& t) { return t.unit == backend::UnitKind::Host; };
    ASSERT_EQ(std::count_if(p.tasks.begin(), p.tasks.end(), isHost), 1);
    const backend::Task& hostIf = *std::find_if(p.tasks.begin(), p.tasks.end(), isHost);
    EXPECT_EQ(hostIf.kernel, "If");
    EXPECT_EQ(hostIf.core, backend::hostLane(p.target));
    ASSERT_EQ(backend::hostStepLines(p).size(), 1u);
    EXPECT_NE(backend::hostStepLines(p)[0].find("control flow"), std::string::npos) << backend::hostStepLines(p)[0];
    auto ran = runProgram(p, *inputs);
    ASSERT_TRUE(ran.ok()) << ran.error().message;
    for (size_t i = 0; i < ran->outputs.size(); ++i)
        EXPECT_TRUE(compareTensors("out", ran->outputs[i], (*expected)[i], 1e-4, 1e-3).pass) << i;

    // Bound to the test data's sample rate, the If folds into the branch it takes: its Conv,
    // ReLU and the rest run on the NPU, only the LSTMs on the host, and the numbers stay right.
    auto bound = bindControlInputs(**graph, data.string());
    ASSERT_TRUE(bound.ok()) << bound.error().message;
    ASSERT_EQ(bound->size(), 1u);
    EXPECT_EQ((*graph)->inputs()[static_cast<size_t>((*bound)[0].input)]->name(), "sr");
    EXPECT_EQ((*bound)[0].value.at(0), 16000.0);
    CompileOptions options;
    options.inputGuards = *bound;
    auto split = compileGraph(**graph, options);
    ASSERT_TRUE(split.ok()) << split.error().message;
    const backend::Program& q = split->program;
    ASSERT_EQ(q.inputGuards.size(), 1u);
    int lstm = 0, npu = 0;
    for (const backend::Task& t : q.tasks) {
        if (isHost(t)) {
            EXPECT_EQ(t.kernel, "LSTM") << t.name;
            lstm += t.kernel == "LSTM";
        } else {
            ++npu;
        }
    }
    EXPECT_GE(lstm, 1);
    EXPECT_GE(npu, 10);
    EXPECT_GE(backend::coresUsed(q), 2);
    auto partitioned = runProgram(q, *inputs, RunMode::GraphAsync, /*checkRaces=*/true);
    ASSERT_TRUE(partitioned.ok()) << partitioned.error().message;
    for (size_t i = 0; i < partitioned->outputs.size(); ++i) {
        TensorComparison c = compareTensors("out", partitioned->outputs[i], (*expected)[i], 1e-2, 1e-2);
        EXPECT_TRUE(c.pass) << formatComparison(c);
    }
    // Another sample rate is refused by name, not run down the wrong branch.
    std::vector<ir::Tensor> other = *inputs;
    const size_t sr = static_cast<size_t>((*bound)[0].input);
    other[sr] = ir::Tensor::fromVector<int64_t>(other[sr].shape(), {8000});
    auto refused = runProgram(q, other);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("input 'sr' is 8000, but the program was compiled for 16000"),
              std::string::npos)
        << refused.error().message;
}

INSTANTIATE_TEST_SUITE_P(Models, Silero, ::testing::Values("silero_vad_legacy", "silero_vad_v5"));

} // namespace
} // namespace sextant::runtime
