// Graphviz layout of small graphs: the properties a reader of the graph tab relies on.
#include "views/GraphLayout.h"

#include "core/ir/Dot.h"

#include <graphviz/cgraph.h>

#include <QtTest>

using namespace sextant;
using namespace sextant::views;

namespace {

/// x -> Relu(a) -> Add(a, b) with b = Relu(a) as well: a diamond a -> {r1, r2} -> add.
std::unique_ptr<ir::Graph> diamond() {
    auto g = std::make_unique<ir::Graph>("diamond");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 8})).value();
    ir::Node* a = g->addNode(ir::OpKind::Relu, "a", {x}, {"a_out"}).value();
    ir::Node* r1 = g->addNode(ir::OpKind::Relu, "r1", {a->output()}, {"r1_out"}).value();
    ir::Node* r2 = g->addNode(ir::OpKind::Sigmoid, "r2", {a->output()}, {"r2_out"}).value();
    ir::Node* add = g->addNode(ir::OpKind::Add, "add", {r1->output(), r2->output()}, {"y"}).value();
    g->setOutputs({add->output()});
    if (!g->inferTypes().ok())
        return nullptr;
    return g;
}

} // namespace

class TestGraphLayout : public QObject {
    Q_OBJECT
private slots:
    void producersAreAboveConsumers() {
        auto g = diamond();
        QVERIFY(g);
        auto layout = layoutGraph(*g);
        QVERIFY2(layout.ok(), layout.ok() ? "" : layout.error().message.c_str());
        // 4 ops + 1 input + 1 output box
        QCOMPARE(layout->nodes.size(), size_t(6));
        QCOMPARE(layout->edges.size(), size_t(6)); // x->a, a->r1, a->r2, r1->add, r2->add, add->output
        for (const LayoutEdge& e : layout->edges) {
            const LayoutNode& from = layout->nodes[static_cast<size_t>(layout->findNode(e.from))];
            const LayoutNode& to = layout->nodes[static_cast<size_t>(layout->findNode(e.to))];
            QVERIFY2(from.y < to.y, qPrintable(QString::fromStdString(e.from + " not above " + e.to)));
            QVERIFY(e.points.size() >= 4);
            QCOMPARE((e.points.size() - 1) % 3, size_t(0)); // a cubic B-spline
            QVERIFY(e.hasArrow);
        }
        // The two branches sit side by side on one rank.
        const LayoutNode& r1 = layout->nodes[static_cast<size_t>(layout->findNode("r1"))];
        const LayoutNode& r2 = layout->nodes[static_cast<size_t>(layout->findNode("r2"))];
        QCOMPARE(r1.y, r2.y);
        QVERIFY(std::abs(r1.x - r2.x) >= (r1.w + r2.w) / 2);
    }

    void boxesCarryOpTypeAndCostAndFitTheBounds() {
        auto g = diamond();
        QVERIFY(g);
        auto layout = layoutGraph(*g);
        QVERIFY(layout.ok());
        const LayoutNode& add = layout->nodes[static_cast<size_t>(layout->findNode("add"))];
        QCOMPARE(QString::fromStdString(add.op), QStringLiteral("Add"));
        QCOMPARE(add.cost, ir::CostClass::Vector);
        QCOMPARE(QString::fromStdString(add.typeText), QStringLiteral("f32[1,8]"));
        QVERIFY(layout->findNode("x") >= 0);
        QCOMPARE(layout->nodes[static_cast<size_t>(layout->findNode("x"))].kind, LayoutNodeKind::Input);
        QVERIFY(layout->findNode("output:y") >= 0);
        for (const LayoutNode& n : layout->nodes) {
            QVERIFY(n.x - n.w / 2 >= -0.5 && n.x + n.w / 2 <= layout->width + 0.5);
            QVERIFY(n.y - n.h / 2 >= -0.5 && n.y + n.h / 2 <= layout->height + 0.5);
        }
    }

