#include "ProfileReader.h"

#include <cmath>

#include "ProfileDb.h"
#include "Sqlite.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

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

backend::UnitKind parseUnit(const std::string& s) {
    if (s == "cube")
        return backend::UnitKind::Cube;
    if (s == "dma")
        return backend::UnitKind::Dma;
    return backend::UnitKind::Vector;
}

} // namespace

ProfileReader::ProfileReader(ProfileReader&& o) noexcept
    : m_path(std::move(o.m_path)), m_db(std::exchange(o.m_db, nullptr)), m_version(o.m_version) {}

ProfileReader& ProfileReader::operator=(ProfileReader&& o) noexcept {
    if (this != &o) {
        sqlite3_close(m_db);
        m_path = std::move(o.m_path);
        m_db = std::exchange(o.m_db, nullptr);
        m_version = o.m_version;
    }
    return *this;
}

ProfileReader::~ProfileReader() {
    sqlite3_close(m_db);
}

Expected<ProfileReader> ProfileReader::open(const std::string& path) {
    ProfileReader r;
    r.m_path = path;
    int rc = sqlite3_open_v2(path.c_str(), &r.m_db, SQLITE_OPEN_READONLY, nullptr);
    if (rc != SQLITE_OK)
        return makeError(ErrorKind::Io, "cannot open profile '" + path + "': " +
                                            (r.m_db ? sqlite3_errmsg(r.m_db) : "out of memory"));
    sqlite3_busy_timeout(r.m_db, 5000);
    // The first query is where SQLite notices a file that is not a database.
    auto master = Statement::prepare(r.m_db, "SELECT name FROM sqlite_master WHERE type = 'table'");
    if (!master.ok())
        return makeError(ErrorKind::Parse, "'" + path + "' is not a profile database (" +
                                               master.error().message + ")");
    std::vector<std::string> tables;
    while (true) {
        auto row = master->step();
        if (!row.ok())
            return makeError(ErrorKind::Parse, "'" + path + "' is not a profile database (" +
                                                   row.error().message + ")");
        if (!*row)
            break;
        tables.push_back(master->text(0));
    }
    auto has = [&](const std::string& t) {
        return std::find(tables.begin(), tables.end(), t) != tables.end();
    };
    if (!has("schema_version"))
        return makeError(ErrorKind::Parse,
                         "'" + path + "' is not a profile database (no schema_version table)");
    SX_ASSIGN(Statement q, Statement::prepare(r.m_db, "SELECT version FROM schema_version"));
    SX_ASSIGN(bool row, q.step());
    if (!row)
        return makeError(ErrorKind::Parse,
                         "profile '" + path + "' has an empty schema_version table");
    if (q.int64(0) != kProfileSchemaVersion && q.int64(0) != 1)
        return makeError(ErrorKind::Unsupported,
                         "profile '" + path + "' has schema version " + std::to_string(q.int64(0)) +
                             ", this build reads 1 to " + std::to_string(kProfileSchemaVersion));
    r.m_version = static_cast<int>(q.int64(0));
    const int required =
        r.m_version == 1 ? kProfileTablesV1 : static_cast<int>(std::size(kProfileTables));
    for (int i = 0; i < required; ++i)
        if (!has(kProfileTables[i]))
            return makeError(ErrorKind::Parse,
                             "profile '" + path + "' is missing table '" + kProfileTables[i] + "'");
    return r;
}

Expected<std::vector<RunRow>> ProfileReader::runs() const {
    SX_ASSIGN(Statement q, Statement::prepare(
                               m_db, "SELECT r.id, m.text, t.text, p.text, r.created FROM runs r "
                                     "JOIN strings m ON m.id = r.model JOIN strings t ON t.id = "
                                     "r.target JOIN strings p ON p.id = r.pipeline ORDER BY r.id"));
    std::vector<RunRow> out;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        out.push_back(RunRow{q.int64(0), q.text(1), q.text(2), q.text(3), q.int64(4)});
    }
    return out;
}

