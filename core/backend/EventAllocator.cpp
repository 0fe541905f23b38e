#include "EventAllocator.h"

#include "Reachability.h"

#include <algorithm>
#include <map>
#include <queue>

namespace sextant::backend {

namespace {

std::string taskLabel(const Program& p, int id) { return "task " + std::to_string(id) + " '" + p.tasks[id].name + "'"; }

} // namespace

std::vector<std::vector<int>> combinedPreds(const Program& program) {
    std::vector<std::vector<int>> preds(program.tasks.size());
    std::map<int, int> lastOnCore;
    for (const Task& t : program.tasks) {
        std::vector<int>& p = preds[static_cast<size_t>(t.id)];
        p = t.deps;
        auto it = lastOnCore.find(t.core);
        if (it != lastOnCore.end())
            p.push_back(it->second);
        std::sort(p.begin(), p.end());
        p.erase(std::unique(p.begin(), p.end()), p.end());
        lastOnCore[t.core] = t.id;
    }
    return preds;
}

Status allocateEvents(Program& program) {
    program.events.clear();
    for (Task& t : program.tasks) {
        t.waitEvents.clear();
        t.recordEvents.clear();
    }
    // (producer, consumer core) -> event id; tasks are visited in program order, so the first
    // consumer on a core creates the event and later ones are ordered after it by the core.
    std::map<std::pair<int, int>, int> byKey;
    for (Task& t : program.tasks)
        for (int d : t.deps) {
            const Task& producer = program.tasks[static_cast<size_t>(d)];
            if (producer.core == t.core)
                continue;
            auto key = std::make_pair(d, t.core);
            if (byKey.count(key))
                continue;
            Event e;
            e.id = static_cast<int>(program.events.size());
            e.producerTask = d;
            e.core = producer.core;
            e.consumerTasks = {t.id};
            byKey[key] = e.id;
            t.waitEvents.push_back(e.id);
            program.events.push_back(std::move(e));
        }
    // Record lists in event id order per producer.
    for (const Event& e : program.events)
        program.tasks[static_cast<size_t>(e.producerTask)].recordEvents.push_back(e.id);

    Reachability order(combinedPreds(program));
    if (order.tooLarge())
        return makeError(ErrorKind::Unsupported, "cannot allocate events: " + order.why());
    if (!order.valid())
        return makeError(ErrorKind::Verify, "task order is not topological; cannot allocate events");
    // Linear scan per recording core, in record order (producer position, then event id).
    std::vector<int> byRecord(program.events.size());
    for (size_t i = 0; i < byRecord.size(); ++i)
        byRecord[i] = static_cast<int>(i);
    std::sort(byRecord.begin(), byRecord.end(), [&](int a, int b) {
        return std::tie(program.events[a].producerTask, a) < std::tie(program.events[b].producerTask, b);
    });
    const int slots = program.target.eventSlotsPerCore;
    std::map<int, std::vector<int>> slotHolder; // core -> event id in each slot (-1 free)
    for (int eid : byRecord) {
        Event& e = program.events[static_cast<size_t>(eid)];
        std::vector<int>& holders = slotHolder[e.core];
        if (holders.empty())
            holders.assign(static_cast<size_t>(slots), -1);
        int chosen = -1;
        for (int s = 0; s < slots && chosen < 0; ++s) {
            int prev = holders[static_cast<size_t>(s)];
            if (prev < 0) {
                chosen = s;
                break;
            }
            bool done = true;
            for (int c : program.events[static_cast<size_t>(prev)].consumerTasks)
                if (!order.before(c, e.producerTask))
                    done = false;
            if (done)
                chosen = s;
        }
        if (chosen < 0)
            return makeError(ErrorKind::Unsupported,
                             "core " + std::to_string(e.core) + " needs more than " + std::to_string(slots) +
                                 " event slots at once (at " + taskLabel(program, e.producerTask) + ")",
                             program.tasks[static_cast<size_t>(e.producerTask)].name);
        holders[static_cast<size_t>(chosen)] = eid;
        e.slot = chosen;
    }
    return {};
}

namespace {

bool validTask(const Program& p, int id) { return id >= 0 && static_cast<size_t>(id) < p.tasks.size(); }

/// Tasks are numbered by position, run on one of the target's cores and depend only on earlier
/// tasks.
Status checkTasks(const Program& p) {
    for (size_t i = 0; i < p.tasks.size(); ++i)
        if (p.tasks[i].id != static_cast<int>(i))
            return makeError(ErrorKind::Verify, "task at position " + std::to_string(i) + " has id " +
                                                    std::to_string(p.tasks[i].id));
    for (const Task& t : p.tasks) {
        if (!onItsLane(t, p.target))
            return makeError(ErrorKind::Verify, taskLabel(p, t.id) + " (" + std::string(unitName(t.unit)) +
                                                    ") is on core " + std::to_string(t.core) + " outside the target's " +
                                                    std::to_string(p.target.numCores) +
                                                    (t.unit == UnitKind::Host ? ": a host Task runs on the host lane, " +
                                                                                    std::to_string(hostLane(p.target))
                                                                              : std::string()));
        for (int d : t.deps)
            if (!validTask(p, d) || d >= t.id)
                return makeError(ErrorKind::Verify, taskLabel(p, t.id) + " depends on task " + std::to_string(d) +
                                                        " which does not come before it");
    }
    return {};
}

/// Event `i` is numbered by position, recorded once by its producer on the producer's core in a
/// slot the core has, and waited on by tasks of other cores that list it.
Status checkEvent(const Program& p, size_t i) {
    const Event& e = p.events[i];
    std::string label = "event " + std::to_string(i);
    if (e.id != static_cast<int>(i))
        return makeError(ErrorKind::Verify, label + " has id " + std::to_string(e.id));
    if (!validTask(p, e.producerTask))
        return makeError(ErrorKind::Verify, label + " has no recording task");
    const Task& prod = p.tasks[static_cast<size_t>(e.producerTask)];
    if (e.core != prod.core)
        return makeError(ErrorKind::Verify, label + " is on core " + std::to_string(e.core) + " but its producer " +
                                                taskLabel(p, prod.id) + " runs on core " + std::to_string(prod.core));
    if (e.slot < 0 || e.slot >= p.target.eventSlotsPerCore)
        return makeError(ErrorKind::Verify, label + " uses slot " + std::to_string(e.slot) + " outside 0.." +
                                                std::to_string(p.target.eventSlotsPerCore - 1));
    if (std::count(prod.recordEvents.begin(), prod.recordEvents.end(), e.id) != 1)
        return makeError(ErrorKind::Verify, label + " is not recorded by its producer " + taskLabel(p, prod.id));
    if (e.consumerTasks.empty())
        return makeError(ErrorKind::Verify, label + " has no waiting task");
    for (int c : e.consumerTasks) {
        if (!validTask(p, c))
            return makeError(ErrorKind::Verify, label + " is waited on by unknown task " + std::to_string(c));
        const Task& ct = p.tasks[static_cast<size_t>(c)];
        if (ct.core == prod.core)
            return makeError(ErrorKind::Verify, label + " connects tasks on the same core " + std::to_string(ct.core));
        if (std::count(ct.waitEvents.begin(), ct.waitEvents.end(), e.id) != 1)
            return makeError(ErrorKind::Verify, label + " lists " + taskLabel(p, c) + " as a consumer that does not wait on it");
    }
    return {};
}

/// Each task waits only on events that list it as a consumer and records only its own events.
Status checkTaskEventLists(const Program& p) {
    for (const Task& t : p.tasks) {
        for (int e : t.waitEvents) {
            if (e < 0 || static_cast<size_t>(e) >= p.events.size())
                return makeError(ErrorKind::Verify, taskLabel(p, t.id) + " waits on event " + std::to_string(e) +
                                                        " that nobody records");
            const auto& cs = p.events[static_cast<size_t>(e)].consumerTasks;
            if (std::find(cs.begin(), cs.end(), t.id) == cs.end())
                return makeError(ErrorKind::Verify, taskLabel(p, t.id) + " waits on event " + std::to_string(e) +
                                                        " that does not list it as a consumer");
        }
        for (int e : t.recordEvents)
            if (e < 0 || static_cast<size_t>(e) >= p.events.size() || p.events[static_cast<size_t>(e)].producerTask != t.id)
                return makeError(ErrorKind::Verify, taskLabel(p, t.id) + " records event " + std::to_string(e) +
                                                        " that it does not produce");
    }
    return {};
}

/// Acyclic: Kahn over deps + per-core order (`preds`, from combinedPreds) + event edges.
Status checkAcyclic(const Program& p, const std::vector<std::vector<int>>& preds) {
    const size_t nt = p.tasks.size();
    std::vector<std::vector<int>> succ(nt);
    std::vector<int> indeg(nt, 0);
    for (size_t b = 0; b < nt; ++b)
        for (int a : preds[b]) {
            succ[static_cast<size_t>(a)].push_back(static_cast<int>(b));
            ++indeg[b];
        }
    for (const Event& e : p.events)
        for (int c : e.consumerTasks) {
            succ[static_cast<size_t>(e.producerTask)].push_back(c);
            ++indeg[static_cast<size_t>(c)];
        }
    std::queue<int> ready;
    for (size_t i = 0; i < nt; ++i)
        if (indeg[i] == 0)
            ready.push(static_cast<int>(i));
    size_t seen = 0;
    while (!ready.empty()) {
        int a = ready.front();
        ready.pop();
        ++seen;
        for (int b : succ[static_cast<size_t>(a)])
            if (--indeg[static_cast<size_t>(b)] == 0)
                ready.push(b);
    }
    if (seen != nt)
        return makeError(ErrorKind::Verify, "the event graph has a cycle (tasks, per-core order and events)");
    return {};
}

/// Every cross-core dep is covered: an event from the producer waited on by a task on the
/// consumer's core that comes no later than the consumer.
Status checkCrossCoreDeps(const Program& p, const Reachability& order) {
    for (const Task& t : p.tasks)
        for (int d : t.deps) {
            const Task& prod = p.tasks[static_cast<size_t>(d)];
            if (prod.core == t.core)
                continue;
            bool covered = false;
            for (int e : prod.recordEvents)
                for (int c : p.events[static_cast<size_t>(e)].consumerTasks)
                    if (p.tasks[static_cast<size_t>(c)].core == t.core && (c == t.id || order.before(c, t.id)))
                        covered = true;
            if (!covered)
                return makeError(ErrorKind::Verify, "cross-core dependency " + taskLabel(p, d) + " -> " +
                                                        taskLabel(p, t.id) + " has no event");
        }
    return {};
}

/// Slot reuse: within one core and slot, every consumer of an earlier event happens-before the
/// producer of the next.
Status checkSlotReuse(const Program& p, const Reachability& order) {
    std::map<std::pair<int, int>, std::vector<int>> bySlot;
    for (const Event& e : p.events)
        bySlot[{e.core, e.slot}].push_back(e.id);
    for (auto& [key, ids] : bySlot) {
        std::sort(ids.begin(), ids.end(), [&](int a, int b) {
            return std::tie(p.events[a].producerTask, a) < std::tie(p.events[b].producerTask, b);
        });
        for (size_t i = 1; i < ids.size(); ++i) {
            const Event& prev = p.events[static_cast<size_t>(ids[i - 1])];
            const Event& next = p.events[static_cast<size_t>(ids[i])];
            for (int c : prev.consumerTasks)
                if (!order.before(c, next.producerTask))
                    return makeError(ErrorKind::Verify,
                                     "core " + std::to_string(key.first) + " slot " + std::to_string(key.second) +
                                         " is reused by event " + std::to_string(next.id) + " while " + taskLabel(p, c) +
                                         " may still wait on event " + std::to_string(prev.id));
        }
    }
    return {};
}

} // namespace

Status checkEvents(const Program& p) {
    SX_TRY(checkTasks(p));
    for (size_t i = 0; i < p.events.size(); ++i)
        SX_TRY(checkEvent(p, i));
    SX_TRY(checkTaskEventLists(p));
    const std::vector<std::vector<int>> preds = combinedPreds(p);
    SX_TRY(checkAcyclic(p, preds));
    const Reachability order(preds);
    if (!order.valid())
        return makeError(ErrorKind::Unsupported, "cannot check the events: " + order.why());
    SX_TRY(checkCrossCoreDeps(p, order));
    return checkSlotReuse(p, order);
}

} // namespace sextant::backend
