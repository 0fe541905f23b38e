#include "TimelineModel.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace sextant::views {

void TimelineModel::setTasks(std::vector<TimelineTask> tasks, int numCores) {
    m_tasks = std::move(tasks);
    m_lanes.clear();
    m_laneOfTask.assign(m_tasks.size(), -1);
    m_totalCycles = 0;

    std::map<std::pair<int, int>, std::vector<int>> byLane; // ordered: core, then unit
    for (size_t i = 0; i < m_tasks.size(); ++i) {
        const TimelineTask& t = m_tasks[i];
        byLane[{t.core, static_cast<int>(t.unit)}].push_back(static_cast<int>(i));
        m_totalCycles = std::max(m_totalCycles, t.end);
    }
    std::set<int> busyCores;
    for (const auto& [key, items] : byLane)
        busyCores.insert(key.first);
    for (int core = 0; core < numCores; ++core)
        if (!busyCores.count(core))
            byLane[{core, -1}]; // an idle core: one empty lane
    for (auto& [key, items] : byLane) {
        std::sort(items.begin(), items.end(), [&](int a, int b) {
            const TimelineTask& ta = m_tasks[a];
            const TimelineTask& tb = m_tasks[b];
            return ta.start != tb.start ? ta.start < tb.start : ta.task < tb.task;
        });
        TimelineLane lane;
        lane.core = key.first;
        lane.unit = key.second < 0 ? backend::UnitKind::Vector : static_cast<backend::UnitKind>(key.second);
        lane.label = "core " + std::to_string(key.first) + " \u00b7 " + (key.second < 0 ? "idle" : std::string(backend::unitName(lane.unit)));
        lane.items = std::move(items);
        uint64_t maxEnd = 0;
        for (int i : lane.items) {
            maxEnd = std::max(maxEnd, m_tasks[i].end);
            lane.endPrefixMax.push_back(maxEnd);
        }
        for (int i : lane.items)
            m_laneOfTask[i] = static_cast<int>(m_lanes.size());
        m_lanes.push_back(std::move(lane));
    }
}

int TimelineModel::laneOf(int taskIndex) const {
    if (taskIndex < 0 || taskIndex >= static_cast<int>(m_laneOfTask.size()))
        return -1;
    return m_laneOfTask[taskIndex];
}

std::vector<int> TimelineModel::tasksOfNode(const std::string& node) const {
    std::vector<int> out;
    for (size_t i = 0; i < m_tasks.size(); ++i) {
        const auto& nodes = m_tasks[i].nodes;
        if (std::find(nodes.begin(), nodes.end(), node) != nodes.end())
            out.push_back(static_cast<int>(i));
    }
    std::sort(out.begin(), out.end(), [&](int a, int b) { return m_tasks[a].task < m_tasks[b].task; });
    return out;
}

int TimelineModel::indexOfTask(int taskId) const {
    for (size_t i = 0; i < m_tasks.size(); ++i)
        if (m_tasks[i].task == taskId)
            return static_cast<int>(i);
    return -1;
}

std::vector<TimelineTask> timelineTasks(std::vector<profiler::TaskRow> rows) {
    std::vector<TimelineTask> tasks;
    tasks.reserve(rows.size());
    for (profiler::TaskRow& r : rows) {
        TimelineTask t;
        t.task = r.id;
        t.core = r.core;
        t.unit = r.unit;
        t.ready = r.ready;
        t.start = r.start;
        t.end = r.end;
        t.name = std::move(r.name);
        t.kernel = std::move(r.kernel);
        t.nodes = std::move(r.nodes);
        tasks.push_back(std::move(t));
    }
    return tasks;
}

std::vector<TimelineDrawItem> TimelineModel::buildDrawList(const TimelineCoords& coords,
                                                           double widthPx, double mergePx,
                                                           const std::vector<uint8_t>& pinned) const {
    return collect(coords, widthPx, mergePx, false, pinned, {});
}

std::vector<TimelineDrawItem> TimelineModel::buildSpanList(const TimelineCoords& coords,
                                                           double widthPx,
                                                           const std::vector<uint8_t>& marked,
                                                           double gapPx) const {
    if (marked.empty())
        return {};
    return collect(coords, widthPx, gapPx, true, {}, marked);
}

std::vector<TimelineDrawItem> TimelineModel::collect(const TimelineCoords& coords, double widthPx,
                                                     double mergePx, bool foldWide,
                                                     const std::vector<uint8_t>& pinned,
                                                     const std::vector<uint8_t>& only) const {
    auto flagged = [](const std::vector<uint8_t>& flags, int i) {
        return static_cast<size_t>(i) < flags.size() && flags[static_cast<size_t>(i)] != 0;
    };
    std::vector<TimelineDrawItem> out;
    const double tLeft = coords.mapXToTime(0.0);
    const double tRight = coords.mapXToTime(widthPx);
    for (size_t laneIndex = 0; laneIndex < m_lanes.size(); ++laneIndex) {
        const TimelineLane& lane = m_lanes[laneIndex];
        const auto& items = lane.items;
        // Binary-search the first Task that may end inside the view (the running maximum of ends
        // is monotonic even if Tasks of a lane overlapped) instead of scanning from the start.
        const auto firstEnd = std::lower_bound(
            lane.endPrefixMax.begin(), lane.endPrefixMax.end(), tLeft,
            [](uint64_t e, double t) { return static_cast<double>(e) < t; });
        auto first = items.begin() + (firstEnd - lane.endPrefixMax.begin());
        bool pending = false;
        TimelineDrawItem merged;
        auto flush = [&] {
            if (!pending)
                return;
            if (merged.count > 1)
                merged.task = -1;
            merged.x1 = std::max(merged.x1, merged.x0 + 1.0);
            out.push_back(merged);
            pending = false;
        };
        for (auto it = first; it != items.end(); ++it) {
            const TimelineTask& t = m_tasks[*it];
            if (static_cast<double>(t.start) > tRight)
                break;
            if (static_cast<double>(t.end) < tLeft)
                continue;
            if (!only.empty() && !flagged(only, *it))
                continue;
            const double x0 = coords.mapTimeToX(static_cast<double>(t.start));
            const double x1 = coords.mapTimeToX(static_cast<double>(t.end));
            if ((!foldWide && x1 - x0 >= mergePx) || flagged(pinned, *it)) {
                flush();
                out.push_back(TimelineDrawItem{static_cast<int>(laneIndex), x0, std::max(x1, x0 + 1.0), 1, *it});
                continue;
            }
            if (pending && x0 - merged.x1 < mergePx) {
                merged.x1 = std::max(merged.x1, x1);
                ++merged.count;
                continue;
            }
            flush();
            merged = TimelineDrawItem{static_cast<int>(laneIndex), x0, x1, 1, *it};
            pending = true;
        }
        flush();
    }
    return out;
}

} // namespace sextant::views
