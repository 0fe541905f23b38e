#include "CompileWorker.h"

#include "core/runtime/Compare.h"
#include "core/runtime/Driver.h"
#include "core/sim/CriticalPath.h"
#include "profiler/ProfileDb.h"
#include "profiler/RunRecord.h"

#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>

#include <chrono>
#include <cstdio>

namespace sextant::views {

namespace {

/// Above this the GUI does not keep every intermediate for the Accuracy tab.
constexpr int64_t kPerTensorBudget = int64_t{1} << 30;

std::string formatCycles(uint64_t cycles, const backend::Target& target) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%llu cycles (%.2f us at %.3g GHz)", static_cast<unsigned long long>(cycles),
                  target.cyclesToMicros(cycles), target.clockGhz);
    return buf;
}

/// The driver's request for the GUI's walk: every stage, with the test data next to the model,
/// and the accuracy checks as sextant-cli run --compare-reference --per-tensor makes them.
runtime::RunRequest guiRunRequest(const CompileRequest& request) {
    runtime::RunRequest q;
    q.model = request.modelPath;
    q.compile.target = request.target;
    q.compile.pipeline = request.pipeline;
    q.compile.keepPipelineOnLoweringError = true; // a model the NPU cannot run still shows its passes
    q.shapes = request.shapes;
    q.shapeHint = "in the GUI: File > Input shapes…, or start it with --shape";
    q.testDataNextToModel = true;
    q.compareReference = true;
    q.perTensor = true;
    // The per-tensor accuracy holds every intermediate twice (the NPU's in f32, the reference's
    // in f64) until it has compared them: only when that stays reasonable.
    q.perTensorBudget = kPerTensorBudget;
    // The float64 reference runs the imported graph as it was, so the specialisation is checked.
    q.referenceOnUnspecialised = true;
    q.tolerateReferenceFailure = true; // the other views still have their data
    q.floatModel = request.floatModelPath;
    return q;
}

