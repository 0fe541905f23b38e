#pragma once

// Fault injection (sextant-cli run --inject KIND:N): one fault planted in a run of a Program that
// passed every check, so the simulator's safety nets can be seen to work. The fault is a value in
// SimOptions, applied by the simulator to its own copy of the run's state; the Program is not
// changed. docs/fault-injection.md describes the kinds and what each shows.

#include "core/backend/Program.h"
#include "core/ir/Error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace sextant::sim {

enum class FaultKind {
    None,
    /// Task N ends without recording its events: the Tasks waiting on them never start, and the
    /// watchdog names them, their nodes, the events and Task N as the recorder.
    DropRecord,
    /// Task N's DMA runs kDmaDelayFactor times slower: the run takes longer (the trace and the
    /// critical path show Task N), and, the events being right, computes the same numbers.
    DelayDma,
    /// Task N's output buffer is moved onto another live buffer of the same memory (DRAM, or the
    /// same core's SRAM): the two overwrite each other. The race checker (checkRaces) names both
    /// Tasks; without it the outputs come out wrong.
    ShiftAddress,
};

/// How much slower a DelayDma fault makes the Task's DMA.
inline constexpr uint64_t kDmaDelayFactor = 100;

/// One planted fault. The default plants none.
struct FaultPlan {
    FaultKind kind = FaultKind::None;
    int task = -1; ///< Task id (Task::id, as messages print "task N")
    bool active() const { return kind != FaultKind::None; }
};

/// "drop-record", "delay-dma", "shift-address" ("none" for FaultKind::None).
std::string_view faultKindName(FaultKind kind);
/// "drop-record:7".
std::string faultSpec(const FaultPlan& plan);
/// Parses "KIND:N" (N a Task id in digits). The error names the spec and lists the kinds.
Expected<FaultPlan> parseFaultPlan(std::string_view spec);

/// Where a ShiftAddress fault puts Task N's buffer.
struct AddressShift {
    size_t buffer = 0; ///< index into Program::buffers: Task N's output buffer
    size_t onto = 0;   ///< index of the live buffer it is moved onto
    uint64_t offset = 0; ///< the new offset of `buffer`
};

/// Checks `plan` against `program`: Task N exists, and the fault can act (DropRecord: it records
/// an event some Task waits on; DelayDma: it moves bytes; ShiftAddress: one of its outputs has a
/// live neighbour to be moved onto, see shiftFor). Errors (Invalid) start "inject KIND:N: ".
Status checkFault(const backend::Program& program, const FaultPlan& plan);

/// For a ShiftAddress fault: Task N's first output buffer that a later Task reads together with
/// another buffer of the same memory, moved onto that other buffer (both are live when the reader
/// starts, so one is overwritten whichever is written last). Prefers a buffer a Task writes over a
/// weight or a graph input, and the first such pair in Task order.
Expected<AddressShift> shiftFor(const backend::Program& program, const FaultPlan& plan);

/// One line saying what the fault does in this program, for the run's output:
/// "inject drop-record:1: task 1 'relu' (node 'relu') will not record event 0 (waited on by task 3 'add')".
std::string describeFault(const backend::Program& program, const FaultPlan& plan);

/// "task 3 'add' (node 'add')", "task 4 'conv' (nodes 'conv', 'relu')": a Task and the graph
/// nodes it runs, as the watchdog and the race checker name them (at most 3 nodes, then "and K more").
std::string taskAndNodes(const backend::Task& task);

} // namespace sextant::sim
