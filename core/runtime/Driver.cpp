#include "Driver.h"

#include "ReferenceExecutor.h"

#include "core/backend/Artifact.h"
#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"

#include <algorithm>
#include <filesystem>

namespace sextant::runtime {

namespace {

/// Bytes of every node output of `graph` at `elementBytes` each (unknown sizes count as 0).
int64_t valueBytes(const ir::Graph& graph, int64_t elementBytes) {
    int64_t total = 0;
    for (const ir::Node* n : graph.nodeOrder())
        for (const ir::Value* v : n->outputs())
            if (v->type().isStatic())
                total += v->type().numel() * elementBytes;
    return total;
}

/// A stage's share of the job's progress bar: compiling and simulating are the long ones.
int stageWeight(RunStage stage) {
    switch (stage) {
    case RunStage::Import:
        return 6;
    case RunStage::Specialise:
        return 1;
    case RunStage::Compile:
        return 45;
    case RunStage::Inputs:
        return 2;
    case RunStage::Simulate:
        return 25;
    case RunStage::Reference:
        return 15;
    case RunStage::CompareReference:
        return 4;
    case RunStage::CompareExpected:
        return 2;
    }
    return 1;
}

Error cancelled() { return makeError(ErrorKind::Cancelled, "cancelled"); }

} // namespace

std::string_view runStageName(RunStage stage) {
    switch (stage) {
    case RunStage::Import:
        return "import";
    case RunStage::Specialise:
        return "specialise";
    case RunStage::Compile:
        return "compile";
    case RunStage::Inputs:
        return "inputs";
    case RunStage::Simulate:
        return "simulate";
    case RunStage::Reference:
        return "reference";
    case RunStage::CompareReference:
        return "compare-reference";
    case RunStage::CompareExpected:
        return "compare-expected";
    }
    return "import";
}

const ir::Graph* RunResult::modelGraph() const {
    if (referenceGraph)
        return referenceGraph;
    if (graph)
        return graph.get();
    return program.graph.get();
}

std::string RunResult::outputName(size_t i) const {
    const ir::Graph* g = modelGraph();
    if (g && i < g->outputs().size())
        return g->outputs()[i]->name();
    return "output_" + std::to_string(i);
}

bool RunResult::ran(RunStage stage) const {
    return std::find(stages.begin(), stages.end(), stage) != stages.end();
}

RunJob::RunJob(RunRequest request, RunHooks hooks) : m_request(std::move(request)), m_hooks(std::move(hooks)) {
    const RunRequest& r = m_request;
    std::error_code ec;
    m_artifact = r.engine == RunEngine::Npu && std::filesystem::is_directory(r.model, ec);
    const bool npu = r.engine == RunEngine::Npu;
    m_plan.push_back(RunStage::Import);
    if (!m_artifact)
        m_plan.push_back(RunStage::Specialise);
    if ((npu && !m_artifact) || (!npu && r.optimiseReference))
        m_plan.push_back(RunStage::Compile);
    m_plan.push_back(RunStage::Inputs);
    if (npu)
        m_plan.push_back(RunStage::Simulate);
    if (!npu || r.compareReference)
        m_plan.push_back(RunStage::Reference);
    if (npu && r.compareReference)
        m_plan.push_back(RunStage::CompareReference);
    if (!r.expectedDir.empty())
        m_plan.push_back(RunStage::CompareExpected);
}

int RunJob::percentAt(size_t stageIndex, double within) const {
    int total = 0, before = 0;
    for (size_t i = 0; i < m_plan.size(); ++i) {
        total += stageWeight(m_plan[i]);
        if (i < stageIndex)
            before += stageWeight(m_plan[i]);
    }
    const double share = stageIndex < m_plan.size() ? stageWeight(m_plan[stageIndex]) * std::clamp(within, 0.0, 1.0) : 0.0;
    return total == 0 ? 100 : static_cast<int>(100.0 * (before + share) / total);
}

Expected<RunResult> RunJob::run() {
    RunResult result;
    for (m_current = 0; m_current < m_plan.size(); ++m_current) {
        const RunStage stage = m_plan[m_current];
        if (m_hooks.cancel && m_hooks.cancel->load())
            return cancelled();
        if (m_hooks.progress)
            m_hooks.progress(stage, percentAt(m_current), {});
        SX_TRY(runStage(stage, result));
        result.stages.push_back(stage);
        if (m_hooks.stageDone)
            SX_TRY(m_hooks.stageDone(stage, result));
        if (stage == RunStage::Compile && result.loweringError)
            break; // nothing to simulate: the pipeline's part of the result is what there is
    }
    if (m_hooks.cancel && m_hooks.cancel->load())
        return cancelled();
    return result;
}

Status RunJob::runStage(RunStage stage, RunResult& r) {
    switch (stage) {
    case RunStage::Import:
        return importModel(r);
    case RunStage::Specialise:
        return specialise(r);
    case RunStage::Compile:
        return compile(r);
    case RunStage::Inputs: {
        const ir::Graph* g = r.graph ? r.graph.get() : r.program.graph.get();
        if (!g)
            return makeError(ErrorKind::Invalid, "'" + m_request.model + "' has no graph to run");
        SX_ASSIGN(r.inputs, chooseInputs(*g, m_request.inputsDir, m_request.testDataNextToModel, m_request.model));
        return {};
    }
    case RunStage::Simulate:
        return simulate(r);
    case RunStage::Reference:
        return runReference(r);
    case RunStage::CompareReference:
        return compareReference(r);
    case RunStage::CompareExpected:
        return compareExpected(r);
    }
    return {};
}

Status RunJob::importModel(RunResult& r) {
    if (m_artifact) {
        SX_ASSIGN(r.program, backend::readArtifact(m_request.model));
        if (!r.program.graph)
            return makeError(ErrorKind::Parse, "artifact '" + m_request.model + "' has no graph");
        return {};
    }
    SX_ASSIGN(r.graph, frontend::importOnnx(m_request.model));
    return {};
}

Status RunJob::specialise(RunResult& r) {
    const RunRequest& q = m_request;
    // The reference can run the graph as it was imported, so the specialisation is checked.
    if (q.referenceOnUnspecialised && (!q.shapes.empty() || !ir::symbolicInputs(*r.graph).empty())) {
        SX_ASSIGN(r.unspecialised, r.graph->clone());
    }
    // Without --shape, a graph that must end up static takes its inputs' shapes.
    std::string dir;
    if (q.requireStaticInputs) {
        if (!q.inputsDir.empty())
            dir = q.inputsDir;
        else if (q.testDataNextToModel)
            dir = testDataNextTo(q.model).value_or("");
    }
    SX_ASSIGN(r.inputShapes, specialiseInputs(*r.graph, q.shapes, dir, q.requireStaticInputs, q.shapeHint));
    if (q.shapes.empty() && !r.inputShapes.empty())
        r.shapesDir = dir;
    // Compiling for the NPU with known inputs: the ones that decide control flow are bound to
    // their values, so the branches they choose compile for the NPU (Program::inputGuards).
    if (q.engine == RunEngine::Npu && !dir.empty()) {
        SX_ASSIGN(r.inputGuards, bindControlInputs(*r.graph, dir));
    }
    return {};
}

Status RunJob::compile(RunResult& r) {
    auto onPass = [&](int done, int total, const std::string& passId) {
        if (m_hooks.progress)
            m_hooks.progress(RunStage::Compile, percentAt(m_current, total > 0 ? double(done) / total : 0.0), passId);
    };
    if (m_request.engine == RunEngine::Reference) {
        SX_ASSIGN(r.pipeline, passes::runPipeline(*r.graph, withTargetFacts(m_request.compile.pipeline, m_request.compile.target),
                                                  m_hooks.cancel, onPass));
        return {};
    }
    CompileOptions options = m_request.compile;
    options.pipelineDone = m_hooks.pipelineDone;
    options.inputGuards = r.inputGuards;
    SX_ASSIGN(CompileResult compiled, compileGraph(*r.graph, options, m_hooks.cancel, onPass));
    r.pipeline = std::move(compiled.pipeline);
    r.program = std::move(compiled.program);
    r.loweringError = std::move(compiled.loweringError);
    if (r.loweringError)
        r.program.target = m_request.compile.target;
    return {};
}

Status RunJob::simulate(RunResult& r) {
    const RunRequest& q = m_request;
    bool keepValues = false;
    if (q.compareReference && q.perTensor) {
        // Every intermediate twice (the NPU's in f32, the reference's in f64) until compared.
        const ir::Graph& model = r.graph ? *r.graph : *r.program.graph;
        r.intermediateBytes = valueBytes(*r.program.graph, 4) + valueBytes(model, 8);
        keepValues = q.perTensorBudget < 0 || r.intermediateBytes <= q.perTensorBudget;
    }
    r.perTensorCompared = keepValues;
    SX_ASSIGN(r.sim, runProgram(r.program, r.inputs.tensors, q.mode, q.checkRaces, keepValues, q.fault));
    return {};
}

Status RunJob::runReference(RunResult& r) {
    const RunRequest& q = m_request;
    if (q.engine == RunEngine::Reference && q.optimiseReference)
        r.referenceGraph = r.pipeline.graph.get();
    else if (r.unspecialised)
        r.referenceGraph = r.unspecialised.get();
    else
        r.referenceGraph = r.graph ? r.graph.get() : r.program.graph.get();
    if (!r.referenceGraph)
        return makeError(ErrorKind::Invalid, "no graph for the reference executor");
    const ir::DType compute = q.engine == RunEngine::Reference && q.referenceFloat32 ? ir::DType::F32 : ir::DType::F64;
    FloatRangeWatch range;
    Expected<std::vector<ir::Tensor>> outputs =
        runtime::runReference(*r.referenceGraph, r.inputs.tensors, compute,
                              r.perTensorCompared ? &m_referenceValues : nullptr,
                              compute == ir::DType::F32 ? range.observer() : decltype(ir::KernelContext::onNode){});
    if (outputs.ok()) {
        r.reference = std::move(outputs).value();
        r.floatRange = range.findings();
        return {};
    }
    if (!q.tolerateReferenceFailure)
        return outputs.takeError();
    r.referenceError = outputs.takeError();
    return {};
}

Status RunJob::compareReference(RunResult& r) {
    const RunRequest& q = m_request;
    if (!r.referenceError && r.reference.size() != r.sim.outputs.size()) {
        Error e = makeError(ErrorKind::Invalid, "the reference has " + std::to_string(r.reference.size()) +
                                                    " outputs, the program " + std::to_string(r.sim.outputs.size()));
        if (!q.tolerateReferenceFailure)
            return e;
        r.referenceError = std::move(e);
    }
    if (!r.referenceError) {
        const double atol = q.atol.value_or(kNpuAtol), rtol = q.rtol.value_or(kNpuRtol);
        for (size_t i = 0; i < r.sim.outputs.size(); ++i)
            r.referenceComparisons.push_back(compareTensors(r.outputName(i), r.sim.outputs[i], r.reference[i], atol, rtol));
        if (r.perTensorCompared) {
            const std::map<std::string, ir::Tensor> computed(r.sim.values.begin(), r.sim.values.end());
            r.drift = compareValues(*r.program.graph, computed, m_referenceValues, kNpuAtol, kNpuRtol,
                                    AtolScale::LikeOutputs);
            if (!q.floatModel.empty())
                if (Status s = compareFloatModel(r); !s.ok()) {
                    if (!q.tolerateReferenceFailure)
                        return s;
                    r.floatModelError = s.error();
                }
        }
    }
    // The intermediates were only needed for the comparison: the drift holds what it found.
    r.sim.values.clear();
    r.sim.values.shrink_to_fit();
    m_referenceValues.clear();
    return {};
}

Status RunJob::compareFloatModel(RunResult& r) {
    const RunRequest& q = m_request;
    auto fail = [&](const std::string& what) {
        return makeError(ErrorKind::Invalid, "--float-model '" + q.floatModel + "': " + what);
    };
    Expected<std::unique_ptr<ir::Graph>> imported = frontend::importOnnx(q.floatModel);
    if (!imported.ok())
        return fail(imported.error().message);
    const ir::Graph& floatGraph = **imported;
    const ir::Graph& quantized = *r.referenceGraph;
    if (floatGraph.inputs().size() != quantized.inputs().size())
        return fail("it has " + std::to_string(floatGraph.inputs().size()) + " inputs, the quantized model " +
                    std::to_string(quantized.inputs().size()));
    for (size_t i = 0; i < floatGraph.inputs().size(); ++i)
        if (floatGraph.inputs()[i]->type().dtype != r.inputs.tensors[i].dtype())
            return fail("input '" + floatGraph.inputs()[i]->name() + "' is " + floatGraph.inputs()[i]->type().str() +
                        ", the quantized model's is " + std::string(ir::dtypeName(r.inputs.tensors[i].dtype())));
    std::map<std::string, ir::Tensor> floatValues;
    Expected<std::vector<ir::Tensor>> outputs =
        runtime::runReference(floatGraph, r.inputs.tensors, ir::DType::F64, &floatValues, {});
    if (!outputs.ok())
        return fail("the reference executor failed on it: " + outputs.error().message);
    // The float model's outputs are values too (a quantized model usually keeps their names).
    for (size_t i = 0; i < outputs->size() && i < floatGraph.outputs().size(); ++i)
        floatValues.emplace(floatGraph.outputs()[i]->name(), (*outputs)[i]);
    const double atol = q.atol.value_or(kNpuAtol), rtol = q.rtol.value_or(kNpuRtol);
    r.floatDrift = compareValues(quantized, m_referenceValues, floatValues, atol, rtol, AtolScale::Fixed);
    return {};
}

Status RunJob::compareExpected(RunResult& r) {
    const RunRequest& q = m_request;
    const bool npu = q.engine == RunEngine::Npu;
    const std::vector<ir::Tensor>& got = npu ? r.sim.outputs : r.reference;
    SX_ASSIGN(r.expected, frontend::loadTestDataSet(q.expectedDir, "output"));
    if (r.expected.size() != got.size())
        return makeError(ErrorKind::Invalid, "'" + q.expectedDir + "' holds " + std::to_string(r.expected.size()) +
                                                 " expected output(s) but the model has " + std::to_string(got.size()));
    // Against onnxruntime the reference is held to shared/models/INVENTORY.md's tolerances
    // (outputAtol per output), the NPU to its own (its cube unit reads f16).
    const double rtol = q.rtol.value_or(npu ? kNpuRtol : kOutputRtol);
    for (size_t i = 0; i < got.size(); ++i) {
        double atol = q.atol.value_or(kNpuAtol);
        if (!npu && !q.atol)
            atol = outputAtol(*r.referenceGraph->outputs()[i], r.expected[i]);
        r.expectedComparisons.push_back(compareTensors(r.outputName(i), got[i], r.expected[i], atol, rtol));
    }
    return {};
}

} // namespace sextant::runtime
