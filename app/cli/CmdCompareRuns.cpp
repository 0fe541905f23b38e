// sextant-cli compare-runs A.db[:RUN] [B.db[:RUN]] [--tasks N | --all]
// Two simulated runs side by side: latency, busy cycles, memory, and the Tasks whose time changed.
#include "Commands.h"

#include "profiler/ProfileReader.h"
#include "profiler/RunCompare.h"

#include <climits>
#include <iostream>
#include <string>

namespace sextant::cli {

namespace {

const char* kCompareRunsUsage =
    "usage: sextant-cli compare-runs A.db[:RUN] [B.db[:RUN]] [--tasks N | --all]\n"
    "\n"
    "Compares two simulated runs stored in profile databases (written by 'run --profile', which\n"
    "appends, or saved from the GUI): latency, Tasks, busy cycles per unit, cores used, DRAM peak and\n"
    "lower bound, A -> B; then the Tasks whose time changed most, matched by name (a\n"
    "rewrite that formed other groups shows Tasks present in one run only). RUN is a run id\n"
    "(default: the newest). With one database and no RUN, compares its two newest runs.\n"
    "  --tasks N      list the N Tasks whose time changed most (default 20)\n"
    "  --all          list every Task\n";

} // namespace

int cmdCompareRuns(Args args) {
    std::vector<std::string> specs;
    int limit = 20;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            std::cout << kCompareRunsUsage;
            return 0;
        }
        if (a == "--all") {
            limit = -1;
        } else if (a == "--tasks") {
            if (i + 1 >= args.size())
                return fail("compare-runs: --tasks needs a count");
            const std::string v = args[++i];
            const std::optional<int64_t> n = parseWholeNumber(v);
            if (!n || *n > INT32_MAX)
                return fail("compare-runs: --tasks '" + v + "' is not a count (0, 1, 2, ...)");
            limit = static_cast<int>(*n);
        } else if (!a.empty() && a[0] == '-') {
            return fail("compare-runs: unknown option '" + a + "' (see 'sextant-cli compare-runs --help')");
        } else {
            specs.push_back(a);
        }
    }
    if (specs.empty() || specs.size() > 2)
        return fail("compare-runs: give one or two profile databases (usage: sextant-cli compare-runs A.db[:RUN] "
                    "[B.db[:RUN]])");

    std::pair<std::string, int64_t> a = profiler::parseRunSpec(specs[0]);
    std::pair<std::string, int64_t> b;
    if (specs.size() == 2) {
        b = profiler::parseRunSpec(specs[1]);
    } else {
        // One database: its two newest runs, older first.
        if (a.second >= 0)
            return fail("compare-runs: with one database give no run id, or give a second run ('" + a.first +
                        ":N')");
        auto reader = profiler::ProfileReader::open(a.first);
        if (!reader.ok())
            return fail(reader.error().message);
        auto runs = reader->runs();
        if (!runs.ok())
            return fail(runs.error().message);
        if (runs->size() < 2)
            return fail("compare-runs: " + a.first + " holds " + std::to_string(runs->size()) +
                        (runs->size() == 1 ? " run" : " runs") +
                        "; give a second database (or append a run with 'sextant-cli run --profile')");
        b = {a.first, runs->back().id};
        a.second = (*runs)[runs->size() - 2].id;
    }
    auto runA = profiler::loadRun(a.first, a.second);
    if (!runA.ok())
        return fail(runA.error().message);
    auto runB = profiler::loadRun(b.first, b.second);
    if (!runB.ok())
        return fail(runB.error().message);
    std::cout << profiler::formatRunComparison(profiler::compareRuns(std::move(runA).value(), std::move(runB).value()),
                                               limit);
    return 0;
}

} // namespace sextant::cli
