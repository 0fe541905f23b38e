#pragma once

#include "core/backend/Program.h"
#include "core/ir/Error.h"
#include "core/sim/Simulator.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sextant::profiler {

/// Version of the database layout written by writeProfile. Readers take this version and
/// version 1; writeProfile appending to a version-1 file first upgrades it in the same
/// transaction (the new Task columns are NULL for the runs already there, which then read back as
/// version-1 runs do).
///
/// Layout (version 2). Text columns hold ids into `strings(id, text)`; times are cycles.
///   schema_version(version)
///   runs(id, model, target, pipeline, created)            created: unix seconds
///   nodes(run, name, op, origins, created_by)             origins: JSON array of ONNX node names
///   tasks(run, id, name, kernel, core, unit, start, "end", ready, flops, dma_bytes, nodes,
///         load_end, compute_start, compute_end, store_start, streamed, load_bytes, store_bytes)
///                                                         unit: "cube" | "vector" | "dma";
///                                                         nodes: JSON array of IR node names;
///                                                         phases (sim::TraceRecord): DMA loads
///                                                         [start, load_end), the unit computes
///                                                         [compute_start, compute_end), DMA
///                                                         stores [store_start, end); streamed 1:
///                                                         double-buffered, DMA in and out over
///                                                         [start, load_end) while it computes
///   task_nodes(run, task, node)                           the same, one row per node
///   deps(run, src, dst, event)                            event: -1 for a same-core dependency
///   buffers(run, id, value, level, core, "offset", size, first_task, last_task)
///                                                         level: "dram" | "sram"
///   sram_buffers(run, id, core, "offset", size, role, pair, task, buffer, first_task, last_task)
///                                                         role: backend::sramRoleName; pair 0/1
///                                                         in a ping-pong pair, -1 single; task,
///                                                         first/last_task: Task ids; buffer: a
///                                                         buffers id
///   sram_usage(run, core, cycle, bytes)                   per core, the bytes of SRAM buffers
///                                                         live from `cycle` to the core's next
///                                                         row (a buffer: from the start of its
///                                                         first Task to the end of its last)
///   metrics(run, key, value)                              total_cycles, clock_ghz, num_cores,
///                                                         num_tasks, num_events, dram_peak,
///                                                         dram_lower_bound, weight_bytes,
///                                                         io_bytes, then RunInfo::metrics
///   checksums(run, tbl, rows, digest)                    tbl: "tasks"; digest: the sum of the
///                                                         run's taskRowChecksum (ProfileCheck.h),
///                                                         its bits as a signed integer; not in
///                                                         files from before it (no version bump:
///                                                         readers that do not know it ignore it)
/// Indexes: tasks(run, core, start) for lane/time-window queries, task_nodes(run, task),
/// sram_usage(run, core, cycle).
///
/// Version 1 had no phase columns and no sram_buffers or sram_usage tables.
inline constexpr int kProfileSchemaVersion = 2;

/// What a run was, beyond the Program and its trace.
struct RunInfo {
    std::string model;    ///< model path or name as the user gave it
    std::string pipeline; ///< pass ids that ran, comma-separated; empty: taken from the Program
    /// Unix seconds of the run. Unset: now. Tests pin it so the file is reproducible; it is the
    /// only column that is not a function of the Program and the trace.
    std::optional<int64_t> created;
    /// Extra per-run numbers (e.g. accuracy figures); written with the built-in ones
    /// (total_cycles, dram_peak, dram_lower_bound, ...), in the given order.
    std::vector<std::pair<std::string, double>> metrics;
};

/// How writeProfile waits for a database another process is writing.
struct WriteOptions {
    /// The longest it waits, in all, for another connection's lock; then it gives up with an
    /// error saying the run was not saved.
    int lockTimeoutMs = 60000;
    /// Told while it waits: "waiting for 'run.db': locked by another process (5 s of at most
    /// 60 s)...", when the wait begins and then once a second. Unset: it waits silently.
    std::function<void(const std::string&)> onWait;
};

/// Appends one run to the SQLite database at `dbPath` (created if missing) in a single
/// transaction (in WAL mode, then back in rollback mode: docs/profile-format.md): the graph's
/// nodes with provenance, every Task with its simulated times, the Task dependencies (with the
/// event that carries each cross-core one), every buffer with its placement and lifetime, the SRAM
/// plan and its occupancy over time, and the run's metrics. Returns the new run's id.
///
/// It appends only to a file that is empty (no tables: a new file) or a profile database of a
/// version it knows whose tables and columns are all there and that passes SQLite's
/// integrity_check; any other SQLite file (another program's, or a damaged profile) is refused
/// untouched, with an error naming the file. A failed write leaves the runs already there as they
/// were (one transaction), and the error says the run was not saved.
Expected<int64_t> writeProfile(const std::string& dbPath, const backend::Program& program,
                               const sim::SimResult& result, const RunInfo& info,
                               const WriteOptions& options = {});

} // namespace sextant::profiler
