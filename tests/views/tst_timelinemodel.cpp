// Lanes and the level-of-detail draw list: what the timeline paints.
#include "views/TimelineModel.h"

#include <QtTest>

using namespace sextant::views;
using sextant::backend::UnitKind;

namespace {

TimelineTask task(int id, int core, UnitKind unit, uint64_t start, uint64_t end, std::vector<std::string> nodes = {}) {
    TimelineTask t;
    t.task = id;
    t.core = core;
    t.unit = unit;
    t.ready = start;
    t.start = start;
    t.end = end;
    t.name = "t" + std::to_string(id);
    t.kernel = "K";
    t.nodes = std::move(nodes);
    return t;
}

/// `t` with phases: loads until `loadEnd`, computes [c0, c1), stores from `storeStart`.
TimelineTask phased(TimelineTask t, uint64_t loadEnd, uint64_t c0, uint64_t c1, uint64_t storeStart,
                    bool streamed, uint64_t loadBytes, uint64_t storeBytes) {
    t.phases = true;
    t.loadEnd = loadEnd;
    t.computeStart = c0;
    t.computeEnd = c1;
    t.storeStart = storeStart;
    t.streamed = streamed;
    t.loadBytes = loadBytes;
    t.storeBytes = storeBytes;
    return t;
}

/// A run of `n` Tasks per core on `cores` cores, each core running one at a time through cube,
/// vector and DMA-only Tasks with load/store or streamed phases, durations and gaps from a fixed
/// arithmetic sequence (no library random numbers: the same Tasks everywhere).
std::vector<TimelineTask> busyRun(int n, int cores) {
    std::vector<TimelineTask> out;
    uint64_t seed = 12345;
    auto next = [&](uint64_t range) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return (seed >> 33) % range;
    };
    for (int core = 0; core < cores; ++core) {
        uint64_t clock = 0;
        for (int i = 0; i < n; ++i) {
            const int id = core * n + i;
            const uint64_t start = clock + next(4) * next(12); // often no gap at all
            const uint64_t len = 1 + next(3) * next(40) + (next(50) == 0 ? 4000 : 0);
            const UnitKind unit = static_cast<UnitKind>(next(3));
            TimelineTask t = task(id, core, unit, start, start + len);
            const uint64_t load = start + len / 4, store = start + len - len / 5;
            if (unit == UnitKind::Cube)
                t = phased(t, load, load, store, store, false, 100, 50);
            else if (unit == UnitKind::Vector)
                t = phased(t, store, start, store, start + len, true, 80, 40);
            out.push_back(t);
            clock = start + len;
        }
    }
    return out;
}

bool sameItems(const std::vector<TimelineDrawItem>& a, const std::vector<TimelineDrawItem>& b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].lane != b[i].lane || a[i].x0 != b[i].x0 || a[i].x1 != b[i].x1 ||
            a[i].count != b[i].count || a[i].task != b[i].task || a[i].span != b[i].span)
            return false;
    return true;
}

} // namespace

class TestTimelineModel : public QObject {
    Q_OBJECT
private slots:
    void lanesGroupByCoreThenUnit() {
        TimelineModel m;
        m.setTasks({task(0, 1, UnitKind::Vector, 0, 10), task(1, 0, UnitKind::Cube, 5, 20),
                    task(2, 0, UnitKind::Vector, 20, 30), task(3, 1, UnitKind::Vector, 10, 40)});
        QCOMPARE(m.lanes().size(), size_t(3));
        QCOMPARE(m.lanes()[0].core, 0);
        QCOMPARE(m.lanes()[0].unit, UnitKind::Cube);
        QCOMPARE(m.lanes()[1].unit, UnitKind::Vector);
        QCOMPARE(m.lanes()[2].core, 1);
        QCOMPARE(m.lanes()[2].items, (std::vector<int>{0, 3}));
        QCOMPARE(QString::fromStdString(m.lanes()[2].label), QStringLiteral("core 1 \u00b7 vector"));
        QCOMPARE(m.totalCycles(), uint64_t(40));
        QCOMPARE(m.laneOf(3), 2);
    }

