#include "MemoryPlanner.h"

#include "MathUtil.h"
#include "OffsetSearch.h"
#include "Reachability.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <fstream>
#include <future>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

namespace sextant::backend {

namespace {

enum class Fit { Best, First };

/// Sorts `ranges` by their begins, a byte at a time from the lowest (stable; the bytes in which
/// every begin agrees are skipped): the placements' sort, linear in the ranges. `scratch` is
/// reused between calls.
void sortByBegin(std::vector<std::pair<uint64_t, uint64_t>>& ranges, std::vector<std::pair<uint64_t, uint64_t>>& scratch) {
    if (ranges.size() < 64) {
        std::sort(ranges.begin(), ranges.end());
        return;
    }
    uint64_t any = 0, all = ~uint64_t{0};
    for (const auto& r : ranges) {
        any |= r.first;
        all &= r.first;
    }
    const uint64_t varying = any ^ all;
    scratch.resize(ranges.size());
    for (int shift = 0; shift < 64; shift += 8) {
        if (((varying >> shift) & 0xff) == 0)
            continue;
        size_t count[257] = {};
        for (const auto& r : ranges)
            ++count[((r.first >> shift) & 0xff) + 1];
        for (int d = 0; d < 256; ++d)
            count[d + 1] += count[d];
        for (const auto& r : ranges)
            scratch[count[(r.first >> shift) & 0xff]++] = r;
        ranges.swap(scratch);
    }
}

/// Places buffers in `order`, each at the gap (among already placed conflicting buffers) chosen
/// by `fit`. Returns the offsets and the peak.
OffsetPlan placeInOrder(const OffsetProblem& p, const std::vector<int>& order, Fit fit) {
    const size_t n = p.sizes.size();
    OffsetPlan plan;
    plan.offsets.assign(n, 0);
    std::vector<char> placed(n, 0);
    std::vector<std::pair<uint64_t, uint64_t>> busy, scratch; // [begin, end) of placed neighbours, by begin
    // Placed buffers with bytes by (offset, index), and per buffer the last i it neighboured: a
    // buffer that conflicts with most of those placed (a wide program's unordered buffers) walks
    // them in address order instead of sorting its neighbours. The ranges come out in the same
    // order of begins either way (ties in a begin decide nothing below), so the plan is the same.
    std::vector<std::pair<uint64_t, int>> byOffset, recent; // recent: the last few, sorted, merged in by the batch
    std::vector<int> neighbourOf(n, -1);
    constexpr size_t kBatch = 256;
    for (int i : order) {
        const uint64_t size = p.sizes[i];
        busy.clear();
        size_t k = 0;
        for (int j : p.conflicts[i])
            if (placed[j] && p.sizes[j] > 0) {
                neighbourOf[j] = i;
                ++k;
            }
        if (k * static_cast<size_t>(std::bit_width(k)) > byOffset.size() + recent.size()) {
            auto r = recent.begin();
            for (const std::pair<uint64_t, int>& x : byOffset) {
                for (; r != recent.end() && *r < x; ++r)
                    if (neighbourOf[r->second] == i)
                        busy.emplace_back(r->first, r->first + p.sizes[r->second]);
                if (neighbourOf[x.second] == i)
                    busy.emplace_back(x.first, x.first + p.sizes[x.second]);
            }
            for (; r != recent.end(); ++r)
                if (neighbourOf[r->second] == i)
                    busy.emplace_back(r->first, r->first + p.sizes[r->second]);
        } else {
            for (int j : p.conflicts[i])
                if (neighbourOf[j] == i)
                    busy.emplace_back(plan.offsets[j], plan.offsets[j] + p.sizes[j]);
            // Ranges with one begin may come in any order: past the first, none leaves a gap
            // (each ends above the begin), so the gaps and the plan are the same.
            sortByBegin(busy, scratch);
        }
        uint64_t cursor = 0;
        bool found = false;
        uint64_t bestOffset = 0, bestGap = 0;
        for (const auto& [b, e] : busy) {
            uint64_t start = alignUp(cursor, p.alignment);
            if (b > start && b - start >= size) {
                uint64_t gap = b - start;
                if (!found || (fit == Fit::Best && gap < bestGap)) {
                    found = true;
                    bestOffset = start;
                    bestGap = gap;
                    if (fit == Fit::First)
                        break;
                }
            }
            cursor = std::max(cursor, e);
        }
        if (!found)
            bestOffset = alignUp(cursor, p.alignment);
        plan.offsets[i] = bestOffset;
        placed[i] = 1;
        if (size > 0) {
            recent.insert(std::upper_bound(recent.begin(), recent.end(), std::make_pair(bestOffset, i)),
                          {bestOffset, i});
            if (recent.size() == kBatch) {
                byOffset.insert(byOffset.end(), recent.begin(), recent.end());
                std::inplace_merge(byOffset.begin(), byOffset.end() - static_cast<std::ptrdiff_t>(kBatch), byOffset.end());
                recent.clear();
            }
        }
        plan.peak = std::max(plan.peak, bestOffset + size);
    }
    return plan;
}

} // namespace

OffsetPlan placeFirstFit(const OffsetProblem& p, const std::vector<int>& order) {
    return placeInOrder(p, order, Fit::First);
}

namespace {

/// Whether buffer i takes space at some time (a buffer without bytes or time conflicts with nothing).
bool hasBytesAndTime(const std::vector<std::pair<uint64_t, uint64_t>>& lifetimes, const std::vector<uint64_t>& sizes,
                     size_t i) {
    return sizes[i] > 0 && lifetimes[i].first < lifetimes[i].second;
}

/// Buffers with bytes and a lifetime, in the order of their starts (then their sizes, largest
/// first), and the same in the order of their ends: the events of a sweep over time.
struct Sweep {
    std::vector<int> byStart, byEnd;
};

Sweep sweepOf(const OffsetProblem& p) {
    Sweep s;
    for (size_t i = 0; i < p.sizes.size(); ++i)
        if (hasBytesAndTime(p.lifetimes, p.sizes, i))
            s.byStart.push_back(static_cast<int>(i));
    s.byEnd = s.byStart;
    std::sort(s.byStart.begin(), s.byStart.end(), [&](int a, int b) {
        return std::tie(p.lifetimes[a].first, p.sizes[b], a) < std::tie(p.lifetimes[b].first, p.sizes[a], b);
    });
    std::sort(s.byEnd.begin(), s.byEnd.end(),
              [&](int a, int b) { return std::tie(p.lifetimes[a].second, a) < std::tie(p.lifetimes[b].second, b); });
    return s;
}

/// The address ranges free below the top of the buffers live at one moment of a sweep, by start
/// and by length, so that a buffer finds the tightest range it fits in without a look at every
/// live buffer.
class FreeRanges {
public:
    explicit FreeRanges(uint64_t alignment) : m_align(alignment) {}

    /// The lowest offset of the tightest free range that holds `size` aligned bytes, or the
    /// aligned top; the range is taken.
    uint64_t take(uint64_t size) {
        // A range of at least size + alignment - 1 bytes always holds it; a shorter one only
        // when its start is (nearly) aligned, so only a few of those are looked at.
        constexpr int kLooks = 16;
        auto it = m_byLength.lower_bound({size, 0});
        for (int look = 0; it != m_byLength.end() && look < kLooks; ++it, ++look)
            if (fits(*it, size))
                return takeFrom(*it, size);
        for (it = m_byLength.lower_bound({size + m_align - 1, 0}); it != m_byLength.end(); ++it)
            if (fits(*it, size))
                return takeFrom(*it, size);
        const uint64_t at = alignUp(m_top, m_align);
        if (at > m_top)
            add(m_top, at);
        m_top = at + size;
        return at;
    }

    /// Gives [begin, end) back: joined to the free ranges beside it, and the top lowered when it
    /// was the highest live range.
    void give(uint64_t begin, uint64_t end) {
        auto next = m_byStart.lower_bound(begin);
        if (next != m_byStart.end() && next->first == end) {
            end = next->second;
            remove(next++);
        }
        if (next != m_byStart.begin()) {
            auto prev = std::prev(next);
            if (prev->second == begin) {
                begin = prev->first;
                remove(prev);
            }
        }
        if (end == m_top)
            m_top = begin;
        else
            add(begin, end);
    }

private:
    using ByLength = std::set<std::pair<uint64_t, uint64_t>>; // (length, start)

    bool fits(const std::pair<uint64_t, uint64_t>& range, uint64_t size) const {
        const uint64_t at = alignUp(range.second, m_align);
        return at - range.second + size <= range.first;
    }
    uint64_t takeFrom(std::pair<uint64_t, uint64_t> range, uint64_t size) {
        const uint64_t begin = range.second, end = begin + range.first, at = alignUp(begin, m_align);
        remove(m_byStart.find(begin));
        if (at > begin)
            add(begin, at);
        if (at + size < end)
            add(at + size, end);
        return at;
    }
    void add(uint64_t begin, uint64_t end) {
        m_byStart.emplace(begin, end);
        m_byLength.emplace(end - begin, begin);
    }
    void remove(std::map<uint64_t, uint64_t>::iterator it) {
        m_byLength.erase({it->second - it->first, it->first});
        m_byStart.erase(it);
    }

