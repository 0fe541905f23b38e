#pragma once

#include "CompileSnapshot.h"
#include "core/ir/Error.h"
#include "core/runtime/Bisect.h"

#include <QFutureWatcher>
#include <QObject>
#include <QTemporaryDir>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace sextant::views {

/// Progress callback of compileModel: overall percent (0..100) and the stage being worked on.
using CompileProgress = std::function<void(int percent, const std::string& stage)>;

/// What compileModel tells while it works, besides its progress.
struct CompileEvents {
    /// Each log line as soon as the stage it reports on ended, prefixed with the time since the
    /// start ("[  1.25 s] "); CompileSnapshot::log gets the same lines without it.
    std::function<void(const std::string& line)> log;
    /// The pass pipeline ran, lowering starts: a snapshot holding the pipeline only (no Program;
    /// loweringError says why), so the passes, rules and graphs can be shown meanwhile.
    std::function<void(std::shared_ptr<const CompileSnapshot> early)> pipeline;
};

/// The whole walk for the GUI, on the calling thread: the driver's stages (runtime::RunJob:
/// import → specialise → pass pipeline (snapshots) → lower → simulate → float64 reference →
/// comparison), then the timeline, memory map and Runs-tab run built from its result, keeping the
/// run in the profile database at request.profilePath (a failure is logged, the results stay). No
/// graph is laid out here: the Graph tab lays out what it shows (GraphLayoutWorker). `cancel` is
/// polled between stages (and inside the pipeline); a cancelled run returns ErrorKind::Cancelled.
Expected<std::shared_ptr<const CompileSnapshot>> compileModel(const CompileRequest& request,
                                                              const std::atomic<bool>* cancel = nullptr,
                                                              const CompileProgress& progress = {},
                                                              const CompileEvents& events = {});

/// Tolerances of a bisection's comparison, |got - expected| <= atol + rtol*|expected|, as
/// sextant-cli bisect --atol / --rtol take them; unset: as sextant-cli run --reference (rtol 1e-3,
/// runtime::outputAtol per output).
struct BisectTolerance {
    std::optional<double> atol;
    std::optional<double> rtol;
};

/// The GUI's accuracy bisection (core/runtime/Bisect.h) on `request`'s model, level and switches:
/// imports and specialises it as compileModel does (a reference-only RunJob), runs the imported graph on the float64
/// reference executor as the baseline (within `tolerance`), then searches the bisect limit. Runs
/// on the calling thread; `onProbe` hears each probe, `cancel` stops it.
Expected<runtime::BisectOutcome> bisectModel(const CompileRequest& request, const std::atomic<bool>* cancel = nullptr,
                                             const std::function<void(const runtime::BisectProbe&)>& onProbe = {},
                                             const BisectTolerance& tolerance = {});

/// The status line of a finished compile: "compiled residual_cnn.onnx: 9 passes, 16 Tasks, 41234
/// cycles", or why the final graph was not lowered.
QString compileSummary(const CompileSnapshot& snapshot);

/// Runs compileModel on a pool thread (never on the GUI thread) and reports back on the GUI
/// thread with signals carrying a complete snapshot. One run at a time: starting while a run is
/// going cancels it and starts the new one as soon as it has stopped.
class CompileWorker : public QObject {
    Q_OBJECT
public:
    explicit CompileWorker(QObject* parent = nullptr);
    /// Cancels a running compile and waits for its thread to stop.
    ~CompileWorker() override;

    /// Starts compiling. If `request.profilePath` is empty, the database goes to a temporary
    /// folder owned by the worker (removed when it is destroyed).
    void start(CompileRequest request);
    bool isRunning() const { return m_watcher.isRunning(); }

public slots:
    /// Asks the running compile to stop at its next check; cancelled() follows.
    void cancel();

signals:
    void started(const QString& modelPath);
    void progress(int percent, const QString& stage);
    /// A line for the log, as soon as the stage it reports on ended (CompileEvents::log).
    void logLine(const QString& line);
    /// The pass pipeline of the running compile is done; lowering and simulation go on
    /// (CompileEvents::pipeline). finished() follows with the whole snapshot.
    void pipelineReady(std::shared_ptr<const sextant::views::CompileSnapshot> early);
    /// A run completed; the snapshot is immutable and may be kept by any view.
    void finished(std::shared_ptr<const sextant::views::CompileSnapshot> snapshot);
    /// A run failed with a one-line error (bad model, unsupported op, simulator error, ...).
    void failed(const QString& error);
    void cancelled();

private:
    struct Outcome {
        std::shared_ptr<const CompileSnapshot> snapshot;
        QString error;
        bool cancelled = false;
    };
    void launch(CompileRequest request);
    void onDone();

    QFutureWatcher<Outcome> m_watcher;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::optional<CompileRequest> m_pending;
    QTemporaryDir m_tempDir;
    int m_runCounter = 0;
};

} // namespace sextant::views

Q_DECLARE_METATYPE(std::shared_ptr<const sextant::views::CompileSnapshot>)
