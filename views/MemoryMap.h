#pragma once

#include "TimelineModel.h"
#include "core/backend/Program.h"

#include <cstdint>
#include <string>
#include <optional>
#include <vector>

namespace sextant::views {

/// One DRAM buffer as a rectangle of the memory tab: x = its lifetime in cycles, y = its address.
struct MemoryBlock {
    int buffer = 0;
    std::string value;                ///< the tensor it holds
    std::string type;                 ///< as it is kept: "f16[1,16,32,32]" (f16 where every reader takes f16)
    backend::BufferKind kind = backend::BufferKind::Intermediate;
    uint64_t offset = 0;              ///< DRAM byte address
    uint64_t size = 0;                ///< bytes
    uint64_t t0 = 0;                  ///< first writer's start (0 when the host writes it)
    uint64_t t1 = 0;                  ///< last reader's end (run end when the host reads it)
    std::vector<std::string> nodes;   ///< IR nodes that write or read it (for cross-selection)
    std::optional<double> fill;       ///< a weight the loader fills with this value (Buffer::fill)
};

/// The DRAM address map over time of one run, plus the plan's figures.
struct MemoryMapData {
    std::vector<MemoryBlock> blocks;  ///< by buffer id, a Concat written in place into before its inputs
    uint64_t totalCycles = 0;
    uint64_t arenaPeak = 0;           ///< bytes of the intermediate arena the plan uses
    uint64_t lowerBound = 0;          ///< max bytes live at once: no plan can beat this
    uint64_t weightBytes = 0;         ///< weights.bin's and those the loader fills
    uint64_t ioBytes = 0;

    /// Blocks of the given kinds only (the view hides weights by default: they live for the whole
    /// run and would dwarf the arena).
    std::vector<const MemoryBlock*> select(bool weights, bool io, bool intermediates) const;
};

/// Builds the map from the Program's DRAM buffers and the simulated Task times in `timeline`
/// (read from the profile database). A buffer's lifetime runs from the start of the Task that
/// writes it to the end of the last Task that reads it, both taken from the trace, so it reflects
/// what actually ran in parallel rather than the issue order.
MemoryMapData buildMemoryMap(const backend::Program& program, const TimelineModel& timeline);

} // namespace sextant::views
