// How the Graph tab folds a large graph (GraphHierarchy): bounded levels, every box in exactly one
// group, name scopes where the names have them, edges between groups merged, the same groups
// every time.
#include "views/GraphHierarchy.h"

#include <QtTest>

#include <map>
#include <set>

using namespace sextant;
using namespace sextant::views;

namespace {

LayoutNode box(const std::string& name, const std::string& op, LayoutNodeKind kind = LayoutNodeKind::Op) {
    LayoutNode n;
    n.name = name;
    n.op = op;
    n.kind = kind;
    n.w = 90;
    n.h = 52;
    return n;
}

void edge(GraphLayoutResult& r, int from, int to) {
    LayoutEdge e;
    e.fromIndex = from;
    e.toIndex = to;
    e.from = r.nodes[static_cast<size_t>(from)].name;
    e.to = r.nodes[static_cast<size_t>(to)].name;
    e.value = e.from + "_out";
    r.edges.push_back(e);
}

/// An input, `blocks` residual blocks of Conv, BatchNormalization, Relu and Add (the Add also
/// reads the block's input), an output: what bench/residual-chain.py gives, named `prefix` + op + i.
GraphLayoutResult residualChain(int blocks, const std::string& scope = {}) {
    GraphLayoutResult r;
    r.nodes.push_back(box("x", "input", LayoutNodeKind::Input));
    int in = 0;
    for (int i = 0; i < blocks; ++i) {
        const std::string p = scope.empty() ? "" : scope + "/block_" + std::to_string(i) + "/";
        const int base = static_cast<int>(r.nodes.size());
        for (const char* op : {"Conv", "BatchNormalization", "Relu", "Add"})
            r.nodes.push_back(box(p + op + "_" + std::to_string(i), op));
        edge(r, in, base);
        edge(r, base, base + 1);
        edge(r, base + 1, base + 2);
        edge(r, base + 2, base + 3);
        edge(r, in, base + 3);
        in = base + 3;
    }
    r.nodes.push_back(box("output:y", "output", LayoutNodeKind::Output));
    edge(r, in, static_cast<int>(r.nodes.size()) - 1);
    return r;
}

/// Entries of every level are within `max`; every item sits in exactly one group, the one
/// groupOf names; sizes add up.
void checkWellFormed(const GraphLayoutResult& items, const GraphHierarchy& h, int max) {
    std::vector<int> seen(items.nodes.size(), 0);
    for (size_t g = 0; g < h.groups.size(); ++g) {
        const HierarchyGroup& group = h.groups[g];
        QVERIFY2(static_cast<int>(group.items.size() + group.groups.size()) <= max,
                 qPrintable(QString::fromStdString(group.id)));
        int size = static_cast<int>(group.items.size());
        for (int k : group.groups) {
            QCOMPARE(h.groups[static_cast<size_t>(k)].parent, static_cast<int>(g));
            size += h.groups[static_cast<size_t>(k)].size;
        }
        QCOMPARE(group.size, size);
        for (int item : group.items) {
            ++seen[static_cast<size_t>(item)];
            QCOMPARE(h.groupOf[static_cast<size_t>(item)], static_cast<int>(g));
        }
    }
    for (size_t i = 0; i < seen.size(); ++i)
        QVERIFY2(seen[i] == 1, items.nodes[i].name.c_str());
    QCOMPARE(h.groups.front().size, static_cast<int>(items.nodes.size()));
    std::set<std::string> ids;
    for (const HierarchyGroup& group : h.groups)
        QVERIFY2(ids.insert(group.id).second, group.id.c_str());
}

} // namespace

class TestGraphHierarchy : public QObject {
    Q_OBJECT
private slots:
    void smallGraphsStayOpen() {
        const GraphLayoutResult items = residualChain(99); // 398 boxes
        QVERIFY(static_cast<int>(items.nodes.size()) <= kCollapseAbove);
        const GraphHierarchy h = buildHierarchy(items);
        QVERIFY(!h.collapsed());
        const GraphLayoutResult level = levelItems(items, h, 0);
        QCOMPARE(level.nodes.size(), items.nodes.size());
        QCOMPARE(level.edges.size(), items.edges.size());
    }

