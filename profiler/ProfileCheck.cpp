#include "ProfileCheck.h"

#include "ProfileDb.h"
#include "Sqlite.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace sextant::profiler {

namespace {

/// One table of the layout (ProfileDb.h): its columns, each INTEGER unless marked ":TEXT" or
/// ":REAL", and the columns version 2 added to it.
struct TableSpec {
    const char* name;
    int since;
    const char* columns;
    const char* columnsSince2;
};

const TableSpec kTables[] = {
    {"schema_version", 1, "version", ""},
    {"strings", 1, "id text:TEXT", ""},
    {"runs", 1, "id model target pipeline created", ""},
    {"nodes", 1, "run name op origins created_by", ""},
    {"tasks", 1, "run id name kernel core unit start end ready flops dma_bytes nodes",
     "load_end compute_start compute_end store_start streamed load_bytes store_bytes"},
    {"task_nodes", 1, "run task node", ""},
    {"deps", 1, "run src dst event", ""},
    {"buffers", 1, "run id value level core offset size first_task last_task", ""},
    {"metrics", 1, "run key value:REAL", ""},
    {"sram_buffers", 2, "run id core offset size role pair task buffer first_task last_task", ""},
    {"sram_usage", 2, "run core cycle bytes", ""},
};

std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

Expected<std::vector<std::string>> userTables(sqlite3* db, const std::string& path) {
    // The first query is where SQLite notices a file that is not a database.
    auto notDb = [&](const Error& e) {
        return makeError(ErrorKind::Parse,
                         "'" + path + "' is not a profile database (" + e.message + ")", path);
    };
    auto q = Statement::prepare(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name "
                                    "NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name");
    if (!q.ok())
        return notDb(q.error());
    std::vector<std::string> tables;
    while (true) {
        auto row = q->step();
        if (!row.ok())
            return notDb(row.error());
        if (!*row)
            return tables;
        tables.push_back(q->text(0));
    }
}

Expected<int> storedVersion(sqlite3* db, const std::string& path) {
    SX_ASSIGN(Statement q, Statement::prepare(db, "SELECT version FROM schema_version"));
    SX_ASSIGN(bool row, q.step());
    if (!row)
        return makeError(ErrorKind::Parse,
                         "profile '" + path + "' has an empty schema_version table", path);
    if (!q.isInt(0))
        return makeError(ErrorKind::Parse,
                         "profile '" + path + "': table schema_version holds '" + q.text(0) +
                             "', not a version number",
                         path);
    const int64_t v = q.int64(0);
    SX_ASSIGN(bool second, q.step());
    if (second)
        return makeError(ErrorKind::Parse,
                         "profile '" + path + "': table schema_version has more than one row", path);
    if (v != kProfileSchemaVersion && v != 1)
        return makeError(ErrorKind::Unsupported,
                         "profile '" + path + "' has schema version " + std::to_string(v) +
                             ", this build reads 1 to " + std::to_string(kProfileSchemaVersion),
                         path);
    return static_cast<int>(v);
}

/// Every column `spec` has at `version`, with its declared type, is in the table.
Status checkColumns(sqlite3* db, const std::string& path, const TableSpec& spec, int version) {
    SX_ASSIGN(Statement q, Statement::prepare(db, std::string("SELECT name, type FROM "
                                                              "pragma_table_info('") +
                                                      spec.name + "')"));
    std::vector<std::pair<std::string, std::string>> have;
    while (true) {
        SX_ASSIGN(bool row, q.step());
        if (!row)
            break;
        have.emplace_back(q.text(0), upper(q.text(1)));
    }
    std::istringstream words(std::string(spec.columns) + " " +
                             (version >= 2 ? spec.columnsSince2 : ""));
    for (std::string word; words >> word;) {
        const size_t colon = word.find(':');
        const std::string name = word.substr(0, colon);
        const std::string type = colon == std::string::npos ? "INTEGER" : word.substr(colon + 1);
        auto it = std::find_if(have.begin(), have.end(),
                               [&](const auto& c) { return c.first == name; });
        if (it == have.end())
            return makeError(ErrorKind::Parse,
                             "profile '" + path + "': table " + spec.name + " has no column '" +
                                 name + "'",
                             path);
        if (it->second != type)
            return makeError(ErrorKind::Parse,
                             "profile '" + path + "': column '" + name + "' of table " +
                                 spec.name + " is declared '" + it->second + "', not " + type,
                             path);
    }
    return {};
}

class Fnv1a {
public:
    void add(uint64_t v) {
        for (int i = 0; i < 8; ++i)
            byte(static_cast<unsigned char>(v >> (8 * i)));
    }
    void add(const std::string& s) {
        add(static_cast<uint64_t>(s.size()));
        for (char c : s)
            byte(static_cast<unsigned char>(c));
    }
    uint64_t value() const { return m_h; }

private:
    void byte(unsigned char b) {
        m_h ^= b;
        m_h *= 0x100000001b3ULL;
    }
    uint64_t m_h = 0xcbf29ce484222325ULL;
};

} // namespace

