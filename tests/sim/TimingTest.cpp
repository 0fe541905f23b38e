// The simulator's timing model on single Tasks whose cycles can be worked out by hand, on the
// default target (npu-a: 64 B/cycle DMA, 512 B/cycle DRAM, 400 cycles of DRAM latency, a
// 16x16x16 cube, 64 f32 / 128 f16 vector lanes).
#include "core/sim/Timing.h"

#include "core/ir/Parser.h"

#include <gtest/gtest.h>

namespace sextant::sim {
namespace {

std::unique_ptr<ir::Graph> graphWithRelu(const char* precision) {
    std::string text = "graph @g(%x: f32[1,64]) -> (%y: f32[1,64]) {\n"
                       "  %y: f32[1,64] = Relu(%x) {precision = \"" + std::string(precision) + "\"} @relu\n"
                       "  return %y\n}\n";
    auto g = ir::parseGraph(text);
    EXPECT_TRUE(g.ok()) << g.error().message;
    return g.ok() ? std::move(g).value() : nullptr;
}

backend::Task task(backend::UnitKind unit, uint64_t flops, uint64_t dmaBytes, int tiles, bool doubleBuffered) {
    backend::Task t;
    t.unit = unit;
    t.nodes = {"relu"};
    t.flops = flops;
    t.dmaBytes = dmaBytes;
    t.tiling.numTiles = tiles;
    t.tiling.doubleBuffered = doubleBuffered;
    return t;
}

TEST(Timing, ComputeAndDmaAddUpWithoutDoubleBufferingPlusDramLatency) {
    const backend::Target target = backend::defaultTarget();
    auto g = graphWithRelu("f32");
    ASSERT_TRUE(g);
    // 6400 f32 flops over 64 lanes = 100 cycles; 6400 bytes at 64 B/cycle = 100 cycles; + 400.
    TaskTiming t = timeTask(task(backend::UnitKind::Vector, 6400, 6400, 4, false), target, g->findNode("relu"), 1, ~0ull);
    EXPECT_EQ(t.compute, 100u);
    EXPECT_EQ(t.dma, 100u);
    EXPECT_EQ(t.duration, 600u);
}

TEST(Timing, DoubleBufferingHidesTheShorterStreamButOneTile) {
    const backend::Target target = backend::defaultTarget();
    auto g = graphWithRelu("f32");
    ASSERT_TRUE(g);
    // compute 100, DMA 200 over 4 tiles: 200 + 100/4 + 400.
    TaskTiming t = timeTask(task(backend::UnitKind::Vector, 6400, 12800, 4, true), target, g->findNode("relu"), 1, ~0ull);
    EXPECT_EQ(t.duration, 200u + 25u + 400u);
    // One tile has nothing to overlap with.
    EXPECT_EQ(timeTask(task(backend::UnitKind::Vector, 6400, 12800, 1, true), target, g->findNode("relu"), 1, ~0ull).duration, 700u);
}

TEST(Timing, ATaskBesideTheOneBeforeItLoadsDuringThatOnesComputeAndComputesAfterIt) {
    const backend::Target target = backend::defaultTarget();
    auto g = graphWithRelu("f32");
    ASSERT_TRUE(g);
    // compute 100; 6400 bytes loaded (100 cycles + 400 latency) while the head computes until 700
    // and ends at 900: the unit starts at 700, and the Task ends with the head at 900.
    const backend::Task t = task(backend::UnitKind::Vector, 6400, 6400, 1, false);
    TaskTiming beside = timeBeside(t, target, g->findNode("relu"), 1, 6400, 0, 700, 900, 0);
    EXPECT_EQ(beside.loadEnd, 500u);
    EXPECT_EQ(beside.computeStart, 700u);
    EXPECT_EQ(beside.computeEnd, 800u);
    EXPECT_EQ(beside.duration, 900u);
    // Reading what the head computed, it computes only once the head ended.
    TaskTiming reads = timeBeside(t, target, g->findNode("relu"), 1, 6400, 0, 700, 900, 900);
    EXPECT_EQ(reads.computeStart, 900u);
    EXPECT_EQ(reads.duration, 1000u);
    // Loading what the head stores: those bytes move after the head ended, with their own latency.
    TaskTiming late = timeBeside(t, target, g->findNode("relu"), 1, 3200, 3200, 700, 900, 900);
    EXPECT_EQ(late.loadEnd, 900u + 400u + 50u);
    EXPECT_EQ(late.computeStart, late.loadEnd);
    EXPECT_EQ(late.duration, late.loadEnd + 100u);
    EXPECT_EQ(late.dma, 100u);
    // With nothing to wait for it is a Task on its own: load, compute, no later than timeTask.
    TaskTiming alone = timeBeside(t, target, g->findNode("relu"), 1, 6400, 0, 0, 0, 0);
    EXPECT_EQ(alone.duration, timeTask(t, target, g->findNode("relu"), 1, ~0ull).duration);
    // Started before its cross-core data arrives at 2000: its weights (3200 bytes) load from the
    // start, the rest after 2000 with a latency of its own, and the unit computes after that.
    TaskTiming waits = timeBeside(t, target, g->findNode("relu"), 1, 3200, 3200, 0, 0, 2000);
    EXPECT_EQ(waits.loadEnd, 2000u + 400u + 50u);
    EXPECT_EQ(waits.computeStart, waits.loadEnd);
    EXPECT_EQ(waits.duration, waits.loadEnd + 100u);
}

TEST(Timing, ARequestQueuedBehindTheHeadsLoadsHidesItsLatencyUnderThem) {
    const backend::Target target = backend::defaultTarget();
    auto g = graphWithRelu("f32");
    ASSERT_TRUE(g);
    // compute 100; 6400 bytes (100 cycles) requested while the head's loads hold the engine until
    // 600: the latency (400) passes under them and the bytes follow, done at 700, not 1000.
    const backend::Task t = task(backend::UnitKind::Vector, 6400, 6400, 1, false);
    TaskTiming queued = timeBeside(t, target, g->findNode("relu"), 1, 6400, 0, 800, 900, 0, 600);
    EXPECT_EQ(queued.loadEnd, 700u);
    EXPECT_EQ(queued.computeStart, 800u);
    EXPECT_EQ(queued.duration, 900u);
    // The head's loads done before the latency passed: the latency sets when the bytes come.
    EXPECT_EQ(timeBeside(t, target, g->findNode("relu"), 1, 6400, 0, 800, 900, 0, 150).loadEnd, 500u);
    // Nothing to load early: its late bytes still follow the head's.
    TaskTiming late = timeBeside(t, target, g->findNode("relu"), 1, 0, 6400, 0, 0, 0, 600);
    EXPECT_EQ(late.loadEnd, 700u);
}

TEST(Timing, TasksStreamingAtOnceShareDramBandwidth) {
    const backend::Target target = backend::defaultTarget();
    auto g = graphWithRelu("f32");
    ASSERT_TRUE(g);
    // Up to 8 sharers each still get the engine's 64 B/cycle (512 / 8); 16 get 32 B/cycle.
    EXPECT_EQ(timeTask(task(backend::UnitKind::Dma, 0, 6400, 1, false), target, g->findNode("relu"), 8, ~0ull).dma, 100u);
    EXPECT_EQ(timeTask(task(backend::UnitKind::Dma, 0, 6400, 1, false), target, g->findNode("relu"), 16, ~0ull).dma, 200u);
}

TEST(Timing, F16VectorOpsUseTheWiderLanesAndCubeOpsTheMacs) {
    const backend::Target target = backend::defaultTarget();
    auto f16 = graphWithRelu("f16");
    ASSERT_TRUE(f16);
    EXPECT_EQ(computeCycles(task(backend::UnitKind::Vector, 6400, 0, 1, false), target, f16->findNode("relu")), 50u);
    // 2 * 16 * 16 * 16 = 8192 flops a cycle on the cube; a partial block still takes a cycle.
    EXPECT_EQ(computeCycles(task(backend::UnitKind::Cube, 8192 * 3 + 1, 0, 1, false), target, f16->findNode("relu")), 4u);
    // The cost model's own figure wins.
    backend::Task modelled = task(backend::UnitKind::Cube, 8192, 0, 1, false);
    modelled.computeCycles = 77;
    EXPECT_EQ(computeCycles(modelled, target, f16->findNode("relu")), 77u);
}

TEST(Timing, EveryTaskTakesAtLeastOneCycle) {
    const backend::Target target = backend::defaultTarget();
    auto g = graphWithRelu("f32");
    ASSERT_TRUE(g);
    EXPECT_EQ(timeTask(task(backend::UnitKind::Dma, 0, 0, 1, false), target, g->findNode("relu"), 0, ~0ull).duration, 1u);
}

} // namespace
} // namespace sextant::sim
