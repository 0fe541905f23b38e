#include "GraphLayoutWorker.h"

#include "FindNode.h"

#include <QtConcurrent/QtConcurrentRun>

#include <chrono>

namespace sextant::views {

namespace {

const passes::Snapshot* snapshotAt(const CompileSnapshot& snapshot, int row) {
    if (row < 0 || static_cast<size_t>(row) >= snapshot.pipeline.snapshots.size())
        return nullptr;
    return &snapshot.pipeline.snapshots[static_cast<size_t>(row)];
}

/// The snapshot's boxes and hierarchy, built from its graph; folded like `reference` (the graph
/// as imported, prepared) when there is one, so groups keep their nodes from pass to pass.
Expected<std::shared_ptr<const SnapshotGraph>> prepare(const passes::Snapshot& s, const SnapshotGraph* reference) {
    std::shared_ptr<const ir::Graph> graph = s.graph();
    if (!graph)
        return makeError(ErrorKind::Invalid, "snapshot '" + s.passId + "' has no graph", s.passId);
    auto prepared = std::make_shared<SnapshotGraph>();
    prepared->items = graphItems(*graph);
    prepared->hierarchy = reference ? foldLike(prepared->items, reference->items, reference->hierarchy)
                                    : buildHierarchy(prepared->items);
    prepared->completions = findCompletions(*graph);
    return std::shared_ptr<const SnapshotGraph>(std::move(prepared));
}

/// Level `groupId` with the groups of `expanded` open: "group id", then "+" and the open ids.
std::string levelKey(const std::string& groupId, const std::set<std::string>& expanded) {
    std::string key = groupId;
    for (const std::string& id : expanded)
        key += "+" + id;
    return key;
}

/// Places level `groupId` of `graph` (the top when no group has that id) with the groups of
/// `expanded` open in place.
Expected<std::shared_ptr<const GraphLevel>> placeShown(std::shared_ptr<const SnapshotGraph> graph,
                                                      const std::string& groupId,
                                                      const std::set<std::string>& expanded, const std::string& name) {
    const auto start = std::chrono::steady_clock::now();
    auto level = std::make_shared<GraphLevel>();
    level->group = std::max(0, graph->hierarchy.findGroup(groupId));
    level->expanded = expanded;
    level->open = openGroupsOf(graph->hierarchy, level->group, expanded);
    GraphLayoutResult placed;
    SX_TRY(placeLevel(graph->items, graph->hierarchy, level->group, expanded, name, placed));
    level->layout = std::make_shared<const GraphLayoutResult>(std::move(placed));
    level->graph = std::move(graph);
    level->millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return std::shared_ptr<const GraphLevel>(std::move(level));
}

} // namespace

GraphLayoutWorker::GraphLayoutWorker(QObject* parent) : QObject(parent) {
    qRegisterMetaType<std::shared_ptr<const GraphLevel>>();
    connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &GraphLayoutWorker::onDone);
}

GraphLayoutWorker::~GraphLayoutWorker() {
    m_pending.reset();
    if (m_cancel)
        m_cancel->store(true);
    m_watcher.waitForFinished();
}

std::shared_ptr<const GraphLevel> GraphLayoutWorker::request(std::shared_ptr<const CompileSnapshot> snapshot, int row,
                                                             const std::string& groupId,
                                                             const std::set<std::string>& expanded) {
    const passes::Snapshot* s = snapshot ? snapshotAt(*snapshot, row) : nullptr;
    if (!s || !s->state)
        return nullptr;
    const std::string levelId = levelKey(groupId, expanded);
    const std::string key = std::to_string(reinterpret_cast<uintptr_t>(s->state.get())) + "|" + levelId;
    if (auto it = m_cache.find(s->state.get()); it != m_cache.end()) {
        if (auto level = it->second.levels.find(levelId); level != it->second.levels.end()) {
            m_wanted.clear(); // nothing to announce: the caller shows it
            m_pending.reset();
            return level->second;
        }
    }
    m_wanted = key;
    Job job{std::move(snapshot), row, groupId, expanded};
    if (isBusy()) {
        m_pending = std::move(job); // the newest request runs next; the running one is told to stop
        if (m_cancel)
            m_cancel->store(true);
        return nullptr;
    }
    launch(std::move(job));
    return nullptr;
}