    void idleCoresGetAnEmptyLane() {
        TimelineModel m;
        m.setTasks({task(0, 1, UnitKind::Cube, 0, 10), task(1, 1, UnitKind::Dma, 10, 20)}, 3);
        QCOMPARE(m.lanes().size(), size_t(4)); // core 0 idle, core 1 cube + dma, core 2 idle
        QCOMPARE(QString::fromStdString(m.lanes()[0].label), QStringLiteral("core 0 \u00b7 idle"));
        QVERIFY(m.lanes()[0].items.empty());
        QCOMPARE(m.lanes()[1].core, 1);
        QCOMPARE(QString::fromStdString(m.lanes()[3].label), QStringLiteral("core 2 \u00b7 idle"));
        TimelineCoords c{0.0, 1.0};
        QCOMPARE(m.buildDrawList(c, 100.0).size(), size_t(2));
    }

    void tasksOfNodeFindsEveryTaskRunningIt() {
        TimelineModel m;
        m.setTasks({task(7, 0, UnitKind::Cube, 0, 10, {"conv1", "relu1"}), task(3, 1, UnitKind::Cube, 0, 10, {"conv1"}),
                    task(5, 0, UnitKind::Vector, 10, 20, {"add"})});
        const std::vector<int> hits = m.tasksOfNode("conv1");
        QCOMPARE(hits.size(), size_t(2));
        QCOMPARE(m.tasks()[hits[0]].task, 3); // ordered by Task id
        QCOMPARE(m.tasks()[hits[1]].task, 7);
        QVERIFY(m.tasksOfNode("nope").empty());
        QCOMPARE(m.indexOfTask(5), 2);
        QCOMPARE(m.indexOfTask(99), -1);
    }

    void findTasksMatchesNameKernelOrNodeInStartOrder() {
        TimelineModel m;
        TimelineTask a = task(1, 0, UnitKind::Cube, 50, 60, {"backbone/Conv_3", "relu"});
        TimelineTask b = task(2, 1, UnitKind::Vector, 10, 20, {"head/Add"});
        b.kernel = "ElementwiseGroup";
        TimelineTask c = task(3, 2, UnitKind::Cube, 10, 30, {"backbone/conv_7"});
        c.name = "backbone/conv_7[2/8]";
        m.setTasks({a, b, c});
        // Any case, in the node names and the Task's name; ordered by start, then Task id.
        std::vector<int> hits = m.findTasks("CONV");
        QCOMPARE(hits.size(), size_t(2));
        QCOMPARE(m.tasks()[static_cast<size_t>(hits[0])].task, 3);
        QCOMPARE(m.tasks()[static_cast<size_t>(hits[1])].task, 1);
        hits = m.findTasks("[2/8]");
        QCOMPARE(hits.size(), size_t(1));
        QCOMPARE(m.tasks()[static_cast<size_t>(hits[0])].task, 3);
        hits = m.findTasks("elementwisegroup"); // the kernel
        QCOMPARE(hits.size(), size_t(1));
        QCOMPARE(m.tasks()[static_cast<size_t>(hits[0])].task, 2);
        QVERIFY(m.findTasks("").empty());
        QVERIFY(m.findTasks("nothing like it").empty());
        // Cancelled before it starts: nothing.
        QVERIFY(m.findTasks("conv", [] { return true; }).empty());
    }

    void wideTasksAreDrawnOneByOne() {
        TimelineModel m;
        m.setTasks({task(0, 0, UnitKind::Cube, 0, 100), task(1, 0, UnitKind::Cube, 100, 300)});
        TimelineCoords c{0.0, 1.0};
        const auto items = m.buildDrawList(c, 1000.0);
        QCOMPARE(items.size(), size_t(2));
        QCOMPARE(items[0].count, 1);
        QCOMPARE(items[0].x0, 0.0);
        QCOMPARE(items[0].x1, 100.0);
        QCOMPARE(items[1].task, 1);
    }

