#include "OffsetSearch.h"

#include "MathUtil.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <system_error>
#include <thread>

namespace sextant::backend {

IntervalPacker::IntervalPacker(std::vector<SectionSpan> spans, int sections, uint64_t alignment)
    : m_spans(std::move(spans)), m_sections(std::max(sections, 0)), m_align(std::max<uint64_t>(alignment, 1)) {
    const int n = static_cast<int>(m_spans.size());
    std::vector<std::vector<int>> lists(static_cast<size_t>(n));
    std::vector<int> byFirst(static_cast<size_t>(n));
    std::iota(byFirst.begin(), byFirst.end(), 0);
    std::sort(byFirst.begin(), byFirst.end(), [&](int a, int b) {
        return std::tie(m_spans[a].first, a) < std::tie(m_spans[b].first, b);
    });
    for (size_t x = 0; x < byFirst.size(); ++x) {
        const SectionSpan& i = m_spans[byFirst[x]];
        if (i.first >= i.last || i.size == 0)
            continue;
        for (size_t y = x + 1; y < byFirst.size(); ++y) {
            const SectionSpan& j = m_spans[byFirst[y]];
            if (j.first >= i.last)
                break;
            if (j.first >= j.last || j.size == 0)
                continue;
            lists[byFirst[x]].push_back(byFirst[y]);
            lists[byFirst[y]].push_back(byFirst[x]);
        }
    }
    m_neighbours = std::make_shared<const std::vector<std::vector<int>>>(std::move(lists));
    setReach();
    setAlike();
}

IntervalPacker::IntervalPacker(std::vector<SectionSpan> spans, int sections, uint64_t alignment,
                               std::vector<std::vector<int>> neighbours)
    : m_spans(std::move(spans)), m_sections(std::max(sections, 0)), m_align(std::max<uint64_t>(alignment, 1)) {
    neighbours.resize(m_spans.size());
    m_neighbours = std::make_shared<const std::vector<std::vector<int>>>(std::move(neighbours));
    setReach();
    setAlike();
}

void IntervalPacker::setAlike() {
    const size_t n = m_spans.size();
    m_alike.assign(n, {});
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return std::tie(m_spans[a].first, m_spans[a].last, a) < std::tie(m_spans[b].first, m_spans[b].last, b);
    });
    // The neighbours of a without b, sorted, against those of b without a.
    auto others = [&](int a, int b) {
        std::vector<int> v;
        for (int j : (*m_neighbours)[a])
            if (j != b)
                v.push_back(j);
        std::sort(v.begin(), v.end());
        return v;
    };
    for (size_t x = 0; x < n; ++x) {
        const int a = order[x];
        const SectionSpan& sa = m_spans[a];
        if (sa.first >= sa.last || sa.size == 0 || sa.size % m_align != 0)
            continue;
        for (size_t y = x + 1; y < n; ++y) {
            const int b = order[y];
            const SectionSpan& sb = m_spans[b];
            if (sb.first != sa.first || sb.last != sa.last)
                break;
            if (sb.size == 0 || sb.size % m_align != 0 || others(a, b) != others(b, a))
                continue;
            m_alike[a].push_back(b);
            m_alike[b].push_back(a);
        }
    }
}

void IntervalPacker::setReach() {
    m_reach.resize(m_spans.size());
    for (size_t i = 0; i < m_spans.size(); ++i) {
        m_reach[i] = {m_spans[i].first, m_spans[i].last};
        for (int j : (*m_neighbours)[i]) {
            const SectionSpan& o = m_spans[static_cast<size_t>(j)];
            if (o.first < m_spans[i].last && m_spans[i].first < o.last)
                continue; // meets i's span: it is open beside i, or placed, and splits nothing
            m_reach[i].first = std::min(m_reach[i].first, o.first);
            m_reach[i].second = std::max(m_reach[i].second, o.last);
        }
    }
}

uint64_t IntervalPacker::aligned(uint64_t v) const { return alignUp(v, m_align); }

uint64_t IntervalPacker::descentSteps() const {
    const uint64_t n = m_spans.size();
    return 2 * n * (n * (1 + static_cast<uint64_t>(std::bit_width(n))) + static_cast<uint64_t>(m_sections));
}

uint64_t sectionMaxLive(const std::vector<SectionSpan>& spans, int sections) {
    std::vector<uint64_t> total(static_cast<size_t>(std::max(sections, 0)), 0);
    for (const SectionSpan& s : spans)
        for (int q = s.first; q < s.last; ++q)
            total[static_cast<size_t>(q)] += s.size;
    return total.empty() ? 0 : *std::max_element(total.begin(), total.end());
}

uint64_t IntervalPacker::maxLive() const { return sectionMaxLive(m_spans, m_sections); }

