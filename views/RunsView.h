#pragma once

// The Runs tab: two simulated runs one above the other (DESIGN §10, "runs can be opened from any
// .db file and two runs compared"). By default A is the previous compile and B the one shown, so
// switching a rule off and recompiling shows what that did; either side can be any run of any
// profile database instead. The two timelines share one time scale and zoom together; the table
// lists every Task with its time in both runs (profiler::compareRuns, as `sextant-cli
// compare-runs` prints it).

#include "TimelineModel.h"
#include "profiler/RunCompare.h"

#include <QAbstractTableModel>
#include <QWidget>

#include <memory>
#include <optional>

class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace sextant::views {

class TimelineView;

/// Every Task of a comparison: name, kernel (A -> B when it changed), cycles in A and B, the
/// change. Rows in the comparison's order; the view sorts (Qt::UserRole holds the numbers).
class RunCompareModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { TaskColumn, KernelColumn, CyclesAColumn, CyclesBColumn, DeltaColumn, ChangeColumn, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    void setComparison(std::shared_ptr<const profiler::RunComparison> comparison);
    const profiler::RunComparison* comparison() const { return m_comparison.get(); }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::shared_ptr<const profiler::RunComparison> m_comparison;
};

class RunsView : public QWidget {
    Q_OBJECT
public:
    enum class Side { A, B };
    Q_ENUM(Side)
    explicit RunsView(QWidget* parent = nullptr);

    /// Tells the view about a finished compile's run (profiler::recordRun of its Program and
    /// trace, in memory): unless a side was opened from a file, A becomes the previous compile and
    /// B this one. With `startOver` (another model was opened) there is no previous compile to
    /// compare with.
    void addCompile(profiler::LoadedRun run, bool startOver = false);
    /// Starts reading run `run` (-1: the newest) of database `path` on a pool thread, never on
    /// the GUI thread; runOpened(side, error) follows. Once read, the run shows on `side` from
    /// now on (until "Previous vs current compile"); a file that cannot be read leaves the side
    /// as it was and puts the reason on the tab.
    void openRun(Side side, const QString& path, int64_t run = -1);
    /// Back to comparing the previous compile with the current one.
    void followCompiles();
    /// Asks for a database and, when it holds several runs (listed on a pool thread), which one,
    /// then opens it as openRun does.
    void openRunDialog(Side side);
    /// A database is being read for a side.
    bool isLoading() const { return m_loading > 0; }

    const std::optional<profiler::LoadedRun>& run(Side side) const { return side == Side::A ? m_a : m_b; }
    /// The summary lines shown above the timelines (empty until both sides have a run).
    QString summaryText() const;
    RunCompareModel* model() const { return m_model; }
    TimelineView* timeline(Side side) const { return side == Side::A ? m_timelineA : m_timelineB; }

signals:
    /// Something the user may want logged ("opened ..." or why not).
    void message(const QString& text);
    /// openRun finished: the run is shown on `side` (`error` empty), or why it could not be read.
    void runOpened(sextant::views::RunsView::Side side, const QString& error);

private:
    void refresh();
    void highlight(const QString& node);

    void showError(const QString& why);

    std::optional<profiler::LoadedRun> m_a, m_b;
    bool m_pinnedA = false, m_pinnedB = false;
    std::optional<profiler::LoadedRun> m_previousCompile, m_currentCompile;
    /// Per side, the number of the latest openRun: a read that finishes after a newer one started
    /// (or after "Previous vs current compile") is dropped.
    int m_serialA = 0, m_serialB = 0;
    int m_loading = 0; ///< reads in flight

    QLabel* m_labelA = nullptr;
    QLabel* m_labelB = nullptr;
    QLabel* m_summary = nullptr;
    TimelineView* m_timelineA = nullptr;
    TimelineView* m_timelineB = nullptr;
    RunCompareModel* m_model = nullptr;
    QSortFilterProxyModel* m_sorted = nullptr;
    QTableView* m_table = nullptr;
    std::shared_ptr<TimelineModel> m_modelA, m_modelB;
};

} // namespace sextant::views