    void tinyNeighboursMergeIntoOneItem() {
        // 1000 Tasks of 10 cycles back to back, viewed at 100 cycles per pixel: each is 0.1 px.
        std::vector<TimelineTask> tasks;
        for (int i = 0; i < 1000; ++i)
            tasks.push_back(task(i, 0, UnitKind::Vector, static_cast<uint64_t>(i) * 10, static_cast<uint64_t>(i) * 10 + 10));
        // and one wide Task after a gap
        tasks.push_back(task(1000, 0, UnitKind::Vector, 50000, 90000));
        TimelineModel m;
        m.setTasks(tasks);
        TimelineCoords c{0.0, 100.0};
        const auto items = m.buildDrawList(c, 1000.0, 3.0);
        QCOMPARE(items.size(), size_t(2));
        QCOMPARE(items[0].count, 1000);
        QCOMPARE(items[0].task, -1); // a folded item names no single Task
        QCOMPARE(items[1].count, 1);
        QCOMPARE(items[1].task, 1000);
    }

    void tinyTasksFarApartStaySeparate() {
        TimelineModel m;
        m.setTasks({task(0, 0, UnitKind::Dma, 0, 1), task(1, 0, UnitKind::Dma, 1000, 1001)});
        TimelineCoords c{0.0, 10.0}; // 0.1 px wide, 100 px apart
        const auto items = m.buildDrawList(c, 1000.0, 3.0);
        QCOMPARE(items.size(), size_t(2));
        QCOMPARE(items[0].count, 1);
        QCOMPARE(items[0].task, 0);
        QVERIFY(items[0].x1 - items[0].x0 >= 1.0); // still visible
    }

    void aPinnedTaskIsNeverFolded() {
        // 100 Tasks of 10 cycles back to back at 100 cycles per pixel fold into one item; the
        // selected one (index 40) must still be drawn, and clickable, as itself.
        std::vector<TimelineTask> tasks;
        for (int i = 0; i < 100; ++i)
            tasks.push_back(task(i, 0, UnitKind::Vector, static_cast<uint64_t>(i) * 10, static_cast<uint64_t>(i) * 10 + 10));
        TimelineModel m;
        m.setTasks(tasks);
        std::vector<uint8_t> pinned(100, 0);
        pinned[40] = 1;
        TimelineCoords c{0.0, 100.0};
        const auto items = m.buildDrawList(c, 1000.0, 3.0, pinned);
        QCOMPARE(items.size(), size_t(3)); // folded 0..39, Task 40, folded 41..99
        QCOMPARE(items[0].count, 40);
        QCOMPARE(items[1].count, 1);
        QCOMPARE(items[1].task, 40);
        QVERIFY(items[1].x1 - items[1].x0 >= 1.0);
        QCOMPARE(items[2].count, 59);
        // Without the pin, one folded item.
        QCOMPARE(m.buildDrawList(c, 1000.0, 3.0).size(), size_t(1));
    }