    void flatNamesFoldIntoRunsOfTheGraphOrder() {
        const GraphLayoutResult items = residualChain(5000); // 20,002 boxes, no scopes
        const GraphHierarchy h = buildHierarchy(items);
        QVERIFY(h.collapsed());
        checkWellFormed(items, h, kMaxLevelEntries);
        // A run of consecutive boxes per group: the first group starts with the input.
        const HierarchyGroup& first = h.groups[static_cast<size_t>(h.groups.front().groups.front())];
        QCOMPARE(first.firstItem, 0);
        QCOMPARE(first.lastItem - first.firstItem + 1, first.size);
        QVERIFY(first.label.find("x") == 0);
        // Every level, laid out on its own, stays within a few hundred boxes.
        for (size_t g = 0; g < h.groups.size(); ++g)
            QVERIFY(levelItems(items, h, static_cast<int>(g)).nodes.size() <= size_t(kMaxLevelEntries));
    }

    void runsAreCutBetweenRepeatedBlocks() {
        // Flat names: the runs are cut where one tensor crosses (after an Add), never inside a
        // block, where the skip connection crosses too.
        const GraphLayoutResult items = residualChain(5000);
        const GraphHierarchy h = buildHierarchy(items);
        checkWellFormed(items, h, kMaxLevelEntries);
        const std::vector<int>& runs = h.groups.front().groups;
        QVERIFY(runs.size() > 10);
        for (size_t k = 0; k < runs.size(); ++k) {
            const HierarchyGroup& run = h.groups[static_cast<size_t>(runs[k])];
            const std::string& first = items.nodes[static_cast<size_t>(run.firstItem)].op;
            const std::string& last = items.nodes[static_cast<size_t>(run.lastItem)].op;
            QVERIFY2(first == (k == 0 ? "input" : "Conv"), run.label.c_str());
            QVERIFY2(last == (k + 1 == runs.size() ? "output" : "Add"), run.label.c_str());
        }
        // The runs stay about even: none under half of the mean.
        const int mean = h.groups.front().size / static_cast<int>(runs.size());
        for (int k : runs)
            QVERIFY(h.groups[static_cast<size_t>(k)].size >= mean / 2);
    }

    void nameScopesBecomeGroups() {
        const GraphLayoutResult items = residualChain(150, "model"); // model/block_i/Conv_i ...
        const GraphHierarchy h = buildHierarchy(items);
        QVERIFY(h.collapsed());
        checkWellFormed(items, h, kMaxLevelEntries);
        const int g = h.groupOfName(items, "model/block_9/Add_9");
        QVERIFY(g > 0);
        QCOMPARE(QString::fromStdString(h.groups[static_cast<size_t>(g)].id), QStringLiteral("group:model/block_9"));
        QCOMPARE(QString::fromStdString(h.groups[static_cast<size_t>(g)].label), QStringLiteral("block_9"));
        QCOMPARE(h.groups[static_cast<size_t>(g)].size, 4);
        // The path goes through "model" (the only scope at the top).
        const std::vector<int> path = h.pathTo(g);
        QCOMPARE(path.front(), 0);
        QCOMPARE(QString::fromStdString(h.groups[static_cast<size_t>(path[1])].label), QStringLiteral("model"));
    }

