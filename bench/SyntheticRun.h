#pragma once

// A synthetic simulated run of any size for the timeline and export benchmarks (issue 19 items 5
// and 6): `tasks` Tasks round-robin over `cores` cores, each core running one Task at a time and
// cycling through a cube Task (load, compute, store), a double-buffered vector Task (streams its
// tiles while it computes) and a DMA-only Task, with durations that vary from Task to Task. Each
// Task depends on the one before it on its core, and every eighth on a Task of the next core.
// Deterministic: the same arguments give the same run, byte for byte once written.

#include "core/backend/Program.h"
#include "core/sim/Simulator.h"
#include "profiler/ProfileReader.h"

#include <string>
#include <vector>

namespace sextant::bench {

struct SyntheticRun {
    backend::Program program;
    sim::SimResult result;
};

SyntheticRun syntheticRun(int tasks, int cores = 8);

/// The run's Task rows as a profile database returns them (profiler::taskRows).
std::vector<profiler::TaskRow> syntheticTaskRows(int tasks, int cores = 8);

} // namespace sextant::bench
