#pragma once

// What every profile database must be before anything reads or appends to it (internal to the
// profiler library): a sound SQLite file (PRAGMA quick_check) whose tables, columns and declared
// types are those of a schema version this build knows. Row-level checks (types of the values,
// references between tables, unique ids) happen as ProfileReader reads the rows.

#include "ProfileReader.h"

#include "core/ir/Error.h"

#include <cstdint>
#include <string>

struct sqlite3;

namespace sextant::profiler {

/// Runs PRAGMA quick_check on `db` (PRAGMA integrity_check when `full`: it also compares every
/// index with its table, at about twice the time): an error naming `path` and SQLite's first
/// findings when the file's pages, b-trees or NOT NULL constraints are damaged.
Status quickCheck(sqlite3* db, const std::string& path, bool full = false);

/// The schema version of the profile database `db` after checking that it has every table of
/// that version with every column and its declared type; 0 for a database with no tables at
/// all (a new or empty file). Anything else (another program's tables, a version this build does
/// not know, a missing table or column) is an error naming `path` and what is wrong.
Expected<int> profileVersion(sqlite3* db, const std::string& path);

/// The checksum of one stored Task row: FNV-1a 64 over its values (each integer as 8 bytes, little
/// end first; each text as its length, then its bytes; `nodesJson` is the nodes column as stored).
/// A run's checksum is the sum of its rows' (mod 2^64), so it does not depend on the row order.
/// writeProfile stores it in table `checksums`; ProfileReader recomputes it from every whole-run
/// read and compares.
uint64_t taskRowChecksum(const TaskRow& t, const std::string& nodesJson);

} // namespace sextant::profiler
