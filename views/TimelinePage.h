#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTimer;
class QToolButton;

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

    /// The find box: Tasks whose name, kernel or IR node contains the text are outlined (the
    /// search runs on a pool thread), Enter or F3 steps to the next one, Shift+F3 to the one
    /// before, zooming to it. `findText` sets the box's text (as typing would).
    void findText(const QString& text);
    /// Matches of the find box's text in the Tasks shown, in the order they start.
    const std::vector<int>& findMatches() const { return m_matches; }
    /// Whether a search of the find box's text is still to come or running.
    bool isFinding() const;
    /// What the find box says of its matches ("3 of 128", "no Task matches").
    QString findStatus() const;

public slots:
    /// Outlines the Tasks that execute `node`.
    void highlightNode(const QString& node);
    /// Steps the find box to the next (or previous) match and zooms to it.
    void findNext();
    void findPrevious();
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
    /// Searches the Tasks shown for the find box's text on a pool thread (a search still running
    /// is cancelled); the matches replace the outline when they come.
    void startFind();
    void stepFind(int direction);
    void updateFindStatus();

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
    QLineEdit* m_find = nullptr;
    QToolButton* m_findPrev = nullptr;
    QToolButton* m_findNext = nullptr;
    QLabel* m_findCount = nullptr;
    QTimer* m_findTimer = nullptr;   ///< waits for typing to pause
    std::vector<int> m_matches;
    int m_matchPos = -1;             ///< index into m_matches of the focused Task
    int m_findSerial = 0, m_findDone = 0;
    bool m_findOutlines = false;     ///< the view's outline is the matches' (not a node's)
    int m_pendingStep = 0;           ///< Enter pressed before the matches came: step then
    std::shared_ptr<std::atomic<bool>> m_findCancel;
};

} // namespace sextant::views
