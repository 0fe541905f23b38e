#pragma once

// Exact search for interval offset assignment (buffers with fixed [lower, upper) lifetimes that
// conflict when their lifetimes intersect), after the canonical-solution method of MiniMalloc
// (Moffitt, ASPLOS 2023): only solutions where every buffer rests at the lowest address its
// already placed neighbours leave are enumerated, in non-decreasing address order, with the
// lower bounds of every time section checked at each step and independent time ranges solved
// apart. Beyond MiniMalloc, a buffer left below the watermark (stranded) must be lifted by an
// open neighbour placed under its top: a node where one has none is cut, and the lift raises
// the section bounds; and buffers alive over the same time with the same neighbours, which can
// trade places wherever one sits right on another, are stacked in one order only. Used by
// planOffsets (MemoryPlanner.h) once its heuristics have given an upper bound.
// Internal to backend/.

#include "MemoryPlanner.h"

#include <atomic>
#include <compare>
#include <functional>
#include <memory>
#include <cstdint>
#include <vector>

namespace sextant::backend {

/// planOffsets' search stage: when `problem` has lifetimes and every two buffers whose lifetimes
/// meet conflict (they may conflict beyond that too), tries to replace `plan` (valid, from the
/// heuristics) by one with a smaller peak within `options.steps`, and sets plan.lowerBound and
/// plan.optimal. When the conflicts are more than the lifetimes' overlaps, other orders of
/// first-fit placement are tried first, with up to a quarter of the steps (plan.heuristic
/// "reorder" when they find a lower peak). Problems over
/// kMaxSearchBuffers buffers keep the heuristic plan (the bound is still set).
/// `meetingConflict`: the caller's meetingBuffersConflict of the problem (without it the problem
/// is not searched).
void searchSmallerPeak(const OffsetProblem& problem, const OffsetSearchOptions& options, bool meetingConflict,
                       OffsetPlan& plan);
inline constexpr size_t kMaxSearchBuffers = 4096;

/// Places `problem`'s buffers in `order`, each at the lowest aligned offset where it overlaps
/// none of the conflicting buffers placed before it (first fit; MemoryPlanner.cpp). The local
/// search over orders (for conflicts beyond the lifetimes) plans with it.
OffsetPlan placeFirstFit(const OffsetProblem& problem, const std::vector<int>& order);

/// One buffer of an interval problem: live over the sections [first, last) of the time axis.
struct SectionSpan {
    int first = 0, last = 0;
    uint64_t size = 0;
    uint64_t width = 0; ///< the lifetime's length in the problem's own time units
};

/// What a search for a plan under a capacity ended with.
enum class SearchVerdict {
    Found,      ///< offsets fit below the capacity
    Infeasible, ///< proven: no plan fits (the whole tree was searched)
    OutOfSteps, ///< the step budget ran out first
};

/// A decision search: is there a plan whose every buffer ends at or below `capacity`?
class IntervalPacker {
public:
    /// `spans` on a time axis of `sections` sections; every offset a multiple of `alignment`.
    IntervalPacker(std::vector<SectionSpan> spans, int sections, uint64_t alignment);
    /// The same with the conflicts given: `neighbours[i]` lists every buffer i must not overlap
    /// in space. It must hold every pair whose spans meet (the section bounds stack those), and
    /// may hold more (buffers whose order is not known, such as a program's DRAM buffers).
    IntervalPacker(std::vector<SectionSpan> spans, int sections, uint64_t alignment,
                   std::vector<std::vector<int>> neighbours);

    /// The largest total size live in one section: no plan has a smaller peak.
    uint64_t maxLive() const;
    /// Per buffer, sorted: the buffers it must not overlap in space.
    const std::vector<std::vector<int>>& neighbours() const { return *m_neighbours; }

    /// About what two descents from the root to a leaf cost in steps, when nothing backtracks:
    /// the first step limit worth giving a run (a smaller one cannot reach a plan at all).
    uint64_t descentSteps() const;

    /// How many static orders there are to search with. Three rank by time (width, area in
    /// bytes x time, the fullest section a buffer is in) in MiniMalloc's combinations WAT, TAW
    /// and TWA; three by sections (fullest then area, area then fullest, sections spanned then
    /// area). No single order wins on every instance, so all of them get their turn.
    static constexpr int kPreorders = 6;

    /// Asked when a run has spent its budget (or its `stop` was set): the budget to go on with,
    /// more than the steps spent so far, or anything else to end the run there (OutOfSteps).
    using Refill = std::function<uint64_t(uint64_t stepsSoFar)>;

    /// Searches under `capacity` with buffers tried in the order `preorder` (0..kPreorders-1)
    /// gives them (earlier = tried first among buffers resting at one address); with `rerank`,
    /// parts of the time axis that come apart during the search are ranked again by what is left
    /// in them (another path through the same tree, which succeeds on other problems). Spends
    /// `budget` steps (a step is one search node, counted in buffers looked at, so that the same
    /// problem takes the same path on every machine), then asks `refill` for more: a run that
    /// gets more goes on where it stood, searching nothing twice. `offsets` is set when Found.
    SearchVerdict fits(uint64_t capacity, int preorder, bool rerank, uint64_t budget, uint64_t& stepsUsed,
                       std::vector<uint64_t>& offsets, const Refill* refill = nullptr,
                       const std::atomic<bool>* stop = nullptr);

private:
    enum class Step { Found, Exhausted, OutOfSteps };
    struct Undo {
        int buffer;   ///< the buffer placed (when `neighbour` < 0) or whose neighbour moved
        int neighbour;
        uint64_t oldTop;
    };

