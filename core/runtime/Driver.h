#pragma once

// The end-to-end driver: one model from its file to simulated, checked numbers, in explicit
// stages. `sextant-cli run` and the GUI's compile (views/CompileWorker) both run a RunJob; the
// request says which stages run, the result holds what each stage made. Writing the run to a
// profile database is the callers' keeping step after the job (profiler/ sits above runtime/),
// never how a result reaches a view. docs/driver.md describes the stages and who calls them.

#include "Compare.h"
#include "Compiler.h"
#include "FloatRange.h"
#include "ModelInputs.h"
#include "Session.h"

#include "core/backend/Program.h"
#include "core/ir/Error.h"
#include "core/ir/Graph.h"
#include "core/ir/Specialize.h"
#include "core/ir/Tensor.h"
#include "core/passes/PassManager.h"
#include "core/sim/Simulator.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sextant::runtime {

/// The stages of a run, in the order they run. RunJob::plan() lists the ones a request needs.
enum class RunStage {
    Import,           ///< the ONNX model is imported, or the compiled artifact directory read
    Specialise,       ///< symbolic input dims get concrete extents (--shape, or the inputs' shapes)
    Compile,          ///< pass pipeline, then lowering to a Program (reference runs: the pipeline only)
    Inputs,           ///< the input tensors are read or generated
    Simulate,         ///< the Program runs on the simulated NPU
    Reference,        ///< the reference executor runs the model (float64, or float32)
    CompareReference, ///< the NPU's outputs (and intermediates) against the float64 reference
    CompareExpected,  ///< the outputs against expected ones from a directory (onnxruntime's)
};

/// "import", "specialise", "compile", "inputs", "simulate", "reference", "compare-reference",
/// "compare-expected".
std::string_view runStageName(RunStage stage);

/// What runs the model's numbers.
enum class RunEngine {
    Npu,       ///< compile, lower and simulate (a model file or an artifact directory)
    Reference, ///< only the reference executor, on the imported (optionally optimised) graph
};

/// What to run and which stages. The defaults are `sextant-cli run MODEL`'s.
struct RunRequest {
    /// An .onnx file, or (RunEngine::Npu) a compiled artifact directory, which skips Specialise
    /// and Compile.
    std::string model;
    RunEngine engine = RunEngine::Npu;
    /// Target and pipeline switches for Compile. With RunEngine::Reference, `optimiseReference`
    /// says whether the pipeline runs before the reference does.
    CompileOptions compile;
    bool optimiseReference = false;

    /// Concrete dims for symbolic inputs (--shape); without them the inputs' own shapes.
    ir::InputShapes shapes;
    /// With a graph whose inputs stay symbolic after Specialise: an error naming the input. Off
    /// for a reference run, whose executor accepts symbolic dims.
    bool requireStaticInputs = true;
    /// Said after the error above: how this caller's user gives shapes (the GUI's menu).
    std::string shapeHint;
    /// Input tensors (--inputs DIR); empty: see `testDataNextToModel`.
    std::string inputsDir;
    /// Without `inputsDir`: use the test data next to the model (runtime::testDataNextTo) for
    /// shapes and, when it fits, for inputs (the GUI). Off: generated inputs (the CLI).
    bool testDataNextToModel = false;

    RunMode mode = RunMode::GraphAsync; ///< how the simulated device issues Tasks
    bool checkRaces = false;            ///< the simulator's race checker (sim::SimOptions)
    /// A fault planted in the simulated run (--inject; sim::FaultPlan), after the artifact's or
    /// the compiler's checks: an Invalid error when it does not fit the Program.
    sim::FaultPlan fault;

    /// RunEngine::Npu: run the float64 reference of the model (not of the compiled graph) and
    /// compare the NPU's outputs with it (CompareReference).
    bool compareReference = false;
    /// With compareReference: also every intermediate tensor (ValueDrift, in the compiled graph's
    /// order). The simulator and the reference then keep every value until compared.
    bool perTensor = false;
    /// With perTensor: compare intermediates only when both runs' values together take at most
    /// this many bytes (f32 for the NPU's, f64 for the reference's); -1: always (the CLI).
    int64_t perTensorBudget = -1;
    /// With perTensor: the float model the quantized one was made from (ONNX path). Its float64
    /// reference run on the same inputs is compared, tensor by tensor matched by name, with the
    /// quantized model's reference run (RunResult::floatDrift): the error quantization adds,
    /// layer by layer.
    std::string floatModel;
    /// Run the reference on the graph as imported, before Specialise, so the specialisation is
    /// checked rather than trusted (the GUI); off, on the specialised graph (the CLI). A
    /// reference run of the optimised graph (optimiseReference) runs that graph either way.
    bool referenceOnUnspecialised = false;
    /// A failing reference run (or one with a different output count) is recorded in
    /// RunResult::referenceError and the run goes on, instead of failing the run (the GUI, whose
    /// other views still have their data).
    bool tolerateReferenceFailure = false;
    /// RunEngine::Reference: compute in float32 instead of float64.
    bool referenceFloat32 = false;

    /// Expected outputs (output_0.pb, ...; --expected DIR): CompareExpected compares with them.
    std::string expectedDir;
    /// Tolerances; unset, the defaults: the NPU's kNpuAtol/kNpuRtol against anything, the
    /// reference's outputAtol per output and kOutputRtol against expected outputs.
    std::optional<double> atol, rtol;
};

