// listSchedule and allocateEvents on hand-built Task graphs. npu-a's figures: 100 cycles to
// dispatch a Task, 200 for an event to reach another core.
#include "core/backend/EventAllocator.h"
#include "core/backend/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace sextant;
using namespace sextant::backend;

namespace {

Target cores(int n) {
    Target t = defaultTarget();
    t.numCores = n;
    return t;
}

/// What any list schedule must hold: a Task starts after its inputs are there (one event latency
/// later when they come from another core) and a core runs one Task at a time.
void expectSound(const std::vector<std::vector<int>>& preds, const std::vector<uint64_t>& cycles,
                 const std::vector<ScheduleSlot>& s, const Target& t) {
    ASSERT_EQ(s.size(), preds.size());
    for (size_t i = 0; i < s.size(); ++i) {
        SCOPED_TRACE("task " + std::to_string(i));
        EXPECT_GE(s[i].core, 0);
        EXPECT_LT(s[i].core, t.numCores);
        EXPECT_EQ(s[i].end, s[i].start + t.dispatchCycles + cycles[i]);
        for (int p : preds[i]) {
            const ScheduleSlot& q = s[static_cast<size_t>(p)];
            EXPECT_GE(s[i].start, q.end + (q.core == s[i].core ? 0 : t.eventLatencyCycles)) << "after task " << p;
        }
        for (size_t j = 0; j < i; ++j) {
            if (s[j].core == s[i].core) {
                EXPECT_TRUE(s[j].end <= s[i].start || s[i].end <= s[j].start) << "overlaps task " << j;
            }
        }
    }
}

} // namespace

TEST(ListSchedule, AChainStaysOnOneCore) {
    // Moving the next link to the idle core would make it wait 200 cycles for the event.
    const std::vector<std::vector<int>> preds{{}, {0}, {1}};
    const std::vector<uint64_t> cycles{1000, 1000, 1000};
    const Target t = cores(2);
    std::vector<ScheduleSlot> s = listSchedule(preds, cycles, t);
    expectSound(preds, cycles, s, t);
    for (const ScheduleSlot& slot : s)
        EXPECT_EQ(slot.core, 0);
    EXPECT_EQ(s[1].start, 1100u);
    EXPECT_EQ(s[2].end, 3300u);
}

TEST(ListSchedule, IndependentWorkGoesToOtherCores) {
    const std::vector<std::vector<int>> preds{{}, {}, {}};
    const std::vector<uint64_t> cycles{500, 500, 500};
    const Target three = cores(3);
    std::vector<ScheduleSlot> s = listSchedule(preds, cycles, three);
    expectSound(preds, cycles, s, three);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(s[static_cast<size_t>(i)].core, i);
        EXPECT_EQ(s[static_cast<size_t>(i)].start, 0u);
    }
    // On two cores the third waits for the first free one; both are free at 600, the lower wins.
    const Target two = cores(2);
    s = listSchedule(preds, cycles, two);
    expectSound(preds, cycles, s, two);
    EXPECT_EQ(s[2].core, 0);
    EXPECT_EQ(s[2].start, 600u);
    // One core: one after the other.
    const Target one = cores(1);
    s = listSchedule(preds, cycles, one);
    expectSound(preds, cycles, s, one);
    EXPECT_EQ(s[2].end, 1800u);
}

TEST(ListSchedule, ADependentTaskMovesOnlyWhenWaitingCostsMoreThanTheEvent) {
    // t0 [0, 200) on core 0. t1 (5000 cycles) follows it there. t2 needs t0 too: core 0 is busy
    // until 5300, core 1 has t0's output at 200 + 200 = 400, so t2 runs there.
    const Target t = cores(2);
    const std::vector<std::vector<int>> preds{{}, {0}, {0}};
    std::vector<uint64_t> cycles{100, 5000, 10};
    std::vector<ScheduleSlot> s = listSchedule(preds, cycles, t);
    expectSound(preds, cycles, s, t);
    EXPECT_EQ(s[1].core, 0);
    EXPECT_EQ(s[2].core, 1);
    EXPECT_EQ(s[2].start, 400u);
    // With a 50-cycle t1, core 0 is free at 350, before the event would arrive: t2 stays.
    cycles[1] = 50;
    s = listSchedule(preds, cycles, t);
    expectSound(preds, cycles, s, t);
    EXPECT_EQ(s[2].core, 0);
    EXPECT_EQ(s[2].start, 350u);
}