void IntervalPacker::rankBuffers(const std::vector<int>& buffers, int preorder) {
    // The fullest section a buffer is in counts only the bytes still to place, as they are now:
    // a part split off mid-search is ranked by what is left of it.
    struct Key {
        uint64_t fullest = 0, width = 0, sections = 0, area = 0;
        unsigned __int128 timeArea = 0;
    };
    std::vector<Key> keys(buffers.size());
    for (size_t k = 0; k < buffers.size(); ++k) {
        const SectionSpan& s = m_spans[buffers[k]];
        Key& key = keys[k];
        for (int q = s.first; q < s.last; ++q)
            key.fullest = std::max(key.fullest, m_remaining[static_cast<size_t>(q)]);
        key.width = s.width;
        key.sections = static_cast<uint64_t>(std::max(s.last - s.first, 0));
        key.area = s.size * key.sections;
        key.timeArea = static_cast<unsigned __int128>(s.size) * s.width;
    }
    using U128 = unsigned __int128;
    // Larger keys first; each order ends in the buffer index, so it never depends on the sort.
    auto tuple = [&](size_t k) {
        const Key& x = keys[k];
        const int idx = -buffers[k];
        switch (preorder % kPreorders) {
        case 0: return std::make_tuple(U128(x.width), x.timeArea, U128(x.fullest), idx);
        case 1: return std::make_tuple(U128(x.fullest), x.timeArea, U128(x.width), idx);
        case 2: return std::make_tuple(U128(x.fullest), U128(x.width), x.timeArea, idx);
        case 3: return std::make_tuple(U128(x.fullest), U128(x.area), U128(0), idx);
        case 4: return std::make_tuple(U128(x.area), U128(x.fullest), U128(0), idx);
        default: return std::make_tuple(U128(x.sections), U128(x.area), U128(0), idx);
        }
    };
    std::vector<size_t> order(buffers.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tuple(a) > tuple(b); });
    m_steps += buffers.size() * static_cast<uint64_t>(std::bit_width(buffers.size()));
    for (size_t r = 0; r < order.size(); ++r)
        m_rank[static_cast<size_t>(buffers[order[r]])] = static_cast<int>(r);
}

bool IntervalPacker::restsOnAlike(int b, uint64_t p) const {
    for (int a : m_alike[b])
        if (m_stackRank[a] > m_stackRank[b] && m_placed[a] && m_offset[a] + m_spans[a].size == p)
            return true;
    return false;
}

bool IntervalPacker::place(int b, uint64_t offset) {
    const uint64_t end = offset + m_spans[b].size;
    bool hat = false;
    m_steps += (*m_neighbours)[b].size();
    m_placed[b] = 1;
    m_offset[b] = offset;
    for (int q = m_spans[b].first; q < m_spans[b].last; ++q)
        m_remaining[static_cast<size_t>(q)] -= m_spans[b].size;
    for (int x = m_reach[b].first + 1; x < m_reach[b].second; ++x)
        --m_crossing[static_cast<size_t>(x)];
    m_trail.push_back({b, -1, 0});
    for (int j : (*m_neighbours)[b]) {
        if (m_placed[j])
            continue;
        hat = true;
        if (m_top[j] < end) {
            m_trail.push_back({b, j, m_top[j]});
            m_top[j] = end;
        }
    }
    return hat;
}

void IntervalPacker::rollback(size_t mark) {
    while (m_trail.size() > mark) {
        const Undo u = m_trail.back();
        m_trail.pop_back();
        if (u.neighbour >= 0)
            m_top[u.neighbour] = u.oldTop;
        else {
            m_placed[u.buffer] = 0;
            for (int q = m_spans[u.buffer].first; q < m_spans[u.buffer].last; ++q)
                m_remaining[static_cast<size_t>(q)] += m_spans[u.buffer].size;
            for (int x = m_reach[u.buffer].first + 1; x < m_reach[u.buffer].second; ++x)
                ++m_crossing[static_cast<size_t>(x)];
        }
    }
}

/// The section lower bounds: in every section, the open buffers live there are stacked without
/// overlapping, none below its own lowest position or below the watermark (later buffers never
/// go lower), so they need at least the lowest of those positions plus their sizes; stacked in
/// the order of those lowest positions (one machine with release dates), more. Positions change
/// only in the sections [focusFirst, focusLast) (those of the buffer just placed and its
/// neighbours), so the bounds that depend on them are computed there; elsewhere only the
/// watermark moved, and the watermark plus the bytes still to place is checked.
///
/// A buffer whose position lies below the watermark is stranded: it cannot rest where it is,
/// so in a canonical completion it rests on the top of an open neighbour placed at or above the
/// watermark. Until that neighbour comes its position stays, and no buffer may be placed at or
/// above its top (that would leave it a gap to drop into), so the neighbour must go below the
/// top. A stranded buffer with no such neighbour ends the node; otherwise its lowest position
/// is the least top such a neighbour can have.
bool IntervalPacker::sectionsCanHold(int lo, int hi, const std::vector<Placing>& byPosition, uint64_t watermark,
                                     int lastRank, int focusFirst, int focusLast) {
    m_steps += static_cast<uint64_t>(std::max(hi - lo, 0));
    for (int q = lo; q < hi; ++q)
        if (watermark + m_remaining[static_cast<size_t>(q)] > m_capacity)
            return false;
    // Stranded buffers come first in byPosition: below the watermark, or at it but earlier in
    // the preorder than the buffer placed last (ties are placed in preorder).
    m_lifted.clear();
    size_t firstFree = 0;
    for (; firstFree < byPosition.size() &&
           (byPosition[firstFree].pos < watermark ||
            (byPosition[firstFree].pos == watermark && byPosition[firstFree].rank < lastRank));
         ++firstFree) {
        const int x = byPosition[firstFree].buffer;
        const uint64_t top = byPosition[firstFree].pos + m_spans[x].size;
        uint64_t lowest = UINT64_MAX;
        m_steps += (*m_neighbours)[x].size();
        for (int y : (*m_neighbours)[x]) {
            if (m_placed[y])
                continue;
            const uint64_t at = std::max(watermark, aligned(m_top[y]));
            if (at < top)
                lowest = std::min(lowest, aligned(at + m_spans[y].size));
        }
        if (lowest == UINT64_MAX || lowest + m_spans[x].size > m_capacity)
            return false;
        m_lifted.push_back(Placing{lowest, 0, x});
    }
    focusFirst = std::max(focusFirst, lo);
    focusLast = std::min(focusLast, hi);
    if (focusFirst >= focusLast)
        return true;
    std::sort(m_lifted.begin(), m_lifted.end());
    m_steps += m_lifted.size() * static_cast<uint64_t>(std::bit_width(m_lifted.size()));
    // Buffers in the order of their lowest positions: each section's stack grows in that order.
    // Alignment is left out of it: that order stacks least only without it (7, 8, 9 and 10
    // bytes on 4-byte offsets need 38 in that order, 37 as 8, 7, 10, 9), and without it the
    // stack is still never higher than any the buffers can make.
    for (int q = focusFirst; q < focusLast; ++q)
        m_height[static_cast<size_t>(q)] = 0;
    auto stack = [&](int b, uint64_t from) {
        const SectionSpan& s = m_spans[static_cast<size_t>(b)];
        const int a = std::max(s.first, focusFirst), z = std::min(s.last, focusLast);
        if (a >= z)
            return true;
        m_steps += static_cast<uint64_t>(z - a);
        for (int q = a; q < z; ++q) {
            uint64_t& height = m_height[static_cast<size_t>(q)];
            height = std::max(height, from) + s.size;
            if (height > m_capacity)
                return false;
        }
        return true;
    };
    auto lifted = m_lifted.begin();
    for (size_t k = firstFree; k < byPosition.size(); ++k) {
        const Placing& x = byPosition[k];
        for (; lifted != m_lifted.end() && lifted->pos <= x.pos; ++lifted)
            if (!stack(lifted->buffer, lifted->pos))
                return false;
        if (!stack(x.buffer, x.pos))
            return false;
    }
    for (; lifted != m_lifted.end(); ++lifted)
        if (!stack(lifted->buffer, lifted->pos))
            return false;
    return true;
}

