#include "ProfileReader.h"

#include "ProfileCheck.h"
#include "ProfileDb.h"
#include "RunCompare.h"
#include "Sqlite.h"

#include "core/ir/FileRead.h"
#include "core/ir/FileWrite.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <optional>
#include <utility>

#include <unistd.h>

namespace sextant::profiler {

namespace {

std::vector<std::string> parseNameList(const std::string& text) {
    std::vector<std::string> out;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_array())
        return out;
    for (const auto& e : j)
        if (e.is_string())
            out.push_back(e.get<std::string>());
    return out;
}

std::optional<backend::SramRole> parseRole(const std::string& s) {
    for (backend::SramRole r : {backend::SramRole::InputTile, backend::SramRole::WeightTile,
                                backend::SramRole::OutputTile, backend::SramRole::Accumulator,
                                backend::SramRole::Resident})
        if (backend::sramRoleName(r) == s)
            return r;
    return std::nullopt;
}

std::optional<backend::UnitKind> parseUnit(const std::string& s) {
    for (backend::UnitKind u :
         {backend::UnitKind::Cube, backend::UnitKind::Vector, backend::UnitKind::Dma, backend::UnitKind::Host})
        if (backend::unitName(u) == s)
            return u;
    return std::nullopt;
}

/// "column 'start' holds the text 'x', not an integer" for the first of `cols` (index, name) of
/// the current row that is not stored as an integer; empty when all are.
std::string nonInteger(const Statement& q, std::initializer_list<std::pair<int, const char*>> cols) {
    for (const auto& [i, name] : cols)
        if (!q.isInt(i))
            return std::string("column '") + name + "' holds " + q.describe(i) +
                   ", not an integer";
    return {};
}

/// A text column is a reference into `strings`: (index of the reference, index of the joined
/// text, column name). The first reference whose text the LEFT JOIN did not find, described.
std::string danglingString(const Statement& q,
                           std::initializer_list<std::tuple<int, int, const char*>> cols) {
    for (const auto& [ref, text, name] : cols)
        if (q.isNull(text))
            return std::string("column '") + name + "' holds " + q.describe(ref) +
                   ", which is not the id of a row of table strings";
    return {};
}

bool holds(const std::vector<int>& sortedIds, int64_t id) {
    return id >= INT32_MIN && id <= INT32_MAX &&
           std::binary_search(sortedIds.begin(), sortedIds.end(), static_cast<int>(id));
}

} // namespace

ProfileReader::ProfileReader(ProfileReader&& o) noexcept
    : m_path(std::move(o.m_path)), m_db(std::exchange(o.m_db, nullptr)), m_version(o.m_version),
      m_hasChecksums(o.m_hasChecksums), m_taskIds(std::move(o.m_taskIds)) {}

ProfileReader& ProfileReader::operator=(ProfileReader&& o) noexcept {
    if (this != &o) {
        sqlite3_close(m_db);
        m_path = std::move(o.m_path);
        m_db = std::exchange(o.m_db, nullptr);
        m_version = o.m_version;
        m_hasChecksums = o.m_hasChecksums;
        m_taskIds = std::move(o.m_taskIds);
    }
    return *this;
}

ProfileReader::~ProfileReader() {
    sqlite3_close(m_db);
}

namespace {

/// A file SQLite can only read as immutable: in a folder no one can write to (a read-only
/// mount, another user's folder), with no -wal or -journal file beside it. A WAL-mode database
/// (any file written before the writer went back to rollback mode after its run, or one another
/// process had open then) needs a -shm file beside it to be read, which cannot be made there;
/// and with no -wal file and no way to make one, no writer can be changing it either.
bool onlyReadableAsImmutable(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(path + "-wal", ec) || fs::exists(path + "-journal", ec))
        return false;
    return ::access(folderOf(path).c_str(), W_OK) != 0;
}

/// `path` as an SQLite URI that opens it immutable (the characters a URI gives meaning to escaped).
std::string immutableUri(const std::string& path) {
    std::string uri = "file:";
    for (char c : path) {
        if (c == '%' || c == '?' || c == '#') {
            static const char* hex = "0123456789ABCDEF";
            uri += '%';
            uri += hex[static_cast<unsigned char>(c) >> 4];
            uri += hex[static_cast<unsigned char>(c) & 15];
        } else {
            uri += c;
        }
    }
    return uri + "?immutable=1";
}

} // namespace

