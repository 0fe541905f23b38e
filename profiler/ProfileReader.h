#pragma once

#include "core/backend/Program.h"
#include "core/ir/Error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct sqlite3;

namespace sextant::profiler {

class Statement;

/// One run stored in a profile database.
struct RunRow {
    int64_t id = 0;
    std::string model;
    std::string target;
    std::string pipeline; ///< pass ids, comma-separated
    int64_t created = 0;  ///< unix seconds
};

/// A graph node of the compiled graph, with where it came from.
struct NodeRow {
    std::string name;
    std::string op;
    std::vector<std::string> origins; ///< original ONNX node names
    std::string createdBy;            ///< "import" or "<pass>/<rule>"
};

/// One simulated Task.
struct TaskRow {
    int id = 0;
    std::string name;
    std::string kernel;
    int core = 0;
    backend::UnitKind unit = backend::UnitKind::Vector;
    uint64_t start = 0, end = 0, ready = 0; ///< cycles
    uint64_t flops = 0;
    uint64_t dmaBytes = 0;
    std::vector<std::string> nodes; ///< IR node names it executed, in order
    /// Its phases (sim::TraceRecord): the DMA loads over [start, loadEnd), the unit computes over
    /// [computeStart, computeEnd), the DMA stores over [storeStart, end). A `streamed`
    /// (double-buffered) Task moves its tiles in and out over [start, loadEnd) while it computes.
    /// A run stored before phases were (schema version 1) reads back as no DMA phase and compute
    /// over the whole Task: loadEnd = computeStart = start, computeEnd = storeStart = end.
    uint64_t loadEnd = 0, computeStart = 0, computeEnd = 0, storeStart = 0;
    bool streamed = false;
    /// Of dmaBytes, those loaded (DRAM to SRAM) and those stored back (0 and 0 in version 1).
    uint64_t loadBytes = 0, storeBytes = 0;
};

/// A dependency between two Tasks; `event` is the event id for a cross-core one, -1 otherwise.
struct DepRow {
    int src = 0;
    int dst = 0;
    int event = -1;
};

/// A planned buffer and its lifetime in Tasks.
struct BufferRow {
    int id = 0;
    std::string value;
    backend::MemLevel level = backend::MemLevel::Dram;
    int core = -1;
    uint64_t offset = 0, size = 0;
    int firstTask = -1, lastTask = -1;
};

/// A planned region of one core's SRAM (backend::SramBuffer) and its lifetime in Tasks.
struct SramBufferRow {
    int id = 0;
    int core = 0;
    uint64_t offset = 0, size = 0;
    backend::SramRole role = backend::SramRole::InputTile;
    int pair = -1;   ///< 0 or 1 in a ping-pong pair, -1 for a single slot
    int task = -1;   ///< the Task whose slot it is (for a resident tensor, its writer)
    int buffer = -1; ///< the Program buffer it holds a tile of, or holds whole
    int firstTask = -1, lastTask = -1; ///< Task ids, inclusive
};

/// One step of a core's SRAM occupancy: from `cycle` until the core's next step, its SRAM
/// buffers that are live hold `bytes`. A buffer is live from the simulated start of its first
/// Task to the end of its last.
struct SramStepRow {
    int core = 0;
    uint64_t cycle = 0;
    uint64_t bytes = 0;
};

struct MetricRow {
    std::string key;
    double value = 0;
};

/// Read access to a profile database written by writeProfile. Every query takes a run id; -1
/// means the latest run. Rows come back in a fixed order (Tasks by start then id, buffers and deps
/// by id), so views and exports are deterministic.
///
/// A database may come from anywhere (the GUI opens any file), so every row is checked as it is
/// read: integer columns must hold integers (text in one is an error, never a 0), text columns
/// must name a row of `strings`, Task ids must be unique within their run and as many as the
/// run's num_tasks metric says, and dependencies and buffer lifetimes must name Tasks the run
/// has; a whole run's Tasks must match the checksum written with them. A violation is an error
/// naming the file, the table and the row.
class ProfileReader {
public:
    /// Opens read-only and checks it is a sound SQLite file (PRAGMA quick_check) and a profile
    /// database of kProfileSchemaVersion (or of an older version this build still reads, see
    /// ProfileDb.h) with every table, column and declared type of its version; anything else is
    /// a clear error naming the file.
    static Expected<ProfileReader> open(const std::string& path);

