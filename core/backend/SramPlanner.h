#pragma once

// The on-chip memory plan (DESIGN §6, on-chip residency): every Task's working set as planned
// buffers in its core's SRAM, and the keep-on-chip rule that keeps a feature map in SRAM from
// its producer to its last consumer when they run on one core and it fits. Lower.cpp runs it
// after the schedule and the events, before the DRAM plan (a kept tensor needs no DRAM).

#include "Program.h"
#include "Tiling.h"

#include <memory>
#include <string>
#include <vector>

namespace sextant::backend {

/// The rule's id, as `sextant-cli rules` lists it and --disable takes it.
inline constexpr const char* kKeepOnChipRule = "keep-on-chip";

/// How the SRAM plan runs.
struct SramPlanOptions {
    bool keepOnChip = true;  ///< the keep-on-chip rule runs
    /// keep-on-chip may keep a node split across cores a stripe per part (lower() then pins
    /// the reading parts to their producers' cores and narrows their deps).
    bool stripes = true;
    /// With stripes: a node may take its data producer's split (axis and ranges) where that
    /// costs no more than its own choice plus the stripe's trip through DRAM
    /// (alignWithProducer). lower() sets it on one of the programs it compares.
    bool alignSplits = false;
    /// With alignSplits: a node whose only reader would read its output in place, split as that
    /// reader chooses to be, takes the reader's split (alignWithReader) where it did not take its
    /// producer's.
    bool alignBackward = false;
    /// How the tile search prices a stream's DRAM latency (lower() tries both on small graphs).
    TilePricing tilePricing = TilePricing::LatencyPerTile;
    /// Whether dense convolutions may take their input channels in chunks (TileOptions).
    bool chunkReductions = true;
    /// The tile search's answers shared by the programs `lower` builds for one graph (TileCache);
    /// none: each searches on its own.
    std::shared_ptr<TileCache> tileCache;
    /// lower() builds that aligned program as a candidate at all (tests of the event machinery
    /// turn it off: aligned, their small graphs need no cross-core events).
    bool tryAlignedSplits = true;
    /// Applications of keep-on-chip allowed (what the pipeline's bisect limit leaves); -1: all.
    int64_t budget = -1;
    /// Search steps per core for the offsets (OffsetSearchOptions::steps).
    uint64_t searchSteps = 4'000'000;
};

/// What keep-on-chip did with one candidate tensor, for the pipeline's rule records.
struct OnChipDecision {
    std::string value;  ///< the tensor
    std::string node;   ///< the node that produces it (the application's anchor)
    enum class Outcome { Applied, Skipped, Rejected } outcome = Outcome::Rejected;
    std::string reason; ///< why it was rejected ("does not fit: needs 612 KiB, 380 KiB free on core 2")
};

/// Plans every core's SRAM. `costs[i]` is the tile search's result for Program::tasks[i] and
/// `bufferOf[v->id()]` the buffer of value v. Fills Program::sramBuffers, transfers, onChip and
/// memory.sram / dramTrafficBytes / compulsoryBytes; moves each kept tensor's buffer to its core's
/// SRAM; recomputes the affected Tasks' dmaBytes and estCycles and re-times the schedule (same
/// cores, same order). Candidates are looked at in the order of their producing Tasks.
/// Fails, naming the Task and the core, only when a Task's own working set does not fit.
Status planSram(Program& program, const std::vector<TaskCost>& costs, const std::vector<int>& bufferOf,
                const SramPlanOptions& options, std::vector<OnChipDecision>* decisions = nullptr);

/// Proves the SRAM plan safe: every SRAM buffer on a real core, aligned and inside the core's
/// SRAM; no two buffers of one core overlap in address while their Task ranges meet; every
/// buffer at level Sram is a resident SRAM buffer on the core of every Task that touches it.
Status checkSramPlan(const Program& program);

} // namespace sextant::backend