    void markedSpansCoverOnlyTheMarkedTasks() {
        // Tasks 0..99 back to back, 0.1 px each, and one wide Task; the critical path is Tasks
        // 10..19 and the wide one. The overlay marks 10..19 (inside what the draw list folds)
        // as one span over their extent, not over the whole folded item, and the wide Task apart.
        std::vector<TimelineTask> tasks;
        for (int i = 0; i < 100; ++i)
            tasks.push_back(task(i, 0, UnitKind::Vector, static_cast<uint64_t>(i) * 10, static_cast<uint64_t>(i) * 10 + 10));
        tasks.push_back(task(100, 1, UnitKind::Cube, 5000, 20000));
        TimelineModel m;
        m.setTasks(tasks);
        std::vector<uint8_t> marked(101, 0);
        for (int i = 10; i < 20; ++i)
            marked[static_cast<size_t>(i)] = 1;
        marked[100] = 1;
        TimelineCoords c{0.0, 100.0};
        const auto spans = m.buildSpanList(c, 1000.0, marked);
        QCOMPARE(spans.size(), size_t(2));
        QCOMPARE(spans[0].count, 10);
        QCOMPARE(spans[0].x0, 1.0);              // Task 10 starts at cycle 100
        QVERIFY(spans[0].x1 < 3.0);              // Task 19 ends at cycle 200 (2 px; at least 1 px wide)
        QCOMPARE(spans[1].lane, m.laneOf(100));
        QCOMPARE(spans[1].count, 1);
        QCOMPARE(spans[1].task, 100);
        QCOMPARE(spans[1].x1, 200.0);
        QVERIFY(m.buildSpanList(c, 1000.0, std::vector<uint8_t>{}).empty());
    }

    void eachCoreGetsADmaLaneUnderItsComputeLanes() {
        // Core 0: a DMA-only Task, a single-buffered cube Task (load, compute, store one after
        // another), a double-buffered vector Task (one stream under its compute). Core 1: a Task
        // without phases (an old database), which moves nothing on the timeline.
        TimelineModel m;
        m.setTasks(
            {task(0, 0, UnitKind::Dma, 0, 50),
             phased(task(1, 0, UnitKind::Cube, 100, 400), 200, 200, 300, 300, false, 12595, 2048),
             phased(task(2, 0, UnitKind::Vector, 500, 900), 850, 600, 900, 900, true, 30000, 2000),
             task(3, 1, UnitKind::Cube, 0, 300)});
        QCOMPARE(m.lanes().size(), size_t(4));
        QCOMPARE(QString::fromStdString(m.lanes()[2].label), QStringLiteral("core 0 \u00b7 dma"));
        QCOMPARE(m.lanes()[2].items, (std::vector<int>{0}));
        QCOMPARE(m.lanes()[2].spans, (std::vector<int>{0, 1, 2}));
        QCOMPARE(m.lanes()[3].core, 1); // no DMA lane for core 1: nothing known moved there
        QCOMPARE(m.dmaSpans().size(), size_t(3));
        const TimelineDmaSpan& load = m.dmaSpans()[0];
        QCOMPARE(load.task, 1);
        QCOMPARE(load.kind, DmaPhaseKind::Load);
        QCOMPARE(load.start, uint64_t(100));
        QCOMPARE(load.end, uint64_t(200));
        QCOMPARE(dmaSpanLabel(load), std::string("load 12.3 KiB"));
        const TimelineDmaSpan& store = m.dmaSpans()[1];
        QCOMPARE(store.kind, DmaPhaseKind::Store);
        QCOMPARE(store.start, uint64_t(300));
        QCOMPARE(store.end, uint64_t(400));
        QCOMPARE(dmaSpanLabel(store), std::string("store 2.0 KiB"));
        const TimelineDmaSpan& stream = m.dmaSpans()[2];
        QCOMPARE(stream.kind, DmaPhaseKind::Stream);
        QCOMPARE(stream.start, uint64_t(500));
        QCOMPARE(stream.end, uint64_t(850));
        QCOMPARE(stream.bytes, uint64_t(32000));
        QCOMPARE(m.laneOfSpan(2), 2);
        QCOMPARE(m.laneOf(0), 2);

        // Drawn as themselves when wide, each naming its Task: a click on one selects the Task.
        TimelineCoords c{0.0, 1.0};
        std::vector<TimelineDrawItem> dma;
        for (const TimelineDrawItem& item : m.buildDrawList(c, 1000.0))
            if (item.lane == 2)
                dma.push_back(item);
        QCOMPARE(dma.size(), size_t(4));
        QCOMPARE(dma[0].span, -1); // the DMA-only Task itself
        QCOMPARE(dma[0].task, 0);
        QCOMPARE(dma[1].span, 0);
        QCOMPARE(dma[1].task, 1);
        QCOMPARE(dma[1].x0, 100.0);
        QCOMPARE(dma[1].x1, 200.0);
        QCOMPARE(dma[3].span, 2);
        QCOMPARE(dma[3].task, 2);
        // The critical-path overlay marks Tasks, not their transfers.
        const auto marks = m.buildSpanList(c, 1000.0, std::vector<uint8_t>{0, 1, 1, 0});
        QCOMPARE(marks.size(), size_t(2));
        QCOMPARE(marks[0].lane, m.laneOf(1));
        QCOMPARE(marks[1].lane, m.laneOf(2));
    }

