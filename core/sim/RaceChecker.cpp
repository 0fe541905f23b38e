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

backend::SliceBytes wholePlace(const Place& p) { return backend::SliceBytes{1, 0, 0, p.size}; }

/// The bytes of place `k` of `b` (relative to the place) that `task` touches: of a buffer's one
/// place, what touchedBytes says (its slice, its window, or all); of a stripe or a halo home, all.
backend::SliceBytes touchedIn(const Buffer& b, size_t k, const Place& place, const Task* task) {
    if (task && b.stripes.empty() && k == 0)
        return backend::touchedBytes(*task, b);
    return wholePlace(place);
}

/// Whether what `ta` on `coreA` touches of `a` shares bytes with what `tb` on `coreB` touches of
/// `b`, slice by slice where both are one place each.
bool overlaps(const Buffer& a, int coreA, const Task& ta, const Buffer& b, int coreB, const Task& tb) {
    const std::vector<Place> pa = placesOf(a), pb = placesOf(b);
    for (size_t i : touchedBy(a, coreA))
        for (size_t j : touchedBy(b, coreB))
            if (meet(pa[i], pb[j]) && backend::bytesMeet(pa[i].offset, touchedIn(a, i, pa[i], &ta), pb[j].offset,
                                                         touchedIn(b, j, pb[j], &tb)))
                return true;
    return false;
}

/// `stale` less `written` (both relative to one place): exact where the two are slices of one
/// layout (a whole entry is first cut to that layout), else a stale entry stays unless the write
/// covers all of it.
void subtract(std::vector<StaleBytes>& stale, const backend::SliceBytes& written, uint64_t placeSize) {
    const bool whole = written.runs <= 1 && written.begin == 0 && written.end >= placeSize;
    if (whole) {
        stale.clear();
        return;
    }
    std::vector<StaleBytes> out;
    for (StaleBytes s : stale) {
        backend::SliceBytes& e = s.bytes;
        if (e.runs == 1 && e.begin == 0 && e.end >= written.runs * written.stride && written.runs > 1) {
            e.runs = written.runs; // the whole place, as runs of the written layout
            e.stride = written.stride;
            e.end = written.stride;
        }
        if (e.runs != written.runs || (e.runs > 1 && e.stride != written.stride)) {
            out.push_back(s);
            continue;
        }
        if (e.begin < written.begin)
            out.push_back(StaleBytes{{e.runs, e.stride, e.begin, std::min(e.end, written.begin)}, s.by});
        if (written.end < e.end)
            out.push_back(StaleBytes{{e.runs, e.stride, std::max(e.begin, written.end), e.end}, s.by});
    }
    stale = std::move(out);
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
        return "by " + taskAndNodes(w) + " on " + backend::laneName(w.core, m_p.target);
    }
    return m_p.buffers[buffer].kind == backend::BufferKind::Weight ? "by the host (a weight)"
                                                                   : "by the host (a graph input)";
}

