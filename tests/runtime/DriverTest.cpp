// The end-to-end driver (core/runtime/Driver.h) on the project's sample model: the stages a
// request asks for run in order and are reported as they run, cancelling stops at the next
// stage, a hook can stop the job, and the result holds what each stage made.
#include "core/runtime/Driver.h"

#include "core/backend/Artifact.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <unistd.h>

using namespace sextant;
using runtime::RunStage;

namespace {

const std::string kSample = SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx";
const std::string kSampleData = SEXTANT_SOURCE_DIR "/samples/residual_cnn";

/// The request of `sextant-cli run SAMPLE --inputs D --expected D --compare-reference --per-tensor`.
runtime::RunRequest fullRequest() {
    runtime::RunRequest q;
    q.model = kSample;
    q.inputsDir = kSampleData;
    q.expectedDir = kSampleData;
    q.compareReference = true;
    q.perTensor = true;
    return q;
}

const std::vector<RunStage> kAllStages = {RunStage::Import,    RunStage::Specialise, RunStage::Compile,
                                          RunStage::Inputs,    RunStage::Simulate,   RunStage::Reference,
                                          RunStage::CompareReference, RunStage::CompareExpected};

} // namespace

TEST(Driver, StagesRunAndAreReportedInOrder) {
    std::vector<RunStage> started, done;
    std::vector<int> percents;
    std::vector<std::string> passes;
    runtime::RunHooks hooks;
    hooks.progress = [&](RunStage stage, int percent, std::string_view detail) {
        percents.push_back(percent);
        if (detail.empty())
            started.push_back(stage);
        else
            passes.emplace_back(detail);
    };
    hooks.stageDone = [&](RunStage stage, const runtime::RunResult& r) -> Status {
        done.push_back(stage);
        EXPECT_EQ(r.stages.back(), stage); // the result so far ends with the stage just done
        return {};
    };
    runtime::RunJob job(fullRequest(), hooks);
    EXPECT_EQ(job.plan(), kAllStages);
    auto result = job.run();
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(started, kAllStages);
    EXPECT_EQ(done, kAllStages);
    EXPECT_EQ(result->stages, kAllStages);
    // Progress never goes back; Compile reports each pass, then the lowering.
    EXPECT_TRUE(std::is_sorted(percents.begin(), percents.end()));
    EXPECT_LT(percents.back(), 100);
    ASSERT_FALSE(passes.empty());
    EXPECT_EQ(passes.back(), "lower");
}

TEST(Driver, ResultHoldsWhatEachStageMade) {
    auto result = runtime::RunJob(fullRequest()).run();
    ASSERT_TRUE(result.ok()) << result.error().message;
    const runtime::RunResult& r = *result;
    // Import
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(r.graph->name(), "residual_cnn");
    EXPECT_TRUE(r.inputShapes.empty()); // static inputs: nothing to specialise
    // Compile
    ASSERT_GE(r.pipeline.snapshots.size(), 2u);
    EXPECT_EQ(r.pipeline.snapshots.front().passId, "input");
    EXPECT_FALSE(r.program.tasks.empty());
    EXPECT_FALSE(r.loweringError);
    // Inputs, Simulate
    EXPECT_EQ(r.inputs.origin, runtime::InputsOrigin::Directory);
    EXPECT_EQ(r.inputs.dir, kSampleData);
    ASSERT_EQ(r.inputs.tensors.size(), r.graph->inputs().size());
    EXPECT_GT(r.sim.totalCycles, 0u);
    EXPECT_EQ(r.sim.trace.size(), r.program.tasks.size());
    ASSERT_EQ(r.sim.outputs.size(), r.graph->outputs().size());
    // Reference: the imported graph in float64
    EXPECT_EQ(r.referenceGraph, r.graph.get());
    ASSERT_EQ(r.reference.size(), r.sim.outputs.size());
    EXPECT_EQ(r.reference[0].dtype(), ir::DType::F64);
    EXPECT_FALSE(r.referenceError);
    // CompareReference: outputs, then every intermediate; the values are released after
    ASSERT_EQ(r.referenceComparisons.size(), r.sim.outputs.size());
    EXPECT_EQ(r.referenceComparisons[0].name, "probs");
    EXPECT_TRUE(r.referenceComparisons[0].pass);
    EXPECT_TRUE(r.perTensorCompared);
    EXPECT_GE(r.drift.values.size(), 5u);
    EXPECT_EQ(r.drift.firstFailing, -1);
    EXPECT_TRUE(r.sim.values.empty());
    // CompareExpected: onnxruntime's outputs
    ASSERT_EQ(r.expected.size(), r.sim.outputs.size());
    ASSERT_EQ(r.expectedComparisons.size(), r.sim.outputs.size());
    EXPECT_TRUE(r.expectedComparisons[0].pass);
    EXPECT_EQ(r.outputName(0), "probs");
}