bool IntervalPacker::nodeCanHold(const Spread& spread, const std::vector<Placing>& byPosition, bool merged,
                                 uint64_t watermark, int lastRank, int focusFirst, int focusLast) {
    if (spread.over)
        return false;
    // The order: sorted for this node, or merged by its parent (orderAfterPlacing).
    const uint64_t n = byPosition.size();
    m_steps += n * (merged ? 1 : static_cast<uint64_t>(std::bit_width(n)));
    return sectionsCanHold(spread.lo, spread.hi, byPosition, watermark, lastRank, focusFirst, focusLast);
}

bool IntervalPacker::goOn() {
    if (m_steps >= m_budget || (m_stop != nullptr && m_stop->load(std::memory_order_relaxed))) {
        m_budget = m_refill != nullptr ? (*m_refill)(m_steps) : 0;
        if (m_budget <= m_steps) {
            m_refill = nullptr; // the run ends: unwinding asks no more
            return false;
        }
    }
    return true;
}

IntervalPacker::Spread IntervalPacker::spreadOf(const std::vector<Placing>& byPosition) const {
    Spread sp;
    for (const Placing& x : byPosition) {
        const SectionSpan& s = m_spans[static_cast<size_t>(x.buffer)];
        sp.minHeight = std::min(sp.minHeight, x.pos + s.size);
        sp.over = sp.over || x.pos + s.size > m_capacity;
        sp.lo = std::min(sp.lo, s.first);
        sp.hi = std::max(sp.hi, s.last);
    }
    return sp;
}

bool IntervalPacker::oneAfterPlacing(int placed) const {
    for (int x = m_reach[placed].first + 1; x < m_reach[placed].second; ++x)
        if (m_crossing[static_cast<size_t>(x)] == 0)
            return false;
    return true;
}

IntervalPacker::Step IntervalPacker::search(std::vector<int> open, uint64_t watermark, int lastRank, int focusFirst,
                                             int focusLast, const std::vector<Placing>* byPosition) {
    if (open.empty())
        return Step::Found;
    if (!goOn())
        return Step::OutOfSteps;
    m_steps += open.size();
    // Time ranges that no open buffer crosses are independent: solve them one after another,
    // each from address 0 (its own canonical order), and stop at the first that cannot be done.
    // (A buffer's reach covers every buffer it conflicts with: no cut falls between them.)
    // `open` is in the order of the reaches' starts: fits sorts it, and taking buffers out (a
    // child's `rest`, a part) keeps the order.
    std::vector<size_t> cuts;
    int reach = m_reach[open.front()].second;
    for (size_t k = 1; k < open.size(); ++k) {
        if (m_reach[open[k]].first >= reach)
            cuts.push_back(k);
        reach = std::max(reach, m_reach[open[k]].second);
    }
    if (cuts.empty())
        return searchComponent(open, watermark, lastRank, focusFirst, focusLast, byPosition, nullptr);
    // The node as it stands, before it comes apart: the buffer just placed rests at the
    // watermark, and in this branch nothing goes below it. Each part is then solved from
    // address 0, under bounds that no longer know the watermark.
    std::vector<Placing> whole;
    m_steps += open.size() * (byPosition != nullptr ? 1 : static_cast<uint64_t>(std::bit_width(open.size())));
    if (byPosition == nullptr) {
        orderByPosition(open, whole);
        byPosition = &whole;
    }
    const Spread spread = spreadOf(*byPosition);
    if (!sectionsCanHold(spread.lo, spread.hi, *byPosition, watermark, lastRank, focusFirst, focusLast))
        return Step::Exhausted;
    cuts.push_back(open.size());
    const size_t mark = m_trail.size();
    std::vector<int> savedRanks(open.size());
    for (size_t k = 0; k < open.size(); ++k)
        savedRanks[k] = m_rank[static_cast<size_t>(open[k])];
    Step result = Step::Found;
    size_t from = 0;
    for (size_t to : cuts) {
        std::vector<int> part(open.begin() + static_cast<std::ptrdiff_t>(from), open.begin() + static_cast<std::ptrdiff_t>(to));
        if (m_rerank)
            rankBuffers(part, m_preorder);
        result = searchComponent(part, 0, -1, focusFirst, focusLast, nullptr, nullptr);
        if (result != Step::Found) {
            rollback(mark);
            break;
        }
        from = to;
    }
    for (size_t k = 0; k < open.size(); ++k)
        m_rank[static_cast<size_t>(open[k])] = savedRanks[k];
    return result;
}

