#include "CompileWorker.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/SizeLimits.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/runtime/Compare.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/InputGenerator.h"
#include "core/runtime/ReferenceExecutor.h"
#include "core/sim/CriticalPath.h"
#include "profiler/ProfileDb.h"

#include <QtConcurrent/QtConcurrentRun>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

namespace sextant::views {

namespace {

namespace fs = std::filesystem;

/// The folder of onnx test data next to the model, if it has one: `<dir>/<stem>/input_N.pb` as
/// the samples have it, or `<dir>/test_data/<stem>/test_data_set_0/` as the ORT examples and
/// ../shared/models do.
std::optional<fs::path> testDataDir(const std::string& modelPath) {
    const fs::path model(modelPath);
    const fs::path dir = model.parent_path();
    const std::string stem = model.stem().string();
    for (const fs::path& candidate : {dir / stem, dir / "test_data" / stem / "test_data_set_0"}) {
        std::error_code ec;
        if (fs::exists(candidate / "input_0.pb", ec))
            return candidate;
    }
    return std::nullopt;
}

/// True when `inputs` fit `graph`'s (static) inputs one for one: same count and dims.
bool inputsFit(const std::vector<ir::Tensor>& inputs, const ir::Graph& graph) {
    if (inputs.size() != graph.inputs().size())
        return false;
    for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].shape() != graph.inputs()[i]->type().dims())
            return false;
    return true;
}

/// Inputs for the model: its test data when there is some and it fits the graph's input shapes,
/// otherwise deterministic generated values. `source` says which, for the log.
Expected<std::vector<ir::Tensor>> findInputs(const std::string& modelPath, const ir::Graph& graph,
                                             std::string& source) {
    if (std::optional<fs::path> dir = testDataDir(modelPath)) {
        SX_ASSIGN(auto inputs, frontend::loadTestDataSet(dir->string(), "input"));
        if (inputsFit(inputs, graph)) {
            source = dir->string();
            return inputs;
        }
        source = "generated (deterministic, seed 1): the test data in " + dir->string() +
                 " has other input shapes";
        return runtime::generateInputs(graph, 1);
    }
    source = "generated (deterministic, seed 1)";
    return runtime::generateInputs(graph, 1);
}

/// Gives a graph with symbolic input dims concrete ones: `requested`, else the shapes of the
/// model's test inputs. Returns the shapes used (empty when the inputs were static and none were
/// requested); without any, the error names the input and how to give it a shape.
Expected<ir::InputShapes> specializeForGui(const std::string& modelPath, const ir::InputShapes& requested,
                                           ir::Graph& graph, std::string& source) {
    ir::InputShapes shapes = requested;
    source = "given";
    if (shapes.empty()) {
        if (ir::symbolicInputs(graph).empty())
            return shapes;
        if (std::optional<fs::path> dir = testDataDir(modelPath)) {
            SX_ASSIGN(auto inputs, frontend::loadTestDataSet(dir->string(), "input"));
            if (inputs.size() == graph.inputs().size()) {
                for (size_t i = 0; i < inputs.size(); ++i)
                    shapes[graph.inputs()[i]->name()] = inputs[i].shape();
                source = "from the test data in " + dir->string();
            }
        }
    }
    if (shapes.empty()) {
        Status needed = ir::requireStaticInputs(graph);
        return makeError(ErrorKind::Invalid,
                         needed.error().message + "; in the GUI: File > Input shapes…, or start it with --shape",
                         needed.error().subject);
    }
    SX_TRY(ir::specializeInputs(graph, shapes));
    // The importer checked sizes with the symbolic dims; concrete ones can make tensors far larger.
    SX_TRY(frontend::checkTensorSizes(graph));
    return shapes;
}

/// Above this the GUI does not keep every intermediate for the Accuracy tab.
constexpr int64_t kPerTensorBudget = int64_t{1} << 30;

/// Bytes of every node output of `graph` at `elementBytes` each (unknown sizes count as 0).
int64_t valueBytes(const ir::Graph& graph, int64_t elementBytes) {
    int64_t total = 0;
    for (const ir::Node* n : graph.nodeOrder())
        for (const ir::Value* v : n->outputs())
            if (v->type().isStatic())
                total += v->type().numel() * elementBytes;
    return total;
}

std::string formatCycles(uint64_t cycles, const backend::Target& target) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%llu cycles (%.2f us at %.3g GHz)", static_cast<unsigned long long>(cycles),
                  target.cyclesToMicros(cycles), target.clockGhz);
    return buf;
}