    void edgesBetweenGroupsAreMerged() {
        const GraphLayoutResult items = residualChain(150, "model");
        const GraphHierarchy h = buildHierarchy(items);
        const int model = h.groups[static_cast<size_t>(h.groupOfName(items, "model/block_0/Add_0"))].parent;
        const GraphLayoutResult level = levelItems(items, h, model);
        QCOMPARE(level.nodes.size(), size_t(150)); // one box per block
        for (const LayoutNode& n : level.nodes)
            QCOMPARE(n.kind, LayoutNodeKind::Group);
        // Block i's Add feeds block i+1's Conv and Add: one edge between the boxes, counting two.
        QCOMPARE(level.edges.size(), size_t(149));
        for (const LayoutEdge& e : level.edges) {
            QCOMPARE(e.count, 2);
            QCOMPARE(e.toIndex, e.fromIndex + 1);
            QCOMPARE(level.nodes[static_cast<size_t>(e.fromIndex)].name, e.from);
        }
        // Inside a block: its four ops and their three edges (those from outside are dropped).
        const GraphLayoutResult block = levelItems(items, h, h.groupOfName(items, "model/block_7/Conv_7"));
        QCOMPARE(block.nodes.size(), size_t(4));
        QCOMPARE(block.edges.size(), size_t(3));
        QCOMPARE(QString::fromStdString(level.nodes[7].op), QStringLiteral("4 nodes"));
        QCOMPARE(level.nodes[7].groupSize, 4);
    }

    void openGroupsNestInsideTheirFrames() {
        const GraphLayoutResult items = residualChain(150, "model");
        const GraphHierarchy h = buildHierarchy(items);
        const int block = h.groupOfName(items, "model/block_9/Add_9");
        const int model = h.groups[static_cast<size_t>(block)].parent;
        const std::string modelId = h.groups[static_cast<size_t>(model)].id;
        const std::string blockId = h.groups[static_cast<size_t>(block)].id;
        // A group asked open inside a closed one does not show.
        QCOMPARE(openGroupsOf(h, 0, {blockId}), std::vector<int>{});
        QCOMPARE(openGroupsOf(h, 0, {modelId, blockId}), (std::vector<int>{model, block}));

        GraphLayoutResult out;
        QVERIFY(placeLevel(items, h, 0, {modelId, blockId}, "chain", out).ok());
        auto rect = [&](const std::string& name) {
            const int i = out.findNode(name);
            if (i < 0)
                return QRectF();
            const LayoutNode& n = out.nodes[static_cast<size_t>(i)];
            return QRectF(n.x - n.w / 2, n.y - n.h / 2, n.w, n.h);
        };
        // The top's boxes, the model's 150 blocks, block 9's four ops, and each open group's two
        // ports (the chain enters and leaves both).
        const GraphLayoutResult top = levelItems(items, h, 0);
        QCOMPARE(out.nodes.size(), top.nodes.size() + 150 + 4 + 2 + 2);
        QVERIFY(rect(blockId).contains(rect("port:in:" + blockId)));
        QVERIFY(rect(blockId).contains(rect("port:out:" + blockId)));
        // Block 9's Conv and Add read what comes in: one edge from the port to each.
        int fromPort = 0;
        for (const LayoutEdge& e : out.edges)
            if (e.from == "port:in:" + blockId) {
                ++fromPort;
                QVERIFY(e.to == "model/block_9/Conv_9" || e.to == "model/block_9/Add_9");
            }
        QCOMPARE(fromPort, 2);
        for (const LayoutEdge& e : out.edges) {
            QVERIFY(e.fromIndex >= 0 && static_cast<size_t>(e.fromIndex) < out.nodes.size());
            QVERIFY(e.toIndex >= 0 && static_cast<size_t>(e.toIndex) < out.nodes.size());
            QCOMPARE(out.nodes[static_cast<size_t>(e.fromIndex)].name, e.from);
            QCOMPARE(out.nodes[static_cast<size_t>(e.toIndex)].name, e.to);
        }
        QVERIFY(out.nodes[static_cast<size_t>(out.findNode(modelId))].open);
        QVERIFY(out.nodes[static_cast<size_t>(out.findNode(blockId))].open);
        QVERIFY(!out.nodes[static_cast<size_t>(out.findNode("group:model/block_10"))].open);
        const QRectF outer = rect(modelId), inner = rect(blockId);
        QVERIFY(outer.contains(inner));
        QVERIFY(inner.contains(rect("model/block_9/Add_9")));
        QVERIFY(inner.contains(rect("model/block_9/Conv_9")));
        QVERIFY(outer.contains(rect("group:model/block_140")));
        QVERIFY(!outer.intersects(rect("x")));
        // Below the title strip: the frame's name stays readable.
        QVERIFY(rect("model/block_9/Conv_9").top() >= inner.top() + kFrameTitle);
        // The frames sit inside the top level's bounds.
        QVERIFY(QRectF(0, 0, out.width, out.height).adjusted(-1, -1, 1, 1).contains(outer));
    }