void IntervalPacker::orderByPosition(const std::vector<int>& open, std::vector<Placing>& byPosition) const {
    byPosition.resize(open.size());
    for (size_t k = 0; k < open.size(); ++k) {
        const int b = open[k];
        byPosition[k] = Placing{aligned(m_top[static_cast<size_t>(b)]), m_rank[static_cast<size_t>(b)], b};
    }
    std::sort(byPosition.begin(), byPosition.end());
}

/// `byPosition` once `b` is placed: b leaves, and the neighbours whose position it raised (the
/// trail entries after `mark`) move up. The rest keep their order, so only the moved ones are
/// sorted and merged back in.
void IntervalPacker::orderAfterPlacing(const std::vector<Placing>& byPosition, int b, size_t mark,
                                       std::vector<Placing>& out) {
    ++m_stamp;
    std::vector<Placing> moved;
    for (size_t t = mark; t < m_trail.size(); ++t)
        if (const int j = m_trail[t].neighbour; j >= 0) {
            m_moved[static_cast<size_t>(j)] = m_stamp;
            moved.push_back(Placing{aligned(m_top[static_cast<size_t>(j)]), m_rank[static_cast<size_t>(j)], j});
        }
    std::sort(moved.begin(), moved.end());
    out.clear();
    out.reserve(byPosition.size() - 1);
    auto m = moved.begin();
    for (const Placing& x : byPosition) {
        if (x.buffer == b || m_moved[static_cast<size_t>(x.buffer)] == m_stamp)
            continue;
        for (; m != moved.end() && *m < x; ++m)
            out.push_back(*m);
        out.push_back(x);
    }
    out.insert(out.end(), m, moved.end());
}

/// One search node: every open buffer's canonical position is the aligned top of its placed
/// neighbours. A buffer may be placed only at or above the watermark (ties: later in the
/// preorder), and only below the lowest top any open buffer could reach (a buffer placed higher
/// would leave a gap another buffer could drop into: not canonical). `inherited`, when given,
/// holds the open buffers already in the order of their positions.
IntervalPacker::Step IntervalPacker::searchComponent(const std::vector<int>& open, uint64_t watermark, int lastRank,
                                                      int focusFirst, int focusLast,
                                                      const std::vector<Placing>* inherited, const Spread* checked) {
    std::vector<Placing> own;
    if (inherited == nullptr)
        orderByPosition(open, own);
    const std::vector<Placing>& byPosition = inherited != nullptr ? *inherited : own;
    // A node its parent has checked (below) is not checked again.
    const Spread spread = checked != nullptr ? *checked : spreadOf(byPosition);
    if (checked == nullptr &&
        !nodeCanHold(spread, byPosition, inherited != nullptr, watermark, lastRank, focusFirst, focusLast))
        return Step::Exhausted;
    std::vector<Placing> next;
    for (const Placing& x : byPosition) {
        const int b = x.buffer;
        const uint64_t p = x.pos;
        if (p < watermark || (p == watermark && x.rank < lastRank))
            continue;
        if (p >= spread.minHeight)
            break;
        if (restsOnAlike(b, p))
            continue;
        const size_t mark = m_trail.size();
        const bool hat = place(b, p);
        m_steps += open.size(); // the child's open buffers
        orderAfterPlacing(byPosition, b, mark + 1, next);
        // The positions that moved are those of b's neighbours: the sections around b's.
        int first = m_spans[b].first, last = m_spans[b].last;
        for (int j : (*m_neighbours)[b]) {
            first = std::min(first, m_spans[j].first);
            last = std::max(last, m_spans[j].last);
        }
        auto rest = [&] {
            std::vector<int> r;
            r.reserve(open.size() - 1);
            for (int y : open)
                if (y != b)
                    r.push_back(y);
            return r;
        };
        Step s = Step::Exhausted;
        if (open.size() > 1 && oneAfterPlacing(b)) {
            // The child is one piece (no cut can fall outside b's reach): its entry checks, those
            // of search and of the node with the same steps, are made here, and only a child
            // that passes them is built.
            const Spread child = spreadOf(next);
            if (!goOn())
                s = Step::OutOfSteps;
            else if (m_steps += next.size(); nodeCanHold(child, next, true, p, x.rank, first, last))
                s = searchComponent(rest(), p, x.rank, first, last, &next, &child);
        } else {
            s = search(rest(), p, x.rank, first, last, &next);
        }
        if (s == Step::Found)
            return s;
        rollback(mark);
        if (s == Step::OutOfSteps)
            return s;
        // Nothing open lies over b, so b rests at p in every completion of this node, and
        // canonically before any buffer above p: placing another first cannot succeed where
        // placing b first failed.
        if (!hat)
            break;
    }
    return Step::Exhausted;
}

