// The IR diff tab's counts and folding, and the memory map's lifetimes from simulated times.
#include "views/DiffView.h"
#include "views/MemoryMap.h"
#include "views/MemoryView.h"

#include <QTextBlock>
#include <QtTest>

using namespace sextant;
using namespace sextant::views;

class TestDiffAndMemory : public QObject {
    Q_OBJECT
private slots:
    void diffCountsAndColours() {
        DiffView view;
        std::string before, after;
        for (int i = 0; i < 40; ++i)
            before += "line " + std::to_string(i) + "\n";
        after = before;
        after.replace(after.find("line 20\n"), 8, "line twenty\nline 20.5\n");
        view.setTexts(before, after, "a", "b");
        QCOMPARE(view.addedLines(), 2);
        QCOMPARE(view.removedLines(), 1);
        const QString text = view.toPlainText();
        QVERIFY(text.contains("+ line twenty"));
        QVERIFY(text.contains("- line 20"));
        QVERIFY(text.contains("unchanged lines")); // far context is folded
        QVERIFY(!text.contains("line 2\n"));
        view.setContextLines(-1);
        QVERIFY(!view.toPlainText().contains("unchanged lines"));
        QVERIFY(view.toPlainText().contains("line 2\n"));
        // Added lines sit on a green background, removed ones on red.
        bool green = false, red = false;
        for (QTextBlock b = view.document()->begin(); b.isValid(); b = b.next()) {
            const QColor bg = b.blockFormat().background().color();
            if (b.text().contains("+ line twenty"))
                green = bg.green() > bg.red();
            if (b.text().contains("- line 20") && !b.text().contains("20.5"))
                red = bg.red() > bg.green();
        }
        QVERIFY(green);
        QVERIFY(red);
    }

    void unchangedPassSaysSo() {
        DiffView view;
        view.setTexts("a\nb\n", "a\nb\n", "fuse", "dce");
        QCOMPARE(view.addedLines(), 0);
        QCOMPARE(view.removedLines(), 0);
        QVERIFY(view.toPlainText().contains("dce left the graph unchanged"));
    }

    void memoryLifetimesComeFromTheTrace() {
        // Two Tasks on two cores: t0 writes buffer 1 (read by t1); t1 writes output buffer 2.
        backend::Program p;
        auto buf = [](int id, backend::BufferKind kind, uint64_t off, uint64_t size) {
            backend::Buffer b;
            b.id = id;
            b.value = "v" + std::to_string(id);
            b.kind = kind;
            b.offset = off;
            b.size = size;
            return b;
        };
        p.buffers = {buf(0, backend::BufferKind::Input, 0, 64), buf(1, backend::BufferKind::Intermediate, 128, 256),
                     buf(2, backend::BufferKind::Output, 64, 64), buf(3, backend::BufferKind::Weight, 512, 64)};
        backend::Task t0;
        t0.id = 0;
        t0.inputs = {0, 3};
        t0.outputs = {1};
        backend::Task t1;
        t1.id = 1;
        t1.core = 1;
        t1.inputs = {1};
        t1.outputs = {2};
        p.buffers[1].type = ir::TensorType::of(ir::DType::F16, {1, 128}); // kept in f16
        p.tasks = {t0, t1};
        p.memory.dramPeak = 256;
        p.memory.dramLowerBound = 256;
        TimelineModel tl;
        TimelineTask a;
        a.task = 0;
        a.start = 100;
        a.end = 400;
        a.nodes = {"conv"};
        TimelineTask b;
        b.task = 1;
        b.core = 1;
        b.start = 600;
        b.end = 900;
        b.nodes = {"relu"};
        tl.setTasks({a, b});
        const MemoryMapData map = buildMemoryMap(p, tl);
        QCOMPARE(map.blocks.size(), size_t(4));
        QCOMPARE(map.totalCycles, uint64_t(900));
        const MemoryBlock& in = map.blocks[0];
        QCOMPARE(in.t0, uint64_t(0));   // host-written before the run
        QCOMPARE(in.t1, uint64_t(400)); // last reader t0 ends
        const MemoryBlock& mid = map.blocks[1];
        QCOMPARE(mid.t0, uint64_t(100)); // writer's start
        QCOMPARE(mid.t1, uint64_t(900)); // reader's end (another core)
        QCOMPARE(mid.nodes, (std::vector<std::string>{"conv", "relu"}));
        QCOMPARE(mid.type, std::string("f16[1,128]")); // the tooltip says how it is kept
        const MemoryBlock& out = map.blocks[2];
        QCOMPARE(out.t0, uint64_t(600));
        QCOMPARE(out.t1, uint64_t(900)); // read by the host at the end
        QCOMPARE(map.blocks[3].t0, uint64_t(0));
        QCOMPARE(map.blocks[3].t1, uint64_t(900)); // weights live the whole run
        QCOMPARE(map.select(false, true, true).size(), size_t(3));
        QCOMPARE(map.select(true, false, false).size(), size_t(1));

        MemoryView view;
        view.resize(600, 400);
        view.setMap(std::make_shared<MemoryMapData>(map));
        QCOMPARE(view.shownCount(), 3);
        const QRectF r = view.blockRect(map.blocks[1]);
        QVERIFY(view.blockAt(r.center().toPoint()));
        QCOMPARE(view.blockAt(r.center().toPoint())->buffer, 1);
        QVERIFY(memorySummary(map).contains("lower bound 256 B"));
    }