    void aHostStepsTransfersGetALaneUnderTheHost() {
        // Core 0 runs a cube Task; the host lane (core 1 of a one-core target) a host step that
        // reads its inputs from DRAM, computes, and writes its output back.
        TimelineModel m;
        m.setTasks({phased(task(0, 0, UnitKind::Cube, 0, 100), 20, 20, 80, 80, false, 4096, 1024),
                    phased(task(1, 1, UnitKind::Host, 100, 11000), 164, 164, 10936, 10936, false, 1024, 1024)},
                   1);
        QCOMPARE(m.lanes().size(), size_t(4));
        QCOMPARE(QString::fromStdString(m.lanes()[2].label), QStringLiteral("host"));
        QCOMPARE(m.lanes()[2].items, (std::vector<int>{1}));
        QCOMPARE(QString::fromStdString(m.lanes()[3].label), QStringLiteral("host \u00b7 transfers"));
        QVERIFY(m.lanes()[3].items.empty());
        QCOMPARE(m.lanes()[3].spans.size(), size_t(2));
        const TimelineDmaSpan& in = m.dmaSpans()[static_cast<size_t>(m.lanes()[3].spans[0])];
        QCOMPARE(in.task, 1);
        QCOMPARE(in.kind, DmaPhaseKind::Load);
        QCOMPARE(in.start, uint64_t(100));
        QCOMPARE(in.end, uint64_t(164));
        const TimelineDmaSpan& out = m.dmaSpans()[static_cast<size_t>(m.lanes()[3].spans[1])];
        QCOMPARE(out.kind, DmaPhaseKind::Store);
        QCOMPARE(out.start, uint64_t(10936));
        QCOMPARE(out.end, uint64_t(11000));
        QCOMPARE(dmaSpanLabel(out), std::string("store 1.0 KiB"));
    }

    void tinyDmaSpansFoldLikeTasks() {
        // 200 single-buffered Tasks of 10 cycles, each loading 4 cycles and storing 3: at 100
        // cycles per pixel the DMA lane folds into one item too, and a pinned Task's spans stay.
        std::vector<TimelineTask> tasks;
        for (int i = 0; i < 200; ++i) {
            const uint64_t t0 = static_cast<uint64_t>(i) * 10;
            tasks.push_back(phased(task(i, 0, UnitKind::Cube, t0, t0 + 10), t0 + 4, t0 + 4, t0 + 7,
                                   t0 + 7, false, 64, 64));
        }
        TimelineModel m;
        m.setTasks(tasks);
        QCOMPARE(m.dmaSpans().size(), size_t(400));
        TimelineCoords c{0.0, 100.0};
        auto onLane = [&](const std::vector<TimelineDrawItem>& items, int lane) {
            std::vector<TimelineDrawItem> out;
            for (const TimelineDrawItem& item : items)
                if (item.lane == lane)
                    out.push_back(item);
            return out;
        };
        const auto folded = onLane(m.buildDrawList(c, 1000.0, 3.0), 1);
        QCOMPARE(folded.size(), size_t(1));
        QCOMPARE(folded[0].count, 400);
        QCOMPARE(folded[0].span, -1);
        std::vector<uint8_t> pinned(200, 0);
        pinned[100] = 1;
        const auto kept = onLane(m.buildDrawList(c, 1000.0, 3.0, pinned), 1);
        QCOMPARE(kept.size(), size_t(4)); // folded, Task 100's load and store, folded
        QCOMPARE(kept[1].span, 200);
        QCOMPARE(kept[1].task, 100);
        QCOMPARE(kept[2].span, 201);
    }