    /// An open buffer where it would go: its position (the aligned top of its placed
    /// neighbours) and its rank; a node tries them in this order.
    struct Placing {
        uint64_t pos;
        int rank;
        int buffer;
        auto operator<=>(const Placing&) const = default;
    };

    Step search(std::vector<int> open, uint64_t watermark, int lastRank, int focusFirst, int focusLast,
                const std::vector<Placing>* byPosition);
    /// What a node's order shows at a glance: its lowest top, whether a buffer's position
    /// leaves it above the capacity, and the sections its buffers span.
    struct Spread {
        uint64_t minHeight = UINT64_MAX;
        bool over = false;
        int lo = INT32_MAX, hi = 0;
    };
    /// `checked`, when given, is the node's Spread, and says its parent has made its checks.
    Step searchComponent(const std::vector<int>& open, uint64_t watermark, int lastRank, int focusFirst,
                         int focusLast, const std::vector<Placing>* inherited, const Spread* checked);
    /// The node's bounds (see the .cpp); `lastRank` is the rank of the buffer placed at the
    /// watermark, whose ties of lower rank can no longer rest there.
    bool sectionsCanHold(int lo, int hi, const std::vector<Placing>& byPosition, uint64_t watermark, int lastRank,
                         int focusFirst, int focusLast);
    Spread spreadOf(const std::vector<Placing>& byPosition) const;
    /// A node's checks before anything is tried in it: no open buffer rests so high that it ends
    /// above the capacity, and the section bounds hold. Counts the steps of its order (`merged`
    /// by the parent, or sorted).
    bool nodeCanHold(const Spread& spread, const std::vector<Placing>& byPosition, bool merged, uint64_t watermark,
                     int lastRank, int focusFirst, int focusLast);
    /// The check at a node's entry: false when the run ends there (budget spent, no more given).
    bool goOn();
    /// Whether the open buffers of a node that was one piece are still one once `placed` is
    /// placed: a cut can only fall at a boundary inside its reach that no open reach crosses.
    bool oneAfterPlacing(int placed) const;
    void orderByPosition(const std::vector<int>& open, std::vector<Placing>& byPosition) const;
    void orderAfterPlacing(const std::vector<Placing>& byPosition, int b, size_t mark, std::vector<Placing>& out);
    void rankBuffers(const std::vector<int>& buffers, int preorder);
    bool place(int b, uint64_t offset); ///< true when b has open neighbours (a buffer above it)
    void rollback(size_t mark);
    uint64_t aligned(uint64_t v) const;
    void setReach();
    void setAlike();
    /// Whether b, placed at p, would sit right on top of a buffer alike (m_alike) ranked after it
    /// at the root: such a pair trades places (b under a) into a plan that is just as canonical,
    /// with every other buffer where it was, so only stacks of alike buffers in the root's rank
    /// order are searched (the order in which a node tries them, so no plan is put off to a
    /// later branch). Ranks given again mid-search do not change it, which keeps it one order.
    bool restsOnAlike(int b, uint64_t p) const;

    std::vector<SectionSpan> m_spans;
    int m_sections;
    uint64_t m_align;
    /// Shared by the copies a search makes of a packer (one per strategy): they never change.
    std::shared_ptr<const std::vector<std::vector<int>>> m_neighbours;
    /// Per buffer: the sections from the first to the last of it and of the neighbours whose
    /// spans do not meet its own (conflicts beyond the lifetimes). Open
    /// buffers fall apart into independent parts only where no reach crosses.
    std::vector<std::pair<int, int>> m_reach;
    /// Per section boundary x (between sections x-1 and x): how many open buffers' reaches
    /// cross it. Open buffers fall apart only at a boundary none crosses.
    std::vector<int> m_crossing;
    /// Per buffer: the buffers with the same span and the same other neighbours, whose sizes
    /// are multiples of the alignment: two of them touching (one right on the other) can trade
    /// places, the pair covering the same addresses and every other buffer resting where it was.
    std::vector<std::vector<int>> m_alike;

    // search state
    uint64_t m_capacity = 0;
    int m_preorder = 0;
    bool m_rerank = false;
    uint64_t m_budget = 0, m_steps = 0;
    std::vector<int> m_rank;
    std::vector<int> m_stackRank; ///< m_rank at the root: the order of stacks of alike buffers
    std::vector<uint64_t> m_top;       ///< per buffer: highest end among its placed neighbours
    std::vector<uint64_t> m_offset;
    std::vector<char> m_placed;
    std::vector<uint64_t> m_remaining; ///< per section: bytes of the open buffers live there
    std::vector<uint64_t> m_height;    ///< per section scratch: the least height its open buffers need
    std::vector<Undo> m_trail;
    const Refill* m_refill = nullptr;
    const std::atomic<bool>* m_stop = nullptr;
    std::vector<Placing> m_lifted;     ///< sectionsCanHold's scratch: stranded buffers' lowest positions
    std::vector<uint32_t> m_moved;     ///< per buffer: the orderAfterPlacing call that moved it last
    uint32_t m_stamp = 0;
};

} // namespace sextant::backend
