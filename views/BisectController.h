#pragma once

#include "CompileWorker.h"

#include <QObject>

#include <atomic>
#include <memory>
#include <optional>

template <typename T> class QFutureWatcher;

namespace sextant::views {

/// Tools > Bisect accuracy: searches, on a pool thread (never on the GUI thread), the first rule
/// application after which the optimised graph's outputs leave the tolerance against the imported
/// model's on the float64 reference executor (bisectModel), and keeps the bisect limit it found
/// for the next compiles. It reports on the GUI thread: status and message lines as the search
/// goes (one per probe), then finished, failed or cancelled.
class BisectController : public QObject {
    Q_OBJECT
public:
    explicit BisectController(QObject* parent = nullptr);
    /// Cancels a running search and waits for its thread to stop.
    ~BisectController() override;

    /// Starts a search on `request`'s model, level, switches and target (its bisect limit is
    /// ignored). False, and nothing started, while a search is running.
    bool start(const CompileRequest& request);
    bool isRunning() const;
    /// Compares within these instead of the run's tolerances from the next search on.
    void setTolerance(BisectTolerance tolerance) { m_tolerance = tolerance; }

    /// The bisect limit of the next compiles: the last culprit's number, -1 for none.
    int64_t limit() const { return m_limit; }
    /// Drops the limit (another level, rule set or target numbers the applications anew, so the
    /// old limit would cut elsewhere). True if there was one.
    bool clearLimit();
    /// The culprit of the last search that found one (its limit is limit()).
    const std::optional<passes::RuleApplication>& culprit() const { return m_culprit; }

public slots:
    /// Asks the running search to stop at its next check; cancelled() follows.
    void cancel();

signals:
    /// A search started (true) or ended (false, before its result is reported).
    void busyChanged(bool busy);
    /// A line for the status bar.
    void status(const QString& text);
    /// A line for the log: the search's start, each probe, the failing outputs, the verdict.
    void message(const QString& line);
    /// A search ended with `verdict` (also sent as status and message); `culprit` when it named
    /// one, which is then culprit() and whose number is limit().
    void finished(const QString& verdict, bool culprit);
    /// A search could not run, with the reason ("bisect: ...").
    void failed(const QString& error);
    void cancelled();

private:
    /// What a search hands back to the GUI thread.
    struct Done {
        std::optional<runtime::BisectOutcome> outcome;
        QString error;
        bool cancelled = false;
        int optLevel = 2;
    };
    void onDone();

    QFutureWatcher<Done>* m_watcher = nullptr;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    BisectTolerance m_tolerance;
    int64_t m_limit = -1;
    std::optional<passes::RuleApplication> m_culprit;
};

/// The status line of a search at level `optLevel` that ended with `outcome`.
QString bisectVerdict(const runtime::BisectOutcome& outcome, int optLevel);

} // namespace sextant::views