TEST(Driver, CancelStopsAtTheNextStage) {
    std::atomic<bool> cancel{false};
    std::vector<RunStage> started;
    runtime::RunHooks hooks;
    hooks.cancel = &cancel;
    hooks.progress = [&](RunStage stage, int, std::string_view detail) {
        if (detail.empty())
            started.push_back(stage);
    };
    hooks.stageDone = [&](RunStage stage, const runtime::RunResult&) -> Status {
        if (stage == RunStage::Specialise)
            cancel.store(true); // the user pressed Cancel while the shapes were applied
        return {};
    };
    auto result = runtime::RunJob(fullRequest(), hooks).run();
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().kind, ErrorKind::Cancelled);
    EXPECT_EQ(started, (std::vector<RunStage>{RunStage::Import, RunStage::Specialise}));

    // Set before the start: nothing runs at all.
    started.clear();
    hooks.stageDone = {};
    auto none = runtime::RunJob(fullRequest(), hooks).run();
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().kind, ErrorKind::Cancelled);
    EXPECT_TRUE(started.empty());
}

TEST(Driver, HookErrorStopsTheJob) {
    std::vector<RunStage> done;
    runtime::RunHooks hooks;
    hooks.stageDone = [&](RunStage stage, const runtime::RunResult&) -> Status {
        done.push_back(stage);
        if (stage == RunStage::Simulate)
            return makeError(ErrorKind::Invalid, "the caller could not use the outputs");
        return {};
    };
    auto result = runtime::RunJob(fullRequest(), hooks).run();
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().message, "the caller could not use the outputs");
    EXPECT_EQ(done.back(), RunStage::Simulate);
    EXPECT_EQ(done.size(), 5u);
}

TEST(Driver, RequestDecidesTheStages) {
    runtime::RunRequest reference;
    reference.model = kSample;
    reference.engine = runtime::RunEngine::Reference;
    reference.requireStaticInputs = false;
    EXPECT_EQ(runtime::RunJob(reference).plan(),
              (std::vector<RunStage>{RunStage::Import, RunStage::Specialise, RunStage::Inputs, RunStage::Reference}));
    reference.optimiseReference = true;
    reference.inputsDir = kSampleData;
    reference.expectedDir = kSampleData;
    EXPECT_EQ(runtime::RunJob(reference).plan(),
              (std::vector<RunStage>{RunStage::Import, RunStage::Specialise, RunStage::Compile, RunStage::Inputs,
                                     RunStage::Reference, RunStage::CompareExpected}));
    // The optimised graph is what the reference runs, against onnxruntime's outputs.
    auto r = runtime::RunJob(reference).run();
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->referenceGraph, r->pipeline.graph.get());
    EXPECT_LT(r->referenceGraph->numNodes(), r->graph->numNodes()); // -O2 fused the batch norms
    ASSERT_EQ(r->expectedComparisons.size(), 1u);
    EXPECT_TRUE(r->expectedComparisons[0].pass);
    EXPECT_TRUE(r->program.tasks.empty()); // nothing lowered

    runtime::RunRequest plain;
    plain.model = kSample;
    EXPECT_EQ(runtime::RunJob(plain).plan(), (std::vector<RunStage>{RunStage::Import, RunStage::Specialise,
                                                                    RunStage::Compile, RunStage::Inputs,
                                                                    RunStage::Simulate}));
}

TEST(Driver, ArtifactRunsAsTheProgramItWasWrittenFrom) {
    runtime::RunRequest q;
    q.model = kSample;
    auto compiled = runtime::RunJob(q).run();
    ASSERT_TRUE(compiled.ok()) << compiled.error().message;
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("sextant-driver-" + std::to_string(::getpid()))).string();
    ASSERT_TRUE(backend::writeArtifact(compiled->program, dir).ok());
    q.model = dir;
    q.compareReference = true;
    runtime::RunJob job(q);
    EXPECT_EQ(job.plan(), (std::vector<RunStage>{RunStage::Import, RunStage::Inputs, RunStage::Simulate,
                                                 RunStage::Reference, RunStage::CompareReference}));
    auto loaded = job.run();
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_FALSE(loaded->graph); // an artifact carries only its compiled graph
    EXPECT_EQ(loaded->referenceGraph, loaded->program.graph.get());
    EXPECT_EQ(loaded->sim.totalCycles, compiled->sim.totalCycles);
    ASSERT_EQ(loaded->referenceComparisons.size(), 1u);
    EXPECT_TRUE(loaded->referenceComparisons[0].pass);
}

TEST(Driver, ErrorsNameTheirCause) {
    runtime::RunRequest q;
    q.model = SEXTANT_SOURCE_DIR "/samples/no-such-model.onnx";
    auto missing = runtime::RunJob(q).run();
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("no-such-model.onnx"), std::string::npos) << missing.error().message;

    q.model = kSample;
    q.expectedDir = SEXTANT_SOURCE_DIR "/samples"; // no output_0.pb there
    std::vector<RunStage> done;
    runtime::RunHooks hooks;
    hooks.stageDone = [&](RunStage stage, const runtime::RunResult&) -> Status {
        done.push_back(stage);
        return {};
    };
    auto noExpected = runtime::RunJob(q, hooks).run();
    ASSERT_FALSE(noExpected.ok());
    EXPECT_EQ(done.back(), RunStage::Simulate); // the simulation completed before the failing stage
}
