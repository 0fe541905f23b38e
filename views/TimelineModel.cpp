#include "TimelineModel.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace sextant::views {

namespace {

/// The DMA phases `t` (at index `index`) had, zero-length ones left out.
void appendSpans(const TimelineTask& t, int index, std::vector<TimelineDmaSpan>& out) {
    if (!t.phases || t.unit == backend::UnitKind::Dma)
        return; // a DMA-only Task is itself what its core's DMA engine did
    const uint64_t loadEnd = std::clamp(t.loadEnd, t.start, t.end);
    const uint64_t storeStart = std::clamp(t.storeStart, t.start, t.end);
    if (t.streamed) {
        if (loadEnd > t.start)
            out.push_back(TimelineDmaSpan{index, DmaPhaseKind::Stream, t.start, loadEnd,
                                          t.loadBytes + t.storeBytes});
        return;
    }
    if (loadEnd > t.start)
        out.push_back(TimelineDmaSpan{index, DmaPhaseKind::Load, t.start, loadEnd, t.loadBytes});
    if (t.end > storeStart)
        out.push_back(TimelineDmaSpan{index, DmaPhaseKind::Store, storeStart, t.end, t.storeBytes});
}

std::string bytesText(uint64_t bytes) {
    char buf[48];
    const double b = static_cast<double>(bytes);
    if (bytes >= 1024 * 1024)
        std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024.0));
    else if (bytes >= 1024)
        std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
    else
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    return buf;
}

} // namespace

std::string dmaSpanLabel(const TimelineDmaSpan& span) {
    switch (span.kind) {
    case DmaPhaseKind::Load:
        return "load " + bytesText(span.bytes);
    case DmaPhaseKind::Store:
        return "store " + bytesText(span.bytes);
    case DmaPhaseKind::Stream:
        return "stream " + bytesText(span.bytes);
    }
    return bytesText(span.bytes);
}

namespace {

/// An entry's gap after the running maximum of the ends before it (0 when it starts before
/// that): the part of a FoldPyramid key that keeps a fold from taking it in.
uint64_t gapAfter(uint64_t maxEndBefore, uint64_t start) {
    return start > maxEndBefore ? start - maxEndBefore : 0;
}

} // namespace

