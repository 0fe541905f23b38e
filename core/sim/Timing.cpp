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

TaskTiming timeTask(const backend::Task& task, const backend::Target& tg, const ir::Node* firstNode, int dmaSharers) {
    const int sharers = std::max(dmaSharers, 1);
    uint64_t rate = std::min<uint64_t>(tg.dmaBytesPerCycle, tg.dramBytesPerCycle / static_cast<uint64_t>(sharers));
    rate = std::max<uint64_t>(rate, 1);
    TaskTiming timing;
    timing.compute = computeCycles(task, tg, firstNode);
    timing.dma = ceilDiv(task.dmaBytes, rate);
    uint64_t body;
    const int tiles = std::max(task.tiling.numTiles, 1);
    if (task.tiling.doubleBuffered && tiles > 1)
        body = std::max(timing.compute, timing.dma) +
               std::min(timing.compute, timing.dma) / static_cast<uint64_t>(tiles);
    else
        body = timing.compute + timing.dma;
    timing.duration = std::max<uint64_t>(1, body + (task.dmaBytes > 0 ? tg.dramLatencyCycles : 0));
    return timing;
}

} // namespace sextant::sim