/// Everything a run made, stage by stage. A stage that did not run leaves its part empty.
struct RunResult {
    std::vector<RunStage> stages; ///< the stages that completed, in order

    // Import, Specialise
    /// The model as imported and specialised; null for an artifact, which carries only its
    /// compiled graph (program.graph).
    std::unique_ptr<ir::Graph> graph;
    /// With referenceOnUnspecialised and a model that was specialised: the graph as imported.
    std::unique_ptr<ir::Graph> unspecialised;
    /// The shapes Specialise applied (empty when the inputs were static and none were given).
    ir::InputShapes inputShapes;
    /// Where they came from: empty for --shape, else the test-data directory whose shapes they are.
    std::string shapesDir;
    /// The inputs Specialise bound to their values in the test data because they decide control
    /// flow (bindControlInputs); the Program refuses other values.
    std::vector<backend::InputGuard> inputGuards;

    // Compile
    passes::PipelineResult pipeline; ///< snapshots [0] = "input", one per pass; rule records
    backend::Program program;        ///< the lowered Program (or the artifact's)
    /// With CompileOptions::keepPipelineOnLoweringError: why lowering failed (then `program` is
    /// empty and nothing after Compile ran).
    std::optional<Error> loweringError;

    // Inputs, Simulate
    RunInputs inputs;
    sim::SimResult sim; ///< outputs and trace; `values` are released after CompareReference

    // Reference
    /// The graph the reference executor ran (imported, unspecialised, optimised, or the
    /// artifact's; it points into this result); null when it did not run.
    const ir::Graph* referenceGraph = nullptr;
    std::vector<ir::Tensor> reference;    ///< its outputs
    std::optional<Error> referenceError;  ///< with tolerateReferenceFailure: why it failed
    /// A float32 reference run: what float32 could not carry (the first overflow, Softmax logits
    /// past its resolution), in run order; empty for float64.
    std::vector<FloatRangeFinding> floatRange;

    // CompareReference
    std::vector<TensorComparison> referenceComparisons; ///< one per output, NPU vs reference
    bool perTensorCompared = false; ///< perTensor was asked and the values fit the budget
    int64_t intermediateBytes = 0;  ///< with perTensor: what the values take (for the budget)
    ValueDrift drift;               ///< with perTensorCompared: every intermediate tensor
    /// With perTensorCompared and RunRequest::floatModel: the quantized model's reference values
    /// against the float model's of the same name (both float64).
    std::optional<ValueDrift> floatDrift;
    /// With tolerateReferenceFailure: why the float model could not be compared (not found, other
    /// inputs, the reference executor failed on it).
    std::optional<Error> floatModelError;

    // CompareExpected
    std::vector<ir::Tensor> expected;
    std::vector<TensorComparison> expectedComparisons; ///< one per output, vs `expected`

    /// The graph whose inputs and outputs the run's tensors follow: the reference's graph when
    /// it ran, else the imported graph, else the artifact's compiled graph.
    const ir::Graph* modelGraph() const;
    /// Output i's name in the model, or "output_i".
    std::string outputName(size_t i) const;
    bool ran(RunStage stage) const;
};

/// How a RunJob reports and is stopped. All optional.
struct RunHooks {
    /// A stage starts (`detail` empty), or Compile finished pass `detail` ("lower": the
    /// lowering); `percent` of the whole job, never decreasing.
    std::function<void(RunStage stage, int percent, std::string_view detail)> progress;
    /// A stage completed; the result so far. A failed Status stops the job with that error (the
    /// CLI stops when the text it decodes from the outputs cannot be).
    std::function<Status(RunStage stage, const RunResult& result)> stageDone;
    /// Inside the Compile stage: the pass pipeline finished, lowering starts (CompileOptions::pipelineDone).
    std::function<void(const passes::PipelineResult& pipeline)> pipelineDone;
    /// Polled between stages and between passes: set, the job stops with ErrorKind::Cancelled.
    const std::atomic<bool>* cancel = nullptr;
};

/// One run of a model through the stages its request needs, on the calling thread.
class RunJob {
public:
    explicit RunJob(RunRequest request, RunHooks hooks = {});

    const RunRequest& request() const { return m_request; }
    /// The stages run() goes through, in order (a lowering error ends it after Compile).
    const std::vector<RunStage>& plan() const { return m_plan; }

    /// Runs the stages. Errors are the failing stage's (import, shapes, simulator, a file of
    /// expected outputs, ...); a cancelled job returns ErrorKind::Cancelled.
    Expected<RunResult> run();

private:
    Status runStage(RunStage stage, RunResult& result);
    Status importModel(RunResult& r);
    Status specialise(RunResult& r);
    Status compile(RunResult& r);
    Status simulate(RunResult& r);
    Status runReference(RunResult& r);
    Status compareReference(RunResult& r);
    /// RunRequest::floatModel: its float64 reference values against the quantized model's.
    Status compareFloatModel(RunResult& r);
    Status compareExpected(RunResult& r);
    int percentAt(size_t stageIndex, double within = 0.0) const;

    RunRequest m_request;
    RunHooks m_hooks;
    std::vector<RunStage> m_plan;
    bool m_artifact = false;
    size_t m_current = 0; ///< index into m_plan of the running stage
    /// With perTensor: the reference's every value by name, from Reference to CompareReference.
    std::map<std::string, ir::Tensor> m_referenceValues;
};

} // namespace sextant::runtime
