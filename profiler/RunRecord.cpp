#include "RunRecord.h"

#include "core/backend/Tiling.h"

#include <algorithm>
#include <chrono>
#include <map>

namespace sextant::profiler {

namespace {

std::string joinComma(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v)
        s += (s.empty() ? "" : ",") + x;
    return s;
}

/// Per Task (Program::tasks order), the bytes its DMA loads and stores, split as the simulator
/// splits its DMA time: a Program without transfers (an artifact older than format 5) counts
/// all of a Task's DMA bytes as loads. A host Task's are what it reads and writes of DRAM
/// (backend::hostTransfer), as the simulator times them.
std::vector<std::pair<uint64_t, uint64_t>> loadStoreBytes(const backend::Program& program) {
    std::vector<std::pair<uint64_t, uint64_t>> bytes(program.tasks.size());
    std::map<int, size_t> byId;
    for (size_t i = 0; i < program.tasks.size(); ++i) {
        byId.emplace(program.tasks[i].id, i);
        if (program.transfers.empty())
            bytes[i].first = program.tasks[i].dmaBytes;
    }
    for (const backend::Transfer& tr : program.transfers)
        if (auto it = byId.find(tr.task); it != byId.end())
            (tr.load ? bytes[it->second].first : bytes[it->second].second) += tr.bytes;
    std::map<int, uint64_t> sizes;
    for (size_t i = 0; i < program.tasks.size(); ++i) {
        if (program.tasks[i].unit != backend::UnitKind::Host)
            continue;
        if (sizes.empty())
            for (const backend::Buffer& b : program.buffers)
                sizes.emplace(b.id, b.size);
        const backend::HostTransfer moved = backend::hostTransfer(program.tasks[i], [&sizes](int id) -> uint64_t {
            auto it = sizes.find(id);
            return it == sizes.end() ? 0 : it->second;
        });
        bytes[i] = {moved.read, moved.written};
    }
    return bytes;
}

} // namespace

std::vector<TaskRow> taskRows(const backend::Program& program, const sim::SimResult& result) {
    std::vector<TaskRow> rows;
    rows.reserve(program.tasks.size());
    const std::vector<std::pair<uint64_t, uint64_t>> dma = loadStoreBytes(program);
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
        row.loadEnd = rec.loadEnd;
        row.computeStart = rec.computeStart;
        row.computeEnd = rec.computeEnd;
        row.storeStart = rec.storeStart;
        // The simulator's condition for overlapping DMA with compute (sim::timeTask).
        row.streamed = t.tiling.doubleBuffered && t.tiling.numTiles > 1;
        row.loadBytes = dma[i].first;
        row.storeBytes = dma[i].second;
        rows.push_back(std::move(row));
    }
    std::stable_sort(rows.begin(), rows.end(), [](const TaskRow& a, const TaskRow& b) {
        return a.start != b.start ? a.start < b.start : a.id < b.id;
    });
    return rows;
}

std::vector<SramBufferRow> sramBufferRows(const backend::Program& program) {
    std::vector<SramBufferRow> rows;
    rows.reserve(program.sramBuffers.size());
    for (const backend::SramBuffer& b : program.sramBuffers)
        rows.push_back(SramBufferRow{b.id, b.core, b.offset, b.size, b.role, b.pair, b.task,
                                     b.buffer, b.firstTask, b.lastTask});
    std::stable_sort(rows.begin(), rows.end(),
                     [](const SramBufferRow& a, const SramBufferRow& b) { return a.id < b.id; });
    return rows;
}

std::vector<SramStepRow> sramOccupancy(const backend::Program& program,
                                       const sim::SimResult& result) {
    std::map<int, const sim::TraceRecord*> byId;
    for (size_t i = 0; i < program.tasks.size() && i < result.trace.size(); ++i)
        byId.emplace(program.tasks[i].id, &result.trace[i]);
    // (core, cycle) -> change in live bytes; ordered, so the rows come out by core then cycle.
    std::map<std::pair<int, uint64_t>, int64_t> delta;
    for (const backend::SramBuffer& b : program.sramBuffers) {
        auto first = byId.find(b.firstTask);
        auto last = byId.find(b.lastTask);
        if (first == byId.end() || last == byId.end() || b.size == 0)
            continue; // a lifetime naming no simulated Task: nothing to place in time
        const uint64_t from = first->second->start;
        const uint64_t to = std::max(last->second->end, first->second->end);
        if (to <= from)
            continue;
        delta[{b.core, from}] += static_cast<int64_t>(b.size);
        delta[{b.core, to}] -= static_cast<int64_t>(b.size);
    }
    std::vector<SramStepRow> rows;
    int core = -1;
    int64_t live = 0;
    for (const auto& [key, change] : delta) {
        if (key.first != core) {
            core = key.first;
            live = 0;
        }
        if (change == 0)
            continue; // one buffer ends where another of the same size begins
        live += change;
        rows.push_back(SramStepRow{core, key.second, static_cast<uint64_t>(live)});
    }
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