void TimelineModel::setTasks(std::vector<TimelineTask> tasks, int numCores) {
    m_tasks = std::move(tasks);
    m_spans.clear();
    m_lanes.clear();
    m_entries.clear();
    m_laneOfTask.assign(m_tasks.size(), -1);
    m_entryOfTask.assign(m_tasks.size(), 0);
    m_firstSpanOfTask.assign(m_tasks.size() + 1, 0);
    m_totalCycles = 0;

    // ordered: core, then unit (cube, vector, dma: a core's DMA lane comes under its compute lanes;
    // the host's transfers, what its steps read and write of DRAM, under the host lane)
    std::map<std::pair<int, int>, std::vector<Entry>> byLane;
    const int dmaLane = static_cast<int>(backend::UnitKind::Dma);
    const int hostTransferLane = static_cast<int>(backend::UnitKind::Host) + 1;
    for (size_t i = 0; i < m_tasks.size(); ++i) {
        const TimelineTask& t = m_tasks[i];
        byLane[{t.core, static_cast<int>(t.unit)}].push_back(
            Entry{t.start, t.end, static_cast<int>(i), -1});
        m_totalCycles = std::max(m_totalCycles, t.end);
        const size_t first = m_spans.size();
        m_firstSpanOfTask[i] = static_cast<uint32_t>(first);
        appendSpans(t, static_cast<int>(i), m_spans);
        for (size_t s = first; s < m_spans.size(); ++s)
            byLane[{t.core, t.unit == backend::UnitKind::Host ? hostTransferLane : dmaLane}].push_back(
                Entry{m_spans[s].start, m_spans[s].end, static_cast<int>(i), static_cast<int>(s)});
    }
    m_firstSpanOfTask[m_tasks.size()] = static_cast<uint32_t>(m_spans.size());
    m_laneOfSpan.assign(m_spans.size(), -1);
    m_entryOfSpan.assign(m_spans.size(), 0);
    std::set<int> busyCores;
    for (const auto& [key, items] : byLane)
        busyCores.insert(key.first);
    for (int core = 0; core < numCores; ++core)
        if (!busyCores.count(core))
            byLane[{core, -1}]; // an idle core: one empty lane
    for (auto& [key, entries] : byLane) {
        std::sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) {
            if (a.start != b.start)
                return a.start < b.start;
            if (a.task != b.task)
                return m_tasks[a.task].task < m_tasks[b.task].task;
            return a.span < b.span;
        });
        const int laneIndex = static_cast<int>(m_lanes.size());
        TimelineLane lane;
        lane.core = key.first;
        lane.unit = key.second < 0                  ? backend::UnitKind::Vector
                    : key.second == hostTransferLane ? backend::UnitKind::Dma
                                                     : static_cast<backend::UnitKind>(key.second);
        lane.label = key.second == hostTransferLane       ? std::string("host \u00b7 transfers")
                     : lane.unit == backend::UnitKind::Host ? std::string("host")
                                                            : "core " + std::to_string(key.first) + " \u00b7 " +
                                                                  (key.second < 0 ? "idle"
                                                                                  : std::string(backend::unitName(lane.unit)));
        LaneEntries lists;
        uint64_t maxEnd = 0;
        lists.endPrefixMax.reserve(entries.size());
        std::vector<uint64_t> keys(entries.size(), 0);
        for (size_t pos = 0; pos < entries.size(); ++pos) {
            const Entry& e = entries[pos];
            keys[pos] = std::max(e.end - std::min(e.end, e.start), pos > 0 ? gapAfter(maxEnd, e.start) : 0);
            maxEnd = std::max(maxEnd, e.end);
            lists.endPrefixMax.push_back(maxEnd);
            if (e.span < 0) {
                lane.items.push_back(e.task);
                m_laneOfTask[static_cast<size_t>(e.task)] = laneIndex;
                m_entryOfTask[static_cast<size_t>(e.task)] = static_cast<uint32_t>(pos);
            } else {
                lane.spans.push_back(e.span);
                m_laneOfSpan[static_cast<size_t>(e.span)] = laneIndex;
                m_entryOfSpan[static_cast<size_t>(e.span)] = static_cast<uint32_t>(pos);
            }
        }
        lists.folds = FoldPyramid::build(std::move(keys));
        lists.entries = std::move(entries);
        m_lanes.push_back(std::move(lane));
        m_entries.push_back(std::move(lists));
    }
}

int TimelineModel::laneOfSpan(int spanIndex) const {
    if (spanIndex < 0 || spanIndex >= static_cast<int>(m_laneOfSpan.size()))
        return -1;
    return m_laneOfSpan[static_cast<size_t>(spanIndex)];
}

int TimelineModel::laneOf(int taskIndex) const {
    if (taskIndex < 0 || taskIndex >= static_cast<int>(m_laneOfTask.size()))
        return -1;
    return m_laneOfTask[taskIndex];
}

std::vector<int> TimelineModel::tasksOfNode(const std::string& node) const {
    std::vector<int> out;
    for (size_t i = 0; i < m_tasks.size(); ++i) {
        const auto& nodes = m_tasks[i].nodes;
        if (std::find(nodes.begin(), nodes.end(), node) != nodes.end())
            out.push_back(static_cast<int>(i));
    }
    std::sort(out.begin(), out.end(), [&](int a, int b) { return m_tasks[a].task < m_tasks[b].task; });
    return out;
}

namespace {

char lowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

/// Whether `text` contains `needle` (already lower case), ignoring ASCII case.
bool containsFolded(const std::string& text, const std::string& needle) {
    if (needle.size() > text.size())
        return false;
    return std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                       [](char a, char b) { return lowerAscii(a) == b; }) != text.end();
}

} // namespace

