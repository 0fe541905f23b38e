// The Graph tab lays out what it shows, when it shows it (GraphLayoutWorker, GraphPage): only the
// shown snapshot, one level at a time, cached; a large graph opens collapsed, a double-click or a
// selection inside a group opens it in place, a double-click on its title folds it; the path can
// show a group as a level of its own, and Up closes it.
#include "views/GraphLayoutWorker.h"
#include "views/GraphPage.h"
#include "views/GraphView.h"

#include <QSignalSpy>

#include <algorithm>
#include <QtTest>

using namespace sextant;
using namespace sextant::views;

namespace {

/// x -> r0 -> ... -> r{n-1} -> y, Relus and Sigmoids in turn, through the pipeline at -O0 (which
/// keeps every node).
std::shared_ptr<const CompileSnapshot> reluChain(int n) {
    ir::Graph g("chain");
    ir::Value* v = g.addInput("x", ir::TensorType::of(ir::DType::F32, {1, 8})).value();
    for (int i = 0; i < n; ++i)
        v = g.addNode(i % 2 ? ir::OpKind::Sigmoid : ir::OpKind::Relu, "r" + std::to_string(i), {v},
                      {"v" + std::to_string(i)})
                .value()
                ->output();
    g.setOutputs({v});
    if (!g.inferTypes().ok())
        return nullptr;
    passes::PipelineConfig config;
    config.optLevel = 0;
    auto r = passes::runPipeline(g, config);
    if (!r.ok())
        return nullptr;
    auto snap = std::make_shared<CompileSnapshot>();
    snap->pipeline = std::move(r).value();
    return snap;
}

/// The newest level the worker announced, waiting for it.
std::shared_ptr<const GraphLevel> awaitLevel(GraphLayoutWorker& w) {
    QSignalSpy ready(&w, &GraphLayoutWorker::levelReady);
    if (!ready.wait(60000))
        return nullptr;
    return ready.takeLast().at(0).value<std::shared_ptr<const GraphLevel>>();
}

bool awaitShown(GraphPage& page) {
    return QTest::qWaitFor([&] { return !page.layoutPending(); }, 60000);
}

/// Shows `snap`'s last snapshot in `page` (900 x 700, on screen) and waits for its first level.
bool showLastSnapshot(GraphPage& page, const std::shared_ptr<const CompileSnapshot>& snap) {
    page.resize(900, 700);
    page.show();
    page.setContext(snap, static_cast<int>(snap->pipeline.snapshots.size()) - 1, QString());
    return awaitShown(page);
}

/// A row of `snap` whose pass changed nothing (it shares its predecessor's state), or -1.
int unchangedRow(const CompileSnapshot& snap) {
    for (size_t i = 1; i < snap.pipeline.snapshots.size(); ++i)
        if (snap.pipeline.snapshots[i].state == snap.pipeline.snapshots[i - 1].state)
            return static_cast<int>(i);
    return -1;
}

} // namespace

class TestGraphLayoutWorker : public QObject {
    Q_OBJECT
private slots:
    void onlyTheShownSnapshotIsLaidOut() {
        auto snap = reluChain(20);
        QVERIFY(snap);
        const int last = static_cast<int>(snap->pipeline.snapshots.size()) - 1;
        QVERIFY(last >= 1);
        GraphLayoutWorker w;
        QVERIFY(!w.request(snap, last, "")); // not placed yet: levelReady follows
        auto level = awaitLevel(w);
        QVERIFY(level);
        QCOMPARE(level->layout->nodes.size(), size_t(22)); // input, 20 Relus, output
        QCOMPARE(w.history(), std::vector<std::string>{snap->pipeline.snapshots.back().passId + "|"});
        // Asked again: from the cache, nothing laid out.
        QCOMPARE(w.request(snap, last, ""), level);
        QCOMPARE(w.history().size(), size_t(1));
        // A pass that changed nothing shares its predecessor's layout.
        const int same = unchangedRow(*snap);
        if (same > 0) {
            auto before = w.request(snap, same - 1, "");
            if (!before)
                before = awaitLevel(w);
            QCOMPARE(w.request(snap, same, ""), before);
        }
        // Every snapshot laid out is one that was asked for.
        QVERIFY(w.history().size() <= 2);
    }