Expected<ProfileReader> ProfileReader::open(const std::string& path) {
    if (const std::string kind = specialFileKind(path); !kind.empty())
        return makeError(ErrorKind::Io, "cannot open profile '" + path + "': it is " + kind + ", not a file", path);
    ProfileReader r;
    r.m_path = path;
    int rc = onlyReadableAsImmutable(path)
                 ? sqlite3_open_v2(immutableUri(path).c_str(), &r.m_db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                                   nullptr)
                 : sqlite3_open_v2(path.c_str(), &r.m_db, SQLITE_OPEN_READONLY, nullptr);
    if (rc != SQLITE_OK)
        return makeError(ErrorKind::Io, "cannot open profile '" + path + "': " + sqliteReason(r.m_db));
    sqlite3_busy_timeout(r.m_db, 5000);
    Expected<int> version = profileVersion(r.m_db, path);
    if (!version.ok()) {
        // The tables could not be read: when the file is a damaged database (not another kind
        // of file), that is the message to give.
        if (sqlite3_errcode(r.m_db) == SQLITE_NOTADB)
            return version.error();
        if (Status sound = quickCheck(r.m_db, path); !sound.ok())
            return sound.error();
        return version.error();
    }
    if (*version == 0)
        return makeError(ErrorKind::Parse, "'" + path + "' is not a profile database (it has no tables)",
                         path);
    SX_TRY(quickCheck(r.m_db, path));
    r.m_version = *version;
    SX_ASSIGN(Statement q, Statement::prepare(r.m_db, "SELECT count(*) FROM sqlite_master WHERE type = "
                                                      "'table' AND name = 'checksums'"));
    SX_ASSIGN(bool row, q.step());
    r.m_hasChecksums = row && q.int64(0) > 0;
    return r;
}

Error ProfileReader::rowError(const char* table, int64_t rowid, const std::string& what) const {
    return makeError(ErrorKind::Parse,
                     "profile database '" + m_path + "': table " + table + ", row " +
                         std::to_string(rowid) + ": " + what,
                     m_path);
}

Expected<std::vector<RunRow>> ProfileReader::runs() const {
    SX_ASSIGN(Statement q,
              Statement::prepare(
                  m_db, "SELECT r.id, r.created, r.model, m.text, r.target, t.text, r.pipeline, "
                        "p.text FROM runs r LEFT JOIN strings m ON m.id = r.model LEFT JOIN "
                        "strings t ON t.id = r.target LEFT JOIN strings p ON p.id = r.pipeline "
                        "ORDER BY r.id"));
    std::vector<RunRow> out;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        std::string bad = nonInteger(q, {{1, "created"}});
        if (bad.empty())
            bad = danglingString(q, {{2, 3, "model"}, {4, 5, "target"}, {6, 7, "pipeline"}});
        if (!bad.empty())
            return rowError("runs", q.int64(0), "run " + std::to_string(q.int64(0)) + ": " + bad);
        out.push_back(RunRow{q.int64(0), q.text(3), q.text(5), q.text(7), q.int64(1)});
    }
    return out;
}

Expected<int64_t> ProfileReader::latestRun() const {
    SX_ASSIGN(Statement q, Statement::prepare(m_db, "SELECT max(id) FROM runs"));
    SX_ASSIGN(bool row, q.step());
    if (!row || q.isNull(0)) // max() of no rows is NULL
        return makeError(ErrorKind::Invalid, "profile '" + m_path + "' holds no runs");
    return q.int64(0);
}

Expected<int64_t> ProfileReader::resolve(int64_t run) const {
    if (run < 0)
        return latestRun();
    SX_ASSIGN(Statement q, Statement::prepare(m_db, "SELECT count(*) FROM runs WHERE id = ?1"));
    q.bind(1, run);
    SX_ASSIGN(bool row, q.step());
    if (!row || q.int64(0) == 0)
        return makeError(ErrorKind::Invalid,
                         "profile '" + m_path + "' has no run " + std::to_string(run));
    return run;
}

