// libFuzzer target for the profile database reader: bytes → a file → ProfileReader::open, then
// every query a view or a CLI command makes of each run (runs, nodes, Tasks whole and by lane,
// dependencies, buffers, SRAM plan and occupancy, metrics), the Chrome trace, and loadRun with a
// comparison of the run against itself. Built only with -DSEXTANT_FUZZ=ON and clang
// (scripts/fuzz.sh 60 profile_fuzzer), under ASan + UBSan. A finding is a crash, a
// sanitizer report, a leak, or an error with an empty message.

#include "FuzzScratch.h"

#include "profiler/ChromeTrace.h"
#include "profiler/ProfileReader.h"
#include "profiler/RunCompare.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace {

constexpr const char* kTarget = "profile_fuzzer";

template <typename T>
bool accept(const sextant::Expected<T>& result) {
    if (!result.ok())
        sextant::fuzz::Scratch::checkError(result.error());
    return result.ok();
}

void readRun(const std::string& db, const sextant::profiler::ProfileReader& reader, int64_t run) {
    using namespace sextant;
    accept(reader.nodes(run));
    accept(reader.deps(run));
    accept(reader.buffers(run));
    accept(reader.sramBuffers(run));
    accept(reader.sramOccupancy(run));
    accept(reader.metrics(run));
    accept(reader.taskCount(run));
    accept(reader.tasksInRange(run, 0, 0, UINT64_MAX / 2));
    if (auto tasks = reader.tasks(run); accept(tasks) && tasks->size() <= 4096)
        accept(profiler::chromeTraceJson(reader, run));
    if (auto loaded = profiler::loadRun(db, run); accept(loaded))
        (void)profiler::formatRunComparison(profiler::compareRuns(*loaded, *loaded), -1);
}

/// The input as a database file with nothing beside it: a WAL-mode input leaves a -wal and a
/// -shm, which the next input must not read.
std::string databaseFile(const uint8_t* data, size_t size) {
    const std::string db = sextant::fuzz::Scratch::write("profile.db", data, size);
    std::error_code ec;
    std::filesystem::remove(db + "-wal", ec);
    std::filesystem::remove(db + "-shm", ec);
    return db;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    sextant::fuzz::Scratch::init(kTarget);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string db = databaseFile(data, size);
    auto reader = sextant::profiler::ProfileReader::open(db);
    if (!accept(reader))
        return 0;
    if (auto runs = reader->runs(); accept(runs)) {
        accept(reader->latestRun());
        for (size_t i = 0; i < runs->size() && i < 4; ++i)
            readRun(db, *reader, (*runs)[i].id);
        readRun(db, *reader, -1);
    }
    return 0;
}
