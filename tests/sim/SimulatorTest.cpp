// The simulator on a hand-built Program: it must compute what the reference interpreter computes
// (within f16 rounding), and it must really read the planned addresses: a corrupted plan or a
// dropped event wait gives wrong numbers or a watchdog error.
#include "core/sim/Simulator.h"
#include "core/backend/Lower.h"
#include "core/ir/Half.h"
#include "core/ir/Interpreter.h"
#include "core/sim/MemoryImage.h"
#include "SampleProgram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace simtest; // sextant, backend::Buffer, Program, Task, ...

TEST(Simulator, MatchesInterpreterWithinHalfPrecision) {
    Sample s = makeSample();
    auto r = simulateSample(s);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->outputs.size(), 1u);
    ir::Tensor want = reference(s);
    EXPECT_EQ(r->outputs[0].shape(), want.shape());
    // f16 inputs to the conv: about 3 significant digits over 18 products.
    EXPECT_LT(maxAbsDiff(r->outputs[0], want), 2e-2);
    // ... but not bit-identical to f32: the cube really rounded its inputs to f16.
    EXPECT_GT(maxAbsDiff(r->outputs[0], want), 0.0);
}

TEST(Simulator, TimingFollowsTheEventAndTheCoreQueues) {
    Sample s = makeSample();
    auto r = simulateSample(s);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const auto& t = r->trace;
    ASSERT_EQ(t.size(), 4u);
    const backend::Target& tg = s.program.target;
    // First Task on each core starts after one dispatch.
    EXPECT_EQ(t[0].start, tg.dispatchCycles);
    EXPECT_EQ(t[2].start, tg.dispatchCycles);
    // Same-core successor: core free + dispatch.
    EXPECT_EQ(t[1].start, t[0].end + tg.dispatchCycles);
    // Cross-core consumer: the event arrives eventLatency after its recording Task ends.
    EXPECT_EQ(t[3].ready, t[1].end + tg.eventLatencyCycles);
    EXPECT_EQ(t[3].start, std::max(t[3].ready, t[2].end + tg.dispatchCycles));
    // Tasks that move data pay the DRAM latency. Bandwidth is shared by the Tasks moving data when
    // one starts: task 2 starts (same cycle, higher id) while task 0 is moving data.
    for (const auto& rec : t)
        EXPECT_GE(rec.end - rec.start, tg.dramLatencyCycles);
    EXPECT_EQ(t[0].dmaSharers, 1);
    EXPECT_EQ(t[2].dmaSharers, 2);
    EXPECT_EQ(r->totalCycles, t[3].end);
    // This hand-made Program has no cost-model compute figures (as an artifact from before they
    // existed): the compute is timed from the flops at the unit's rate. A Task that has one (every
    // Task lower() makes) is timed with it.
    const uint64_t cubeRate = 2ull * tg.cubeM * tg.cubeN * tg.cubeK;
    ASSERT_EQ(s.program.tasks[0].unit, backend::UnitKind::Cube);
    EXPECT_EQ(t[0].computeCycles, (s.program.tasks[0].flops + cubeRate - 1) / cubeRate);
    Sample costed = makeSample();
    costed.program.tasks[0].computeCycles = 777;
    auto withFigure = simulateSample(costed);
    ASSERT_TRUE(withFigure.ok()) << withFigure.error().message;
    EXPECT_EQ(withFigure->trace[0].computeCycles, 777u);
}

TEST(Simulator, IsDeterministic) {
    Sample s = makeSample();
    auto a = simulateSample(s);
    auto b = simulateSample(s);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->trace.size(), b->trace.size());
    for (size_t i = 0; i < a->trace.size(); ++i) {
        EXPECT_EQ(a->trace[i].start, b->trace[i].start);
        EXPECT_EQ(a->trace[i].end, b->trace[i].end);
        EXPECT_EQ(a->trace[i].ready, b->trace[i].ready);
    }
    EXPECT_TRUE(a->outputs[0].identical(b->outputs[0]));
}

TEST(Simulator, OverlappingLiveBuffersGiveWrongNumbers) {
    Sample s = makeSample();
    // Put s on top of r: both are live when task 3 reads them.
    s.program.buffers[6].offset = s.program.buffers[5].offset;
    auto r = simulateSample(s);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_GT(maxAbsDiff(r->outputs[0], reference(s)), 0.1);
}

TEST(Simulator, WeightsComeFromTheirPlannedAddress) {
    Sample s = makeSample();
    // Point the conv's weight buffer at the bias region: the kernel must read garbage weights.
    Sample bad = makeSample();
    bad.program.buffers[0].offset = 64 * 3; // overlaps b and x
    bad.program.buffers[0].size = 192;
    auto r = simulateSample(bad);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_GT(maxAbsDiff(r->outputs[0], reference(s)), 0.1);
}