Expected<std::vector<NodeRow>> ProfileReader::nodes(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    SX_ASSIGN(Statement q,
              Statement::prepare(m_db,
                                 "SELECT x.rowid, x.name, n.text, x.op, o.text, x.origins, g.text, "
                                 "x.created_by, c.text FROM nodes x "
                                 "LEFT JOIN strings n ON n.id = x.name LEFT JOIN strings o ON o.id = x.op "
                                 "LEFT JOIN strings g ON g.id = x.origins LEFT JOIN strings c ON c.id = "
                                 "x.created_by WHERE x.run = ?1 ORDER BY x.rowid"));
    q.bind(1, id);
    std::vector<NodeRow> out;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        const std::string bad = danglingString(
            q, {{1, 2, "name"}, {3, 4, "op"}, {5, 6, "origins"}, {7, 8, "created_by"}});
        if (!bad.empty())
            return rowError("nodes", q.int64(0), "a node of run " + std::to_string(id) + ": " + bad);
        out.push_back(NodeRow{q.text(2), q.text(4), parseNameList(q.text(6)), q.text(8)});
    }
    return out;
}

// The columns queryTasks selects, in order (decodeTask reads them by these indexes).
namespace {
enum TaskCol {
    kRowid, kId, kCore, kStart, kEnd, kReady, kFlops, kDmaBytes, kLoadEnd, kComputeStart,
    kComputeEnd, kStoreStart, kStreamed, kLoadBytes, kStoreBytes, kNameRef, kName, kKernelRef,
    kKernel, kUnitRef, kUnit, kNodesRef, kNodes
};
} // namespace

Status ProfileReader::queryTasks(int64_t run, const std::string& where, int core, uint64_t t0,
                                 uint64_t t1, const std::function<Status(TaskRow&)>& visit) const {
    // Version 1 has no phase columns: NULLs in their place read back as a run stored before
    // phases were (see TaskRow).
    const std::string phases = m_version == 1
                                   ? "NULL, NULL, NULL, NULL, NULL, NULL, NULL"
                                   : "x.load_end, x.compute_start, x.compute_end, x.store_start, "
                                     "x.streamed, x.load_bytes, x.store_bytes";
    SX_ASSIGN(Statement q,
              Statement::prepare(
                  m_db, "SELECT x.rowid, x.id, x.core, x.start, x.\"end\", x.ready, x.flops, "
                        "x.dma_bytes, " +
                            phases +
                            ", x.name, n.text, x.kernel, k.text, x.unit, u.text, x.nodes, l.text "
                            "FROM tasks x LEFT JOIN strings n ON n.id = x.name "
                            "LEFT JOIN strings k ON k.id = x.kernel LEFT JOIN strings u ON u.id = "
                            "x.unit LEFT JOIN strings l ON l.id = x.nodes WHERE x.run = ?1" +
                            where + " ORDER BY x.start, x.id"));
    q.bind(1, run);
    if (!where.empty()) {
        q.bind(2, static_cast<int64_t>(core));
        q.bind(3, static_cast<int64_t>(t0));
        q.bind(4, static_cast<int64_t>(t1));
    }
    // A whole run's Tasks give its id list for free (checked once the last row is read).
    const bool collect = where.empty() && m_taskIds.count(run) == 0;
    std::vector<std::pair<int, int64_t>> ids;
    uint64_t checksum = 0;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        SX_ASSIGN(TaskRow t, decodeTask(q, run));
        if (collect) {
            ids.emplace_back(t.id, q.int64(kRowid));
            checksum += taskRowChecksum(t, q.text(kNodes));
        }
        SX_TRY(visit(t));
    }
    if (collect)
        SX_TRY(checkTaskIds(run, std::move(ids), &checksum));
    return {};
}

