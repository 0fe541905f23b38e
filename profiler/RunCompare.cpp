#include "RunCompare.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace sextant::profiler {

namespace {

std::string fileName(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string withCommas(uint64_t v) {
    std::string digits = std::to_string(v);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return out;
}

std::string bytesText(double bytes) {
    char buf[48];
    if (bytes >= 1024.0 * 1024.0)
        std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
    else if (bytes >= 1024.0)
        std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
    else
        std::snprintf(buf, sizeof buf, "%.0f B", bytes);
    return buf;
}

/// "+12.3 %", "-4.0 %", "0.0 %"; "new" when the old value is 0 and the new one is not.
std::string percentChange(double from, double to) {
    if (from == 0.0)
        return to == 0.0 ? "0.0 %" : "new";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f %%", 100.0 * (to - from) / from);
    return buf;
}

std::string line(const std::string& what, const std::string& a, const std::string& b, double from, double to) {
    return what + ": " + a + " -> " + b + " (" + percentChange(from, to) + ")";
}

std::string number(double v) { return metricText(v); }

/// The metrics every run records (RunRecord.cpp's metricRows): the summary's own lines cover
/// them or they are sizes the Task lines already show.
bool standardMetric(const std::string& key) {
    static const std::set<std::string> keys = {
        "total_cycles", "clock_ghz", "num_cores",   "num_tasks", "num_events",
        "dram_peak",    "dram_lower_bound", "weight_bytes", "io_bytes"};
    return keys.count(key) != 0;
}

std::vector<MetricDelta> otherMetrics(const LoadedRun& a, const LoadedRun& b) {
    std::vector<MetricDelta> out;
    std::map<std::string, size_t> at;
    auto add = [&](const MetricRow& m, bool fromA) {
        if (standardMetric(m.key))
            return;
        auto [it, fresh] = at.emplace(m.key, out.size());
        if (fresh)
            out.push_back(MetricDelta{m.key});
        MetricDelta& d = out[it->second];
        (fromA ? d.inA : d.inB) = true;
        (fromA ? d.a : d.b) = m.value;
    };
    for (const MetricRow& m : a.metrics)
        add(m, true);
    for (const MetricRow& m : b.metrics)
        add(m, false);
    return out;
}

std::string metricLine(const MetricDelta& d) {
    const std::string a = d.inA ? metricText(d.a) : "-", b = d.inB ? metricText(d.b) : "-";
    return d.key + ": " + a + " -> " + b + (d.changed() ? " (changed)" : " (same)");
}

uint64_t duration(const TaskRow& t) { return t.end > t.start ? t.end - t.start : 0; }

} // namespace

std::string metricText(double v) {
    if (std::isnan(v))
        return "nan";
    if (std::isinf(v))
        return v > 0 ? "inf" : "-inf";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

bool MetricDelta::changed() const {
    if (inA != inB)
        return true;
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) != std::isnan(b);
    return a != b;
}

double LoadedRun::metric(const std::string& key, double fallback) const {
    for (const MetricRow& m : metrics)
        if (m.key == key)
            return m.value;
    return fallback;
}

std::string LoadedRun::label() const {
    return fileName(db) + " run " + std::to_string(run.id) + " (" + fileName(run.model) + ", " + run.target + ")";
}

Expected<LoadedRun> loadRun(const std::string& db, int64_t run) {
    SX_ASSIGN(ProfileReader reader, ProfileReader::open(db));
    LoadedRun out;
    out.db = db;
    SX_ASSIGN(std::vector<RunRow> runs, reader.runs());
    int64_t id = run;
    if (id < 0) {
        SX_ASSIGN(id, reader.latestRun());
    }
    auto it = std::find_if(runs.begin(), runs.end(), [&](const RunRow& r) { return r.id == id; });
    if (it == runs.end()) {
        std::string ids;
        for (const RunRow& r : runs)
            ids += (ids.empty() ? "" : ", ") + std::to_string(r.id);
        return makeError(ErrorKind::Invalid,
                         db + ": no run " + std::to_string(id) + " (it holds run" + (runs.size() == 1 ? " " : "s ") +
                             ids + ")",
                         db);
    }
    out.run = *it;
    SX_ASSIGN(out.tasks, reader.tasks(id));
    SX_ASSIGN(out.metrics, reader.metrics(id));
    // What the views size things by must be what a Program could have written.
    auto bad = [&](const std::string& what) {
        return makeError(ErrorKind::Parse, db + ": run " + std::to_string(id) + " " + what, db);
    };
    // Other metrics (an overflowed output's NaN cosine) are data, shown as they are; what the
    // views size things by must be finite.
    for (const MetricRow& m : out.metrics)
        if (standardMetric(m.key) && !std::isfinite(m.value))
            return bad("has metric '" + m.key + "' = " + number(m.value));
    const double cores = out.metric("num_cores", -1.0);
    if (cores < 1.0 || cores > 1024.0 || cores != std::floor(cores))
        return bad("has num_cores " + number(cores) + " (a target has 1..1024 cores)");
    if (out.metric("clock_ghz", 1.0) <= 0.0)
        return bad("has clock_ghz " + number(out.metric("clock_ghz")) + " (must be above 0)");
    for (const TaskRow& t : out.tasks)
        if (t.core >= static_cast<int>(cores))
            return bad("has Task " + std::to_string(t.id) + " on core " + std::to_string(t.core) + " of " +
                       std::to_string(static_cast<int>(cores)));
    return out;
}

std::string groupName(const std::string& taskName) {
    // "NAME[i/K]", i and K digits.
    if (taskName.empty() || taskName.back() != ']')
        return taskName;
    const size_t open = taskName.rfind('[');
    if (open == std::string::npos || open == 0)
        return taskName;
    const std::string inner = taskName.substr(open + 1, taskName.size() - open - 2);
    const size_t slash = inner.find('/');
    auto digits = [](const std::string& x) {
        return !x.empty() && std::all_of(x.begin(), x.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    };
    if (slash == std::string::npos || !digits(inner.substr(0, slash)) || !digits(inner.substr(slash + 1)))
        return taskName;
    return taskName.substr(0, open);
}

std::pair<std::string, int64_t> parseRunSpec(const std::string& spec) {
    const size_t colon = spec.find_last_of(':');
    if (colon == std::string::npos || colon + 1 >= spec.size() || colon == 0)
        return {spec, -1};
    const std::string tail = spec.substr(colon + 1);
    if (!std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; }) || tail.size() > 18)
        return {spec, -1};
    return {spec.substr(0, colon), std::stoll(tail)};
}