    uint64_t m_align;
    uint64_t m_top = 0;
    std::map<uint64_t, uint64_t> m_byStart; // start -> end
    ByLength m_byLength;
};

/// An interval problem placed in one sweep over time: the buffers that end at a moment give their
/// ranges back before those that start there (largest first) take the tightest free range, or the
/// top. Each buffer is placed once, against the buffers live at its start, which are all the
/// placed buffers it conflicts with: no pair lists, O(n log n).
OffsetPlan placeInTimeOrder(const OffsetProblem& p) {
    OffsetPlan plan;
    plan.offsets.assign(p.sizes.size(), 0);
    plan.heuristic = "time-sweep/best-fit";
    const Sweep sweep = sweepOf(p);
    FreeRanges free(std::max<uint64_t>(p.alignment, 1));
    size_t ended = 0;
    for (int i : sweep.byStart) {
        for (; ended < sweep.byEnd.size() && p.lifetimes[sweep.byEnd[ended]].second <= p.lifetimes[i].first; ++ended) {
            const int e = sweep.byEnd[ended];
            free.give(plan.offsets[e], plan.offsets[e] + p.sizes[e]);
        }
        plan.offsets[i] = free.take(p.sizes[i]);
        plan.peak = std::max(plan.peak, plan.offsets[i] + p.sizes[i]);
    }
    return plan;
}

} // namespace

uint64_t overlappingPairs(const std::vector<std::pair<uint64_t, uint64_t>>& lifetimes,
                          const std::vector<uint64_t>& sizes) {
    // By start: each buffer meets the ones after it that start before it ends.
    std::vector<std::pair<uint64_t, uint64_t>> byStart;
    for (size_t i = 0; i < sizes.size(); ++i)
        if (hasBytesAndTime(lifetimes, sizes, i))
            byStart.push_back(lifetimes[i]);
    std::sort(byStart.begin(), byStart.end());
    uint64_t pairs = 0;
    for (auto at = byStart.begin(); at != byStart.end(); ++at)
        pairs += static_cast<uint64_t>(
            std::lower_bound(at + 1, byStart.end(), std::make_pair(at->second, uint64_t{0})) - (at + 1));
    return pairs;
}

namespace {

/// Conflict-list entries (two per pair) from which a placement takes long enough (some
/// milliseconds) that a second thread pays for its start.
constexpr size_t kPairsForAThread = size_t{1} << 18;
/// Conflict-list entries from which a problem is large (see planByHeuristics): each greedy
/// ordering's placement costs tens of milliseconds there (a wide program's SRAM, planned again
/// for every candidate the lowering weighs).
constexpr size_t kPairsOfALargeProblem = size_t{1} << 20;

/// Whether every listed conflict is two buffers whose lifetimes meet (then a sweep over time,
/// which keeps apart exactly the buffers live together, gives valid plans).
bool conflictsOnlyOverlaps(const OffsetProblem& p) {
    const size_t n = p.sizes.size();
    if (p.lifetimes.size() != n || p.conflicts.size() != n)
        return false;
    for (size_t i = 0; i < n; ++i)
        for (int c : p.conflicts[i]) {
            const size_t j = static_cast<size_t>(c);
            if (j >= n || !(p.lifetimes[i].first < p.lifetimes[j].second && p.lifetimes[j].first < p.lifetimes[i].second))
                return false;
        }
    return true;
}

/// The heuristic stage of planOffsets: the best of the greedy orderings. It stops at the first
/// plan whose peak reaches a bound (no later one could replace it: only a lower peak does): when
/// `meetingConflict` (every two buffers whose lifetimes meet conflict), max-live. With two
/// threads and enough pairs to be worth one, an ordering's first-fit placement runs beside its
/// best-fit one; the plans are compared in the same order, so the choice is the same. A problem
/// of kPairsOfALargeProblem list entries or more is swept over time first (an interval one) and
/// then takes the size-descending ordering only.
OffsetPlan planByHeuristics(const OffsetProblem& p, unsigned threads, bool meetingConflict) {
    const size_t n = p.sizes.size();
    if (n == 0)
        return OffsetPlan{{}, 0, "empty"};
    if (p.overlapsOnly)
        return placeInTimeOrder(p);
    const bool haveLife = p.lifetimes.size() == n;
    std::vector<uint64_t> conflictWeight(n, 0);
    size_t pairs = 0; // list entries: two per pair
    for (size_t i = 0; i < n; ++i) {
        pairs += p.conflicts[i].size();
        for (int j : p.conflicts[i])
            conflictWeight[i] += p.sizes[j];
    }
    auto lifeLen = [&](int i) { return haveLife ? p.lifetimes[i].second - p.lifetimes[i].first : 0; };
    auto lifeStart = [&](int i) { return haveLife ? p.lifetimes[i].first : 0; };

    // Each ordering is a strict weak order with the buffer index as the last tie-break, so the
    // result never depends on the sort implementation.
    using Less = std::function<bool(int, int)>;
    std::vector<std::pair<std::string, Less>> orders = {
        {"size-desc", [&](int a, int b) { return std::tie(p.sizes[b], a) < std::tie(p.sizes[a], b); }},
        {"size-desc-long-first",
         [&](int a, int b) {
             uint64_t la = lifeLen(a), lb = lifeLen(b);
             return std::tie(p.sizes[b], lb, a) < std::tie(p.sizes[a], la, b);
         }},
        {"size-desc-early-first",
         [&](int a, int b) {
             uint64_t sa = lifeStart(a), sb = lifeStart(b);
             return std::tie(p.sizes[b], sa, a) < std::tie(p.sizes[a], sb, b);
         }},
        {"conflict-weight",
         [&](int a, int b) {
             return std::tie(conflictWeight[b], p.sizes[b], a) < std::tie(conflictWeight[a], p.sizes[a], b);
         }},
        {"area-desc",
         [&](int a, int b) {
             unsigned __int128 aa = static_cast<unsigned __int128>(p.sizes[a]) * std::max<uint64_t>(1, lifeLen(a));
             unsigned __int128 ab = static_cast<unsigned __int128>(p.sizes[b]) * std::max<uint64_t>(1, lifeLen(b));
             if (aa != ab)
                 return aa > ab;
             return a < b;
         }},
        {"lifetime-desc",
         [&](int a, int b) {
             uint64_t la = lifeLen(a), lb = lifeLen(b);
             return std::tie(lb, p.sizes[b], a) < std::tie(la, p.sizes[a], b);
         }},
        {"start-asc",
         [&](int a, int b) {
             uint64_t sa = lifeStart(a), sb = lifeStart(b);
             return std::tie(sa, p.sizes[b], a) < std::tie(sb, p.sizes[a], b);
         }},
    };
    OffsetPlan best;
    bool haveBest = false;
    // A peak no plan goes below: max-live, when every two buffers that meet conflict (otherwise
    // two that meet may share addresses, and max-live proves nothing).
    const uint64_t floor = meetingConflict ? maxLiveBytes(p.lifetimes, p.sizes) : 0;
    // A large problem (a wide program's SRAM: thousands of buffers live together, each
    // ordering's placement O(pairs)) takes the orderings by size only, the ones that win there;
    // an interval one is swept over time first, in O(n log n), and when that reaches max-live
    // no ordering can do better and none is run.
    const bool large = pairs >= kPairsOfALargeProblem;
    if (large && meetingConflict && conflictsOnlyOverlaps(p)) {
        best = placeInTimeOrder(p);
        haveBest = true;
    }
    const bool beside = threads > 1 && pairs >= kPairsForAThread;
    std::vector<int> order(n);
    for (const auto& [name, less] : orders) {
        if (haveBest && best.peak <= floor)
            break;
        if (!haveLife && name != "size-desc" && name != "conflict-weight")
            continue;
        if (large && name != "size-desc")
            continue;
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), less);
        std::future<OffsetPlan> firstFit;
        if (beside)
            firstFit = std::async(std::launch::async, [&p, &order] { return placeInOrder(p, order, Fit::First); });
        for (Fit fit : {Fit::Best, Fit::First}) {
            if (haveBest && best.peak <= floor)
                break;
            OffsetPlan plan = fit == Fit::First && beside ? firstFit.get() : placeInOrder(p, order, fit);
            if (!haveBest || plan.peak < best.peak) {
                plan.heuristic = name + (fit == Fit::Best ? "/best-fit" : "/first-fit");
                best = std::move(plan);
                haveBest = true;
            }
        }
    }
    return best;
}

} // namespace

OffsetPlan planOffsets(const OffsetProblem& p, const OffsetSearchOptions& options) {
    // Whether max-live bounds the plans, checked once for the heuristics and the search.
    const size_t n = p.sizes.size();
    const bool meetingConflict = !p.overlapsOnly && p.lifetimes.size() == n && p.conflicts.size() == n &&
                                 meetingBuffersConflict(p.lifetimes, p.sizes, p.conflicts);
    OffsetPlan plan = planByHeuristics(p, options.threads, meetingConflict);
    searchSmallerPeak(p, options, meetingConflict, plan);
    if (options.capacity > 0 && plan.peak > options.capacity)
        plan.fitsCapacity = false;
    return plan;
}

