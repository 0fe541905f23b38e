// The on-chip memory plan: every Task's tile slots and the tensors keep-on-chip keeps, per core,
// inside the core's SRAM; what the rule refuses says why; and a kept tensor really lives in the
// simulated SRAM (the numbers come from there, so a wrong address gives wrong numbers).
#include "core/backend/Artifact.h"
#include "core/backend/CoreSplit.h"
#include "core/backend/Lower.h"
#include "core/backend/MemoryPlanner.h"
#include "core/backend/SramPlanner.h"
#include "core/sim/Simulator.h"

#include "BackendTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

using namespace sextant;
using namespace sextant::backend;
using ir::DType;
using ir::OpKind;
using ir::Tensor;
using ir::TensorType;

namespace {

using test::filled;

Target cores(int n, uint64_t sram = 512 * 1024) {
    Target t = defaultTarget();
    t.numCores = n;
    t.sramBytes = sram;
    return t;
}

/// x -> conv -> relu -> (convA, convB) -> add -> skip add (with relu's output) -> y: a residual
/// block whose feature maps (8 channels, hw x hw) fit a core's SRAM many times over.
std::shared_ptr<ir::Graph> block(int64_t hw = 16) {
    auto g = std::make_shared<ir::Graph>("block");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 8, hw, hw}));
    ir::AttributeMap conv{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    ir::Value* w0 = *g->addConstant("w0", filled({8, 8, 3, 3}, 0.01f));
    ir::Node* c0 = *g->addNode(OpKind::Conv, "conv0", {x, w0}, {"c0"}, conv);
    ir::Node* r0 = *g->addNode(OpKind::Relu, "relu0", {c0->output()}, {"r0"});
    ir::Value* wa = *g->addConstant("wa", filled({8, 8, 3, 3}, 0.02f));
    ir::Value* wb = *g->addConstant("wb", filled({8, 8, 3, 3}, -0.01f));
    ir::Node* ca = *g->addNode(OpKind::Conv, "convA", {r0->output(), wa}, {"ca"}, conv);
    ir::Node* cb = *g->addNode(OpKind::Conv, "convB", {r0->output(), wb}, {"cb"}, conv);
    ir::Node* add = *g->addNode(OpKind::Add, "add", {ca->output(), cb->output()}, {"sum"});
    ir::Node* skip = *g->addNode(OpKind::Add, "skip", {add->output(), r0->output()}, {"y"});
    g->setOutputs({skip->output()});
    Status s = g->inferTypes();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return g;
}

Program lowered(const std::shared_ptr<ir::Graph>& g, const Target& t, bool keep = true, int64_t budget = -1,
                std::vector<OnChipDecision>* decisions = nullptr) {
    LowerOptions o;
    o.sram.keepOnChip = keep;
    o.sram.budget = budget;
    Expected<Program> p = lower(g, t, o, decisions);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    return p.ok() ? std::move(p).value() : Program{};
}

const Buffer* bufferOf(const Program& p, const std::string& value) {
    for (const Buffer& b : p.buffers)
        if (b.value == value)
            return &b;
    return nullptr;
}

std::vector<Tensor> run(const Program& p, bool checkRaces = false) {
    sim::SimOptions o;
    o.checkRaces = checkRaces;
    Tensor x = filled({1, 8, 16, 16}, 0.2f);
    Expected<sim::SimResult> r = sim::simulate(p, std::vector<Tensor>{x}, o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? r->outputs : std::vector<Tensor>{};
}

} // namespace

TEST(SramPlan, EveryTaskHasItsSlotsInsideItsCoresSram) {
    const Program p = lowered(block(), cores(1));
    ASSERT_FALSE(p.tasks.empty());
    ASSERT_TRUE(checkSramPlan(p).ok());
    ASSERT_EQ(p.memory.sram.size(), 1u);
    for (const SramBuffer& sb : p.sramBuffers) {
        EXPECT_EQ(sb.offset % p.target.sramAlign, 0u);
        EXPECT_EQ(sb.size % p.target.sramAlign, 0u);
        EXPECT_LE(sb.offset + sb.size, p.target.sramBytes);
        EXPECT_LE(sb.offset + sb.size, p.memory.sram[0].peak);
    }
    EXPECT_LE(p.memory.sram[0].lowerBound, p.memory.sram[0].peak);
    EXPECT_LE(p.memory.sram[0].peak, p.memory.sram[0].capacity);
    // Every Task that moves bytes has the slots its transfers fill or drain.
    for (const Task& t : p.tasks) {
        if (t.dmaBytes == 0)
            continue;
        const bool hasSlot = std::any_of(p.sramBuffers.begin(), p.sramBuffers.end(), [&](const SramBuffer& sb) {
            return sb.task == t.id && sb.role != SramRole::Resident;
        });
        EXPECT_TRUE(hasSlot) << t.name;
    }
    uint64_t moved = 0;
    for (const Transfer& tr : p.transfers) {
        moved += tr.bytes;
        ASSERT_GE(tr.sramBuffer, 0);
        EXPECT_EQ(p.sramBuffers[static_cast<size_t>(tr.sramBuffer)].task, tr.task);
    }
    EXPECT_EQ(moved, p.memory.dramTrafficBytes);
}

TEST(SramPlan, DoubleBufferedStreamsHavePingPongPairs) {
    // 64x64 maps do not fit whole next to their weights in 64 KiB: the convolutions are tiled.
    const Program p = lowered(block(64), cores(1, 64 * 1024), false);
    bool sawPair = false;
    for (const Task& t : p.tasks) {
        if (!t.tiling.doubleBuffered)
            continue;
        std::map<std::pair<int, int>, std::vector<const SramBuffer*>> byPiece;
        for (const SramBuffer& sb : p.sramBuffers)
            if (sb.task == t.id)
                byPiece[{static_cast<int>(sb.role), sb.buffer}].push_back(&sb);
        for (const auto& [piece, slots] : byPiece) {
            ASSERT_EQ(slots.size(), 2u) << t.name;
            EXPECT_EQ(slots[0]->pair, 0);
            EXPECT_EQ(slots[1]->pair, 1);
            EXPECT_EQ(slots[0]->size, slots[1]->size);
            EXPECT_NE(slots[0]->offset, slots[1]->offset); // both live while the Task runs
            sawPair = true;
        }
    }
    EXPECT_TRUE(sawPair);
    EXPECT_TRUE(checkSramPlan(p).ok());
}