void Machine::noteWrite(size_t buffer, int core, size_t task) {
    if (!m_opt.checkRaces)
        return;
    const Buffer& b = m_p.buffers[buffer];
    const Task* writer = task < m_p.tasks.size() ? &m_p.tasks[task] : nullptr;
    const std::vector<Place> mine = placesOf(b);
    const std::vector<size_t> written = touchedBy(b, core);
    constexpr size_t kMaxStale = 64; // past this, a place's entries fold into one, all of it
    for (size_t other = 0; other < m_p.buffers.size(); ++other) {
        if (other == buffer)
            continue;
        // A buffer this one is written in place into holds these bytes now, where they land.
        if (std::find(m_inPlaceParts[other].begin(), m_inPlaceParts[other].end(), buffer) != m_inPlaceParts[other].end()) {
            const Buffer& h = m_p.buffers[other];
            if (b.stripes.empty() && h.stripes.empty() && b.level == h.level && b.offset >= h.offset && !m_stale[other].empty()) {
                const backend::SliceBytes w =
                    writer ? backend::touchedBytes(*writer, b) : backend::sliceAlong(b, -1, 0, 0);
                for (uint64_t r = 0; r < w.runs; ++r) {
                    const uint64_t at = b.offset - h.offset + r * w.stride;
                    subtract(m_stale[other][0], backend::SliceBytes{1, 0, at + w.begin, at + w.end}, h.size);
                }
            }
            continue;
        }
        const Buffer& o = m_p.buffers[other];
        const std::vector<Place> theirs = placesOf(o);
        for (size_t k = 0; k < theirs.size() && k < m_stale[other].size(); ++k)
            for (size_t i : written) {
                const backend::SliceBytes bytes = touchedIn(b, i, mine[i], writer);
                if (!meet(mine[i], theirs[k]) ||
                    !backend::bytesMeet(mine[i].offset, bytes, theirs[k].offset, wholePlace(theirs[k])))
                    continue;
                // At the same address, a one-place buffer of the same type whose own writers
                // store slices of the same layout has the writer's bytes stale (buffers that
                // share their addresses slice by slice): its writers' slices take them back
                // exactly. Any other, all of the place, which any writes that cover it take back.
                bool same = o.stripes.empty() && b.stripes.empty() && k == 0 &&
                            mine[i].offset == theirs[k].offset && o.type == b.type && !m_writers[other].empty() &&
                            m_inPlaceParts[other].empty();
                if (same) {
                    const backend::SliceBytes own = backend::sliceOf(m_p.tasks[m_writers[other].front()], o);
                    same = own.runs == bytes.runs && (own.runs == 1 || own.stride == bytes.stride);
                }
                std::vector<StaleBytes>& stale = m_stale[other][k];
                stale.push_back(StaleBytes{same ? bytes : wholePlace(theirs[k]), buffer});
                if (stale.size() > kMaxStale)
                    stale.assign(1, StaleBytes{wholePlace(theirs[k]), buffer});
            }
    }
    for (size_t i : written)
        if (i < m_stale[buffer].size())
            subtract(m_stale[buffer][i], touchedIn(b, i, mine[i], writer), mine[i].size);
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
                         "race: " + taskAndNodes(task) + " on " + backend::laneName(task.core, m_p.target) +
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
                        " on " + backend::laneName(p.core, m_p.target) + " ended: a missing event wait?");
        }
        // Reading bytes another buffer's write replaced: two live buffers share addresses.
        const std::vector<size_t> read = touchedBy(buf, readerCore(st, b, task.core));
        const std::vector<Place> places = placesOf(buf);
        size_t by = kNoBuffer;
        bool stale = false;
        for (size_t k : read) {
            if (k >= m_stale[b].size())
                continue;
            const backend::SliceBytes bytes = touchedIn(buf, k, places[k], &task);
            for (const StaleBytes& s : m_stale[b][k])
                if (backend::bytesMeet(0, bytes, 0, s.bytes)) {
                    stale = true;
                    by = s.by;
                    break;
                }
            if (stale)
                break;
        }
        // A holder's bytes are its parts': each part it reads must hold what its writer stored.
        if (!m_inPlaceParts[b].empty() && buf.stripes.empty()) {
            const backend::SliceBytes bytes = touchedIn(buf, 0, places[0], &task);
            for (size_t part : m_inPlaceParts[b]) {
                const Buffer& pb = m_p.buffers[part];
                if (stale || !m_inPlaceParts[part].empty() || m_stale[part].empty())
                    continue; // a nested holder: its own parts are in the list too
                for (const StaleBytes& s : m_stale[part][0])
                    if (backend::bytesMeet(buf.offset, bytes, pb.offset, s.bytes)) {
                        if (s.by == kNoBuffer)
                            return race("reads " + bufferLabel(buf) + " where none of the writers of its part " +
                                        bufferLabel(pb) + " has stored it");
                        stale = true;
                        by = s.by;
                        break;
                    }
            }
        }
        if (stale && by == kNoBuffer)
            return race("reads " + bufferLabel(buf) + " where none of its writers has stored it");
        if (stale) {
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
                    if (!overlaps(m_p.buffers[a], coreA, task, m_p.buffers[b], coreB, m_p.tasks[r]) ||
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