Status checkCancel(const std::atomic<bool>* cancel) {
    if (cancel && cancel->load())
        return makeError(ErrorKind::Cancelled, "cancelled");
    return {};
}

/// Steps 3-5 of compileModel, for a model that was lowered: simulate, compare with the float64
/// reference, write and read back the profile database.
Status simulateAndProfile(const CompileRequest& request, const ir::Graph& graph, const ir::Graph* imported,
                          CompileSnapshot& snap, const std::atomic<bool>* cancel,
                          const std::function<void(int, const std::string&)>& report) {
    // 3. Simulate on the inputs that come with the model (or generated ones).
    report(45, "simulating");
    SX_ASSIGN(std::vector<ir::Tensor> inputs, findInputs(request.modelPath, graph, snap.inputsSource));
    snap.log.push_back("inputs: " + snap.inputsSource);
    // The per-tensor accuracy below holds every intermediate twice (the NPU's in f32, the
    // reference's in f64) until it has compared them: only when that stays reasonable.
    const int64_t intermediateBytes = valueBytes(*snap.program.graph, 4) + valueBytes(graph, 8); // graph: specialised
    const bool perTensor = intermediateBytes <= kPerTensorBudget;
    sim::SimOptions simOptions;
    simOptions.keepValues = perTensor; // released after the comparison
    SX_ASSIGN(snap.sim, sim::simulate(snap.program, inputs, simOptions));
    snap.log.push_back("simulated latency: " + formatCycles(snap.sim.totalCycles, snap.program.target));
    uint64_t busy = 0;
    for (const sim::CriticalStep& step : sim::criticalPath(snap.program, snap.sim)) {
        snap.criticalTasks.push_back(snap.program.tasks[step.task].id);
        busy += snap.sim.trace[step.task].end - snap.sim.trace[step.task].start;
    }
    snap.log.push_back("critical path: " + std::to_string(snap.criticalTasks.size()) + " of " +
                        std::to_string(snap.program.tasks.size()) + " Tasks, busy " + std::to_string(busy) + " of " +
                        std::to_string(snap.sim.totalCycles) + " cycles");
    SX_TRY(checkCancel(cancel));

    // 4. Accuracy against the float64 reference of the imported graph.
    report(58, "float64 reference");
    std::vector<std::pair<std::string, double>> metrics;
    std::map<std::string, ir::Tensor> referenceValues;
    if (auto reference = runtime::runReference(imported ? *imported : graph, inputs, ir::DType::F64,
                                               perTensor ? &referenceValues : nullptr);
        reference.ok()) {
        bool anyFailed = false;
        for (size_t i = 0; i < reference->size() && i < snap.sim.outputs.size(); ++i) {
            const std::string name = i < graph.outputs().size() ? graph.outputs()[i]->name() : std::to_string(i);
            const runtime::TensorComparison c =
                runtime::compareTensors(name, snap.sim.outputs[i], (*reference)[i], runtime::kNpuAtol,
                                        runtime::kNpuRtol); // as sextant-cli run --compare-reference
            snap.log.push_back("npu vs float64 reference: " + runtime::formatComparison(c));
            metrics.emplace_back("cosine:" + name, c.cosine);
            if (!c.pass)
                anyFailed = true;
        }
        if (const std::string note = backend::f16Note(snap.program.target, "(File ▸ Target…)");
            anyFailed && !note.empty())
            snap.log.push_back(note);
        // Every tensor the NPU computed against the reference's of the same name (the Accuracy
        // tab), as sextant-cli run --compare-reference --per-tensor does.
        if (perTensor) {
            const std::map<std::string, ir::Tensor> computed(snap.sim.values.begin(), snap.sim.values.end());
            snap.accuracy = runtime::compareValues(*snap.program.graph, computed, referenceValues,
                                                    runtime::kNpuAtol, runtime::kNpuRtol,
                                                    runtime::AtolScale::LikeOutputs);
            const runtime::ValueDrift& d = snap.accuracy;
            snap.log.push_back("per tensor: " + std::to_string(d.values.size()) + " compared, " +
                                (d.firstFailing < 0 ? std::string("all within tolerance")
                                                    : "first out of tolerance: '" +
                                                          d.values[static_cast<size_t>(d.firstFailing)].name +
                                                          "' (node '" + d.firstFailingNode + "')"));
        } else {
            snap.log.push_back("per tensor: not compared, the intermediates would take " +
                                std::to_string(intermediateBytes >> 20) +
                                " MiB (sextant-cli run --compare-reference --per-tensor compares them)");
        }
    } else {
        snap.log.push_back("float64 reference failed: " + reference.error().message);
    }
    snap.sim.values.clear(); // the intermediates were only needed for the comparison
    snap.sim.values.shrink_to_fit();
    SX_TRY(checkCancel(cancel));

    // 5. Profile database, then read it back: the timeline shows what the database holds.
    report(65, "writing profile");
    profiler::RunInfo info;
    info.model = request.modelPath;
    info.metrics = std::move(metrics);
    SX_TRY(profiler::writeProfile(request.profilePath, snap.program, snap.sim, info));
    SX_ASSIGN(profiler::ProfileReader reader, profiler::ProfileReader::open(request.profilePath));
    SX_ASSIGN(std::vector<profiler::TaskRow> rows, reader.tasks());
    SX_ASSIGN(snap.profileNodes, reader.nodes());
    const size_t numTasks = rows.size();
    snap.timeline.setTasks(timelineTasks(std::move(rows)), snap.program.target.numCores);
    snap.memory = buildMemoryMap(snap.program, snap.timeline);
    snap.log.push_back("profile: " + request.profilePath + " (" + std::to_string(numTasks) + " tasks)");
    SX_TRY(checkCancel(cancel));

    return {};
}

} // namespace