    ProfileReader(ProfileReader&&) noexcept;
    ProfileReader& operator=(ProfileReader&&) noexcept;
    ~ProfileReader();

    const std::string& path() const { return m_path; }
    /// The layout version of the file (kProfileSchemaVersion, or 1 for an older file).
    int schemaVersion() const { return m_version; }
    /// Every run, by id.
    Expected<std::vector<RunRow>> runs() const;
    /// The id of the newest run, or an error when the database holds none.
    Expected<int64_t> latestRun() const;
    Expected<std::vector<NodeRow>> nodes(int64_t run = -1) const;
    Expected<std::vector<TaskRow>> tasks(int64_t run = -1) const;
    /// How many Tasks run `run` has (what a progress bar counts to).
    Expected<size_t> taskCount(int64_t run = -1) const;
    /// Tasks on `core` that overlap [t0, t1): the timeline's query when zoomed in (indexed).
    Expected<std::vector<TaskRow>> tasksInRange(int64_t run, int core, uint64_t t0,
                                                uint64_t t1) const;
    /// Calls `visit` on each Task of `run` in tasks()'s order as SQLite steps through the rows,
    /// holding one at a time (an export of a million Tasks); stops at the first error, its own
    /// or one `visit` returns.
    Status forEachTask(int64_t run, const std::function<Status(TaskRow&)>& visit) const;
    Expected<std::vector<DepRow>> deps(int64_t run = -1) const;
    /// Calls `visit` on each dependency of `run` in deps()'s order, one row at a time.
    Status forEachDep(int64_t run, const std::function<Status(const DepRow&)>& visit) const;
    Expected<std::vector<BufferRow>> buffers(int64_t run = -1) const;
    Expected<std::vector<MetricRow>> metrics(int64_t run = -1) const;
    /// The run's SRAM plan, by id; empty for a run stored before SRAM plans were (version 1).
    Expected<std::vector<SramBufferRow>> sramBuffers(int64_t run = -1) const;
    /// The run's SRAM occupancy steps, by core then cycle; empty where sramBuffers is.
    Expected<std::vector<SramStepRow>> sramOccupancy(int64_t run = -1) const;

private:
    ProfileReader() = default;
    Expected<int64_t> resolve(int64_t run) const;
    Status queryTasks(int64_t run, const std::string& where, int core, uint64_t t0, uint64_t t1,
                      const std::function<Status(TaskRow&)>& visit) const;
    Expected<TaskRow> decodeTask(const Statement& q, int64_t run) const;
    Status decodePhases(const Statement& q, TaskRow& t, const std::string& where) const;
    /// The run's Task ids, sorted, after checking they are unique and as many as its num_tasks
    /// metric says (read once per run, or taken from a whole-run Task query).
    Expected<const std::vector<int>*> taskIds(int64_t run) const;
    Status checkTaskIds(int64_t run, std::vector<std::pair<int, int64_t>> idsAndRows,
                        const uint64_t* checksum = nullptr) const;
    /// Compares the checksum of a whole run's Task rows with the one written with them (runs
    /// written before checksums were have none).
    Status checkChecksum(int64_t run, uint64_t rows, uint64_t checksum) const;
    /// An error for row `rowid` of `table`: "profile database 'P': table T, row R: WHAT".
    Error rowError(const char* table, int64_t rowid, const std::string& what) const;

    std::string m_path;
    sqlite3* m_db = nullptr;
    int m_version = 0;
    bool m_hasChecksums = false;
    mutable std::map<int64_t, std::vector<int>> m_taskIds;
};

} // namespace sextant::profiler
