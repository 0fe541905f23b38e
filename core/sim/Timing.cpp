#include "Timing.h"

#include "core/backend/MathUtil.h"

#include <algorithm>

namespace sextant::sim {

using backend::ceilDiv;

uint64_t computeCycles(const backend::Task& t, const backend::Target& tg, const ir::Node* node) {
    if (t.computeCycles > 0) // the cost model's figure for its tiles
        return t.computeCycles;
    switch (t.unit) {
    case backend::UnitKind::Cube:
        return ceilDiv(t.flops, 2ull * static_cast<uint64_t>(tg.cubeM) * tg.cubeN * tg.cubeK);
    case backend::UnitKind::Vector: {
        // An f16 vector op fills the wider f16 lanes.
        const bool f16 = node && node->precision() == ir::Precision::F16;
        return ceilDiv(t.flops, static_cast<uint64_t>(std::max(f16 ? tg.vectorLanesF16 : tg.vectorLanesF32, 1)));
    }
    case backend::UnitKind::Dma:
        return 0;
    }
    return 0;
}

TaskTiming timeTask(const backend::Task& task, const backend::Target& tg, const ir::Node* firstNode, int dmaSharers,
                    uint64_t loadBytes) {
    const int sharers = std::max(dmaSharers, 1);
    uint64_t rate = std::min<uint64_t>(tg.dmaBytesPerCycle, tg.dramBytesPerCycle / static_cast<uint64_t>(sharers));
    rate = std::max<uint64_t>(rate, 1);
    TaskTiming timing;
    timing.compute = computeCycles(task, tg, firstNode);
    timing.dma = ceilDiv(task.dmaBytes, rate);
    const uint64_t latency = task.dmaBytes > 0 ? tg.dramLatencyCycles : 0;
    const uint64_t tiles = static_cast<uint64_t>(std::max(task.tiling.numTiles, 1));
    if (task.tiling.doubleBuffered && tiles > 1) {
        const uint64_t hidden = std::min(timing.compute, timing.dma) / tiles;
        timing.duration = std::max<uint64_t>(1, std::max(timing.compute, timing.dma) + hidden + latency);
        timing.loadEnd = latency + timing.dma;
        timing.computeEnd = timing.duration;
        timing.computeStart = timing.duration - std::min(timing.duration, timing.compute + hidden);
        timing.storeStart = timing.duration;
        return timing;
    }
    const uint64_t load = task.dmaBytes == 0 ? 0 : timing.dma * std::min(loadBytes, task.dmaBytes) / task.dmaBytes;
    timing.duration = std::max<uint64_t>(1, timing.compute + timing.dma + latency);
    timing.loadEnd = latency + load;
    timing.computeStart = timing.loadEnd;
    timing.computeEnd = timing.computeStart + timing.compute;
    timing.storeStart = timing.computeEnd;
    return timing;
}

} // namespace sextant::sim