Expected<TaskRow> ProfileReader::decodeTask(const Statement& q, int64_t run) const {
    // Values a Program could not have are an error naming the Task, not a lane for core two
    // billion.
    const int64_t id = q.int64(kId), core = q.int64(kCore), start = q.int64(kStart),
                  end = q.int64(kEnd), ready = q.int64(kReady);
    const std::string where = "Task " + std::to_string(id) + " of run " + std::to_string(run);
    auto bad = [&](const std::string& what) {
        return rowError("tasks", q.int64(kRowid), where + " " + what);
    };
    std::string type = nonInteger(q, {{kId, "id"}, {kCore, "core"}, {kStart, "start"}, {kEnd, "end"},
                                      {kReady, "ready"}, {kFlops, "flops"}, {kDmaBytes, "dma_bytes"}});
    if (type.empty())
        type = danglingString(q, {{kNameRef, kName, "name"}, {kKernelRef, kKernel, "kernel"},
                                  {kUnitRef, kUnit, "unit"}, {kNodesRef, kNodes, "nodes"}});
    if (!type.empty())
        return rowError("tasks", q.int64(kRowid), where + ": " + type);
    if (id < 0 || id > INT32_MAX)
        return bad("has an id out of range");
    if (core < 0 || core > 65535)
        return bad("has core " + std::to_string(core) + " (a core is 0..65535)");
    const std::string unit = q.text(kUnit);
    const std::optional<backend::UnitKind> unitKind = parseUnit(unit);
    if (!unitKind)
        return bad("has unit '" + unit + "' (cube, vector, dma or host)");
    if (start < 0 || end < start || ready < 0)
        return bad("has times start " + std::to_string(start) + ", end " + std::to_string(end) +
                   ", ready " + std::to_string(ready) + " (0 <= start <= end, 0 <= ready)");
    if (q.int64(kFlops) < 0 || q.int64(kDmaBytes) < 0)
        return bad("has negative flops or DMA bytes");
    TaskRow t;
    t.id = static_cast<int>(id);
    t.name = q.text(kName);
    t.kernel = q.text(kKernel);
    t.core = static_cast<int>(core);
    t.unit = *unitKind;
    t.start = static_cast<uint64_t>(start);
    t.end = static_cast<uint64_t>(end);
    t.ready = static_cast<uint64_t>(ready);
    t.flops = static_cast<uint64_t>(q.int64(kFlops));
    t.dmaBytes = static_cast<uint64_t>(q.int64(kDmaBytes));
    t.nodes = parseNameList(q.text(kNodes));
    SX_TRY(decodePhases(q, t, where));
    return t;
}

Status ProfileReader::decodePhases(const Statement& q, TaskRow& t, const std::string& where) const {
    auto bad = [&](const std::string& what) {
        return rowError("tasks", q.int64(kRowid), where + " " + what);
    };
    const std::initializer_list<std::pair<int, const char*>> cols = {
        {kLoadEnd, "load_end"}, {kComputeStart, "compute_start"}, {kComputeEnd, "compute_end"},
        {kStoreStart, "store_start"}, {kStreamed, "streamed"}, {kLoadBytes, "load_bytes"},
        {kStoreBytes, "store_bytes"}};
    const size_t nulls = static_cast<size_t>(
        std::count_if(cols.begin(), cols.end(), [&](const auto& c) { return q.isNull(c.first); }));
    if (nulls == cols.size()) { // a run stored before phases were
        t.loadEnd = t.computeStart = t.start;
        t.computeEnd = t.storeStart = t.end;
        return {};
    }
    if (const std::string type = nonInteger(q, cols); !type.empty())
        return rowError("tasks", q.int64(kRowid),
                        where + ": " + type + (nulls ? " (a Task has all of its phases or none)" : ""));
    const int64_t start = static_cast<int64_t>(t.start), end = static_cast<int64_t>(t.end);
    const int64_t loadEnd = q.int64(kLoadEnd), computeStart = q.int64(kComputeStart),
                  computeEnd = q.int64(kComputeEnd), storeStart = q.int64(kStoreStart);
    auto inTask = [&](int64_t c) { return c >= start && c <= end; };
    if (!inTask(loadEnd) || !inTask(computeStart) || !inTask(computeEnd) || !inTask(storeStart) ||
        computeEnd < computeStart)
        return bad("has phases load_end " + std::to_string(loadEnd) + ", compute " +
                   std::to_string(computeStart) + ".." + std::to_string(computeEnd) +
                   ", store_start " + std::to_string(storeStart) + " outside its start " +
                   std::to_string(start) + " and end " + std::to_string(end));
    if (q.int64(kLoadBytes) < 0 || q.int64(kStoreBytes) < 0)
        return bad("has negative load or store bytes");
    t.loadEnd = static_cast<uint64_t>(loadEnd);
    t.computeStart = static_cast<uint64_t>(computeStart);
    t.computeEnd = static_cast<uint64_t>(computeEnd);
    t.storeStart = static_cast<uint64_t>(storeStart);
    t.streamed = q.int64(kStreamed) != 0;
    t.loadBytes = static_cast<uint64_t>(q.int64(kLoadBytes));
    t.storeBytes = static_cast<uint64_t>(q.int64(kStoreBytes));
    return {};
}

