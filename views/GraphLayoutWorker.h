#pragma once

#include "CompileSnapshot.h"
#include "GraphHierarchy.h"

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sextant::views {

/// A pipeline snapshot's graph made ready for the Graph tab: its boxes and edges (graphItems) and
/// how they fold (buildHierarchy).
struct SnapshotGraph {
    GraphLayoutResult items;
    GraphHierarchy hierarchy;
    std::vector<std::string> completions; ///< what the find box offers (findCompletions)
};

/// One level of a snapshot's graph, placed: what the Graph tab shows.
struct GraphLevel {
    std::shared_ptr<const SnapshotGraph> graph;
    int group = 0;                                ///< index into graph->hierarchy.groups
    std::set<std::string> expanded;               ///< the groups asked to be open in place
    std::vector<int> open;                        ///< those that show open (openGroupsOf)
    std::shared_ptr<const GraphLayoutResult> layout;
    double millis = 0;                            ///< wall time of the layout
};

/// Lays out the level of a snapshot's graph the Graph tab asks for, on a pool thread, one at a
/// time, and keeps every level it placed: per snapshot state (so a pass that changed nothing,
/// which shares its predecessor's state, shares its layouts) and per group. Asking for another
/// level while one is being placed supersedes it: the newest request runs next, the older ones
/// that have not started never do, and a running one's result is kept but not announced.
class GraphLayoutWorker : public QObject {
    Q_OBJECT
public:
    explicit GraphLayoutWorker(QObject* parent = nullptr);
    /// Waits for a running layout to stop.
    ~GraphLayoutWorker() override;

    /// The level `groupId` ("" is the top) of snapshot `row` of `snapshot`'s pipeline, with the
    /// groups of `expanded` open in place (placeLevel). Returns it when it is already placed;
    /// otherwise null, and levelReady (or failed) follows.
    std::shared_ptr<const GraphLevel> request(std::shared_ptr<const CompileSnapshot> snapshot, int row,
                                              const std::string& groupId,
                                              const std::set<std::string>& expanded = {});
    /// The prepared graph of snapshot `row`, when one of its levels was placed already (null
    /// otherwise): lets the Graph tab find which group holds a node without waiting.
    std::shared_ptr<const SnapshotGraph> preparedGraph(const CompileSnapshot& snapshot, int row) const;
    /// Forgets the layouts of snapshots `snapshot`'s pipeline does not have.
    void keepOnly(const CompileSnapshot& snapshot);
    bool isBusy() const { return m_watcher.isRunning(); }
    /// Every level placed so far, in order, as "pass id|group id", followed by "+" and the open
    /// groups' ids when there are any (what tests check: only the shown snapshot is laid out).
    const std::vector<std::string>& history() const { return m_history; }

signals:
    /// The level last asked for is placed.
    void levelReady(std::shared_ptr<const sextant::views::GraphLevel> level);
    /// It could not be (the snapshot has no graph, Graphviz failed).
    void failed(const QString& error);

private:
    struct Job {
        std::shared_ptr<const CompileSnapshot> snapshot;
        int row = 0;
        std::string groupId;
        std::set<std::string> expanded;
    };
    struct Outcome {
        std::shared_ptr<const passes::SnapshotState> state;
        std::shared_ptr<const SnapshotGraph> graph; ///< prepared even when the level was not placed
        std::shared_ptr<const GraphLevel> level;
        std::string key; ///< levelKey of the job
        /// The graph as imported, when it was prepared for this job (to fold the snapshot like it).
        std::shared_ptr<const passes::SnapshotState> referenceState;
        std::shared_ptr<const SnapshotGraph> reference;
        QString error;
    };
    struct Entry {
        std::shared_ptr<const passes::SnapshotState> state; ///< keeps the key's address taken
        std::shared_ptr<const SnapshotGraph> graph;
        std::map<std::string, std::shared_ptr<const GraphLevel>> levels;
    };
    void launch(Job job);
    void onDone();

    std::map<const passes::SnapshotState*, Entry> m_cache;
    QFutureWatcher<Outcome> m_watcher;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::optional<Job> m_pending;
    std::string m_wanted; ///< pass id + "|" + group id of the newest request
    std::vector<std::string> m_history;
};

} // namespace sextant::views

Q_DECLARE_METATYPE(std::shared_ptr<const sextant::views::GraphLevel>)