/// The log lines of a stage that completed, as the GUI's log shows them.
void logStage(runtime::RunStage stage, const runtime::RunResult& r, const CompileRequest& request,
              CompileSnapshot& snap, const std::function<void(const std::string&)>& say) {
    switch (stage) {
    case runtime::RunStage::Import:
        say("imported " + request.modelPath + ": " + std::to_string(r.graph->numNodes()) + " nodes");
        return;
    case runtime::RunStage::Specialise:
        if (!r.inputShapes.empty())
            say("input shapes " + (r.shapesDir.empty() ? std::string("given") : "from the test data in " + r.shapesDir) +
                               ": " + ir::formatShapeList(r.inputShapes));
        return;
    case runtime::RunStage::Compile:
        if (r.loweringError) {
            say("not lowered for " + request.target.name + ": " + r.loweringError->message +
                               " (the passes, graphs and diffs are shown; the NPU's views stay empty)");
            return;
        }
        say("compiled for " + r.program.target.name + ": " + std::to_string(r.program.tasks.size()) +
                           " tasks, DRAM arena " + std::to_string(r.program.memory.dramPeak) + " B (lower bound " +
                           std::to_string(r.program.memory.dramLowerBound) + " B)");
        for (const std::string& note : r.program.notes)
            say("note: " + note);
        return;
    case runtime::RunStage::Inputs:
        switch (r.inputs.origin) {
        case runtime::InputsOrigin::Directory:
            snap.inputsSource = r.inputs.dir;
            break;
        case runtime::InputsOrigin::Generated:
            snap.inputsSource = "generated (deterministic, seed 1)";
            break;
        case runtime::InputsOrigin::GeneratedShapesDiffer:
            snap.inputsSource = "generated (deterministic, seed 1): the test data in " + r.inputs.dir +
                                " has other input shapes";
            break;
        }
        say("inputs: " + snap.inputsSource);
        return;
    case runtime::RunStage::Simulate: {
        say("simulated latency: " + formatCycles(r.sim.totalCycles, r.program.target));
        const std::vector<sim::CriticalStep> path = sim::criticalPath(r.program, r.sim);
        for (const sim::CriticalStep& step : path)
            snap.criticalTasks.push_back(r.program.tasks[step.task].id);
        const uint64_t busy = sim::pathTime(r.program, r.sim, path).busy();
        say("critical path: " + std::to_string(snap.criticalTasks.size()) + " of " +
                           std::to_string(r.program.tasks.size()) + " Tasks, busy " + std::to_string(busy) + " of " +
                           std::to_string(r.sim.totalCycles) + " cycles");
        return;
    }
    case runtime::RunStage::Reference:
        return;
    case runtime::RunStage::CompareReference: {
        if (r.referenceError) {
            say("float64 reference failed: " + r.referenceError->message);
            return;
        }
        bool anyFailed = false;
        for (const runtime::TensorComparison& c : r.referenceComparisons) {
            say("npu vs float64 reference: " + runtime::formatComparison(c));
            anyFailed |= !c.pass;
        }
        if (const std::string note = backend::f16Note(r.program.target, "(File ▸ Target…)"); anyFailed && !note.empty()) {
            say(note);
            if (const std::string range = r.perTensorCompared ? runtime::f16OverflowNote(r.drift) : std::string();
                !range.empty())
                say("note: " + range);
        }
        if (!r.perTensorCompared) {
            say("per tensor: not compared, the intermediates would take " +
                               std::to_string(r.intermediateBytes >> 20) +
                               " MiB (sextant-cli run --compare-reference --per-tensor compares them)");
            return;
        }
        const runtime::ValueDrift& d = r.drift;
        say("per tensor: " + std::to_string(d.values.size()) + " compared, " +
                           (d.firstFailing < 0 ? std::string("all within tolerance")
                                               : "first out of tolerance: '" +
                                                     d.values[static_cast<size_t>(d.firstFailing)].name + "' (node '" +
                                                     d.firstFailingNode + "')"));
        if (r.floatModelError)
            say("float model " + request.floatModelPath + " not compared: " + r.floatModelError->message);
        if (r.floatDrift) {
            const std::vector<size_t> order = runtime::lowestCosineFirst(*r.floatDrift);
            std::string worst;
            if (!order.empty() && r.floatDrift->values[order[0]].problem.empty()) {
                const runtime::TensorComparison& c = r.floatDrift->values[order[0]];
                char figures[96];
                std::snprintf(figures, sizeof figures, "cosine %.6f, max_abs %.1e", c.cosine, c.maxAbs);
                worst = "; most quantization error: '" + c.name + "' (node '" + r.floatDrift->nodes[order[0]] + "', " +
                        figures + ")";
            }
            say("quantized vs float model " + request.floatModelPath + ": " +
                std::to_string(r.floatDrift->values.size()) + " tensors matched by name" + worst);
        }
        return;
    }
    case runtime::RunStage::CompareExpected:
        return;
    }
}

/// The GUI's text for the driver's progress.
std::string stageText(runtime::RunStage stage, std::string_view detail, const std::string& modelPath) {
    switch (stage) {
    case runtime::RunStage::Import:
        return "importing " + modelPath;
    case runtime::RunStage::Specialise:
        return "input shapes";
    case runtime::RunStage::Compile:
        return detail.empty() ? std::string("compiling") : "pass " + std::string(detail);
    case runtime::RunStage::Inputs:
        return "inputs";
    case runtime::RunStage::Simulate:
        return "simulating";
    case runtime::RunStage::Reference:
        return "float64 reference";
    case runtime::RunStage::CompareReference:
        return "comparing with the reference";
    case runtime::RunStage::CompareExpected:
        return "comparing with the expected outputs";
    }
    return {};
}