TEST(Simulator, DroppedWaitIsARace) {
    Sample s = makeSample();
    s.program.tasks[3].waitEvents.clear();
    auto r = simulateSample(s);
    ASSERT_TRUE(r.ok()) << r.error().message;
    // Task 3 now starts before task 1 wrote r: it reads zeros and the output is wrong.
    EXPECT_LT(r->trace[3].start, r->trace[1].end);
    EXPECT_GT(maxAbsDiff(r->outputs[0], reference(s)), 0.1);
}

TEST(Simulator, WatchdogNamesTheBlockedTaskAndEvent) {
    Sample s = makeSample();
    s.program.tasks[1].recordEvents.clear(); // the record never comes
    auto r = simulateSample(s);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::Runtime);
    const std::string& m = r.error().message;
    EXPECT_NE(m.find("watchdog"), std::string::npos) << m;
    EXPECT_NE(m.find("task 3 'add'"), std::string::npos) << m;
    EXPECT_NE(m.find("waits on event 0"), std::string::npos) << m;
    EXPECT_NE(m.find("3 of 4 tasks finished"), std::string::npos) << m;
}

TEST(Simulator, StrictModeRunsOneTaskAtATime) {
    Sample s = makeSample();
    sim::SimOptions opt;
    opt.strict = true;
    auto r = simulateSample(s, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    for (size_t i = 1; i < r->trace.size(); ++i)
        EXPECT_GE(r->trace[i].start, r->trace[i - 1].end);
    auto async = simulateSample(s);
    ASSERT_TRUE(async.ok());
    EXPECT_GT(r->totalCycles, async->totalCycles);
    EXPECT_TRUE(r->outputs[0].identical(async->outputs[0]));
}

TEST(Simulator, RejectsBadInputsAndPlans) {
    Sample s = makeSample();
    ir::Tensor wrong(ir::DType::F32, {1, 2, 4, 5});
    std::vector<ir::Tensor> in{wrong};
    auto r = sim::simulate(s.program, in);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("input 0 'x'"), std::string::npos) << r.error().message;

    Sample small = makeSample();
    small.program.buffers[4].size = 64; // c needs 128 bytes
    auto r2 = simulateSample(small);
    ASSERT_FALSE(r2.ok());
    EXPECT_NE(r2.error().message.find("buffer 4 ('c'"), std::string::npos) << r2.error().message;

    Sample badCore = makeSample();
    badCore.program.tasks[2].core = 99;
    auto r3 = simulateSample(badCore);
    ASSERT_FALSE(r3.ok());
    EXPECT_NE(r3.error().message.find("core 99"), std::string::npos) << r3.error().message;

    Sample noOut = makeSample();
    noOut.program.tasks[1].nodes = {"conv"}; // r is never computed
    auto r4 = simulateSample(noOut);
    ASSERT_FALSE(r4.ok());
    EXPECT_NE(r4.error().message.find("'r'"), std::string::npos) << r4.error().message;
}

TEST(MemoryImage, RoundTripsAndRoundsToTheBufferType) {
    Sample s = makeSample();
    auto img = sim::MemoryImage::forProgram(s.program);
    ASSERT_TRUE(img.ok()) << img.error().message;
    EXPECT_EQ(img->dramBytes(), 896u);
    Buffer half = s.program.buffers[2];
    half.type.dtype = ir::DType::F16;
    ASSERT_TRUE(img->write(half, s.input).ok());
    auto back = img->read(half);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->dtype(), ir::DType::F16);
    for (int64_t i = 0; i < s.input.numel(); ++i)
        EXPECT_FLOAT_EQ(static_cast<float>(back->at(i)),
                        ir::roundToHalf(static_cast<float>(s.input.at(i))));
}

TEST(SimulatorRaceChecker, NamesTheMissingWait) {
    Sample s = makeSample();
    s.program.tasks[3].waitEvents.clear();
    sim::SimOptions opt;
    opt.checkRaces = true;
    auto r = simulateSample(s, opt);
    ASSERT_FALSE(r.ok());
    const std::string& m = r.error().message;
    EXPECT_NE(m.find("race: task 3 'add' (node 'add') on core 1"), std::string::npos) << m;
    EXPECT_NE(m.find("reads buffer 5 ('r') before its producer task 1 'relu' (node 'relu') on core 0 ended"),
              std::string::npos)
        << m;
}