Expected<int64_t> ProfileReader::latestRun() const {
    SX_ASSIGN(Statement q, Statement::prepare(m_db, "SELECT max(id) FROM runs"));
    SX_ASSIGN(bool row, q.step());
    if (!row || q.text(0).empty()) // max() of no rows is NULL
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
                                 "SELECT n.text, o.text, g.text, c.text FROM nodes x "
                                 "JOIN strings n ON n.id = x.name JOIN strings o ON o.id = x.op "
                                 "JOIN strings g ON g.id = x.origins JOIN strings c ON c.id = "
                                 "x.created_by WHERE x.run = ?1 ORDER BY x.rowid"));
    q.bind(1, id);
    std::vector<NodeRow> out;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        out.push_back(NodeRow{q.text(0), q.text(1), parseNameList(q.text(2)), q.text(3)});
    }
    return out;
}

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
                  m_db, "SELECT x.id, n.text, k.text, x.core, u.text, x.start, x.\"end\", x.ready, "
                        "x.flops, x.dma_bytes, l.text, " +
                            phases +
                            " FROM tasks x JOIN strings n ON n.id = x.name "
                            "JOIN strings k ON k.id = x.kernel JOIN strings u ON u.id = x.unit "
                            "JOIN strings l ON l.id = x.nodes WHERE x.run = ?1" +
                            where + " ORDER BY x.start, x.id"));
    q.bind(1, run);
    if (!where.empty()) {
        q.bind(2, static_cast<int64_t>(core));
        q.bind(3, static_cast<int64_t>(t0));
        q.bind(4, static_cast<int64_t>(t1));
    }
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            return {};
        SX_ASSIGN(TaskRow t, decodeTask(q, run));
        SX_TRY(visit(t));
    }
}

Expected<TaskRow> ProfileReader::decodeTask(const Statement& q, int64_t run) const {
    // A database may come from anywhere (the GUI opens any file): values a Program could not
    // have are an error naming the Task, not a lane for core two billion.
    const int64_t id = q.int64(0), core = q.int64(3), start = q.int64(5), end = q.int64(6),
                  ready = q.int64(7);
    const std::string unit = q.text(4);
    auto bad = [&](const std::string& what) {
        return makeError(ErrorKind::Parse,
                         "profile database '" + m_path + "': Task " + std::to_string(id) +
                             " of run " + std::to_string(run) + " " + what,
                         m_path);
    };
    if (id < 0 || id > INT32_MAX)
        return bad("has an id out of range");
    if (core < 0 || core > 65535)
        return bad("has core " + std::to_string(core) + " (a core is 0..65535)");
    if (unit != "cube" && unit != "vector" && unit != "dma")
        return bad("has unit '" + unit + "' (cube, vector or dma)");
    if (start < 0 || end < start || ready < 0)
        return bad("has times start " + std::to_string(start) + ", end " + std::to_string(end) +
                   ", ready " + std::to_string(ready) + " (0 <= start <= end, 0 <= ready)");
    if (q.int64(8) < 0 || q.int64(9) < 0)
        return bad("has negative flops or DMA bytes");
    TaskRow t;
    t.id = static_cast<int>(id);
    t.name = q.text(1);
    t.kernel = q.text(2);
    t.core = static_cast<int>(core);
    t.unit = parseUnit(unit);
    t.start = static_cast<uint64_t>(start);
    t.end = static_cast<uint64_t>(end);
    t.ready = static_cast<uint64_t>(ready);
    t.flops = static_cast<uint64_t>(q.int64(8));
    t.dmaBytes = static_cast<uint64_t>(q.int64(9));
    t.nodes = parseNameList(q.text(10));
    if (q.isNull(11)) {
        t.loadEnd = t.computeStart = t.start;
        t.computeEnd = t.storeStart = t.end;
        return t;
    }
    const int64_t loadEnd = q.int64(11), computeStart = q.int64(12), computeEnd = q.int64(13),
                  storeStart = q.int64(14);
    auto inTask = [&](int64_t c) { return c >= start && c <= end; };
    if (!inTask(loadEnd) || !inTask(computeStart) || !inTask(computeEnd) || !inTask(storeStart) ||
        computeEnd < computeStart)
        return bad("has phases load_end " + std::to_string(loadEnd) + ", compute " +
                   std::to_string(computeStart) + ".." + std::to_string(computeEnd) +
                   ", store_start " + std::to_string(storeStart) + " outside its start " +
                   std::to_string(start) + " and end " + std::to_string(end));
    if (q.int64(16) < 0 || q.int64(17) < 0)
        return bad("has negative load or store bytes");
    t.loadEnd = static_cast<uint64_t>(loadEnd);
    t.computeStart = static_cast<uint64_t>(computeStart);
    t.computeEnd = static_cast<uint64_t>(computeEnd);
    t.storeStart = static_cast<uint64_t>(storeStart);
    t.streamed = q.int64(15) != 0;
    t.loadBytes = static_cast<uint64_t>(q.int64(16));
    t.storeBytes = static_cast<uint64_t>(q.int64(17));
    return t;
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
    SX_ASSIGN(Statement q,
              Statement::prepare(m_db, "SELECT src, dst, event FROM deps WHERE run = ?1 "
                                       "ORDER BY dst, src"));
    q.bind(1, id);
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            return {};
        SX_TRY(visit(DepRow{static_cast<int>(q.int64(0)), static_cast<int>(q.int64(1)),
                            static_cast<int>(q.int64(2))}));
    }
}