/// One log line per pass of a finished pipeline: its time, and whether it changed the graph.
void logPasses(const passes::PipelineResult& pipeline, const std::function<void(const std::string&)>& say) {
    for (size_t i = 1; i < pipeline.snapshots.size(); ++i) {
        const passes::Snapshot& s = pipeline.snapshots[i];
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.1f ms", s.millis);
        say("pass " + s.passId + ": " + ms + (s.changed ? ", " + std::to_string(s.numNodes()) + " nodes after it" : ", no change"));
    }
}

/// What the views can show once the pass pipeline ran, before lowering: the passes and graphs.
std::shared_ptr<const CompileSnapshot> pipelineOnly(const CompileRequest& request, const passes::PipelineResult& pipeline) {
    auto early = std::make_shared<CompileSnapshot>();
    early->modelPath = request.modelPath;
    early->pipeline = pipeline; // the snapshots' states are shared, not copied
    early->program.target = request.target;
    early->loweringError = "still lowering and simulating (the Timeline, Memory and Accuracy tabs follow)";
    early->profileError = "the run is not finished";
    return early;
}

Status checkCancel(const std::atomic<bool>* cancel) {
    if (cancel && cancel->load())
        return makeError(ErrorKind::Cancelled, "cancelled");
    return {};
}

} // namespace