TEST(SimulatorRaceChecker, NamesOverlappingLiveBuffers) {
    Sample s = makeSample();
    s.program.buffers[6].offset = s.program.buffers[5].offset; // s on top of r
    sim::SimOptions opt;
    opt.checkRaces = true;
    auto r = simulateSample(s, opt);
    ASSERT_FALSE(r.ok());
    const std::string& m = r.error().message;
    EXPECT_NE(m.find("race: task 3 'add'"), std::string::npos) << m;
    EXPECT_NE(m.find("reads buffer 6 ('s') but its bytes were overwritten by buffer 5 ('r')"),
              std::string::npos)
        << m;
}

TEST(SimulatorRaceChecker, AcceptsACorrectPlanWithAddressReuse) {
    Sample s = makeSample();
    // y may reuse c's addresses: c is dead once task 1 has read it, and task 3 runs after task 1.
    s.program.buffers[3].offset = s.program.buffers[4].offset;
    sim::SimOptions opt;
    opt.checkRaces = true;
    auto checked = simulateSample(s, opt);
    ASSERT_TRUE(checked.ok()) << checked.error().message;
    auto plain = simulateSample(s);
    ASSERT_TRUE(plain.ok());
    EXPECT_TRUE(checked->outputs[0].identical(plain->outputs[0]));
    EXPECT_LT(maxAbsDiff(checked->outputs[0], reference(s)), 2e-2);
}

// A node shared out across the cores computes, part by part, exactly what one core computes:
// each part writes its slice, and the parts together the whole output, bit for bit.
TEST(Simulator, SplitNodeGivesTheNumbersOfOneCore) {
    auto g = std::make_shared<ir::Graph>("split");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 32, 48, 48})).value();
    ir::Value* w = g->addConstant("w", ramp({48, 32, 3, 3}, 0.37, 0.0)).value();
    ir::AttributeMap conv;
    conv["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    ir::Node* c = g->addNode(ir::OpKind::Conv, "conv", {x, w}, {"c"}, conv).value();
    ir::Node* r = g->addNode(ir::OpKind::Relu, "relu", {c->output()}, {"y"}).value();
    g->setOutputs({r->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    backend::Target one = backend::defaultTarget();
    one.numCores = 1;
    auto eight = backend::lower(g, backend::defaultTarget());
    auto single = backend::lower(g, one);
    ASSERT_TRUE(eight.ok() && single.ok());
    ASSERT_GT(eight->tasks.size(), single->tasks.size()) << "the convolution should be shared out";
    const ir::Tensor input = ramp({1, 32, 48, 48}, 0.11, 0.0);
    sim::SimOptions check;
    check.checkRaces = true;
    auto a = sim::simulate(*eight, std::vector<ir::Tensor>{input}, check);
    auto b = sim::simulate(*single, std::vector<ir::Tensor>{input}, check);
    ASSERT_TRUE(a.ok()) << a.error().message;
    ASSERT_TRUE(b.ok()) << b.error().message;
    ASSERT_EQ(a->outputs.size(), 1u);
    ASSERT_EQ(a->outputs[0].byteSize(), b->outputs[0].byteSize());
    EXPECT_EQ(std::memcmp(a->outputs[0].bytes(), b->outputs[0].bytes(), a->outputs[0].byteSize()), 0);
    EXPECT_LT(a->totalCycles, b->totalCycles);
}

TEST(Simulator, AKernelErrorNamesItsTaskAndNodeOnce) {
    // An index past the end is found only when the Gather runs: the error names the Task, then
    // the node once ("node 'gather' (Gather): ..."), not "node 'gather': node 'gather' (Gather)".
    auto g = std::make_shared<ir::Graph>("gather");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {3})).value();
    ir::Value* idx = g->addConstant("idx", ir::Tensor::fromVector<int64_t>({1}, {5})).value();
    ir::Node* n = g->addNode(ir::OpKind::Gather, "gather", {x, idx}, {"y"}).value();
    g->setOutputs({n->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    auto program = backend::lower(g, backend::defaultTarget());
    ASSERT_TRUE(program.ok()) << program.error().message;
    auto r = sim::simulate(*program, std::vector<ir::Tensor>{ramp({3}, 0.5, 0.0)});
    ASSERT_FALSE(r.ok());
    const std::string& m = r.error().message;
    EXPECT_NE(m.find("'gather': node 'gather' (Gather): "), std::string::npos) << m;
    EXPECT_NE(m.find("out of range"), std::string::npos) << m;
    EXPECT_EQ(m.find("node 'gather'"), m.rfind("node 'gather'")) << "the node is named twice: " << m;
}
