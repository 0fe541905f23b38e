// sextant-synthetic-profile DB [TASKS] [CORES]: appends a synthetic run of TASKS Tasks (default
// 1,000,000) on CORES cores (default 8) to the profile database DB through the same writer
// `sextant-cli run --profile` uses (bench/SyntheticRun.h says what the run looks like). For the
// timeline and export-trace figures in BENCHMARKS.md and the Timeline screenshots in docs/.
#include "../SyntheticRun.h"

#include "profiler/ProfileDb.h"

#include <charconv>
#include <cstdio>
#include <string>

namespace {

bool parseCount(const char* text, int lo, int hi, int& out) {
    const std::string s = text;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && out >= lo && out <= hi;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 4) {
        std::fprintf(stderr, "usage: sextant-synthetic-profile DB [TASKS] [CORES]\n");
        return 2;
    }
    int tasks = 1000000, cores = 8;
    if (argc > 2 && !parseCount(argv[2], 1, 100000000, tasks)) {
        std::fprintf(stderr, "error: TASKS '%s' is not a count of 1 to 100000000\n", argv[2]);
        return 2;
    }
    if (argc > 3 && !parseCount(argv[3], 1, 1024, cores)) {
        std::fprintf(stderr, "error: CORES '%s' is not a count of 1 to 1024\n", argv[3]);
        return 2;
    }
    const sextant::bench::SyntheticRun run = sextant::bench::syntheticRun(tasks, cores);
    sextant::profiler::RunInfo info;
    info.model = "synthetic-" + std::to_string(tasks);
    info.pipeline = "synthetic";
    info.created = 1700000000; // reproducible
    const auto id = sextant::profiler::writeProfile(argv[1], run.program, run.result, info);
    if (!id.ok()) {
        std::fprintf(stderr, "error: %s\n", id.error().message.c_str());
        return 2;
    }
    std::printf("wrote run %lld (%d Tasks on %d cores, %llu cycles) to %s\n",
                static_cast<long long>(*id), tasks, cores,
                static_cast<unsigned long long>(run.result.totalCycles), argv[1]);
    return 0;
}
