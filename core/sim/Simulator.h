#pragma once

#include "Fault.h"

#include "core/backend/Program.h"
#include "core/ir/Error.h"
#include "core/ir/Tensor.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace sextant::sim {

/// When one Task ran on the simulated NPU. All times are in cycles from the start of the run.
struct TraceRecord {
    int task = 0; ///< Task id (Program::tasks[i].id)
    int core = 0;
    backend::UnitKind unit = backend::UnitKind::Vector;
    uint64_t ready =
        0; ///< every event it waits on had arrived (and, in strict mode, its predecessor ended)
    uint64_t start = 0;         ///< it began: ready and its core free and dispatched
    uint64_t end = 0;           ///< its outputs were written and its events recorded
    uint64_t computeCycles = 0; ///< cycles its unit was busy
    uint64_t dmaCycles = 0;     ///< cycles its DMA engine needed at the bandwidth it got
    int dmaSharers = 1;         ///< Tasks (itself included) whose DMA shared DRAM when it started
    /// Its phases (TaskTiming): the DMA loads over [start, loadEnd), the unit computes over
    /// [computeStart, computeEnd), the DMA stores over [storeStart, end). A double-buffered Task
    /// streams over [start, loadEnd) while it computes, and storeStart == end.
    uint64_t loadEnd = 0, computeStart = 0, computeEnd = 0, storeStart = 0;
};

/// The result of simulating a Program once.
struct SimResult {
    std::vector<TraceRecord> trace;  ///< one record per Task, in Program::tasks order
    uint64_t totalCycles = 0;        ///< end of the last Task
    std::vector<ir::Tensor> outputs; ///< read back from the output buffers, one per graph output
    /// With SimOptions::keepValues: every value a Task computed, as it computed it (after the
    /// rounding its precision gives), in the order the Tasks ran.
    std::vector<std::pair<std::string, ir::Tensor>> values;
};

/// Knobs of one simulation.
struct SimOptions {
    /// Strict sync: every Task also waits for the previous Task of Program::tasks to end (one
    /// global order across cores, for debugging races). Default: graph-async (only the planned
    /// syncs).
    bool strict = false;
    /// Compute the Tasks' numbers (read/compute/write the memory images). Off: timing only; no
    /// memory image is held (the plan is still checked against the target), the inputs are not
    /// read (the span may be empty) and SimResult::outputs is empty.
    bool functional = true;
    /// Debug check: fail with a "race: ..." error naming both Tasks when a Task starts while the
    /// producer of a buffer it reads has not ended (a missing event wait), or while a running Task
    /// writes addresses it touches or reads addresses it writes (overlapping live buffers). Off by
    /// default: hardware does not check either, it computes wrong numbers.
    bool checkRaces = false;
    /// Keep every value the Tasks compute in SimResult::values (the per-tensor accuracy compare
    /// reads them). Holds all intermediates at once: memory grows with the model.
    bool keepValues = false;
    /// A fault to plant in this run (sextant-cli run --inject; see Fault.h): checked against the
    /// Program first (an Invalid error naming the problem), then applied to the run's own state.
    FaultPlan fault;
};

/// Runs a Program on the discrete-event model of its target (DESIGN §7).
///
/// Timing model: each core runs its Tasks in Program::tasks order, one at a time. A Task starts at
/// max(previous Task on its core ended + dispatchCycles, each waited event's recording Task ended +
/// eventLatencyCycles). Its duration is dramLatencyCycles (when it moves bytes) plus its compute
/// cycles (Task::computeCycles, the cost model's for its tiles; in a Program without them, cube:
/// flops / (2*M*N*K), vector: flops / f32 lanes, f16 lanes for f16 ops; DMA-only: 0) and its DMA cycles
/// (dmaBytes / min(per-core DMA rate, DRAM rate / Tasks moving data at its start)); with double
/// buffering the two overlap except for one tile's worth of the shorter. Cross-core data
/// dependencies are honoured only through events, as on hardware: a missing wait is a race.
///
/// A part of a node split across cores (Task::parts > 1) computes the node as a whole Task would
/// and writes only its slice of the output (backend::sliceOf); its siblings write the rest.
///
/// Function: at its start a Task reads the inputs of its nodes from the DRAM/SRAM images at the
/// planned buffer addresses, evaluates its nodes in the precision the `precision` pass marked
/// (Node::precision, printed precision = "..."; "f16-acc-f32" f16 data and weights with f32 accumulation, "f16" f16
/// operands and results, "f32" f32; unmarked: cube nodes f16-acc-f32, everything else f32) and,
/// at its end, writes its outputs to their buffers. sextant.TransData is the identity on the
/// logical tensor (buffers hold logical data; the NC1HWC0 padding is costed, not stored).
/// Integer constants without a buffer (shape operands) are taken as descriptor parameters.
///
/// Errors: inputs that do not fit their buffers (Invalid), a plan that does not fit its target or a
/// node that fails (Runtime), and a deadlock, reported by the watchdog with every blocked Task and
/// the event it waits on (Runtime). isSafetyNetStop tells the last two apart from the rest.
Expected<SimResult> simulate(const backend::Program& program, std::span<const ir::Tensor> inputs,
                             const SimOptions& options = {});

/// Whether `error` is the watchdog's (a deadlock: message "watchdog: ...") or the race checker's
/// ("race: ..."): the run was stopped by a safety net, not refused for bad input.
bool isSafetyNetStop(const Error& error);

} // namespace sextant::sim
