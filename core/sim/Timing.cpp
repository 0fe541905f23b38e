#include "Timing.h"

#include "core/backend/MathUtil.h"
#include "core/backend/Tiling.h"

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
    case backend::UnitKind::Host: // an artifact without the figure: one host core's 16 flops a cycle
        return ceilDiv(t.flops, 16);
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

TaskTiming timeBeside(const backend::Task& task, const backend::Target& tg, const ir::Node* firstNode,
                      int dmaSharers, uint64_t earlyLoad, uint64_t lateLoad, uint64_t headComputeEnd, uint64_t headEnd,
                      uint64_t dataAt, uint64_t headLoadEnd) {
    const uint64_t gate = std::max(dataAt, headComputeEnd); // the unit and the data are free
    if (task.tiling.doubleBuffered && task.tiling.numTiles > 1) {
        TaskTiming t = timeTask(task, tg, firstNode, dmaSharers, earlyLoad + lateLoad);
        if (t.computeStart < gate) {
            const uint64_t d = gate - t.computeStart;
            t.computeStart += d;
            t.computeEnd += d;
            t.loadEnd += d;
            t.storeStart += d;
            t.duration += d;
        }
        if (t.duration < headEnd)
            t.storeStart = t.duration = headEnd;
        return t;
    }
    const int sharers = std::max(dmaSharers, 1);
    uint64_t rate = std::min<uint64_t>(tg.dmaBytesPerCycle, tg.dramBytesPerCycle / static_cast<uint64_t>(sharers));
    rate = std::max<uint64_t>(rate, 1);
    const uint64_t loads = std::min(task.dmaBytes, earlyLoad + lateLoad);
    const uint64_t late = std::min(lateLoad, loads), early = loads - late, store = task.dmaBytes - loads;
    const uint64_t latency = tg.dramLatencyCycles;
    TaskTiming t;
    t.compute = computeCycles(task, tg, firstNode);
    t.dma = ceilDiv(early, rate) + ceilDiv(late, rate) + ceilDiv(store, rate);
    // The core's load engine moves the head's bytes until headLoadEnd; a request issued before
    // then waits out its latency under them, and its bytes follow.
    t.loadEnd = early > 0 ? std::max(latency, headLoadEnd) + ceilDiv(early, rate) : headLoadEnd;
    if (late > 0)
        t.loadEnd = std::max(t.loadEnd, dataAt + latency) + ceilDiv(late, rate); // its latency under the early bytes
    t.computeStart = std::max(t.loadEnd, gate);
    t.computeEnd = t.computeStart + t.compute;
    // One store engine: its stores follow the head's.
    t.storeStart = store == 0 ? t.computeEnd : std::max(t.computeEnd, headEnd);
    const uint64_t storeTime = store == 0 ? 0 : (loads == 0 ? latency : 0) + ceilDiv(store, rate);
    t.duration = std::max<uint64_t>({1, t.storeStart + storeTime, headEnd});
    return t;
}

TaskTiming timeHost(const backend::Task& task, const backend::Target& tg, uint64_t readBytes,
                    uint64_t writtenBytes, uint64_t dataAt) {
    TaskTiming t;
    const uint64_t total = std::max<uint64_t>(1, computeCycles(task, tg, nullptr));
    const uint64_t read = std::min(backend::hostTransferCycles(readBytes), total);
    const uint64_t write = std::min(backend::hostTransferCycles(writtenBytes), total - read);
    t.compute = total - read - write;
    t.dma = read + write;
    t.loadEnd = dataAt + read;
    t.computeStart = t.loadEnd;
    t.computeEnd = t.computeStart + t.compute;
    t.storeStart = t.computeEnd;
    t.duration = t.storeStart + write;
    return t;
}

} // namespace sextant::sim