    void aLaterPassFoldsLikeTheImportedGraph() {
        // The imported chain, and the same after fusion: each block's Conv, BatchNormalization
        // and Relu one FusedConv named after the Conv, and a new node no ONNX node accounts for.
        const GraphLayoutResult imported = residualChain(5000);
        const GraphHierarchy reference = buildHierarchy(imported);
        GraphLayoutResult fused;
        fused.nodes.push_back(box("x", "input", LayoutNodeKind::Input));
        fused.nodes.push_back(box("layout.TransData_0", "TransData"));
        edge(fused, 0, 1);
        int in = 1;
        for (int i = 0; i < 5000; ++i) {
            const std::string k = std::to_string(i);
            LayoutNode conv = box("Conv_" + k, "FusedConv");
            conv.origins = {"BatchNormalization_" + k, "Conv_" + k, "Relu_" + k};
            LayoutNode add = box("Add_" + k, "Add");
            add.origins = {"Add_" + k};
            fused.nodes.push_back(conv);
            fused.nodes.push_back(add);
            const int c = static_cast<int>(fused.nodes.size()) - 2;
            edge(fused, in, c);
            edge(fused, c, c + 1);
            edge(fused, in, c + 1);
            in = c + 1;
        }
        fused.nodes.push_back(box("output:y", "output", LayoutNodeKind::Output));
        edge(fused, in, static_cast<int>(fused.nodes.size()) - 1);

        const GraphHierarchy h = foldLike(fused, imported, reference);
        checkWellFormed(fused, h, kMaxLevelEntries);
        QCOMPARE(h.groups.size(), reference.groups.size()); // no group left empty
        // Every box sits in the group (same id) its ONNX nodes sat in; the new node beside the
        // box before it.
        for (size_t i = 0; i < fused.nodes.size(); ++i) {
            const std::string& name = fused.nodes[i].name == "layout.TransData_0" ? "x" : fused.nodes[i].name;
            const int was = reference.groupOfName(imported, name);
            QVERIFY(was >= 0);
            QCOMPARE(h.groups[static_cast<size_t>(h.groupOf[i])].id, reference.groups[static_cast<size_t>(was)].id);
        }
        for (size_t g = 0; g < h.groups.size(); ++g)
            QCOMPARE(h.groups[g].label, reference.groups[g].label);
        // A graph that is not collapsed folds on its own.
        const GraphLayoutResult small = residualChain(20);
        QVERIFY(!foldLike(small, imported, reference).collapsed());
    }

    void theSameItemsGiveTheSameGroups() {
        const GraphLayoutResult items = residualChain(3000);
        const GraphHierarchy a = buildHierarchy(items);
        const GraphHierarchy b = buildHierarchy(items);
        QCOMPARE(a.groups.size(), b.groups.size());
        for (size_t g = 0; g < a.groups.size(); ++g) {
            QCOMPARE(a.groups[g].id, b.groups[g].id);
            QCOMPARE(a.groups[g].label, b.groups[g].label);
            QCOMPARE(a.groups[g].items, b.groups[g].items);
            QCOMPARE(a.groups[g].groups, b.groups[g].groups);
        }
        QCOMPARE(a.groupOf, b.groupOf);
    }

    void deepGraphsGetMoreLevels() {
        // More boxes than kMaxLevelEntries² need a level of groups of groups.
        const GraphLayoutResult items = residualChain(12000); // 48,002 boxes
        const GraphHierarchy h = buildHierarchy(items);
        checkWellFormed(items, h, kMaxLevelEntries);
        const std::vector<int> path = h.pathTo(h.groupOf.back());
        QCOMPARE(path.size(), size_t(3));
    }
};

QTEST_MAIN(TestGraphHierarchy)
#include "tst_graphhierarchy.moc"
