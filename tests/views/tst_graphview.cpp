// The graph view's first look at a layout: a wide graph (densenet121's input snapshot has rows of
// shape computations to the right of its input) opens on its topmost node, not on the empty
// middle of the top edge.
#include "views/GraphView.h"

#include <QImage>
#include <QTemporaryDir>
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

    // File > Export graph view: the whole graph (not only the visible part) as SVG, with the
    // boxes' texts and the selected node's outline, and as PNG at twice the scene's size; a
    // file type other than those is refused by name and nothing is written.
    void theShownGraphExportsAsSvgAndPng() {
        auto layout = std::make_shared<GraphLayoutResult>();
        layout->width = 600;
        layout->height = 300;
        for (int i = 0; i < 3; ++i) {
            LayoutNode n;
            n.name = "node" + std::to_string(i);
            n.op = i == 1 ? "FusedConv" : "Relu";
            n.shortName = n.name;
            n.cost = i == 1 ? sextant::ir::CostClass::Cube : sextant::ir::CostClass::Vector;
            n.x = 100 + 200.0 * i;
            n.y = 150;
            n.w = 120;
            n.h = 40;
            layout->nodes.push_back(n);
        }
        GraphView view;
        view.resize(300, 200); // smaller than the graph: the export still holds all of it
        view.setGraphLayout(layout);
        view.selectNode(QStringLiteral("node1"));
        QTemporaryDir dir;
        const QString svgPath = dir.filePath(QStringLiteral("g.svg")), pngPath = dir.filePath(QStringLiteral("g.png"));
        QCOMPARE(view.exportImage(svgPath), QString());
        QFile svg(svgPath);
        QVERIFY(svg.open(QIODevice::ReadOnly));
        const QByteArray text = svg.readAll();
        QVERIFY(text.contains("<svg"));
        for (const char* name : {"node0", "node1", "node2", "FusedConv"})
            QVERIFY2(text.contains(name), name);
        QVERIFY2(text.contains("#e68a00"), "the selected node's outline"); // the view's selection colour
        QCOMPARE(view.exportImage(pngPath), QString());
        QImage png(pngPath);
        QVERIFY(!png.isNull());
        QCOMPARE(png.size(), QSize(2 * 640, 2 * 340)); // the scene: the graph and a 20-pixel margin
        const QString refused = view.exportImage(dir.filePath(QStringLiteral("g.bmp")));
        QVERIFY2(refused.contains(QStringLiteral(".svg or .png")), qPrintable(refused));
        QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("g.bmp"))));
    }
};

QTEST_MAIN(TestGraphView)
#include "tst_graphview.moc"