std::vector<int> TimelineModel::findTasks(const std::string& query, const std::function<bool()>& cancelled) const {
    std::vector<int> out;
    if (query.empty())
        return out;
    std::string needle(query);
    for (char& c : needle)
        c = lowerAscii(c);
    for (size_t i = 0; i < m_tasks.size(); ++i) {
        if (cancelled && i % 4096 == 0 && cancelled())
            break;
        const TimelineTask& t = m_tasks[i];
        bool hit = containsFolded(t.name, needle) || containsFolded(t.kernel, needle);
        for (size_t k = 0; !hit && k < t.nodes.size(); ++k)
            hit = containsFolded(t.nodes[k], needle);
        if (hit)
            out.push_back(static_cast<int>(i));
    }
    std::sort(out.begin(), out.end(), [&](int a, int b) {
        const TimelineTask &x = m_tasks[static_cast<size_t>(a)], &y = m_tasks[static_cast<size_t>(b)];
        return x.start != y.start ? x.start < y.start : x.task < y.task;
    });
    return out;
}

int TimelineModel::indexOfTask(int taskId) const {
    for (size_t i = 0; i < m_tasks.size(); ++i)
        if (m_tasks[i].task == taskId)
            return static_cast<int>(i);
    return -1;
}

TimelineTask timelineTask(profiler::TaskRow&& r) {
    TimelineTask t;
    t.task = r.id;
    t.core = r.core;
    t.unit = r.unit;
    t.ready = r.ready;
    t.start = r.start;
    t.end = r.end;
    t.name = std::move(r.name);
    t.kernel = std::move(r.kernel);
    t.nodes = std::move(r.nodes);
    // A run stored without phases reads back as DMA-free compute over the whole Task
    // (profiler::TaskRow), which draws as it did before phases were recorded.
    t.phases = true;
    t.loadEnd = r.loadEnd;
    t.computeStart = r.computeStart;
    t.computeEnd = r.computeEnd;
    t.storeStart = r.storeStart;
    t.streamed = r.streamed;
    t.loadBytes = r.loadBytes;
    t.storeBytes = r.storeBytes;
    return t;
}

std::vector<TimelineTask> timelineTasks(std::vector<profiler::TaskRow> rows) {
    std::vector<TimelineTask> tasks;
    tasks.reserve(rows.size());
    for (profiler::TaskRow& r : rows)
        tasks.push_back(timelineTask(std::move(r)));
    return tasks;
}

std::vector<TimelineDrawItem> TimelineModel::buildDrawListByScan(
    const TimelineCoords& coords, double widthPx, double mergePx,
    const std::vector<uint8_t>& pinned) const {
    return collect(coords, widthPx, mergePx, false, pinned, {});
}

std::vector<TimelineDrawItem> TimelineModel::buildSpanListByScan(
    const TimelineCoords& coords, double widthPx, const std::vector<uint8_t>& marked,
    double gapPx) const {
    if (marked.empty())
        return {};
    return collect(coords, widthPx, gapPx, true, {}, marked);
}

std::vector<TimelineDrawItem> TimelineModel::buildDrawList(const TimelineCoords& coords,
                                                           double widthPx, double mergePx,
                                                           const std::vector<uint8_t>& pinned) const {
    return buildDrawList(coords, widthPx, mergePx, marks(pinned, true));
}

std::vector<TimelineDrawItem> TimelineModel::buildDrawList(const TimelineCoords& coords,
                                                           double widthPx, double mergePx,
                                                           const TimelineMarks& pinned) const {
    std::vector<TimelineDrawItem> out;
    for (size_t lane = 0; lane < m_lanes.size(); ++lane)
        foldLane(lane, coords, widthPx, mergePx, false, nullptr, m_entries[lane].endPrefixMax,
                 m_entries[lane].folds, pinned.empty() ? nullptr : &pinned.positions[lane], out);
    return out;
}

std::vector<TimelineDrawItem> TimelineModel::buildSpanList(const TimelineCoords& coords,
                                                           double widthPx,
                                                           const std::vector<uint8_t>& marked,
                                                           double gapPx) const {
    if (marked.empty())
        return {};
    return buildSpanList(coords, widthPx, marks(marked, false), gapPx);
}

std::vector<TimelineDrawItem> TimelineModel::buildSpanList(const TimelineCoords& coords,
                                                           double widthPx,
                                                           const TimelineMarks& marked,
                                                           double gapPx) const {
    std::vector<TimelineDrawItem> out;
    if (marked.empty())
        return out;
    for (size_t lane = 0; lane < m_lanes.size(); ++lane)
        foldLane(lane, coords, widthPx, gapPx, true, &marked.positions[lane],
                 marked.endPrefixMax[lane], marked.gaps[lane], nullptr, out);
    return out;
}