Status ProfileReader::checkTaskIds(int64_t run, std::vector<std::pair<int, int64_t>> ids,
                                   const uint64_t* checksum) const {
    std::sort(ids.begin(), ids.end());
    for (size_t i = 1; i < ids.size(); ++i)
        if (ids[i].first == ids[i - 1].first)
            return rowError("tasks", ids[i].second,
                            "run " + std::to_string(run) + " has a second Task with id " +
                                std::to_string(ids[i].first) + " (the first is row " +
                                std::to_string(ids[i - 1].second) + "); Task ids are unique in a run");
    // Rows lost to damage (a run id or an index entry changed) show as fewer Tasks than the run
    // recorded when it was written.
    SX_ASSIGN(Statement q, Statement::prepare(m_db, "SELECT m.value FROM metrics m JOIN strings k "
                                                    "ON k.id = m.key WHERE m.run = ?1 AND k.text = "
                                                    "'num_tasks'"));
    q.bind(1, run);
    SX_ASSIGN(bool row, q.step());
    if (row && q.real(0) != static_cast<double>(ids.size()))
        return makeError(ErrorKind::Parse,
                         "profile database '" + m_path + "': run " + std::to_string(run) +
                             " recorded " + metricText(q.real(0)) +
                             " Tasks (metric num_tasks) but table tasks holds " +
                             std::to_string(ids.size()) + " of them: rows are missing or were added",
                         m_path);
    if (checksum)
        SX_TRY(checkChecksum(run, ids.size(), *checksum));
    std::vector<int> sorted;
    sorted.reserve(ids.size());
    for (const auto& [id, rowid] : ids)
        sorted.push_back(id);
    m_taskIds[run] = std::move(sorted);
    return {};
}

Status ProfileReader::checkChecksum(int64_t run, uint64_t rows, uint64_t checksum) const {
    if (!m_hasChecksums)
        return {};
    SX_ASSIGN(Statement q, Statement::prepare(m_db, "SELECT c.rowid, c.rows, c.digest FROM checksums c JOIN "
                                                    "strings s ON s.id = c.tbl WHERE c.run = ?1 AND s.text = "
                                                    "'tasks'"));
    q.bind(1, run);
    SX_ASSIGN(bool row, q.step());
    if (!row) // a run written before checksums were
        return {};
    if (const std::string type = nonInteger(q, {{1, "rows"}, {2, "digest"}}); !type.empty())
        return rowError("checksums", q.int64(0), "the checksum of run " + std::to_string(run) + ": " + type);
    if (static_cast<uint64_t>(q.int64(1)) != rows || static_cast<uint64_t>(q.int64(2)) != checksum)
        return rowError("checksums", q.int64(0),
                        "run " + std::to_string(run) +
                            "'s Tasks do not match the checksum written with them: a value in table tasks "
                            "changed after the run was written");
    return {};
}

Expected<const std::vector<int>*> ProfileReader::taskIds(int64_t run) const {
    if (auto it = m_taskIds.find(run); it != m_taskIds.end())
        return &it->second;
    SX_ASSIGN(Statement q, Statement::prepare(m_db, "SELECT rowid, id FROM tasks WHERE run = ?1"));
    q.bind(1, run);
    std::vector<std::pair<int, int64_t>> ids;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        const int64_t id = q.int64(1);
        if (!q.isInt(1) || id < 0 || id > INT32_MAX)
            return rowError("tasks", q.int64(0),
                            "a Task of run " + std::to_string(run) + " has id " + q.describe(1) +
                                " (an id is an integer 0..2^31-1)");
        ids.emplace_back(static_cast<int>(id), q.int64(0));
    }
    SX_TRY(checkTaskIds(run, std::move(ids)));
    return &m_taskIds.at(run);
}