std::shared_ptr<const SnapshotGraph> GraphLayoutWorker::preparedGraph(const CompileSnapshot& snapshot, int row) const {
    const passes::Snapshot* s = snapshotAt(snapshot, row);
    if (!s)
        return nullptr;
    auto it = m_cache.find(s->state.get());
    return it == m_cache.end() ? nullptr : it->second.graph;
}

void GraphLayoutWorker::keepOnly(const CompileSnapshot& snapshot) {
    std::map<const passes::SnapshotState*, Entry> kept;
    for (const passes::Snapshot& s : snapshot.pipeline.snapshots)
        if (auto it = m_cache.find(s.state.get()); it != m_cache.end())
            kept.insert(m_cache.extract(it));
    m_cache = std::move(kept);
}

void GraphLayoutWorker::launch(Job job) {
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    const passes::Snapshot& s = *snapshotAt(*job.snapshot, job.row);
    std::shared_ptr<const SnapshotGraph> prepared, reference;
    if (auto it = m_cache.find(s.state.get()); it != m_cache.end())
        prepared = it->second.graph;
    const passes::Snapshot& imported = job.snapshot->pipeline.snapshots.front();
    if (auto it = m_cache.find(imported.state.get()); it != m_cache.end())
        reference = it->second.graph;
    m_history.push_back(s.passId + "|" + levelKey(job.groupId, job.expanded));
    m_watcher.setFuture(QtConcurrent::run([job = std::move(job), prepared, reference, cancel = m_cancel]() -> Outcome {
        const passes::Snapshot& snap = *snapshotAt(*job.snapshot, job.row);
        const passes::Snapshot& first = job.snapshot->pipeline.snapshots.front();
        Outcome out;
        out.state = snap.state;
        out.key = levelKey(job.groupId, job.expanded);
        std::shared_ptr<const SnapshotGraph> graph = prepared;
        std::shared_ptr<const SnapshotGraph> imported = reference;
        if (!graph && !imported && first.state != snap.state && first.graph()) {
            // Later passes fold like the graph as imported: prepare it first (kept for them all).
            if (auto built = prepare(first, nullptr); built.ok()) {
                imported = std::move(built).value();
                out.referenceState = first.state;
                out.reference = imported;
            }
        }
        if (!graph) {
            auto built = prepare(snap, first.state == snap.state ? nullptr : imported.get());
            if (!built.ok()) {
                out.error = QString::fromStdString(built.error().message);
                return out;
            }
            graph = std::move(built).value();
        }
        out.graph = graph;
        if (cancel->load()) // superseded before Graphviz started: only the preparation is kept
            return out;
        auto level = placeShown(graph, job.groupId, job.expanded, snap.passId);
        if (!level.ok())
            out.error = QString::fromStdString(level.error().message);
        else
            out.level = std::move(level).value();
        return out;
    }));
}

void GraphLayoutWorker::onDone() {
    const Outcome out = m_watcher.result();
    const std::string key = std::to_string(reinterpret_cast<uintptr_t>(out.state.get())) + "|" + out.key;
    if (out.reference) {
        Entry& entry = m_cache[out.referenceState.get()];
        entry.state = out.referenceState;
        entry.graph = out.reference;
    }
    if (out.graph) {
        Entry& entry = m_cache[out.state.get()];
        entry.state = out.state;
        entry.graph = out.graph;
        if (out.level)
            entry.levels[out.key] = out.level;
    }
    if (m_pending) {
        Job next = std::move(*m_pending);
        m_pending.reset();
        launch(std::move(next));
        return;
    }
    if (key != m_wanted)
        return;
    m_wanted.clear();
    if (!out.error.isEmpty())
        emit failed(out.error);
    else if (out.level)
        emit levelReady(out.level);
}

} // namespace sextant::views
