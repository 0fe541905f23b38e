#pragma once

#include "Program.h"
#include "core/ir/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::backend {

class Reachability;

/// A static offset-assignment problem: place buffers in one address space so that any two
/// buffers that must not overlap (because they may be live at the same time) get disjoint
/// ranges, using as little space as possible. This is independent of the compiler so it can be
/// checked on published benchmark instances (tests/backend, /work/shared/memplan).
struct OffsetProblem {
    std::vector<uint64_t> sizes;                ///< bytes per buffer
    std::vector<std::vector<int>> conflicts;    ///< symmetric: conflicts[i] lists j that must not overlap i (any order)
    /// Optional [lower, upper) lifetimes (same length as sizes, or empty). They order the
    /// placement heuristics, and when every conflict is an overlap of two lifetimes, planOffsets
    /// also searches by them; the conflicts alone decide validity.
    std::vector<std::pair<uint64_t, uint64_t>> lifetimes;
    uint64_t alignment = 1;                     ///< every offset is a multiple of this
    /// Buffers conflict exactly when their lifetimes intersect, and `conflicts` is empty: an
    /// interval problem with too many overlapping pairs to list (problemFromIntervals). It is
    /// planned, checked and bounded by sweeps over time, never pair by pair.
    bool overlapsOnly = false;
};

/// An answer to an OffsetProblem.
struct OffsetPlan {
    std::vector<uint64_t> offsets;
    uint64_t peak = 0;         ///< max over buffers of offset + size
    std::string heuristic;     ///< which ordering/placement won ("size-desc/best-fit", "search", ...)
    /// No plan has a smaller peak: the largest total live at one time, raised by every capacity
    /// the search proved too small. 0 when the problem has no lifetimes to bound it with.
    uint64_t lowerBound = 0;
    bool optimal = false;      ///< peak == lowerBound: proven the least possible
    uint64_t searchSteps = 0;  ///< search steps spent (0: heuristics only)
    /// With OffsetSearchOptions::capacity: whether the plan fits it. When it does not, `peak` is
    /// the smallest capacity found to work and `lowerBound` the least any plan could need.
    bool fitsCapacity = true;
};

/// How hard planOffsets searches. Steps, not seconds, limit it, so that a problem gets the same
/// plan on every machine (and on any number of threads); kDefaultSearchSteps takes at most
/// about 0.8 s for the 150-450 buffer MiniMalloc instances on a 2-core machine (BENCHMARKS.md).
struct OffsetSearchOptions {
    static constexpr uint64_t kDefaultSearchSteps = 800'000'000;
    uint64_t steps = kDefaultSearchSteps; ///< 0: heuristics only
    uint64_t capacity = 0;                ///< bytes the plan must fit in (0: no limit)
    unsigned threads = 2;                 ///< at most this many threads search at once (same plan)
};

/// Places every buffer. Runs several greedy orderings (size descending as in TFLite's arena
/// planner, conflict weight, lifetime length, start time) with best-fit and first-fit gap
/// selection and keeps the smallest peak; then, for a problem whose conflicts include its
/// lifetimes' overlaps (interval problems, per-core SRAM, a program's DRAM, where Tasks not
/// ordered add more, and other orders of placement are tried first), searches for a smaller
/// peak (OffsetSearch.h):
/// at the capacity first when the heuristics do not fit it, then at the lower bound, then halving
/// the distance between the lowest capacity not ruled out and the best found. An overlapsOnly
/// problem is placed in one sweep over time instead (each buffer, at its start, in the tightest
/// range free among the buffers then live), with max-live as its bound.
/// Deterministic: the same problem and options give the same plan.
OffsetPlan planOffsets(const OffsetProblem& problem, const OffsetSearchOptions& options = {});

/// Proves a plan valid: aligned offsets, and no two conflicting buffers overlap in space.
Status checkOffsetPlan(const OffsetProblem& problem, const OffsetPlan& plan);

/// One row of an interval instance: live over [lower, upper), needs `size` bytes at an offset
/// that is a multiple of `alignment`.
struct IntervalBuffer {
    std::string id;
    uint64_t lower = 0, upper = 0, size = 0;
    uint64_t alignment = 1;
    /// Buffers (indices into the same list) it must not share addresses with although the
    /// lifetimes do not meet: a program's DRAM buffers whose Tasks are not ordered. Either side
    /// of a pair may hold it.
    std::vector<size_t> conflicts{};
};

/// The alignment one plan of `buffers` can give all of them: the least common multiple of `base`
/// and each buffer's own (the largest of them when they are powers of two). An error when it is
/// over kMaxAlignment.
inline constexpr uint64_t kMaxAlignment = uint64_t{1} << 40;
Expected<uint64_t> commonAlignment(const std::vector<IntervalBuffer>& buffers, uint64_t base);