Status ProfileReader::forEachTask(int64_t run,
                                  const std::function<Status(TaskRow&)>& visit) const {
    SX_ASSIGN(int64_t id, resolve(run));
    return queryTasks(id, "", 0, 0, 0, visit);
}

Expected<std::vector<TaskRow>> ProfileReader::tasks(int64_t run) const {
    std::vector<TaskRow> out;
    SX_TRY(forEachTask(run, [&](TaskRow& t) {
        out.push_back(std::move(t));
        return Status{};
    }));
    return out;
}

Expected<size_t> ProfileReader::taskCount(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    SX_ASSIGN(Statement q, Statement::prepare(m_db, "SELECT count(*) FROM tasks WHERE run = ?1"));
    q.bind(1, id);
    SX_ASSIGN(bool row, q.step());
    return row ? static_cast<size_t>(q.int64(0)) : size_t{0};
}

Expected<std::vector<TaskRow>> ProfileReader::tasksInRange(int64_t run, int core, uint64_t t0,
                                                           uint64_t t1) const {
    SX_ASSIGN(int64_t id, resolve(run));
    // start < t1 uses the (run, core, start) index; end > t0 filters the few rows left.
    std::vector<TaskRow> out;
    SX_TRY(queryTasks(id, " AND x.core = ?2 AND x.start < ?4 AND x.\"end\" > ?3", core, t0, t1,
                      [&](TaskRow& t) {
                          out.push_back(std::move(t));
                          return Status{};
                      }));
    return out;
}

Expected<std::vector<DepRow>> ProfileReader::deps(int64_t run) const {
    std::vector<DepRow> out;
    SX_TRY(forEachDep(run, [&](const DepRow& d) {
        out.push_back(d);
        return Status{};
    }));
    return out;
}

Status ProfileReader::forEachDep(int64_t run,
                                 const std::function<Status(const DepRow&)>& visit) const {
    SX_ASSIGN(int64_t id, resolve(run));
    SX_ASSIGN(const std::vector<int>* tasks, taskIds(id));
    SX_ASSIGN(Statement q,
              Statement::prepare(m_db, "SELECT rowid, src, dst, event FROM deps WHERE run = ?1 "
                                       "ORDER BY dst, src"));
    q.bind(1, id);
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            return {};
        const std::string of = "a dependency of run " + std::to_string(id);
        if (const std::string type = nonInteger(q, {{1, "src"}, {2, "dst"}, {3, "event"}});
            !type.empty())
            return rowError("deps", q.int64(0), of + ": " + type);
        for (const auto& [col, name] : {std::pair{1, "src"}, std::pair{2, "dst"}})
            if (!holds(*tasks, q.int64(col)))
                return rowError("deps", q.int64(0),
                                of + " names Task " + std::to_string(q.int64(col)) + " (" + name +
                                    "), which run " + std::to_string(id) + " does not have");
        if (q.int64(3) < -1 || q.int64(3) > INT32_MAX)
            return rowError("deps", q.int64(0),
                            of + " has event " + std::to_string(q.int64(3)) +
                                " (an event id, or -1 for a same-core dependency)");
        SX_TRY(visit(DepRow{static_cast<int>(q.int64(1)), static_cast<int>(q.int64(2)),
                            static_cast<int>(q.int64(3))}));
    }
}

namespace {

/// The first of `cols` that is neither -1 (no Task) nor a Task of the run, described.
std::string unknownTask(const Statement& q, const std::vector<int>& tasks, int64_t run,
                        std::initializer_list<std::pair<int, const char*>> cols) {
    for (const auto& [i, name] : cols)
        if (q.int64(i) != -1 && !holds(tasks, q.int64(i)))
            return std::string("column '") + name + "' names Task " + std::to_string(q.int64(i)) +
                   ", which run " + std::to_string(run) + " does not have";
    return {};
}

} // namespace

