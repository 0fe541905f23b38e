#include "core/backend/EventAllocator.h"
#include "core/backend/Lower.h"
#include "core/backend/MemoryPlanner.h"
#include "core/sim/Simulator.h"

#include "BackendTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

using namespace sextant;
using namespace sextant::backend;
using ir::DType;
using ir::OpKind;
using ir::Tensor;
using ir::TensorType;

namespace {

/// Lowering options for the tests of cross-core events: no aligned-split candidate, whose
/// program for these small graphs keeps each part on its producer's core and needs no events.
LowerOptions withEvents() {
    LowerOptions o;
    o.sram.tryAlignedSplits = false;
    return o;
}

using test::filled;

/// npu-a with one core: no group is split across cores, so a test of tiling sees the whole op.
Target oneCore() {
    Target t = defaultTarget();
    t.numCores = 1;
    return t;
}

/// x -> conv+relu -> two parallel conv branches -> add -> global pool -> flatten -> gemm -> softmax.
std::shared_ptr<ir::Graph> residualGraph(int64_t channels = 8, int64_t hw = 16) {
    auto g = std::make_shared<ir::Graph>("residual");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 3, hw, hw}));
    ir::AttributeMap conv{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    ir::Value* w0 = *g->addConstant("w0", filled({channels, 3, 3, 3}, 0.01f));
    ir::Value* b0 = *g->addConstant("b0", filled({channels}, 0.0f));
    ir::Node* c0 = *g->addNode(OpKind::Conv, "conv0", {x, w0, b0}, {"c0"}, conv);
    ir::Node* r0 = *g->addNode(OpKind::Relu, "relu0", {c0->output()}, {"r0"});
    ir::Value* wa = *g->addConstant("wa", filled({channels, channels, 3, 3}, 0.02f));
    ir::Value* wb = *g->addConstant("wb", filled({channels, channels, 3, 3}, -0.01f));
    ir::Node* ca = *g->addNode(OpKind::Conv, "convA", {r0->output(), wa}, {"ca"}, conv);
    ir::Node* cb = *g->addNode(OpKind::Conv, "convB", {r0->output(), wb}, {"cb"}, conv);
    ir::Node* add = *g->addNode(OpKind::Add, "add", {ca->output(), cb->output()}, {"sum"});
    ir::Node* skip = *g->addNode(OpKind::Add, "skip", {add->output(), r0->output()}, {"res"});
    ir::Node* gap = *g->addNode(OpKind::GlobalAveragePool, "gap", {skip->output()}, {"pooled"});
    ir::Node* flat = *g->addNode(OpKind::Flatten, "flatten", {gap->output()}, {"flat"}, {{"axis", int64_t{1}}});
    ir::Value* wf = *g->addConstant("wf", filled({channels, 10}, 0.05f));
    ir::Value* bf = *g->addConstant("bf", filled({10}, 0.0f));
    ir::Node* fc = *g->addNode(OpKind::Gemm, "fc", {flat->output(), wf, bf}, {"logits"});
    ir::Node* sm = *g->addNode(OpKind::Softmax, "softmax", {fc->output()}, {"prob"}, {{"axis", int64_t{1}}});
    g->setOutputs({sm->output()});
    Status s = g->inferTypes();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return g;
}