TimelineMarks TimelineModel::marks(const std::vector<uint8_t>& flags, bool withSpans) const {
    std::vector<int> indices;
    const size_t n = std::min(flags.size(), m_tasks.size());
    for (size_t i = 0; i < n; ++i)
        if (flags[i])
            indices.push_back(static_cast<int>(i));
    return marksOf(indices, withSpans);
}

TimelineMarks TimelineModel::marksOf(const std::vector<int>& taskIndices, bool withSpans) const {
    TimelineMarks out;
    bool any = false;
    for (int i : taskIndices)
        any = any || (i >= 0 && static_cast<size_t>(i) < m_tasks.size());
    if (!any)
        return out;
    out.positions.resize(m_lanes.size());
    out.endPrefixMax.resize(m_lanes.size());
    for (int t : taskIndices) {
        if (t < 0 || static_cast<size_t>(t) >= m_tasks.size())
            continue;
        const size_t i = static_cast<size_t>(t);
        out.positions[static_cast<size_t>(m_laneOfTask[i])].push_back(m_entryOfTask[i]);
        if (withSpans)
            for (uint32_t s = m_firstSpanOfTask[i]; s < m_firstSpanOfTask[i + 1]; ++s)
                out.positions[static_cast<size_t>(m_laneOfSpan[s])].push_back(m_entryOfSpan[s]);
    }
    out.gaps.resize(m_lanes.size());
    for (size_t lane = 0; lane < m_lanes.size(); ++lane) {
        std::vector<uint32_t>& pos = out.positions[lane];
        std::sort(pos.begin(), pos.end());
        pos.erase(std::unique(pos.begin(), pos.end()), pos.end());
        uint64_t maxEnd = 0;
        std::vector<uint64_t> gaps;
        gaps.reserve(pos.size());
        for (uint32_t p : pos) {
            const Entry& e = m_entries[lane].entries[p];
            gaps.push_back(gaps.empty() ? 0 : gapAfter(maxEnd, e.start));
            maxEnd = std::max(maxEnd, e.end);
            out.endPrefixMax[lane].push_back(maxEnd);
        }
        out.gaps[lane] = FoldPyramid::build(std::move(gaps));
    }
    return out;
}

namespace {
constexpr size_t kFoldFanOut = 16; ///< keys per block of a FoldPyramid level
} // namespace

FoldPyramid FoldPyramid::build(std::vector<uint64_t> keys) {
    FoldPyramid p;
    p.levels.push_back(std::move(keys));
    while (p.levels.back().size() > kFoldFanOut) {
        const std::vector<uint64_t>& below = p.levels.back();
        std::vector<uint64_t> up((below.size() + kFoldFanOut - 1) / kFoldFanOut, 0);
        for (size_t i = 0; i < below.size(); ++i)
            up[i / kFoldFanOut] = std::max(up[i / kFoldFanOut], below[i]);
        p.levels.push_back(std::move(up));
    }
    return p;
}

size_t FoldPyramid::firstAtLeast(size_t from, size_t to, uint64_t threshold) const {
    if (levels.empty() || from >= to || from >= levels.front().size())
        return std::min(from, to);
    // Up: the rest of the block at each level, then the blocks after it one level higher.
    size_t level = 0, i = from, span = 1; // span: entries one key of this level covers
    bool found = false;
    while (!found) {
        const std::vector<uint64_t>& keys = levels[level];
        const size_t blockEnd = std::min(keys.size(), (i / kFoldFanOut + 1) * kFoldFanOut);
        for (; i < blockEnd && i * span < to; ++i)
            if (keys[i] >= threshold) {
                found = true;
                break;
            }
        if (found)
            break;
        if (i >= keys.size() || i * span >= to || level + 1 == levels.size())
            return to;
        i /= kFoldFanOut; // the block after the one just scanned, at the level above
        ++level;
        span *= kFoldFanOut;
    }
    // Down: the first key that reaches the threshold within each block below.
    while (level > 0) {
        --level;
        i *= kFoldFanOut;
        const std::vector<uint64_t>& keys = levels[level];
        while (keys[i] < threshold)
            ++i;
    }
    return std::min(i, to);
}