SearchVerdict IntervalPacker::fits(uint64_t capacity, int preorder, bool rerank, uint64_t budget,
                                   uint64_t& stepsUsed, std::vector<uint64_t>& offsets, const Refill* refill,
                                   const std::atomic<bool>* stop) {
    const size_t n = m_spans.size();
    m_refill = refill;
    m_stop = stop;
    m_capacity = capacity;
    m_budget = budget;
    m_steps = 0;
    m_preorder = preorder;
    m_rerank = rerank;
    m_rank.assign(n, 0);
    m_top.assign(n, 0);
    m_offset.assign(n, 0);
    m_placed.assign(n, 0);
    m_trail.clear();
    m_moved.assign(n, 0);
    m_stamp = 0;
    m_height.assign(static_cast<size_t>(m_sections), 0);
    m_remaining.assign(static_cast<size_t>(m_sections), 0);
    std::vector<int> open;
    for (size_t i = 0; i < n; ++i) {
        const SectionSpan& s = m_spans[i];
        if (s.first < s.last && s.size > 0) {
            open.push_back(static_cast<int>(i));
            for (int q = s.first; q < s.last; ++q)
                m_remaining[static_cast<size_t>(q)] += s.size;
        } else {
            m_placed[i] = 1; // occupies nothing: address 0
        }
    }
    rankBuffers(open, preorder);
    m_stackRank = m_rank;
    std::sort(open.begin(), open.end(),
              [&](int a, int b) { return std::tie(m_reach[a].first, a) < std::tie(m_reach[b].first, b); });
    m_crossing.assign(static_cast<size_t>(m_sections) + 1, 0);
    for (int b : open)
        for (int x = m_reach[b].first + 1; x < m_reach[b].second; ++x)
            ++m_crossing[static_cast<size_t>(x)];
    const Step s = search(std::move(open), 0, -1, 0, m_sections, nullptr);
    stepsUsed = m_steps;
    if (s == Step::Found) {
        offsets = m_offset;
        return SearchVerdict::Found;
    }
    return s == Step::Exhausted ? SearchVerdict::Infeasible : SearchVerdict::OutOfSteps;
}

} // namespace sextant::backend

namespace sextant::backend {

namespace {

/// The interval form of `p`: its lifetimes on a time axis of sections (between consecutive
/// distinct lifetime ends), and, when p has conflicts beyond the overlaps of lifetimes, every
/// buffer's conflicts as its neighbours. Nothing when p has no lifetimes, when two buffers whose
/// lifetimes meet do not conflict (the section bounds stack the buffers of a section), or when a
/// buffer with bytes but no lifetime conflicts with another.
struct SectionForm {
    std::vector<SectionSpan> spans;
    int sections = 0;
    std::optional<std::vector<std::vector<int>>> neighbours;
};

std::optional<SectionForm> asSections(const OffsetProblem& p, bool meetingConflict) {
    const size_t n = p.sizes.size();
    if (p.lifetimes.size() != n || p.conflicts.size() != n)
        return std::nullopt;
    auto live = [&](size_t i) { return p.lifetimes[i].first < p.lifetimes[i].second && p.sizes[i] > 0; };
    auto meet = [&](size_t i, size_t j) {
        return p.lifetimes[i].first < p.lifetimes[j].second && p.lifetimes[j].first < p.lifetimes[i].second;
    };
    SectionForm form;
    bool beyond = false;
    for (size_t i = 0; i < n; ++i)
        for (int c : p.conflicts[i]) {
            const size_t j = static_cast<size_t>(c);
            if (j >= n)
                return std::nullopt;
            if (p.sizes[i] == 0 || p.sizes[j] == 0)
                continue;
            if (!live(i) || !live(j))
                return std::nullopt;
            beyond = beyond || !meet(i, j);
        }
    // Every two buffers whose lifetimes meet must conflict (the caller's meetingBuffersConflict).
    if (!meetingConflict)
        return std::nullopt;
    // The neighbours, only where the lifetimes do not say it all: sorted, each once, without
    // buffers of no bytes.
    if (beyond) {
        std::vector<std::vector<int>> neighbours(n);
        for (size_t i = 0; i < n; ++i) {
            if (p.sizes[i] == 0)
                continue;
            std::vector<int>& list = neighbours[i];
            for (int c : p.conflicts[i])
                if (p.sizes[static_cast<size_t>(c)] > 0)
                    list.push_back(c);
            if (!std::is_sorted(list.begin(), list.end()))
                std::sort(list.begin(), list.end());
            list.erase(std::unique(list.begin(), list.end()), list.end());
        }
        form.neighbours = std::move(neighbours);
    }
    std::vector<uint64_t> points;
    for (size_t i = 0; i < n; ++i)
        if (live(i)) {
            points.push_back(p.lifetimes[i].first);
            points.push_back(p.lifetimes[i].second);
        }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    auto at = [&](uint64_t t) { return static_cast<int>(std::lower_bound(points.begin(), points.end(), t) - points.begin()); };
    form.spans.resize(n);
    for (size_t i = 0; i < n; ++i) {
        form.spans[i].size = p.sizes[i];
        if (live(i)) {
            form.spans[i].width = p.lifetimes[i].second - p.lifetimes[i].first;
            form.spans[i].first = at(p.lifetimes[i].first);
            form.spans[i].last = at(p.lifetimes[i].second);
        }
    }
    form.sections = points.empty() ? 0 : static_cast<int>(points.size()) - 1;
    return form;
}

uint64_t peakOf(const std::vector<uint64_t>& offsets, const std::vector<uint64_t>& sizes) {
    uint64_t peak = 0;
    for (size_t i = 0; i < offsets.size(); ++i)
        peak = std::max(peak, offsets[i] + sizes[i]);
    return peak;
}

/// One way to run the search: a preorder, whether parts that come apart are ranked again, and
/// its share of each round.
struct Strategy {
    int preorder;
    bool rerank;
    uint64_t weight;
};

/// TWA (MiniMalloc's order) finds the most tight packings, with and without ranking parts again
/// (they succeed on different instances); fullest-then-area, with and without, and
/// area-then-fullest find most of the rest; every other order keeps a turn.
constexpr Strategy kStrategies[] = {
    {2, false, 8}, {2, true, 4}, {3, false, 2}, {3, true, 2}, {4, false, 1}, {0, false, 1}, {1, false, 1}, {5, false, 1},
};

/// One capacity searched by every strategy at once, each a run that goes on where it stopped.
/// The runs take turns in rounds, each strategy given a slice of steps (its weight times the
/// round's limit, which doubles every round) until one finds a plan or proves there is none, or
/// the budget is spent. Each run has a thread of its own, to keep its place; at most `threads`
/// of them search at a time. What a search returns is what taking the slices one after another,
/// in rounds and in strategy order, would: the first slice that ends the search wins, and the
/// steps of the slices before it and its own count. A slice later than one that has ended the
/// search is cut short; the ones before it always finish. So threads change how long a search
/// takes, never its answer.
class Relay {
public:
    Relay(const IntervalPacker& proto, const std::vector<Strategy>& strategies, uint64_t capacity, unsigned threads)
        : m_proto(proto), m_strategies(strategies), m_capacity(capacity), m_threads(std::max(threads, 1u)),
          m_runners(strategies.size()) {}