    void aNodeTouchingAValueOnlyTheRunSizesIsColouredAsHost() {
        // x -> NonZero -> Gather(x, nz row 0): the Gather reads i64[?], so it runs on the host
        // (backend::unitFor) and its box says so, though Gather's op class is DMA.
        auto g = std::make_unique<ir::Graph>("data_shaped");
        ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {8})).value();
        ir::Node* nz = g->addNode(ir::OpKind::NonZero, "nz", {x}, {"idx"}).value();
        ir::Value* zero = g->addConstant("zero", ir::Tensor::fromVector<int64_t>({}, {0})).value();
        ir::Node* row = g->addNode(ir::OpKind::Gather, "row", {nz->output(), zero}, {"flat"}, {{"axis", int64_t{0}}}).value();
        ir::Node* pick = g->addNode(ir::OpKind::Gather, "pick", {x, row->output()}, {"y"}, {{"axis", int64_t{0}}}).value();
        ir::Node* keep = g->addNode(ir::OpKind::Relu, "keep", {x}, {"z"}).value();
        g->setOutputs({pick->output(), keep->output()});
        QVERIFY(g->inferTypes().ok());
        const GraphLayoutResult items = graphItems(*g);
        auto costOf = [&](const char* name) { return items.nodes[static_cast<size_t>(items.findNode(name))].cost; };
        QCOMPARE(costOf("pick"), ir::CostClass::Host);
        QCOMPARE(costOf("row"), ir::CostClass::Host);
        QCOMPARE(costOf("keep"), ir::CostClass::Vector);
    }

    void viewNodesAreMarked() {
        // A node the layout pass lowered as a view (view=1: no Task) is marked for the hollow
        // dashed box; the others are not.
        auto g = std::make_unique<ir::Graph>("view");
        ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 4, 1, 1})).value();
        ir::Node* flat = g->addNode(ir::OpKind::Flatten, "flat", {x}, {"f"}).value();
        ir::Node* relu = g->addNode(ir::OpKind::Relu, "relu", {flat->output()}, {"y"}).value();
        g->setOutputs({relu->output()});
        QVERIFY(g->inferTypes().ok());
        flat->setView(true);
        auto layout = layoutGraph(*g);
        QVERIFY(layout.ok());
        QVERIFY(layout->nodes[static_cast<size_t>(layout->findNode("flat"))].view);
        QVERIFY(!layout->nodes[static_cast<size_t>(layout->findNode("relu"))].view);
    }

    void layoutIsDeterministic() {
        auto g = diamond();
        QVERIFY(g);
        auto a = layoutGraph(*g);
        auto b = layoutGraph(*g);
        QVERIFY(a.ok() && b.ok());
        QCOMPARE(a->nodes.size(), b->nodes.size());
        for (size_t i = 0; i < a->nodes.size(); ++i) {
            QCOMPARE(a->nodes[i].x, b->nodes[i].x);
            QCOMPARE(a->nodes[i].y, b->nodes[i].y);
        }
    }

    // compile --export-dot: Graphviz itself reads the DOT text back with every box and edge of
    // the graph (inputs and outputs as ovals), the title's quotes intact.
    void dotExportIsDotGraphvizReads() {
        auto g = diamond();
        QVERIFY(g);
        const std::string title = "diamond \"after\" pass fuse";
        const std::string dot = ir::graphToDot(*g, title);
        QCOMPARE(ir::graphToDot(*g, title), dot);
        Agraph_t* parsed = agmemread(dot.c_str());
        QVERIFY2(parsed, dot.c_str());
        QCOMPARE(agnnodes(parsed), 6); // x, a, r1, r2, add, y
        QCOMPARE(agnedges(parsed), 6); // x->a, a->r1, a->r2, r1->add, r2->add, add->y
        QCOMPARE(std::string(agget(parsed, const_cast<char*>("label"))), title);
        Agnode_t* add = agnode(parsed, const_cast<char*>("n3"), 0);
        QVERIFY(add);
        QVERIFY(std::string(agget(add, const_cast<char*>("label"))).rfind("Add\\nadd\\nf32[1,8]", 0) == 0);
        agclose(parsed);
    }

    void elideMiddleKeepsBothEnds() {
        QCOMPARE(QString::fromStdString(elideMiddle("short", 26)), QStringLiteral("short"));
        const std::string e = elideMiddle("model/backbone/stage3/block7/conv2/Conv", 20);
        QString q = QString::fromStdString(e);
        QCOMPARE(q.size(), 20);
        QVERIFY(q.startsWith("model/bac"));
        QVERIFY(q.endsWith("/Conv"));
    }
};

QTEST_APPLESS_MAIN(TestGraphLayout)
#include "tst_graphlayout.moc"
