#include "TimelineLoad.h"

#include "profiler/RunCompare.h"

#include <algorithm>
#include <cmath>

namespace sextant::views {

namespace {

/// The run's row, its clock and cores from its metrics, as loadRun checks them.
Status readRunInfo(const profiler::ProfileReader& reader, int64_t run, TimelineRunInfo& info) {
    SX_ASSIGN(std::vector<profiler::RunRow> runs, reader.runs());
    for (const profiler::RunRow& r : runs)
        if (r.id == run)
            info.run = r;
    SX_ASSIGN(std::vector<profiler::MetricRow> metrics, reader.metrics(run));
    double cores = -1.0;
    for (const profiler::MetricRow& m : metrics) {
        if (m.key == "num_cores")
            cores = m.value;
        else if (m.key == "clock_ghz")
            info.clockGhz = m.value;
        else if (m.key == "total_cycles" && m.value >= 0.0 && std::isfinite(m.value))
            info.totalCycles = static_cast<uint64_t>(m.value);
    }
    const std::string where = info.db + ": run " + std::to_string(run);
    if (!(cores >= 1.0 && cores <= 1024.0) || cores != std::floor(cores))
        return makeError(ErrorKind::Parse,
                         where + " has num_cores " + profiler::metricText(cores) +
                             " (a target has 1..1024 cores)",
                         info.db);
    if (!(info.clockGhz > 0.0) || !std::isfinite(info.clockGhz))
        return makeError(ErrorKind::Parse,
                         where + " has clock_ghz " + profiler::metricText(info.clockGhz) +
                             " (must be above 0)",
                         info.db);
    info.numCores = static_cast<int>(cores);
    SX_ASSIGN(info.tasks, reader.taskCount(run));
    return {};
}

std::shared_ptr<const TimelineModel> modelOf(std::vector<TimelineTask> tasks, int numCores) {
    auto model = std::make_shared<TimelineModel>();
    model->setTasks(std::move(tasks), numCores);
    return model;
}

} // namespace

std::vector<int> storedCriticalPath(const std::vector<TimelineTask>& tasks, const std::vector<std::pair<int, int>>& deps) {
    if (tasks.empty())
        return {};
    // Tasks by id; ids a damaged database repeats or leaves out are not followed.
    int maxId = -1;
    for (const TimelineTask& t : tasks)
        maxId = std::max(maxId, t.task);
    if (maxId < 0 || static_cast<size_t>(maxId) > 4 * tasks.size() + 1024)
        return {};
    std::vector<int> at(static_cast<size_t>(maxId) + 1, -1);
    for (size_t i = 0; i < tasks.size(); ++i)
        if (tasks[i].task >= 0)
            at[static_cast<size_t>(tasks[i].task)] = static_cast<int>(i);
    // The Task before each on its core, by id.
    std::vector<int> before(tasks.size(), -1);
    std::vector<int> lastOnCore;
    for (size_t id = 0; id < at.size(); ++id) {
        const int i = at[id];
        if (i < 0)
            continue;
        const size_t core = static_cast<size_t>(std::max(tasks[static_cast<size_t>(i)].core, 0));
        if (core >= lastOnCore.size())
            lastOnCore.resize(core + 1, -1);
        before[static_cast<size_t>(i)] = lastOnCore[core];
        lastOnCore[core] = i;
    }
    // Dependencies by their consumer: offsets into one array.
    std::vector<size_t> first(tasks.size() + 1, 0);
    for (const auto& [src, dst] : deps)
        if (dst >= 0 && dst <= maxId && at[static_cast<size_t>(dst)] >= 0)
            ++first[static_cast<size_t>(at[static_cast<size_t>(dst)]) + 1];
    for (size_t i = 1; i < first.size(); ++i)
        first[i] += first[i - 1];
    std::vector<int> from(first.back(), -1);
    std::vector<size_t> fill(first.begin(), first.end() - 1);
    for (const auto& [src, dst] : deps)
        if (dst >= 0 && dst <= maxId && at[static_cast<size_t>(dst)] >= 0)
            from[fill[static_cast<size_t>(at[static_cast<size_t>(dst)])]++] =
                src >= 0 && src <= maxId ? at[static_cast<size_t>(src)] : -1;
    size_t cur = 0;
    for (size_t i = 1; i < tasks.size(); ++i)
        if (tasks[i].end > tasks[cur].end || (tasks[i].end == tasks[cur].end && tasks[i].task < tasks[cur].task))
            cur = i;
    std::vector<int> path{tasks[cur].task};
    std::vector<char> seen(tasks.size(), 0);
    seen[cur] = 1;
    for (;;) {
        int next = before[cur];
        for (size_t k = first[cur]; k < first[cur + 1]; ++k) {
            const int d = from[k];
            if (d >= 0 && (next < 0 || tasks[static_cast<size_t>(d)].end > tasks[static_cast<size_t>(next)].end))
                next = d;
        }
        // Stop at the first Task, and at anything that does not end before this one starts
        // (a damaged database could hold a cycle).
        if (next < 0 || seen[static_cast<size_t>(next)] || tasks[static_cast<size_t>(next)].end > tasks[cur].end)
            break;
        cur = static_cast<size_t>(next);
        seen[cur] = 1;
        path.push_back(tasks[cur].task);
    }
    std::reverse(path.begin(), path.end());
    return path;
}

Expected<std::shared_ptr<const TimelineModel>> loadTimelineRun(const std::string& db, int64_t run,
                                                               const TimelineLoadHooks& hooks,
                                                               TimelineRunInfo& info) {
    info = TimelineRunInfo{};
    info.db = db;
    SX_ASSIGN(profiler::ProfileReader reader, profiler::ProfileReader::open(db));
    SX_ASSIGN(int64_t id, run < 0 ? reader.latestRun() : Expected<int64_t>(run));
    SX_TRY(readRunInfo(reader, id, info));
    std::vector<TimelineTask> tasks;
    tasks.reserve(info.tasks);
    size_t nextPartial = 20000;
    SX_TRY(reader.forEachTask(id, [&](profiler::TaskRow& row) -> Status {
        // Cores 0..numCores-1; a host Task on the host lane after them.
        if (row.core > info.numCores || (row.core == info.numCores) != (row.unit == backend::UnitKind::Host))
            return makeError(ErrorKind::Parse,
                             db + ": run " + std::to_string(id) + " has Task " +
                                 std::to_string(row.id) + " on core " + std::to_string(row.core) +
                                 " of " + std::to_string(info.numCores),
                             db);
        tasks.push_back(timelineTask(std::move(row)));
        const size_t done = tasks.size();
        if (done % 4096 == 0) {
            if (hooks.cancelled && hooks.cancelled())
                return makeError(ErrorKind::Invalid, "cancelled");
            if (hooks.progress)
                hooks.progress(done, info.tasks);
        }
        if (done == nextPartial && done < info.tasks) {
            nextPartial *= 4;
            if (hooks.partial)
                hooks.partial(modelOf(tasks, info.numCores), info);
        }
        return {};
    }));
    if (hooks.progress)
        hooks.progress(tasks.size(), info.tasks);
    std::vector<std::pair<int, int>> deps;
    size_t seen = 0;
    SX_TRY(reader.forEachDep(id, [&](const profiler::DepRow& d) -> Status {
        deps.emplace_back(d.src, d.dst);
        if (++seen % 65536 == 0 && hooks.cancelled && hooks.cancelled())
            return makeError(ErrorKind::Invalid, "cancelled");
        return {};
    }));
    info.criticalTasks = storedCriticalPath(tasks, deps);
    return modelOf(std::move(tasks), info.numCores);
}

} // namespace sextant::views
