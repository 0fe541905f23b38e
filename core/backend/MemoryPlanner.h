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
    std::vector<std::vector<int>> conflicts;    ///< symmetric: conflicts[i] lists j that must not overlap i
    /// Optional [lower, upper) lifetimes (same length as sizes, or empty). Only used to order the
    /// placement heuristics; the conflicts alone decide validity.
    std::vector<std::pair<uint64_t, uint64_t>> lifetimes;
    uint64_t alignment = 1;                     ///< every offset is a multiple of this
};

/// An answer to an OffsetProblem.
struct OffsetPlan {
    std::vector<uint64_t> offsets;
    uint64_t peak = 0;         ///< max over buffers of offset + size
    std::string heuristic;     ///< which ordering/placement won ("size-desc/best-fit", ...)
};

/// Places every buffer. Runs several greedy orderings (size descending as in TFLite's arena
/// planner, conflict weight, lifetime length, start time) with best-fit and first-fit gap
/// selection and keeps the smallest peak; deterministic.
OffsetPlan planOffsets(const OffsetProblem& problem);

/// Proves a plan valid: aligned offsets, and no two conflicting buffers overlap in space.
Status checkOffsetPlan(const OffsetProblem& problem, const OffsetPlan& plan);

/// One row of an interval instance: live over [lower, upper), needs `size` bytes.
struct IntervalBuffer {
    std::string id;
    uint64_t lower = 0, upper = 0, size = 0;
};

/// Builds the problem where buffers conflict when their half-open lifetimes intersect.
OffsetProblem problemFromIntervals(const std::vector<IntervalBuffer>& buffers, uint64_t alignment = 1);
/// The largest total size live at one time: a lower bound for any plan of these intervals.
uint64_t maxLiveBytes(const std::vector<IntervalBuffer>& buffers);
/// Reads a CSV with header `id,lower,upper,size` (the MiniMalloc benchmark format).
Expected<std::vector<IntervalBuffer>> readIntervalCsv(const std::string& path);

/// Plans the DRAM of a scheduled Program: lays out [weights][graph inputs+outputs][intermediate
/// arena], assigns arena offsets so that two intermediates share addresses only when every access
/// to one happens-before (through Task deps) the write of the other, and fills Program::memory.
/// `order` must describe Program::tasks' deps (see Reachability).
Status planMemory(Program& program, const Reachability& order);

/// Proves the memory plan safe: every buffer in bounds and aligned, and no two Tasks that are not
/// ordered by deps touch overlapping addresses when one of them writes.
Status checkHazards(const Program& program);

} // namespace sextant::backend