TEST(SramPlan, FeatureMapsOnOneCoreStayOnChipAndSaveTheirTraffic) {
    std::vector<OnChipDecision> decisions;
    const Program on = lowered(block(), cores(1), true, -1, &decisions);
    const Program off = lowered(block(), cores(1), false);
    // relu0's output is read by convA, convB and the skip add, all on core 0.
    const Buffer* r0 = bufferOf(on, "r0");
    ASSERT_NE(r0, nullptr);
    EXPECT_EQ(r0->level, MemLevel::Sram);
    EXPECT_EQ(r0->core, 0);
    EXPECT_EQ(bufferOf(off, "r0")->level, MemLevel::Dram);
    EXPECT_FALSE(on.onChip.empty());
    uint64_t saved = 0;
    for (const OnChip& k : on.onChip)
        saved += k.savedDmaBytes;
    EXPECT_EQ(on.memory.dramTrafficBytes + saved, off.memory.dramTrafficBytes);
    EXPECT_LT(on.estCycles, off.estCycles);
    // The graph output is never kept: the host reads it from DRAM.
    EXPECT_EQ(bufferOf(on, "y")->level, MemLevel::Dram);
    auto y = std::find_if(decisions.begin(), decisions.end(), [](const OnChipDecision& d) { return d.value == "y"; });
    ASSERT_NE(y, decisions.end());
    EXPECT_EQ(y->outcome, OnChipDecision::Outcome::Rejected);
    EXPECT_EQ(y->reason, "graph output: the host reads it from DRAM");
    // A resident has one SRAM buffer spanning its producer to its last reader.
    auto res = std::find_if(on.sramBuffers.begin(), on.sramBuffers.end(), [&](const SramBuffer& sb) {
        return sb.role == SramRole::Resident && sb.buffer == r0->id;
    });
    ASSERT_NE(res, on.sramBuffers.end());
    EXPECT_EQ(res->offset, r0->offset);
    EXPECT_LT(res->firstTask, res->lastTask);
    ASSERT_TRUE(checkSramPlan(on).ok());
    ASSERT_TRUE(checkHazards(on).ok());
}

TEST(SramPlan, KeepingOnChipLeavesTheNumbersBitForBit) {
    const Program on = lowered(block(), cores(1));
    const Program off = lowered(block(), cores(1), false);
    ASSERT_FALSE(on.onChip.empty());
    const std::vector<Tensor> a = run(on, true), b = run(off, true);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    ASSERT_EQ(a[0].numel(), b[0].numel());
    for (int64_t i = 0; i < a[0].numel(); ++i)
        ASSERT_EQ(a[0].at(i), b[0].at(i)) << i;
}

TEST(SramPlan, RejectionsSayWhyATensorStaysInDram) {
    // 4 KiB of SRAM holds the tile slots but no whole 8x16x16 map.
    std::vector<OnChipDecision> decisions;
    const Program tiny = lowered(block(), cores(1, 4096), true, -1, &decisions);
    EXPECT_TRUE(tiny.onChip.empty());
    auto r0 = std::find_if(decisions.begin(), decisions.end(), [](const OnChipDecision& d) { return d.value == "r0"; });
    ASSERT_NE(r0, decisions.end());
    EXPECT_EQ(r0->outcome, OnChipDecision::Outcome::Rejected);
    EXPECT_EQ(r0->reason.rfind("does not fit: needs ", 0), 0u) << r0->reason;
    EXPECT_NE(r0->reason.find("KiB free on core 0"), std::string::npos) << r0->reason;
    EXPECT_EQ(r0->node, "relu0");
    EXPECT_TRUE(checkSramPlan(tiny).ok());
}

TEST(SramPlan, AConsumerOnAnotherCoreReadsDram) {
    // Two cores: the parallel convolutions go to different cores, so relu0's map crosses cores.
    std::vector<OnChipDecision> decisions;
    const Program p = lowered(block(), cores(2), true, -1, &decisions);
    bool crossCore = false;
    for (const OnChipDecision& d : decisions)
        if (d.reason.rfind("read on another core: ", 0) == 0 || d.reason.rfind("split across cores: ", 0) == 0) {
            crossCore = true;
            const Buffer* b = bufferOf(p, d.value);
            ASSERT_NE(b, nullptr);
            EXPECT_EQ(b->level, MemLevel::Dram) << d.value;
        }
    EXPECT_TRUE(crossCore);
    for (const Buffer& b : p.buffers)
        if (b.level == MemLevel::Sram)
            for (const Task& t : p.tasks)
                if (std::find(t.inputs.begin(), t.inputs.end(), b.id) != t.inputs.end()) {
                    EXPECT_EQ(t.core, b.core) << t.name << " reads " << b.value;
                }
    EXPECT_TRUE(checkSramPlan(p).ok());
}

TEST(SramPlan, TheBisectBudgetLimitsApplications) {
    std::vector<OnChipDecision> all, one, none;
    const Program full = lowered(block(), cores(1), true, -1, &all);
    const Program first = lowered(block(), cores(1), true, 1, &one);
    const Program zero = lowered(block(), cores(1), true, 0, &none);
    auto applied = [](const std::vector<OnChipDecision>& ds) {
        return std::count_if(ds.begin(), ds.end(),
                             [](const OnChipDecision& d) { return d.outcome == OnChipDecision::Outcome::Applied; });
    };
    ASSERT_GE(applied(all), 2);
    EXPECT_EQ(applied(one), 1);
    EXPECT_EQ(first.onChip.size(), 1u);
    EXPECT_EQ(applied(none), 0);
    EXPECT_TRUE(zero.onChip.empty());
    // The one application is the first of the unlimited compile's.
    auto firstApplied = [](const std::vector<OnChipDecision>& ds) {
        return std::find_if(ds.begin(), ds.end(),
                            [](const OnChipDecision& d) { return d.outcome == OnChipDecision::Outcome::Applied; })
            ->value;
    };
    EXPECT_EQ(firstApplied(one), firstApplied(all));
}

