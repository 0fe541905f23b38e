// Compile/<shape>/N: the whole of `sextant-cli compile -o DIR` on a generated graph of N nodes —
// the O2 pipeline, lowering (tiling, core split, events, SRAM and DRAM plans, the checks) and
// writing the artifact — for issue 19 item 1 (time(20k) <= 5 x time(5k), peak RSS at 20k
// <= 1.5 GB).
//
//   residual   stages of residual CNN blocks only (Conv, BatchNormalization, Relu, Conv,
//              BatchNormalization, Add, Relu): a long chain, every node split across the cores
//   mixed      the same with attention blocks (bench/SyntheticGraph.h's default mix)
//
// Counters: the program's Tasks and events, and peak_rss_MB, the process's peak RSS during the
// iterations. That figure belongs to one benchmark only when it runs in a process of its own
// (bench/compile-scaling.sh does that).

#include "ProcStatus.h"
#include "SyntheticGraph.h"

#include "core/backend/Artifact.h"
#include "core/runtime/Compiler.h"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace sextant;

namespace {

void compileSynthetic(benchmark::State& state, bool attention) {
    std::string error;
    const ir::Graph* g = bench::scaleGraph(state.range(0), attention, error);
    if (!g) {
        state.SkipWithError(("generator failed: " + error).c_str());
        return;
    }
    const fs::path dir = fs::temp_directory_path() / ("sextant-bench-compile-" + std::to_string(getpid()));
    runtime::CompileOptions options;
    size_t tasks = 0, events = 0;
    bench::resetPeakRss();
    for (auto _ : state) {
        auto r = runtime::compileGraph(*g, options);
        if (!r.ok()) {
            state.SkipWithError(("compile failed: " + r.error().message).c_str());
            return;
        }
        if (Status w = backend::writeArtifact(r.value().program, dir.string()); !w.ok()) {
            state.SkipWithError(("writing the artifact failed: " + w.error().message).c_str());
            return;
        }
        tasks = r.value().program.tasks.size();
        events = r.value().program.events.size();
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    state.counters["nodes"] = static_cast<double>(g->numNodes());
    state.counters["tasks"] = static_cast<double>(tasks);
    state.counters["events"] = static_cast<double>(events);
    state.counters["peak_rss_MB"] = static_cast<double>(bench::procStatusKb("VmHWM")) * 1024.0 / 1e6;
}

void registerCompile() {
    for (const bool attention : {false, true})
        benchmark::RegisterBenchmark(attention ? "Compile/mixed" : "Compile/residual", compileSynthetic, attention)
            ->Arg(1250)
            ->Arg(5000)
            ->Arg(20000)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->Iterations(1);
}

const bool registered = (registerCompile(), true);

} // namespace
