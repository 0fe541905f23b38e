#include "ChromeTrace.h"

#include "core/ir/FileWrite.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <set>
#include <sstream>
#include <vector>

namespace sextant::profiler {

namespace {

/// Thread ids within a core's process. The DMA thread holds the DMA-only Tasks and the load and
/// stream phases of the others, the store thread their stores: a Task loads while the one before
/// it on its core still stores (sim::timeBeside), so one thread would hold overlapping slices.
/// Within each thread slices never overlap.
constexpr int kDmaLane = 2;
constexpr int kStoreLane = 3;
constexpr int kHostLane = 4; ///< a host Task's thread, in the host lane's own process

int unitLane(backend::UnitKind u) {
    switch (u) {
    case backend::UnitKind::Cube:
        return 0;
    case backend::UnitKind::Vector:
        return 1;
    case backend::UnitKind::Dma:
        return kDmaLane;
    case backend::UnitKind::Host:
        return kHostLane;
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

/// The slices of Task `t`: its loads (or stream) on the DMA thread and its stores on the store
/// thread (a DMA-only Task is its own DMA slice), and its compute on its unit over
/// [computeStart, computeEnd), so a viewer shows the transfers beside the compute they overlap
/// or precede.
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
    // A Task that computed nothing still has its (empty) slice on its unit, for its flow arrows;
    // the whole Task there would overlap the compute of the Task beside it.
    out.push_back(Slice{unitLane(t.unit), t.computeStart, std::max(t.computeStart, t.computeEnd), nullptr, 0});
    if (!t.streamed && t.end > t.storeStart)
        out.push_back(Slice{kStoreLane, t.storeStart, t.end, "store", t.storeBytes});
    return out;
}

/// Microseconds at the run's clock, the unit of Chrome trace timestamps.
struct Clock {
    double ghz = 1.0;
    double micros(uint64_t cycles) const { return static_cast<double>(cycles) / (ghz * 1000.0); }
};

/// doc.dump(1), with a byte that is not UTF-8 (a name from a damaged or foreign database) written
/// as U+FFFD instead of throwing.
std::string jsonText(const nlohmann::json& doc) {
    return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Writes the trace's events one at a time, each as doc.dump(1) would have placed it inside the
/// "traceEvents" array (two levels deep), so the file is the same bytes the whole document
/// dumped at once was, without ever holding more than one event.
class EventSink {
public:
    explicit EventSink(std::ostream& out) : m_out(out) {}
    void operator()(const nlohmann::json& event) {
        m_out << (m_first ? "\n  " : ",\n  ");
        m_first = false;
        indented(m_out, jsonText(event), "  ");
    }
    bool empty() const { return m_first; }
    /// `text` with `pad` after each newline (JSON strings hold none: they are escaped).
    static void indented(std::ostream& out, const std::string& text, const char* pad) {
        size_t from = 0;
        for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
            out.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from));
            out << pad;
            from = nl + 1;
        }
        out.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
    }

private:
    std::ostream& m_out;
    bool m_first = true;
};

/// Names the lanes: a process per core, a thread per unit that ran something and one for the
/// core's DMA engine when it moved anything, sorted in that order.
void appendLaneNames(const std::set<std::pair<int, int>>& lanes, EventSink& events) {
    std::set<int> cores, hosts;
    for (const auto& [core, lane] : lanes) {
        cores.insert(core);
        if (lane == kHostLane)
            hosts.insert(core);
    }
    for (int core : cores)
        events({{"ph", "M"},
                {"name", "process_name"},
                {"pid", core},
                {"tid", 0},
                {"args", {{"name", hosts.count(core) ? std::string("host") : "core " + std::to_string(core)}}}});
    for (const auto& [core, lane] : lanes) {
        backend::UnitKind u = lane == 0   ? backend::UnitKind::Cube
                              : lane == 1 ? backend::UnitKind::Vector
                              : lane == kHostLane ? backend::UnitKind::Host
                                          : backend::UnitKind::Dma;
        // The host's own "DMA" threads are what its steps read and write of the NPU's DRAM.
        const bool host = hosts.count(core) != 0;
        const std::string name = lane == kHostLane    ? std::string("host")
                                 : host && lane == kStoreLane ? std::string("host writes to DRAM")
                                 : host                       ? std::string("host reads from DRAM")
                                 : lane == kStoreLane ? "core " + std::to_string(core) + " dma store"
                                                      : "core " + std::to_string(core) + " " + std::string(backend::unitName(u));
        events({{"ph", "M"},
                {"name", "thread_name"},
                {"pid", core},
                {"tid", lane},
                {"args", {{"name", name}}}});
        events({{"ph", "M"},
                {"name", "thread_sort_index"},
                {"pid", core},
                {"tid", lane},
                {"args", {{"sort_index", host && lane == kHostLane ? 0 : lane}}}});
    }
}

/// One complete event per slice of Task `t`.
void appendSlices(const TaskRow& t, const std::vector<Slice>& slices, const Clock& clock,
                  EventSink& events) {
    for (const Slice& s : slices) {
        if (s.phase) {
            events({{"ph", "X"},
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
        events({{"ph", "X"},
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

/// Where a Task's flow arrows attach: a few numbers per Task, all the export keeps of a run.
/// They leave from the slice that ends the producer (just before its end, so viewers bind them
/// there) and arrive at the slice that begins the consumer, whichever thread each is on.
struct FlowEnds {
    int id = 0, core = 0;
    int fromLane = 0, toLane = 0;
    uint64_t fromAt = 0, toAt = 0;
};

FlowEnds flowEnds(const TaskRow& t, const std::vector<Slice>& slices) {
    const Slice* last = &slices.front();
    const Slice* first = &slices.front();
    for (const Slice& s : slices) {
        if (s.end > last->end)
            last = &s;
        if (s.begin < first->begin)
            first = &s;
    }
    const uint64_t at = last->end > last->begin ? last->end - 1 : last->begin;
    return FlowEnds{t.id, t.core, last->lane, first->lane, at, first->begin};
}

/// The run's FlowEnds by Task id; of Tasks sharing an id (a damaged database), the first.
class FlowIndex {
public:
    void add(const FlowEnds& f) { m_ends.push_back(f); }
    void seal() {
        std::stable_sort(m_ends.begin(), m_ends.end(),
                         [](const FlowEnds& a, const FlowEnds& b) { return a.id < b.id; });
    }
    const FlowEnds* find(int id) const {
        auto it = std::lower_bound(m_ends.begin(), m_ends.end(), id,
                                   [](const FlowEnds& f, int v) { return f.id < v; });
        return it != m_ends.end() && it->id == id ? &*it : nullptr;
    }

private:
    std::vector<FlowEnds> m_ends;
};

/// A flow ("s"/"f") pair per dependency, read one at a time.
Status appendFlows(const ProfileReader& reader, int64_t run, const FlowIndex& index,
                   const Clock& clock, EventSink& events) {
    int flowId = 0;
    return reader.forEachDep(run, [&](const DepRow& d) -> Status {
        const FlowEnds* from = index.find(d.src);
        const FlowEnds* to = index.find(d.dst);
        if (!from || !to)
            return {};
        ++flowId;
        const std::string name = d.event >= 0 ? "event " + std::to_string(d.event) : "dep";
        events({{"ph", "s"},
                {"id", flowId},
                {"name", name},
                {"cat", "dep"},
                {"pid", from->core},
                {"tid", from->fromLane},
                {"ts", clock.micros(from->fromAt)}});
        events({{"ph", "f"},
                {"bp", "e"},
                {"id", flowId},
                {"name", name},
                {"cat", "dep"},
                {"pid", to->core},
                {"tid", to->toLane},
                {"ts", clock.micros(to->toAt)}});
        return {};
    });
}

/// The document's head: the keys before "traceEvents" as doc.dump(1) sorted and wrote them.
Status writeHead(const ProfileReader& reader, int64_t id, std::ostream& out) {
    SX_ASSIGN(std::vector<RunRow> runs, reader.runs());
    out << "{\n \"displayTimeUnit\": \"ns\",\n";
    for (const RunRow& r : runs) {
        if (r.id != id)
            continue;
        const nlohmann::json other = {
            {"model", r.model}, {"target", r.target}, {"pipeline", r.pipeline}, {"run", r.id}};
        out << " \"otherData\": ";
        EventSink::indented(out, jsonText(other), " ");
        out << ",\n";
    }
    out << " \"traceEvents\": [";
    return {};
}

/// Streams the run's trace to `out`: a first pass over the Tasks finds the lanes (named before
/// any slice) and where each Task's flows attach, a second writes the slices as it reads them,
/// then the dependencies become flows as they are read.
Status writeTrace(const ProfileReader& reader, int64_t run, std::ostream& out) {
    SX_ASSIGN(int64_t id, run < 0 ? reader.latestRun() : Expected<int64_t>(run));
    SX_ASSIGN(std::vector<MetricRow> metrics, reader.metrics(id));
    Clock clock;
    for (const MetricRow& m : metrics)
        if (m.key == "clock_ghz" && m.value > 0)
            clock.ghz = m.value;
    std::set<std::pair<int, int>> lanes;
    FlowIndex flows;
    SX_TRY(reader.forEachTask(id, [&](TaskRow& t) {
        const std::vector<Slice> slices = slicesOf(t);
        for (const Slice& s : slices)
            lanes.emplace(t.core, s.lane);
        flows.add(flowEnds(t, slices));
        return Status{};
    }));
    flows.seal();
    SX_TRY(writeHead(reader, id, out));
    EventSink events(out);
    appendLaneNames(lanes, events);
    SX_TRY(reader.forEachTask(id, [&](TaskRow& t) {
        appendSlices(t, slicesOf(t), clock, events);
        return Status{};
    }));
    SX_TRY(appendFlows(reader, id, flows, clock, events));
    out << (events.empty() ? "]\n}\n" : "\n ]\n}\n");
    return {};
}

} // namespace

Expected<std::string> chromeTraceJson(const ProfileReader& reader, int64_t run) {
    std::ostringstream out;
    SX_TRY(writeTrace(reader, run, out));
    return out.str();
}

Status exportChromeTrace(const std::string& dbPath, const std::string& jsonPath, int64_t run) {
    SX_ASSIGN(ProfileReader reader, ProfileReader::open(dbPath));
    // Streamed to a temporary beside the file: a failed export (a damaged row, a full disk)
    // leaves no half a trace, and an earlier trace of that name as it was.
    SX_ASSIGN(PendingFile out, PendingFile::open(jsonPath, "trace"));
    SX_TRY(writeTrace(reader, run, out.stream()));
    return out.commit();
}

} // namespace sextant::profiler
