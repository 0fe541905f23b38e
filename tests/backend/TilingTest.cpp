// chooseTiling and chooseSplit on one Relu over f32[n] (and the cube's figures on a small
// convolution), where every figure can be worked out by hand. On npu-a a Relu tile of e elements moves 4e bytes in and 4e out, computes ceil(e / 64)
// cycles (64 f32 lanes, one pass) and waits ceil(8e / 64) + 400 cycles for its DMA (64 B/cycle,
// 400 cycles DRAM latency); T tiles pipeline to T * max(compute, dma) + min(compute, dma).
#include "core/backend/Grouping.h"
#include "core/backend/CoreSplit.h"

#include "BackendTestUtil.h"

#include <gtest/gtest.h>

#include <memory>

using namespace sextant;
using namespace sextant::backend;
using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

/// x: f32[n] -> Relu "relu" -> y, and its one group.
struct ReluGroup {
    std::shared_ptr<ir::Graph> graph;
    Group group;
};

/// `r.graph` with `last` as its output, its types inferred, and its one group in `r.group`.
ReluGroup& withItsGroup(ReluGroup& r, ir::Node* last) {
    r.graph->setOutputs({last->output()});
    EXPECT_TRUE(r.graph->inferTypes().ok());
    Expected<std::vector<Group>> groups = formGroups(*r.graph);
    EXPECT_TRUE(groups.ok() && groups->size() == 1u);
    if (groups.ok() && !groups->empty())
        r.group = groups->front();
    return r;
}

ReluGroup reluOver(int64_t n) {
    ReluGroup r;
    r.graph = std::make_shared<ir::Graph>("relu");
    ir::Value* x = *r.graph->addInput("x", TensorType::of(DType::F32, {n}));
    return withItsGroup(r, *r.graph->addNode(OpKind::Relu, "relu", {x}, {"y"}));
}

/// x: f32[1, channels, 16, 16] -> Conv "conv" (weights [out, channels / group, k, k], `bias` or
/// not, "same" padding) -> y, and its one group.
ReluGroup convOver(int64_t channels, int64_t out, int64_t group, int64_t k, bool bias) {
    ReluGroup r;
    r.graph = std::make_shared<ir::Graph>("conv");
    ir::Value* x = *r.graph->addInput("x", TensorType::of(DType::F32, {1, channels, 16, 16}));
    const int64_t p = k / 2;
    ir::AttributeMap attrs{{"pads", std::vector<int64_t>{p, p, p, p}}, {"group", group}};
    std::vector<ir::Value*> in{x, *r.graph->addConstant("w", test::filled({out, channels / group, k, k}, 0.01f))};
    if (bias)
        in.push_back(*r.graph->addConstant("b", test::filled({out}, 0.0f)));
    return withItsGroup(r, *r.graph->addNode(OpKind::Conv, "conv", in, {"y"}, attrs));
}

Target cores(int n) {
    Target t = defaultTarget();
    t.numCores = n;
    return t;
}

} // namespace

TEST(ChooseTiling, WholeOutputInOneTileWhenItFits) {
    // 1024 elements: 4 KiB in + 4 KiB out = 8 KiB, one tile, nothing to double-buffer.
    // DMA ceil(8192 / 64) + 400 = 528, compute ceil(1024 / 64) = 16: 528 + 16 = 544 cycles.
    // Two tiles would cost 2 * (64 + 400) + 8 = 936: the latency is paid per tile.
    ReluGroup r = reluOver(1024);
    Expected<TaskCost> cost = chooseTiling(r.group, defaultTarget());
    ASSERT_TRUE(cost.ok()) << cost.error().message;
    EXPECT_EQ(cost->tiling.tileShape, (std::vector<int64_t>{1024}));
    EXPECT_EQ(cost->tiling.numTiles, 1);
    EXPECT_FALSE(cost->tiling.doubleBuffered);
    EXPECT_EQ(cost->tiling.sramBytes, 8192u);
    EXPECT_EQ(cost->estCycles, 544u);
    EXPECT_EQ(cost->tiling.estCycles, 544u);
    EXPECT_EQ(cost->computeCycles, 16u);
    EXPECT_EQ(cost->dmaBytes, 8192u);
    EXPECT_EQ(cost->flops, 1024u);
}

