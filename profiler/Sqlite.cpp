#include "Sqlite.h"

namespace sextant::profiler {

const char* const kProfileTables[11] = {"schema_version", "strings",      "runs",      "nodes",
                                        "tasks",          "task_nodes",   "deps",      "buffers",
                                        "metrics",        "sram_buffers", "sram_usage"};

Expected<Statement> Statement::prepare(sqlite3* db, std::string_view sql) {
    Statement s;
    s.m_db = db;
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &s.m_stmt, nullptr) !=
        SQLITE_OK) {
        std::string head(sql.substr(0, std::min<size_t>(sql.size(), 40)));
        return makeError(ErrorKind::Io,
                         "sqlite: " + std::string(sqlite3_errmsg(db)) + " (in '" + head + "')");
    }
    return s;
}

Expected<bool> Statement::step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    return makeError(ErrorKind::Io, "sqlite: " + std::string(sqlite3_errmsg(m_db)));
}

Status Statement::run() {
    SX_ASSIGN(bool row, step());
    (void)row;
    reset();
    return {};
}

Status execSql(sqlite3* db, const std::string& sql) {
    char* msg = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
        std::string m = msg ? msg : sqlite3_errmsg(db);
        sqlite3_free(msg);
        return makeError(ErrorKind::Io, "sqlite: " + m);
    }
    return {};
}

} // namespace sextant::profiler
