// End to end: ONNX import -> pass pipeline -> lowering -> simulated NPU -> comparison with the
// float64 reference, on the real mnist model (with onnxruntime's output as a second oracle) and on
// the project's residual CNN sample. Also: the run's profile links every Task to graph nodes.
#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/runtime/Compare.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/ReferenceExecutor.h"
#include "core/runtime/Session.h"
#include "profiler/ProfileDb.h"
#include "profiler/ProfileReader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <unistd.h>

using namespace sextant;
namespace fs = std::filesystem;

namespace {

struct EndToEnd {
    std::unique_ptr<ir::Graph> original;
    runtime::CompileResult compiled;
    std::vector<ir::Tensor> inputs;
    sim::SimResult simulated;
    std::vector<ir::Tensor> reference;
};

/// Runs the whole path; failures are reported through gtest and leave `ok` false.
EndToEnd runEndToEnd(const std::string& model, const std::string& dataDir, bool& ok,
                     runtime::RunMode mode = runtime::RunMode::GraphAsync) {
    ok = false;
    EndToEnd e;
    auto graph = frontend::importOnnx(model);
    EXPECT_TRUE(graph.ok()) << graph.error().message;
    if (!graph.ok())
        return e;
    e.original = std::move(*graph);
    auto compiled = runtime::compileGraph(*e.original, runtime::CompileOptions{});
    EXPECT_TRUE(compiled.ok()) << compiled.error().message;
    if (!compiled.ok())
        return e;
    e.compiled = std::move(*compiled);
    auto inputs = frontend::loadTestDataSet(dataDir, "input");
    EXPECT_TRUE(inputs.ok()) << inputs.error().message;
    if (!inputs.ok())
        return e;
    e.inputs = std::move(*inputs);
    runtime::Session session(e.compiled.program);
    auto result = session.run(e.inputs, mode);
    EXPECT_TRUE(result.ok()) << result.error().message;
    if (!result.ok())
        return e;
    e.simulated = std::move(*result);
    auto ref = runtime::runReference(*e.original, e.inputs, ir::DType::F64);
    EXPECT_TRUE(ref.ok()) << ref.error().message;
    if (!ref.ok())
        return e;
    e.reference = std::move(*ref);
    EXPECT_EQ(e.simulated.outputs.size(), e.reference.size());
    ok = e.simulated.outputs.size() == e.reference.size();
    return e;
}

std::string mnistDir() {
    return std::string(SEXTANT_SHARED_DIR) + "/models/ort-examples";
}

} // namespace

TEST(EndToEnd, MnistOnTheSimulatedNpuMatchesTheFloat64Reference) {
    if (!fs::exists(mnistDir() + "/mnist.onnx"))
        GTEST_SKIP() << "../shared not found: skipping the mnist end-to-end test";
    std::string data = mnistDir() + "/test_data/mnist/test_data_set_0";
    bool ok = false;
    EndToEnd e = runEndToEnd(mnistDir() + "/mnist.onnx", data, ok);
    ASSERT_TRUE(ok);
    runtime::TensorComparison c = runtime::compareTensors(
        "Plus214_Output_0", e.simulated.outputs[0], e.reference[0], 1e-2, 1e-2);
    EXPECT_GE(c.cosine, 0.999) << runtime::formatComparison(c);
    EXPECT_EQ(c.argmaxGot, 7) << runtime::formatComparison(c);
    EXPECT_EQ(c.argmaxExpected, 7);
    EXPECT_TRUE(c.pass) << runtime::formatComparison(c);
    // f16 on the cube unit: close to, but not the same as, float64.
    EXPECT_GT(c.maxAbs, 0.0);

    // onnxruntime's output agrees too.
    auto ort = frontend::loadTestDataSet(data, "output");
    ASSERT_TRUE(ort.ok()) << ort.error().message;
    runtime::TensorComparison vsOrt =
        runtime::compareTensors("ort", e.simulated.outputs[0], (*ort)[0], 1e-2, 1e-2);
    EXPECT_GE(vsOrt.cosine, 0.999) << runtime::formatComparison(vsOrt);
    EXPECT_EQ(vsOrt.argmaxGot, 7);

    EXPECT_GT(e.simulated.totalCycles, 0u);
    EXPECT_EQ(e.simulated.trace.size(), e.compiled.program.tasks.size());
}

TEST(EndToEnd, MnistStrictModeComputesTheSameNumbers) {
    if (!fs::exists(mnistDir() + "/mnist.onnx"))
        GTEST_SKIP() << "../shared not found: skipping the mnist strict-mode test";
    std::string data = mnistDir() + "/test_data/mnist/test_data_set_0";
    bool ok1 = false, ok2 = false;
    EndToEnd async = runEndToEnd(mnistDir() + "/mnist.onnx", data, ok1);
    EndToEnd strict = runEndToEnd(mnistDir() + "/mnist.onnx", data, ok2, runtime::RunMode::Strict);
    ASSERT_TRUE(ok1 && ok2);
    EXPECT_TRUE(async.simulated.outputs[0].identical(strict.simulated.outputs[0]));
    EXPECT_GE(strict.simulated.totalCycles, async.simulated.totalCycles);
}