    void aNewerRequestSupersedesAnOlderOne() {
        auto snap = reluChain(60);
        QVERIFY(snap);
        GraphLayoutWorker w;
        QSignalSpy ready(&w, &GraphLayoutWorker::levelReady);
        QVERIFY(!w.request(snap, 0, ""));
        const int last = static_cast<int>(snap->pipeline.snapshots.size()) - 1;
        w.request(snap, last, ""); // before the first has finished
        QVERIFY(QTest::qWaitFor([&] { return !w.isBusy() && ready.count() > 0; }, 60000));
        QTest::qWait(50);
        QCOMPARE(ready.count(), 1); // only the newest is announced
        auto level = ready.takeFirst().at(0).value<std::shared_ptr<const GraphLevel>>();
        QCOMPARE(level->layout->findNode("r59") >= 0, true);
        QCOMPARE(w.history().back(), snap->pipeline.snapshots.back().passId + "|");
    }

    void aLargeGraphOpensCollapsedAndExpandsOnDemand() {
        auto snap = reluChain(1200);
        QVERIFY(snap);
        GraphPage page;
        QVERIFY(showLastSnapshot(page, snap));
        const GraphLayoutResult* top = page.graphView()->graphLayout();
        QVERIFY(top);
        QVERIFY(top->nodes.size() <= size_t(kMaxLevelEntries));
        QCOMPARE(top->nodes.front().kind, LayoutNodeKind::Group);
        QCOMPARE(page.shownGroup(), std::string());

        // Double-clicking a group opens it in place: a frame around its own nodes, which were
        // laid out on their own, in the level around it.
        const size_t topBoxes = top->nodes.size();
        const LayoutNode second = top->nodes[1];
        QCOMPARE(second.kind, LayoutNodeKind::Group);
        QPoint at = page.graphView()->mapFromScene(page.graphView()->nodeCenter(QString::fromStdString(second.name)));
        QTest::mouseDClick(page.graphView()->viewport(), Qt::LeftButton, {}, at);
        QVERIFY(awaitShown(page));
        QCOMPARE(page.shownGroup(), std::string());
        QVERIFY(page.expandedGroups().count(second.name) == 1);
        const GraphLayoutResult* opened = page.graphView()->graphLayout();
        // Its boxes, and a port where the chain comes in and one where it leaves.
        QCOMPARE(opened->nodes.size(), topBoxes + static_cast<size_t>(second.groupSize) + 2);
        const LayoutNode& frame = opened->nodes[static_cast<size_t>(opened->findNode(second.name))];
        QVERIFY(frame.open);
        const QRectF frameBox(frame.x - frame.w / 2, frame.y - frame.h / 2, frame.w, frame.h);
        int inside = 0;
        int ports = 0;
        for (size_t i = topBoxes; i < opened->nodes.size(); ++i) {
            const LayoutNode& n = opened->nodes[i];
            QVERIFY2(frameBox.contains(QRectF(n.x - n.w / 2, n.y - n.h / 2, n.w, n.h)), n.name.c_str());
            if (n.kind == LayoutNodeKind::Port) {
                ++ports;
                continue;
            }
            QCOMPARE(n.kind, LayoutNodeKind::Op);
            ++inside;
        }
        QCOMPARE(inside, second.groupSize);
        QCOMPARE(ports, 2);
        // The port where the chain comes in is the topmost box inside, and feeds the first one.
        const LayoutNode& in = opened->nodes[static_cast<size_t>(opened->findNode("port:in:" + second.name))];
        for (size_t i = topBoxes; i < opened->nodes.size(); ++i)
            if (opened->nodes[i].name != in.name)
                QVERIFY(in.y < opened->nodes[i].y);
        QVERIFY(std::any_of(opened->edges.begin(), opened->edges.end(), [&](const LayoutEdge& e) { return e.from == in.name; }));
        // No other box overlaps the frame.
        for (size_t i = 0; i < topBoxes; ++i) {
            const LayoutNode& n = opened->nodes[i];
            if (n.name != second.name)
                QVERIFY2(!frameBox.intersects(QRectF(n.x - n.w / 2, n.y - n.h / 2, n.w, n.h)), n.name.c_str());
        }

        // A double-click inside the frame, away from its title, folds nothing; on the title it folds.
        page.graphView()->centerOn(frame.x, frame.y - frame.h / 2);
        at = page.graphView()->mapFromScene(QPointF(frame.x - frame.w / 2 + 4, frame.y - frame.h / 2 + kFrameTitle + 6));
        QTest::mouseDClick(page.graphView()->viewport(), Qt::LeftButton, {}, at);
        QVERIFY(awaitShown(page));
        QCOMPARE(page.graphView()->graphLayout()->nodes.size(), topBoxes + static_cast<size_t>(second.groupSize) + 2);
        at = page.graphView()->mapFromScene(QPointF(frame.x, frame.y - frame.h / 2 + kFrameTitle / 2));
        QTest::mouseDClick(page.graphView()->viewport(), Qt::LeftButton, {}, at);
        QVERIFY(awaitShown(page));
        QCOMPARE(page.graphView()->graphLayout()->nodes.size(), topBoxes);
        QVERIFY(page.expandedGroups().empty());

        // The path can show a group as a level of its own; Up goes back.
        page.openGroup(QString::fromStdString(second.name));
        QVERIFY(awaitShown(page));
        QCOMPARE(page.shownGroup(), second.name);
        QCOMPARE(static_cast<int>(page.graphView()->graphLayout()->nodes.size()), second.groupSize + 2); // and its ports
        page.closeGroup();
        QVERIFY(awaitShown(page));
        QCOMPARE(page.shownGroup(), std::string());

        // Selecting a node inside a closed group opens the group in place and outlines the node.
        page.highlightNode(QStringLiteral("r1100"));
        QVERIFY(awaitShown(page));
        QCOMPARE(page.shownGroup(), std::string());
        QCOMPARE(page.expandedGroups().size(), size_t(1));
        QVERIFY(page.graphView()->graphLayout()->findNode("r1100") >= 0);
        QCOMPARE(page.graphView()->selectedNode(), QStringLiteral("r1100"));
        // Folded again, the group stays folded and its box is outlined in the node's place.
        const std::string holder = *page.expandedGroups().begin();
        page.toggleGroup(QString::fromStdString(holder));
        QVERIFY(awaitShown(page));
        QVERIFY(page.graphView()->graphLayout()->findNode("r1100") < 0);
        QCOMPARE(page.graphView()->selectedNode(), QString::fromStdString(holder));
        // Only the shown snapshot's levels were laid out.
        for (const std::string& laidOut : page.layoutWorker()->history())
            QVERIFY2(laidOut.rfind(snap->pipeline.snapshots.back().passId + "|", 0) == 0, laidOut.c_str());
    }

    void aSelectionMadeWhileALayoutRunsIsOpenedWhenItComes() {
        auto snap = reluChain(1200);
        QVERIFY(snap);
        GraphPage page;
        QVERIFY(showLastSnapshot(page, snap));
        // Open a group, and select a node in another before that layout is shown.
        const LayoutNode first = page.graphView()->graphLayout()->nodes.front();
        page.toggleGroup(QString::fromStdString(first.name));
        QVERIFY(page.layoutPending());
        page.highlightNode(QStringLiteral("r900"));
        QVERIFY(awaitShown(page));
        QVERIFY(page.graphView()->graphLayout()->findNode("r900") >= 0);
        QCOMPARE(page.graphView()->selectedNode(), QStringLiteral("r900"));
        QVERIFY(page.expandedGroups().count(first.name) == 1);
    }
};

QTEST_MAIN(TestGraphLayoutWorker)
#include "tst_graphlayoutworker.moc"
