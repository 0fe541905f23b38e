#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

#include <atomic>
#include <cstdint>
#include <memory>

class QLabel;
class QProgressBar;
class QPushButton;

namespace sextant::views {

class TimelineView;
class TimelineModel;
struct TimelineRunInfo;

/// The Timeline tab: a summary line (Tasks, cores used, cycles, critical path, the database) and
/// the legend with "Critical path" above the scrollable TimelineView. It shows the current
/// compile's run, or any run of any profile database (openProfile): read on a pool thread with a
/// progress bar and Cancel, its first part shown while the rest is read.
class TimelinePage : public QWidget {
    Q_OBJECT
public:
    explicit TimelinePage(QWidget* parent = nullptr);
    ~TimelinePage() override;

    /// Shows `snapshot`'s simulated Tasks and critical path, or why nothing was simulated.
    void setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot);
    QString summaryText() const;
    TimelineView* timelineView() const { return m_timeline; }
    /// Reads run `run` (-1: the newest) of the database at `path` off the GUI thread and shows
    /// it instead of the compile's run until "Show the compile" is clicked. A load still running
    /// is cancelled first.
    void openProfile(const QString& path, int64_t run = -1);
    /// Whether a database's run is shown (or being read) rather than the compile's.
    bool showsProfile() const { return m_showsProfile; }
    /// Whether a database is being read.
    bool isLoading() const { return m_loadSerial != m_doneSerial; }

public slots:
    /// Outlines the Tasks that execute `node`.
    void highlightNode(const QString& node);
    /// File ▸ Open profile database…: asks for a file and a run, then openProfile.
    void openProfileDialog();
    /// Stops the database being read (what is shown so far stays).
    void cancelLoad();
    /// Shows the current compile's run again.
    void showCompile();

signals:
    /// A database's run is read (`error` empty) or could not be (the reason, or "cancelled").
    void profileLoaded(const QString& error);
    /// The user clicked a Task; `node` is the first IR node of the final graph it executes.
    void taskActivated(const QString& node);

private:
    /// Shows m_snapshot (the compile's run).
    void showSnapshot();
    /// Shows a database's run, whole or its first `info.tasks` read so far.
    void showProfileModel(std::shared_ptr<const TimelineModel> model, const TimelineRunInfo& info,
                          bool complete);
    void finishLoad(int serial, const QString& error);

    TimelineView* m_timeline = nullptr;
    QLabel* m_summary = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    QPushButton* m_back = nullptr;
    std::shared_ptr<const CompileSnapshot> m_snapshot;
    bool m_showsProfile = false;
    int m_loadSerial = 0; ///< the load in flight (or the last one)
    int m_doneSerial = 0; ///< the last load that ended
    std::shared_ptr<std::atomic<bool>> m_cancelFlag;
};

} // namespace sextant::views
