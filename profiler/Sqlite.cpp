#include "Sqlite.h"

#include <cstring>

namespace sextant::profiler {

std::string Statement::describe(int col) const {
    switch (sqlite3_column_type(m_stmt, col)) {
    case SQLITE_INTEGER:
        return "the integer " + std::to_string(int64(col));
    case SQLITE_FLOAT:
        return "the real " + std::to_string(real(col));
    case SQLITE_TEXT: {
        std::string t = text(col);
        if (t.size() > 40)
            t = t.substr(0, 40) + "...";
        return "the text '" + t + "'";
    }
    case SQLITE_NULL:
        return "NULL";
    default:
        return "a blob";
    }
}

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

std::string sqliteReason(sqlite3* db) {
    if (db == nullptr)
        return "out of memory";
    std::string reason = sqlite3_errmsg(db);
    if (const int err = sqlite3_system_errno(db); err != 0)
        reason += std::string(" (") + std::strerror(err) + ")";
    return reason;
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
