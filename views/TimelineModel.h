#pragma once

#include "TimelineCoords.h"
#include "core/backend/Program.h"
#include "profiler/ProfileReader.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sextant::views {

/// One Task as the timeline shows it (read from the profile database).
struct TimelineTask {
    int task = 0;                   ///< Task id in the Program
    int core = 0;
    backend::UnitKind unit = backend::UnitKind::Vector;
    uint64_t ready = 0;             ///< cycle at which its dependencies were satisfied
    uint64_t start = 0;             ///< cycles
    uint64_t end = 0;               ///< cycles, exclusive
    std::string name;
    std::string kernel;
    std::vector<std::string> nodes; ///< IR node names it executes
    /// The simulator recorded its phases (profiler::TaskRow): the DMA loads over [start, loadEnd),
    /// the unit computes over [computeStart, computeEnd), the DMA stores over [storeStart, end);
    /// a `streamed` (double-buffered) Task moves its tiles in and out over [start, loadEnd) while
    /// it computes. Without phases the Task is drawn as computing throughout, with no DMA spans.
    bool phases = false;
    uint64_t loadEnd = 0, computeStart = 0, computeEnd = 0, storeStart = 0;
    bool streamed = false;
    uint64_t loadBytes = 0, storeBytes = 0;
};

enum class DmaPhaseKind { Load, Store, Stream };

/// One DMA phase of a Task, drawn on its core's DMA lane under the compute lanes.
struct TimelineDmaSpan {
    int task = 0; ///< index into TimelineModel::tasks()
    DmaPhaseKind kind = DmaPhaseKind::Load;
    uint64_t start = 0, end = 0; ///< cycles, end exclusive
    uint64_t bytes = 0;          ///< moved in the phase (a stream: in and out)
};

/// "load 12.3 KiB", "store 512 B", "stream 1.25 MiB": what a DMA span says.
std::string dmaSpanLabel(const TimelineDmaSpan& span);

/// A horizontal lane: one unit of one core. Its tasks are indices into TimelineModel::tasks(),
/// sorted by start time. A core's DMA lane (unit Dma, last of the core's lanes) holds its DMA-only
/// Tasks and, in `spans`, the DMA phases of its other Tasks. A Task may start beside the one
/// before it on its core (sim::timeBeside): then its bar begins under that one's, and its loads
/// under that one's stores, drawn later and so on top.
struct TimelineLane {
    int core = 0;
    backend::UnitKind unit = backend::UnitKind::Vector;
    std::string label; ///< "core 0 · cube", or "core 3 · idle" for a core without Tasks
    std::vector<int> items;
    std::vector<int> spans; ///< indices into TimelineModel::dmaSpans(), sorted by start time
};

/// One rectangle to paint. `count` > 1 means several Tasks or DMA spans narrower than the merge
/// threshold were folded into this one item (Tracy's level of detail); then `task` and `span`
/// are -1.
struct TimelineDrawItem {
    int lane = 0;
    double x0 = 0.0;
    double x1 = 0.0;
    int count = 1;
    int task = -1; ///< index into TimelineModel::tasks() when count == 1 (a span's: its Task)
    int span = -1; ///< index into TimelineModel::dmaSpans() when the item is one DMA span
};

/// The level of detail's index over one lane: level 0 holds each entry's fold key, in cycles --
/// how far it stands from being folded into the entries before it: its gap after the running
/// maximum of their ends (and, for the draw list, its own width, since a wide entry is drawn as
/// itself) -- and each next level the maximum of 16 keys of the level below. A fold then finds
/// the first entry it stops at, the first whose key reaches the zoom's merge distance, in
/// O(log entries) reads however many entries it takes in (Tracy's precomputed zone folding), so
/// a frame costs what the items it draws do.
struct FoldPyramid {
    std::vector<std::vector<uint64_t>> levels;
    static FoldPyramid build(std::vector<uint64_t> keys);
    /// The first index in [from, to) whose key is at least `threshold`, or `to`.
    size_t firstAtLeast(size_t from, size_t to, uint64_t threshold) const;
};

