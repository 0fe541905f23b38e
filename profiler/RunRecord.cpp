#include "RunRecord.h"

#include <algorithm>
#include <chrono>

namespace sextant::profiler {

namespace {

std::string joinComma(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v)
        s += (s.empty() ? "" : ",") + x;
    return s;
}

} // namespace

std::vector<TaskRow> taskRows(const backend::Program& program, const sim::SimResult& result) {
    std::vector<TaskRow> rows;
    rows.reserve(program.tasks.size());
    for (size_t i = 0; i < program.tasks.size(); ++i) {
        const backend::Task& t = program.tasks[i];
        sim::TraceRecord rec;
        if (i < result.trace.size())
            rec = result.trace[i];
        TaskRow row;
        row.id = t.id;
        row.name = t.name;
        row.kernel = t.kernel;
        row.core = t.core;
        row.unit = t.unit;
        row.start = rec.start;
        row.end = rec.end;
        row.ready = rec.ready;
        row.flops = t.flops;
        row.dmaBytes = t.dmaBytes;
        row.nodes = t.nodes;
        rows.push_back(std::move(row));
    }
    std::stable_sort(rows.begin(), rows.end(), [](const TaskRow& a, const TaskRow& b) {
        return a.start != b.start ? a.start < b.start : a.id < b.id;
    });
    return rows;
}

std::vector<MetricRow> metricRows(const backend::Program& p, const sim::SimResult& result, const RunInfo& info) {
    std::vector<MetricRow> rows = {
        {"total_cycles", static_cast<double>(result.totalCycles)},
        {"clock_ghz", p.target.clockGhz},
        {"num_cores", static_cast<double>(p.target.numCores)},
        {"num_tasks", static_cast<double>(p.tasks.size())},
        {"num_events", static_cast<double>(p.events.size())},
        {"dram_peak", static_cast<double>(p.memory.dramPeak)},
        {"dram_lower_bound", static_cast<double>(p.memory.dramLowerBound)},
        {"weight_bytes", static_cast<double>(p.memory.weightBytes)},
        {"io_bytes", static_cast<double>(p.memory.ioBytes)},
    };
    for (const auto& [key, value] : info.metrics)
        rows.push_back({key, value});
    return rows;
}

LoadedRun recordRun(const backend::Program& program, const sim::SimResult& result, const RunInfo& info,
                    const std::string& db, int64_t runId) {
    LoadedRun run;
    run.db = db;
    run.run.id = runId;
    run.run.model = info.model.empty() ? program.modelName : info.model;
    run.run.target = program.target.name;
    run.run.pipeline = info.pipeline.empty() ? joinComma(program.pipeline) : info.pipeline;
    run.run.created = info.created ? *info.created
                                   : std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count();
    run.tasks = taskRows(program, result);
    run.metrics = metricRows(program, result, info);
    return run;
}

} // namespace sextant::profiler