Expected<std::vector<BufferRow>> ProfileReader::buffers(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    SX_ASSIGN(const std::vector<int>* tasks, taskIds(id));
    SX_ASSIGN(Statement q,
              Statement::prepare(m_db, "SELECT b.rowid, b.id, b.core, b.\"offset\", b.size, "
                                       "b.first_task, b.last_task, b.value, v.text, b.level, l.text "
                                       "FROM buffers b LEFT JOIN strings v ON v.id = b.value LEFT "
                                       "JOIN strings l ON l.id = b.level WHERE b.run = ?1 ORDER BY b.id"));
    q.bind(1, id);
    std::vector<BufferRow> out;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        std::string bad = nonInteger(q, {{1, "id"}, {2, "core"}, {3, "offset"}, {4, "size"},
                                         {5, "first_task"}, {6, "last_task"}});
        if (bad.empty())
            bad = danglingString(q, {{7, 8, "value"}, {9, 10, "level"}});
        if (bad.empty() && q.text(10) != "dram" && q.text(10) != "sram")
            bad = "level '" + q.text(10) + "' is not dram or sram";
        if (bad.empty() && (q.int64(1) < 0 || q.int64(1) > INT32_MAX || q.int64(3) < 0 || q.int64(4) < 0 ||
                            q.int64(2) < -1 || q.int64(2) > 65535))
            bad = "id " + std::to_string(q.int64(1)) + ", core " + std::to_string(q.int64(2)) +
                  ", offset " + std::to_string(q.int64(3)) + ", size " + std::to_string(q.int64(4)) +
                  " (id, offset and size >= 0, core -1..65535)";
        if (bad.empty())
            bad = unknownTask(q, *tasks, id, {{5, "first_task"}, {6, "last_task"}});
        if (bad.empty() && !out.empty() && out.back().id == q.int64(1))
            bad = "it is a second buffer with id " + std::to_string(q.int64(1));
        if (!bad.empty())
            return rowError("buffers", q.int64(0), "a buffer of run " + std::to_string(id) + ": " + bad);
        BufferRow b;
        b.id = static_cast<int>(q.int64(1));
        b.value = q.text(8);
        b.level = q.text(10) == "sram" ? backend::MemLevel::Sram : backend::MemLevel::Dram;
        b.core = static_cast<int>(q.int64(2));
        b.offset = static_cast<uint64_t>(q.int64(3));
        b.size = static_cast<uint64_t>(q.int64(4));
        b.firstTask = static_cast<int>(q.int64(5));
        b.lastTask = static_cast<int>(q.int64(6));
        out.push_back(std::move(b));
    }
    return out;
}

