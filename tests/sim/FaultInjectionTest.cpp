// Fault injection (sim::FaultPlan, `run --inject`): each kind planted in a Program that passed
// every check, and what a user must then read: the watchdog naming the blocked Task, its node,
// the event and the Task that should have recorded it; the race checker naming both Tasks of an
// overlap; outputs that differ from the reference where the fault corrupts them, and the same
// numbers where it only slows the run.
#include "SampleProgram.h"

#include "core/backend/Lower.h"
#include "core/sim/CriticalPath.h"
#include "core/sim/Fault.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace simtest;

namespace {

sim::SimOptions withFault(sim::FaultKind kind, int task, bool strict = false, bool checkRaces = false) {
    sim::SimOptions o;
    o.fault = sim::FaultPlan{kind, task};
    o.strict = strict;
    o.checkRaces = checkRaces;
    return o;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

/// y = Add(Conv(x, w1), Conv(x, w2)) lowered for the default 8-core target: a real plan with
/// split convolutions, events between cores and a Task reading two Task-written buffers.
std::shared_ptr<ir::Graph> twoBranchGraph() {
    auto g = std::make_shared<ir::Graph>("branches");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 16, 24, 24})).value();
    ir::Value* w1 = g->addConstant("w1", ramp({16, 16, 3, 3}, 0.37, 0.0)).value();
    ir::Value* w2 = g->addConstant("w2", ramp({16, 16, 3, 3}, 0.53, 0.1)).value();
    ir::AttributeMap conv;
    conv["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    ir::Node* a = g->addNode(ir::OpKind::Conv, "conv_a", {x, w1}, {"a"}, conv).value();
    ir::Node* b = g->addNode(ir::OpKind::Conv, "conv_b", {x, w2}, {"b"}, conv).value();
    ir::Node* y = g->addNode(ir::OpKind::Add, "add", {a->output(), b->output()}, {"y"}).value();
    g->setOutputs({y->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

} // namespace

TEST(FaultPlan, ParsesKindAndTaskAndRejectsBadSpecs) {
    auto ok = sim::parseFaultPlan("shift-address:12");
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_EQ(ok->kind, sim::FaultKind::ShiftAddress);
    EXPECT_EQ(ok->task, 12);
    EXPECT_EQ(sim::faultSpec(*ok), "shift-address:12");
    EXPECT_EQ(sim::parseFaultPlan("drop-record:0")->kind, sim::FaultKind::DropRecord);
    EXPECT_EQ(sim::parseFaultPlan("delay-dma:3")->kind, sim::FaultKind::DelayDma);

    auto unknown = sim::parseFaultPlan("flip-bit:3");
    ASSERT_FALSE(unknown.ok());
    EXPECT_TRUE(contains(unknown.error().message, "unknown kind 'flip-bit' (kinds: drop-record, delay-dma, shift-address)"))
        << unknown.error().message;
    for (const char* bad : {"drop-record:", "drop-record:-1", "drop-record:x", "drop-record:3.5",
                            "drop-record:99999999999999999999"}) {
        auto r = sim::parseFaultPlan(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_TRUE(contains(r.error().message, "is not a Task id")) << r.error().message;
    }
    auto noColon = sim::parseFaultPlan("drop-record");
    ASSERT_FALSE(noColon.ok());
    EXPECT_TRUE(contains(noColon.error().message, "is not KIND:N")) << noColon.error().message;
}

TEST(FaultPlan, RejectsAFaultThatDoesNotFitTheProgram) {
    Sample s = makeSample();
    auto none = simulateSample(s, withFault(sim::FaultKind::DropRecord, 99));
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().kind, ErrorKind::Invalid);
    EXPECT_EQ(none.error().message, "inject drop-record:99: the program has no task 99 (its task ids run 0..3)");
    EXPECT_FALSE(sim::isSafetyNetStop(none.error()));

    auto noEvent = simulateSample(s, withFault(sim::FaultKind::DropRecord, 0));
    ASSERT_FALSE(noEvent.ok());
    EXPECT_TRUE(contains(noEvent.error().message, "inject drop-record:0: task 0 'conv' records no event"))
        << noEvent.error().message;

    s.program.tasks[2].dmaBytes = 0;
    auto noDma = simulateSample(s, withFault(sim::FaultKind::DelayDma, 2));
    ASSERT_FALSE(noDma.ok());
    EXPECT_TRUE(contains(noDma.error().message, "task 2 'sig' moves no bytes")) << noDma.error().message;

    // y is read by no Task: nothing live to move it onto.
    auto noShift = simulateSample(s, withFault(sim::FaultKind::ShiftAddress, 3));
    ASSERT_FALSE(noShift.ok());
    EXPECT_TRUE(contains(noShift.error().message, "no live buffer to move it onto")) << noShift.error().message;
}

TEST(FaultInjection, DroppedRecordMakesTheWatchdogNameWaiterEventAndRecorder) {
    for (bool strict : {false, true}) {
        Sample s = makeSample();
        auto r = simulateSample(s, withFault(sim::FaultKind::DropRecord, 1, strict));
        ASSERT_FALSE(r.ok());
        const std::string& m = r.error().message;
        EXPECT_TRUE(sim::isSafetyNetStop(r.error())) << m;
        EXPECT_TRUE(contains(m, "watchdog: no task can make progress")) << m;
        EXPECT_TRUE(contains(m, "3 of 4 tasks finished")) << m;
        EXPECT_TRUE(contains(m, "task 3 'add' (node 'add') on core 1 waits on event 0 (slot 0 of core 0), which "
                                "task 1 'relu' (node 'relu') should have recorded: task 1 ended at cycle "))
            << m;
        EXPECT_TRUE(contains(m, " without recording it (injected fault drop-record:1)")) << m;
    }
    // The fault is in the run, not the Program: the same Program runs clean without it.
    Sample s = makeSample();
    EXPECT_TRUE(simulateSample(s).ok());
    EXPECT_EQ(sim::describeFault(s.program, {sim::FaultKind::DropRecord, 1}),
              "inject drop-record:1: task 1 'relu' (node 'relu') ends without recording event 0 (waited on by task 3 "
              "'add')");
}

TEST(FaultInjection, DelayedDmaSlowsTheRunButKeepsItsNumbers) {
    for (bool strict : {false, true}) {
        Sample s = makeSample();
        sim::SimOptions plain;
        plain.strict = strict;
        auto clean = simulateSample(s, plain);
        auto slow = simulateSample(s, withFault(sim::FaultKind::DelayDma, 0, strict, /*checkRaces=*/true));
        ASSERT_TRUE(clean.ok() && slow.ok()) << (slow.ok() ? clean.error().message : slow.error().message);
        // The same bytes at a hundredth of the rate (each figure rounded up to whole cycles).
        EXPECT_LE(slow->trace[0].dmaCycles, clean->trace[0].dmaCycles * sim::kDmaDelayFactor);
        EXPECT_GT(slow->trace[0].dmaCycles, (clean->trace[0].dmaCycles - 1) * sim::kDmaDelayFactor);
        EXPECT_GT(slow->totalCycles, clean->totalCycles + clean->trace[0].dmaCycles * 50);
        EXPECT_TRUE(slow->outputs[0].identical(clean->outputs[0]));
        // The delayed Task is on the critical path: it is what the run waited for.
        const auto path = sim::criticalPath(s.program, *slow, strict);
        EXPECT_TRUE(std::any_of(path.begin(), path.end(), [](const sim::CriticalStep& c) { return c.task == 0; }));
    }
}

TEST(FaultInjection, ShiftedAddressIsARaceNamingBothTasksAndCorruptsOutputs) {
    for (bool strict : {false, true}) {
        Sample s = makeSample();
        EXPECT_EQ(sim::describeFault(s.program, {sim::FaultKind::ShiftAddress, 1}),
                  "inject shift-address:1: task 1 'relu' (node 'relu'): its buffer 5 ('r') moves in DRAM from offset "
                  "640 to 768, onto live buffer 6 ('s', [768, 896), written by task 2 'sig')");
        auto caught = simulateSample(s, withFault(sim::FaultKind::ShiftAddress, 1, strict, /*checkRaces=*/true));
        ASSERT_FALSE(caught.ok());
        const std::string& m = caught.error().message;
        EXPECT_TRUE(sim::isSafetyNetStop(caught.error())) << m;
        EXPECT_TRUE(contains(m, "race: task 3 'add' (node 'add') on core 1")) << m;
        EXPECT_TRUE(contains(m, "the memory plan overlaps two live buffers")) << m;
        EXPECT_TRUE(contains(m, "buffer 5 ('r') written by task 1 'relu' (node 'relu') on core 0")) << m;
        EXPECT_TRUE(contains(m, "buffer 6 ('s') written by task 2 'sig' (node 'sig') on core 1")) << m;
        EXPECT_TRUE(contains(m, "sharing [768, 896) in DRAM")) << m;

        sim::SimOptions plain;
        plain.strict = strict;
        auto wrong = simulateSample(s, withFault(sim::FaultKind::ShiftAddress, 1, strict));
        ASSERT_TRUE(wrong.ok()) << wrong.error().message;
        EXPECT_GT(maxAbsDiff(wrong->outputs[0], reference(s)), 0.1);
        auto clean = simulateSample(s, plain);
        ASSERT_TRUE(clean.ok());
        EXPECT_LT(maxAbsDiff(clean->outputs[0], reference(s)), 2e-2);
    }
}

// The same on a lowered Program: split convolutions on eight cores, the planner's events (no
// aligned-split candidate, whose program for this graph needs no cross-core event).
TEST(FaultInjection, KindsWorkOnALoweredProgram) {
    auto g = twoBranchGraph();
    backend::LowerOptions withEvents;
    withEvents.sram.tryAlignedSplits = false;
    auto p = backend::lower(g, backend::defaultTarget(), withEvents);
    ASSERT_TRUE(p.ok()) << p.error().message;
    const std::vector<ir::Tensor> in{ramp({1, 16, 24, 24}, 0.21, 0.0)};
    auto clean = sim::simulate(*p, in);
    ASSERT_TRUE(clean.ok()) << clean.error().message;

    // A Task whose record another core waits for.
    const backend::Task* recorder = nullptr;
    for (const backend::Task& t : p->tasks)
        if (!recorder && sim::checkFault(*p, {sim::FaultKind::DropRecord, t.id}).ok())
            recorder = &t;
    ASSERT_NE(recorder, nullptr) << "the lowered program has no cross-core event";
    auto blocked = sim::simulate(*p, in, withFault(sim::FaultKind::DropRecord, recorder->id));
    ASSERT_FALSE(blocked.ok());
    const std::string& m = blocked.error().message;
    EXPECT_TRUE(contains(m, "which " + sim::taskAndNodes(*recorder) + " should have recorded: task " +
                                std::to_string(recorder->id) + " ended at cycle "))
        << m;
    EXPECT_TRUE(contains(m, "(injected fault drop-record:" + std::to_string(recorder->id) + ")")) << m;

    // A Task whose output the Add reads beside the other branch's: moved onto it, a race.
    const backend::Task* shifted = nullptr;
    for (const backend::Task& t : p->tasks) {
        auto shift = sim::shiftFor(*p, {sim::FaultKind::ShiftAddress, t.id});
        if (!shifted && shift.ok() && p->buffers[shift->onto].firstTask >= 0)
            shifted = &t;
    }
    ASSERT_NE(shifted, nullptr) << "no Task writes a buffer read beside another Task's";
    auto race = sim::simulate(*p, in, withFault(sim::FaultKind::ShiftAddress, shifted->id, false, true));
    ASSERT_FALSE(race.ok());
    EXPECT_TRUE(sim::isSafetyNetStop(race.error())) << race.error().message;
    EXPECT_TRUE(contains(race.error().message, "the memory plan overlaps two live buffers")) << race.error().message;
    // It names a Task of the node whose output moved (which part meets the overlap first depends
    // on the timing) and the moved buffer.
    EXPECT_TRUE(contains(race.error().message, "(node '" + shifted->nodes.front() + "')")) << race.error().message;
    const size_t moved = sim::shiftFor(*p, {sim::FaultKind::ShiftAddress, shifted->id})->buffer;
    EXPECT_TRUE(contains(race.error().message, "('" + p->buffers[moved].value + "')")) << race.error().message;
    auto wrong = sim::simulate(*p, in, withFault(sim::FaultKind::ShiftAddress, shifted->id));
    ASSERT_TRUE(wrong.ok()) << wrong.error().message;
    EXPECT_GT(maxAbsDiff(wrong->outputs[0], clean->outputs[0]), 1e-3);

    // A delayed DMA: later, same numbers.
    auto slow = sim::simulate(*p, in, withFault(sim::FaultKind::DelayDma, shifted->id, false, true));
    ASSERT_TRUE(slow.ok()) << slow.error().message;
    EXPECT_GT(slow->totalCycles, clean->totalCycles);
    EXPECT_TRUE(slow->outputs[0].identical(clean->outputs[0]));
}