TEST(EndToEnd, ResidualCnnSampleOnTheSimulatedNpu) {
    std::string dir = std::string(SEXTANT_SOURCE_DIR) + "/samples";
    bool ok = false;
    EndToEnd e = runEndToEnd(dir + "/residual_cnn.onnx", dir + "/residual_cnn", ok);
    ASSERT_TRUE(ok);
    runtime::TensorComparison c =
        runtime::compareTensors("probs", e.simulated.outputs[0], e.reference[0], 1e-2, 1e-2);
    EXPECT_GE(c.cosine, 0.999) << runtime::formatComparison(c);
    EXPECT_EQ(c.argmaxGot, c.argmaxExpected) << runtime::formatComparison(c);
    EXPECT_TRUE(c.pass) << runtime::formatComparison(c);
    // The sample's pipeline really changed the graph (BN folded, bias+relu fused) and the simulator
    // ran the compiled graph, not the original.
    EXPECT_LT(e.compiled.program.graph->numNodes(), e.original->numNodes());
}

TEST(EndToEnd, ProfileLinksEveryTaskToGraphNodesWithProvenance) {
    std::string dir = std::string(SEXTANT_SOURCE_DIR) + "/samples";
    bool ok = false;
    EndToEnd e = runEndToEnd(dir + "/residual_cnn.onnx", dir + "/residual_cnn", ok);
    ASSERT_TRUE(ok);
    fs::path db = fs::temp_directory_path() / ("sextant-e2e-" + std::to_string(::getpid()) + ".db");
    fs::remove(db);
    profiler::RunInfo info;
    info.model = "residual_cnn.onnx";
    info.created = 0;
    ASSERT_TRUE(profiler::writeProfile(db.string(), e.compiled.program, e.simulated, info).ok());
    { // the reader closes at the block's end, and its -wal and -shm files go before the database
        auto reader = profiler::ProfileReader::open(db.string());
        ASSERT_TRUE(reader.ok()) << reader.error().message;
        auto nodes = reader->nodes().value();
        std::set<std::string> names;
        std::set<std::string> origins;
        for (const auto& n : nodes) {
            names.insert(n.name);
            origins.insert(n.origins.begin(), n.origins.end());
        }
        auto tasks = reader->tasks().value();
        ASSERT_FALSE(tasks.empty());
        for (const auto& t : tasks) {
            EXPECT_FALSE(t.nodes.empty()) << "task " << t.id;
            for (const auto& n : t.nodes)
                EXPECT_TRUE(names.count(n)) << "task " << t.id << " names unknown node " << n;
            EXPECT_LT(t.start, t.end);
        }
        // Provenance reaches back to the ONNX nodes: every original node is covered by some IR node.
        for (const ir::Node* n : e.original->nodes())
            for (const auto& o : n->provenance().origins)
                EXPECT_TRUE(origins.count(o)) << "ONNX node " << o << " lost its provenance";
        EXPECT_EQ(reader->buffers()->size(), e.compiled.program.buffers.size());
    }
    fs::remove(db);
}

TEST(EndToEnd, MultiCoreUltrafaceHasNoRacesAndMatchesTheReference) {
    std::string model = mnistDir() + "/ultraface_version-RFB-320.onnx";
    std::string data = mnistDir() + "/test_data/ultraface_version-RFB-320/test_data_set_0";
    if (!fs::exists(model))
        GTEST_SKIP() << "../shared not found: skipping the ultraface multi-core test";
    auto graph = frontend::importOnnx(model);
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    auto compiled = runtime::compileGraph(**graph, runtime::CompileOptions{});
    ASSERT_TRUE(compiled.ok()) << compiled.error().message;
    const backend::Program& p = compiled->program;
    std::set<int> cores;
    for (const auto& t : p.tasks)
        cores.insert(t.core);
    // The point of this test: Tasks on several cores synchronised by events.
    ASSERT_GT(cores.size(), 1u);
    ASSERT_FALSE(p.events.empty());
    auto inputs = frontend::loadTestDataSet(data, "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    runtime::Session session(p);
    auto result = session.run(*inputs, runtime::RunMode::GraphAsync, /*checkRaces=*/true);
    ASSERT_TRUE(result.ok()) << result.error().message;
    auto ref = runtime::runReference(**graph, *inputs, ir::DType::F64);
    ASSERT_TRUE(ref.ok()) << ref.error().message;
    ASSERT_EQ(ref->size(), result->outputs.size());
    for (size_t i = 0; i < ref->size(); ++i) {
        auto c = runtime::compareTensors((*graph)->outputs()[i]->name(), result->outputs[i],
                                         (*ref)[i], 1e-2, 1e-2);
        EXPECT_GE(c.cosine, 0.999) << runtime::formatComparison(c);
        EXPECT_EQ(c.argmaxGot, c.argmaxExpected) << runtime::formatComparison(c);
    }
    // Several cores really overlapped in time.
    bool overlap = false;
    for (size_t i = 0; i < result->trace.size() && !overlap; ++i)
        for (size_t j = i + 1; j < result->trace.size() && !overlap; ++j)
            overlap = result->trace[i].core != result->trace[j].core &&
                      result->trace[i].start < result->trace[j].end &&
                      result->trace[j].start < result->trace[i].end;
    EXPECT_TRUE(overlap);
}