namespace {

Status overlapError(const OffsetProblem& p, const OffsetPlan& plan, size_t i, size_t j) {
    const uint64_t ai = plan.offsets[i], bi = ai + p.sizes[i];
    const uint64_t aj = plan.offsets[j], bj = aj + p.sizes[j];
    return makeError(ErrorKind::Verify, "buffers " + std::to_string(std::min(i, j)) + " and " +
                                            std::to_string(std::max(i, j)) + " may be live together but overlap at [" +
                                            std::to_string(std::max(ai, aj)) + ", " + std::to_string(std::min(bi, bj)) +
                                            ")");
}

/// The check of an overlapsOnly plan, in one sweep over time: the buffers live at a moment hold
/// disjoint ranges, so a starting buffer overlaps one of them exactly when it overlaps the one
/// below or the one above its offset.
Status checkBySweep(const OffsetProblem& p, const OffsetPlan& plan) {
    const Sweep sweep = sweepOf(p);
    std::map<uint64_t, int> live; // offset -> buffer
    size_t ended = 0;
    for (int i : sweep.byStart) {
        for (; ended < sweep.byEnd.size() && p.lifetimes[sweep.byEnd[ended]].second <= p.lifetimes[i].first; ++ended)
            live.erase(plan.offsets[sweep.byEnd[ended]]);
        const uint64_t begin = plan.offsets[i], end = begin + p.sizes[i];
        auto above = live.lower_bound(begin);
        if (above != live.end() && above->first < end)
            return overlapError(p, plan, static_cast<size_t>(i), static_cast<size_t>(above->second));
        if (above != live.begin()) {
            const int below = std::prev(above)->second;
            if (plan.offsets[below] + p.sizes[below] > begin)
                return overlapError(p, plan, static_cast<size_t>(i), static_cast<size_t>(below));
        }
        live.emplace(begin, i);
    }
    return {};
}

} // namespace

Status checkOffsetPlan(const OffsetProblem& p, const OffsetPlan& plan) {
    const size_t n = p.sizes.size();
    if (plan.offsets.size() != n)
        return makeError(ErrorKind::Verify, "offset plan has " + std::to_string(plan.offsets.size()) +
                                                " offsets for " + std::to_string(n) + " buffers");
    if (p.overlapsOnly && p.lifetimes.size() != n)
        return makeError(ErrorKind::Verify, "offset problem of overlapping lifetimes has " +
                                                std::to_string(p.lifetimes.size()) + " lifetimes for " +
                                                std::to_string(n) + " buffers");
    for (size_t i = 0; i < n; ++i) {
        if (p.alignment > 1 && plan.offsets[i] % p.alignment != 0)
            return makeError(ErrorKind::Verify, "buffer " + std::to_string(i) + " offset " +
                                                    std::to_string(plan.offsets[i]) + " is not aligned");
        if (plan.offsets[i] + p.sizes[i] > plan.peak)
            return makeError(ErrorKind::Verify, "buffer " + std::to_string(i) + " ends past the peak");
        if (p.overlapsOnly)
            continue;
        for (int j : p.conflicts[i]) {
            if (p.sizes[i] == 0 || p.sizes[j] == 0)
                continue;
            uint64_t ai = plan.offsets[i], bi = ai + p.sizes[i];
            uint64_t aj = plan.offsets[j], bj = aj + p.sizes[j];
            if (ai < bj && aj < bi)
                return overlapError(p, plan, i, static_cast<size_t>(j));
        }
    }
    return p.overlapsOnly ? checkBySweep(p, plan) : Status{};
}

OffsetProblem problemFromIntervals(const std::vector<IntervalBuffer>& buffers, uint64_t alignment,
                                   uint64_t maxListedPairs) {
    OffsetProblem p;
    p.alignment = alignment;
    const size_t n = buffers.size();
    p.sizes.resize(n);
    p.lifetimes.resize(n);
    for (size_t i = 0; i < n; ++i) {
        p.sizes[i] = buffers[i].size;
        p.lifetimes[i] = {buffers[i].lower, buffers[i].upper};
    }
    if (overlappingPairs(p.lifetimes, p.sizes) > maxListedPairs) {
        p.overlapsOnly = true;
        return p;
    }
    // Sweep by start time: only buffers whose intervals intersect become neighbours.
    std::vector<int> byStart(n);
    std::iota(byStart.begin(), byStart.end(), 0);
    std::sort(byStart.begin(), byStart.end(), [&](int a, int b) {
        return std::tie(buffers[a].lower, a) < std::tie(buffers[b].lower, b);
    });
    // Each list in sweep order: no plan depends on the order of a list (the placements sort what
    // they take from it, the search ranks by its own), so none is sorted.
    p.conflicts.resize(n);
    for (size_t x = 0; x < n; ++x) {
        int i = byStart[x];
        for (size_t y = x + 1; y < n; ++y) {
            int j = byStart[y];
            if (buffers[j].lower >= buffers[i].upper)
                break;
            if (buffers[i].lower < buffers[i].upper && buffers[j].lower < buffers[j].upper) {
                p.conflicts[i].push_back(j);
                p.conflicts[j].push_back(i);
            }
        }
    }
    // The conflicts listed beyond the lifetimes, each pair once in both lists.
    if (hasConflictsBeyondLifetimes(buffers)) {
        for (size_t i = 0; i < n; ++i)
            for (size_t j : buffers[i].conflicts)
                if (j < n && j != i) {
                    p.conflicts[i].push_back(static_cast<int>(j));
                    p.conflicts[j].push_back(static_cast<int>(i));
                }
        for (std::vector<int>& c : p.conflicts) {
            std::sort(c.begin(), c.end());
            c.erase(std::unique(c.begin(), c.end()), c.end());
        }
    }
    return p;
}

bool hasConflictsBeyondLifetimes(const std::vector<IntervalBuffer>& buffers) {
    return std::any_of(buffers.begin(), buffers.end(), [](const IntervalBuffer& b) { return !b.conflicts.empty(); });
}

Expected<uint64_t> commonAlignment(const std::vector<IntervalBuffer>& buffers, uint64_t base) {
    uint64_t common = std::max<uint64_t>(base, 1);
    if (common > kMaxAlignment)
        return makeError(ErrorKind::Unsupported, "alignment " + std::to_string(common) + " is over 2^40 bytes");
    for (const IntervalBuffer& b : buffers) {
        const uint64_t a = std::max<uint64_t>(b.alignment, 1);
        const uint64_t step = a / std::gcd(common, a);
        if (step > kMaxAlignment / common)
            return makeError(ErrorKind::Unsupported,
                             "the buffers' alignments have no common multiple up to 2^40 bytes (" +
                                 std::to_string(common) + " and " + std::to_string(a) + ", of buffer '" + b.id + "')");
        common *= step;
    }
    return common;
}

uint64_t maxLiveBytes(const std::vector<std::pair<uint64_t, uint64_t>>& lifetimes, const std::vector<uint64_t>& sizes) {
    std::vector<std::pair<uint64_t, int64_t>> events; // (time, +size or -size): at one time, ends sort first
    for (size_t i = 0; i < sizes.size(); ++i)
        if (hasBytesAndTime(lifetimes, sizes, i)) {
            events.emplace_back(lifetimes[i].first, static_cast<int64_t>(sizes[i]));
            events.emplace_back(lifetimes[i].second, -static_cast<int64_t>(sizes[i]));
        }
    std::sort(events.begin(), events.end());
    int64_t live = 0, peak = 0;
    for (const auto& [t, d] : events)
        peak = std::max(peak, live += d);
    return static_cast<uint64_t>(peak);
}

bool meetingBuffersConflict(const std::vector<std::pair<uint64_t, uint64_t>>& lifetimes,
                            const std::vector<uint64_t>& sizes, const std::vector<std::vector<int>>& lists) {
    std::vector<int> byStart; // a sweep by start: each buffer meets those after it that start before it ends
    for (size_t i = 0; i < sizes.size(); ++i)
        if (hasBytesAndTime(lifetimes, sizes, i))
            byStart.push_back(static_cast<int>(i));
    std::sort(byStart.begin(), byStart.end(),
              [&](int a, int b) { return std::tie(lifetimes[a].first, a) < std::tie(lifetimes[b].first, b); });
    // Per x, its list's entries stamped with x, then every buffer it meets looked up: one pass
    // over the lists and the meeting pairs, in any list order.
    std::vector<size_t> stamp(sizes.size(), SIZE_MAX);
    for (size_t x = 0; x < byStart.size(); ++x) {
        const auto meets = [&](size_t y) {
            return y < byStart.size() && lifetimes[byStart[y]].first < lifetimes[byStart[x]].second;
        };
        if (!meets(x + 1))
            continue;
        for (int j : lists[static_cast<size_t>(byStart[x])])
            if (j >= 0 && static_cast<size_t>(j) < stamp.size())
                stamp[static_cast<size_t>(j)] = x;
        for (size_t y = x + 1; meets(y); ++y)
            if (stamp[static_cast<size_t>(byStart[y])] != x)
                return false;
    }
    return true;
}