/// A set of Tasks the draw list treats apart (the pinned selection, the critical path), as
/// positions within each lane, built once per change of the set by TimelineModel::marks so a
/// draw list finds the marked entries of its view by binary search instead of testing every
/// Task.
struct TimelineMarks {
    /// Per lane, the sorted positions (in the lane's entries) of the marked entries.
    std::vector<std::vector<uint32_t>> positions;
    /// Per lane, the running maximum of the marked entries' ends, for binary search.
    std::vector<std::vector<uint64_t>> endPrefixMax;
    /// Per lane, the marked entries' gaps (FoldPyramid), for the overlay's folds.
    std::vector<FoldPyramid> gaps;
    bool empty() const { return positions.empty(); }
};

/// The profile database's Task rows as the timeline shows them.
std::vector<TimelineTask> timelineTasks(std::vector<profiler::TaskRow> rows);
/// One of them.
TimelineTask timelineTask(profiler::TaskRow&& row);

/// The timeline's data, grouped into lanes, and the preprocessing step that turns the visible part
/// into a compact draw list. No Qt: the widget only paints what buildDrawList returns.
class TimelineModel {
public:
    /// Replaces the data. Lanes are created for each (core, unit) pair that has Tasks, ordered by
    /// core then unit, and a DMA lane for each core that moved data; within a lane Tasks are
    /// ordered by (start, task id). Cores below `numCores` that ran nothing still get one empty
    /// lane, so idle cores are visible as such.
    void setTasks(std::vector<TimelineTask> tasks, int numCores = 0);

    const std::vector<TimelineTask>& tasks() const { return m_tasks; }
    const std::vector<TimelineLane>& lanes() const { return m_lanes; }
    /// The DMA phases of the Tasks with phases that are not DMA-only Tasks themselves: a
    /// double-buffered Task's stream, a single-buffered one's load and store (phases of zero
    /// cycles left out), in Task index order.
    const std::vector<TimelineDmaSpan>& dmaSpans() const { return m_spans; }
    /// Lane index of the DMA span at `spanIndex`.
    int laneOfSpan(int spanIndex) const;
    /// Latest end time over all Tasks (0 when empty).
    uint64_t totalCycles() const { return m_totalCycles; }
    /// Lane index of the Task at `taskIndex`.
    int laneOf(int taskIndex) const;
    /// Indices of the Tasks that execute IR node `node`, in Task id order.
    std::vector<int> tasksOfNode(const std::string& node) const;
    /// Index of the Task with id `taskId`, or -1.
    int indexOfTask(int taskId) const;
    /// Indices of the Tasks whose name, kernel or one of whose IR nodes contains `query`
    /// (ignoring ASCII case), in the order they start (then by Task id): what the Timeline tab's
    /// find box steps through. Empty for an empty query. `cancelled`, when given, is asked every
    /// few thousand Tasks; once it says yes the search stops and returns what it found so far.
    std::vector<int> findTasks(const std::string& query, const std::function<bool()>& cancelled = {}) const;