Expected<std::shared_ptr<const CompileSnapshot>> compileModel(const CompileRequest& request,
                                                              const std::atomic<bool>* cancel,
                                                              const CompileProgress& progress,
                                                              const CompileEvents& events) {
    auto report = [&](int percent, const std::string& stage) {
        if (progress)
            progress(percent, stage);
    };
    auto snap = std::make_shared<CompileSnapshot>();
    snap->modelPath = request.modelPath;
    snap->profilePath = request.profilePath;
    const auto start = std::chrono::steady_clock::now();
    const std::function<void(const std::string&)> say = [&](const std::string& line) {
        snap->log.push_back(line);
        if (!events.log)
            return;
        char at[32];
        std::snprintf(at, sizeof at, "[%6.2f s] ",
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        events.log(at + line);
    };

    // 1. The driver: import → specialise → compile → inputs → simulate → reference → compare.
    runtime::RunHooks hooks;
    hooks.cancel = cancel;
    hooks.progress = [&](runtime::RunStage stage, int percent, std::string_view detail) {
        report(90 * percent / 100, stageText(stage, detail, request.modelPath));
    };
    hooks.stageDone = [&](runtime::RunStage stage, const runtime::RunResult& r) -> Status {
        logStage(stage, r, request, *snap, say);
        return {};
    };
    hooks.pipelineDone = [&](const passes::PipelineResult& pipeline) {
        logPasses(pipeline, say);
        say("lowering for " + request.target.name + " …");
        if (events.pipeline)
            events.pipeline(pipelineOnly(request, pipeline));
    };
    SX_ASSIGN(runtime::RunResult run, runtime::RunJob(guiRunRequest(request), std::move(hooks)).run());
    snap->pipeline = std::move(run.pipeline);
    snap->program = std::move(run.program);
    snap->inputShapes = std::move(run.inputShapes);
    if (run.loweringError)
        snap->loweringError = run.loweringError->message;

    if (snap->loweringError.empty()) {
        snap->sim = std::move(run.sim);
        snap->accuracy = std::move(run.drift);
        snap->floatAccuracy = std::move(run.floatDrift);
        snap->floatModelPath = request.floatModelPath;
        if (run.floatModelError)
            snap->floatModelError = run.floatModelError->message;
        // 2. What the timeline, the memory map and the Runs tab show: the Program and its trace.
        profiler::RunInfo info;
        info.model = request.modelPath;
        for (const runtime::TensorComparison& c : run.referenceComparisons)
            info.metrics.emplace_back("cosine:" + c.name, c.cosine);
        snap->run = profiler::recordRun(snap->program, snap->sim, info);
        snap->timeline.setTasks(timelineTasks(snap->run.tasks), snap->program.target.numCores);
        snap->memory = buildMemoryMap(snap->program, snap->timeline);
        snap->sram = buildSramMap(snap->program, snap->timeline);

        // 3. Keep the run in the profile database (File ▸ Save profile database…, the Runs tab of
        // a later session). The views do not read it back, so a failure only loses the file.
        if (!request.profilePath.empty()) {
            report(92, "writing profile");
            info.created = snap->run.run.created;
            profiler::WriteOptions options;
            options.onWait = [&](const std::string& message) { say("profile: " + message); };
            Expected<int64_t> written =
                profiler::writeProfile(request.profilePath, snap->program, snap->sim, info, options);
            if (written.ok()) {
                snap->run.db = request.profilePath;
                snap->run.run.id = *written;
                say("profile: " + request.profilePath + " (" + std::to_string(snap->run.tasks.size()) +
                                    " tasks)");
            } else {
                snap->profileError = written.error().message;
                say("profile: not kept: " + snap->profileError);
            }
        }
        SX_TRY(checkCancel(cancel));
    }

    report(100, "done");
    return std::shared_ptr<const CompileSnapshot>(std::move(snap));
}

Expected<runtime::BisectOutcome> bisectModel(const CompileRequest& request, const std::atomic<bool>* cancel,
                                             const std::function<void(const runtime::BisectProbe&)>& onProbe,
                                             const BisectTolerance& tolerance) {
    // The baseline: the driver's import, shapes and inputs as compileModel picks them, and the
    // float64 reference of the graph as imported.
    runtime::RunRequest q = guiRunRequest(request);
    q.engine = runtime::RunEngine::Reference;
    runtime::RunHooks hooks;
    hooks.cancel = cancel;
    SX_ASSIGN(runtime::RunResult run, runtime::RunJob(std::move(q), std::move(hooks)).run());
    runtime::BisectBaseline baseline;
    baseline.inputs = std::move(run.inputs.tensors);
    baseline.expected = std::move(run.reference);
    const ir::Graph& graph = *run.graph;
    for (size_t i = 0; i < baseline.expected.size() && i < graph.outputs().size(); ++i)
        baseline.atols.push_back(tolerance.atol ? *tolerance.atol : runtime::outputAtol(*graph.outputs()[i], baseline.expected[i]));
    baseline.rtol = tolerance.rtol.value_or(runtime::kOutputRtol);
    passes::PipelineConfig config = request.pipeline;
    config.bisectLimit = -1; // the search sets it
    return runtime::bisectRuleApplications(graph, config, baseline, onProbe, cancel);
}

QString compileSummary(const CompileSnapshot& s) {
    const QString file = QFileInfo(QString::fromStdString(s.modelPath)).fileName();
    const size_t passes = s.pipeline.snapshots.size() - 1;
    if (!s.loweringError.empty()) // the passes ran; the NPU cannot run the result
        return CompileWorker::tr("compiled %1: %2 passes; not lowered for %3: %4")
            .arg(file)
            .arg(passes)
            .arg(QString::fromStdString(s.program.target.name), QString::fromStdString(s.loweringError));
    return CompileWorker::tr("compiled %1: %2 passes, %3 Tasks, %4 cycles")
        .arg(file)
        .arg(passes)
        .arg(s.program.tasks.size())
        .arg(s.sim.totalCycles);
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
        CompileEvents events;
        events.log = [&](const std::string& line) {
            const QString text = QString::fromStdString(line);
            QMetaObject::invokeMethod(self, [self, text] {
                if (self)
                    emit self->logLine(text);
            }, Qt::QueuedConnection);
        };
        events.pipeline = [&](std::shared_ptr<const CompileSnapshot> early) {
            QMetaObject::invokeMethod(self, [self, early, cancelFlag] {
                if (self && !cancelFlag->load()) // a superseded run shows nothing
                    emit self->pipelineReady(early);
            }, Qt::QueuedConnection);
        };
        Outcome out;
        auto result = compileModel(request, cancelFlag.get(), onProgress, events);
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