TEST(SramPlan, TheCheckerCatchesOverlappingLiveBuffers) {
    Program p = lowered(block(), cores(1));
    ASSERT_TRUE(checkSramPlan(p).ok());
    // Move a resident onto a slot of a Task inside its lifetime.
    SramBuffer* res = nullptr;
    const SramBuffer* slot = nullptr;
    for (SramBuffer& r : p.sramBuffers)
        for (const SramBuffer& sb : p.sramBuffers)
            if (!res && r.role == SramRole::Resident && sb.role != SramRole::Resident && sb.task > r.firstTask &&
                sb.task <= r.lastTask) {
                res = &r;
                slot = &sb;
            }
    ASSERT_NE(res, nullptr) << "no tile slot inside a resident's lifetime";
    res->offset = slot->offset;
    p.buffers[static_cast<size_t>(res->buffer)].offset = slot->offset;
    Status s = checkSramPlan(p);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("hazard: SRAM buffers"), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find("on core 0 overlap while task"), std::string::npos) << s.error().message;
}

TEST(SramPlan, AWrongSramAddressCorruptsTheOutputAndTheRaceCheckerNamesBothTasks) {
    Program p = lowered(block(), cores(1));
    const std::vector<Tensor> good = run(p);
    // Put two residents whose lifetimes meet at one address.
    std::vector<SramBuffer*> res;
    for (SramBuffer& sb : p.sramBuffers)
        if (sb.role == SramRole::Resident)
            res.push_back(&sb);
    ASSERT_GE(res.size(), 2u);
    SramBuffer* a = nullptr;
    SramBuffer* b = nullptr;
    for (SramBuffer* x : res)
        for (SramBuffer* y : res)
            // y is written while x still has a reader to come: that reader sees y's bytes.
            if (x != y && x->firstTask < y->firstTask && y->firstTask < x->lastTask && !a) {
                a = x;
                b = y;
            }
    ASSERT_NE(a, nullptr) << "no resident written while another one still has a reader";
    b->offset = a->offset;
    p.buffers[static_cast<size_t>(b->buffer)].offset = a->offset;
    sim::SimOptions plain;
    Expected<sim::SimResult> wrong = sim::simulate(p, std::vector<Tensor>{filled({1, 8, 16, 16}, 0.2f)}, plain);
    ASSERT_TRUE(wrong.ok()) << wrong.error().message;
    bool differs = false;
    for (int64_t i = 0; i < good[0].numel(); ++i)
        differs = differs || good[0].at(i) != wrong->outputs[0].at(i);
    EXPECT_TRUE(differs) << "a clobbered SRAM tensor left the output unchanged";
    sim::SimOptions checked;
    checked.checkRaces = true;
    Expected<sim::SimResult> caught = sim::simulate(p, std::vector<Tensor>{filled({1, 8, 16, 16}, 0.2f)}, checked);
    ASSERT_FALSE(caught.ok());
    const std::string& m = caught.error().message;
    EXPECT_NE(m.find("race: task "), std::string::npos) << m;
    EXPECT_NE(m.find(" written by task "), std::string::npos) << m;
    EXPECT_NE(m.find("in the SRAM of core 0"), std::string::npos) << m;
}

TEST(SramPlan, AnSramOverflowNamesTheTaskAndTheCore) {
    Program p = lowered(block(), cores(1));
    ASSERT_FALSE(p.sramBuffers.empty());
    SramBuffer& sb = p.sramBuffers.back();
    sb.offset = p.target.sramBytes - p.target.sramAlign; // runs past the end
    Expected<sim::SimResult> r = sim::simulate(p, std::vector<Tensor>{filled({1, 8, 16, 16}, 0.2f)});
    ASSERT_FALSE(r.ok());
    const std::string& m = r.error().message;
    EXPECT_EQ(m.rfind("SRAM overflow: task " + std::to_string(sb.task) + " '", 0), 0u) << m;
    EXPECT_NE(m.find("on core 0"), std::string::npos) << m;
}

TEST(SramPlan, IsDeterministic) {
    const Program a = lowered(block(), cores(2));
    const Program b = lowered(block(), cores(2));
    ASSERT_EQ(a.sramBuffers.size(), b.sramBuffers.size());
    for (size_t i = 0; i < a.sramBuffers.size(); ++i) {
        EXPECT_EQ(a.sramBuffers[i].offset, b.sramBuffers[i].offset);
        EXPECT_EQ(a.sramBuffers[i].task, b.sramBuffers[i].task);
    }
}