uint64_t maxLiveBytes(const std::vector<IntervalBuffer>& buffers) {
    std::vector<std::pair<uint64_t, uint64_t>> lifetimes(buffers.size());
    std::vector<uint64_t> sizes(buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
        lifetimes[i] = {buffers[i].lower, buffers[i].upper};
        sizes[i] = buffers[i].size;
    }
    return maxLiveBytes(lifetimes, sizes);
}

namespace {

/// A cell of digits only, as a number; nothing for anything else (a sign, spaces, trailing text,
/// more than 64 bits).
std::optional<uint64_t> parseCount(const std::string& cell) {
    uint64_t v = 0;
    const char* end = cell.data() + cell.size();
    auto [at, ec] = std::from_chars(cell.data(), end, v);
    if (ec != std::errc() || at != end || cell.empty())
        return std::nullopt;
    return v;
}

} // namespace

namespace {

constexpr size_t kMaxCsvLine = kMaxIntervalCsvLine;
constexpr size_t kMaxCsvRows = 10'000'000;     ///< buffers in one file
/// The most bytes all of a file's buffers may add up to (64 PiB): no memory holds more, and the
/// planner's sums (a section's bytes, an offset plus a size) stay far from 64-bit overflow.
constexpr uint64_t kMaxCsvTotalBytes = uint64_t{1} << 56;

/// Reads one line (without its "\n" or "\r\n") of at most kMaxCsvLine bytes. False at the end of
/// the input; `tooLong` when the line goes on past the limit (a file of endless bytes).
bool readLine(std::istream& in, std::string& line, bool& tooLong) {
    line.clear();
    tooLong = false;
    char c;
    bool any = false;
    while (in.get(c)) {
        any = true;
        if (c == '\n')
            break;
        if (line.size() >= kMaxCsvLine) {
            tooLong = true;
            return true;
        }
        line.push_back(c);
    }
    if (!line.empty() && line.back() == '\r')
        line.pop_back();
    return any;
}

/// The cells of a line, without the spaces and tabs around each.
std::vector<std::string> splitCells(const std::string& line) {
    std::vector<std::string> cells(1);
    for (char c : line) {
        if (c == ',')
            cells.emplace_back();
        else
            cells.back().push_back(c);
    }
    for (std::string& cell : cells) {
        const size_t first = cell.find_first_not_of(" \t");
        cell = first == std::string::npos ? std::string() : cell.substr(first, cell.find_last_not_of(" \t") - first + 1);
    }
    return cells;
}

/// A header cell as one of the four columns and the alignment (MiniMalloc's other spellings
/// mapped to ours), or itself.
std::string columnName(const std::string& cell) {
    if (cell == "begin" || cell == "start")
        return "lower";
    if (cell == "buffer" || cell == "buffer_id")
        return "id";
    return cell;
}

} // namespace

Expected<std::vector<IntervalBuffer>> readIntervalCsv(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorKind::Io, path + ": cannot open");
    std::string line;
    bool tooLong = false;
    if (!readLine(in, line, tooLong))
        return makeError(ErrorKind::Parse, path + ": empty file (expected the header 'id,lower,upper,size')");
    if (tooLong)
        return makeError(ErrorKind::Parse, path + ":1: line longer than " + std::to_string(kMaxCsvLine) + " bytes");
    // The four columns by name, `end` (an inclusive upper) and `alignment`; others (an `offset`
    // column of a written plan) are ignored.
    std::vector<std::string> header = splitCells(line);
    if (!header.empty() && header[0].rfind("\xEF\xBB\xBF", 0) == 0)
        header[0].erase(0, 3); // a UTF-8 byte order mark, as spreadsheets write
    for (size_t c = 0; c < header.size(); ++c) {
        const std::string name = columnName(header[c]);
        for (size_t d = 0; d < c; ++d)
            if (!name.empty() && columnName(header[d]) == name)
                return makeError(ErrorKind::Parse, path + ":1: the header has two columns for " + name + " ('" +
                                                       header[d] + "' and '" + header[c] + "')");
    }
    auto find = [&](const std::string& name) {
        for (size_t c = 0; c < header.size(); ++c)
            if (columnName(header[c]) == name)
                return c;
        return header.size();
    };
    const size_t none = header.size();
    const char* names[5] = {"id", "lower", "upper", "size", "alignment"};
    size_t column[5];
    for (int k = 0; k < 5; ++k)
        column[k] = find(names[k]);
    const size_t endColumn = find("end");
    if (endColumn != none && column[2] != none)
        return makeError(ErrorKind::Parse, path + ":1: the header has both 'upper' and 'end' (one lifetime end)");
    const bool inclusiveEnd = endColumn != none;
    if (inclusiveEnd)
        column[2] = endColumn;
    const bool aligned = column[4] != none;
    const size_t conflictColumn = find("conflicts");
    std::string missing;
    for (int k = 0; k < 4; ++k)
        if (column[k] == none)
            missing += std::string(missing.empty() ? "" : ", ") + names[k];
    if (!missing.empty())
        return makeError(ErrorKind::Parse, path + ":1: the header has no column " + missing +
                                               " (expected 'id,lower,upper,size')");
    std::vector<IntervalBuffer> out;
    std::vector<size_t> lineOf;                     // per row, its line
    std::vector<std::vector<std::string>> named;    // per row, the ids its conflicts cell names
    size_t lineNo = 1;
    uint64_t totalBytes = 0;
    while (readLine(in, line, tooLong)) {
        ++lineNo;
        const std::string where = path + ":" + std::to_string(lineNo) + ": ";
        if (tooLong)
            return makeError(ErrorKind::Parse, where + "line longer than " + std::to_string(kMaxCsvLine) + " bytes");
        if (line.empty())
            continue;
        if (out.size() >= kMaxCsvRows)
            return makeError(ErrorKind::Parse, where + "more than " + std::to_string(kMaxCsvRows) + " buffers");
        const std::vector<std::string> cells = splitCells(line);
        if (cells.size() != header.size())
            return makeError(ErrorKind::Parse, where + "expected " + std::to_string(header.size()) + " fields, found " +
                                                   std::to_string(cells.size()));
        IntervalBuffer b;
        b.id = cells[column[0]];
        uint64_t* fields[4] = {&b.lower, &b.upper, &b.size, &b.alignment};
        for (int k = 1; k < (aligned ? 5 : 4); ++k) {
            const std::string& cell = cells[column[k]];
            const std::optional<uint64_t> v = parseCount(cell);
            const std::string name = k == 2 && inclusiveEnd ? std::string("end") : names[k];
            if (!v) {
                const bool negative = cell.size() > 1 && cell[0] == '-' && parseCount(cell.substr(1));
                return makeError(ErrorKind::Parse, where + name + " '" + cell + "' is " +
                                                       (negative ? "negative" : "not a number"));
            }
            *fields[k - 1] = *v;
        }
        if (inclusiveEnd) {
            if (b.upper == UINT64_MAX)
                return makeError(ErrorKind::Parse, where + "end " + std::to_string(b.upper) + " is past the last time");
            ++b.upper;
        }
        if (aligned && (b.alignment == 0 || b.alignment > kMaxAlignment))
            return makeError(ErrorKind::Parse, where + "alignment " + std::to_string(b.alignment) +
                                                   (b.alignment == 0 ? " is not a positive number"
                                                                     : " is over 2^40 bytes"));
        if (b.lower >= b.upper && inclusiveEnd)
            return makeError(ErrorKind::Parse, where + "lower " + std::to_string(b.lower) + " is after end " +
                                                   std::to_string(b.upper - 1) + " (a lifetime is [lower, end])");
        if (b.lower >= b.upper)
            return makeError(ErrorKind::Parse, where + "lower " + std::to_string(b.lower) + " is not below upper " +
                                                   std::to_string(b.upper) + " (a lifetime is [lower, upper))");
        if (b.size > kMaxCsvTotalBytes - totalBytes)
            return makeError(ErrorKind::Parse, where + "size " + std::to_string(b.size) +
                                                   " makes the buffers add up to more than 2^56 bytes (64 PiB), "
                                                   "more than any memory holds");
        totalBytes += b.size;
        if (conflictColumn != none) {
            std::vector<std::string> ids;
            std::istringstream words(cells[conflictColumn]);
            for (std::string id; words >> id;)
                ids.push_back(std::move(id));
            named.push_back(std::move(ids));
        }
        lineOf.push_back(lineNo);
        out.push_back(std::move(b));
    }
    if (conflictColumn == none)
        return out;
    // The ids the conflicts name, as rows: each must be one row's, and not the naming row's own.
    std::unordered_map<std::string, size_t> rowOf;
    rowOf.reserve(out.size());
    for (size_t r = 0; r < out.size(); ++r)
        if (auto [at, fresh] = rowOf.emplace(out[r].id, r); !fresh)
            return makeError(ErrorKind::Parse, path + ":" + std::to_string(lineOf[r]) + ": id '" + out[r].id +
                                                   "' is also on line " + std::to_string(lineOf[at->second]) +
                                                   " (the conflicts column names rows by id)");
    for (size_t r = 0; r < out.size(); ++r)
        for (const std::string& id : named[r]) {
            const auto at = rowOf.find(id);
            const std::string where = path + ":" + std::to_string(lineOf[r]) + ": ";
            if (at == rowOf.end())
                return makeError(ErrorKind::Parse, where + "conflicts names '" + id + "', which no row has");
            if (at->second == r)
                return makeError(ErrorKind::Parse, where + "conflicts names the row's own id '" + id + "'");
            out[r].conflicts.push_back(at->second);
        }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Program memory plan

