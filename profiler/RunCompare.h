#pragma once

// Two simulated runs side by side, from any profile databases: what a rule switch, a level or a
// target change did to the latency, the memory and each Task. `sextant-cli compare-runs` prints
// it; the GUI's Runs tab shows it with both timelines.

#include "ProfileReader.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::profiler {

/// One run as read back from its database.
struct LoadedRun {
    std::string db;       ///< database path
    RunRow run;
    std::vector<TaskRow> tasks;
    std::vector<MetricRow> metrics;

    /// A metric by key, or `fallback` when the run has none of that name.
    double metric(const std::string& key, double fallback = 0.0) const;
    /// "db.sqlite run 3 (model, target)".
    std::string label() const;
};

/// Reads run `run` (-1: the newest) of the database at `db`. Errors name the file (not a profile
/// database, no such run).
Expected<LoadedRun> loadRun(const std::string& db, int64_t run = -1);

/// The group a Task belongs to: its name without a split part's "[i/K]" suffix.
std::string groupName(const std::string& taskName);

/// Splits "FILE.db" or "FILE.db:RUN" (a run id, digits only) into path and run (-1: the newest).
/// A path that itself ends in ":digits" can be given with an explicit run: "a:1.db:2".
std::pair<std::string, int64_t> parseRunSpec(const std::string& spec);

/// A group of either run (a Task, or the parts "NAME[i/K]" of one split across cores), matched
/// with its counterpart by name (the name of the group's first node, which passes keep:
/// switching a fusion off turns FusedConv 'c1' into Conv 'c1'). A rewrite that formed other
/// groups shows as groups present in one run only.
struct TaskDelta {
    std::string name;
    std::string kernelA, kernelB;       ///< "" where the run has no such group
    int taskA = -1, taskB = -1;         ///< the (first part's) Task id; -1 where the run has none
    int partsA = 0, partsB = 0;         ///< Tasks the group ran as (0 where absent)
    /// From the first part's start to the last part's end, in each run (0 where absent).
    uint64_t cyclesA = 0, cyclesB = 0;
    int64_t delta() const { return static_cast<int64_t>(cyclesB) - static_cast<int64_t>(cyclesA); }
};

/// A metric of either run beyond those the summary's own lines cover (an output's cosine, a
/// max error): its value in each run, NaN and infinities included as the values they are.
struct MetricDelta {
    std::string key;
    bool inA = false, inB = false;
    double a = 0.0, b = 0.0; ///< meaningful where inA / inB
    /// Whether the value differs: NaN against a number (or an infinity) is a change, NaN
    /// against NaN is not; a metric only one run has is a change.
    bool changed() const;
};

/// "nan", "inf", "-inf", or the number ("%g"): how every view writes a metric's value.
std::string metricText(double v);

struct RunComparison {
    LoadedRun a, b;
    /// The other metrics, run A's in its order, then those only B has.
    std::vector<MetricDelta> metrics;
    /// Run A's groups in its order (first start), matched or not, then the groups only B has.
    std::vector<TaskDelta> tasks;
    int onlyA = 0, onlyB = 0;
    /// Human-readable lines, A -> B: latency, Tasks, busy cycles per unit, DRAM peak and lower
    /// bound, cores used, unmatched Tasks, then one line per other metric ("cosine:y: 0.9999
    /// -> nan (changed)").
    std::vector<std::string> summary;
};

RunComparison compareRuns(LoadedRun a, LoadedRun b);

/// The comparison as text: the summary, then the `limit` groups whose time changed most (by
/// |delta|, ties by name; all of them when `limit` < 0), unmatched ones included.
std::string formatRunComparison(const RunComparison& c, int limit = 20);

} // namespace sextant::profiler