    ~Relay() {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            for (Runner& r : m_runners)
                r.stop = true;
        }
        m_changed.notify_all();
        for (Runner& r : m_runners)
            if (r.thread.joinable())
                r.thread.join();
    }

    Relay(const Relay&) = delete;
    Relay& operator=(const Relay&) = delete;

    SearchVerdict run(uint64_t budget, uint64_t& spent, std::vector<uint64_t>& offsets) {
        uint64_t limit = m_proto.descentSteps();
        // Runs go on where they stopped, so long slices gain nothing but coarseness: the limit
        // doubles only up to a sixteenth of the budget per round.
        uint64_t weights = 0;
        for (const Strategy& s : m_strategies)
            weights += s.weight;
        const uint64_t cap = std::max(limit, (budget - spent) / (16 * std::max<uint64_t>(weights, 1)));
        while (spent < budget) {
            std::vector<Slice> round;
            uint64_t left = budget - spent;
            for (size_t i = 0; i < m_runners.size() && left > 0; ++i) {
                const uint64_t steps = std::min(limit * m_strategies[i].weight, left);
                left -= steps;
                round.push_back(Slice{i, steps, 0, 0});
            }
            const std::optional<size_t> winner = take(round);
            if (!winner && m_broken)
                return SearchVerdict::OutOfSteps; // no thread to be had: stop searching
            for (size_t k = 0; k < round.size() && (!winner || k <= *winner); ++k)
                spent += round[k].to - round[k].from;
            if (winner) {
                Runner& r = m_runners[round[*winner].runner];
                offsets = std::move(r.offsets);
                return r.verdict;
            }
            limit = std::min(limit * 2, cap);
        }
        return SearchVerdict::OutOfSteps;
    }

private:
    struct Runner {
        std::unique_ptr<IntervalPacker> packer;
        std::thread thread;
        std::atomic<bool> stop{false};
        bool started = false, parked = false, done = false;
        uint64_t grant = 0; ///< the budget it may search to
        uint64_t at = 0;    ///< its steps when it last parked or ended
        SearchVerdict verdict = SearchVerdict::OutOfSteps;
        std::vector<uint64_t> offsets;
    };
    struct Slice {
        size_t runner;
        uint64_t steps;
        uint64_t from, to; ///< the runner's steps before and after the slice
    };

    /// Under m_mutex: the runner has parked at the end of its slice, or its run has ended.
    bool sliceOver(const Runner& r) const { return r.done || (r.parked && r.at >= r.grant); }

    /// A run's packer and thread are made when it gets its first slice (a search that ends in
    /// the first runs never copies the others).
    void start(Runner& r, size_t i) {
        r.started = true;
        r.packer = std::make_unique<IntervalPacker>(m_proto);
        try {
            r.thread = std::thread([this, &r, i] { body(r, i); });
        } catch (const std::system_error&) {
            r.done = true; // no thread: the run never searches
            m_broken = true;
        }
    }

    void body(Runner& r, size_t i) {
        const IntervalPacker::Refill refill = [this, &r](uint64_t steps) -> uint64_t {
            std::unique_lock<std::mutex> lock(m_mutex);
            r.at = steps;
            r.parked = true;
            m_changed.notify_all();
            m_changed.wait(lock, [&] { return r.stop.load() || r.grant > r.at; });
            r.parked = false;
            return r.stop.load() ? 0 : r.grant;
        };
        uint64_t grant = 0;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            grant = r.grant;
        }
        const Strategy& s = m_strategies[i];
        uint64_t used = 0;
        std::vector<uint64_t> offsets;
        const SearchVerdict v = r.packer->fits(m_capacity, s.preorder, s.rerank, grant, used, offsets, &refill, &r.stop);
        std::lock_guard<std::mutex> lock(m_mutex);
        r.at = used;
        r.verdict = v;
        r.offsets = std::move(offsets);
        r.done = true;
        m_changed.notify_all();
    }

    /// Carries out a round's slices, at most m_threads at a time, in order. Returns the first
    /// slice whose run ended the search, if any.
    std::optional<size_t> take(std::vector<Slice>& round) {
        std::unique_lock<std::mutex> lock(m_mutex);
        std::optional<size_t> winner;
        std::vector<size_t> active;
        size_t next = 0;
        while (true) {
            while (active.size() < m_threads && next < round.size() && !winner) {
                Slice& slice = round[next];
                Runner& r = m_runners[slice.runner];
                slice.from = r.at;
                if (r.done) { // an earlier round ended it (only when the threads ran out)
                    slice.to = r.at;
                    ++next;
                    continue;
                }
                r.grant = r.at + slice.steps;
                if (!r.started)
                    start(r, slice.runner);
                active.push_back(next++);
                m_changed.notify_all();
            }
            if (active.empty())
                break;
            m_changed.wait(lock, [&] {
                return std::any_of(active.begin(), active.end(),
                                   [&](size_t k) { return sliceOver(m_runners[round[k].runner]); });
            });
            for (auto it = active.begin(); it != active.end();) {
                Slice& slice = round[*it];
                Runner& r = m_runners[slice.runner];
                if (!sliceOver(r)) {
                    ++it;
                    continue;
                }
                slice.to = r.at;
                if (r.done && r.verdict != SearchVerdict::OutOfSteps && (!winner || *it < *winner))
                    winner = *it;
                it = active.erase(it);
            }
            if (winner) // slices after the winner are not needed: cut them short
                for (size_t k : active)
                    if (k > *winner)
                        m_runners[round[k].runner].stop = true;
        }
        return winner;
    }