TEST(ChooseTiling, HalvesUntilTheDoubleBufferedTileFits) {
    // 4 KiB of SRAM. The whole output needs 8 KiB. Half of it (512 elements) is 2 + 2 KiB, but
    // two tiles are double-buffered: 8 KiB again. A quarter (256) needs 2 * (1 + 1) = 4 KiB: fits.
    // 4 tiles of DMA ceil(2048 / 64) + 400 = 432 and compute 4: 4 * 432 + 4 = 1732 cycles.
    ReluGroup r = reluOver(1024);
    Target t = defaultTarget();
    t.sramBytes = 4096;
    Expected<TaskCost> cost = chooseTiling(r.group, t);
    ASSERT_TRUE(cost.ok()) << cost.error().message;
    EXPECT_EQ(cost->tiling.tileShape, (std::vector<int64_t>{256}));
    EXPECT_EQ(cost->tiling.numTiles, 4);
    EXPECT_TRUE(cost->tiling.doubleBuffered);
    EXPECT_EQ(cost->tiling.sramBytes, 4096u);
    EXPECT_EQ(cost->estCycles, 1732u);
    EXPECT_EQ(cost->computeCycles, 16u);
    EXPECT_EQ(cost->dmaBytes, 8192u); // every byte still moves once
    // The GUI's runner-ups say why: the two larger tiles do not fit, the next smaller is slower
    // (8 tiles: 8 * (16 + 400) + 2 = 3330).
    ASSERT_EQ(cost->tiling.candidates.size(), 3u);
    EXPECT_EQ(cost->tiling.candidates[0].tileShape, (std::vector<int64_t>{1024}));
    EXPECT_EQ(cost->tiling.candidates[0].rejectedBecause, "needs 8 KiB SRAM > 4 KiB");
    EXPECT_EQ(cost->tiling.candidates[1].tileShape, (std::vector<int64_t>{512}));
    EXPECT_EQ(cost->tiling.candidates[1].rejectedBecause, "needs 8 KiB SRAM > 4 KiB");
    EXPECT_EQ(cost->tiling.candidates[2].tileShape, (std::vector<int64_t>{128}));
    EXPECT_EQ(cost->tiling.candidates[2].rejectedBecause, "est 3330 cycles >= 1732 chosen");
}

TEST(ChooseTiling, EachPieceOfTheWorkingSetIsAligned) {
    // 10 elements: 40 bytes in and 40 out, each rounded up to npu-a's 32-byte SRAM alignment.
    ReluGroup r = reluOver(10);
    Expected<TaskCost> cost = chooseTiling(r.group, defaultTarget());
    ASSERT_TRUE(cost.ok()) << cost.error().message;
    EXPECT_EQ(cost->tiling.numTiles, 1);
    EXPECT_EQ(cost->tiling.sramBytes, 128u);
    EXPECT_EQ(cost->dmaBytes, 80u); // DMA moves what there is, not the padding
}

TEST(ChooseTiling, ASliceIsCostedAlone) {
    // The first 512 elements: 4 KiB in one tile, ceil(4096 / 64) + 400 = 464 DMA + 8 compute.
    ReluGroup r = reluOver(1024);
    OutputSlice half{0, 512};
    Expected<TaskCost> cost = chooseTiling(r.group, defaultTarget(), &half);
    ASSERT_TRUE(cost.ok()) << cost.error().message;
    EXPECT_EQ(cost->tiling.tileShape, (std::vector<int64_t>{512}));
    EXPECT_EQ(cost->estCycles, 472u);
    OutputSlice outside{0, 2048};
    Expected<TaskCost> bad = chooseTiling(r.group, defaultTarget(), &outside);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("slice out of the output's range"), std::string::npos) << bad.error().message;
}

