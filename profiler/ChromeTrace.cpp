#include "ChromeTrace.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <set>

namespace sextant::profiler {

namespace {

int unitLane(backend::UnitKind u) {
    switch (u) {
    case backend::UnitKind::Cube:
        return 0;
    case backend::UnitKind::Vector:
        return 1;
    case backend::UnitKind::Dma:
        return 2;
    }
    return 1;
}

} // namespace

Expected<std::string> chromeTraceJson(const ProfileReader& reader, int64_t run) {
    SX_ASSIGN(int64_t id, run < 0 ? reader.latestRun() : Expected<int64_t>(run));
    SX_ASSIGN(std::vector<RunRow> runs, reader.runs());
    SX_ASSIGN(std::vector<TaskRow> tasks, reader.tasks(id));
    SX_ASSIGN(std::vector<DepRow> deps, reader.deps(id));
    SX_ASSIGN(std::vector<MetricRow> metrics, reader.metrics(id));
    double clockGhz = 1.0;
    for (const MetricRow& m : metrics)
        if (m.key == "clock_ghz" && m.value > 0)
            clockGhz = m.value;
    auto micros = [clockGhz](uint64_t cycles) {
        return static_cast<double>(cycles) / (clockGhz * 1000.0);
    };

    nlohmann::json events = nlohmann::json::array();
    // Name the lanes: a process per core, a thread per unit that ran something.
    std::set<std::pair<int, int>> lanes;
    for (const TaskRow& t : tasks)
        lanes.emplace(t.core, unitLane(t.unit));
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
                          {"args", {{"name", std::string(backend::unitName(u))}}}});
    }

    std::map<int, const TaskRow*> byId;
    for (const TaskRow& t : tasks) {
        byId.emplace(t.id, &t);
        events.push_back({{"ph", "X"},
                          {"name", t.name},
                          {"cat", t.kernel},
                          {"pid", t.core},
                          {"tid", unitLane(t.unit)},
                          {"ts", micros(t.start)},
                          {"dur", micros(t.end - t.start)},
                          {"args",
                           {{"task", t.id},
                            {"nodes", t.nodes},
                            {"ready_cycle", t.ready},
                            {"start_cycle", t.start},
                            {"end_cycle", t.end},
                            {"flops", t.flops},
                            {"dma_bytes", t.dmaBytes}}}});
    }
    int flowId = 0;
    for (const DepRow& d : deps) {
        auto src = byId.find(d.src);
        auto dst = byId.find(d.dst);
        if (src == byId.end() || dst == byId.end())
            continue;
        const TaskRow& s = *src->second;
        const TaskRow& t = *dst->second;
        ++flowId;
        std::string name = d.event >= 0 ? "event " + std::to_string(d.event) : "dep";
        // The start sits inside the producer's slice (just before its end) so viewers bind it
        // there.
        uint64_t at = s.end > s.start ? s.end - 1 : s.start;
        events.push_back({{"ph", "s"},
                          {"id", flowId},
                          {"name", name},
                          {"cat", "dep"},
                          {"pid", s.core},
                          {"tid", unitLane(s.unit)},
                          {"ts", micros(at)}});
        events.push_back({{"ph", "f"},
                          {"bp", "e"},
                          {"id", flowId},
                          {"name", name},
                          {"cat", "dep"},
                          {"pid", t.core},
                          {"tid", unitLane(t.unit)},
                          {"ts", micros(t.start)}});
    }

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
