#include "CriticalPath.h"

#include <algorithm>

namespace sextant::sim {

std::vector<CriticalStep> criticalPath(const backend::Program& program, const SimResult& result, bool strict) {
    const auto& tasks = program.tasks;
    const auto& trace = result.trace;
    const size_t n = std::min(tasks.size(), trace.size());
    if (n == 0)
        return {};
    std::vector<size_t> byId(n, 0);
    std::vector<bool> known(n, false);
    for (size_t i = 0; i < n; ++i)
        if (tasks[i].id >= 0 && static_cast<size_t>(tasks[i].id) < n) {
            byId[static_cast<size_t>(tasks[i].id)] = i;
            known[static_cast<size_t>(tasks[i].id)] = true;
        }
    // The Task before each on its core: cores run their Tasks in Program::tasks order.
    std::vector<long> previousOnCore(n, -1);
    std::vector<long> lastOnCore;
    for (size_t i = 0; i < n; ++i) {
        const size_t core = static_cast<size_t>(std::max(tasks[i].core, 0));
        if (core >= lastOnCore.size())
            lastOnCore.resize(core + 1, -1);
        previousOnCore[i] = lastOnCore[core];
        lastOnCore[core] = static_cast<long>(i);
    }
    size_t cur = 0;
    for (size_t i = 1; i < n; ++i)
        if (trace[i].end > trace[cur].end)
            cur = i;
    std::vector<CriticalStep> path;
    for (size_t guard = 0; guard <= n; ++guard) {
        CriticalStep step;
        step.task = cur;
        // What arrived last before the start: a dependency's result or the core becoming free.
        uint64_t latest = 0;
        bool found = false;
        for (int d : tasks[cur].deps) {
            if (d < 0 || static_cast<size_t>(d) >= n || !known[static_cast<size_t>(d)])
                continue;
            const size_t p = byId[static_cast<size_t>(d)];
            const uint64_t arrives =
                trace[p].end + (tasks[p].core != tasks[cur].core ? program.target.eventLatencyCycles : 0);
            if (!found || arrives > latest) {
                latest = arrives;
                step.cause = CriticalStep::Cause::Dependency;
                step.after = p;
                found = true;
            }
        }
        const long before = strict ? static_cast<long>(cur) - 1 : previousOnCore[cur];
        if (before >= 0) {
            const size_t q = static_cast<size_t>(before);
            // A Task that started beside it (before it ended) follows it with no dispatch between.
            const bool beside = !strict && trace[cur].start < trace[q].end;
            const uint64_t free = trace[q].end + (beside ? 0 : program.target.dispatchCycles);
            if (!found || free > latest) {
                latest = free;
                // The Task before it on its core may also be a producer of its inputs: then the
                // data is what it waited for, the dispatch only follows.
                const bool producer = std::find(tasks[cur].deps.begin(), tasks[cur].deps.end(), tasks[q].id) !=
                                      tasks[cur].deps.end();
                step.cause = producer ? CriticalStep::Cause::Dependency : CriticalStep::Cause::CoreBusy;
                step.after = q;
                found = true;
            }
        }
        if (!found) {
            step.cause = CriticalStep::Cause::First;
            path.push_back(step);
            break;
        }
        step.gap = trace[cur].start > trace[step.after].end ? trace[cur].start - trace[step.after].end : 0;
        path.push_back(step);
        cur = step.after;
    }
    std::reverse(path.begin(), path.end());
    return path;
}

PathTime pathTime(const backend::Program& program, const SimResult& result, const std::vector<CriticalStep>& path) {
    const backend::Target& tg = program.target;
    PathTime out;
    for (const CriticalStep& s : path) {
        const backend::Task& t = program.tasks[s.task];
        const TraceRecord& r = result.trace[s.task];
        const bool crossCore = s.cause == CriticalStep::Cause::Dependency && program.tasks[s.after].core != t.core;
        // Its own time starts once what it waited for arrived: the Task before it on the path
        // ended (and, from another core, its event came), or it started, whichever is later; it
        // may have started earlier, beside the Task before it or loading its weights.
        const uint64_t arrived =
            s.cause == CriticalStep::Cause::First
                ? 0
                : result.trace[s.after].end + (crossCore ? std::min<uint64_t>(tg.eventLatencyCycles, r.end - result.trace[s.after].end) : 0);
        const uint64_t from = std::max(r.start, arrived);
        // The part of [lo, hi) on the path.
        auto onPath = [&](uint64_t lo, uint64_t hi) { return hi > std::max(lo, from) ? hi - std::max(lo, from) : 0; };
        uint64_t own = r.end - from;
        const uint64_t latency =
            t.dmaBytes > 0 ? std::min<uint64_t>(onPath(r.start, r.start + tg.dramLatencyCycles), own) : 0;
        out.latency += latency;
        own -= latency;
        const uint64_t compute = std::min({own, r.computeCycles, onPath(r.computeStart, r.computeEnd)});
        out.compute += compute;
        out.dma += own - compute;
        uint64_t gap = s.cause == CriticalStep::Cause::First ? r.start
                                                                  : from - std::min(from, result.trace[s.after].end);
        const uint64_t fixed = std::min<uint64_t>(gap, crossCore ? tg.eventLatencyCycles : tg.dispatchCycles);
        (crossCore ? out.events : out.dispatch) += fixed;
        out.waits += gap - fixed;
    }
    return out;
}

std::string causeName(CriticalStep::Cause cause) {
    switch (cause) {
    case CriticalStep::Cause::First: return "first";
    case CriticalStep::Cause::Dependency: return "dependency";
    case CriticalStep::Cause::CoreBusy: return "core busy";
    }
    return "?";
}

} // namespace sextant::sim