namespace {

struct Access {
    std::vector<int> writers;
    std::vector<int> readers;
};

std::vector<Access> accessesOf(const Program& prog) {
    std::vector<Access> acc(prog.buffers.size());
    for (const Task& t : prog.tasks) {
        for (int b : t.inputs)
            if (b >= 0 && static_cast<size_t>(b) < acc.size())
                acc[b].readers.push_back(t.id);
        for (int b : t.outputs)
            if (b >= 0 && static_cast<size_t>(b) < acc.size())
                acc[b].writers.push_back(t.id);
    }
    for (Access& a : acc) {
        std::sort(a.readers.begin(), a.readers.end());
        a.readers.erase(std::unique(a.readers.begin(), a.readers.end()), a.readers.end());
    }
    return acc;
}

/// accessesOf with every access to a buffer written in place into another (a Concat lowered in
/// place) counted as an access to each buffer holding it too: the memory plan places and the
/// reuse check orders a holder with all of what its parts' Tasks do.
std::vector<Access> withInPlaceParts(const Program& prog, std::vector<Access> acc) {
    const std::vector<Access> own = acc;
    for (const Buffer& b : prog.buffers)
        forEachHolder(prog.buffers, b.id, [&](int holder, uint64_t) {
            Access& h = acc[static_cast<size_t>(holder)];
            h.writers.insert(h.writers.end(), own[b.id].writers.begin(), own[b.id].writers.end());
            h.readers.insert(h.readers.end(), own[b.id].readers.begin(), own[b.id].readers.end());
        });
    for (Access& a : acc)
        for (std::vector<int>* list : {&a.writers, &a.readers}) {
            std::sort(list->begin(), list->end());
            list->erase(std::unique(list->begin(), list->end()), list->end());
        }
    return acc;
}

std::string taskLabel(const Program& prog, int id) {
    return "task " + std::to_string(id) + " '" + prog.tasks[id].name + "'";
}
std::string bufferLabel(const Program& prog, int id) {
    return "buffer " + std::to_string(id) + " '" + prog.buffers[id].value + "'";
}

/// A buffer has one writing Task, or the parts of one split group, each writing its own slice
/// of one dim (disjoint ranges within the dim). Anything else is a compiler bug.
Status checkWriters(const Program& prog, const Buffer& b, const std::vector<int>& writers) {
    if (writers.size() == 1 && prog.tasks[static_cast<size_t>(writers.front())].parts <= 1)
        return {};
    const Task& first = prog.tasks[static_cast<size_t>(writers.front())];
    bool siblings = !writers.empty() && first.parts == static_cast<int>(writers.size()) && first.parts > 1;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int w : writers) {
        const Task& t = prog.tasks[static_cast<size_t>(w)];
        siblings = siblings && sameSplit(t, first) && t.outputs.size() == 1;
        ranges.emplace_back(t.sliceBegin, t.sliceEnd);
    }
    if (!siblings)
        return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " has " + std::to_string(writers.size()) +
                                                " writing tasks (expected 1, or the parts of one split group)");
    const std::vector<int64_t> dims = b.type.dims();
    if (first.sliceAxis < 0 || static_cast<size_t>(first.sliceAxis) >= dims.size())
        return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + ": its parts slice dim " +
                                                std::to_string(first.sliceAxis) + " of " + b.type.str());
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 0; i < ranges.size(); ++i) {
        if (ranges[i].first < 0 || ranges[i].first >= ranges[i].second ||
            ranges[i].second > dims[static_cast<size_t>(first.sliceAxis)])
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + ": a part writes the empty or out-of-range "
                                                    "slice [" + std::to_string(ranges[i].first) + ", " +
                                                    std::to_string(ranges[i].second) + ") of dim " +
                                                    std::to_string(first.sliceAxis) + " of " + b.type.str());
        if (i > 0 && ranges[i].first < ranges[i - 1].second)
            return makeError(ErrorKind::Verify, "hazard: the parts of " + first.nodes.front() + " write overlapping "
                                                    "slices of " + bufferLabel(prog, b.id));
    }
    return {};
}

/// Weights first (those in weights.bin, then those the loader fills), then graph inputs and
/// outputs, each aligned, from address 0; records the regions in prog.memory and returns the
/// first address after them (the arena's base).
uint64_t placeHostBuffers(Program& prog, uint64_t align) {
    MemoryStats& mem = prog.memory;
    uint64_t cursor = 0;
    mem.weightsBase = 0;
    for (Buffer& b : prog.buffers)
        if (b.kind == BufferKind::Weight && !b.fill) {
            b.offset = cursor;
            cursor = alignUp(cursor + b.size, align);
        }
    mem.weightBytes = cursor - mem.weightsBase;
    for (Buffer& b : prog.buffers) // the loader's fills: no bytes in weights.bin
        if (b.kind == BufferKind::Weight && b.fill) {
            b.offset = cursor;
            cursor = alignUp(cursor + b.size, align);
        }
    mem.ioBase = cursor;
    for (BufferKind kind : {BufferKind::Input, BufferKind::Output})
        for (Buffer& b : prog.buffers)
            if (b.kind == kind && b.type.isStatic()) { // an output the host holds has no address
                b.offset = cursor;
                cursor = alignUp(cursor + b.size, align);
            }
    mem.ioBytes = cursor - mem.ioBase;
    return cursor;
}

/// The sizes and estimated lifetimes (first write to last access) of the intermediates
/// `inter`, into `problem`; each must have a writer, checked by checkWriters.
Status describeIntermediates(const Program& prog, const std::vector<Access>& acc, const std::vector<int>& inter,
                             const std::vector<char>& holders, OffsetProblem& problem) {
    for (size_t i = 0; i < inter.size(); ++i) {
        const Buffer& b = prog.buffers[inter[i]];
        const Access& a = acc[b.id];
        if (a.writers.empty())
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " has no writer");
        if (!holders[static_cast<size_t>(b.id)]) // a holder's writers are its parts' (checkHazards)
            SX_TRY(checkWriters(prog, b, a.writers));
        problem.sizes[i] = b.size;
        uint64_t start = UINT64_MAX, end = 0;
        for (int w : a.writers) {
            start = std::min(start, prog.tasks[w].estStart);
            end = std::max(end, prog.tasks[w].estEnd);
        }
        for (int r : a.readers)
            end = std::max(end, prog.tasks[r].estEnd);
        problem.lifetimes[i] = {start, end};
    }
    return {};
}

/// Per chain of the Task order, the intermediates met so far keyed by the last position of
/// their accesses on that chain: the ones not all before a frontier are those with a key past
/// the frontier on some chain, found without visiting the others.
class AccessIndex {
public:
    AccessIndex(const std::vector<Access>& acc, const std::vector<int>& inter, const Reachability& order)
        : m_acc(acc), m_inter(inter), m_order(order), m_byChain(order.chains()),
          m_stamp(inter.size(), SIZE_MAX) {}

    void insert(size_t i) {
        std::map<uint32_t, int32_t> last; // chain -> last position of an access to inter[i]
        for (const std::vector<int>* list : {&m_acc[m_inter[i]].writers, &m_acc[m_inter[i]].readers})
            for (int t : *list) {
                int32_t& at = last.try_emplace(m_order.chainOf(t), -1).first->second;
                at = std::max(at, m_order.positionOf(t));
            }
        for (const auto& [chain, pos] : last)
            m_byChain[chain].emplace(pos, i);
    }
    /// Calls `f(i)` once for each inserted intermediate with an access outside `frontier`.
    template <typename F>
    void forEachNotBefore(const Reachability::Frontier& frontier, size_t query, F&& f) {
        for (size_t c = 0; c < m_byChain.size(); ++c)
            for (auto it = m_byChain[c].upper_bound(frontier[c]); it != m_byChain[c].end(); ++it)
                if (m_stamp[it->second] != query) {
                    m_stamp[it->second] = query;
                    f(it->second);
                }
    }

private:
    const std::vector<Access>& m_acc;
    const std::vector<int>& m_inter;
    const Reachability& m_order;
    std::vector<std::multimap<int32_t, size_t>> m_byChain;
    std::vector<size_t> m_stamp;
};

/// The indexes of `inter` in the order of their first writes in the estimated schedule (ties by
/// index); `first` gets each one's first write.
std::vector<size_t> byFirstWrite(const Program& prog, const std::vector<Access>& acc, const std::vector<int>& inter,
                                 std::vector<uint64_t>& first) {
    const size_t n = inter.size();
    first.assign(n, UINT64_MAX);
    for (size_t i = 0; i < n; ++i)
        for (int w : acc[inter[i]].writers)
            first[i] = std::min(first[i], prog.tasks[static_cast<size_t>(w)].estStart);
    std::vector<size_t> byFirst(n);
    std::iota(byFirst.begin(), byFirst.end(), 0);
    std::sort(byFirst.begin(), byFirst.end(), [&](size_t a, size_t b) { return std::tie(first[a], a) < std::tie(first[b], b); });
    return byFirst;
}