    // The level of detail folds by binary search; it must draw exactly what the walk over every
    // Task drew, at every zoom and pan, with and without pinned Tasks and for the overlay.
    void levelOfDetailDrawsWhatTheScanDrew() {
        TimelineModel m;
        m.setTasks(busyRun(3000, 3), 4);
        const double total = static_cast<double>(m.totalCycles());
        std::vector<uint8_t> pinned(m.tasks().size(), 0), critical(m.tasks().size(), 0);
        for (size_t i = 0; i < m.tasks().size(); ++i) {
            pinned[i] = i % 997 == 5;
            critical[i] = i % 3 == 0 || (i / 50) % 2 == 0;
        }
        const TimelineMarks pins = m.marks(pinned, true), crit = m.marks(critical, false);
        int folded = 0;
        for (double share : {1.0, 0.3, 0.1, 0.01, 0.001, 0.0001})
            for (double at : {0.0, 0.13, 0.5, 0.97}) {
                TimelineCoords c;
                c.fit(total * at, total * (at + share), 1400.0, 6.0);
                const auto fast = m.buildDrawList(c, 1400.0, 3.0, TimelineMarks{});
                QVERIFY2(sameItems(fast, m.buildDrawListByScan(c, 1400.0, 3.0)),
                         qPrintable(QStringLiteral("share %1 at %2").arg(share).arg(at)));
                QVERIFY(sameItems(m.buildDrawList(c, 1400.0, 3.0, pins),
                                  m.buildDrawListByScan(c, 1400.0, 3.0, pinned)));
                QVERIFY(sameItems(m.buildSpanList(c, 1400.0, crit),
                                  m.buildSpanListByScan(c, 1400.0, critical)));
                for (const TimelineDrawItem& item : fast)
                    folded += item.count > 1;
            }
        QVERIFY(folded > 100); // the zooms did fold: the comparison covered folding
    }

    // The pyramid a fold asks for the first entry it stops at: the same answer as a walk, for
    // every start, end and threshold, on keys of every size (one block, several levels).
    void foldPyramidFindsTheFirstKeyAtLeastTheThreshold() {
        uint64_t state = 12345;
        auto next = [&] {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            return state >> 33;
        };
        for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(300), size_t(5000)}) {
            std::vector<uint64_t> keys(n);
            for (uint64_t& k : keys)
                k = next() % 100 < 97 ? next() % 10 : 10 + next() % 90; // mostly small: long runs
            const FoldPyramid p = FoldPyramid::build(keys);
            for (int q = 0; q < 400; ++q) {
                const size_t from = n ? next() % (n + 1) : 0;
                const size_t to = from + (n > from ? next() % (n - from + 1) : 0);
                const uint64_t threshold = next() % 60;
                size_t want = from;
                while (want < to && keys[want] < threshold)
                    ++want;
                QCOMPARE(p.firstAtLeast(from, to, threshold), want);
            }
        }
    }

    void tasksOutsideTheViewAreCulled() {
        TimelineModel m;
        m.setTasks({task(0, 0, UnitKind::Cube, 0, 100), task(1, 0, UnitKind::Cube, 200, 300),
                    task(2, 0, UnitKind::Cube, 5000, 6000)});
        TimelineCoords c{150.0, 1.0}; // shows [150, 650)
        const auto items = m.buildDrawList(c, 500.0);
        QCOMPARE(items.size(), size_t(1));
        QCOMPARE(items[0].task, 1);
        QCOMPARE(items[0].x0, 50.0);
    }
};

QTEST_APPLESS_MAIN(TestTimelineModel)
#include "tst_timelinemodel.moc"
