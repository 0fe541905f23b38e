#include "SyntheticRun.h"

#include "core/backend/Target.h"
#include "profiler/RunRecord.h"

#include <algorithm>

namespace sextant::bench {

namespace {

/// A small deterministic spread of durations: 0 .. range-1 from the Task's index.
uint64_t spread(uint64_t i, uint64_t range) {
    uint64_t x = i * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return x % range;
}

const char* const kKernels[] = {"FusedConv", "Add", "TransData"};
const backend::UnitKind kUnits[] = {backend::UnitKind::Cube, backend::UnitKind::Vector,
                                    backend::UnitKind::Dma};

/// Task `i`'s phases from `start`: what the simulator records for its kind.
sim::TraceRecord timed(int i, int core, backend::UnitKind unit, uint64_t start) {
    const uint64_t u = static_cast<uint64_t>(i);
    sim::TraceRecord r;
    r.task = i;
    r.core = core;
    r.unit = unit;
    r.ready = start - std::min<uint64_t>(start, spread(u, 7));
    r.start = start;
    const uint64_t load = 4 + spread(u + 1, 12), compute = 20 + spread(u + 2, 60),
                   store = 3 + spread(u + 3, 8);
    switch (unit) {
    case backend::UnitKind::Cube: // single-buffered: load, compute, store
        r.loadEnd = r.computeStart = start + load;
        r.computeEnd = r.storeStart = r.computeStart + compute;
        r.end = r.storeStart + store;
        break;
    case backend::UnitKind::Vector: // double-buffered: streams while it computes
        r.computeStart = start + load / 2;
        r.computeEnd = r.computeStart + compute;
        r.loadEnd = r.computeEnd;
        r.end = r.storeStart = r.computeEnd + 2;
        break;
    case backend::UnitKind::Dma:
        r.end = start + load + store;
        r.loadEnd = r.computeStart = start;
        r.computeEnd = r.storeStart = r.end;
        break;
    case backend::UnitKind::Host: // computes only: no DMA
        r.loadEnd = r.computeStart = start;
        r.computeEnd = r.storeStart = r.end = start + compute;
        break;
    }
    r.computeCycles = r.computeEnd - r.computeStart;
    return r;
}

} // namespace

SyntheticRun syntheticRun(int tasks, int cores) {
    SyntheticRun run;
    backend::Program& p = run.program;
    p.modelName = "synthetic";
    p.target = backend::defaultTarget();
    p.target.name = "npu-a-synthetic";
    p.target.numCores = cores;
    p.tasks.resize(static_cast<size_t>(tasks));
    run.result.trace.resize(static_cast<size_t>(tasks));
    std::vector<uint64_t> clock(static_cast<size_t>(cores), 0);
    for (int i = 0; i < tasks; ++i) {
        const int core = i % cores;
        const int kind = (i / cores) % 3;
        backend::Task& t = p.tasks[static_cast<size_t>(i)];
        t.id = i;
        t.name = "op" + std::to_string(i / cores) + "[" + std::to_string(core) + "/" +
                 std::to_string(cores) + "]";
        t.kernel = kKernels[kind];
        t.core = core;
        t.unit = kUnits[kind];
        t.nodes = {"op" + std::to_string(i / cores)};
        if (i >= cores)
            t.deps.push_back(i - cores); // the one before it on its core
        if (i % 8 == 7 && i >= cores + 1)
            t.deps.push_back(i - cores + 1); // one of the next core's
        t.tiling.doubleBuffered = t.unit == backend::UnitKind::Vector;
        t.tiling.numTiles = t.tiling.doubleBuffered ? 4 : 1;
        t.flops = 1000 + spread(static_cast<uint64_t>(i), 5000);
        t.dmaBytes = 512 + spread(static_cast<uint64_t>(i) + 5, 8192);
        uint64_t& c = clock[static_cast<size_t>(core)];
        const sim::TraceRecord rec = timed(i, core, t.unit, c + spread(static_cast<uint64_t>(i) + 9, 5));
        c = rec.end;
        run.result.trace[static_cast<size_t>(i)] = rec;
        run.result.totalCycles = std::max(run.result.totalCycles, rec.end);
    }
    return run;
}

std::vector<profiler::TaskRow> syntheticTaskRows(int tasks, int cores) {
    const SyntheticRun run = syntheticRun(tasks, cores);
    return profiler::taskRows(run.program, run.result);
}

} // namespace sextant::bench
