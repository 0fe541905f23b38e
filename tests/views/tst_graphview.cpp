// The graph view's first look at a layout: a wide graph (densenet121's input snapshot has rows of
// shape computations to the right of its input) opens on its topmost node, not on the empty
// middle of the top edge.
#include "views/GraphView.h"

#include <QtTest>

using namespace sextant::views;

class TestGraphView : public QObject {
    Q_OBJECT
private slots:
    void wideGraphOpensOnItsTopmostNode() {
        auto layout = std::make_shared<GraphLayoutResult>();
        layout->width = 4000;
        layout->height = 3000;
        auto box = [&](const std::string& name, double x, double y) {
            LayoutNode n;
            n.name = name;
            n.op = "Relu";
            n.shortName = name;
            n.x = x;
            n.y = y;
            n.w = 120;
            n.h = 40;
            layout->nodes.push_back(n);
        };
        box("input", 80, 30); // the top, far left
        for (int i = 0; i < 30; ++i)
            box("wide" + std::to_string(i), 200 + 125.0 * i, 400);
        box("bottom", 2000, 2950);

        GraphView view;
        view.resize(900, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.setGraphLayout(layout);
        view.fitToView();
        const QPoint top = view.mapFromScene(view.nodeCenter("input"));
        QVERIFY2(view.viewport()->rect().contains(top),
                 qPrintable(QStringLiteral("input at %1,%2 is off screen").arg(top.x()).arg(top.y())));
    }
};

QTEST_MAIN(TestGraphView)
#include "tst_graphview.moc"