Expected<std::vector<SramBufferRow>> ProfileReader::sramBuffers(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    std::vector<SramBufferRow> out;
    if (m_version == 1)
        return out;
    SX_ASSIGN(const std::vector<int>* tasks, taskIds(id));
    SX_ASSIGN(Statement q,
              Statement::prepare(
                  m_db, "SELECT b.rowid, b.id, b.core, b.\"offset\", b.size, b.pair, b.task, "
                        "b.buffer, b.first_task, b.last_task, b.role, r.text FROM sram_buffers b "
                        "LEFT JOIN strings r ON r.id = b.role WHERE b.run = ?1 ORDER BY b.id"));
    q.bind(1, id);
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        std::string bad = nonInteger(q, {{1, "id"}, {2, "core"}, {3, "offset"}, {4, "size"}, {5, "pair"},
                                         {6, "task"}, {7, "buffer"}, {8, "first_task"}, {9, "last_task"}});
        if (bad.empty())
            bad = danglingString(q, {{10, 11, "role"}});
        const std::optional<backend::SramRole> role = parseRole(q.text(11));
        if (bad.empty() && (!role || q.int64(1) < 0 || q.int64(1) > INT32_MAX || q.int64(2) < 0 ||
                            q.int64(2) > 65535 || q.int64(3) < 0 || q.int64(4) < 0 ||
                            q.int64(5) < -1 || q.int64(5) > 1 || q.int64(7) < -1 || q.int64(7) > INT32_MAX))
            bad = "role '" + q.text(11) + "', core " + std::to_string(q.int64(2)) + ", offset " +
                  std::to_string(q.int64(3)) + ", size " + std::to_string(q.int64(4)) + ", pair " +
                  std::to_string(q.int64(5)) + ", buffer " + std::to_string(q.int64(7)) +
                  " (a role of the SRAM plan, core 0..65535, offset and size >= 0, pair -1..1, "
                  "buffer -1 or an id)";
        if (bad.empty())
            bad = unknownTask(q, *tasks, id, {{6, "task"}, {8, "first_task"}, {9, "last_task"}});
        if (bad.empty() && !out.empty() && out.back().id == q.int64(1))
            bad = "it is a second SRAM buffer with id " + std::to_string(q.int64(1));
        if (!bad.empty())
            return rowError("sram_buffers", q.int64(0),
                            "SRAM buffer " + std::to_string(q.int64(1)) + " of run " + std::to_string(id) +
                                ": " + bad);
        SramBufferRow b;
        b.id = static_cast<int>(q.int64(1));
        b.core = static_cast<int>(q.int64(2));
        b.offset = static_cast<uint64_t>(q.int64(3));
        b.size = static_cast<uint64_t>(q.int64(4));
        b.role = *role;
        b.pair = static_cast<int>(q.int64(5));
        b.task = static_cast<int>(q.int64(6));
        b.buffer = static_cast<int>(q.int64(7));
        b.firstTask = static_cast<int>(q.int64(8));
        b.lastTask = static_cast<int>(q.int64(9));
        out.push_back(b);
    }
    return out;
}

Expected<std::vector<SramStepRow>> ProfileReader::sramOccupancy(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    std::vector<SramStepRow> out;
    if (m_version == 1)
        return out;
    SX_ASSIGN(Statement q,
              Statement::prepare(m_db, "SELECT rowid, core, cycle, bytes FROM sram_usage WHERE run = ?1 "
                                       "ORDER BY core, cycle"));
    q.bind(1, id);
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        std::string bad = nonInteger(q, {{1, "core"}, {2, "cycle"}, {3, "bytes"}});
        if (bad.empty() && (q.int64(1) < 0 || q.int64(1) > 65535 || q.int64(2) < 0 || q.int64(3) < 0))
            bad = "it has core " + std::to_string(q.int64(1)) + ", cycle " + std::to_string(q.int64(2)) +
                  ", bytes " + std::to_string(q.int64(3)) + " (core 0..65535, cycle and bytes >= 0)";
        if (!bad.empty())
            return rowError("sram_usage", q.int64(0),
                            "an SRAM occupancy row of run " + std::to_string(id) + ": " + bad);
        out.push_back(SramStepRow{static_cast<int>(q.int64(1)), static_cast<uint64_t>(q.int64(2)),
                                  static_cast<uint64_t>(q.int64(3))});
    }
    return out;
}

Expected<std::vector<MetricRow>> ProfileReader::metrics(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    SX_ASSIGN(Statement q,
              Statement::prepare(m_db, "SELECT m.rowid, m.value, m.key, k.text FROM metrics m LEFT "
                                       "JOIN strings k ON k.id = m.key WHERE m.run = ?1 ORDER BY m.rowid"));
    q.bind(1, id);
    std::vector<MetricRow> out;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        const std::string of = "a metric of run " + std::to_string(id);
        if (const std::string bad = danglingString(q, {{2, 3, "key"}}); !bad.empty())
            return rowError("metrics", q.int64(0), of + ": " + bad);
        double value = q.real(1);
        // A NaN metric is stored as 'nan' (ProfileDb.cpp); other text, or a blob, is damage.
        if (q.isText(1) && q.text(1) == "nan") {
            value = std::nan("");
        } else if (q.isText(1) || q.isNull(1) || (!q.isInt(1) && !q.isReal(1))) {
            return rowError("metrics", q.int64(0),
                            "metric '" + q.text(3) + "' of run " + std::to_string(id) + " is " +
                                q.describe(1) + ", not a number");
        }
        out.push_back(MetricRow{q.text(3), value});
    }
    return out;
}

} // namespace sextant::profiler