TEST(ChooseTiling, NothingFitsIsAnErrorNamingTheNode) {
    // 64 bytes of SRAM: one element in and out is 32 + 32 aligned, doubled for the 1024 tiles.
    ReluGroup r = reluOver(1024);
    Target t = defaultTarget();
    t.sramBytes = 64;
    Expected<TaskCost> cost = chooseTiling(r.group, t);
    ASSERT_FALSE(cost.ok());
    EXPECT_EQ(cost.error().kind, ErrorKind::Unsupported);
    EXPECT_EQ(cost.error().subject, "relu");
    EXPECT_EQ(cost.error().message, "node 'relu': no tiling fits in 64 bytes of SRAM (the smallest tile needs 128 bytes)");
}

TEST(ChooseSplit, WorkCheaperThanTheEventStaysWhole) {
    // Whole: 544 cycles. Each half: 472, plus 200 event latency and 100 dispatch = 772 > 544.
    ReluGroup r = reluOver(1024);
    const Target t = cores(2);
    Expected<TaskCost> whole = chooseTiling(r.group, t);
    ASSERT_TRUE(whole.ok());
    ASSERT_EQ(whole->estCycles, 544u);
    Expected<SplitPlan> plan = chooseSplit(r.group, t, *whole, 2);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->axis, -1);
    EXPECT_TRUE(plan->ranges.empty());
    EXPECT_TRUE(plan->costs.empty());
}

TEST(ChooseSplit, WorkDearerThanTheEventIsSplit) {
    // 32768 elements: 256 KiB, one tile: DMA 4096 + 400, compute 512: 5008 cycles (two tiles:
    // 2 * 2448 + 256 = 5152). A half: 2048 + 400 + 256 = 2704, + 300 = 3004 < 5008: split in two.
    ReluGroup r = reluOver(32768);
    const Target t = cores(2);
    Expected<TaskCost> whole = chooseTiling(r.group, t);
    ASSERT_TRUE(whole.ok());
    ASSERT_EQ(whole->estCycles, 5008u);
    Expected<SplitPlan> plan = chooseSplit(r.group, t, *whole, 8);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->axis, 0);
    using Range = std::pair<int64_t, int64_t>;
    EXPECT_EQ(plan->ranges, (std::vector<Range>{{0, 16384}, {16384, 32768}}));
    ASSERT_EQ(plan->costs.size(), 2u);
    EXPECT_EQ(plan->costs[0].estCycles, 2704u);
    EXPECT_EQ(plan->costs[1].estCycles, 2704u);
}

TEST(ChooseSplit, TheCheapestPartCountWinsWithinTheLimits) {
    // On 4 cores a quarter costs 1024 + 400 + 128 = 1552, + 300 = 1852 < 3004 for a half.
    ReluGroup r = reluOver(32768);
    const Target t = cores(4);
    Expected<TaskCost> whole = chooseTiling(r.group, t);
    ASSERT_TRUE(whole.ok());
    Expected<SplitPlan> four = chooseSplit(r.group, t, *whole, 8);
    ASSERT_TRUE(four.ok());
    ASSERT_EQ(four->ranges.size(), 4u);
    EXPECT_EQ(four->ranges.back(), (std::pair<int64_t, int64_t>{24576, 32768}));
    EXPECT_EQ(four->costs[0].estCycles, 1552u);
    // maxParts caps it, whatever the cores.
    Expected<SplitPlan> two = chooseSplit(r.group, t, *whole, 2);
    ASSERT_TRUE(two.ok());
    EXPECT_EQ(two->ranges.size(), 2u);
    // One core: nothing to split across.
    Expected<SplitPlan> one = chooseSplit(r.group, cores(1), *whole, 8);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one->axis, -1);
}