TEST(ListSchedule, AJoinWaitsForItsLastInput) {
    // Diamond t0 -> {t1, t2} -> t3. t1 follows t0 on core 0 [1100, 2200); t2 goes to core 1 at
    // 1300 [1300, 2400). t3 could start at 2400 on core 1 (t1's event arrives at 2400) or at
    // 2600 on core 0 (t2's event): core 1.
    const Target t = cores(2);
    const std::vector<std::vector<int>> preds{{}, {0}, {0}, {1, 2}};
    const std::vector<uint64_t> cycles{1000, 1000, 1000, 10};
    std::vector<ScheduleSlot> s = listSchedule(preds, cycles, t);
    expectSound(preds, cycles, s, t);
    EXPECT_EQ(s[1].core, 0);
    EXPECT_EQ(s[2].core, 1);
    EXPECT_EQ(s[2].start, 1300u);
    EXPECT_EQ(s[3].core, 1);
    EXPECT_EQ(s[3].start, 2400u);
    EXPECT_EQ(s[3].end, 2510u);
}

namespace {

/// Tasks t0, t1, ... given as {core, deps}, on a target with `numCores` cores and `slots` event
/// slots per core.
Program programOf(int numCores, int slots, const std::vector<std::pair<int, std::vector<int>>>& tasks) {
    Program p;
    p.target = cores(numCores);
    p.target.eventSlotsPerCore = slots;
    for (size_t i = 0; i < tasks.size(); ++i) {
        Task t;
        t.id = static_cast<int>(i);
        t.name = "t" + std::to_string(i);
        t.core = tasks[i].first;
        t.deps = tasks[i].second;
        p.tasks.push_back(std::move(t));
    }
    return p;
}

int slotsUsed(const Program& p, int core) {
    int most = -1;
    for (const Event& e : p.events)
        if (e.core == core)
            most = std::max(most, e.slot);
    return most + 1;
}

} // namespace

TEST(AllocateEvents, OneEventPerProducerAndConsumingCore) {
    // t0 on core 0 feeds t1 and t2 on core 1: one event, waited on by t1; t2 comes after t1 on
    // its core and needs no wait of its own. t3 on core 0 needs no event at all.
    Program p = programOf(2, 64, {{0, {}}, {1, {0}}, {1, {0}}, {0, {0}}});
    Status st = allocateEvents(p);
    ASSERT_TRUE(st.ok()) << st.error().message;
    ASSERT_EQ(p.events.size(), 1u);
    EXPECT_EQ(p.events[0].producerTask, 0);
    EXPECT_EQ(p.events[0].core, 0);
    EXPECT_EQ(p.events[0].slot, 0);
    EXPECT_EQ(p.events[0].consumerTasks, (std::vector<int>{1}));
    EXPECT_EQ(p.tasks[0].recordEvents, (std::vector<int>{0}));
    EXPECT_EQ(p.tasks[1].waitEvents, (std::vector<int>{0}));
    EXPECT_TRUE(p.tasks[2].waitEvents.empty());
    EXPECT_TRUE(p.tasks[3].waitEvents.empty());
    Status check = checkEvents(p);
    EXPECT_TRUE(check.ok()) << check.error().message;
}