RunComparison compareRuns(LoadedRun a, LoadedRun b) {
    RunComparison c;
    c.a = std::move(a);
    c.b = std::move(b);

    // Fold each run's Tasks into groups (a split group's parts into one), in first-start order.
    struct Grouped {
        std::string name, kernel;
        int task = -1, parts = 0;
        uint64_t start = 0, end = 0;
    };
    auto fold = [](const LoadedRun& r) {
        std::vector<Grouped> out;
        std::map<std::string, size_t> at;
        for (const TaskRow& t : r.tasks) { // Tasks come in start order
            const std::string g = groupName(t.name);
            auto [it, fresh] = at.emplace(g, out.size());
            if (fresh)
                out.push_back(Grouped{g, t.kernel, t.id, 0, t.start, t.end});
            Grouped& x = out[it->second];
            ++x.parts;
            x.start = std::min(x.start, t.start);
            x.end = std::max(x.end, t.end);
        }
        return out;
    };
    const std::vector<Grouped> ga = fold(c.a), gb = fold(c.b);
    std::map<std::string, size_t> inB;
    for (size_t i = 0; i < gb.size(); ++i)
        inB.emplace(gb[i].name, i);
    std::vector<bool> matchedB(gb.size(), false);
    for (const Grouped& x : ga) {
        TaskDelta d;
        d.name = x.name;
        d.kernelA = x.kernel;
        d.taskA = x.task;
        d.partsA = x.parts;
        d.cyclesA = x.end - x.start;
        if (auto it = inB.find(x.name); it != inB.end() && !matchedB[it->second]) {
            const Grouped& y = gb[it->second];
            matchedB[it->second] = true;
            d.taskB = y.task;
            d.kernelB = y.kernel;
            d.partsB = y.parts;
            d.cyclesB = y.end - y.start;
        } else {
            ++c.onlyA;
        }
        c.tasks.push_back(std::move(d));
    }
    for (size_t i = 0; i < gb.size(); ++i) {
        if (matchedB[i])
            continue;
        TaskDelta d;
        d.name = gb[i].name;
        d.kernelB = gb[i].kernel;
        d.taskB = gb[i].task;
        d.partsB = gb[i].parts;
        d.cyclesB = gb[i].end - gb[i].start;
        c.tasks.push_back(std::move(d));
        ++c.onlyB;
    }

    // Summary, A -> B.
    auto latency = [](const LoadedRun& r) {
        uint64_t end = 0;
        for (const TaskRow& t : r.tasks)
            end = std::max(end, t.end);
        return static_cast<double>(end);
    };
    const double la = c.a.metric("total_cycles", latency(c.a)), lb = c.b.metric("total_cycles", latency(c.b));
    const double ghzA = c.a.metric("clock_ghz", 1.0), ghzB = c.b.metric("clock_ghz", 1.0);
    char us[96];
    std::snprintf(us, sizeof us, " (%.2f us -> %.2f us)", la / (ghzA * 1000.0), lb / (ghzB * 1000.0));
    c.summary.push_back(line("latency", withCommas(static_cast<uint64_t>(la)) + " cycles",
                             withCommas(static_cast<uint64_t>(lb)) + " cycles", la, lb) +
                        us);
    c.summary.push_back(line("Tasks", std::to_string(c.a.tasks.size()), std::to_string(c.b.tasks.size()),
                             static_cast<double>(c.a.tasks.size()), static_cast<double>(c.b.tasks.size())));
    for (backend::UnitKind unit :
         {backend::UnitKind::Cube, backend::UnitKind::Vector, backend::UnitKind::Dma, backend::UnitKind::Host}) {
        auto busy = [unit](const LoadedRun& r) {
            uint64_t sum = 0;
            for (const TaskRow& t : r.tasks)
                if (t.unit == unit)
                    sum += duration(t);
            return static_cast<double>(sum);
        };
        const double ba = busy(c.a), bb = busy(c.b);
        if (ba > 0 || bb > 0)
            c.summary.push_back(line(std::string("busy ") + std::string(backend::unitName(unit)) + " cycles",
                                     withCommas(static_cast<uint64_t>(ba)), withCommas(static_cast<uint64_t>(bb)), ba, bb));
    }
    auto cores = [](const LoadedRun& r) {
        std::set<int> used;
        for (const TaskRow& t : r.tasks)
            if (t.unit != backend::UnitKind::Host) // the host lane is not a core
                used.insert(t.core);
        return static_cast<double>(used.size());
    };
    c.summary.push_back("cores used: " + std::to_string(static_cast<int>(cores(c.a))) + " of " +
                        std::to_string(static_cast<int>(c.a.metric("num_cores"))) + " -> " +
                        std::to_string(static_cast<int>(cores(c.b))) + " of " +
                        std::to_string(static_cast<int>(c.b.metric("num_cores"))));
    for (const char* key : {"dram_peak", "dram_lower_bound"}) {
        const double ma = c.a.metric(key), mb = c.b.metric(key);
        c.summary.push_back(line(std::string(key) == "dram_peak" ? "DRAM peak" : "DRAM lower bound", bytesText(ma),
                                 bytesText(mb), ma, mb));
    }
    c.summary.push_back("groups matched by name: " + std::to_string(c.tasks.size() - c.onlyA - c.onlyB) +
                        "; only in A: " + std::to_string(c.onlyA) + ", only in B: " + std::to_string(c.onlyB));
    c.metrics = otherMetrics(c.a, c.b);
    for (const MetricDelta& d : c.metrics)
        c.summary.push_back(metricLine(d));
    return c;
}

