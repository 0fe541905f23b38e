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
    /// Phases, in cycles from the start. Not double-buffered: the DMA loads [0, loadEnd), the
    /// unit computes [computeStart, computeEnd) and the DMA stores [storeStart, duration), one after
    /// another. Double-buffered: the DMA streams every tile in and out over [0, loadEnd) while the
    /// unit computes over [computeStart, computeEnd), from the first tile's arrival to the end;
    /// storeStart is then `duration` (no separate store phase).
    uint64_t loadEnd = 0, computeStart = 0, computeEnd = 0, storeStart = 0;
};

/// Cycles of `task` on its unit: the cost model's figure (Task::computeCycles) when it has one,
/// else its flops over the cube's MACs or the vector lanes its precision gives (f16 lanes when the
/// precision pass marked `firstNode`, the Task's first node, f16); 0 for a DMA Task.
uint64_t computeCycles(const backend::Task& task, const backend::Target& target, const ir::Node* firstNode);

/// The time of `task` started while `dmaSharers` Tasks (itself included) stream DRAM: the DMA rate
/// is the engine's, or an equal share of DRAM bandwidth when that is less; a double-buffered
/// stream of several tiles hides the shorter of compute and DMA behind the longer except one
/// tile's worth; any DRAM traffic adds the DRAM latency once. At least one cycle.
/// `loadBytes` of its dmaBytes are loads (DRAM to SRAM), the rest stores; they split the DMA
/// time between the load and store phases.
TaskTiming timeTask(const backend::Task& task, const backend::Target& target, const ir::Node* firstNode,
                    int dmaSharers, uint64_t loadBytes);

/// The time of `task` started beside the Task before it on its core (its "head"), which computes
/// until `headComputeEnd` and ends at `headEnd` (cycles from this Task's start; both 0 without a
/// head), or before the data it waits for is in memory, at `dataAt`. Its unit computes once the
/// head's compute is done and its data is in (when it reads what the head computed, `dataAt` is
/// at least `headEnd`); it loads `earlyLoad` bytes from its start and the `lateLoad` bytes that
/// wait for the data from `dataAt`, each request with the DRAM latency (the second one's under the
/// first one's bytes, the engine moving one at a time); it ends no earlier than the head.
/// The head's loads hold the core's load engine until `headLoadEnd` (0 without a head): a request
/// issued earlier has its latency pass under them, and its bytes move after them.
/// Its stores start once the head's are done (one load and one store engine per core). A
/// double-buffered stream (no late loads) stalls with its compute. Loads, compute and stores of
/// one Task follow each other as in timeTask.
TaskTiming timeBeside(const backend::Task& task, const backend::Target& target, const ir::Node* firstNode,
                      int dmaSharers, uint64_t earlyLoad, uint64_t lateLoad, uint64_t headComputeEnd, uint64_t headEnd,
                      uint64_t dataAt, uint64_t headLoadEnd = 0);

/// A host Task's time (DESIGN §6, partitions): the host reads its inputs from DRAM over
/// [dataAt, loadEnd), computes (with the step's fixed cost) and writes its outputs back over
/// [storeStart, duration). The three add up to the cost model's figure for it (computeCycles,
/// which prices the bytes at backend::hostTransferCycles), so the transfers are shown, not
/// charged twice; an older artifact's figure too small for them shortens the compute first.
TaskTiming timeHost(const backend::Task& task, const backend::Target& target, uint64_t readBytes,
                    uint64_t writtenBytes, uint64_t dataAt);

} // namespace sextant::sim
