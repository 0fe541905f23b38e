#pragma once

#include "TimelineModel.h"
#include "core/backend/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::views {

/// One planned SRAM buffer (backend::SramBuffer) as a rectangle of the memory tab's SRAM level:
/// x = its lifetime in simulated cycles, y = its offset in its core's SRAM.
struct SramBlock {
    int sramBuffer = 0; ///< Program::sramBuffers id
    int core = 0;
    backend::SramRole role = backend::SramRole::InputTile;
    int pair = -1; ///< 0 or 1 in a ping-pong pair, -1 for a single slot
    /// Index in SramMapData::blocks of the other slot of its ping-pong pair, -1 for none.
    int partner = -1;
    uint64_t offset = 0; ///< byte offset in the core's SRAM
    uint64_t size = 0;   ///< bytes
    uint64_t t0 = 0;     ///< simulated start of its first Task
    uint64_t t1 = 0;     ///< simulated end of its last Task
    int task = -1;       ///< the Task whose slot it is (for a resident: its writer)
    int firstTask = -1, lastTask = -1;
    int buffer = -1;   ///< Program::buffers id of the tensor it holds (a tile of)
    std::string value; ///< that tensor's name
    /// IR nodes of the Tasks on its core that use it: its own Task's, and for a resident tensor
    /// those of every Task in its lifetime that reads or writes the tensor (cross-selection).
    std::vector<std::string> nodes;
};

/// One core's SRAM figures, as the plan reports them (backend::SramStats).
struct SramCoreLines {
    int core = 0;
    uint64_t capacity = 0;   ///< the target's sram_bytes
    uint64_t peak = 0;       ///< highest byte a buffer on the core reaches
    uint64_t lowerBound = 0; ///< most bytes live at once over the core's Tasks
};

/// Every core's SRAM address map over time of one run, plus the plan's figures.
struct SramMapData {
    std::vector<SramBlock> blocks;    ///< as Program::sramBuffers: by core, then Task
    std::vector<SramCoreLines> cores; ///< one per core of the target
    uint64_t totalCycles = 0;
    uint64_t capacity = 0;         ///< the target's sram_bytes (every core has as much)
    uint64_t dramTrafficBytes = 0; ///< bytes the DMA moves between DRAM and SRAM
    uint64_t compulsoryBytes = 0;  ///< weights, inputs and outputs once: no plan moves less
    uint64_t onChipBytes = 0;      ///< SRAM bytes of the tensors keep-on-chip kept
    uint64_t savedDmaBytes = 0;    ///< DRAM traffic those tensors no longer cause
    int onChipTensors = 0;

    /// Indices into `blocks` of the buffers on `core` (-1: every core), in `blocks` order.
    std::vector<int> blocksOfCore(int core) const;
    /// Whether block `b` is one of the buffers node `node` uses (see SramBlock::nodes).
    static bool usedBy(const SramBlock& b, const std::string& node);
};

/// Builds the SRAM map from the Program's SRAM plan and the simulated Task times in `timeline`,
/// the same trace the DRAM map reads: a buffer lives from the simulated start of its first Task
/// to the end of its last. A Task the trace lacks leaves the block at the issue-order estimate
/// (estStart / estEnd), so a partial trace still shows every buffer.
SramMapData buildSramMap(const backend::Program& program, const TimelineModel& timeline);

/// The keep-on-chip figures of node `node`: the tensors it produces that stayed in SRAM.
struct NodeOnChip {
    std::vector<const backend::OnChip*> kept; ///< Program::onChip entries, by buffer id
    uint64_t bytes = 0;                       ///< their SRAM footprint
    uint64_t savedDmaBytes = 0;               ///< DRAM traffic they no longer cause
};
/// The on-chip tensors whose producing Task (the Buffer's firstTask) executes `node`.
NodeOnChip nodeOnChip(const backend::Program& program, const std::string& node);

} // namespace sextant::views