    void aConcatWrittenInPlaceIsDrawnUnderItsParts() {
        // t0 and t1 write the two halves of buffer 2 (a Concat lowered in place) and t2 reads it:
        // the Concat lives from t0's start to t2's end, drawn first so that a click on a half
        // selects the half, and one on the rest of its lifetime the Concat.
        backend::Program p;
        auto buf = [](int id, uint64_t off, uint64_t size) {
            backend::Buffer b;
            b.id = id;
            b.value = "v" + std::to_string(id);
            b.offset = off;
            b.size = size;
            return b;
        };
        p.buffers = {buf(0, 0, 128), buf(1, 128, 128), buf(2, 0, 256)};
        p.buffers[0].inPlaceOf = 2;
        p.buffers[1].inPlaceOf = 2;
        p.buffers[1].inPlaceOffset = 128;
        backend::Task t0, t1, t2;
        t0.id = 0;
        t0.outputs = {0};
        t1.id = 1;
        t1.core = 1;
        t1.outputs = {1};
        t2.id = 2;
        t2.inputs = {2};
        p.tasks = {t0, t1, t2};
        TimelineModel tl;
        std::vector<TimelineTask> times(3);
        for (int i = 0; i < 3; ++i) {
            times[static_cast<size_t>(i)].task = i;
            times[static_cast<size_t>(i)].start = 100 + 300 * static_cast<uint64_t>(i);
            times[static_cast<size_t>(i)].end = 300 + 300 * static_cast<uint64_t>(i);
            times[static_cast<size_t>(i)].nodes = {"n" + std::to_string(i)};
        }
        tl.setTasks(times);
        const MemoryMapData map = buildMemoryMap(p, tl);
        QCOMPARE(map.blocks.size(), size_t(3));
        QCOMPARE(map.blocks[0].buffer, 2); // the holder first, under its parts
        QCOMPARE(map.blocks[0].t0, uint64_t(100));
        QCOMPARE(map.blocks[0].t1, uint64_t(900));
        QCOMPARE(map.blocks[0].nodes, (std::vector<std::string>{"n0", "n1", "n2"}));
        QCOMPARE(map.blocks[1].buffer, 0);
        QCOMPARE(map.blocks[1].t1, uint64_t(300));
        MemoryView view;
        view.resize(600, 400);
        view.setMap(std::make_shared<MemoryMapData>(map));
        QCOMPARE(view.blockAt(view.blockRect(map.blocks[1]).center().toPoint())->buffer, 0);
        const QRectF whole = view.blockRect(map.blocks[0]);
        QCOMPARE(view.blockAt(QPointF(whole.right() - 2, whole.center().y()).toPoint())->buffer, 2);
    }

    void aWeightTheLoaderFillsIsDrawnForTheWholeRunWithItsNode() {
        // B = ConstantOfShape(shape) read only as a Gemm's weights: no Task writes it, the loader
        // fills it. Its block lives from 0 to the run's end, counts with the weights, and carries
        // the ConstantOfShape node (for selection) beside the Gemm that reads it.
        auto g = std::make_shared<ir::Graph>("fill");
        ir::Value* x = *g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 8}));
        ir::Value* shape = *g->addConstant("shape", ir::Tensor::fromVector<int64_t>({2}, {8, 4}));
        ir::Value* b = (*g->addNode(ir::OpKind::ConstantOfShape, "fillB", {shape}, {"B"},
                                    {{"value", ir::Tensor::fromVector<float>({1}, {0.5f})}}))
                           ->output();
        ir::Value* y = (*g->addNode(ir::OpKind::Gemm, "fc", {x, b}, {"y"}))->output();
        g->setOutputs({y});
        QVERIFY(g->inferTypes().ok());
        backend::Program p;
        p.graph = g;
        backend::Buffer weight;
        weight.id = 0;
        weight.value = "B";
        weight.kind = backend::BufferKind::Weight;
        weight.size = 128;
        weight.fill = 0.5;
        p.buffers = {weight};
        p.memory.weightBytes = 64;
        backend::Task fc;
        fc.id = 0;
        fc.inputs = {0};
        p.tasks = {fc};
        TimelineModel tl;
        std::vector<TimelineTask> times(1);
        times[0].task = 0;
        times[0].start = 200;
        times[0].end = 500;
        times[0].nodes = {"fc"};
        tl.setTasks(times);
        const MemoryMapData map = buildMemoryMap(p, tl);
        QCOMPARE(map.blocks.size(), size_t(1));
        QVERIFY(map.blocks[0].fill && *map.blocks[0].fill == 0.5);
        QCOMPARE(map.blocks[0].t0, uint64_t(0));
        QCOMPARE(map.blocks[0].t1, uint64_t(500));
        QCOMPARE(map.blocks[0].nodes, (std::vector<std::string>{"fillB", "fc"}));
        QCOMPARE(map.weightBytes, uint64_t(64 + 128)); // weights.bin's and the filled ones
        QVERIFY(memorySummary(map).contains("weights 192 B"));
    }
};

QTEST_MAIN(TestDiffAndMemory)
#include "tst_diffandmemory.moc"