/// Intermediates `inter[i]` and `inter[j]` conflict unless one's accesses all happen before
/// the other's writers.
void addConflicts(const Program& prog, const std::vector<Access>& acc, const std::vector<int>& inter,
                  const Reachability& order, OffsetProblem& problem) {
    // safeAfter(x, y): y's writer may reuse x's space because every access to x is done first.
    auto safeAfter = [&](int x, int y) {
        for (int w : acc[y].writers)
            for (const std::vector<int>* list : {&acc[x].writers, &acc[x].readers})
                for (int t : *list)
                    if (!order.before(t, w))
                        return false;
        return true;
    };
    auto conflict = [&](size_t i, size_t j) {
        problem.conflicts[i].push_back(static_cast<int>(j));
        problem.conflicts[j].push_back(static_cast<int>(i));
    };
    // Only the one written first can be safe before the other: a dep ends before its consumer
    // starts in the schedule, so if x's accesses all come before y's writers, x was written
    // earlier. So for y, the buffers written earlier conflict with it unless all their accesses
    // are among the Tasks before every writer of y (one frontier per y, the index finds the
    // others); ties in the first write are checked both ways.
    const size_t n = inter.size();
    std::vector<uint64_t> first;
    const std::vector<size_t> byFirst = byFirstWrite(prog, acc, inter, first);
    AccessIndex index(acc, inter, order);
    Reachability::Frontier before;
    for (size_t p = 0; p < n;) {
        size_t end = p; // [p, end): written first at the same time
        while (end < n && first[byFirst[end]] == first[byFirst[p]])
            ++end;
        for (size_t a = p; a < end; ++a) {
            const size_t j = byFirst[a];
            order.commonAncestors(acc[inter[j]].writers, before);
            index.forEachNotBefore(before, j, [&](size_t i) { conflict(i, j); });
            for (size_t b = p; b < a; ++b)
                if (!safeAfter(inter[byFirst[b]], inter[j]) && !safeAfter(inter[j], inter[byFirst[b]]))
                    conflict(byFirst[b], j);
        }
        for (size_t a = p; a < end; ++a)
            index.insert(byFirst[a]);
        p = end;
    }
    for (std::vector<int>& c : problem.conflicts) // ascending, as planOffsets' orderings expect to see them
        std::sort(c.begin(), c.end());
}

/// Whether `y` may take the addresses of `x` slice by slice: every Task that touches bytes of `x`
/// (its writers and readers, touchedBytes) is ordered before each writer of `y` that writes any
/// of the same bytes, and none of them is that writer (no Task overwrites what it reads). Two
/// buffers of one type (dims and dtype) at one address share exactly the bytes of the slices
/// they have in common.
bool followsSliceBySlice(const Program& prog, const std::vector<Access>& acc, const Reachability& order, int x,
                         int y) {
    const Buffer& bx = prog.buffers[static_cast<size_t>(x)];
    const Buffer& by = prog.buffers[static_cast<size_t>(y)];
    for (int w : acc[y].writers) {
        const SliceBytes written = touchedBytes(prog.tasks[static_cast<size_t>(w)], by);
        for (const std::vector<int>* list : {&acc[x].writers, &acc[x].readers})
            for (int t : *list)
                if ((t == w || !order.before(t, w)) &&
                    bytesMeet(0, touchedBytes(prog.tasks[static_cast<size_t>(t)], bx), 0, written))
                    return false;
    }
    return true;
}

/// Intermediates that share one address range slice by slice: a map split across cores whose
/// readers wait only for the parts they read leaves every core's chain unordered with the
/// others, so a later map of the same shape cannot take its space as a whole (some part of it
/// is still read on another core), but each of its parts can take the space of the slice it
/// writes once that slice's readers are done. Taken in the order of their first writes, a map
/// split across cores joins the first of the kRecent latest groups of its type (dims and dtype)
/// whose latest member it follows slice by slice (followsSliceBySlice; the members before follow
/// by transitivity, byte by byte). Returns, per intermediate, its group's first member (an
/// index into `inter`).
std::vector<size_t> sliceShares(const Program& prog, const std::vector<Access>& acc, const std::vector<int>& inter,
                                const Reachability& order, const std::vector<char>& holders) {
    const size_t n = inter.size();
    std::vector<size_t> group(n), last(n);
    std::iota(group.begin(), group.end(), 0);
    std::iota(last.begin(), last.end(), 0);
    std::vector<uint64_t> first;
    const std::vector<size_t> byFirst = byFirstWrite(prog, acc, inter, first);
    auto shareable = [&](const Buffer& b) {
        return b.stripes.empty() && acc[b.id].writers.size() > 1 && !holders[static_cast<size_t>(b.id)];
    };
    std::vector<size_t> candidates;
    constexpr size_t kRecent = 8;
    std::map<std::string, std::vector<size_t>> tails;
    for (size_t j : byFirst) {
        const Buffer& by = prog.buffers[static_cast<size_t>(inter[j])];
        if (!shareable(by))
            continue;
        candidates.clear();
        std::vector<size_t>& recent = tails[by.type.str()];
        for (auto it = recent.rbegin(); it != recent.rend() && candidates.size() < kRecent; ++it)
            if (last[group[*it]] == *it)
                candidates.push_back(*it);
        for (size_t i : candidates) {
            const Buffer& bx = prog.buffers[static_cast<size_t>(inter[i])];
            if (last[group[i]] != i || group[i] == group[j] || !shareable(bx) || bx.type != by.type ||
                bx.size != by.size || first[i] >= first[j] || !followsSliceBySlice(prog, acc, order, bx.id, by.id))
                continue;
            group[j] = group[i];
            last[group[i]] = j;
            break;
        }
        tails[by.type.str()].push_back(j);
    }
    return group;
}

/// Tasks are numbered by position, depend only on earlier tasks and name existing buffers;
/// returns each task's dependencies.
Expected<std::vector<std::vector<int>>> taskPredecessors(const Program& prog) {
    const size_t nt = prog.tasks.size();
    std::vector<std::vector<int>> preds(nt);
    for (size_t i = 0; i < nt; ++i) {
        const Task& t = prog.tasks[i];
        if (t.id != static_cast<int>(i))
            return makeError(ErrorKind::Verify, "task at position " + std::to_string(i) + " has id " + std::to_string(t.id));
        for (int d : t.deps) {
            if (d < 0 || d >= t.id)
                return makeError(ErrorKind::Verify, taskLabel(prog, t.id) + " depends on task " + std::to_string(d) +
                                                        " which does not come before it");
            preds[i].push_back(d);
        }
        for (int b : t.inputs)
            if (b < 0 || static_cast<size_t>(b) >= prog.buffers.size())
                return makeError(ErrorKind::Verify, taskLabel(prog, t.id) + " reads unknown buffer " + std::to_string(b));
        for (int b : t.outputs)
            if (b < 0 || static_cast<size_t>(b) >= prog.buffers.size())
                return makeError(ErrorKind::Verify, taskLabel(prog, t.id) + " writes unknown buffer " + std::to_string(b));
    }
    return preds;
}

/// Every DRAM buffer is aligned, inside the planned DRAM and large enough for its tensor.
Status checkDramPlacement(const Program& prog) {
    const MemoryStats& mem = prog.memory;
    const uint64_t align = std::max<uint64_t>(prog.target.dramAlign, 1);
    for (const Buffer& b : prog.buffers) {
        if (b.level != MemLevel::Dram || !b.type.isStatic()) // on chip, or held by the host
            continue;
        if (b.offset % align != 0)
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " offset " + std::to_string(b.offset) +
                                                    " is not " + std::to_string(align) + "-byte aligned");
        if (b.offset + b.size > mem.dramTotal || mem.dramTotal > prog.target.dramBytes)
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " [" + std::to_string(b.offset) + ", " +
                                                    std::to_string(b.offset + b.size) + ") is outside the planned DRAM (" +
                                                    std::to_string(mem.dramTotal) + " bytes)");
        // A halo buffer's DRAM home holds only its stripes' halo rows.
        const ir::TensorType held = b.stripes.empty() ? b.type : b.haloHomeType();
        int64_t numel = held.numel();
        if (numel < 0 || static_cast<uint64_t>(numel) * ir::dtypeSize(held.dtype) > b.size)
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " is smaller than its tensor " + held.str());
    }
    return {};
}

} // namespace

bool disjointSliceRead(const Task& writer, const Task& reader, int buffer) {
    int64_t begin = reader.sliceBegin, end = reader.sliceEnd;
    if (const Task::HaloRead* h = reader.haloReadOf(buffer)) {
        begin = h->begin;
        end = h->end;
    } else if (!std::binary_search(reader.sliceLocalInputs.begin(), reader.sliceLocalInputs.end(), buffer)) {
        return false;
    }
    return writer.parts > 1 && writer.sliceAxis == reader.sliceAxis &&
           (writer.sliceEnd <= begin || end <= writer.sliceBegin);
}