Expected<std::vector<BufferRow>> ProfileReader::buffers(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    SX_ASSIGN(Statement q,
              Statement::prepare(m_db, "SELECT b.id, v.text, l.text, b.core, b.\"offset\", b.size, "
                                       "b.first_task, b.last_task FROM buffers b JOIN strings v ON "
                                       "v.id = b.value JOIN strings l ON l.id = b.level "
                                       "WHERE b.run = ?1 ORDER BY b.id"));
    q.bind(1, id);
    std::vector<BufferRow> out;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        BufferRow b;
        b.id = static_cast<int>(q.int64(0));
        b.value = q.text(1);
        b.level = q.text(2) == "sram" ? backend::MemLevel::Sram : backend::MemLevel::Dram;
        b.core = static_cast<int>(q.int64(3));
        b.offset = static_cast<uint64_t>(q.int64(4));
        b.size = static_cast<uint64_t>(q.int64(5));
        b.firstTask = static_cast<int>(q.int64(6));
        b.lastTask = static_cast<int>(q.int64(7));
        out.push_back(std::move(b));
    }
    return out;
}

Expected<std::vector<SramBufferRow>> ProfileReader::sramBuffers(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    std::vector<SramBufferRow> out;
    if (m_version == 1)
        return out;
    SX_ASSIGN(Statement q,
              Statement::prepare(
                  m_db, "SELECT b.id, b.core, b.\"offset\", b.size, r.text, b.pair, b.task, "
                        "b.buffer, b.first_task, b.last_task FROM sram_buffers b JOIN strings r "
                        "ON r.id = b.role WHERE b.run = ?1 ORDER BY b.id"));
    q.bind(1, id);
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        const std::optional<backend::SramRole> role = parseRole(q.text(4));
        if (!role || q.int64(1) < 0 || q.int64(1) > 65535 || q.int64(2) < 0 || q.int64(3) < 0)
            return makeError(
                ErrorKind::Parse,
                "profile database '" + m_path + "': SRAM buffer " + std::to_string(q.int64(0)) +
                    " of run " + std::to_string(id) + " has role '" + q.text(4) + "', core " +
                    std::to_string(q.int64(1)) + ", offset " + std::to_string(q.int64(2)) +
                    ", size " + std::to_string(q.int64(3)) +
                    " (a role of the SRAM plan, core 0..65535, offset and size >= 0)",
                m_path);
        SramBufferRow b;
        b.id = static_cast<int>(q.int64(0));
        b.core = static_cast<int>(q.int64(1));
        b.offset = static_cast<uint64_t>(q.int64(2));
        b.size = static_cast<uint64_t>(q.int64(3));
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
              Statement::prepare(m_db, "SELECT core, cycle, bytes FROM sram_usage WHERE run = ?1 "
                                       "ORDER BY core, cycle"));
    q.bind(1, id);
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        if (q.int64(0) < 0 || q.int64(1) < 0 || q.int64(2) < 0)
            return makeError(ErrorKind::Parse,
                             "profile database '" + m_path + "': run " + std::to_string(id) +
                                 " has an SRAM occupancy row with core " +
                                 std::to_string(q.int64(0)) + ", cycle " +
                                 std::to_string(q.int64(1)) + ", bytes " +
                                 std::to_string(q.int64(2)) + " (all >= 0)",
                             m_path);
        out.push_back(SramStepRow{static_cast<int>(q.int64(0)), static_cast<uint64_t>(q.int64(1)),
                                  static_cast<uint64_t>(q.int64(2))});
    }
    return out;
}

Expected<std::vector<MetricRow>> ProfileReader::metrics(int64_t run) const {
    SX_ASSIGN(int64_t id, resolve(run));
    SX_ASSIGN(Statement q,
              Statement::prepare(m_db, "SELECT k.text, m.value FROM metrics m JOIN strings k ON "
                                       "k.id = m.key WHERE m.run = ?1 ORDER BY m.rowid"));
    q.bind(1, id);
    std::vector<MetricRow> out;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        double value = q.real(1);
        if (q.isText(1)) { // a NaN metric is stored as 'nan' (ProfileDb.cpp); other text is damage
            if (q.text(1) != "nan")
                return makeError(ErrorKind::Invalid, "profile database: metric '" + q.text(0) + "' of run " +
                                                         std::to_string(id) + " is the text '" + q.text(1) +
                                                         "', not a number");
            value = std::nan("");
        }
        out.push_back(MetricRow{q.text(0), value});
    }
    return out;
}

} // namespace sextant::profiler
