#pragma once

// Exact search for interval offset assignment (buffers with fixed [lower, upper) lifetimes that
// conflict when their lifetimes intersect), after the canonical-solution method of MiniMalloc
// (Moffitt, ASPLOS 2023): only solutions where every buffer rests at the lowest address its
// already placed neighbours leave are enumerated, in non-decreasing address order, with the
// lower bounds of every time section checked at each step and independent time ranges solved
// apart. Used by planOffsets (MemoryPlanner.h) once its heuristics have given an upper bound.
// Internal to backend/.

#include "MemoryPlanner.h"

#include <cstdint>
#include <vector>

namespace sextant::backend {

/// planOffsets' search stage: when `problem` has lifetimes and every conflict is an overlap of
/// two of them, tries to replace `plan` (valid, from the heuristics) by one with a smaller peak
/// within `options.steps`, and sets plan.lowerBound and plan.optimal. Problems over
/// kMaxSearchBuffers buffers keep the heuristic plan (the bound is still set).
void searchSmallerPeak(const OffsetProblem& problem, const OffsetSearchOptions& options, OffsetPlan& plan);
inline constexpr size_t kMaxSearchBuffers = 4096;

/// One buffer of an interval problem: live over the sections [first, last) of the time axis.
struct SectionSpan {
    int first = 0, last = 0;
    uint64_t size = 0;
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

    /// The largest total size live in one section: no plan has a smaller peak.
    uint64_t maxLive() const;

    /// Searches under `capacity` with buffers tried in `preorder` order (a permutation of the
    /// buffer indices; earlier = tried first among buffers resting at one address), spending at
    /// most `budget` steps (a step is one search node, counted in buffers looked at, so that the
    /// same problem takes the same path on every machine). `offsets` is set when Found.
    SearchVerdict fits(uint64_t capacity, const std::vector<int>& preorder, uint64_t budget, uint64_t& stepsUsed,
                       std::vector<uint64_t>& offsets);

    /// The static orders the search is run with in turn: by the fullest section a buffer is in,
    /// then area; by area, then fullest section; by lifetime length, then area.
    std::vector<std::vector<int>> preorders() const;

private:
    enum class Step { Found, Exhausted, OutOfSteps };
    struct Undo {
        int buffer;   ///< the buffer placed (when `neighbour` < 0) or whose neighbour moved
        int neighbour;
        uint64_t oldTop;
    };

    Step search(std::vector<int> open, uint64_t watermark, int lastRank, int focusFirst, int focusLast);
    Step searchComponent(const std::vector<int>& open, uint64_t watermark, int lastRank, int focusFirst,
                         int focusLast);
    bool sectionsCanHold(const std::vector<int>& open, const std::vector<uint64_t>& pos,
                         const std::vector<size_t>& byPosition, uint64_t watermark, int focusFirst, int focusLast);
    void place(int b, uint64_t offset);
    void rollback(size_t mark);
    uint64_t aligned(uint64_t v) const;

    std::vector<SectionSpan> m_spans;
    int m_sections;
    uint64_t m_align;
    std::vector<std::vector<int>> m_neighbours;

    // search state
    uint64_t m_capacity = 0;
    uint64_t m_budget = 0, m_steps = 0;
    std::vector<int> m_rank;
    std::vector<uint64_t> m_top;       ///< per buffer: highest end among its placed neighbours
    std::vector<uint64_t> m_offset;
    std::vector<char> m_placed;
    std::vector<uint64_t> m_remaining; ///< per section: bytes of the open buffers live there
    std::vector<uint64_t> m_height;    ///< per section scratch: the least height its open buffers need
    std::vector<Undo> m_trail;
};

} // namespace sextant::backend