uint64_t taskRowChecksum(const TaskRow& t, const std::string& nodesJson) {
    Fnv1a h;
    h.add(static_cast<uint64_t>(t.id));
    h.add(t.name);
    h.add(t.kernel);
    h.add(static_cast<uint64_t>(t.core));
    h.add(static_cast<uint64_t>(t.unit));
    for (uint64_t v : {t.start, t.end, t.ready, t.flops, t.dmaBytes, t.loadEnd, t.computeStart,
                       t.computeEnd, t.storeStart, uint64_t{t.streamed}, t.loadBytes, t.storeBytes})
        h.add(v);
    h.add(nodesJson);
    return h.value();
}

Status quickCheck(sqlite3* db, const std::string& path, bool full) {
    const std::string check = full ? "integrity_check" : "quick_check";
    auto damaged = [&](const std::string& what) {
        return makeError(ErrorKind::Parse,
                         "profile '" + path + "' is damaged: SQLite's " + check + " reports " + what,
                         path);
    };
    auto q = Statement::prepare(db, "PRAGMA " + check + "(4)");
    if (!q.ok())
        return damaged(q.error().message);
    std::string findings;
    while (true) {
        auto row = q->step();
        if (!row.ok())
            return damaged(row.error().message);
        if (!*row)
            break;
        const std::string text = q->text(0);
        if (text == "ok")
            return {};
        // One finding may be several lines, under a "*** in database main ***" heading: one
        // line of "; "-separated findings, so the CLI's error stays one line.
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);)
            if (!line.empty() && line.rfind("*** in database", 0) != 0)
                findings += (findings.empty() ? "" : "; ") + line;
    }
    return damaged(findings.empty() ? "no result" : findings);
}

Expected<int> profileVersion(sqlite3* db, const std::string& path) {
    SX_ASSIGN(std::vector<std::string> tables, userTables(db, path));
    if (tables.empty())
        return 0;
    auto has = [&](const std::string& t) {
        return std::find(tables.begin(), tables.end(), t) != tables.end();
    };
    if (!has("schema_version")) {
        std::string list;
        for (size_t i = 0; i < tables.size() && i < 5; ++i)
            list += (i ? ", " : "") + tables[i];
        return makeError(ErrorKind::Parse,
                         "'" + path +
                             "' is not a profile database (no schema_version table; it holds "
                             "table" +
                             (tables.size() == 1 ? " " : "s ") + list +
                             (tables.size() > 5 ? ", ..." : "") + ")",
                         path);
    }
    SX_ASSIGN(int version, storedVersion(db, path));
    for (const TableSpec& spec : kTables) {
        if (spec.since > version)
            continue;
        if (!has(spec.name))
            return makeError(ErrorKind::Parse,
                             "profile '" + path + "' is missing table '" + spec.name + "'", path);
        SX_TRY(checkColumns(db, path, spec, version));
    }
    return version;
}

} // namespace sextant::profiler