    const IntervalPacker& m_proto;
    const std::vector<Strategy>& m_strategies;
    uint64_t m_capacity;
    unsigned m_threads;
    std::vector<Runner> m_runners;
    std::mutex m_mutex;
    std::condition_variable m_changed;
    bool m_broken = false;
};

/// The membership tests after which greedyCliqueBound begins no further seed: seeds begun
/// within about a tenth of a second (a dense problem of thousands of buffers, such as a wide
/// program's, would otherwise take seconds; the problems of the shared models end far below).
constexpr uint64_t kCliqueWork = 20'000'000;

/// A lower bound for a problem with conflicts beyond the lifetimes: buffers that pairwise
/// conflict all need space of their own, so any such clique's bytes bound the peak. Grown
/// greedily (largest buffers first) from the heaviest buffers; each clique is a proof, so the
/// largest found is a bound even though it may not be the largest there is. No seed is begun
/// once `work` membership tests are spent (a deterministic limit: one seed's tests are at most
/// its neighbours times theirs).
uint64_t greedyCliqueBound(const std::vector<uint64_t>& sizes, const std::vector<std::vector<int>>& neighbours,
                           uint64_t work) {
    const size_t n = sizes.size();
    constexpr size_t kSeeds = 256;
    std::vector<uint64_t> weight(n, 0); // a buffer and all its neighbours: no clique through it weighs more
    for (size_t i = 0; i < n; ++i) {
        weight[i] = sizes[i];
        for (int j : neighbours[i])
            weight[i] += sizes[static_cast<size_t>(j)];
    }
    std::vector<size_t> seeds(n);
    std::iota(seeds.begin(), seeds.end(), 0);
    std::sort(seeds.begin(), seeds.end(), [&](size_t a, size_t b) { return std::tie(weight[b], a) < std::tie(weight[a], b); });
    seeds.resize(std::min(n, kSeeds));
    uint64_t best = 0;
    std::vector<int> candidates, clique;
    uint64_t spent = 0;
    for (size_t v : seeds) {
        if (weight[v] <= best || spent >= work)
            break; // sorted: no later seed can do better
        candidates = neighbours[v];
        std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
            return std::tie(sizes[static_cast<size_t>(b)], a) < std::tie(sizes[static_cast<size_t>(a)], b);
        });
        clique.assign(1, static_cast<int>(v));
        uint64_t total = sizes[v];
        for (int u : candidates) {
            const std::vector<int>& nu = neighbours[static_cast<size_t>(u)];
            spent += clique.size();
            const bool withAll = std::all_of(clique.begin(), clique.end(),
                                             [&](int c) { return std::binary_search(nu.begin(), nu.end(), c); });
            if (withAll) {
                clique.push_back(u);
                total += sizes[static_cast<size_t>(u)];
            }
        }
        best = std::max(best, total);
    }
    return best;
}

/// SplitMix64: a generator that gives the same numbers on every machine and standard library
/// (std's distributions do not promise that), so a search driven by it stays deterministic.
struct SplitMix {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

/// A local search over placement orders, for a problem whose conflicts are more than its
/// lifetimes' overlaps (a program's DRAM buffers, which conflict wherever their Tasks are not
/// ordered). There the section bounds the search prunes with see only the overlaps, and its
/// tree can spend every step above a peak that another order of first-fit placement reaches
/// quickly (PaddleOCR det's arena: 999 KiB after the whole search, 947 KiB, its clique bound,
/// after some hundred orders). It starts from `plan`'s buffers by address (first fit in that
/// order places every buffer at or below where it was), then swaps one or two pairs of
/// buffers in the order and keeps the new order when its first-fit peak is no higher (equal
/// peaks let it walk across plateaus). It stops at `bound`, after 1,000 + 100 n orders in a
/// row without a lower peak, or once `budget` steps are spent, a step being one conflict-list
/// entry or buffer a placement looks at, so that the same problem gets the same plan on every
/// machine. Returns the steps spent; `plan` is replaced only by a lower peak ("reorder").
uint64_t reorderTowards(const OffsetProblem& p, uint64_t bound, uint64_t budget, OffsetPlan& plan) {
    const size_t n = p.sizes.size();
    if (n < 2 || plan.peak <= bound)
        return 0;
    uint64_t perPlacement = n;
    for (const std::vector<int>& c : p.conflicts)
        perPlacement += c.size();
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return std::tie(plan.offsets[a], a) < std::tie(plan.offsets[b], b); });
    OffsetPlan best = placeFirstFit(p, order);
    uint64_t spent = perPlacement;
    SplitMix rng{0x5e87a47ULL ^ n};
    // Past this many orders without a lower peak, the search has more to give than more orders
    // (a bound below the optimum would otherwise keep this going to the end of its budget).
    const uint64_t patience = 1000 + 100 * static_cast<uint64_t>(n);
    uint64_t sinceLower = 0;
    std::vector<int> tried;
    while (best.peak > bound && spent + perPlacement <= budget && sinceLower < patience) {
        tried = order;
        const size_t swaps = 1 + rng.below(2);
        for (size_t m = 0; m < swaps; ++m) {
            const size_t a = rng.below(n), b = rng.below(n);
            std::swap(tried[a], tried[b]);
        }
        OffsetPlan candidate = placeFirstFit(p, tried);
        spent += perPlacement;
        ++sinceLower;
        if (candidate.peak <= best.peak) {
            if (candidate.peak < best.peak)
                sinceLower = 0;
            order.swap(tried);
            best = std::move(candidate);
        }
    }
    if (best.peak < plan.peak) {
        best.heuristic = "reorder";
        plan = std::move(best);
    }
    return spent;
}

} // namespace