TEST(ChooseSplit, ASplitMustBeStrictlyCheaper) {
    // A half costs 2704 + latency + 100 against 5008 whole: at a latency of 2204 that is a tie,
    // and a tie is not worth an event; one cycle less and the split pays.
    ReluGroup r = reluOver(32768);
    Target t = cores(2);
    Expected<TaskCost> whole = chooseTiling(r.group, t);
    ASSERT_TRUE(whole.ok());
    t.eventLatencyCycles = 2204;
    Expected<SplitPlan> tie = chooseSplit(r.group, t, *whole, 2);
    ASSERT_TRUE(tie.ok());
    EXPECT_EQ(tie->axis, -1);
    t.eventLatencyCycles = 2203;
    Expected<SplitPlan> pays = chooseSplit(r.group, t, *whole, 2);
    ASSERT_TRUE(pays.ok());
    EXPECT_EQ(pays->axis, 0);
}

TEST(ReadsOwnSlice, ALayoutConversionToNhwcReadsOtherSlicesWhereExtentsAgree) {
    // BlazeFace: a blocked [1,96,8,8] map converted to NHWC [1,8,8,96] for a Reshape. Dim 2 is H
    // in the input and W in the output, both 8 long: a part computing output columns [c, c+1)
    // reads a whole input column of rows, not its own slice of them. Reading it as its own slice
    // kept the stripes on chip and gave BlazeFace's outputs at cosine 0.35.
    auto g = std::make_shared<ir::Graph>("to_nhwc");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 96, 8, 8}));
    ir::Node* relu = *g->addNode(OpKind::Relu, "relu", {x}, {"r"});
    ir::Node* toNhwc = *g->addNode(OpKind::TransData, "to_nhwc", {relu->output()}, {"n"},
                                   {{"src_format", std::string("NCHW")}, {"dst_format", std::string("NHWC")}});
    ir::Node* blocked = *g->addNode(OpKind::TransData, "to_blocked", {relu->output()}, {"b"},
                                    {{"src_format", std::string("NCHW")}, {"dst_format", std::string("NC1HWC0")}});
    g->setOutputs({toNhwc->output(), blocked->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    ASSERT_EQ(toNhwc->output()->type().dims(), (std::vector<int64_t>{1, 8, 8, 96}));
    for (int axis : {1, 2, 3})
        EXPECT_FALSE(readsOwnSlice(*toNhwc, *relu->output(), axis)) << axis;
    // Blocked channels keep the logical dims: each part copies its own slice.
    for (int axis : {1, 2, 3})
        EXPECT_TRUE(readsOwnSlice(*blocked, *relu->output(), axis)) << axis;
}

TEST(ReadsOwnSlice, NormalisationsReadTheWholeInputAlongWhatTheyReduce) {
    // A part of a normalisation that computes a slice of its output along a reduced dim needs
    // the whole input along it: it must wait for every producer part, not only its own.
    auto g = std::make_shared<ir::Graph>("norm");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {2, 8, 4, 4}));
    ir::Node* mvn = *g->addNode(OpKind::MeanVarianceNormalization, "mvn", {x}, {"m"});
    ir::Node* last = *g->addNode(OpKind::MeanVarianceNormalization, "mvn_w", {x}, {"w"});
    last->setAttr("axes", ir::Attribute(std::vector<int64_t>{-1}));
    ir::Node* lsm = *g->addNode(OpKind::LogSoftmax, "lsm", {x}, {"l"});
    lsm->setAttr("axis", ir::Attribute(int64_t{1}));
    ir::Node* relu = *g->addNode(OpKind::Relu, "relu", {x}, {"r"});
    ir::Node* lrn = *g->addNode(OpKind::LRN, "lrn", {x}, {"n"});
    lrn->setAttr("size", ir::Attribute(int64_t{3}));
    ir::Node* hardmax = *g->addNode(OpKind::Hardmax, "hardmax", {x}, {"h"});
    ir::Value* axis = *g->addConstant("axis", ir::Tensor::fromVector<int64_t>({}, {2}));
    ir::Node* cumsum = *g->addNode(OpKind::CumSum, "cumsum", {x, axis}, {"c"});
    g->setOutputs({mvn->output(), last->output(), lsm->output(), relu->output(), lrn->output(), hardmax->output(),
                   cumsum->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    // Default axes: batch, height, width; the channels are the part's own.
    EXPECT_FALSE(readsOwnSlice(*mvn, *x, 0));
    EXPECT_TRUE(readsOwnSlice(*mvn, *x, 1));
    EXPECT_FALSE(readsOwnSlice(*mvn, *x, 2));
    EXPECT_TRUE(readsOwnSlice(*last, *x, 0));
    EXPECT_FALSE(readsOwnSlice(*last, *x, 3));
    EXPECT_TRUE(readsOwnSlice(*lsm, *x, 0));
    EXPECT_FALSE(readsOwnSlice(*lsm, *x, 1));
    EXPECT_TRUE(readsOwnSlice(*relu, *x, 2));
    // LRN sums a window of the channels: a part's channels read their neighbours'.
    EXPECT_FALSE(readsOwnSlice(*lrn, *x, 1));
    EXPECT_TRUE(readsOwnSlice(*lrn, *x, 2));
    // Hardmax picks one element along its axis; CumSum sums everything before along its axis.
    EXPECT_TRUE(readsOwnSlice(*hardmax, *x, 0));
    EXPECT_FALSE(readsOwnSlice(*hardmax, *x, 3));
    EXPECT_FALSE(readsOwnSlice(*cumsum, *x, 2));
}

TEST(ChooseSplit, FewerUnitsThanCoresSplitOnePerPart) {
    // A GlobalAveragePool over 6 channels of 128 x 128 f32 (64 KiB each) reads its input once, so
    // more parts mean less DMA per part: on 8 cores each of the 6 channels is a part of its own
    // (not 3 parts of 2, the most that 2, 4 or 8 parts of 6 give when 8 is not tried as 6).
    auto g = std::make_shared<ir::Graph>("gap");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 6, 128, 128}));
    ir::Node* gap = *g->addNode(OpKind::GlobalAveragePool, "gap", {x}, {"y"});
    g->setOutputs({gap->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    Expected<std::vector<Group>> groups = formGroups(*g);
    ASSERT_TRUE(groups.ok() && groups->size() == 1u);
    const Target t = cores(8);
    Expected<TaskCost> whole = chooseTiling(groups->front(), t);
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    Expected<SplitPlan> plan = chooseSplit(groups->front(), t, *whole, 8);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(plan->axis, 1);
    ASSERT_EQ(plan->ranges.size(), 6u);
    EXPECT_EQ(plan->ranges[5], (std::pair<int64_t, int64_t>{5, 6}));
}

// A depthwise convolution over 16 x 16 positions (M = 256, 16 fractal rows) in one tile. One
// column of the cube per channel costs channels * 16 * ceil(k^2 / 16) cycles; c0 = 16 channels at
// once against a diagonal weight block, one tap per step, costs ceil(channels / 16) * 16 * k^2.
// The cube takes whichever is faster.
TEST(ChooseTiling, ADepthwiseConvolutionTakesTheFasterCubeMapping) {
    struct Case {
        int64_t channels, k;
        uint64_t cycles;
    };
    for (const Case& c : {Case{16, 3, 16 * 9},           // diagonal 144 < per channel 256
                          Case{16, 5, 16 * 25},          // diagonal 400 < per channel 512
                          Case{4, 3, 4 * 16},            // per channel 64 < diagonal 144
                          Case{48, 3, 3 * 16 * 9}}) {    // diagonal 432 < per channel 768
        ReluGroup r = convOver(c.channels, c.channels, c.channels, c.k, false);
        Expected<TaskCost> cost = chooseTiling(r.group, defaultTarget());
        ASSERT_TRUE(cost.ok()) << cost.error().message;
        ASSERT_EQ(cost->tiling.numTiles, 1) << c.channels << " channels, " << c.k << "x" << c.k;
        EXPECT_EQ(cost->computeCycles, c.cycles) << c.channels << " channels, " << c.k << "x" << c.k;
    }
}

// A pointwise convolution 16 -> 32 channels with a bias, in one tile: the cube's product is
// 16 x 2 fractals of one K step, 32 cycles; the bias epilogue is one f32 vector pass over 32 x
// 256 elements, 128 cycles. The vector unit takes each fractal as the cube finishes it, so they
// overlap but for one fractal of the shorter: 128 + ceil(32 / 32) = 129, not 32 + 128.
TEST(ChooseTiling, AConvolutionsEpilogueOverlapsItsProduct) {
    ReluGroup r = convOver(16, 32, 1, 1, true);
    Expected<TaskCost> cost = chooseTiling(r.group, defaultTarget());
    ASSERT_TRUE(cost.ok()) << cost.error().message;
    ASSERT_EQ(cost->tiling.numTiles, 1);
    EXPECT_EQ(cost->computeCycles, 129u);
    EXPECT_EQ(cost->flops, 2u * 256 * 32 * 16);
    // Without the bias there is no epilogue: the product alone.
    ReluGroup plain = convOver(16, 32, 1, 1, false);
    Expected<TaskCost> alone = chooseTiling(plain.group, defaultTarget());
    ASSERT_TRUE(alone.ok()) << alone.error().message;
    EXPECT_EQ(alone->computeCycles, 32u);
}

// Priced as the simulator times a stream, the DRAM latency counts once per Task: the same 4
// tiles of the 1024-element Relu take max(16, 128) + 16 / 4 + 400 = 532 cycles where the latency
// per tile gives 1732; and with SRAM to spare, the tile search then prefers more, smaller tiles
// (the overlap grows and the latency does not).
TEST(ChooseTiling, PricedWithTheLatencyOncePerStreamMoreTilesPay) {
    const Target t = defaultTarget();
    EXPECT_EQ(pipelinedCycles(4, 16, 8192, t, TilePricing::LatencyOnce), 532u);
    EXPECT_EQ(pipelinedCycles(4, 16, 8192, t, TilePricing::LatencyPerTile), 1732u);
    EXPECT_EQ(pipelinedCycles(1, 16, 8192, t, TilePricing::LatencyOnce),
              pipelinedCycles(1, 16, 8192, t, TilePricing::LatencyPerTile));
    EXPECT_EQ(pipelinedCycles(4, 16, 0, t, TilePricing::LatencyOnce), 16u); // nothing to move, no latency
    ReluGroup r = reluOver(1 << 16);
    Expected<TaskCost> perTile = chooseTiling(r.group, t);
    Expected<TaskCost> once = chooseTiling(r.group, t, nullptr, TileOptions{TilePricing::LatencyOnce});
    ASSERT_TRUE(perTile.ok() && once.ok());
    EXPECT_GT(once->tiling.numTiles, perTile->tiling.numTiles);
    EXPECT_LT(once->estCycles, perTile->estCycles);
    EXPECT_EQ(once->dmaBytes, perTile->dmaBytes);
}

// A MaxPool of int8 values (as quantized-passthrough leaves it) only compares bytes: the vector
// unit takes vector_lanes_int8 (256 on npu-a) of them per cycle, four times its 64 f32 lanes; an
// int8 matrix product reduces cube_k_int8 (32) deep per cycle, twice the f16 cube's 16.
TEST(ChooseTiling, Int8WorkRunsAtTheTargetsInt8Rates) {
    auto pool = [](DType dt) {
        ReluGroup r;
        r.graph = std::make_shared<ir::Graph>("pool");
        ir::Value* x = *r.graph->addInput("x", TensorType::of(dt, {1, 16, 32, 32}));
        ir::AttributeMap attrs{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
        return withItsGroup(r, *r.graph->addNode(OpKind::MaxPool, "pool", {x}, {"y"}, attrs));
    };
    ReluGroup f = pool(DType::F32), q = pool(DType::U8);
    Expected<TaskCost> fc = chooseTiling(f.group, defaultTarget()), qc = chooseTiling(q.group, defaultTarget());
    ASSERT_TRUE(fc.ok() && qc.ok());
    ASSERT_EQ(fc->tiling.numTiles, qc->tiling.numTiles);
    EXPECT_EQ(fc->computeCycles, 4 * qc->computeCycles);
    Target slow = defaultTarget();
    slow.vectorLanesInt8 = slow.vectorLanesF32;
    Expected<TaskCost> same = chooseTiling(q.group, slow);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same->computeCycles, fc->computeCycles) << "the rate comes from the target";

    // x u8 [64, 64] @ w i8 [64, 64]: 4 x 4 fractals, 2 K steps of 32 (4 of 16 in f16).
    auto gemm = [](bool int8) {
        ReluGroup r;
        r.graph = std::make_shared<ir::Graph>("gemm");
        ir::Value* x = *r.graph->addInput("x", TensorType::of(int8 ? DType::U8 : DType::F32, {64, 64}));
        if (!int8)
            return withItsGroup(r, *r.graph->addNode(OpKind::MatMul, "mm", {x, *r.graph->addConstant("w", test::filled({64, 64}, 0.01f))}, {"y"}));
        ir::AttributeMap attrs{{"x_scale", 0.1}, {"w_scale", std::vector<double>{0.1}}, {"y_scale", 0.2}};
        ir::Value* w = *r.graph->addConstant("w", ir::Tensor(DType::I8, {64, 64}));
        return withItsGroup(r, *r.graph->addNode(OpKind::Int8Gemm, "mm", {x, w}, {"y"}, attrs));
    };
    ReluGroup fg = gemm(false), qg = gemm(true);
    Expected<TaskCost> fgc = chooseTiling(fg.group, defaultTarget()), qgc = chooseTiling(qg.group, defaultTarget());
    ASSERT_TRUE(fgc.ok() && qgc.ok()) << (fgc.ok() ? qgc.error().message : fgc.error().message);
    ASSERT_EQ(fgc->tiling.numTiles, 1);
    ASSERT_EQ(qgc->tiling.numTiles, 1);
    EXPECT_EQ(fgc->computeCycles, 16u * 4);
    // The product, 16 x 2 = 32 cycles, overlapped with the requantisation epilogue: 4096 f32
    // elements in 64 lanes, 64 cycles, + one fractal of the shorter.
    EXPECT_EQ(qgc->computeCycles, 64u + 2);
}

// A dense convolution whose weights do not fit beside its input: taken whole, its input channels
// make every tile of output channels load the whole input window again. In chunks of input
// channels (each chunk's input and weight rows loaded while the cube sums the one before into
// an f32 accumulator), every byte of input and weights is loaded about once: fewer bytes and
// fewer cycles. The accumulator's slot holds the tile's f32 sums, 4 bytes per element however
// the output is stored.
TEST(ChooseTiling, ADeepConvolutionTakesItsInputChannelsInChunks) {
    const Target t = defaultTarget();
    ReluGroup r = convOver(256, 256, 1, 3, false);
    Expected<TaskCost> whole = chooseTiling(r.group, t, nullptr, TileOptions{TilePricing::LatencyPerTile, false});
    Expected<TaskCost> chunked = chooseTiling(r.group, t);
    ASSERT_TRUE(whole.ok() && chunked.ok());
    EXPECT_EQ(whole->tiling.reduceChunks, 1);
    EXPECT_EQ(whole->accumulatorTile, 0u);
    ASSERT_GT(chunked->tiling.reduceChunks, 1);
    EXPECT_EQ(chunked->tiling.numTiles % chunked->tiling.reduceChunks, 0);
    EXPECT_LT(chunked->dmaBytes, whole->dmaBytes);
    EXPECT_LT(chunked->estCycles, whole->estCycles);
    EXPECT_EQ(chunked->flops, whole->flops); // the same products, summed in chunks
    int64_t tileElems = 1;
    for (int64_t d : chunked->tiling.tileShape)
        tileElems *= d;
    EXPECT_EQ(chunked->accumulatorTile, static_cast<uint64_t>(tileElems) * 4u);
    EXPECT_LE(chunked->tiling.sramBytes, t.sramBytes);
    // What the bytes are: each chunk's input window and weight rows, once per output tile, and
    // each output tile stored once.
    const uint64_t outTiles = static_cast<uint64_t>(chunked->tiling.numTiles / chunked->tiling.reduceChunks);
    uint64_t in = 0;
    for (const auto& piece : chunked->inputTile)
        in += piece.second;
    EXPECT_EQ(chunked->dmaBytes, static_cast<uint64_t>(chunked->tiling.numTiles) * (in + chunked->weightTile) +
                                     outTiles * chunked->outTile);
}

// Only a dense product's reduction is chunked: a convolution of fewer than two C0 blocks of
// input channels, and a depthwise one (each output reads one channel), keep their channels whole.
TEST(ChooseTiling, ShallowAndDepthwiseConvolutionsAreNotChunked) {
    for (ReluGroup r : {convOver(16, 256, 1, 3, false), convOver(256, 256, 256, 3, false)}) {
        Expected<TaskCost> c = chooseTiling(r.group, defaultTarget());
        ASSERT_TRUE(c.ok()) << c.error().message;
        EXPECT_EQ(c->tiling.reduceChunks, 1);
        EXPECT_EQ(c->accumulatorTile, 0u);
    }
}

// The tile search's answers are shared by the programs lower() builds for one graph: a cached
// answer is the one the search gives, and other options or another slice are another entry.
TEST(ChooseTiling, ACachedAnswerIsTheSearchsAnswer) {
    const Target t = defaultTarget();
    ReluGroup r = convOver(256, 256, 1, 3, false);
    const OutputSlice slice{1, 64};
    TileCache cache;
    TileOptions cached;
    cached.cache = &cache;
    auto same = [](const TaskCost& a, const TaskCost& b) {
        EXPECT_EQ(a.tiling.tileShape, b.tiling.tileShape);
        EXPECT_EQ(a.tiling.numTiles, b.tiling.numTiles);
        EXPECT_EQ(a.tiling.reduceChunks, b.tiling.reduceChunks);
        EXPECT_EQ(a.tiling.sramBytes, b.tiling.sramBytes);
        EXPECT_EQ(a.estCycles, b.estCycles);
        EXPECT_EQ(a.dmaBytes, b.dmaBytes);
        EXPECT_EQ(a.accumulatorTile, b.accumulatorTile);
        EXPECT_EQ(a.tiling.candidates.size(), b.tiling.candidates.size());
    };
    Expected<TaskCost> searched = chooseTiling(r.group, t, &slice);
    Expected<TaskCost> first = chooseTiling(r.group, t, &slice, cached);
    Expected<TaskCost> again = chooseTiling(r.group, t, &slice, cached);
    ASSERT_TRUE(searched.ok() && first.ok() && again.ok());
    EXPECT_EQ(cache.size(), 1u);
    same(*first, *searched);
    same(*again, *searched);

    TileOptions whole = cached;
    whole.chunkReductions = false;
    Expected<TaskCost> wholeCached = chooseTiling(r.group, t, &slice, whole);
    Expected<TaskCost> wholeSearched = chooseTiling(r.group, t, &slice, TileOptions{TilePricing::LatencyPerTile, false});
    ASSERT_TRUE(wholeCached.ok() && wholeSearched.ok());
    same(*wholeCached, *wholeSearched);
    Expected<TaskCost> unsliced = chooseTiling(r.group, t, nullptr, cached);
    ASSERT_TRUE(unsliced.ok());
    EXPECT_EQ(cache.size(), 3u);
    EXPECT_NE(unsliced->estCycles, first->estCycles);
}
