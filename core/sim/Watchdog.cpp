#include "Machine.h"

namespace sextant::sim::detail {

std::string Machine::watchdogDump(uint64_t now) const {
    std::string s = "watchdog: no task can make progress at cycle " + std::to_string(now) + " (" +
                    std::to_string(m_finished) + " of " + std::to_string(m_p.tasks.size()) +
                    " tasks finished)";
    for (size_t c = 0; c < m_queues.size(); ++c) {
        for (size_t k = m_head[c]; k < m_queues[c].size(); ++k) {
            size_t index = m_queues[c][k];
            const Task& task = m_p.tasks[index];
            s += "; " + taskLabel(task) + " on core " + std::to_string(c);
            if (k != m_head[c]) {
                s += " is queued behind task " +
                     std::to_string(m_p.tasks[m_queues[c][m_head[c]]].id);
                continue;
            }
            bool any = false;
            for (int e : task.waitEvents) {
                if (recordedAt(e))
                    continue;
                any = true;
                auto [slotCore, slot] = slotOf(e);
                s += " waits on event " + std::to_string(e) + " (slot " + std::to_string(slot) +
                     " of core " + std::to_string(slotCore) + ")";
                auto rec = m_recorders.find(e);
                if (rec == m_recorders.end()) {
                    s += " which no task records";
                } else if (m_everRecorded.count(e)) {
                    s += " whose record was overwritten by event " +
                         std::to_string(m_slots.at({slotCore, slot}).first);
                } else {
                    s += " recorded by";
                    for (size_t r : rec->second)
                        s += " " + taskLabel(m_p.tasks[r]) +
                             (m_state[r].started ? " (running)" : " (not run)");
                }
            }
            if (m_opt.strict && index > 0 && !m_state[index - 1].ended) {
                any = true;
                s += " waits (strict mode) for task " + std::to_string(m_p.tasks[index - 1].id);
            }
            if (!any)
                s += " is blocked";
        }
    }
    std::string slots;
    for (const auto& [key, held] : m_slots)
        slots += (slots.empty() ? "" : ", ") + std::string("core ") + std::to_string(key.first) +
                 " slot " + std::to_string(key.second) + " holds event " +
                 std::to_string(held.first);
    s += "; event slots: " + (slots.empty() ? std::string("none recorded") : slots);
    return s;
}

} // namespace sextant::sim::detail