// Every problem small enough to search has its pairs listed.
static_assert(kMaxListedPairs >= kMaxSearchBuffers * (kMaxSearchBuffers - 1) / 2);

void searchSmallerPeak(const OffsetProblem& problem, const OffsetSearchOptions& options, bool meetingConflict,
                       OffsetPlan& plan) {
    if (problem.overlapsOnly) { // too many buffers to search (see the static_assert): the bound only
        plan.lowerBound = maxLiveBytes(problem.lifetimes, problem.sizes);
        plan.optimal = plan.peak <= plan.lowerBound;
        return;
    }
    std::optional<SectionForm> form = asSections(problem, meetingConflict);
    if (!form)
        return;
    if (problem.sizes.size() > kMaxSearchBuffers) { // the bound only
        plan.lowerBound = sectionMaxLive(form->spans, form->sections);
        if (form->neighbours)
            plan.lowerBound = std::max(plan.lowerBound, greedyCliqueBound(problem.sizes, *form->neighbours, kCliqueWork));
        plan.optimal = plan.peak <= plan.lowerBound;
        return;
    }
    // Each strategy's run searches on a copy of this packer (Relay).
    const IntervalPacker packer = form->neighbours
                                      ? IntervalPacker(std::move(form->spans), form->sections, problem.alignment,
                                                       std::move(*form->neighbours))
                                      : IntervalPacker(std::move(form->spans), form->sections, problem.alignment);
    const unsigned threads = std::clamp(options.threads, 1u, 2u);
    // A plan packed down (each buffer at the lowest offset its alignment and the buffers below
    // it allow) is never higher, and its peak is a top of some buffer: a multiple of `grain`,
    // the sizes' greatest common divisor (and the alignment's). So a capacity is as good as the
    // multiple of grain below it, and the bound rounds up to one: no probe is made twice.
    uint64_t grain = 0;
    for (uint64_t size : problem.sizes)
        grain = std::gcd(grain, size);
    if (problem.alignment > 1)
        grain = std::gcd(grain, problem.alignment);
    grain = std::max<uint64_t>(grain, 1);
    const auto roundUp = [grain](uint64_t v) { return (v + grain - 1) / grain * grain; };
    uint64_t proven = packer.maxLive(); // no plan needs less
    if (form->neighbours)
        proven = std::max(proven, greedyCliqueBound(problem.sizes, packer.neighbours(), kCliqueWork));
    proven = roundUp(proven);
    plan.lowerBound = proven;
    plan.optimal = plan.peak <= proven;
    if (plan.optimal || options.steps == 0)
        return;
    // Conflicts beyond the lifetimes: other orders of placement first, with a quarter of the
    // budget; the search goes on from the best they found, with the rest.
    uint64_t spent = form->neighbours ? reorderTowards(problem, proven, options.steps / 4, plan) : 0;
    plan.lowerBound = proven;
    plan.optimal = plan.peak <= proven;
    if (plan.optimal) {
        plan.searchSteps = spent;
        return;
    }
    const std::vector<Strategy> strategies(std::begin(kStrategies), std::end(kStrategies));
    // Capacities tried: a capacity the heuristics did not fit, first (a plan that fits is what
    // the caller needs); the bound, with half the budget (most instances that can be packed
    // tightly are found there); then halfway between the lowest capacity not yet ruled out and
    // the best peak, each with a quarter of what is left.
    uint64_t low = proven;
    const uint64_t given = options.capacity / grain * grain;
    const bool fitFirst = given >= low && given < plan.peak;
    int probe = fitFirst ? 0 : 1;
    while (spent < options.steps && low + grain <= plan.peak) {
        const int thisProbe = probe++;
        // The middle multiple of grain in [low, peak - grain] (peak and low are multiples).
        uint64_t capacity = low + ((plan.peak - low) / grain - 1) / 2 * grain;
        uint64_t share = std::max<uint64_t>((options.steps - spent) / 4, 8 * packer.descentSteps());
        if (thisProbe == 0) {
            capacity = given;
            share = options.steps / 2;
        } else if (thisProbe == 1) {
            capacity = low; // the bound, unless a probe of the capacity proved it too small
            share = (options.steps - spent) / 2;
        }
        std::vector<uint64_t> offsets;
        Relay relay(packer, strategies, capacity, threads);
        const SearchVerdict v = relay.run(std::min(options.steps, spent + share), spent, offsets);
        if (v == SearchVerdict::Found) {
            plan.offsets = std::move(offsets);
            plan.peak = peakOf(plan.offsets, problem.sizes);
            plan.heuristic = "search";
        } else if (v == SearchVerdict::Infeasible) {
            proven = std::max(proven, capacity + grain);
            low = std::max(low, proven);
        } else if (thisProbe > 0) {
            low = capacity + grain; // not proven, but the bisection moves on above it
        }
    }
    plan.searchSteps = spent;
    plan.lowerBound = proven;
    plan.optimal = plan.peak <= proven;
}

} // namespace sextant::backend