/// Builds the problem where buffers conflict when their half-open lifetimes intersect, and where
/// a buffer's `conflicts` say so. When more than `maxListedPairs` pairs overlap (buffers alive
/// over most of a long program: the lists would grow with the square of the buffers), none are
/// listed and the problem is overlapsOnly (its `conflicts` then unlisted too: see
/// hasConflictsBeyondLifetimes).
inline constexpr uint64_t kMaxListedPairs = uint64_t{1} << 23;
OffsetProblem problemFromIntervals(const std::vector<IntervalBuffer>& buffers, uint64_t alignment = 1,
                                   uint64_t maxListedPairs = kMaxListedPairs);
/// Whether any of `buffers` lists a conflict (IntervalBuffer::conflicts).
bool hasConflictsBeyondLifetimes(const std::vector<IntervalBuffer>& buffers);
/// How many pairs of buffers with bytes have intersecting lifetimes (a sweep, not a count pair by pair).
uint64_t overlappingPairs(const std::vector<std::pair<uint64_t, uint64_t>>& lifetimes,
                          const std::vector<uint64_t>& sizes);
/// The largest total size live at one time: a lower bound for any plan of these intervals.
uint64_t maxLiveBytes(const std::vector<IntervalBuffer>& buffers);
/// The same for lifetimes and sizes side by side (buffers without bytes or time count nothing).
uint64_t maxLiveBytes(const std::vector<std::pair<uint64_t, uint64_t>>& lifetimes, const std::vector<uint64_t>& sizes);
/// Whether every two buffers with bytes whose lifetimes meet are in each other's list (`lists[i]`
/// in any order): then max-live bounds every plan.
bool meetingBuffersConflict(const std::vector<std::pair<uint64_t, uint64_t>>& lifetimes,
                            const std::vector<uint64_t>& sizes, const std::vector<std::vector<int>>& lists);
/// The longest line readIntervalCsv reads (a file of endless bytes ends there).
inline constexpr size_t kMaxIntervalCsvLine = size_t{1} << 20;
/// Reads a CSV with header `id,lower,upper,size` (the MiniMalloc benchmark format, in any column
/// order). An optional `conflicts` column (what `compile --export-offset-problem` writes) lists,
/// space-separated, the ids of other rows the buffer conflicts with although the lifetimes do not
/// meet; an id no row has, the row's own, or one that two rows have is an error. MiniMalloc's other spellings are read too: `begin` or `start` for lower, `end` for an
/// inclusive last time (upper = end + 1), `buffer` or `buffer_id` for id; and its `alignment`
/// column. Further columns (a plan's `offset`; MiniMalloc's `hint`, a preference, and `gaps`,
/// times within a lifetime when the buffer is not needed, so that treating it as live
/// throughout is safe) are ignored. Spaces around a cell do not count. Every row needs
/// lower < upper and numbers in digits; a bad row is an error naming the file, the line and
/// the field.
Expected<std::vector<IntervalBuffer>> readIntervalCsv(const std::string& path);

/// The problem planMemory solves for a Program's DRAM arena: its intermediates in DRAM (not the
/// inputs of a Concat lowered in place, which are parts of its output), as items: a buffer, or
/// the buffers that share their addresses slice by slice (one item, live over all of their
/// lifetimes). Items conflict where Tasks do not order their accesses, which includes every two
/// whose estimated lifetimes meet.
struct DramArenaProblem {
    OffsetProblem problem;          ///< per item: size, estimated lifetime [first write, last access), conflicts
    std::vector<int> buffers;       ///< the arena's buffers (Buffer::id)
    std::vector<size_t> itemOf;     ///< per entry of `buffers`, its item
    std::vector<int> firstBuffer;   ///< per item, its first buffer (Buffer::id)
};
/// `order` must describe Program::tasks' deps (see Reachability).
Expected<DramArenaProblem> dramArenaProblem(const Program& program, const Reachability& order);
/// The same, with the order built from the Tasks' deps (an error for an order too large to hold).
Expected<DramArenaProblem> dramArenaProblem(const Program& program);

/// Plans the DRAM of a scheduled Program: lays out [weights][graph inputs+outputs][intermediate
/// arena], assigns arena offsets so that two intermediates share addresses only when every access
/// to one happens-before (through Task deps) the write of the other, and fills Program::memory.
/// The offsets are the heuristics' plan, then planOffsets' search within `searchSteps`; the lower
/// bound is the larger of the schedule's max-live and the bytes of buffers that pairwise conflict.
/// `order` must describe Program::tasks' deps (see Reachability).
inline constexpr uint64_t kDramSearchSteps = 20'000'000;
Status planMemory(Program& program, const Reachability& order, uint64_t searchSteps = kDramSearchSteps);

/// Whether `reader` reads `buffer` only within its own slice (Task::sliceLocalInputs) or within
/// its halo window (Task::haloReads) and `writer` writes a slice of the same dim that does not
/// meet it: the reader needs no order after that writer.
bool disjointSliceRead(const Task& writer, const Task& reader, int buffer);

/// Proves the memory plan safe: every buffer in bounds and aligned, and no two Tasks that are not
/// ordered by deps touch overlapping addresses when one of them writes.
Status checkHazards(const Program& program);

} // namespace sextant::backend
