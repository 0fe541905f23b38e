#include "Machine.h"

#include "core/backend/Grouping.h"
#include "core/backend/MemoryPlanner.h"

namespace sextant::sim::detail {

namespace {

bool overlaps(const Buffer& a, const Buffer& b) {
    if (a.level != b.level || (a.level == backend::MemLevel::Sram && a.core != b.core))
        return false;
    return a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

/// Two parts of one split group writing (or one writing, one reading nothing of) the same buffer
/// touch disjoint slices: they may run at once.
bool disjointParts(const Task& a, const Task& b) {
    return backend::sameSplit(a, b) && (a.sliceEnd <= b.sliceBegin || b.sliceEnd <= a.sliceBegin);
}

std::string bufferLabel(const Buffer& b) {
    return "buffer " + std::to_string(b.id) + " ('" + b.value + "')";
}

} // namespace

void Machine::noteWrite(size_t buffer) {
    if (!m_opt.checkRaces)
        return;
    for (size_t other = 0; other < m_p.buffers.size(); ++other) {
        if (other == buffer || !overlaps(m_p.buffers[other], m_p.buffers[buffer]))
            continue;
        m_intact[other] = false;
        m_clobberedBy[other] = buffer;
    }
    m_intact[buffer] = true;
}

Status Machine::checkRaces(size_t index, uint64_t now) const {
    const Task& task = m_p.tasks[index];
    const TaskState& st = m_state[index];
    auto race = [&](const std::string& what) {
        return makeError(ErrorKind::Runtime,
                         "race: " + taskLabel(task) + " (core " + std::to_string(task.core) +
                             ") at cycle " + std::to_string(now) + " " + what,
                         task.name);
    };
    for (size_t b : st.reads) {
        const Buffer& buf = m_p.buffers[b];
        // Reading a value whose producer (any part of it) has not finished: a missing wait.
        for (size_t w : m_writers[b]) {
            if (w == index || m_state[w].ended || backend::disjointSliceRead(m_p.tasks[w], task, buf.id))
                continue;
            const Task& p = m_p.tasks[w];
            return race("reads " + bufferLabel(buf) + " before its producer " + taskLabel(p) +
                        " (core " + std::to_string(p.core) + ") ended: a missing event wait?");
        }
        // Reading bytes another buffer's write replaced: two live buffers share addresses.
        if (!m_intact[b]) {
            const Buffer& by = m_p.buffers[m_clobberedBy[b]];
            std::string writer;
            if (!m_writers[m_clobberedBy[b]].empty()) {
                const Task& w = m_p.tasks[m_writers[m_clobberedBy[b]].front()];
                writer = " written by " + taskLabel(w) + " (core " + std::to_string(w.core) + ")";
            }
            const std::string where = buf.level == backend::MemLevel::Sram
                                          ? " in the SRAM of core " + std::to_string(buf.core)
                                          : std::string();
            return race("reads " + bufferLabel(buf) + " but its bytes were overwritten by " + bufferLabel(by) +
                        writer + where + ": the memory plan overlaps two live buffers");
        }
    }
    // Touching addresses a running Task writes, or writing what it reads: overlapping live buffers.
    for (size_t r : m_running) {
        if (r == index)
            continue;
        const TaskState& other = m_state[r];
        auto clash = [&](const std::vector<size_t>& mine, const std::vector<size_t>& theirs,
                         const char* verb, const char* theirVerb) -> std::optional<Error> {
            for (size_t a : mine)
                for (size_t b : theirs) {
                    if (!overlaps(m_p.buffers[a], m_p.buffers[b]) ||
                        (a == b && disjointParts(task, m_p.tasks[r])))
                        continue;
                    return race(std::string(verb) + " " + bufferLabel(m_p.buffers[a]) + " which overlaps " +
                                bufferLabel(m_p.buffers[b]) + " that running " + taskLabel(m_p.tasks[r]) + " " +
                                theirVerb);
                }
            return std::nullopt;
        };
        if (auto e = clash(st.reads, other.writes, "reads", "writes"))
            return *e;
        if (auto e = clash(st.writes, other.writes, "writes", "writes"))
            return *e;
        if (auto e = clash(st.writes, other.reads, "writes", "reads"))
            return *e;
    }
    return {};
}

} // namespace sextant::sim::detail
