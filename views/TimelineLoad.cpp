#include "TimelineLoad.h"

#include "profiler/RunCompare.h"

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
        if (row.core >= info.numCores)
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
    return modelOf(std::move(tasks), info.numCores);
}

} // namespace sextant::views
