// Graph keeps its nodes and values in a per-graph memory pool and counts structural changes
// (structureVersion) so that rewrite drivers look a node up by name again only when the answer
// could have changed. These tests pin down the contract those optimisations rely on.

#include "TestUtil.h"

#include "core/ir/Printer.h"

namespace sextant::ir::test {
namespace {

std::unique_ptr<Graph> reluChain(int n) {
    auto g = std::make_unique<Graph>("chain");
    Value* v = g->addInput("x", TensorType::of(DType::F32, {4})).value();
    for (int i = 0; i < n; ++i)
        v = g->addNode(OpKind::Relu, "r" + std::to_string(i), {v}, {"v" + std::to_string(i)})
                .value()
                ->output(0);
    g->setOutputs({v});
    return g;
}

std::vector<std::string> nodeNames(const Graph& g) {
    std::vector<std::string> out;
    for (const Node* n : g.nodes())
        out.push_back(n->name());
    return out;
}

TEST(GraphStorage, StructureVersionChangesExactlyWhenANameCouldFindAnotherNode) {
    auto g = reluChain(3);
    Node* r1 = g->findNode("r1");
    uint64_t v = g->structureVersion();

    // Rewiring, retyping and attributes leave every name on the same node.
    g->setInput(g->findNode("r2"), 0, g->findValue("v0"));
    g->replaceAllUsesWith(g->findValue("v1"), g->findValue("v0"));
    r1->output(0)->setType(TensorType::of(DType::F32, {4}));
    r1->setAttr("note", int64_t{1});
    ASSERT_TRUE(g->renameValue(g->findValue("v0"), "w0").ok());
    EXPECT_EQ(g->structureVersion(), v);

    ASSERT_TRUE(g->eraseNode(r1).ok());
    EXPECT_NE(g->structureVersion(), v);
    v = g->structureVersion();

    Node* r1b = g->addNode(OpKind::Relu, "r1.new", {g->findValue("w0")}, {"v1b"}).value();
    EXPECT_NE(g->structureVersion(), v);
    v = g->structureVersion();

    ASSERT_TRUE(g->renameNode(r1b, "r1").ok());
    EXPECT_NE(g->structureVersion(), v);
    EXPECT_EQ(g->findNode("r1"), r1b);
}

TEST(GraphStorage, OrderSurvivesHeavyEraseAndReinsertion) {
    // Erasing every other node and inserting replacements before their successors reuses pool
    // slots out of order; iteration must follow the graph order, not memory order.
    const int n = 400;
    auto g = reluChain(n);
    for (int i = 1; i < n - 1; i += 2) {
        Node* old = g->findNode("r" + std::to_string(i));
        Node* next = g->findNode("r" + std::to_string(i + 1));
        Node* repl = g->addNode(OpKind::Relu, "n" + std::to_string(i), {old->input(0)},
                                {"w" + std::to_string(i)}, {}, next)
                         .value();
        g->replaceAllUsesWith(old->output(0), repl->output(0));
        ASSERT_TRUE(g->eraseNode(old).ok());
    }
    std::vector<std::string> names = nodeNames(*g);
    ASSERT_EQ(names.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        EXPECT_EQ(names[i], (i % 2 == 1 && i < n - 1 ? "n" : "r") + std::to_string(i)) << i;
    // Sorting an already sorted graph keeps its order exactly, and a clone prints the same.
    ASSERT_TRUE(g->topoSort().ok());
    EXPECT_EQ(nodeNames(*g), names);
    auto c = g->clone();
    EXPECT_EQ(printGraph(*c), printGraph(*g));
    EXPECT_EQ(nodeNames(*c), names);
}

TEST(GraphStorage, SubgraphsOutliveNothingTheyNeed) {
    // A node attribute may hold a whole graph (If/Loop bodies) with its own pool; destroying the
    // outer graph destroys the body through the node, while the pools are still alive.
    auto body = reluChain(5);
    std::shared_ptr<const Graph> shared(std::move(body));
    {
        auto g = reluChain(2);
        g->findNode("r0")->setAttr("body", shared);
        auto c = g->clone();
        EXPECT_EQ(c->findNode("r0")->attrGraph("body"), shared.get());
    }
    EXPECT_EQ(shared->numNodes(), 5u);
    EXPECT_EQ(nodeNames(*shared).back(), "r4");
}

} // namespace
} // namespace sextant::ir::test
