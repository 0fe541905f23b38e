#pragma once

// Reading a run of a profile database into the timeline, off the GUI thread: row by row as
// SQLite steps, with progress, cancellable, and handing out what is read so far (the run's
// beginning, Tasks come by start time) at a few sizes before the whole, so a million-Task run
// shows its first part at once. No Qt: TimelinePage runs it on a pool thread.

#include "TimelineModel.h"
#include "core/ir/Error.h"
#include "profiler/ProfileReader.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace sextant::views {

/// What the Timeline tab says about a run it read from a database.
struct TimelineRunInfo {
    std::string db;
    profiler::RunRow run;
    double clockGhz = 1.0;
    int numCores = 0;
    uint64_t totalCycles = 0;
    size_t tasks = 0; ///< the run's Tasks (all of them, also while only some are read)
    /// The run's critical path from its stored dependencies (Task ids, first Task first), once
    /// the whole run is read; empty for a run stored without dependencies.
    std::vector<int> criticalTasks;
};

/// The chain of `tasks` that set the run's end, from their times and the dependencies `deps`
/// (src, dst Task ids): from the Task that ended last back, each step to whichever ended last of
/// its dependencies and the Task before it on its core (by id, the order a core runs them).
/// First Task first. The event latency and dispatch are not stored, so ties between a
/// dependency and the core go by their ends alone (sim::criticalPath weighs them).
std::vector<int> storedCriticalPath(const std::vector<TimelineTask>& tasks,
                                    const std::vector<std::pair<int, int>>& deps);

struct TimelineLoadHooks {
    /// Asked every few thousand rows; true stops the load with an error saying so.
    std::function<bool()> cancelled;
    /// Rows read so far of `total`, every few thousand rows.
    std::function<void(size_t done, size_t total)> progress;
    /// The Tasks read so far as a model, at 20,000 Tasks and each four times more, before the
    /// whole (which is only returned).
    std::function<void(std::shared_ptr<const TimelineModel> model, const TimelineRunInfo& info)>
        partial;
};

/// Reads run `run` (-1: the newest) of the profile database at `db` as a timeline. Errors name
/// the file: not a profile database, no such run, a Task on a core the run's target has not,
/// or "cancelled".
Expected<std::shared_ptr<const TimelineModel>> loadTimelineRun(const std::string& db, int64_t run,
                                                               const TimelineLoadHooks& hooks,
                                                               TimelineRunInfo& info);

} // namespace sextant::views