namespace {

/// Host-written buffers (inputs, weights) have no writing task, every other buffer has its
/// writers, and every reader depends on every writer.
Status checkWritersAndReaders(const Program& prog, const std::vector<Access>& acc, const std::vector<Access>& held,
                              const std::vector<char>& holders, const Reachability& order) {
    for (const Buffer& b : prog.buffers) {
        const Access& a = acc[b.id];
        if (holders[static_cast<size_t>(b.id)]) {
            // Written only through its parts: every reader of the whole after every part's writer.
            if (!a.writers.empty())
                return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " holds buffers written in place but is "
                                                        "also written by " + taskLabel(prog, a.writers[0]));
            for (int w : held[b.id].writers)
                for (int r : a.readers)
                    if (!order.before(w, r) && !disjointSliceRead(prog.tasks[static_cast<size_t>(w)],
                                                                  prog.tasks[static_cast<size_t>(r)], b.id))
                        return makeError(ErrorKind::Verify, "hazard: " + taskLabel(prog, r) + " reads " +
                                                                bufferLabel(prog, b.id) + " without depending on " +
                                                                taskLabel(prog, w) + ", which writes a part of it in place");
            continue;
        }
        bool hostWritten = b.kind == BufferKind::Input || b.kind == BufferKind::Weight;
        if (hostWritten && !a.writers.empty())
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " is written by the host but also by " +
                                                    taskLabel(prog, a.writers[0]));
        if (!hostWritten && a.writers.empty())
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " has 0 writing tasks (expected 1)");
        if (!hostWritten)
            SX_TRY(checkWriters(prog, b, a.writers));
        for (int w : a.writers)
            for (int r : a.readers)
                if (!order.before(w, r) && !disjointSliceRead(prog.tasks[static_cast<size_t>(w)],
                                                              prog.tasks[static_cast<size_t>(r)], b.id))
                    return makeError(ErrorKind::Verify, "hazard: " + taskLabel(prog, r) + " reads " + bufferLabel(prog, b.id) +
                                                            " without depending on its writer " + taskLabel(prog, w));
    }
    return {};
}

/// A buffer written in place into another is a DRAM intermediate inside it, at the address its
/// offset says, in a chain that ends (a corrupt artifact could loop).
Status checkInPlace(const Program& prog) {
    for (const Buffer& b : prog.buffers) {
        if (b.inPlaceOf < 0)
            continue;
        if (static_cast<size_t>(b.inPlaceOf) >= prog.buffers.size() || b.inPlaceOf == b.id)
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " is written in place into buffer " +
                                                    std::to_string(b.inPlaceOf) + ", which is not another buffer");
        const Buffer& h = prog.buffers[static_cast<size_t>(b.inPlaceOf)];
        if (b.level != MemLevel::Dram || h.level != MemLevel::Dram || b.kind != BufferKind::Intermediate ||
            h.kind != BufferKind::Intermediate || !b.stripes.empty() || !h.stripes.empty())
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " is written in place into " +
                                                    bufferLabel(prog, h.id) + ": both must be DRAM intermediates");
        if (b.inPlaceOffset > h.size || b.size > h.size - b.inPlaceOffset || h.offset + b.inPlaceOffset != b.offset)
            return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " at [" + std::to_string(b.offset) + ", " +
                                                    std::to_string(b.offset + b.size) + ") is not its part [" +
                                                    std::to_string(b.inPlaceOffset) + ", " +
                                                    std::to_string(b.inPlaceOffset + b.size) + ") of " +
                                                    bufferLabel(prog, h.id) + " at " + std::to_string(h.offset));
        int at = b.inPlaceOf;
        for (size_t hops = 0; at >= 0; at = prog.buffers[static_cast<size_t>(at)].inPlaceOf)
            if (++hops > prog.buffers.size() || static_cast<size_t>(at) >= prog.buffers.size())
                return makeError(ErrorKind::Verify, bufferLabel(prog, b.id) + " is written in place into a chain "
                                                        "of buffers that never ends");
    }
    // Parts of one holder do not overlap (each has bytes of its own).
    std::vector<std::pair<uint64_t, int>> parts;
    for (const Buffer& b : prog.buffers)
        if (b.inPlaceOf >= 0)
            parts.emplace_back(b.offset, b.id);
    std::sort(parts.begin(), parts.end());
    for (size_t i = 1; i < parts.size(); ++i) {
        const Buffer& a = prog.buffers[static_cast<size_t>(parts[i - 1].second)];
        const Buffer& b = prog.buffers[static_cast<size_t>(parts[i].second)];
        if (a.inPlaceOf == b.inPlaceOf && a.offset + a.size > b.offset)
            return makeError(ErrorKind::Verify, "hazard: " + bufferLabel(prog, a.id) + " and " + bufferLabel(prog, b.id) +
                                                    " are both written in place at [" + std::to_string(b.offset) + ", " +
                                                    std::to_string(a.offset + a.size) + ") of " +
                                                    bufferLabel(prog, a.inPlaceOf));
    }
    return {};
}

/// Host-touched buffers (weights, graph inputs and outputs) overlap nothing: a sweep over the
/// DRAM buffers by offset, keeping the furthest end reached by a host buffer and by any buffer.
Status checkHostRegions(const Program& prog) {
    std::vector<int> byOffset;
    for (const Buffer& b : prog.buffers)
        if (b.level == MemLevel::Dram && b.size > 0)
            byOffset.push_back(b.id);
    std::sort(byOffset.begin(), byOffset.end(), [&](int x, int y) {
        return std::tie(prog.buffers[x].offset, x) < std::tie(prog.buffers[y].offset, y);
    });
    int furthestHost = -1, furthestAny = -1;
    auto endOf = [&](int id) { return id < 0 ? 0 : prog.buffers[id].offset + prog.buffers[id].size; };
    for (int id : byOffset) {
        const Buffer& y = prog.buffers[id];
        const bool host = y.kind != BufferKind::Intermediate;
        const int clash = host ? (y.offset < endOf(furthestAny) ? furthestAny : -1)
                               : (y.offset < endOf(furthestHost) ? furthestHost : -1);
        if (clash >= 0)
            return makeError(ErrorKind::Verify, "hazard: " + bufferLabel(prog, clash) + " and " + bufferLabel(prog, id) +
                                                    " overlap at [" + std::to_string(y.offset) + ", " +
                                                    std::to_string(std::min(endOf(clash), y.offset + y.size)) + ")");
        if (host && endOf(id) > endOf(furthestHost))
            furthestHost = id;
        if (endOf(id) > endOf(furthestAny))
            furthestAny = id;
    }
    return {};
}

/// Intermediates that share addresses follow one another: every access to the one before is
/// ordered before every write of the one after. Taken in the order of their first writes, each
/// is checked against the last occupant of every address range it covers (a map of disjoint
/// ranges); earlier occupants follow by transitivity, so the check is linear in the ranges met
/// rather than quadratic in the buffers that share an address.
Status checkReuseOrder(const Program& prog, const std::vector<Access>& acc, const Reachability& order) {
    std::vector<int> inter;
    std::vector<uint64_t> firstWrite(prog.buffers.size(), UINT64_MAX);
    for (const Buffer& b : prog.buffers) {
        // A buffer written in place into another is checked as part of the one holding it.
        if (b.level != MemLevel::Dram || b.kind != BufferKind::Intermediate || b.size == 0 || b.inPlaceOf >= 0)
            continue;
        for (int w : acc[b.id].writers)
            firstWrite[b.id] = std::min(firstWrite[b.id], prog.tasks[static_cast<size_t>(w)].estStart);
        inter.push_back(b.id);
    }
    std::sort(inter.begin(), inter.end(),
              [&](int x, int y) { return std::tie(firstWrite[x], x) < std::tie(firstWrite[y], y); });
    struct Range {
        uint64_t end;
        int buffer;
    };
    std::map<uint64_t, Range> last; // begin -> [begin, end) last held by buffer
    // Every access to x before every write of y that meets its bytes (buffers that share their
    // addresses slice by slice, sliceShares, order only the slices they have in common).
    auto after = [&](int x, int y) -> Status {
        const Buffer& bx = prog.buffers[x];
        const Buffer& by = prog.buffers[y];
        for (int w : acc[y].writers) {
            const SliceBytes written = touchedInStorage(prog, prog.tasks[static_cast<size_t>(w)], y);
            for (const std::vector<int>* list : {&acc[x].writers, &acc[x].readers})
                for (int t : *list)
                    if ((t == w || !order.before(t, w)) &&
                        bytesMeet(bx.offset, touchedInStorage(prog, prog.tasks[static_cast<size_t>(t)], x), by.offset,
                                  written))
                        return makeError(ErrorKind::Verify,
                                         "hazard: " + taskLabel(prog, t) + (list == &acc[x].writers ? " writes " : " reads ") +
                                             bufferLabel(prog, x) + " and " + taskLabel(prog, w) + " writes " +
                                             bufferLabel(prog, y) + " at [" + std::to_string(std::max(bx.offset, by.offset)) +
                                             ", " + std::to_string(std::min(bx.offset + bx.size, by.offset + by.size)) +
                                             ") with no ordering between them");
        }
        return {};
    };
    for (int id : inter) {
        const Buffer& b = prog.buffers[id];
        const uint64_t lo = b.offset, hi = b.offset + b.size;
        // Ranges that meet [lo, hi): the one starting before lo may reach into it.
        auto it = last.lower_bound(lo);
        if (it != last.begin() && std::prev(it)->second.end > lo)
            --it;
        std::vector<std::pair<uint64_t, Range>> keep; // pieces of met ranges outside [lo, hi)
        std::vector<int> checked;
        while (it != last.end() && it->first < hi) {
            const int prev = it->second.buffer;
            if (std::find(checked.begin(), checked.end(), prev) == checked.end()) {
                SX_TRY(after(prev, id));
                checked.push_back(prev);
            }
            if (it->first < lo)
                keep.push_back({it->first, Range{lo, prev}});
            if (it->second.end > hi)
                keep.push_back({hi, Range{it->second.end, prev}});
            it = last.erase(it);
        }
        for (const auto& [begin, range] : keep)
            last[begin] = range;
        last[lo] = Range{hi, id};
    }
    return {};
}

} // namespace

