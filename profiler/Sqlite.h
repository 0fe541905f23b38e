#pragma once

#include "core/ir/Error.h"

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace sextant::profiler {

/// SQLite's message for the last error on `db`, with the system's reason when there is one
/// ("unable to open database file (Read-only file system)"). `db` may be null (out of memory).
std::string sqliteReason(sqlite3* db);

/// A prepared statement that finalizes itself. Internal to the profiler library.
class Statement {
public:
    Statement() = default;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    Statement(Statement&& o) noexcept : m_db(o.m_db), m_stmt(o.m_stmt) { o.m_stmt = nullptr; }
    Statement& operator=(Statement&& o) noexcept {
        if (this != &o) {
            sqlite3_finalize(m_stmt);
            m_db = o.m_db;
            m_stmt = o.m_stmt;
            o.m_stmt = nullptr;
        }
        return *this;
    }
    ~Statement() { sqlite3_finalize(m_stmt); }

    /// Prepares `sql` on `db`; the error names the statement's first words and SQLite's reason.
    static Expected<Statement> prepare(sqlite3* db, std::string_view sql);

    void bind(int index, int64_t v) { sqlite3_bind_int64(m_stmt, index, v); }
    void bind(int index, double v) { sqlite3_bind_double(m_stmt, index, v); }
    void bind(int index, const std::string& v) {
        sqlite3_bind_text(m_stmt, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    }
    /// Steps once: true when a row is available, false when done; an error otherwise.
    Expected<bool> step();
    /// Steps to completion (for INSERT/UPDATE) and resets for reuse.
    Status run();
    void reset() {
        sqlite3_reset(m_stmt);
        sqlite3_clear_bindings(m_stmt);
    }

    int64_t int64(int col) const { return sqlite3_column_int64(m_stmt, col); }
    bool isNull(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_NULL; }
    bool isText(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_TEXT; }
    /// Whether the value is stored as an integer: text or a real in an INTEGER column (a
    /// damaged or hand-edited file) is not, though int64() would read it as some number.
    bool isInt(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_INTEGER; }
    bool isReal(int col) const { return sqlite3_column_type(m_stmt, col) == SQLITE_FLOAT; }
    /// How the value is stored, for messages: "text 'abc'", "real 1.5", "NULL", "a blob".
    std::string describe(int col) const;
    double real(int col) const { return sqlite3_column_double(m_stmt, col); }
    std::string text(int col) const {
        const unsigned char* p = sqlite3_column_text(m_stmt, col);
        return p ? std::string(reinterpret_cast<const char*>(p),
                               static_cast<size_t>(sqlite3_column_bytes(m_stmt, col)))
                 : std::string();
    }

private:
    sqlite3* m_db = nullptr;
    sqlite3_stmt* m_stmt = nullptr;
};

/// Runs SQL without results (DDL, pragmas, BEGIN/COMMIT).
Status execSql(sqlite3* db, const std::string& sql);

} // namespace sextant::profiler
