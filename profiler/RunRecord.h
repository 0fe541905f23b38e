#pragma once

// One simulated run as a profile database holds it (runs, tasks and metrics rows), built in memory
// from the Program and its trace. writeProfile stores these rows; the GUI shows a compile from them
// directly, so the database is where a run is kept, not how it reaches a view.

#include "ProfileDb.h"
#include "ProfileReader.h"
#include "RunCompare.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::profiler {

/// The Task rows of `program`'s run `result`, as ProfileReader::tasks returns them once written:
/// ordered by start cycle, then Task id.
std::vector<TaskRow> taskRows(const backend::Program& program, const sim::SimResult& result);

/// The SRAM buffer rows of `program`'s plan, as ProfileReader::sramBuffers returns them: by id.
std::vector<SramBufferRow> sramBufferRows(const backend::Program& program);

/// Each core's SRAM occupancy over the run, as ProfileReader::sramOccupancy returns it: by core,
/// then cycle, one row wherever a core's live bytes change (the last row of a core is 0). A
/// buffer is live from the simulated start of its first Task to the end of its last.
std::vector<SramStepRow> sramOccupancy(const backend::Program& program,
                                       const sim::SimResult& result);

/// The metric rows writeProfile stores, in its order: total_cycles, clock_ghz, num_cores,
/// num_tasks, num_events, dram_peak, dram_lower_bound, weight_bytes, io_bytes, then info.metrics.
std::vector<MetricRow> metricRows(const backend::Program& program, const sim::SimResult& result,
                                  const RunInfo& info);

/// The run as loadRun would read it back after writeProfile(db, program, result, info) returned
/// `runId` (`db` empty and `runId` 0 for a run kept nowhere).
LoadedRun recordRun(const backend::Program& program, const sim::SimResult& result, const RunInfo& info,
                    const std::string& db = {}, int64_t runId = 0);

} // namespace sextant::profiler