/// `width` independent conv chains joined by a Concat: enough parallel work for several cores.
std::shared_ptr<ir::Graph> wideGraph(int width) {
    auto g = std::make_shared<ir::Graph>("wide");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 32, 32}));
    std::vector<ir::Value*> heads;
    for (int i = 0; i < width; ++i) {
        std::string s = std::to_string(i);
        ir::Value* w = *g->addConstant("w" + s, filled({16, 16, 3, 3}, 0.01f * i));
        ir::Node* c = *g->addNode(OpKind::Conv, "conv" + s, {x, w}, {"c" + s},
                                  {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        ir::Node* r = *g->addNode(OpKind::Relu, "relu" + s, {c->output()}, {"r" + s});
        heads.push_back(r->output());
    }
    ir::Node* cat = *g->addNode(OpKind::Concat, "concat", heads, {"y"}, {{"axis", int64_t{1}}});
    g->setOutputs({cat->output()});
    Status s = g->inferTypes();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return g;
}

/// SqueezeNet's fire modules in a chain: a 1x1 squeeze conv feeding a 1x1 and a 3x3 expand conv
/// side by side, joined by a Concat. Branches that split and join again, each module waiting on
/// the one before.
std::shared_ptr<ir::Graph> fireGraph(int modules) {
    auto g = std::make_shared<ir::Graph>("fire");
    ir::Value* cur = *g->addInput("x", TensorType::of(DType::F32, {1, 32, 16, 16}));
    auto conv = [&](const std::string& name, ir::Value* in, int64_t outC, int64_t inC, int64_t k) {
        ir::Value* w = *g->addConstant(name + "_w", filled({outC, inC, k, k}, 0.01f));
        const int64_t pad = k / 2;
        ir::Node* c = *g->addNode(OpKind::Conv, name, {in, w}, {name + "_y"},
                                  {{"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
        return (*g->addNode(OpKind::Relu, name + "_relu", {c->output()}, {name + "_r"}))->output();
    };
    for (int i = 0; i < modules; ++i) {
        const std::string f = "fire" + std::to_string(i);
        ir::Value* sq = conv(f + "_squeeze", cur, 8, 32, 1);
        ir::Value* e1 = conv(f + "_expand1", sq, 16, 8, 1);
        ir::Value* e3 = conv(f + "_expand3", sq, 16, 8, 3);
        cur = (*g->addNode(OpKind::Concat, f + "_concat", {e1, e3}, {f + "_y"},
                           {{"axis", int64_t{1}}}))->output();
    }
    g->setOutputs({cur});
    Status s = g->inferTypes();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return g;
}

void expectValidProgram(const Program& p, const ir::Graph& g) {
    // Every node runs in one Task, or in the parts of one split group, whose slices of the output
    // cover the sliced dim exactly once.
    std::map<std::string, std::vector<const Task*>> byNode;
    for (const Task& t : p.tasks)
        for (const std::string& n : t.nodes)
            byNode[n].push_back(&t);
    EXPECT_EQ(byNode.size(), g.numNodes());
    for (const auto& [node, tasks] : byNode) {
        if (tasks.size() == 1) {
            EXPECT_EQ(tasks[0]->parts, 1) << node;
            continue;
        }
        ASSERT_EQ(static_cast<int>(tasks.size()), tasks[0]->parts) << node;
        const Buffer& out = p.buffers.at(static_cast<size_t>(tasks[0]->outputs.at(0)));
        std::vector<std::pair<int64_t, int64_t>> ranges;
        for (const Task* t : tasks)
            ranges.emplace_back(t->sliceBegin, t->sliceEnd);
        std::sort(ranges.begin(), ranges.end());
        int64_t at = 0;
        for (const auto& [b, e] : ranges) {
            EXPECT_EQ(b, at) << node;
            at = e;
        }
        EXPECT_EQ(at, out.type.dims().at(static_cast<size_t>(tasks[0]->sliceAxis))) << node;
    }
    // Issue order is topological and deps are the producers of the inputs.
    for (const Task& t : p.tasks) {
        EXPECT_EQ(&t - p.tasks.data(), t.id);
        for (int d : t.deps) {
            EXPECT_LT(d, t.id);
            EXPECT_LE(p.tasks[d].estEnd, t.estStart);
        }
        for (int b : t.inputs) {
            if (p.buffers[b].kind != BufferKind::Intermediate && p.buffers[b].kind != BufferKind::Output)
                continue;
            for (const Task& w : p.tasks) // every part that writes what it reads
                if (std::find(w.outputs.begin(), w.outputs.end(), b) != w.outputs.end() &&
                    !disjointSliceRead(w, t, b)) {
                    EXPECT_NE(std::find(t.deps.begin(), t.deps.end(), w.id), t.deps.end())
                        << t.name << " reads " << p.buffers[b].value << " without depending on its writer " << w.name;
                }
        }
        EXPECT_GT(t.estCycles, 0u);
        EXPECT_LE(t.tiling.sramBytes, p.target.sramBytes) << t.name;
    }
    Status ev = checkEvents(p);
    EXPECT_TRUE(ev.ok()) << (ev.ok() ? "" : ev.error().message);
    Status hz = checkHazards(p);
    EXPECT_TRUE(hz.ok()) << (hz.ok() ? "" : hz.error().message);
    EXPECT_GE(p.memory.dramPeak, p.memory.dramLowerBound);
    const bool dramIntermediates = std::any_of(p.buffers.begin(), p.buffers.end(), [](const Buffer& b) {
        return b.kind == BufferKind::Intermediate && b.level == MemLevel::Dram;
    });
    if (dramIntermediates) { // keep-on-chip may have kept every one in SRAM
        EXPECT_GT(p.memory.dramLowerBound, 0u);
    }
    Status sram = checkSramPlan(p);
    EXPECT_TRUE(sram.ok()) << (sram.ok() ? "" : sram.error().message);
    EXPECT_EQ(p.inputBuffers.size(), g.inputs().size());
    EXPECT_EQ(p.outputBuffers.size(), g.outputs().size());
}

} // namespace

TEST(Lower, ResidualGraphGivesAValidProgram) {
    auto g = residualGraph();
    Expected<Program> p = lower(g, defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    expectValidProgram(*p, *g);
    // Units follow the op cost classes.
    for (const Task& t : p->tasks) {
        if (t.kernel == "Conv" || t.kernel == "Gemm") {
            EXPECT_EQ(t.unit, UnitKind::Cube) << t.name;
        }
        if (t.kernel == "Relu" || t.kernel == "Add" || t.kernel == "Softmax") {
            EXPECT_EQ(t.unit, UnitKind::Vector) << t.name;
        }
        if (t.kernel == "Flatten") {
            EXPECT_EQ(t.unit, UnitKind::Dma) << t.name;
        }
    }
    // Intermediates reuse memory: the arena is smaller than the sum of the intermediates.
    uint64_t sum = 0;
    for (const Buffer& b : p->buffers)
        if (b.kind == BufferKind::Intermediate)
            sum += b.size;
    EXPECT_LT(p->memory.dramPeak, sum);
    EXPECT_GT(p->estCycles, 0u);
}

TEST(Lower, ParallelBranchesUseSeveralCoresWithEvents) {
    auto g = wideGraph(6);
    Expected<Program> p = lower(g, defaultTarget(), withEvents());
    ASSERT_TRUE(p.ok()) << p.error().message;
    expectValidProgram(*p, *g);
    std::set<int> cores;
    for (const Task& t : p->tasks)
        cores.insert(t.core);
    EXPECT_GE(cores.size(), 3u);
    EXPECT_FALSE(p->events.empty());
    // Each Relu part waits for every part of its convolution (it reads the whole output).
    for (const Task& t : p->tasks) {
        if (t.kernel != "Relu")
            continue;
        std::set<int> convParts;
        for (int d : t.deps)
            if (p->tasks[d].kernel == "Conv")
                convParts.insert(p->tasks[d].parts);
        ASSERT_EQ(convParts.size(), 1u) << t.name;
        int convDeps = 0;
        for (int d : t.deps)
            convDeps += p->tasks[d].kernel == "Conv";
        EXPECT_EQ(convDeps, *convParts.begin()) << t.name;
    }
}

// DESIGN §6: work is shared out across cores, but not where a part would cost more than the
// event that joins it back. A big convolution alone on the NPU runs on every core and is faster
// than on one; a tiny one stays whole.
TEST(Lower, BigWorkIsSplitAcrossCoresSmallWorkIsNot) {
    auto one = [](int64_t channels, int64_t hw, const Target& target) {
        auto g = std::make_shared<ir::Graph>("conv");
        ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, channels, hw, hw}));
        ir::Value* w = *g->addConstant("w", filled({channels, channels, 3, 3}, 0.01f));
        ir::Node* c =
            *g->addNode(OpKind::Conv, "conv", {x, w}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        g->setOutputs({c->output()});
        EXPECT_TRUE(g->inferTypes().ok());
        Expected<Program> p = lower(g, target);
        EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
        return std::move(p).value();
    };
    Target single = defaultTarget();
    single.numCores = 1;
    const Program big = one(64, 56, defaultTarget());
    const Program bigOnOneCore = one(64, 56, single);
    ASSERT_EQ(bigOnOneCore.tasks.size(), 1u);
    ASSERT_EQ(big.tasks.size(), 8u);
    std::set<int> cores;
    for (const Task& t : big.tasks) {
        cores.insert(t.core);
        EXPECT_EQ(t.parts, 8);
        EXPECT_EQ(t.nodes, std::vector<std::string>{"conv"});
    }
    EXPECT_EQ(cores.size(), 8u);
    EXPECT_LT(big.estCycles * 4, bigOnOneCore.estCycles);
    Status hz = checkHazards(big);
    EXPECT_TRUE(hz.ok()) << (hz.ok() ? "" : hz.error().message);

    const Program tiny = one(2, 2, defaultTarget());
    EXPECT_EQ(tiny.tasks.size(), 1u) << "a part plus an event would cost more than the whole";

    // Two parts writing overlapping slices of their output: the hazard checker names it.
    Program broken = big;
    broken.tasks[1].sliceBegin = broken.tasks[0].sliceBegin;
    Status bad = checkHazards(broken);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("the parts of conv write overlapping slices"), std::string::npos)
        << bad.error().message;
}

TEST(Lower, BigConvIsTiledToFitSram) {
    auto g = std::make_shared<ir::Graph>("big");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 64, 56, 56}));
    ir::Value* w = *g->addConstant("w", filled({64, 64, 3, 3}, 0.01f));
    ir::Node* c = *g->addNode(OpKind::Conv, "conv", {x, w}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    g->setOutputs({c->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    Expected<Program> p = lower(g, oneCore());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const Tiling& tiling = p->tasks.at(0).tiling;
    EXPECT_GT(tiling.numTiles, 1);
    EXPECT_TRUE(tiling.doubleBuffered);
    EXPECT_LE(tiling.sramBytes, 512u * 1024);
    ASSERT_FALSE(tiling.candidates.empty());
    EXPECT_LE(tiling.candidates.size(), 3u);
    bool sawSramReason = false;
    for (const auto& c : tiling.candidates)
        if (c.rejectedBecause.find("SRAM > 512 KiB") != std::string::npos)
            sawSramReason = true;
    EXPECT_TRUE(sawSramReason) << "the whole-output tile needs more SRAM and should be listed as rejected";
    // 2*M*N*K flops for the whole convolution.
    EXPECT_EQ(p->tasks[0].flops, 2ull * 56 * 56 * 64 * 64 * 9);
}

// A convolution whose input does not fit the SRAM and that has many output channels (BlazeFace's
// first one, once its 3 input channels are padded to a C0 block, is like this). Splitting the
// output channels down to one before splitting rows made every tile reload its whole input
// window: 29x the bytes and 12x the cycles. Rows are split instead, and the DMA moves about what
// the convolution reads and writes.
TEST(Lower, WideConvSplitsRowsNotChannelsWhenItsInputDoesNotFit) {
    auto g = std::make_shared<ir::Graph>("wide");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 128, 128}));
    ir::Value* w = *g->addConstant("w", filled({64, 16, 3, 3}, 0.01f));
    ir::Node* c = *g->addNode(OpKind::Conv, "conv", {x, w}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    g->setOutputs({c->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    Expected<Program> p = lower(g, oneCore());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const Task& t = p->tasks.at(0);
    ASSERT_GT(t.tiling.numTiles, 1);
    // Cube operands are f16: input 16x128x128, weights 64x16x9; the output is f32, 64x128x128.
    const uint64_t touched = 2ull * 16 * 128 * 128 + 2ull * 64 * 16 * 9 + 4ull * 64 * 128 * 128;
    EXPECT_LE(t.dmaBytes, 2 * touched) << "tile " << t.tiling.tileShape.size() << "-d, " << t.tiling.numTiles
                                       << " tiles";
    EXPECT_EQ(t.tiling.tileShape.at(1), 64) << "the output channels stay whole";
}

namespace {

/// The compute cycles the cost model gives the first Task of a one-node graph.
uint64_t computeOf(OpKind kind, std::vector<TensorType> inputs, ir::AttributeMap attrs = {},
                   std::vector<Tensor> constants = {}, const std::vector<std::string>& body = {}) {
    auto g = std::make_shared<ir::Graph>("one");
    std::vector<ir::Value*> ins;
    for (size_t i = 0; i < inputs.size(); ++i)
        ins.push_back(*g->addInput("in" + std::to_string(i), inputs[i]));
    for (size_t i = 0; i < constants.size(); ++i)
        ins.push_back(*g->addConstant("c" + std::to_string(i), constants[i]));
    ir::Node* n = *g->addNode(kind, "op", ins, {"y"}, std::move(attrs));
    if (!body.empty()) {
        Expected<ir::FusedBody> b = ir::parseBody(body);
        EXPECT_TRUE(b.ok());
        if (b.ok())
            n->setBody(std::make_shared<const ir::FusedBody>(std::move(*b)));
    }
    g->setOutputs({n->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    Expected<Program> p = lower(g, oneCore());
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    return p.ok() ? p->tasks.at(0).computeCycles : 0;
}

} // namespace

// What the accuracy-trading rules buy has to show in the estimates: a division costs the vector
// unit more passes than the multiply div-to-reciprocal replaces it with, a group pays for each op
// of its body, LayerNormalization's statistics in f16 (layernorm-f16-variance) take half the
// cycles, and attention's softmax without max-subtraction (attention-fast-softmax) fewer passes.
TEST(Lower, CostModelChargesWhatTheAccuracyTradingRulesSave) {
    const TensorType x = TensorType::of(DType::F32, {1, 64, 32, 32});
    const Tensor half = Tensor::fromVector<float>({1}, {0.5f});
    const uint64_t mul = computeOf(OpKind::Mul, {x}, {}, {half});
    const uint64_t div = computeOf(OpKind::Div, {x}, {}, {half});
    EXPECT_GT(mul, 0u);
    EXPECT_EQ(div, 4 * mul);

    EXPECT_EQ(computeOf(OpKind::ElementwiseGroup, {x}, {}, {half}, {"Mul(i0,i1)", "Div(t0,i1)", "Relu(t1)"}),
              6 * mul);

    const TensorType tokens = TensorType::of(DType::F32, {1, 40, 120});
    const Tensor gamma = filled({120}, 1.0f), beta = filled({120}, 0.0f);
    const uint64_t ln = computeOf(OpKind::LayerNormalization, {tokens}, {{"axis", int64_t{-1}}}, {gamma, beta});
    const uint64_t lnF16 = computeOf(OpKind::LayerNormalization, {tokens},
                                     {{"axis", int64_t{-1}}, {"stash_type", int64_t{10}}}, {gamma, beta});
    EXPECT_LT(lnF16, ln);

    const TensorType q = TensorType::of(DType::F32, {1, 8, 128, 32});
    ir::AttributeMap att{{"scale", 0.125}, {"transB", int64_t{1}}};
    const uint64_t attention = computeOf(OpKind::Attention, {q, q, q}, att);
    ir::AttributeMap fastAtt = att;
    fastAtt["fast_softmax"] = int64_t{1};
    EXPECT_LT(computeOf(OpKind::Attention, {q, q, q}, fastAtt), attention);
    // The matrix products are cube work, quadratic in the sequence: twice the tokens, about four
    // times the cycles (not the output's 2x that an elementwise estimate would give).
    const TensorType q2 = TensorType::of(DType::F32, {1, 8, 256, 32});
    EXPECT_GT(computeOf(OpKind::Attention, {q2, q2, q2}, att), 3 * attention);
}

// Upsampling as DBNet's head does it (PaddleOCR's detector): a Resize doubling a map and a
// stride-2 ConvTranspose. Neither input fits the SRAM whole; a tile reads only the input
// region its outputs sample or gather from, so both are tiled instead of rejected.
TEST(Lower, UpsamplingResizeAndConvTransposeAreTiledToFitSram) {
    auto g = std::make_shared<ir::Graph>("upsample");
    ir::Value* in = *g->addInput("in", TensorType::of(DType::F32, {1, 64, 80, 80})); // 1.6 MB
    ir::Value* x = (*g->addNode(OpKind::Relu, "relu", {in}, {"x"}))->output();
    ir::Value* roi = *g->addConstant("roi", Tensor(DType::F32, {0}));
    ir::Value* scales = *g->addConstant("scales", Tensor::fromVector<float>({4}, {1, 1, 2, 2}));
    ir::Node* up = *g->addNode(OpKind::Resize, "resize", {x, roi, scales}, {"up"}, {{"mode", std::string("nearest")}});
    ir::Value* w = *g->addConstant("w", filled({64, 32, 2, 2}, 0.01f));
    ir::Node* ct = *g->addNode(OpKind::ConvTranspose, "deconv", {x, w}, {"y"},
                               {{"strides", std::vector<int64_t>{2, 2}}, {"kernel_shape", std::vector<int64_t>{2, 2}}});
    g->setOutputs({up->output(), ct->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    ASSERT_EQ(ct->output()->type().dims(), (std::vector<int64_t>{1, 32, 160, 160}));
    Expected<Program> p = lower(g, oneCore());
    ASSERT_TRUE(p.ok()) << p.error().message;
    for (const Task& t : p->tasks) {
        EXPECT_GT(t.tiling.numTiles, 1) << t.name;
        EXPECT_LE(t.tiling.sramBytes, 512u * 1024) << t.name;
        if (t.unit == UnitKind::Cube) {
            // Each output position gathers one tap per input channel (kernel 2 = stride 2):
            // 2 * 160 * 160 outputs * 32 channels * 64 taps, the op's real multiply-adds.
            EXPECT_EQ(t.flops, 2ull * 160 * 160 * 32 * 64) << t.name;
        }
    }
    expectValidProgram(*p, *g);
}

// A global pooling reduces a whole map per channel. One channel of a 320x320 map is 400 KiB of
// floats, twice that double-buffered: more than npu-a's 512 KiB SRAM even for a one-channel tile
// (PaddleOCR's detector at 960x960 meets this). The reduction is split into chunks accumulated
// into the output.
TEST(Lower, GlobalPoolOfALargeMapIsReducedInChunks) {
    auto g = std::make_shared<ir::Graph>("gap");
    ir::Value* in = *g->addInput("in", TensorType::of(DType::F32, {1, 16, 320, 320}));
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {in}, {"x"});
    ir::Node* gap = *g->addNode(OpKind::GlobalAveragePool, "gap", {r->output()}, {"avg"});
    ir::Node* gmp = *g->addNode(OpKind::GlobalMaxPool, "gmp", {r->output()}, {"max"});
    g->setOutputs({gap->output(), gmp->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    Expected<Program> p = lower(g, oneCore());
    ASSERT_TRUE(p.ok()) << p.error().message;
    for (const Task& t : p->tasks) {
        EXPECT_LE(t.tiling.sramBytes, 512u * 1024) << t.name;
        if (t.name == "relu")
            continue;
        EXPECT_GT(t.tiling.reduceChunks, 1) << t.name;
        EXPECT_EQ(t.tiling.numTiles % t.tiling.reduceChunks, 0) << t.name;
        ASSERT_EQ(t.tiling.tileShape.size(), 4u) << "the tile shape is the output's: " << t.name;
        EXPECT_EQ(t.tiling.tileShape[2], 1);
        // Every input element is read once, however the reduction is chunked.
        EXPECT_EQ(t.flops, 16ull * 320 * 320) << t.name;
    }
    expectValidProgram(*p, *g);
}

TEST(Lower, DeterministicAcrossRuns) {
    auto g = residualGraph();
    Expected<Program> a = lower(g, defaultTarget());
    Expected<Program> b = lower(g, defaultTarget());
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->tasks.size(), b->tasks.size());
    for (size_t i = 0; i < a->tasks.size(); ++i) {
        EXPECT_EQ(a->tasks[i].name, b->tasks[i].name);
        EXPECT_EQ(a->tasks[i].core, b->tasks[i].core);
    }
    for (size_t i = 0; i < a->buffers.size(); ++i)
        EXPECT_EQ(a->buffers[i].offset, b->buffers[i].offset);
}

TEST(Lower, HazardCheckerCatchesOverlapOfUnorderedTasks) {
    auto g = wideGraph(4);
    Expected<Program> p = lower(g, defaultTarget(), withEvents());
    ASSERT_TRUE(p.ok()) << p.error().message;
    // Put the outputs of two parallel convolutions at the same address.
    Program bad = *p;
    int first = -1, second = -1;
    for (const Buffer& b : bad.buffers) {
        if (b.value == "c0")
            first = b.id;
        if (b.value == "c1")
            second = b.id;
    }
    ASSERT_GE(first, 0);
    ASSERT_GE(second, 0);
    bad.buffers[second].offset = bad.buffers[first].offset;
    Status s = checkHazards(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("hazard"), std::string::npos) << s.error().message;
}

TEST(Lower, EventCheckerCatchesAMissingWait) {
    auto g = wideGraph(6);
    Expected<Program> p = lower(g, defaultTarget(), withEvents());
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_FALSE(p->events.empty());
    Program bad = *p;
    const Event& e = bad.events[0];
    Task& consumer = bad.tasks[e.consumerTasks[0]];
    consumer.waitEvents.clear();
    EXPECT_FALSE(checkEvents(bad).ok());
    // Dropping the event entirely leaves a cross-core dependency uncovered.
    Program bad2 = *p;
    for (Task& t : bad2.tasks) {
        t.waitEvents.clear();
        t.recordEvents.clear();
    }
    bad2.events.clear();
    Status s = checkEvents(bad2);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("has no event"), std::string::npos) << s.error().message;
}

TEST(Lower, EventSlotsAreReusedWhenFew) {
    auto g = wideGraph(7);
    Target t = defaultTarget();
    t.eventSlotsPerCore = 2;
    Expected<Program> p = lower(g, t);
    ASSERT_TRUE(p.ok()) << p.error().message;
    for (const Event& e : p->events)
        EXPECT_LT(e.slot, 2);
    EXPECT_TRUE(checkEvents(*p).ok());
}

// One event slot per core cannot hold the events of independent branches running side by side:
// the compiler falls back to fewer cores (down to one, which needs no events) instead of failing.
TEST(Lower, OneEventSlotPerCoreStillGivesAProgram) {
    auto g = fireGraph(3);
    Target t = defaultTarget();
    t.eventSlotsPerCore = 1;
    Expected<Program> p = lower(g, t);
    ASSERT_TRUE(p.ok()) << p.error().message;
    expectValidProgram(*p, *g);
    for (const Event& e : p->events)
        EXPECT_EQ(e.slot, 0);
    EXPECT_TRUE(checkEvents(*p).ok());
    EXPECT_EQ(p->target.numCores, 8) << "the artifact still describes the whole target";
    // It says why it used fewer cores; a target with room for the events gets no such note.
    ASSERT_EQ(p->notes.size(), 1u);
    EXPECT_NE(p->notes[0].find("did not fit 1 event slot per core"), std::string::npos) << p->notes[0];
    Expected<Program> roomy = lower(g, defaultTarget());
    ASSERT_TRUE(roomy.ok()) << roomy.error().message;
    EXPECT_TRUE(roomy->notes.empty());
}

// When the events do not fit, lowering keeps the fastest of the programs that do: among such
// targets, more event slots never give a slower program. (With enough slots it keeps the first
// program, every node shared out as far as it pays, without searching.)
TEST(Lower, MoreEventSlotsNeverGiveASlowerProgram) {
    for (auto g : {fireGraph(4), wideGraph(7), residualGraph(64, 32)}) {
        uint64_t previous = UINT64_MAX;
        for (int slots : {1, 2, 3, 4, 8}) {
            Target t = defaultTarget();
            t.eventSlotsPerCore = slots;
            Expected<Program> p = lower(g, t, withEvents());
            ASSERT_TRUE(p.ok()) << p.error().message;
            EXPECT_EQ(p->notes.size(), 1u) << "the events should not fit " << slots << " slots";
            EXPECT_LE(p->estCycles, previous) << g->name() << " with " << slots << " slots";
            previous = p->estCycles;
        }
    }
}

// The first program that fits is not always the fastest: with 3 slots the residual graph's
// events do not fit its nodes split in two across all 8 cores, and no split at all is slower
// than the same split on 2 cores.
TEST(Lower, FewSlotsPreferSplittingOnFewerCoresToNoSplitting) {
    auto g = residualGraph(64, 32);
    Target t = defaultTarget();
    t.eventSlotsPerCore = 2;
    // Without keep-on-chip, which would make the one-core program faster still.
    LowerOptions dram;
    dram.sram.keepOnChip = false;
    Expected<Program> two = lower(g, t, dram);
    t.eventSlotsPerCore = 3;
    Expected<Program> three = lower(g, t, dram);
    ASSERT_TRUE(two.ok() && three.ok());
    EXPECT_LT(three->estCycles, two->estCycles);
    ASSERT_EQ(three->notes.size(), 1u);
    EXPECT_NE(three->notes[0].find("shared out in at most 2 parts"), std::string::npos) << three->notes[0];
    expectValidProgram(*three, *g);
}

TEST(Lower, SingleCoreTargetHasNoEvents) {
    auto g = residualGraph();
    Target t = defaultTarget();
    t.numCores = 1;
    Expected<Program> p = lower(g, t);
    ASSERT_TRUE(p.ok()) << p.error().message;
    expectValidProgram(*p, *g);
    EXPECT_TRUE(p->events.empty());
}

TEST(Lower, UnshapedInputIsAClearError) {
    auto g = std::make_shared<ir::Graph>("dyn");
    TensorType dyn;
    dyn.dtype = DType::F32;
    dyn.shape = {ir::Dim::symbolic("batch"), ir::Dim::known(4)};
    ir::Value* x = *g->addInput("x", dyn);
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {x}, {"y"});
    g->setOutputs({r->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    Expected<Program> p = lower(g, defaultTarget());
    ASSERT_FALSE(p.ok());
    // The input is named, with what to do: an unknown dim there is the user's to fix, unlike one
    // the data decides (a host step's).
    EXPECT_NE(p.error().message.find("graph input 'x' has a non-static shape f32[batch,4]"), std::string::npos)
        << p.error().message;
    EXPECT_NE(p.error().message.find("specialise the model's input shapes first"), std::string::npos)
        << p.error().message;
}

TEST(Lower, CostModelFollowsTheDocumentedFormula) {
    // MatMul [32,64] x [64,48] on npu-a, one tile, each operand moving as it is kept in memory
    // (a graph input, a weight and a graph output: f32, as given):
    //   cube: ceil(32/16) * ceil(48/16) * ceil(64/16) = 24 cycles
    //   DMA:  (32*64*4 + 64*48*4 inputs + 32*48*4 output) = 26624 B / 64 B/cycle + 400 = 816
    //   single tile, no overlap: 24 + 816 = 840
    auto g = std::make_shared<ir::Graph>("mm");
    ir::Value* a = *g->addInput("a", TensorType::of(DType::F32, {32, 64}));
    ir::Value* b = *g->addConstant("b", filled({64, 48}, 0.01f));
    ir::Node* mm = *g->addNode(OpKind::MatMul, "mm", {a, b}, {"y"});
    g->setOutputs({mm->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    Expected<Program> p = lower(g, defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const Task& t = p->tasks.at(0);
    EXPECT_EQ(t.unit, UnitKind::Cube);
    EXPECT_EQ(t.tiling.numTiles, 1);
    EXPECT_EQ(t.estCycles, 840u);
    EXPECT_EQ(t.flops, 2ull * 32 * 48 * 64);
    EXPECT_EQ(t.dmaBytes, 26624u);
    // The schedule adds the dispatch overhead.
    EXPECT_EQ(p->estCycles, 840u + defaultTarget().dispatchCycles);
}

TEST(Lower, LongChainsStayFastAndReuseMemory) {
    // 1500 elementwise nodes in a chain: memory reuse keeps the arena at two buffers.
    auto g = std::make_shared<ir::Graph>("chain");
    ir::Value* v = *g->addInput("x", TensorType::of(DType::F32, {1, 64, 16, 16}));
    for (int i = 0; i < 1500; ++i)
        v = (*g->addNode(OpKind::Relu, "r" + std::to_string(i), {v}, {"v" + std::to_string(i)}))->output();
    g->setOutputs({v});
    ASSERT_TRUE(g->inferTypes().ok());
    LowerOptions dram;
    dram.sram.keepOnChip = false;
    Expected<Program> p = lower(g, defaultTarget(), dram);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->tasks.size() % 1500, 0u); // each Relu whole, or in as many parts as the others
    EXPECT_EQ(p->memory.dramPeak, 2u * 64 * 16 * 16 * 4);
    EXPECT_EQ(p->memory.dramPeak, p->memory.dramLowerBound);
    // With keep-on-chip every map stays in its cores' SRAM, a stripe per part: no DRAM arena, and
    // each core's SRAM holds two stripes at a time.
    Expected<Program> kept = lower(g, defaultTarget());
    ASSERT_TRUE(kept.ok()) << kept.error().message;
    EXPECT_EQ(kept->memory.dramPeak, 0u);
    EXPECT_EQ(kept->onChip.size(), 1499u * static_cast<size_t>(kept->tasks.size() / 1500));
    for (const SramStats& core : kept->memory.sram)
        EXPECT_LE(core.peak, core.capacity);
    EXPECT_LT(kept->memory.dramTrafficBytes, p->memory.dramTrafficBytes / 100);
}

// On one core every pair of Tasks is ordered, yet a buffer written while another at its address
// still has a reader to come is a hazard: the reuse must follow the last access.
TEST(Lower, HazardCheckerCatchesAReuseBeforeTheLastRead) {
    LowerOptions dram;
    dram.sram.keepOnChip = false;
    Expected<Program> p = lower(residualGraph(), oneCore(), dram);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_TRUE(checkHazards(*p).ok());
    Program bad = *p;
    int r0 = -1, sum = -1;
    for (const Buffer& b : bad.buffers) {
        if (b.value == "r0")
            r0 = b.id;
        if (b.value == "sum")
            sum = b.id;
    }
    ASSERT_GE(r0, 0);
    ASSERT_GE(sum, 0);
    // 'sum' is written by add, and the skip add reads r0 after it.
    bad.buffers[static_cast<size_t>(sum)].offset = bad.buffers[static_cast<size_t>(r0)].offset;
    Status s = checkHazards(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("hazard: task "), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("reads buffer"), std::string::npos) << s.error().message;
}

// A chain of elementwise ops on a map too large to keep on chip (4 MiB, stripes of 512 KiB):
// each part waits only for the part it reads, so the cores' chains are unordered with each
// other, and a map can take the addresses of the one two steps back only slice by slice (each
// part once the parts on its own core that read that slice are done). The arena then holds two
// maps, as a chain whose parts wait for every part does; the plan passes the hazard checker, and
// the simulator, checking races, computes what the whole-map program computes.
TEST(Lower, UnorderedChainsShareTheirMapsAddressesSliceBySlice) {
    auto g = std::make_shared<ir::Graph>("slices");
    const std::vector<int64_t> dims{1, 16, 256, 256};
    ir::Value* v = *g->addInput("x", TensorType::of(DType::F32, dims));
    for (int i = 0; i < 6; ++i)
        v = (*g->addNode(i % 2 ? OpKind::Sigmoid : OpKind::Relu, "e" + std::to_string(i), {v},
                         {"v" + std::to_string(i)}))
                ->output();
    g->setOutputs({v});
    ASSERT_TRUE(g->inferTypes().ok());
    // By the estimates the unstriped program ties with it; a measure that finds every candidate
    // equal keeps the first, the striped one.
    LowerOptions striped;
    striped.measure = [](const Program&) -> Expected<uint64_t> { return 1; };
    Expected<Program> p = lower(g, defaultTarget(), striped);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_TRUE(checkHazards(*p).ok());
    const uint64_t map = 16ull * 256 * 256 * 4;
    bool narrowed = false;
    for (const Task& t : p->tasks)
        narrowed = narrowed || (t.parts > 1 && !t.sliceLocalInputs.empty() && t.deps.size() == 1);
    ASSERT_TRUE(narrowed) << "the parts wait only for the part they read";
    EXPECT_EQ(p->memory.dramPeak, 2 * map);
    // Two maps at one address, read and written on different cores without an order between
    // those Tasks: only their slices order them.
    const Buffer* v1 = nullptr;
    const Buffer* v3 = nullptr;
    for (const Buffer& b : p->buffers) {
        v1 = b.value == "v1" ? &b : v1;
        v3 = b.value == "v3" ? &b : v3;
    }
    ASSERT_TRUE(v1 && v3);
    EXPECT_EQ(v1->offset, v3->offset);
    // Moved by one part's slice, the later map's parts write over slices other cores still read.
    Program bad = *p;
    uint64_t& offset = bad.buffers[static_cast<size_t>(v3->id)].offset;
    offset = offset >= p->memory.arenaBase + map / 8 ? offset - map / 8 : offset + map / 8;
    Status s = checkHazards(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("with no ordering between them"), std::string::npos) << s.error().message;

    Tensor x(DType::F32, dims);
    for (int64_t i = 0; i < x.numel(); ++i)
        x.set(i, 0.001 * static_cast<double>(i % 977) - 0.4);
    sim::SimOptions races;
    races.checkRaces = true;
    Expected<sim::SimResult> got = sim::simulate(*p, std::vector<Tensor>{x}, races);
    ASSERT_TRUE(got.ok()) << got.error().message;
    // The race checker tells the slices apart too: the moved map's parts overwrite what other
    // cores have still to read.
    Expected<sim::SimResult> raced = sim::simulate(bad, std::vector<Tensor>{x}, races);
    ASSERT_FALSE(raced.ok());
    EXPECT_NE(raced.error().message.find("race: "), std::string::npos) << raced.error().message;
    LowerOptions whole;
    whole.sram.keepOnChip = false;
    Expected<Program> w = lower(g, defaultTarget(), whole);
    ASSERT_TRUE(w.ok()) << w.error().message;
    Expected<sim::SimResult> want = sim::simulate(*w, std::vector<Tensor>{x});
    ASSERT_TRUE(want.ok()) << want.error().message;
    EXPECT_TRUE(got->outputs[0].identical(want->outputs[0]));
}
