#pragma once

// The simulator's timing model: how many cycles a Task takes once it starts, from its tiles, its
// DMA traffic and how many Tasks share DRAM bandwidth with it. Pure functions of the Task, the
// target and the Task's first node, so the cost of one Task can be checked without running a program.

#include "core/backend/Program.h"
#include "core/backend/Target.h"
#include "core/ir/Graph.h"

#include <cstdint>

namespace sextant::sim {

/// A started Task's time, split as the trace records it.
struct TaskTiming {
    uint64_t compute = 0;  ///< cycles on its unit
    uint64_t dma = 0;      ///< cycles moving its DRAM bytes at the rate it gets
    uint64_t duration = 0; ///< start to end: compute and DMA (overlapped when double-buffered) and DRAM latency
};

/// Cycles of `task` on its unit: the cost model's figure (Task::computeCycles) when it has one,
/// else its flops over the cube's MACs or the vector lanes its precision gives (f16 lanes when the
/// precision pass marked `firstNode`, the Task's first node, f16); 0 for a DMA Task.
uint64_t computeCycles(const backend::Task& task, const backend::Target& target, const ir::Node* firstNode);

/// The time of `task` started while `dmaSharers` Tasks (itself included) stream DRAM: the DMA rate
/// is the engine's, or an equal share of DRAM bandwidth when that is less; a double-buffered
/// stream of several tiles hides the shorter of compute and DMA behind the longer except one
/// tile's worth; any DRAM traffic adds the DRAM latency once. At least one cycle.
TaskTiming timeTask(const backend::Task& task, const backend::Target& target, const ir::Node* firstNode,
                    int dmaSharers);

} // namespace sextant::sim