TEST(AllocateEvents, ASlotIsReusedOnceItsWaiterIsDone) {
    // Ping-pong t0 (core 0) -> t1 (1) -> t2 (0) -> t3 (1) -> t4 (0): each event's waiter comes
    // before the next event on the same core is recorded, so one slot per core serves them all,
    // and with 64 slots the allocator still reuses slot 0 instead of spreading out.
    for (int slots : {1, 64}) {
        SCOPED_TRACE(std::to_string(slots) + " slots");
        Program p = programOf(2, slots, {{0, {}}, {1, {0}}, {0, {1}}, {1, {2}}, {0, {3}}});
        Status st = allocateEvents(p);
        ASSERT_TRUE(st.ok()) << st.error().message;
        EXPECT_EQ(p.events.size(), 4u);
        EXPECT_EQ(slotsUsed(p, 0), 1);
        EXPECT_EQ(slotsUsed(p, 1), 1);
        Status check = checkEvents(p);
        EXPECT_TRUE(check.ok()) << check.error().message;
    }
}

TEST(AllocateEvents, ASlotStillAwaitedIsNotReused) {
    // t0 and t1 on core 0 feed t2 and t3 on core 1. When t1 records, t2 may not yet have seen
    // t0's event, so t1's event needs a second slot.
    const std::vector<std::pair<int, std::vector<int>>> tasks{{0, {}}, {0, {}}, {1, {0}}, {1, {1}}};
    Program p = programOf(2, 2, tasks);
    Status st = allocateEvents(p);
    ASSERT_TRUE(st.ok()) << st.error().message;
    ASSERT_EQ(p.events.size(), 2u);
    EXPECT_EQ(p.events[0].slot, 0);
    EXPECT_EQ(p.events[1].slot, 1);
    Status check = checkEvents(p);
    EXPECT_TRUE(check.ok()) << check.error().message;

    Program one = programOf(2, 1, tasks);
    Status full = allocateEvents(one);
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.error().kind, ErrorKind::Unsupported);
    EXPECT_EQ(full.error().subject, "t1");
    EXPECT_EQ(full.error().message, "core 0 needs more than 1 event slots at once (at task 1 't1')");
}

TEST(AllocateEvents, NeverMoreThanTheTargetsSlots) {
    // t0 on core 0 feeds one Task on each of three other cores: three events live at once.
    const std::vector<std::pair<int, std::vector<int>>> tasks{{0, {}}, {1, {0}}, {2, {0}}, {3, {0}}};
    Program p = programOf(4, 3, tasks);
    Status st = allocateEvents(p);
    ASSERT_TRUE(st.ok()) << st.error().message;
    ASSERT_EQ(p.events.size(), 3u);
    EXPECT_EQ(slotsUsed(p, 0), 3);
    for (const Event& e : p.events)
        EXPECT_EQ(e.core, 0);
    EXPECT_TRUE(checkEvents(p).ok());

    Program two = programOf(4, 2, tasks);
    Status full = allocateEvents(two);
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.error().message, "core 0 needs more than 2 event slots at once (at task 0 't0')");
}

TEST(AllocateEvents, ADependencyOnALaterTaskIsRefused) {
    Program p = programOf(2, 64, {{0, {1}}, {1, {}}});
    Status st = allocateEvents(p);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().message, "task order is not topological; cannot allocate events");
}

TEST(AllocateEvents, RunningAgainGivesTheSameEvents) {
    // Lowering re-allocates after it changes the schedule: nothing of the last run may stay.
    Program p = programOf(2, 64, {{0, {}}, {1, {0}}, {0, {1}}});
    ASSERT_TRUE(allocateEvents(p).ok());
    const size_t events = p.events.size();
    const std::vector<int> waits = p.tasks[2].waitEvents;
    ASSERT_TRUE(allocateEvents(p).ok());
    EXPECT_EQ(p.events.size(), events);
    EXPECT_EQ(p.tasks[2].waitEvents, waits);
    EXPECT_EQ(p.tasks[0].recordEvents, (std::vector<int>{0}));
}