Expected<std::shared_ptr<const CompileSnapshot>> compileModel(const CompileRequest& request,
                                                              const std::atomic<bool>* cancel,
                                                              const CompileProgress& progress) {
    auto report = [&](int percent, const std::string& stage) {
        if (progress)
            progress(percent, stage);
    };
    auto snap = std::make_shared<CompileSnapshot>();
    snap->modelPath = request.modelPath;
    snap->profilePath = request.profilePath;
    if (request.profilePath.empty())
        return makeError(ErrorKind::Invalid, "no profile database path given");

    // 1. Import.
    report(0, "importing " + request.modelPath);
    SX_ASSIGN(std::unique_ptr<ir::Graph> graph, frontend::importOnnx(request.modelPath));
    snap->log.push_back("imported " + request.modelPath + ": " + std::to_string(graph->numNodes()) + " nodes");
    SX_TRY(checkCancel(cancel));

    // 1b. Concrete input shapes for a model exported with symbolic ones. The float64 reference
    // below runs the imported graph as it was, so the specialisation is checked, not trusted.
    std::unique_ptr<ir::Graph> imported;
    if (!request.shapes.empty() || !ir::symbolicInputs(*graph).empty()) {
        SX_ASSIGN(imported, graph->clone());
    }
    std::string shapesSource;
    SX_ASSIGN(snap->inputShapes, specializeForGui(request.modelPath, request.shapes, *graph, shapesSource));
    if (!snap->inputShapes.empty())
        snap->log.push_back("input shapes " + shapesSource + ": " + ir::formatShapeList(snap->inputShapes));

    // 2. Passes and lowering.
    runtime::CompileOptions options;
    options.target = request.target;
    options.pipeline = request.pipeline;
    options.keepPipelineOnLoweringError = true; // a model the NPU cannot run still shows its passes
    auto onPass = [&](int done, int total, const std::string& passId) {
        report(5 + (total > 0 ? 40 * done / total : 0), "pass " + passId);
    };
    SX_ASSIGN(runtime::CompileResult compiled, runtime::compileGraph(*graph, options, cancel, onPass));
    snap->pipeline = std::move(compiled.pipeline);
    snap->program = std::move(compiled.program);
    if (compiled.loweringError) {
        snap->loweringError = compiled.loweringError->message;
        snap->program.target = request.target;
        snap->log.push_back("not lowered for " + request.target.name + ": " + snap->loweringError +
                            " (the passes, graphs and diffs are shown; the NPU's views stay empty)");
    } else {
        snap->log.push_back("compiled for " + snap->program.target.name + ": " +
                            std::to_string(snap->program.tasks.size()) + " tasks, DRAM arena " +
                            std::to_string(snap->program.memory.dramPeak) + " B (lower bound " +
                            std::to_string(snap->program.memory.dramLowerBound) + " B)");
        for (const std::string& note : snap->program.notes)
            snap->log.push_back("note: " + note);
    }
    SX_TRY(checkCancel(cancel));
    if (snap->loweringError.empty())
        SX_TRY(simulateAndProfile(request, *graph, imported.get(), *snap, cancel, report));

    // 6. Layout every snapshot; a pass that changed nothing shares the previous layout.
    const size_t n = snap->pipeline.snapshots.size();
    for (size_t i = 0; i < n; ++i) {
        const passes::Snapshot& s = snap->pipeline.snapshots[i];
        report(72 + static_cast<int>(28 * i / std::max<size_t>(n, 1)), "layout after " + s.passId);
        if (i > 0 && !s.changed && !snap->layouts.empty()) {
            snap->layouts.push_back(snap->layouts.back());
            continue;
        }
        std::shared_ptr<const ir::Graph> graph = s.graph(); // built for the layout, then released
        if (!graph)
            return makeError(ErrorKind::Invalid, "snapshot '" + s.passId + "' has no graph", s.passId);
        SX_ASSIGN(GraphLayoutResult layout, layoutGraph(*graph));
        snap->layouts.push_back(std::make_shared<const GraphLayoutResult>(std::move(layout)));
        SX_TRY(checkCancel(cancel));
    }
    report(100, "done");
    return std::shared_ptr<const CompileSnapshot>(std::move(snap));
}