std::string formatRunComparison(const RunComparison& c, int limit) {
    std::ostringstream out;
    out << "A: " << c.a.label() << "\n";
    out << "B: " << c.b.label() << "\n";
    for (const std::string& s : c.summary)
        out << "  " << s << "\n";
    std::vector<const TaskDelta*> order;
    for (const TaskDelta& d : c.tasks)
        order.push_back(&d);
    std::stable_sort(order.begin(), order.end(), [](const TaskDelta* x, const TaskDelta* y) {
        const uint64_t dx = static_cast<uint64_t>(std::llabs(x->delta())), dy = static_cast<uint64_t>(std::llabs(y->delta()));
        if (dx != dy)
            return dx > dy;
        return x->name < y->name;
    });
    const size_t shown = limit < 0 ? order.size() : std::min(order.size(), static_cast<size_t>(limit));
    if (shown == 0)
        return out.str();
    out << (shown == order.size() ? "groups" : "the " + std::to_string(shown) + " groups whose time changed most")
        << " (cycles from first start to last end, A -> B; xK: split across K cores):\n";
    char buf[512];
    for (size_t i = 0; i < shown; ++i) {
        const TaskDelta& d = *order[i];
        const std::string a = d.taskA < 0 ? "-" : withCommas(d.cyclesA);
        const std::string b = d.taskB < 0 ? "-" : withCommas(d.cyclesB);
        std::string change = d.taskA < 0 ? "only in B" : d.taskB < 0 ? "only in A" : percentChange(static_cast<double>(d.cyclesA), static_cast<double>(d.cyclesB));
        auto k = [](const std::string& kernel, int parts) {
            return parts > 1 ? kernel + " x" + std::to_string(parts) : kernel;
        };
        const std::string ka = k(d.kernelA, d.partsA), kb = k(d.kernelB, d.partsB);
        const std::string kernel = d.kernelA.empty() ? kb : d.kernelB.empty() || kb == ka ? ka : ka + " -> " + kb;
        std::snprintf(buf, sizeof buf, "  %-28s %-26s %14s %14s %+14" PRId64 "  %s\n", d.name.c_str(), kernel.c_str(),
                      a.c_str(), b.c_str(), d.delta(), change.c_str());
        out << buf;
    }
    return out.str();
}

} // namespace sextant::profiler
