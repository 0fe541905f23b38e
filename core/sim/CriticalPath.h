#pragma once

// The critical path of a simulated run: the chain of Tasks that set the total latency. Walking
// back from the Task that ended last, each step goes to whatever made the Task start when it did:
// the dependency whose result (and event, across cores) arrived last, or the Task before it on
// the same core. Shortening anything off the path does not shorten the run.

#include "Simulator.h"

#include "core/backend/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::sim {

struct CriticalStep {
    enum class Cause {
        First,      ///< nothing before it held it back (it started as soon as it could)
        Dependency, ///< it waited for `after`'s result (plus the event latency across cores)
        CoreBusy,   ///< it waited for `after`, the Task before it on its core (plus dispatch), or
                    ///< in strict mode the Task before it in issue order
    };
    size_t task = 0;  ///< index into Program::tasks / SimResult::trace
    Cause cause = Cause::First;
    size_t after = 0; ///< the step before it (for Dependency and CoreBusy)
    uint64_t gap = 0; ///< cycles between `after` ending and this Task starting
};

/// The critical path, first Task first. Empty for a Program without Tasks. `strict`: the run was
/// in strict mode, where every Task also waited for the one before it in Program::tasks.
std::vector<CriticalStep> criticalPath(const backend::Program& program, const SimResult& result,
                                       bool strict = false);

/// The critical path's cycles by what they were spent on. A Task's own time, from its start (or,
/// when it started earlier, beside the Task before it on its core or loading its weights before
/// its events came, from when what it waited for arrived): the DRAM latency
/// once when it moves bytes and that part is not behind it, then its compute and the DMA not
/// hidden behind it (a double-buffered Task overlaps them; the longer shows). The gap before it:
/// the event latency when it waited for a Task on another core, else the dispatch, and whatever is
/// left as other waits.
struct PathTime {
    uint64_t compute = 0, dma = 0, latency = 0, dispatch = 0, events = 0, waits = 0;
    /// The path's busy cycles, each counted once (a Task started beside the one before it
    /// overlaps it): compute, DMA and DRAM latency.
    uint64_t busy() const { return compute + dma + latency; }
};
PathTime pathTime(const backend::Program& program, const SimResult& result, const std::vector<CriticalStep>& path);

/// "dependency", "core busy" or "first".
std::string causeName(CriticalStep::Cause cause);

} // namespace sextant::sim