namespace {

/// The first output of `p` simulated on `in` with the race checker on (strict or async mode).
Tensor simulated(const Program& p, const std::vector<Tensor>& in, bool strict = false) {
    sim::SimOptions o;
    o.checkRaces = true;
    o.strict = strict;
    Expected<sim::SimResult> r = sim::simulate(p, in, o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() && !r->outputs.empty() ? r->outputs[0] : Tensor{};
}

/// Input x (1x16x96x96) -> 3x3 convolution "conv3x3" (c3) -> 1x1 convolution "pointwise" (p).
std::pair<ir::Node*, ir::Node*> convThenPointwise(ir::Graph& g) {
    ir::Value* x = *g.addInput("x", TensorType::of(DType::F32, {1, 16, 96, 96}));
    ir::Node* c3 = *g.addNode(OpKind::Conv, "conv3x3", {x, *g.addConstant("w3", filled({16, 16, 3, 3}, 0.01f))}, {"c3"},
                              {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Node* pw =
        *g.addNode(OpKind::Conv, "pointwise", {c3->output(), *g.addConstant("w1", filled({16, 16, 1, 1}, 0.03f))}, {"p"});
    return {c3, pw};
}

/// `on` (keep-on-chip) moves fewer DRAM bytes than `off`, its SRAM plan and hazards check, and it
/// computes bit for bit what `off` computes, strict and async; returns `off`'s output on `in`.
Tensor sameNumbersWithLessTraffic(const Program& on, const Program& off, const std::vector<Tensor>& in) {
    EXPECT_LT(on.memory.dramTrafficBytes, off.memory.dramTrafficBytes);
    const Status plan = checkSramPlan(on);
    EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.error().message);
    EXPECT_TRUE(checkHazards(on).ok());
    const Tensor inDram = simulated(off, in);
    EXPECT_GT(inDram.numel(), 0);
    for (bool strict : {true, false})
        EXPECT_TRUE(simulated(on, in, strict).identical(inDram)) << (strict ? "strict" : "async");
    return inDram;
}

} // namespace

// A pointwise (1x1, stride 1, unpadded) convolution split by rows reads exactly the rows its
// producer's part on the same core wrote: its parts wait only for that part, and the 3x3
// convolution's map stays on chip a stripe per core. The numbers stay bit for bit those of the
// program that keeps it in DRAM, and the race checker finds nothing.
TEST(SramPlan, APointwiseConvolutionReadsItsProducersStripeOnChip) {
    auto g = std::make_shared<ir::Graph>("pointwise");
    const auto [c3, pw] = convThenPointwise(*g);
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {pw->output()}, {"y"});
    g->setOutputs({r->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    ir::Node* cpw = g->findNode("pointwise");
    EXPECT_TRUE(readsOwnSlice(*cpw, *c3->output(), 2));
    EXPECT_TRUE(readsOwnSlice(*cpw, *c3->output(), 0));
    EXPECT_FALSE(readsOwnSlice(*cpw, *c3->output(), 1)) << "every output channel reads every input channel";
    EXPECT_FALSE(readsOwnSlice(*c3, *g->inputs()[0], 2)) << "a 3x3 window reads the rows around its own";

    const Program on = lowered(g, cores(8));
    const Program off = lowered(g, cores(8), false);
    const Buffer* kept = bufferOf(on, "c3");
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(kept->level, MemLevel::Sram);
    EXPECT_GT(kept->stripes.size(), 1u) << "one stripe per part";
    int narrowed = 0;
    for (const Task& t : on.tasks)
        narrowed += std::binary_search(t.sliceLocalInputs.begin(), t.sliceLocalInputs.end(), kept->id);
    EXPECT_EQ(narrowed, static_cast<int>(kept->stripes.size()));
    sameNumbersWithLessTraffic(on, off, {filled({1, 16, 96, 96}, 0.2f)});
}

// A decoder's 2x upsampling: a ConvTranspose with kernel 2, stride 2 and no padding computes
// output rows [2a, 2b) from input rows [a, b) exactly, so its parts split by rows read their
// producer's stripe on their own core and nothing crosses cores through DRAM. With kernel 3 and
// padding 1 the window reaches one input row further: a halo.
TEST(SramPlan, ATwoByTwoConvTransposeReadsItsProducersStripeOnChip) {
    auto g = std::make_shared<ir::Graph>("upsample");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 48, 48}));
    const ir::AttributeMap pad{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    ir::Node* c1 = *g->addNode(OpKind::Conv, "conv1", {x, *g->addConstant("w1", filled({16, 16, 3, 3}, 0.01f))},
                               {"c1"}, pad);
    ir::Node* ct = *g->addNode(OpKind::ConvTranspose, "up", {c1->output(), *g->addConstant("wt", filled({16, 16, 2, 2}, 0.03f))},
                               {"u"}, {{"strides", std::vector<int64_t>{2, 2}}});
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {ct->output()}, {"y"});
    g->setOutputs({r->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    EXPECT_EQ(convWindowRows(*ct, 2, 24, 36), (std::pair<int64_t, int64_t>{12, 18}));
    EXPECT_EQ(convWindowRows(*ct, 3, 0, 96), (std::pair<int64_t, int64_t>{0, 48}));
    EXPECT_FALSE(convWindowRows(*ct, 1, 0, 8)) << "channels are not a window";
    ir::Node* ct3 = *g->addNode(OpKind::ConvTranspose, "up3", {c1->output(), *g->addConstant("wt3", filled({16, 16, 3, 3}, 0.03f))},
                                {"u3"}, {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    // Output row o gathers input rows i with 2i - 1 <= o <= 2i + 1.
    EXPECT_EQ(convWindowRows(*ct3, 2, 24, 36), (std::pair<int64_t, int64_t>{12, 19}));
    EXPECT_EQ(convWindowRows(*ct3, 2, 0, 12), (std::pair<int64_t, int64_t>{0, 7}));
    ASSERT_TRUE(g->eraseNode(ct3).ok());

    const Program on = lowered(g, cores(8));
    const Program off = lowered(g, cores(8), false);
    const Buffer* kept = bufferOf(on, "c1");
    ASSERT_NE(kept, nullptr);
    ASSERT_GT(kept->stripes.size(), 1u) << "one stripe per part";
    for (const Buffer::Stripe& st : kept->stripes) {
        EXPECT_EQ(st.haloTop, 0);
        EXPECT_EQ(st.haloBottom, 0);
    }
    int reads = 0;
    for (const Task& t : on.tasks)
        if (const Task::HaloRead* h = t.haloReadOf(kept->id)) {
            ++reads;
            EXPECT_EQ(2 * (h->end - h->begin), t.sliceEnd - t.sliceBegin) << t.name << " reads half its rows";
            EXPECT_EQ(t.deps.size(), 1u) << t.name << " waits only for the part on its own core";
        }
    EXPECT_EQ(reads, static_cast<int>(kept->stripes.size()));
    sameNumbersWithLessTraffic(on, off, {filled({1, 16, 48, 48}, 0.2f)});
}

// A 3x3 convolution split by rows reads a row of each neighbour's stripe (its halo). Its
// producer's map still stays on chip a stripe per core: each writer also stores its first and last
// rows to the map's DRAM home, and each reader takes its own stripe from SRAM and the rest of its
// window from DRAM. Only the halo rows move; the numbers are bit for bit those of the program that
// keeps the map in DRAM (the race checker finds nothing), and a writer that skipped its halo
// store would give other numbers.
TEST(SramPlan, AThreeByThreeConvolutionReadsItsNeighboursHaloRowsThroughDram) {
    auto g = std::make_shared<ir::Graph>("halo");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 96, 96}));
    const ir::AttributeMap pad{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    ir::Node* c1 = *g->addNode(OpKind::Conv, "conv1", {x, *g->addConstant("w1", filled({16, 16, 3, 3}, 0.01f))},
                               {"c1"}, pad);
    ir::Node* c2 = *g->addNode(OpKind::Conv, "conv2", {c1->output(), *g->addConstant("w2", filled({16, 16, 3, 3}, 0.02f))},
                               {"c2"}, pad);
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {c2->output()}, {"y"});
    g->setOutputs({r->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    // The window of output rows [12, 24) of a 3x3, pad-1 convolution: input rows [11, 25).
    EXPECT_EQ(convWindowRows(*c2, 2, 12, 24), (std::pair<int64_t, int64_t>{11, 25}));
    EXPECT_EQ(convWindowRows(*c2, 2, 0, 12), (std::pair<int64_t, int64_t>{0, 13})) << "the padding is not read";
    EXPECT_FALSE(convWindowRows(*c2, 1, 0, 8)) << "channels are not a window";

    const Program on = lowered(g, cores(8));
    const Program off = lowered(g, cores(8), false);
    const Buffer* kept = bufferOf(on, "c1");
    ASSERT_NE(kept, nullptr);
    ASSERT_GT(kept->stripes.size(), 2u);
    EXPECT_EQ(kept->level, MemLevel::Dram) << "a halo buffer keeps its DRAM home";
    // An inner stripe stores a row at each end for its neighbours; the outer ones one end only.
    const Buffer::Stripe& inner = kept->stripes[1];
    EXPECT_EQ(inner.haloTop, 1);
    EXPECT_EQ(inner.haloBottom, 1);
    EXPECT_EQ(kept->stripes.front().haloTop, 0);
    EXPECT_EQ(kept->stripes.back().haloBottom, 0);
    int reads = 0;
    for (const Task& t : on.tasks)
        if (const Task::HaloRead* h = t.haloReadOf(kept->id)) {
            ++reads;
            EXPECT_LT(h->begin, h->end);
            EXPECT_LE(h->end - h->begin, t.sliceEnd - t.sliceBegin + 2) << t.name;
            EXPECT_LE(t.deps.size(), 3u) << t.name << " waits only for the parts its window meets";
        }
    EXPECT_EQ(reads, static_cast<int>(kept->stripes.size()));
    uint64_t saved = 0;
    for (const OnChip& k : on.onChip)
        saved += k.savedDmaBytes;
    EXPECT_EQ(on.memory.dramTrafficBytes + saved, off.memory.dramTrafficBytes);
    const std::vector<Tensor> in{filled({1, 16, 96, 96}, 0.2f)};
    const Tensor inDram = sameNumbersWithLessTraffic(on, off, in);

    // The artifact (version 4) keeps the halo: the stripes' rows, the parts' windows, the
    // halo transfers; what it reads back runs to the same numbers.
    const std::string dir = (std::filesystem::path(::testing::TempDir()) / "sextant_halo_artifact").string();
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(writeArtifact(on, dir).ok());
    Expected<Program> back = readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    const Buffer& kb = back->buffers[static_cast<size_t>(kept->id)];
    EXPECT_EQ(kb.level, MemLevel::Dram);
    ASSERT_EQ(kb.stripes.size(), kept->stripes.size());
    for (size_t i = 0; i < kb.stripes.size(); ++i) {
        EXPECT_EQ(kb.stripes[i].haloTop, kept->stripes[i].haloTop);
        EXPECT_EQ(kb.stripes[i].haloBottom, kept->stripes[i].haloBottom);
    }
    for (size_t i = 0; i < on.tasks.size(); ++i)
        EXPECT_EQ(back->tasks[i].haloReads, on.tasks[i].haloReads);
    EXPECT_EQ(back->transfers.size(), on.transfers.size());
    EXPECT_TRUE(simulated(*back, in).identical(inDram));

    Program skipped = on;
    for (Buffer& buf : skipped.buffers)
        for (Buffer::Stripe& st : buf.stripes)
            st.haloTop = st.haloBottom = 0;
    Expected<sim::SimResult> c = sim::simulate(skipped, in, sim::SimOptions{});
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_FALSE(c->outputs[0].identical(inDram)) << "the halo rows come from the DRAM home";
}

// A MaxPool or AveragePool split by rows reads a window as a convolution does: a 3x3, stride-2
// MaxPool's parts take their producer's stripe on chip and a row of the neighbour's through the
// DRAM home; an AveragePool whose window is its stride (the first step of split-global-pool)
// reads exactly its own stripe. The numbers are bit for bit those of the program in DRAM.
TEST(SramPlan, APoolingSplitByRowsReadsItsProducersStripeAndHaloRows) {
    for (OpKind kind : {OpKind::MaxPool, OpKind::AveragePool}) {
        auto g = std::make_shared<ir::Graph>("pool-halo");
        ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 96, 96}));
        // One output channel: the pooling's parts can only split by rows.
        ir::Node* c1 = *g->addNode(OpKind::Conv, "conv1", {x, *g->addConstant("w1", filled({1, 16, 1, 1}, 0.01f))},
                                   {"c1"});
        const bool max = kind == OpKind::MaxPool;
        ir::AttributeMap attrs{{"kernel_shape", std::vector<int64_t>{max ? 3 : 12, max ? 3 : 96}},
                               {"strides", std::vector<int64_t>{max ? 2 : 12, max ? 2 : 96}},
                               {"pads", std::vector<int64_t>{max ? 1 : 0, max ? 1 : 0, max ? 1 : 0, max ? 1 : 0}}};
        ir::Node* pool = *g->addNode(kind, "pool", {c1->output()}, {"p"}, attrs);
        ir::Node* r = *g->addNode(OpKind::Relu, "relu", {pool->output()}, {"y"});
        g->setOutputs({r->output()});
        ASSERT_TRUE(g->inferTypes().ok());
        if (max) {
            // Output rows [6, 12) of a 3x3, stride-2, pad-1 pooling: input rows [11, 24).
            EXPECT_EQ(convWindowRows(*pool, 2, 6, 12), (std::pair<int64_t, int64_t>{11, 24}));
        } else {
            EXPECT_EQ(convWindowRows(*pool, 2, 1, 2), (std::pair<int64_t, int64_t>{12, 24})) << "its own rows";
        }

        const Program on = lowered(g, cores(8));
        const Program off = lowered(g, cores(8), false);
        const Buffer* kept = bufferOf(on, "c1");
        ASSERT_NE(kept, nullptr);
        ASSERT_GT(kept->stripes.size(), 1u) << ir::qualifiedOpName(kind) << " keeps a stripe per part";
        int reads = 0;
        for (const Task& t : on.tasks)
            reads += t.haloReadOf(kept->id) != nullptr;
        EXPECT_EQ(reads, static_cast<int>(kept->stripes.size())) << ir::qualifiedOpName(kind);
        sameNumbersWithLessTraffic(on, off, {filled({1, 16, 96, 96}, 0.2f)});
    }
}

