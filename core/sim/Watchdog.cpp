#include "Machine.h"

namespace sextant::sim::detail {

// The dump names, for the Task at the head of each core's queue: the Task and its graph nodes,
// every event it waits on that has not arrived, and the Task that should have recorded it with
// what became of that Task (it has not run, it ended without recording, its record was
// overwritten). The Tasks queued behind a head are counted, not listed: they wait for the head.

std::string Machine::recorderState(int e) const {
    auto rec = m_recorders.find(e);
    if (rec == m_recorders.end())
        return " which no task records";
    if (m_everRecorded.count(e))
        return " whose record was overwritten by event " + std::to_string(m_slots.at(slotOf(e)).first);
    std::string s = ", which";
    for (size_t k = 0; k < rec->second.size(); ++k) {
        const size_t r = rec->second[k];
        s += (k ? " or " : " ") + taskAndNodes(m_p.tasks[r]);
    }
    s += " should have recorded:";
    for (size_t r : rec->second) {
        const Task& t = m_p.tasks[r];
        auto dropped = m_dropped.find(e);
        s += " task " + std::to_string(t.id);
        if (m_state[r].ended && dropped != m_dropped.end())
            s += " ended at cycle " + std::to_string(dropped->second) +
                 " without recording it (injected fault " + faultSpec(m_opt.fault) + ")";
        else if (m_state[r].ended)
            s += " ended without recording it";
        else
            s += m_state[r].started ? " is still running" : " has not run (it is blocked too)";
    }
    return s;
}

std::string Machine::blockedBy(size_t index) const {
    const Task& task = m_p.tasks[index];
    std::string s;
    for (int e : task.waitEvents) {
        if (recordedAt(e))
            continue;
        auto [slotCore, slot] = slotOf(e);
        s += " waits on event " + std::to_string(e) + " (slot " + std::to_string(slot) + " of core " +
             std::to_string(slotCore) + ")" + recorderState(e);
    }
    if (m_opt.strict && index > 0 && !m_state[index - 1].ended)
        s += " waits (strict mode) for task " + std::to_string(m_p.tasks[index - 1].id);
    return s.empty() ? " is blocked" : s;
}

std::string Machine::watchdogDump(uint64_t now) const {
    std::string s = "watchdog: no task can make progress at cycle " + std::to_string(now) + " (" +
                    std::to_string(m_finished) + " of " + std::to_string(m_p.tasks.size()) +
                    " tasks finished)";
    for (size_t c = 0; c < m_queues.size(); ++c) {
        if (m_head[c] >= m_queues[c].size())
            continue;
        const size_t head = m_queues[c][m_head[c]];
        s += "; " + taskAndNodes(m_p.tasks[head]) + " on " + backend::laneName(static_cast<int>(c), m_p.target) + blockedBy(head);
        const size_t behind = m_queues[c].size() - m_head[c] - 1;
        if (behind > 0)
            s += "; " + std::to_string(behind) + (behind == 1 ? " task is" : " tasks are") + " queued behind task " +
                 std::to_string(m_p.tasks[head].id) + " on " + backend::laneName(static_cast<int>(c), m_p.target);
    }
    // What the slots the blocked Tasks wait on hold now (an event recorded there since, or none).
    std::set<std::pair<int, int>> waited;
    for (size_t c = 0; c < m_queues.size(); ++c)
        if (m_head[c] < m_queues[c].size())
            for (int e : m_p.tasks[m_queues[c][m_head[c]]].waitEvents)
                if (!recordedAt(e))
                    waited.insert(slotOf(e));
    std::string slots;
    for (const auto& key : waited) {
        if (key.first < 0)
            continue; // an event no Task records has no slot
        auto held = m_slots.find(key);
        slots += (slots.empty() ? "" : ", ") + std::string("core ") + std::to_string(key.first) + " slot " +
                 std::to_string(key.second) +
                 (held == m_slots.end() ? std::string(" holds no event") : " holds event " + std::to_string(held->second.first));
    }
    if (!slots.empty())
        s += "; the slots waited on: " + slots;
    return s;
}

} // namespace sextant::sim::detail