Expected<runtime::BisectOutcome> bisectModel(const CompileRequest& request, const std::atomic<bool>* cancel,
                                             const std::function<void(const runtime::BisectProbe&)>& onProbe) {
    SX_ASSIGN(std::unique_ptr<ir::Graph> graph, frontend::importOnnx(request.modelPath));
    SX_ASSIGN(std::unique_ptr<ir::Graph> imported, graph->clone());
    std::string shapesSource;
    SX_TRY(specializeForGui(request.modelPath, request.shapes, *graph, shapesSource));
    runtime::BisectBaseline baseline;
    std::string inputsSource;
    SX_ASSIGN(baseline.inputs, findInputs(request.modelPath, *graph, inputsSource));
    SX_ASSIGN(baseline.expected, runtime::runReference(*imported, baseline.inputs, ir::DType::F64));
    for (size_t i = 0; i < baseline.expected.size() && i < graph->outputs().size(); ++i)
        baseline.atols.push_back(runtime::outputAtol(*graph->outputs()[i], baseline.expected[i]));
    passes::PipelineConfig config = request.pipeline;
    config.bisectLimit = -1; // the search sets it
    return runtime::bisectRuleApplications(*graph, config, baseline, onProbe, cancel);
}

CompileWorker::CompileWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const CompileSnapshot>>();
    connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &CompileWorker::onDone);
}

CompileWorker::~CompileWorker() {
    m_pending.reset();
    if (m_cancel)
        m_cancel->store(true);
    m_watcher.waitForFinished();
}

void CompileWorker::start(CompileRequest request) {
    if (isRunning()) {
        m_pending = std::move(request);
        cancel();
        return;
    }
    launch(std::move(request));
}

void CompileWorker::cancel() {
    if (m_cancel)
        m_cancel->store(true);
}

void CompileWorker::launch(CompileRequest request) {
    if (request.profilePath.empty()) {
        const QString name = QStringLiteral("run-%1.db").arg(++m_runCounter);
        request.profilePath = m_tempDir.isValid() ? m_tempDir.filePath(name).toStdString() : name.toStdString();
    }
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    emit started(QString::fromStdString(request.modelPath));
    // The pool thread reports progress through queued calls on this object; Qt drops them if the
    // worker is gone, and the destructor waits for the thread, so `this` never dangles.
    auto cancelFlag = m_cancel;
    QPointer<CompileWorker> self(this);
    m_watcher.setFuture(QtConcurrent::run([request = std::move(request), cancelFlag, self]() -> Outcome {
        auto onProgress = [&](int percent, const std::string& stage) {
            const QString text = QString::fromStdString(stage);
            QMetaObject::invokeMethod(self, [self, percent, text] {
                if (self)
                    emit self->progress(percent, text);
            }, Qt::QueuedConnection);
        };
        Outcome out;
        auto result = compileModel(request, cancelFlag.get(), onProgress);
        if (result.ok()) {
            out.snapshot = std::move(result).value();
            return out;
        }
        out.cancelled = result.error().kind == ErrorKind::Cancelled;
        out.error = QString::fromStdString(result.error().message);
        return out;
    }));
}

void CompileWorker::onDone() {
    const Outcome out = m_watcher.result();
    if (m_pending) {
        CompileRequest next = std::move(*m_pending);
        m_pending.reset();
        launch(std::move(next));
        return; // the superseded run's result is dropped
    }
    if (out.snapshot)
        emit finished(out.snapshot);
    else if (out.cancelled)
        emit cancelled();
    else
        emit failed(out.error);
}

} // namespace sextant::views
