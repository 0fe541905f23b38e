#include "ProfileDb.h"

#include "ProfileCheck.h"
#include "RunRecord.h"
#include "Sqlite.h"

#include "core/ir/FileRead.h"
#include "core/ir/FileWrite.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

namespace sextant::profiler {

namespace {

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS strings(id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS runs(id INTEGER PRIMARY KEY, model INTEGER NOT NULL, target INTEGER NOT NULL,
  pipeline INTEGER NOT NULL, created INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS nodes(run INTEGER NOT NULL, name INTEGER NOT NULL, op INTEGER NOT NULL,
  origins INTEGER NOT NULL, created_by INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tasks(run INTEGER NOT NULL, id INTEGER NOT NULL, name INTEGER NOT NULL,
  kernel INTEGER NOT NULL, core INTEGER NOT NULL, unit INTEGER NOT NULL, start INTEGER NOT NULL,
  "end" INTEGER NOT NULL, ready INTEGER NOT NULL, flops INTEGER NOT NULL, dma_bytes INTEGER NOT NULL,
  nodes INTEGER NOT NULL, load_end INTEGER, compute_start INTEGER, compute_end INTEGER,
  store_start INTEGER, streamed INTEGER, load_bytes INTEGER, store_bytes INTEGER);
CREATE TABLE IF NOT EXISTS task_nodes(run INTEGER NOT NULL, task INTEGER NOT NULL, node INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS deps(run INTEGER NOT NULL, src INTEGER NOT NULL, dst INTEGER NOT NULL,
  event INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS buffers(run INTEGER NOT NULL, id INTEGER NOT NULL, value INTEGER NOT NULL,
  level INTEGER NOT NULL, core INTEGER NOT NULL, "offset" INTEGER NOT NULL, size INTEGER NOT NULL,
  first_task INTEGER NOT NULL, last_task INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS metrics(run INTEGER NOT NULL, key INTEGER NOT NULL, value REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sram_buffers(run INTEGER NOT NULL, id INTEGER NOT NULL, core INTEGER NOT NULL,
  "offset" INTEGER NOT NULL, size INTEGER NOT NULL, role INTEGER NOT NULL, pair INTEGER NOT NULL,
  task INTEGER NOT NULL, buffer INTEGER NOT NULL, first_task INTEGER NOT NULL, last_task INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sram_usage(run INTEGER NOT NULL, core INTEGER NOT NULL, cycle INTEGER NOT NULL,
  bytes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS checksums(run INTEGER NOT NULL, tbl INTEGER NOT NULL, rows INTEGER NOT NULL,
  digest INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS tasks_by_lane ON tasks(run, core, start);
CREATE INDEX IF NOT EXISTS task_nodes_by_task ON task_nodes(run, task);
CREATE INDEX IF NOT EXISTS sram_usage_by_core ON sram_usage(run, core, cycle);
)sql";

/// Version 1 to 2: the Task phase columns (NULL for the runs already stored: they read back
/// without phases, as version 1 runs do). The new tables come from kSchema.
const char* kUpgradeFrom1 = R"sql(
ALTER TABLE tasks ADD COLUMN load_end INTEGER;
ALTER TABLE tasks ADD COLUMN compute_start INTEGER;
ALTER TABLE tasks ADD COLUMN compute_end INTEGER;
ALTER TABLE tasks ADD COLUMN store_start INTEGER;
ALTER TABLE tasks ADD COLUMN streamed INTEGER;
ALTER TABLE tasks ADD COLUMN load_bytes INTEGER;
ALTER TABLE tasks ADD COLUMN store_bytes INTEGER;
UPDATE schema_version SET version = 2;
)sql";

std::string levelText(backend::MemLevel l) {
    switch (l) {
    case backend::MemLevel::Dram:
        return "dram";
    case backend::MemLevel::Sram:
        return "sram";
    }
    return "dram";
}

std::string joinComma(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v)
        s += (s.empty() ? "" : ",") + x;
    return s;
}

struct DbCloser {
    void operator()(sqlite3* db) const { sqlite3_close(db); }
};

/// Interns strings through the strings table, caching ids for the length of one write.
class Interner {
public:
    static Expected<Interner> create(sqlite3* db) {
        Interner in;
        SX_ASSIGN(in.m_insert,
                  Statement::prepare(db, "INSERT OR IGNORE INTO strings(text) VALUES(?1)"));
        SX_ASSIGN(in.m_select, Statement::prepare(db, "SELECT id FROM strings WHERE text = ?1"));
        return in;
    }
    Expected<int64_t> id(const std::string& text) {
        if (auto it = m_cache.find(text); it != m_cache.end())
            return it->second;
        m_insert.bind(1, text);
        SX_TRY(m_insert.run());
        m_select.bind(1, text);
        SX_ASSIGN(bool row, m_select.step());
        if (!row)
            return makeError(ErrorKind::Io, "sqlite: interned string vanished");
        int64_t v = m_select.int64(0);
        m_select.reset();
        m_cache.emplace(text, v);
        return v;
    }

private:
    Statement m_insert, m_select;
    std::map<std::string, int64_t> m_cache;
};

/// The event carrying the dependency src -> dst across cores, or -1.
int eventFor(const backend::Program& p, const backend::Task& src, const backend::Task& dst) {
    for (int e : dst.waitEvents)
        if (std::find(src.recordEvents.begin(), src.recordEvents.end(), e) !=
            src.recordEvents.end())
            return e;
    return -1;
}

/// The checksum of a run's rows of `table` (ProfileCheck.h), which the reader recomputes.
Status writeChecksum(sqlite3* db, Interner& strings, int64_t run, const std::string& table,
                     uint64_t rows, uint64_t checksum) {
    SX_ASSIGN(int64_t tbl, strings.id(table));
    SX_ASSIGN(Statement ins, Statement::prepare(db, "INSERT INTO checksums(run, tbl, rows, digest) "
                                                    "VALUES(?1, ?2, ?3, ?4)"));
    ins.bind(1, run);
    ins.bind(2, tbl);
    ins.bind(3, static_cast<int64_t>(rows));
    ins.bind(4, static_cast<int64_t>(checksum)); // the bits of the unsigned sum
    return ins.run();
}

Expected<int64_t> writeAll(sqlite3* db, const backend::Program& p, const sim::SimResult& result,
                           const RunInfo& info) {
    SX_TRY(execSql(db, kSchema));
    {
        SX_ASSIGN(Statement q, Statement::prepare(db, "SELECT version FROM schema_version"));
        SX_ASSIGN(bool row, q.step());
        if (!row) {
            SX_TRY(execSql(db, "INSERT INTO schema_version(version) VALUES(" +
                                   std::to_string(kProfileSchemaVersion) + ")"));
        } else if (q.int64(0) == 1) {
            q.reset();
            SX_TRY(execSql(db, kUpgradeFrom1));
        } else if (q.int64(0) != kProfileSchemaVersion) {
            return makeError(ErrorKind::Invalid,
                             "it has schema version " + std::to_string(q.int64(0)) +
                                 ", this build writes " + std::to_string(kProfileSchemaVersion));
        }
    }
    SX_ASSIGN(Interner strings, Interner::create(db));

    std::string pipeline = info.pipeline.empty() ? joinComma(p.pipeline) : info.pipeline;
    int64_t created = info.created ? *info.created
                                   : std::chrono::duration_cast<std::chrono::seconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count();
    int64_t run = 0;
    {
        SX_ASSIGN(Statement ins,
                  Statement::prepare(db, "INSERT INTO runs(model, target, pipeline, created) "
                                         "VALUES(?1, ?2, ?3, ?4)"));
        SX_ASSIGN(int64_t model, strings.id(info.model.empty() ? p.modelName : info.model));
        SX_ASSIGN(int64_t target, strings.id(p.target.name));
        SX_ASSIGN(int64_t pipe, strings.id(pipeline));
        ins.bind(1, model);
        ins.bind(2, target);
        ins.bind(3, pipe);
        ins.bind(4, created);
        SX_TRY(ins.run());
        run = sqlite3_last_insert_rowid(db);
    }

    if (p.graph) {
        SX_ASSIGN(Statement ins,
                  Statement::prepare(db, "INSERT INTO nodes(run, name, op, origins, created_by) "
                                         "VALUES(?1, ?2, ?3, ?4, ?5)"));
        for (const ir::Node* n : p.graph->nodes()) {
            nlohmann::json origins = n->provenance().origins;
            SX_ASSIGN(int64_t name, strings.id(n->name()));
            SX_ASSIGN(int64_t op, strings.id(ir::qualifiedOpName(n->kind())));
            SX_ASSIGN(int64_t org, strings.id(origins.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
            SX_ASSIGN(int64_t by, strings.id(n->provenance().createdBy));
            ins.bind(1, run);
            ins.bind(2, name);
            ins.bind(3, op);
            ins.bind(4, org);
            ins.bind(5, by);
            SX_TRY(ins.run());
        }
    }

    {
        SX_ASSIGN(Statement ins,
                  Statement::prepare(
                      db, "INSERT INTO tasks(run, id, name, kernel, core, unit, start, \"end\", "
                          "ready, flops, dma_bytes, nodes, load_end, compute_start, compute_end, "
                          "store_start, streamed, load_bytes, store_bytes) VALUES(?1, ?2, ?3, ?4, "
                          "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)"));
        SX_ASSIGN(
            Statement insNode,
            Statement::prepare(db, "INSERT INTO task_nodes(run, task, node) VALUES(?1, ?2, ?3)"));
        // The rows a run recorded in memory has (RunRecord.h), phases included.
        uint64_t checksum = 0, rows = 0;
        for (const TaskRow& t : taskRows(p, result)) {
            nlohmann::json nodes = t.nodes;
            const std::string nodesJson =
                nodes.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            checksum += taskRowChecksum(t, nodesJson);
            ++rows;
            SX_ASSIGN(int64_t name, strings.id(t.name));
            SX_ASSIGN(int64_t kernel, strings.id(t.kernel));
            SX_ASSIGN(int64_t unit, strings.id(std::string(backend::unitName(t.unit))));
            SX_ASSIGN(int64_t nodeList, strings.id(nodesJson));
            ins.bind(1, run);
            ins.bind(2, static_cast<int64_t>(t.id));
            ins.bind(3, name);
            ins.bind(4, kernel);
            ins.bind(5, static_cast<int64_t>(t.core));
            ins.bind(6, unit);
            ins.bind(7, static_cast<int64_t>(t.start));
            ins.bind(8, static_cast<int64_t>(t.end));
            ins.bind(9, static_cast<int64_t>(t.ready));
            ins.bind(10, static_cast<int64_t>(t.flops));
            ins.bind(11, static_cast<int64_t>(t.dmaBytes));
            ins.bind(12, nodeList);
            ins.bind(13, static_cast<int64_t>(t.loadEnd));
            ins.bind(14, static_cast<int64_t>(t.computeStart));
            ins.bind(15, static_cast<int64_t>(t.computeEnd));
            ins.bind(16, static_cast<int64_t>(t.storeStart));
            ins.bind(17, static_cast<int64_t>(t.streamed ? 1 : 0));
            ins.bind(18, static_cast<int64_t>(t.loadBytes));
            ins.bind(19, static_cast<int64_t>(t.storeBytes));
            SX_TRY(ins.run());
            for (const std::string& n : t.nodes) {
                SX_ASSIGN(int64_t node, strings.id(n));
                insNode.bind(1, run);
                insNode.bind(2, static_cast<int64_t>(t.id));
                insNode.bind(3, node);
                SX_TRY(insNode.run());
            }
        }
        SX_TRY(writeChecksum(db, strings, run, "tasks", rows, checksum));
    }

    {
        std::map<int, size_t> byId;
        for (size_t i = 0; i < p.tasks.size(); ++i)
            byId.emplace(p.tasks[i].id, i);
        SX_ASSIGN(Statement ins,
                  Statement::prepare(
                      db, "INSERT INTO deps(run, src, dst, event) VALUES(?1, ?2, ?3, ?4)"));
        for (const backend::Task& t : p.tasks) {
            for (int d : t.deps) {
                auto it = byId.find(d);
                int event = it == byId.end() ? -1 : eventFor(p, p.tasks[it->second], t);
                ins.bind(1, run);
                ins.bind(2, static_cast<int64_t>(d));
                ins.bind(3, static_cast<int64_t>(t.id));
                ins.bind(4, static_cast<int64_t>(event));
                SX_TRY(ins.run());
            }
        }
    }

    {
        SX_ASSIGN(Statement ins,
                  Statement::prepare(
                      db, "INSERT INTO buffers(run, id, value, level, core, \"offset\", size, "
                          "first_task, last_task) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
        for (const backend::Buffer& b : p.buffers) {
            SX_ASSIGN(int64_t value, strings.id(b.value));
            SX_ASSIGN(int64_t level, strings.id(levelText(b.level)));
            ins.bind(1, run);
            ins.bind(2, static_cast<int64_t>(b.id));
            ins.bind(3, value);
            ins.bind(4, level);
            ins.bind(5, static_cast<int64_t>(b.core));
            ins.bind(6, static_cast<int64_t>(b.offset));
            ins.bind(7, static_cast<int64_t>(b.size));
            ins.bind(8, static_cast<int64_t>(b.firstTask));
            ins.bind(9, static_cast<int64_t>(b.lastTask));
            SX_TRY(ins.run());
        }
    }

    {
        SX_ASSIGN(Statement ins,
                  Statement::prepare(
                      db, "INSERT INTO sram_buffers(run, id, core, \"offset\", size, role, "
                          "pair, task, buffer, first_task, last_task) VALUES(?1, ?2, ?3, ?4, "
                          "?5, ?6, ?7, ?8, ?9, ?10, ?11)"));
        for (const SramBufferRow& b : sramBufferRows(p)) {
            SX_ASSIGN(int64_t role, strings.id(std::string(backend::sramRoleName(b.role))));
            ins.bind(1, run);
            ins.bind(2, static_cast<int64_t>(b.id));
            ins.bind(3, static_cast<int64_t>(b.core));
            ins.bind(4, static_cast<int64_t>(b.offset));
            ins.bind(5, static_cast<int64_t>(b.size));
            ins.bind(6, role);
            ins.bind(7, static_cast<int64_t>(b.pair));
            ins.bind(8, static_cast<int64_t>(b.task));
            ins.bind(9, static_cast<int64_t>(b.buffer));
            ins.bind(10, static_cast<int64_t>(b.firstTask));
            ins.bind(11, static_cast<int64_t>(b.lastTask));
            SX_TRY(ins.run());
        }
        SX_ASSIGN(Statement step,
                  Statement::prepare(db, "INSERT INTO sram_usage(run, core, cycle, bytes) "
                                         "VALUES(?1, ?2, ?3, ?4)"));
        for (const SramStepRow& r : sramOccupancy(p, result)) {
            step.bind(1, run);
            step.bind(2, static_cast<int64_t>(r.core));
            step.bind(3, static_cast<int64_t>(r.cycle));
            step.bind(4, static_cast<int64_t>(r.bytes));
            SX_TRY(step.run());
        }
    }

    {
        // The same rows a run recorded in memory has (RunRecord.h): what the GUI shows is what
        // the database keeps.
        const std::vector<MetricRow> metrics = metricRows(p, result, info);
        SX_ASSIGN(
            Statement ins,
            Statement::prepare(db, "INSERT INTO metrics(run, key, value) VALUES(?1, ?2, ?3)"));
        for (const auto& [key, value] : metrics) {
            SX_ASSIGN(int64_t k, strings.id(key));
            ins.bind(1, run);
            ins.bind(2, k);
            // SQLite stores a NaN double as NULL, which the column refuses; a metric that is NaN
            // (the cosine of an output that overflowed) is kept as the text 'nan' instead, and
            // the reader gives NaN back. Infinities are REAL values SQLite keeps as they are.
            if (std::isnan(value))
                ins.bind(3, std::string("nan"));
            else
                ins.bind(3, value);
            SX_TRY(ins.run());
        }
    }
    return run;
}


/// "60 s", "0.3 s".
std::string secondsText(int64_t ms) {
    if (ms % 1000 == 0)
        return std::to_string(ms / 1000) + " s";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
    return buf;
}

/// The busy handler's state: one deadline for the whole write, however many locks it waits for.
struct LockWait {
    std::string path;
    const WriteOptions* options = nullptr;
    std::optional<std::chrono::steady_clock::time_point> since;
    int64_t reported = -1; ///< whole seconds last reported
    bool gaveUp = false;

    static int handler(void* self, int /*attempt*/) {
        auto& w = *static_cast<LockWait*>(self);
        const auto now = std::chrono::steady_clock::now();
        if (!w.since)
            w.since = now;
        const auto waited =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - *w.since).count();
        if (waited >= w.options->lockTimeoutMs) {
            w.gaveUp = true;
            return 0;
        }
        if (w.options->onWait && waited / 1000 > w.reported) {
            w.reported = waited / 1000;
            w.options->onWait("waiting for '" + w.path + "': locked by another process (" +
                              std::to_string(w.reported) + " s of at most " +
                              secondsText(w.options->lockTimeoutMs) + ")...");
        }
        const int64_t left = w.options->lockTimeoutMs - waited;
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(left, 50)));
        return 1;
    }
};

/// Puts `db` in WAL mode for the write, so that readers are never blocked by it. The change
/// needs every other connection's write lock gone, and SQLite does not wait for that (the busy
/// handler is not called: waiting there while holding a read lock could deadlock), so the wait
/// is here, between attempts, with the write's one deadline.
Status enterWal(sqlite3* db, LockWait& wait) {
    for (int attempt = 0;; ++attempt) {
        const int rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr);
        if (rc == SQLITE_OK)
            return {};
        if ((rc & 0xff) != SQLITE_BUSY || !LockWait::handler(&wait, attempt))
            return makeError(ErrorKind::Io, std::string("sqlite: ") + sqlite3_errmsg(db));
    }
}

/// Whether `db` may take a run: empty (0), or a sound profile of a version this build appends
/// to. Nothing is written to it here.
Expected<int> checkWritable(sqlite3* db, const std::string& path) {
    SX_ASSIGN(int version, profileVersion(db, path));
    if (version > 0)
        SX_TRY(quickCheck(db, path, /*full=*/true));
    return version;
}

Status writeTransaction(sqlite3* db, const std::string& path, const backend::Program& program,
                        const sim::SimResult& result, const RunInfo& info, int64_t& run) {
    SX_TRY(execSql(db, "BEGIN IMMEDIATE"));
    // Checked again under the write lock: another process may have written it in between.
    Expected<int> version = profileVersion(db, path);
    Expected<int64_t> written =
        version.ok() ? writeAll(db, program, result, info) : Expected<int64_t>(version.error());
    if (!written.ok()) {
        (void)execSql(db, "ROLLBACK");
        return written.error();
    }
    SX_TRY(execSql(db, "COMMIT"));
    run = *written;
    return {};
}

} // namespace

Expected<int64_t> writeProfile(const std::string& dbPath, const backend::Program& program,
                               const sim::SimResult& result, const RunInfo& info,
                               const WriteOptions& options) {
    if (const std::string kind = specialFileKind(dbPath); !kind.empty())
        return makeError(ErrorKind::Io, "cannot write profile '" + dbPath + "': it is " + kind + ", not a file", dbPath);
    // A new file: why its folder cannot take it (SQLite says "unable to open database file").
    if (std::error_code ec; !std::filesystem::exists(dbPath, ec))
        if (const std::string why = whyNoNewFile(dbPath); !why.empty())
            return makeError(ErrorKind::Io, "cannot write profile '" + dbPath + "': " + why, dbPath);
    sqlite3* raw = nullptr;
    int rc =
        sqlite3_open_v2(dbPath.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    std::unique_ptr<sqlite3, DbCloser> db(raw);
    if (rc != SQLITE_OK)
        return makeError(ErrorKind::Io, "cannot open profile '" + dbPath + "': " + sqliteReason(raw));
    LockWait wait;
    wait.path = dbPath;
    wait.options = &options;
    sqlite3_busy_handler(raw, &LockWait::handler, &wait);
    auto fail = [&](const Error& e) {
        if (wait.gaveUp)
            return makeError(ErrorKind::Io,
                             "cannot write profile '" + dbPath +
                                 "': it stayed locked by another process for " +
                                 secondsText(options.lockTimeoutMs) +
                                 "; the run was not saved (the runs already in it are "
                                 "unchanged)",
                             dbPath);
        return makeError(ErrorKind::Io,
                         "cannot write profile '" + dbPath + "': " + e.message +
                             "; the run was not saved",
                         dbPath);
    };
    // Refused before anything is written: not even the journal mode of someone else's file
    // changes.
    Expected<int> version = checkWritable(raw, dbPath);
    if (!version.ok())
        return fail(version.error());
    if (Status s = enterWal(raw, wait); !s.ok())
        return fail(s.error());
    int64_t run = 0;
    if (Status s = writeTransaction(raw, dbPath, program, result, info, run); !s.ok())
        return fail(s.error());
    // The run is saved. Back in rollback-journal mode the file is whole on its own: reading it
    // makes no -wal and -shm files beside it, and it opens from a folder no one can write to.
    // While another process has the file open, the mode cannot change and stays WAL; nothing
    // waits for that.
    sqlite3_busy_handler(raw, nullptr, nullptr);
    (void)execSql(raw, "PRAGMA journal_mode=DELETE");
    return run;
}

} // namespace sextant::profiler