    /// Builds the draw list for a view `widthPx` wide under `coords`: Tasks and DMA spans entirely
    /// outside the view are dropped, and consecutive ones of a lane narrower than `mergePx` whose
    /// gaps are also under `mergePx` are folded into one item carrying their count. A Task with a
    /// non-zero entry in `pinned` (indexed like tasks(); empty: none), and its DMA spans, are never
    /// folded: the selected Tasks stay visible, and clickable, as themselves at any zoom (as
    /// Perfetto draws the selection).
    ///
    /// It costs O(items drawn x log Tasks), not O(Tasks): in a fold, all the entries that end
    /// before its right edge plus `mergePx` are found by one binary search over the lane's
    /// running maximum of ends and folded at once (Tracy's zone folding), so a million Tasks
    /// zoomed out cost what the pixels they fold into do. In a lane whose entries overlap (no
    /// simulated run has one) such a fold may also take in an entry wider than `mergePx`.
    std::vector<TimelineDrawItem> buildDrawList(const TimelineCoords& coords, double widthPx,
                                                double mergePx = 3.0,
                                                const std::vector<uint8_t>& pinned = {}) const;
    /// The same with the pinned Tasks given as marks(pinned, true), built once per selection.
    std::vector<TimelineDrawItem> buildDrawList(const TimelineCoords& coords, double widthPx,
                                                double mergePx, const TimelineMarks& pinned) const;
    /// The draw list by walking every entry in view, one at a time: the algorithm before the
    /// level of detail, kept as the reference the fast path is tested and benchmarked against.
    std::vector<TimelineDrawItem> buildDrawListByScan(const TimelineCoords& coords, double widthPx,
                                                      double mergePx = 3.0,
                                                      const std::vector<uint8_t>& pinned = {}) const;
    /// buildSpanList by walking every entry in view: the reference, as buildDrawListByScan.
    std::vector<TimelineDrawItem> buildSpanListByScan(const TimelineCoords& coords, double widthPx,
                                                      const std::vector<uint8_t>& marked,
                                                      double gapPx = 1.0) const;
    /// The Tasks with a non-zero entry in `flags` (indexed like tasks()) as marks; with
    /// `withSpans`, their DMA spans too (a pinned Task's transfers are pinned with it).
    TimelineMarks marks(const std::vector<uint8_t>& flags, bool withSpans) const;
    /// The same for the Tasks at `taskIndices` (any order; out-of-range ones ignored), in time
    /// that grows with their count, not with the run's.
    TimelineMarks marksOf(const std::vector<int>& taskIndices, bool withSpans) const;
    /// The spans an overlay marks (the critical path): per lane, the visible Tasks (not DMA
    /// spans) with a
    /// non-zero entry in `marked` (indexed like tasks()), merged while the gap between them is
    /// under `gapPx` whatever their width, so a marked Task inside a folded item is still marked,
    /// over its own extent only, and a long chain of marked Tasks costs a few items to paint.
    std::vector<TimelineDrawItem> buildSpanList(const TimelineCoords& coords, double widthPx,
                                                const std::vector<uint8_t>& marked,
                                                double gapPx = 1.0) const;
    /// The same with the marked Tasks given as marks(marked, false): O(items x log Tasks).
    std::vector<TimelineDrawItem> buildSpanList(const TimelineCoords& coords, double widthPx,
                                                const TimelineMarks& marked,
                                                double gapPx = 1.0) const;

private:
    /// buildDrawList and buildSpanList: `only` (if non-empty) selects the Tasks to list; with
    /// `foldWide`, Tasks merge by their gaps alone, otherwise only those under `mergePx` do.
    std::vector<TimelineDrawItem> collect(const TimelineCoords& coords, double widthPx,
                                          double mergePx, bool foldWide,
                                          const std::vector<uint8_t>& pinned,
                                          const std::vector<uint8_t>& only) const;

    /// What a lane draws, Tasks and DMA spans together, by (start, Task id, span).
    struct Entry {
        uint64_t start = 0, end = 0;
        int task = 0;  ///< index into m_tasks
        int span = -1; ///< index into m_spans, or -1 for the Task itself
    };
    struct LaneEntries {
        std::vector<Entry> entries;
        std::vector<uint64_t>
            endPrefixMax; ///< max end over entries[0..i]: monotonic, for binary search
        FoldPyramid folds; ///< each entry's gap or width, whichever is larger
    };
    /// [first, end) of the entries `subset` selects (all when null) that may show in
    /// [tLeft, tRight].
    static std::pair<size_t, size_t> visibleRange(const std::vector<Entry>& entries,
                                                  const std::vector<uint32_t>* subset,
                                                  const std::vector<uint64_t>& prefixEnd,
                                                  double tLeft, double tRight);
    /// One lane's fold: the entries `subset` selects (all when null) merged by `mergePx`.
    void foldLane(size_t laneIndex, const TimelineCoords& coords, double widthPx, double mergePx,
                  bool foldWide, const std::vector<uint32_t>* subset,
                  const std::vector<uint64_t>& prefixEnd, const FoldPyramid& keys,
                  const std::vector<uint32_t>* pins, std::vector<TimelineDrawItem>& out) const;

    std::vector<TimelineTask> m_tasks;
    std::vector<TimelineDmaSpan> m_spans;
    std::vector<TimelineLane> m_lanes;
    std::vector<LaneEntries> m_entries; ///< one per lane
    std::vector<int> m_laneOfTask;
    std::vector<int> m_laneOfSpan;
    std::vector<uint32_t> m_entryOfTask;  ///< position of each Task's entry in its lane
    std::vector<uint32_t> m_entryOfSpan;  ///< position of each DMA span's entry in its lane
    std::vector<uint32_t> m_firstSpanOfTask; ///< spans of Task i: [first[i], first[i + 1])
    uint64_t m_totalCycles = 0;
};

} // namespace sextant::views