// A node whose own split differs from its data producer's may take the producer's (same axis,
// same ranges: splitAlong) where that costs no more than its choice plus the stripe's trip through
// DRAM; lower() keeps the aligned program where its schedule wins by a margin. Here a Relu after a
// convolution split by rows would split by channels on its own: aligned, each part reads its
// producer's stripe on its core, with the same numbers and less DRAM traffic.
TEST(SramPlan, ANodeTakesItsProducersSplitWhereItsStripeThenStaysOnChip) {
    auto g = std::make_shared<ir::Graph>("align");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 96, 96}));
    ir::Node* c = *g->addNode(OpKind::Conv, "conv", {x, *g->addConstant("w", filled({16, 16, 3, 3}, 0.01f))}, {"c"},
                              {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Node* r = *g->addNode(OpKind::Sigmoid, "sig", {c->output()}, {"y0"});
    ir::Node* s = *g->addNode(OpKind::Mul, "gate", {c->output(), r->output()}, {"y"});
    g->setOutputs({s->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    LowerOptions aligned;
    aligned.sram.alignSplits = true;
    Expected<Program> a = lower(g, cores(8), aligned);
    ASSERT_TRUE(a.ok()) << a.error().message;
    auto axisOf = [](const Program& p, const std::string& node) {
        for (const Task& t : p.tasks)
            if (t.nodes.front() == node)
                return t.sliceAxis;
        return -2;
    };
    const int convAxis = axisOf(*a, "conv");
    ASSERT_GE(convAxis, 2) << "the convolution splits by rows";
    EXPECT_EQ(axisOf(*a, "sig"), convAxis);
    for (const Task& t : a->tasks)
        if (t.nodes.front() == "sig") {
            const Buffer* cb = bufferOf(*a, "c");
            ASSERT_NE(cb, nullptr);
            EXPECT_TRUE(std::binary_search(t.sliceLocalInputs.begin(), t.sliceLocalInputs.end(), cb->id)) << t.name;
        }
    // splitAlong prices the producer's ranges for the consumer, or says it cannot.
    Expected<std::vector<Group>> groups = formGroups(*g);
    ASSERT_TRUE(groups.ok());
    const Group* sig = nullptr;
    for (const Group& grp : *groups)
        if (grp.nodes.front()->name() == "sig")
            sig = &grp;
    ASSERT_NE(sig, nullptr);
    std::vector<std::pair<int64_t, int64_t>> rows;
    for (int64_t p = 0; p < 8; ++p)
        rows.emplace_back(p * 12, (p + 1) * 12);
    std::optional<SplitPlan> along = splitAlong(*sig, cores(8), 2, rows);
    ASSERT_TRUE(along.has_value());
    EXPECT_EQ(along->ranges, rows);
    EXPECT_EQ(along->costs.size(), 8u);
    rows.back().second = 95; // not the output's extent
    EXPECT_FALSE(splitAlong(*sig, cores(8), 2, rows).has_value());
    const std::vector<Tensor> in{filled({1, 16, 96, 96}, 0.2f)};
    Expected<Program> off = lower(g, cores(8), [] {
        LowerOptions o;
        o.sram.keepOnChip = false;
        return o;
    }());
    ASSERT_TRUE(off.ok());
    sameNumbersWithLessTraffic(*a, *off, in);
}

// A depthwise 5x5 convolution chooses by itself to split by channels (its window would reach
// two rows into each neighbour's stripe); the pointwise convolution that alone reads it chooses
// rows. Aligned backwards, the depthwise one takes the pointwise one's rows, and the pointwise
// parts then read their stripes on chip; aligned only forwards they do not (the pointwise one
// cannot take a channel split it does not read in place).
TEST(SramPlan, ANodeTakesItsOnlyReadersSplitWhereTheReaderThenReadsItsStripeInPlace) {
    auto g = std::make_shared<ir::Graph>("backward");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 64, 40, 40}));
    ir::Node* dw = *g->addNode(OpKind::Conv, "dw", {x, *g->addConstant("wd", filled({64, 1, 5, 5}, 0.01f))}, {"d"},
                               {{"pads", std::vector<int64_t>{2, 2, 2, 2}}, {"group", int64_t{64}}});
    ir::Node* pw =
        *g->addNode(OpKind::Conv, "pw", {dw->output(), *g->addConstant("wp", filled({64, 64, 1, 1}, 0.02f))}, {"y"});
    g->setOutputs({pw->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    auto axisOf = [](const Program& p, const std::string& node) {
        for (const Task& t : p.tasks)
            if (t.nodes.front() == node)
                return t.sliceAxis;
        return -2;
    };
    auto readsOnChip = [](const Program& p) {
        const Buffer* d = bufferOf(p, "d");
        for (const Task& t : p.tasks)
            if (t.nodes.front() == "pw" &&
                !std::binary_search(t.sliceLocalInputs.begin(), t.sliceLocalInputs.end(), d->id))
                return false;
        return true;
    };
    LowerOptions forwards;
    forwards.sram.alignSplits = true;
    forwards.sram.tryAlignedSplits = false;
    Expected<Program> f = lower(g, cores(8), forwards);
    ASSERT_TRUE(f.ok()) << f.error().message;
    ASSERT_GE(axisOf(*f, "pw"), 2) << "the pointwise convolution splits by rows";
    ASSERT_EQ(axisOf(*f, "dw"), 1) << "the depthwise one, left to itself, by channels";
    EXPECT_FALSE(readsOnChip(*f));
    LowerOptions backwards = forwards;
    backwards.sram.alignBackward = true;
    Expected<Program> b = lower(g, cores(8), backwards);
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(axisOf(*b, "dw"), axisOf(*b, "pw"));
    EXPECT_TRUE(readsOnChip(*b));
    Expected<Program> off = lower(g, cores(8), [] {
        LowerOptions o;
        o.sram.keepOnChip = false;
        return o;
    }());
    ASSERT_TRUE(off.ok());
    sameNumbersWithLessTraffic(*b, *off, {filled({1, 64, 40, 40}, 0.2f)});
}

// With a measure (the runtime's is the simulator's timing run), lower() keeps the candidate
// program it measures fastest, whatever the schedule's estimates say; when the measure fails on
// every candidate, the least estimate decides.
TEST(SramPlan, LowerKeepsTheCandidateItsMeasureFindsFastest) {
    auto g = block(32);
    auto striped = [](const Program& p) {
        return std::any_of(p.tasks.begin(), p.tasks.end(),
                           [](const Task& t) { return !t.sliceLocalInputs.empty() || !t.haloReads.empty(); });
    };
    const Program plain = lowered(g, cores(8));
    ASSERT_TRUE(striped(plain)) << "by the estimates, the striped program wins";
    LowerOptions o;
    int runs = 0;
    o.measure = [&](const Program& p) -> Expected<uint64_t> {
        ++runs;
        return striped(p) ? 1000 : 10; // a measure that prefers the program without stripes
    };
    Expected<Program> m = lower(g, cores(8), o);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_FALSE(striped(*m));
    EXPECT_GE(runs, 3) << "striped, aligned (forwards, and backwards too) and whole";
    o.measure = [](const Program&) -> Expected<uint64_t> { return makeError(ErrorKind::Runtime, "no run"); };
    Expected<Program> e = lower(g, cores(8), o);
    ASSERT_TRUE(e.ok()) << e.error().message;
    EXPECT_LE(e->estCycles, plain.estCycles);
    EXPECT_TRUE(checkHazards(*e).ok());
}

// A map split by rows that one reader reads a stripe at a time (a pointwise convolution, on its
// producer's cores) and another reads whole (a global pooling) stays on chip a stripe per core
// for the first and goes through its DRAM home, which then holds every row, for the second: the
// pointwise parts load nothing of it, the pooling loads it as before. The numbers are bit for bit
// those of the program that keeps it in DRAM; without the home's rows they are not.
TEST(SramPlan, AMapReadWholeByOneReaderStaysOnChipForTheOthersThroughAFullDramHome) {
    auto g = std::make_shared<ir::Graph>("write-through");
    const auto [c3, pw] = convThenPointwise(*g);
    ir::Node* pool = *g->addNode(OpKind::GlobalAveragePool, "pool", {c3->output()}, {"g"});
    ir::Node* mul = *g->addNode(OpKind::Mul, "scale", {pw->output(), pool->output()}, {"y"});
    g->setOutputs({mul->output()});
    ASSERT_TRUE(g->inferTypes().ok());

    const Program on = lowered(g, cores(8));
    const Program off = lowered(g, cores(8), false);
    const Buffer* kept = bufferOf(on, "c3");
    ASSERT_NE(kept, nullptr);
    ASSERT_GT(kept->stripes.size(), 1u) << "kept a stripe per part";
    EXPECT_EQ(kept->level, MemLevel::Dram);
    EXPECT_TRUE(kept->homeHoldsAll());
    auto loadsOf = [&](const Task& t) {
        uint64_t bytes = 0;
        for (const Transfer& tr : on.transfers)
            if (tr.task == t.id && tr.load && tr.dramBuffer == kept->id)
                bytes += tr.bytes;
        return bytes;
    };
    int inPlace = 0, fromHome = 0;
    for (const Task& t : on.tasks) {
        if (std::find(t.inputs.begin(), t.inputs.end(), kept->id) == t.inputs.end())
            continue;
        if (t.nodes.front() == "pointwise") {
            EXPECT_EQ(loadsOf(t), 0u) << t.name << " reads its stripe in place";
            ++inPlace;
        } else {
            EXPECT_GT(loadsOf(t), 0u) << t.name << " reads the DRAM home";
            ++fromHome;
        }
    }
    EXPECT_GT(inPlace, 0);
    EXPECT_GT(fromHome, 0);
    const std::vector<Tensor> in{filled({1, 16, 96, 96}, 0.2f)};
    const Tensor inDram = sameNumbersWithLessTraffic(on, off, in);

    Program noHome = on;
    for (Buffer& buf : noHome.buffers)
        if (buf.id == kept->id)
            for (Buffer::Stripe& st : buf.stripes)
                st.haloTop = st.haloBottom = 0;
    Expected<sim::SimResult> c = sim::simulate(noHome, in, sim::SimOptions{});
    EXPECT_TRUE(!c.ok() || !c->outputs[0].identical(inDram)) << "the pooling reads every row from the DRAM home";
}

namespace {

/// Consecutive Tasks of one core where the second started before the first ended.
std::vector<std::pair<size_t, size_t>> besides(const Program& p, const sim::SimResult& r) {
    std::vector<std::pair<size_t, size_t>> out;
    std::map<int, size_t> last;
    for (size_t i = 0; i < p.tasks.size(); ++i) {
        auto it = last.find(p.tasks[i].core);
        if (it != last.end() && r.trace[i].start < r.trace[it->second].end)
            out.emplace_back(it->second, i);
        last[p.tasks[i].core] = i;
    }
    return out;
}

} // namespace

// A Task loads its weights (and what other Tasks computed) while the Task before it on its core
// computes, into slots the planner kept clear of that Task's buffers; its unit starts once the
// other's is done. The numbers are those of strict mode, where one Task runs at a time.
TEST(SramPlan, ATaskLoadsWhileTheOneBeforeItComputes) {
    const Program p = lowered(block(), cores(1));
    const std::vector<Tensor> in{filled({1, 8, 16, 16}, 0.2f)};
    sim::SimOptions async;
    async.checkRaces = true;
    Expected<sim::SimResult> r = sim::simulate(p, in, async);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const auto pairs = besides(p, *r);
    ASSERT_FALSE(pairs.empty()) << "no Task loads while the one before it runs";
    for (const auto& [head, next] : pairs) {
        const sim::TraceRecord &a = r->trace[head], &b = r->trace[next];
        EXPECT_GE(b.computeStart, a.computeEnd) << p.tasks[next].name;
        EXPECT_GE(b.end, a.end) << p.tasks[next].name;
        for (const SramBuffer& x : p.sramBuffers)
            for (const SramBuffer& y : p.sramBuffers)
                if (x.task == p.tasks[next].id && (y.task == p.tasks[head].id || y.lastTask == p.tasks[head].id) &&
                    x.id != y.id) {
                    EXPECT_TRUE(x.offset >= y.offset + y.size || y.offset >= x.offset + x.size)
                        << "slot " << x.id << " of " << p.tasks[next].name << " meets " << y.id;
                }
    }
    Expected<sim::SimResult> one = sim::simulate(p, in, [] {
        sim::SimOptions o;
        o.strict = true;
        return o;
    }());
    ASSERT_TRUE(one.ok()) << one.error().message;
    EXPECT_TRUE(besides(p, *one).empty()) << "strict mode runs one Task at a time";
    EXPECT_LT(r->totalCycles, one->totalCycles);
    ASSERT_EQ(r->outputs.size(), one->outputs.size());
    EXPECT_EQ(0, std::memcmp(r->outputs[0].data<float>(), one->outputs[0].data<float>(), one->outputs[0].numel() * sizeof(float)));

    // A slot moved onto one of the Task before it: its loads wait for that Task to end.
    Program moved = p;
    auto slotOf = [&](int task) -> SramBuffer* {
        for (SramBuffer& sb : moved.sramBuffers)
            if (sb.task == task && sb.role != SramRole::Resident)
                return &sb;
        return nullptr;
    };
    size_t head = 0, next = 0;
    SramBuffer *theirs = nullptr, *mine = nullptr;
    for (const auto& [h, n] : pairs)
        if (!mine && slotOf(moved.tasks[h].id) && slotOf(moved.tasks[n].id)) {
            head = h;
            next = n;
            theirs = slotOf(moved.tasks[h].id);
            mine = slotOf(moved.tasks[n].id);
        }
    ASSERT_NE(mine, nullptr) << "no pair of Tasks beside each other both with tile slots";
    mine->offset = theirs->offset;
    Expected<sim::SimResult> waits = sim::simulate(moved, in, async);
    ASSERT_TRUE(waits.ok()) << waits.error().message;
    EXPECT_GE(waits->trace[next].start, waits->trace[head].end + p.target.dispatchCycles);
    EXPECT_EQ(0, std::memcmp(waits->outputs[0].data<float>(), one->outputs[0].data<float>(), one->outputs[0].numel() * sizeof(float)));
}

// A Task's requests queue behind those of the Task before it on its core, and may be issued
// while the one before that still runs, but never into SRAM a running Task of its core uses:
// whenever two Tasks of one core overlap in time, their slots (and what each last reads) are apart.
TEST(SramPlan, TasksOfOneCoreThatOverlapInTimeNeverMeetInSram) {
    for (const auto& [p, in] : {std::pair{lowered(block(), cores(1)), filled({1, 8, 16, 16}, 0.2f)},
                                std::pair{lowered(block(32), cores(2)), filled({1, 8, 32, 32}, 0.2f)}}) {
        sim::SimOptions async;
        async.checkRaces = true;
        const std::vector<Tensor> inputs{in};
        Expected<sim::SimResult> r = sim::simulate(p, inputs, async);
        ASSERT_TRUE(r.ok()) << r.error().message;
        auto uses = [&](const SramBuffer& b, const Task& t) { return b.task == t.id || b.lastTask == t.id; };
        int overlapping = 0;
        for (size_t a = 0; a < p.tasks.size(); ++a)
            for (size_t b = a + 1; b < p.tasks.size(); ++b) {
                if (p.tasks[a].core != p.tasks[b].core || r->trace[b].start >= r->trace[a].end)
                    continue;
                ++overlapping;
                for (const SramBuffer& x : p.sramBuffers)
                    for (const SramBuffer& y : p.sramBuffers)
                        if (x.id != y.id && x.task == p.tasks[b].id && uses(y, p.tasks[a]) && x.core == y.core) {
                            EXPECT_TRUE(x.offset >= y.offset + y.size || y.offset >= x.offset + x.size)
                                << p.tasks[b].name << " (from " << r->trace[b].start << ") meets "
                                << p.tasks[a].name << " (until " << r->trace[a].end << ") in SRAM";
                        }
            }
        EXPECT_GT(overlapping, 0) << "no two Tasks of one core overlap";
    }
}

// A Task waiting for another core's result starts loading its weights before the event comes:
// it starts before it is ready, and its unit computes only after. The numbers are strict mode's.
TEST(SramPlan, ATaskLoadsItsWeightsBeforeItsEventsCome) {
    const Program p = lowered(block(32), cores(2));
    const std::vector<Tensor> in{filled({1, 8, 32, 32}, 0.2f)};
    sim::SimOptions async;
    async.checkRaces = true;
    Expected<sim::SimResult> r = sim::simulate(p, in, async);
    ASSERT_TRUE(r.ok()) << r.error().message;
    int early = 0;
    for (size_t i = 0; i < p.tasks.size(); ++i) {
        const sim::TraceRecord& t = r->trace[i];
        if (t.start >= t.ready)
            continue;
        ++early;
        EXPECT_FALSE(p.tasks[i].waitEvents.empty()) << p.tasks[i].name;
        EXPECT_GE(t.computeStart, t.ready) << p.tasks[i].name << " computes before its data came";
    }
    EXPECT_GT(early, 0) << "no Task loaded its weights before its events came";
    sim::SimOptions strict;
    strict.strict = true;
    Expected<sim::SimResult> one = sim::simulate(p, in, strict);
    ASSERT_TRUE(one.ok()) << one.error().message;
    for (const sim::TraceRecord& t : one->trace)
        EXPECT_GE(t.start, t.ready) << "strict mode starts a Task once it is ready";
    ASSERT_EQ(r->outputs.size(), one->outputs.size());
    EXPECT_TRUE(r->outputs[0].identical(one->outputs[0]));
}

// A Concat split along another dim than its own copies each part's slice of its inputs: the maps
// it joins stay on chip a stripe per core (it only stores them), with the same numbers. (Two
// one-channel maps: the split goes by rows, the only dim with room for eight parts.)
TEST(SramPlan, AConcatSplitByRowsCopiesItsInputsStripesFromSram) {
    auto g = std::make_shared<ir::Graph>("concat");
    const auto [c3, pw] = convThenPointwise(*g);
    ir::Node* a = *g->addNode(OpKind::Conv, "a", {pw->output(), *g->addConstant("wa", filled({1, 16, 1, 1}, 0.02f))}, {"ya"});
    ir::Node* b = *g->addNode(OpKind::Conv, "b", {pw->output(), *g->addConstant("wb", filled({1, 16, 1, 1}, -0.02f))}, {"yb"});
    ir::Node* cat = *g->addNode(OpKind::Concat, "cat", {a->output(), b->output()}, {"y"}, {{"axis", int64_t{1}}});
    g->setOutputs({cat->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    EXPECT_TRUE(readsOwnSlice(*cat, *a->output(), 2));
    EXPECT_TRUE(readsOwnSlice(*cat, *b->output(), 0));
    EXPECT_FALSE(readsOwnSlice(*cat, *a->output(), 1)) << "along its own axis a part takes other slices";

    const Program on = lowered(g, cores(8));
    const Program off = lowered(g, cores(8), false);
    for (const char* joined : {"ya", "yb"}) {
        const Buffer* kept = bufferOf(on, joined);
        ASSERT_NE(kept, nullptr);
        EXPECT_GT(kept->stripes.size(), 1u) << joined << " is kept a stripe per part";
        for (const Transfer& tr : on.transfers)
            EXPECT_FALSE(tr.load && tr.dramBuffer == kept->id) << joined << " is loaded from DRAM";
    }
    sameNumbersWithLessTraffic(on, off, {filled({1, 16, 96, 96}, 0.2f)});
}