namespace {

/// The first index in [from, to) whose running maximum of ends `before` says is not before the
/// fold's limit: an exponential search from `from`, then a binary one (a fold usually takes the
/// next few dozen entries, which stay in cache this way).
template <typename Before>
size_t gallop(const std::vector<uint64_t>& prefixEnd, size_t from, size_t to,
              const Before& before) {
    size_t lo = from, step = 1;
    while (lo + step <= to && before(prefixEnd[lo + step - 1])) {
        lo += step;
        step *= 2;
    }
    size_t hi = std::min(to, lo + step - 1);
    while (lo < hi) { // prefixEnd[lo - 1] (if any) is before; find the first not before
        const size_t mid = lo + (hi - lo) / 2;
        if (before(prefixEnd[mid]))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

} // namespace

std::pair<size_t, size_t> TimelineModel::visibleRange(const std::vector<Entry>& entries,
                                                      const std::vector<uint32_t>* subset,
                                                      const std::vector<uint64_t>& prefixEnd,
                                                      double tLeft, double tRight) {
    auto startAt = [&](size_t k) {
        return static_cast<double>(entries[subset ? (*subset)[k] : k].start);
    };
    // The first entry that may end inside the view (the running maximum of ends is monotonic
    // even where entries of a lane overlap), then the first starting after it.
    const size_t first = static_cast<size_t>(
        std::lower_bound(prefixEnd.begin(), prefixEnd.end(), tLeft,
                         [](uint64_t e, double t) { return static_cast<double>(e) < t; }) -
        prefixEnd.begin());
    size_t lo = first, hi = prefixEnd.size();
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (startAt(mid) > tRight)
            hi = mid;
        else
            lo = mid + 1;
    }
    return {first, lo};
}

void TimelineModel::foldLane(size_t laneIndex, const TimelineCoords& coords, double widthPx,
                             double mergePx, bool foldWide, const std::vector<uint32_t>* subset,
                             const std::vector<uint64_t>& prefixEnd, const FoldPyramid& keys,
                             const std::vector<uint32_t>* pins,
                             std::vector<TimelineDrawItem>& out) const {
    const std::vector<Entry>& entries = m_entries[laneIndex].entries;
    const size_t size = prefixEnd.size();
    auto posAt = [&](size_t k) { return subset ? (*subset)[k] : static_cast<uint32_t>(k); };
    const double tLeft = coords.mapXToTime(0.0);
    auto [k, kEnd] = visibleRange(entries, subset, prefixEnd, tLeft, coords.mapXToTime(widthPx));
    size_t pin = pins && k < size ? static_cast<size_t>(
                                        std::lower_bound(pins->begin(), pins->end(), posAt(k)) -
                                        pins->begin())
                                  : 0;
    auto nextPin = [&]() -> size_t { // position of the next pinned entry, or "none"
        return pins && pin < pins->size() ? (*pins)[pin] : UINT32_MAX;
    };
    bool pending = false;
    TimelineDrawItem merged;
    auto flush = [&] {
        if (!pending)
            return;
        if (merged.count > 1)
            merged.task = merged.span = -1;
        merged.x1 = std::max(merged.x1, merged.x0 + 1.0);
        out.push_back(merged);
        pending = false;
    };
    // Keys below this many cycles certainly fold (narrower and nearer than mergePx, with a
    // margin for rounding in pixels); an entry at or above it is looked at as the walk would.
    const double sure = mergePx * coords.cyclesPerPixel * (1.0 - 1e-9) - 1.0;
    const uint64_t threshold = sure >= 1.0 && sure < 1.8e19 ? static_cast<uint64_t>(sure) : 0;
    const int lane = static_cast<int>(laneIndex);
    while (k < kEnd) {
        const uint32_t pos = posAt(k);
        const Entry& e = entries[pos];
        while (pins && pin < pins->size() && (*pins)[pin] < pos)
            ++pin;
        ++k;
        if (static_cast<double>(e.end) < tLeft)
            continue;
        const double x0 = coords.mapTimeToX(static_cast<double>(e.start));
        const double x1 = coords.mapTimeToX(static_cast<double>(e.end));
        const TimelineDrawItem item{lane, x0, x1, 1, e.task, e.span};
        if ((!foldWide && x1 - x0 >= mergePx) || nextPin() == pos) {
            flush();
            TimelineDrawItem wide = item;
            wide.x1 = std::max(x1, x0 + 1.0);
            out.push_back(wide);
            continue;
        }
        if (pending && x0 - merged.x1 < mergePx) {
            merged.x1 = std::max(merged.x1, x1);
            ++merged.count;
        } else {
            flush();
            merged = item;
            pending = true;
        }
        // Every entry up to the first whose gap (or width) reaches the merge distance joins the
        // fold; the pyramid finds it. Where it cannot tell (a zoom finer than a few cycles per
        // pixel), every entry that ends before the fold's right edge plus mergePx does: in a
        // lane without overlaps each is narrower than mergePx and within mergePx of it.
        size_t j = k;
        if (threshold > 0) {
            j = keys.firstAtLeast(k, kEnd, threshold);
        } else {
            const double limit = merged.x1 + mergePx;
            j = gallop(prefixEnd, k, kEnd, [&](uint64_t end) {
                return coords.mapTimeToX(static_cast<double>(end)) < limit;
            });
        }
        if (pins && !subset) // a pinned entry is drawn as itself: the fold stops before it
            j = std::min(j, std::max(k, nextPin()));
        if (j > k) {
            merged.count += static_cast<int>(j - k);
            merged.x1 = std::max(merged.x1, coords.mapTimeToX(static_cast<double>(prefixEnd[j - 1])));
            k = j;
        }
    }
    flush();
}

std::vector<TimelineDrawItem> TimelineModel::collect(const TimelineCoords& coords, double widthPx,
                                                     double mergePx, bool foldWide,
                                                     const std::vector<uint8_t>& pinned,
                                                     const std::vector<uint8_t>& only) const {
    auto flagged = [](const std::vector<uint8_t>& flags, int i) {
        return static_cast<size_t>(i) < flags.size() && flags[static_cast<size_t>(i)] != 0;
    };
    std::vector<TimelineDrawItem> out;
    const double tLeft = coords.mapXToTime(0.0);
    const double tRight = coords.mapXToTime(widthPx);
    for (size_t laneIndex = 0; laneIndex < m_lanes.size(); ++laneIndex) {
        const LaneEntries& lane = m_entries[laneIndex];
        const auto& entries = lane.entries;
        // Binary-search the first entry that may end inside the view (the running maximum of
        // ends is monotonic even if entries of a lane overlapped) instead of scanning from the
        // start.
        const auto firstEnd = std::lower_bound(
            lane.endPrefixMax.begin(), lane.endPrefixMax.end(), tLeft,
            [](uint64_t e, double t) { return static_cast<double>(e) < t; });
        auto first = entries.begin() + (firstEnd - lane.endPrefixMax.begin());
        bool pending = false;
        TimelineDrawItem merged;
        auto flush = [&] {
            if (!pending)
                return;
            if (merged.count > 1) {
                merged.task = -1;
                merged.span = -1;
            }
            merged.x1 = std::max(merged.x1, merged.x0 + 1.0);
            out.push_back(merged);
            pending = false;
        };
        for (auto it = first; it != entries.end(); ++it) {
            const Entry& e = *it;
            if (static_cast<double>(e.start) > tRight)
                break;
            if (static_cast<double>(e.end) < tLeft)
                continue;
            // The overlay marks Tasks; their DMA phases sit under them on the core's DMA lane.
            if (!only.empty() && (e.span >= 0 || !flagged(only, e.task)))
                continue;
            const double x0 = coords.mapTimeToX(static_cast<double>(e.start));
            const double x1 = coords.mapTimeToX(static_cast<double>(e.end));
            const TimelineDrawItem item{static_cast<int>(laneIndex), x0, x1, 1, e.task, e.span};
            if ((!foldWide && x1 - x0 >= mergePx) || flagged(pinned, e.task)) {
                flush();
                TimelineDrawItem wide = item;
                wide.x1 = std::max(x1, x0 + 1.0);
                out.push_back(wide);
                continue;
            }
            if (pending && x0 - merged.x1 < mergePx) {
                merged.x1 = std::max(merged.x1, x1);
                ++merged.count;
                continue;
            }
            flush();
            merged = item;
            pending = true;
        }
        flush();
    }
    return out;
}

} // namespace sextant::views