Expected<DramArenaProblem> dramArenaProblem(const Program& prog, const Reachability& order) {
    const uint64_t align = std::max<uint64_t>(prog.target.dramAlign, 1);
    // Intermediates: conflicts come from the Task order (deps), not from the graph order, since
    // Tasks on different cores run in parallel.
    // A buffer written in place into another (a Concat lowered in place) is placed with it.
    std::vector<Access> acc = withInPlaceParts(prog, accessesOf(prog));
    const std::vector<char> holders = holdersOfParts(prog);
    DramArenaProblem out;
    std::vector<int>& inter = out.buffers;
    for (const Buffer& b : prog.buffers)
        // Kept on chip, or held by the host (a shape only the run decides): no DRAM.
        if (b.kind == BufferKind::Intermediate && b.level == MemLevel::Dram && b.type.isStatic() && b.inPlaceOf < 0)
            inter.push_back(b.id);
    const size_t n = inter.size();
    OffsetProblem& problem = out.problem;
    problem.alignment = align;
    problem.sizes.resize(n);
    problem.conflicts.resize(n);
    problem.lifetimes.resize(n);
    SX_TRY(describeIntermediates(prog, acc, inter, holders, problem));
    addConflicts(prog, acc, inter, order, problem);
    // Buffers that share their addresses slice by slice are one item of the problem: its
    // lifetime theirs together, its conflicts all of theirs with the other items.
    const std::vector<size_t> share = sliceShares(prog, acc, inter, order, holders);
    std::vector<size_t>& item = out.itemOf;
    item.assign(n, SIZE_MAX);
    size_t items = 0;
    for (size_t i = 0; i < n; ++i)
        if (share[i] == i) {
            item[i] = items++;
            out.firstBuffer.push_back(inter[i]);
        }
    for (size_t i = 0; i < n; ++i)
        item[i] = item[share[i]];
    if (items < n) {
        OffsetProblem grouped;
        grouped.alignment = align;
        grouped.sizes.assign(items, 0);
        grouped.conflicts.resize(items);
        grouped.lifetimes.assign(items, {UINT64_MAX, 0});
        for (size_t i = 0; i < n; ++i) {
            const size_t g = item[i];
            grouped.sizes[g] = std::max(grouped.sizes[g], problem.sizes[i]);
            grouped.lifetimes[g].first = std::min(grouped.lifetimes[g].first, problem.lifetimes[i].first);
            grouped.lifetimes[g].second = std::max(grouped.lifetimes[g].second, problem.lifetimes[i].second);
            for (int j : problem.conflicts[i])
                if (item[static_cast<size_t>(j)] != g)
                    grouped.conflicts[g].push_back(static_cast<int>(item[static_cast<size_t>(j)]));
        }
        // A group holds its addresses from its first member's write to its last one's last
        // access, gaps between members included: it conflicts with every item live meanwhile,
        // so that lifetimes that meet still conflict and the schedule's max-live stays a bound.
        // An item live when the group starts meets its first member, and conflicts already.
        std::vector<size_t> members(items, 0), byLower(items);
        for (size_t i = 0; i < n; ++i)
            ++members[item[i]];
        std::iota(byLower.begin(), byLower.end(), 0);
        std::sort(byLower.begin(), byLower.end(), [&](size_t a, size_t b) {
            return std::tie(grouped.lifetimes[a].first, a) < std::tie(grouped.lifetimes[b].first, b);
        });
        for (size_t g = 0; g < items; ++g) {
            if (members[g] < 2)
                continue;
            const auto [lo, hi] = grouped.lifetimes[g];
            auto it = std::lower_bound(byLower.begin(), byLower.end(), lo, [&](size_t a, uint64_t t) {
                return grouped.lifetimes[a].first < t;
            });
            for (; it != byLower.end() && grouped.lifetimes[*it].first < hi; ++it)
                if (*it != g) {
                    grouped.conflicts[g].push_back(static_cast<int>(*it));
                    grouped.conflicts[*it].push_back(static_cast<int>(g));
                }
        }
        for (size_t g = 0; g < items; ++g) {
            std::vector<int>& c = grouped.conflicts[g];
            std::sort(c.begin(), c.end());
            c.erase(std::unique(c.begin(), c.end()), c.end());
        }
        problem = std::move(grouped);
    }
    return out;
}

Expected<DramArenaProblem> dramArenaProblem(const Program& prog) {
    SX_ASSIGN(const std::vector<std::vector<int>> preds, taskPredecessors(prog));
    const Reachability order(preds);
    if (!order.valid())
        return makeError(ErrorKind::Unsupported, "cannot build the DRAM arena's problem: " + order.why());
    return dramArenaProblem(prog, order);
}

Status planMemory(Program& prog, const Reachability& order, uint64_t searchSteps) {
    const Target& target = prog.target;
    const uint64_t align = std::max<uint64_t>(target.dramAlign, 1);
    MemoryStats& mem = prog.memory;
    MemoryStats fresh; // the SRAM plan's figures (planSram ran first) stay
    fresh.sram = std::move(mem.sram);
    fresh.dramTrafficBytes = mem.dramTrafficBytes;
    fresh.compulsoryBytes = mem.compulsoryBytes;
    mem = std::move(fresh);
    mem.arenaBase = placeHostBuffers(prog, align);
    SX_ASSIGN(DramArenaProblem arena, dramArenaProblem(prog, order));
    const OffsetProblem& problem = arena.problem;
    const std::vector<int>& inter = arena.buffers;
    const std::vector<size_t>& item = arena.itemOf;
    const size_t n = inter.size();
    // The program's conflicts come from Task order: buffers whose estimated lifetimes meet are
    // never ordered, so they conflict, and so may buffers whose lifetimes do not meet. The
    // search takes both (the lifetimes give its section bounds, the conflicts its neighbours);
    // its bound also counts buffers that all conflict with each other.
    OffsetPlan plan = planOffsets(problem, OffsetSearchOptions{.steps = searchSteps});
    SX_TRY(checkOffsetPlan(problem, plan));
    for (size_t i = 0; i < n; ++i)
        prog.buffers[inter[i]].offset = mem.arenaBase + plan.offsets[item[i]];
    for (Buffer& b : prog.buffers)
        if (b.inPlaceOf >= 0) {
            uint64_t at = 0;
            const int holder = storageOf(prog, b.id, &at);
            b.offset = prog.buffers[static_cast<size_t>(holder)].offset + at;
        }
    mem.dramPeak = plan.peak;
    // Buffers live together in the estimated schedule are never ordered, so they conflict: the
    // schedule's max-live is a lower bound for the plan, and so is any set of buffers that
    // pairwise conflict (the search's bound, when it could build one).
    mem.dramLowerBound = std::max(maxLiveBytes(problem.lifetimes, problem.sizes), plan.lowerBound);
    mem.dramTotal = mem.arenaBase + mem.dramPeak;
    if (mem.dramTotal > target.dramBytes)
        return makeError(ErrorKind::Unsupported, "program needs " + std::to_string(mem.dramTotal) +
                                                     " bytes of DRAM > " + std::to_string(target.dramBytes) +
                                                     " on target '" + target.name + "'");
    return {};
}

Status checkHazards(const Program& prog) {
    SX_ASSIGN(const std::vector<std::vector<int>> preds, taskPredecessors(prog));
    const Reachability order(preds);
    if (!order.valid())
        return makeError(ErrorKind::Unsupported, "cannot check the memory hazards: " + order.why());
    SX_TRY(checkDramPlacement(prog));
    const std::vector<Access> acc = accessesOf(prog);
    const std::vector<Access> held = withInPlaceParts(prog, acc);
    SX_TRY(checkInPlace(prog));
    SX_TRY(checkWritersAndReaders(prog, acc, held, holdersOfParts(prog), order));
    SX_TRY(checkHostRegions(prog));
    return checkReuseOrder(prog, held, order);
}

} // namespace sextant::backend
