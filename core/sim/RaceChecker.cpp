#include "Machine.h"

#include "core/backend/Grouping.h"
#include "core/backend/MemoryPlanner.h"

#include <algorithm>

namespace sextant::sim::detail {

namespace {

/// Where a buffer's bytes are: (level, core, offset, size) once, or once per stripe.
struct Place {
    backend::MemLevel level;
    int core;
    uint64_t offset, size;
};
std::vector<Place> placesOf(const Buffer& b) {
    if (b.stripes.empty())
        return {Place{b.level, b.core, b.offset, b.size}};
    std::vector<Place> out;
    for (const Buffer::Stripe& st : b.stripes)
        out.push_back(Place{backend::MemLevel::Sram, st.core, st.offset, st.size});
    if (b.level == backend::MemLevel::Dram) // a halo buffer's DRAM home
        out.push_back(Place{backend::MemLevel::Dram, -1, b.offset, b.size});
    return out;
}

/// A reader of a halo buffer's DRAM home only (Machine::readsHome), in place of its core.
constexpr int kHomeOnly = -2;

/// The places of `b` (indexes into placesOf) a Task on `core` touches: a striped buffer's stripe
/// on that core and a halo buffer's DRAM home; all of them for the host (core -1); the home for
/// kHomeOnly.
std::vector<size_t> touchedBy(const Buffer& b, int core) {
    if (b.stripes.empty())
        return {0};
    if (core == kHomeOnly)
        return {b.stripes.size()};
    std::vector<size_t> out;
    for (size_t i = 0; i < b.stripes.size(); ++i)
        if (core < 0 || b.stripes[i].core == core)
            out.push_back(i);
    if (b.level == backend::MemLevel::Dram)
        out.push_back(b.stripes.size());
    return out;
}

bool meet(const Place& x, const Place& y) {
    if (x.level != y.level || (x.level == backend::MemLevel::Sram && x.core != y.core))
        return false;
    return x.offset < y.offset + y.size && y.offset < x.offset + x.size;
}

/// Whether what a Task on `coreA` touches of `a` shares bytes with what one on `coreB` touches of `b`.
bool overlaps(const Buffer& a, int coreA, const Buffer& b, int coreB) {
    const std::vector<Place> pa = placesOf(a), pb = placesOf(b);
    for (size_t i : touchedBy(a, coreA))
        for (size_t j : touchedBy(b, coreB))
            if (meet(pa[i], pb[j]))
                return true;
    return false;
}

/// Two parts of one split group writing (or one writing, one reading nothing of) the same buffer
/// touch disjoint slices: they may run at once.
bool disjointParts(const Task& a, const Task& b) {
    return backend::sameSplit(a, b) && (a.sliceEnd <= b.sliceBegin || b.sliceEnd <= a.sliceBegin);
}

std::string bufferLabel(const Buffer& b) {
    return "buffer " + std::to_string(b.id) + " ('" + b.value + "')";
}

/// "[640, 768) in DRAM": the first range two overlapping buffers share.
std::string sharedRange(const Buffer& a, const Buffer& b) {
    for (const Place& x : placesOf(a))
        for (const Place& y : placesOf(b)) {
            if (x.level != y.level || (x.level == backend::MemLevel::Sram && x.core != y.core))
                continue;
            const uint64_t lo = std::max(x.offset, y.offset), hi = std::min(x.offset + x.size, y.offset + y.size);
            if (lo < hi)
                return "[" + std::to_string(lo) + ", " + std::to_string(hi) + ") in " +
                       (x.level == backend::MemLevel::Dram ? std::string("DRAM")
                                                           : "the SRAM of core " + std::to_string(x.core));
        }
    return "no shared bytes";
}

} // namespace

std::string Machine::writerOf(size_t buffer) const {
    if (!m_writers[buffer].empty()) {
        const Task& w = m_p.tasks[m_writers[buffer].front()];
        return "by " + taskAndNodes(w) + " on core " + std::to_string(w.core);
    }
    return m_p.buffers[buffer].kind == backend::BufferKind::Weight ? "by the host (a weight)"
                                                                   : "by the host (a graph input)";
}

void Machine::noteWrite(size_t buffer, int core) {
    if (!m_opt.checkRaces)
        return;
    const std::vector<Place> mine = placesOf(m_p.buffers[buffer]);
    const std::vector<size_t> written = touchedBy(m_p.buffers[buffer], core);
    for (size_t other = 0; other < m_p.buffers.size(); ++other) {
        if (other == buffer)
            continue;
        const std::vector<Place> theirs = placesOf(m_p.buffers[other]);
        for (size_t k = 0; k < theirs.size() && k < m_intact[other].size(); ++k)
            for (size_t i : written)
                if (meet(mine[i], theirs[k])) {
                    m_intact[other][k] = 0;
                    m_clobberedBy[other] = buffer;
                }
    }
    for (size_t i : written)
        if (i < m_intact[buffer].size())
            m_intact[buffer][i] = 1;
}

namespace {

/// The core `buffer` is read from by a Task in state `st` on `core`: kHomeOnly for a home read.
int readerCore(const TaskState& st, size_t buffer, int core) {
    return std::find(st.homeReads.begin(), st.homeReads.end(), buffer) != st.homeReads.end() ? kHomeOnly : core;
}

} // namespace

Status Machine::checkRaces(size_t index, uint64_t now) const {
    const Task& task = m_p.tasks[index];
    const TaskState& st = m_state[index];
    auto race = [&](const std::string& what) {
        return makeError(ErrorKind::Runtime,
                         "race: " + taskAndNodes(task) + " on core " + std::to_string(task.core) +
                             " at cycle " + std::to_string(now) + " " + what,
                         task.name);
    };
    for (size_t b : st.reads) {
        const Buffer& buf = m_p.buffers[b];
        // Reading a value whose producer (any part of it) has not finished: a missing wait.
        for (size_t w : m_writers[b]) {
            if (w == index || m_state[w].ended || backend::disjointSliceRead(m_p.tasks[w], task, buf.id))
                continue;
            const Task& p = m_p.tasks[w];
            return race("reads " + bufferLabel(buf) + " before its producer " + taskAndNodes(p) +
                        " on core " + std::to_string(p.core) + " ended: a missing event wait?");
        }
        // Reading bytes another buffer's write replaced: two live buffers share addresses.
        const std::vector<size_t> read = touchedBy(buf, readerCore(st, b, task.core));
        if (std::any_of(read.begin(), read.end(),
                        [&](size_t k) { return k < m_intact[b].size() && !m_intact[b][k]; })) {
            const size_t by = m_clobberedBy[b];
            return race("reads " + bufferLabel(buf) + " but its bytes were overwritten by " +
                        bufferLabel(m_p.buffers[by]) + ": the memory plan overlaps two live buffers, " +
                        bufferLabel(buf) + " written " + writerOf(b) + " and " + bufferLabel(m_p.buffers[by]) +
                        " written " + writerOf(by) + ", sharing " + sharedRange(buf, m_p.buffers[by]));
        }
    }
    // Touching addresses a running Task writes, or writing what it reads: overlapping live buffers.
    for (size_t r : m_running) {
        if (r == index)
            continue;
        const TaskState& other = m_state[r];
        // A read is by the reading Task's place (its core, or the DRAM home only); a write by its core.
        auto clash = [&](bool mineRead, bool theirsRead, const char* verb, const char* theirVerb) -> std::optional<Error> {
            const std::vector<size_t>& mine = mineRead ? st.reads : st.writes;
            const std::vector<size_t>& theirs = theirsRead ? other.reads : other.writes;
            for (size_t a : mine)
                for (size_t b : theirs) {
                    const int coreA = mineRead ? readerCore(st, a, task.core) : task.core;
                    const int coreB = theirsRead ? readerCore(other, b, m_p.tasks[r].core) : m_p.tasks[r].core;
                    if (!overlaps(m_p.buffers[a], coreA, m_p.buffers[b], coreB) ||
                        (a == b && disjointParts(task, m_p.tasks[r])))
                        continue;
                    // A part reading only its own slice of what another part writes elsewhere.
                    const int id = m_p.buffers[a].id;
                    if (a == b && (backend::disjointSliceRead(m_p.tasks[r], task, id) ||
                                   backend::disjointSliceRead(task, m_p.tasks[r], id)))
                        continue;
                    return race(std::string(verb) + " " + bufferLabel(m_p.buffers[a]) + " which overlaps " +
                                bufferLabel(m_p.buffers[b]) + " that running " + taskAndNodes(m_p.tasks[r]) + " " +
                                theirVerb + (a == b ? std::string()
                                                    : ": the memory plan overlaps two live buffers, sharing " +
                                                          sharedRange(m_p.buffers[a], m_p.buffers[b])));
                }
            return std::nullopt;
        };
        if (auto e = clash(/*mineRead=*/true, /*theirsRead=*/false, "reads", "writes"))
            return *e;
        if (auto e = clash(false, false, "writes", "writes"))
            return *e;
        if (auto e = clash(false, true, "writes", "reads"))
            return *e;
    }
    return {};
}

} // namespace sextant::sim::detail
