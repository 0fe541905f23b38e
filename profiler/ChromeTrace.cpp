#include "ChromeTrace.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>
#include <vector>

namespace sextant::profiler {

namespace {

/// Thread ids within a core's process. The DMA engine's thread holds the DMA-only Tasks and the
/// load / store / stream phases of the others (a core runs one Task at a time, so they never
/// overlap there).
constexpr int kDmaLane = 2;

int unitLane(backend::UnitKind u) {
    switch (u) {
    case backend::UnitKind::Cube:
        return 0;
    case backend::UnitKind::Vector:
        return 1;
    case backend::UnitKind::Dma:
        return kDmaLane;
    }
    return 1;
}

/// One slice of the trace: a Task's compute on its unit, or one of its DMA phases.
struct Slice {
    int lane = 0;
    uint64_t begin = 0, end = 0;
    const char* phase = nullptr; ///< "load", "store", "stream"; nullptr for the Task itself
    uint64_t bytes = 0;
};

/// The slices of Task `t`: its DMA phases on the DMA thread (a DMA-only Task is its own DMA
/// slice), and its compute on its unit over [computeStart, computeEnd) where that is narrower
/// than the Task, so a viewer shows the transfers beside the compute they overlap or precede.
std::vector<Slice> slicesOf(const TaskRow& t) {
    std::vector<Slice> out;
    if (t.unit == backend::UnitKind::Dma) {
        out.push_back(Slice{kDmaLane, t.start, t.end, nullptr, 0});
        return out;
    }
    if (t.loadEnd > t.start)
        out.push_back(
            t.streamed ? Slice{kDmaLane, t.start, t.loadEnd, "stream", t.loadBytes + t.storeBytes}
                       : Slice{kDmaLane, t.start, t.loadEnd, "load", t.loadBytes});
    if (t.computeEnd > t.computeStart)
        out.push_back(Slice{unitLane(t.unit), t.computeStart, t.computeEnd, nullptr, 0});
    else
        out.push_back(
            Slice{unitLane(t.unit), t.start, t.end, nullptr, 0}); // no compute phase known
    if (!t.streamed && t.end > t.storeStart)
        out.push_back(Slice{kDmaLane, t.storeStart, t.end, "store", t.storeBytes});
    return out;
}

/// Microseconds at the run's clock, the unit of Chrome trace timestamps.
struct Clock {
    double ghz = 1.0;
    double micros(uint64_t cycles) const { return static_cast<double>(cycles) / (ghz * 1000.0); }
};

/// Names the lanes: a process per core, a thread per unit that ran something and one for the
/// core's DMA engine when it moved anything, sorted in that order.
void appendLaneNames(const std::vector<TaskRow>& tasks,
                     const std::vector<std::vector<Slice>>& slices, nlohmann::json& events) {
    std::set<std::pair<int, int>> lanes;
    for (size_t i = 0; i < tasks.size(); ++i)
        for (const Slice& s : slices[i])
            lanes.emplace(tasks[i].core, s.lane);
    std::set<int> cores;
    for (const auto& [core, lane] : lanes)
        cores.insert(core);
    for (int core : cores)
        events.push_back({{"ph", "M"},
                          {"name", "process_name"},
                          {"pid", core},
                          {"tid", 0},
                          {"args", {{"name", "core " + std::to_string(core)}}}});
    for (const auto& [core, lane] : lanes) {
        backend::UnitKind u = lane == 0   ? backend::UnitKind::Cube
                              : lane == 1 ? backend::UnitKind::Vector
                                          : backend::UnitKind::Dma;
        events.push_back({{"ph", "M"},
                          {"name", "thread_name"},
                          {"pid", core},
                          {"tid", lane},
                          {"args",
                           {{"name", "core " + std::to_string(core) + " " +
                                         std::string(backend::unitName(u))}}}});
        events.push_back({{"ph", "M"},
                          {"name", "thread_sort_index"},
                          {"pid", core},
                          {"tid", lane},
                          {"args", {{"sort_index", lane}}}});
    }
}

/// One complete event per slice of Task `t`.
void appendSlices(const TaskRow& t, const std::vector<Slice>& slices, const Clock& clock,
                  nlohmann::json& events) {
    for (const Slice& s : slices) {
        if (s.phase) {
            events.push_back({{"ph", "X"},
                              {"name", s.phase},
                              {"cat", "dma"},
                              {"pid", t.core},
                              {"tid", s.lane},
                              {"ts", clock.micros(s.begin)},
                              {"dur", clock.micros(s.end - s.begin)},
                              {"args",
                               {{"task", t.id},
                                {"task_name", t.name},
                                {"bytes", s.bytes},
                                {"start_cycle", s.begin},
                                {"end_cycle", s.end}}}});
            continue;
        }
        events.push_back({{"ph", "X"},
                          {"name", t.name},
                          {"cat", t.kernel},
                          {"pid", t.core},
                          {"tid", s.lane},
                          {"ts", clock.micros(s.begin)},
                          {"dur", clock.micros(s.end - s.begin)},
                          {"args",
                           {{"task", t.id},
                            {"nodes", t.nodes},
                            {"ready_cycle", t.ready},
                            {"start_cycle", t.start},
                            {"end_cycle", t.end},
                            {"compute_start_cycle", s.begin},
                            {"compute_end_cycle", s.end},
                            {"flops", t.flops},
                            {"dma_bytes", t.dmaBytes},
                            {"load_bytes", t.loadBytes},
                            {"store_bytes", t.storeBytes},
                            {"double_buffered", t.streamed}}}});
    }
}

/// A flow ("s"/"f") pair per dependency. It leaves from the slice that ends the producer and
/// arrives at the slice that begins the consumer, whichever thread each is on, so viewers bind
/// both ends.
void appendFlows(const std::vector<TaskRow>& tasks, const std::vector<std::vector<Slice>>& slices,
                 const std::vector<DepRow>& deps, const Clock& clock, nlohmann::json& events) {
    std::map<int, size_t> byId;
    for (size_t i = 0; i < tasks.size(); ++i)
        byId.emplace(tasks[i].id, i);
    auto lastSlice = [&](size_t i) {
        const Slice* best = &slices[i].front();
        for (const Slice& s : slices[i])
            if (s.end > best->end)
                best = &s;
        return best;
    };
    auto firstSlice = [&](size_t i) {
        const Slice* best = &slices[i].front();
        for (const Slice& s : slices[i])
            if (s.begin < best->begin)
                best = &s;
        return best;
    };
    int flowId = 0;
    for (const DepRow& d : deps) {
        auto src = byId.find(d.src);
        auto dst = byId.find(d.dst);
        if (src == byId.end() || dst == byId.end())
            continue;
        const Slice* from = lastSlice(src->second);
        const Slice* to = firstSlice(dst->second);
        ++flowId;
        std::string name = d.event >= 0 ? "event " + std::to_string(d.event) : "dep";
        // The start sits inside the producer's slice (just before its end) so viewers bind it
        // there.
        uint64_t at = from->end > from->begin ? from->end - 1 : from->begin;
        events.push_back({{"ph", "s"},
                          {"id", flowId},
                          {"name", name},
                          {"cat", "dep"},
                          {"pid", tasks[src->second].core},
                          {"tid", from->lane},
                          {"ts", clock.micros(at)}});
        events.push_back({{"ph", "f"},
                          {"bp", "e"},
                          {"id", flowId},
                          {"name", name},
                          {"cat", "dep"},
                          {"pid", tasks[dst->second].core},
                          {"tid", to->lane},
                          {"ts", clock.micros(to->begin)}});
    }
}

} // namespace

Expected<std::string> chromeTraceJson(const ProfileReader& reader, int64_t run) {
    SX_ASSIGN(int64_t id, run < 0 ? reader.latestRun() : Expected<int64_t>(run));
    SX_ASSIGN(std::vector<RunRow> runs, reader.runs());
    SX_ASSIGN(std::vector<TaskRow> tasks, reader.tasks(id));
    SX_ASSIGN(std::vector<DepRow> deps, reader.deps(id));
    SX_ASSIGN(std::vector<MetricRow> metrics, reader.metrics(id));
    Clock clock;
    for (const MetricRow& m : metrics)
        if (m.key == "clock_ghz" && m.value > 0)
            clock.ghz = m.value;

    std::vector<std::vector<Slice>> slices;
    slices.reserve(tasks.size());
    for (const TaskRow& t : tasks)
        slices.push_back(slicesOf(t));
    nlohmann::json events = nlohmann::json::array();
    appendLaneNames(tasks, slices, events);
    for (size_t i = 0; i < tasks.size(); ++i)
        appendSlices(tasks[i], slices[i], clock, events);
    appendFlows(tasks, slices, deps, clock, events);

    nlohmann::json doc;
    doc["traceEvents"] = std::move(events);
    doc["displayTimeUnit"] = "ns";
    for (const RunRow& r : runs)
        if (r.id == id)
            doc["otherData"] = {
                {"model", r.model}, {"target", r.target}, {"pipeline", r.pipeline}, {"run", r.id}};
    return doc.dump(1) + "\n";
}

Status exportChromeTrace(const std::string& dbPath, const std::string& jsonPath, int64_t run) {
    SX_ASSIGN(ProfileReader reader, ProfileReader::open(dbPath));
    SX_ASSIGN(std::string json, chromeTraceJson(reader, run));
    std::ofstream out(jsonPath, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError(ErrorKind::Io, "cannot write '" + jsonPath + "'");
    out << json;
    out.flush();
    if (!out)
        return makeError(ErrorKind::Io, "cannot write '" + jsonPath + "'");
    return {};
}

} // namespace sextant::profiler
