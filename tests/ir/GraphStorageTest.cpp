// Graph keeps its nodes and values in a per-graph memory pool and counts structural changes
// (structureVersion) so that rewrite drivers look a node up by name again only when the answer
// could have changed; values sit in an array with holes that is compacted now and then, the node
// order is cached as an array between changes, and erased nodes are logged with their scratch
// number. These tests pin down the contract those optimisations rely on.

#include "TestUtil.h"

#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

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
    auto cCloned = g->clone();
    ASSERT_TRUE(cCloned.ok()) << cCloned.error().message;
    std::unique_ptr<Graph> c = std::move(cCloned).value();
    EXPECT_EQ(printGraph(*c), printGraph(*g));
    EXPECT_EQ(nodeNames(*c), names);
}

std::vector<std::string> valueNames(const std::vector<Value*>& values) {
    std::vector<std::string> out;
    for (const Value* v : values)
        out.push_back(v->name());
    return out;
}

TEST(GraphStorage, ValuesKeepCreationOrderWhenManyAreRemoved) {
    // 300 constants, three kept alive as graph outputs: removing the others leaves far more
    // holes than values, which compacts the value array. Order, lookups and counts must not move.
    auto g = reluChain(10);
    std::vector<Value*> outputs = g->outputs();
    for (int i = 0; i < 300; ++i) {
        Value* k = g->addConstant("k" + std::to_string(i), Tensor::fromVector<float>({1}, {float(i)})).value();
        if (i == 0 || i == 150 || i == 299)
            outputs.push_back(k);
    }
    g->setOutputs(outputs);
    ASSERT_TRUE(g->inferTypes().ok());
    const uint32_t idOf150 = g->findValue("k150")->id();
    EXPECT_EQ(g->numConstants(), 300u);
    g->removeUnusedConstants();

    std::vector<std::string> expected{"x"};
    for (int i = 0; i < 10; ++i)
        expected.push_back("v" + std::to_string(i));
    for (const char* k : {"k0", "k150", "k299"})
        expected.push_back(k);
    EXPECT_EQ(valueNames(g->values()), expected);
    EXPECT_EQ(valueNames(g->constants()), (std::vector<std::string>{"k0", "k150", "k299"}));
    EXPECT_EQ(g->numConstants(), 3u);
    EXPECT_EQ(g->findValue("k1"), nullptr);
    ASSERT_NE(g->findValue("k150"), nullptr);
    EXPECT_EQ(g->findValue("k150")->id(), idOf150); // ids stay: walks index by them
    EXPECT_TRUE(verifyGraph(*g).ok());

    // A value made after the compaction comes last. A clone makes the sources (inputs and
    // constants) first, then the node outputs, each in the original's order, and prints the same.
    ASSERT_TRUE(g->addConstant("late", Tensor::fromVector<float>({1}, {1.f})).ok());
    expected.push_back("late");
    EXPECT_EQ(valueNames(g->values()), expected);
    EXPECT_EQ(g->numConstants(), 4u);
    auto cCloned = g->clone();
    ASSERT_TRUE(cCloned.ok()) << cCloned.error().message;
    std::unique_ptr<Graph> c = std::move(cCloned).value();
    EXPECT_EQ(valueNames(c->values()),
              (std::vector<std::string>{"x", "k0", "k150", "k299", "late", "v0", "v1", "v2", "v3",
                                        "v4", "v5", "v6", "v7", "v8", "v9"}));
    EXPECT_EQ(valueNames(c->constants()), valueNames(g->constants()));
    EXPECT_EQ(c->numConstants(), 4u);
    EXPECT_EQ(printGraph(*c), printGraph(*g));
}

TEST(GraphStorage, TheCachedNodeOrderFollowsEveryChange) {
    auto g = reluChain(3);
    auto names = [&] {
        std::vector<std::string> out;
        for (const Node* n : g->nodeOrder())
            out.push_back(n->name());
        return out;
    };
    EXPECT_EQ(names(), (std::vector<std::string>{"r0", "r1", "r2"}));
    // Insert before a node, then append: both show at once.
    Node* r1 = g->findNode("r1");
    ASSERT_TRUE(g->addNode(OpKind::Relu, "a", {g->findValue("v0")}, {"va"}, {}, r1).ok());
    ASSERT_TRUE(g->addNode(OpKind::Relu, "b", {g->findValue("v2")}, {"vb"}).ok());
    EXPECT_EQ(names(), (std::vector<std::string>{"r0", "a", "r1", "r2", "b"}));
    // Erase: gone from the order.
    ASSERT_TRUE(g->eraseNode(g->findNode("a")).ok());
    EXPECT_EQ(names(), (std::vector<std::string>{"r0", "r1", "r2", "b"}));
    // A consumer put before its producer, then topoSort: the order changes again.
    ASSERT_TRUE(g->addNode(OpKind::Relu, "c", {g->findValue("vb")}, {"vc"}, {}, g->findNode("r0")).ok());
    EXPECT_EQ(names(), (std::vector<std::string>{"c", "r0", "r1", "r2", "b"}));
    ASSERT_TRUE(g->topoSort().ok());
    EXPECT_EQ(names(), (std::vector<std::string>{"r0", "r1", "r2", "b", "c"}));
    EXPECT_EQ(nodeNames(*g), names());
}

TEST(GraphStorage, ErasedNodesAreLoggedWithNameAndScratch) {
    auto g = reluChain(3);
    std::vector<ErasedNode> log;
    g->setEraseLog(&log);
    Node* r2 = g->findNode("r2");
    r2->setScratch(7);
    g->setOutputs({g->findValue("v1")});
    ASSERT_TRUE(g->eraseNode(r2).ok());
    g->setEraseLog(nullptr);
    ASSERT_EQ(log.size(), 1u);
    EXPECT_EQ(log[0].node, r2);
    EXPECT_EQ(log[0].name, "r2");
    EXPECT_EQ(log[0].scratch, 7u);
    // A new node starts with scratch 0, whatever memory it reuses.
    Node* fresh = g->addNode(OpKind::Relu, "r2b", {g->findValue("v1")}, {"w"}).value();
    EXPECT_EQ(fresh->scratch(), 0u);
}

TEST(GraphStorage, InferTypesSaysWhetherATypeChanged) {
    auto g = reluChain(3);
    bool changed = false;
    ASSERT_TRUE(g->inferTypes(&changed).ok());
    EXPECT_TRUE(changed); // addNode leaves outputs untyped until inference
    ASSERT_TRUE(g->inferTypes(&changed).ok());
    EXPECT_FALSE(changed);
    g->findValue("v1")->setType(TensorType::of(DType::F32, {9}));
    ASSERT_TRUE(g->inferTypes(&changed).ok());
    EXPECT_TRUE(changed); // v1 is put back to [4]
    EXPECT_EQ(g->findValue("v1")->type(), TensorType::of(DType::F32, {4}));
    ASSERT_TRUE(g->inferTypes(&changed).ok());
    EXPECT_FALSE(changed);
}

TEST(GraphStorage, AttributesAreSharedUntilChanged) {
    // A clone shares each node's attribute map; a change on either side copies it first, and a
    // map someone kept (a snapshot does) never changes.
    auto g = reluChain(2);
    g->findNode("r0")->setAttr("alpha", int64_t{1});
    auto cCloned = g->clone();
    ASSERT_TRUE(cCloned.ok()) << cCloned.error().message;
    std::unique_ptr<Graph> c = std::move(cCloned).value();
    Node* a = g->findNode("r0");
    Node* b = c->findNode("r0");
    EXPECT_EQ(a->sharedAttrs(), b->sharedAttrs());
    std::shared_ptr<const AttributeMap> kept = b->sharedAttrs();
    b->setAttr("alpha", int64_t{2});
    EXPECT_EQ(a->attrInt("alpha", 0), 1);
    EXPECT_EQ(b->attrInt("alpha", 0), 2);
    EXPECT_EQ(std::get<int64_t>(kept->at("alpha")), 1);
    EXPECT_NE(a->sharedAttrs(), b->sharedAttrs());
    // Unshared, a change is made in place; a node without attributes has none to share.
    const AttributeMap* before = &b->attrs();
    kept.reset();
    b->mutableAttrs()["beta"] = 3.0;
    EXPECT_EQ(&b->attrs(), before);
    EXPECT_EQ(g->findNode("r1")->sharedAttrs(), nullptr);
    EXPECT_TRUE(g->findNode("r1")->attrs().empty());
    EXPECT_FALSE(g->findNode("r1")->hasAttr("alpha"));
}

TEST(GraphStorage, SubgraphsOutliveNothingTheyNeed) {
    // A node attribute may hold a whole graph (If/Loop bodies) with its own pool; destroying the
    // outer graph destroys the body through the node, while the pools are still alive.
    auto body = reluChain(5);
    std::shared_ptr<const Graph> shared(std::move(body));
    {
        auto g = reluChain(2);
        g->findNode("r0")->setAttr("body", shared);
        auto cCloned = g->clone();
        ASSERT_TRUE(cCloned.ok()) << cCloned.error().message;
        std::unique_ptr<Graph> c = std::move(cCloned).value();
        EXPECT_EQ(c->findNode("r0")->attrGraph("body"), shared.get());
    }
    EXPECT_EQ(shared->numNodes(), 5u);
    EXPECT_EQ(nodeNames(*shared).back(), "r4");
}

// Operands and users sit inside the node and value up to a few, and move to the heap beyond
// that (a Concat of dozens of inputs, a value read by many nodes): rewiring, erasing and cloning
// must see the same lists either way.
TEST(GraphStorage, ManyOperandsAndUsersSurviveRewiringAndClone) {
    Graph g("wide");
    Value* x = g.addInput("x", TensorType::of(DType::F32, {1, 2})).value();
    std::vector<Value*> parts;
    for (int i = 0; i < 12; ++i)
        parts.push_back(g.addNode(OpKind::Relu, "r" + std::to_string(i), {x},
                                  {"p" + std::to_string(i)})
                            .value()
                            ->output(0));
    ASSERT_EQ(x->users().size(), 12u);
    Node* cat = g.addNode(OpKind::Concat, "cat", parts, {"y"}, {{"axis", int64_t{1}}}).value();
    g.setOutputs({cat->output(0)});
    ASSERT_TRUE(g.inferTypes().ok());
    EXPECT_EQ(cat->output(0)->type().dims(), (std::vector<int64_t>{1, 24}));

    // Point input 7 at input 3's value, then drop r7: 11 inputs' worth of users remain.
    g.setInput(cat, 7, parts[3]);
    EXPECT_EQ(parts[3]->users().size(), 2u);
    ASSERT_TRUE(g.eraseNode(g.findNode("r7")).ok());
    EXPECT_EQ(x->users().size(), 11u);
    EXPECT_EQ(cat->input(7), parts[3]);
    EXPECT_EQ(cat->input(11), parts[11]);
    ASSERT_TRUE(verifyGraph(g).ok());

    auto copyCloned = g.clone();

    ASSERT_TRUE(copyCloned.ok()) << copyCloned.error().message;

    std::unique_ptr<Graph> copy = std::move(copyCloned).value();
    const Node* c = copy->findNode("cat");
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(c->numInputs(), 12u);
    for (size_t i = 0; i < 12; ++i)
        EXPECT_EQ(c->input(i)->name(), cat->input(i)->name()) << "input " << i;
    EXPECT_EQ(copy->findValue("x")->users().size(), 11u);
    EXPECT_EQ(printGraph(*copy), printGraph(g));
}

} // namespace
TEST(GraphStorage, VerifierTellsAnotherGraphsValueFromOneWithTheSameId) {
    // Two graphs built alike give their values the same ids: the verifier must still see that
    // r1 reads a value of the other graph, and that a value used before its producer runs is
    // not defined yet.
    auto g = reluChain(3);
    auto other = reluChain(3);
    ASSERT_TRUE(g->inferTypes().ok());
    ASSERT_TRUE(other->inferTypes().ok());
    ASSERT_TRUE(verifyGraph(*g).ok());
    EXPECT_EQ(g->findValue("v0")->id(), other->findValue("v0")->id());
    g->setInput(g->findNode("r1"), 0, other->findValue("v0"));
    Status st = verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("node 'r1'"), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find("input 'v0' does not belong to this graph"), std::string::npos)
        << st.error().message;
    EXPECT_TRUE(g->owns(g->findValue("v0")));
    EXPECT_FALSE(g->owns(other->findValue("v0")));

    auto late = reluChain(3);
    ASSERT_TRUE(late->inferTypes().ok());
    late->setInput(late->findNode("r0"), 0, late->findValue("v1"));
    st = verifyGraph(*late);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("input 'v1' is used before it is defined (by node 'r1')"),
              std::string::npos)
        << st.error().message;
}

TEST(GraphStorage, CloneOfAGraphTheVerifierRejectsIsAnErrorNotACrash) {
    // The same two broken graphs as above: the interpreter and the pipeline copy their input
    // before they verify it, so the copy must say what is wrong instead of ending the process.
    auto g = reluChain(3);
    auto other = reluChain(3);
    g->setInput(g->findNode("r1"), 0, other->findValue("v0"));
    auto foreign = g->clone();
    ASSERT_FALSE(foreign.ok());
    EXPECT_EQ(foreign.error().kind, ErrorKind::Verify);
    EXPECT_EQ(foreign.error().subject, "v0");
    EXPECT_EQ(foreign.error().message,
              "cannot copy graph 'chain': value 'v0' used by node 'r1' belongs to another graph");

    auto late = reluChain(3);
    late->setInput(late->findNode("r0"), 0, late->findValue("v1"));
    auto early = late->clone();
    ASSERT_FALSE(early.ok());
    EXPECT_EQ(early.error().message,
              "cannot copy graph 'chain': value 'v1' used by node 'r0' is not defined before it");

    auto outside = reluChain(1);
    outside->setOutputs({other->findValue("v2")});
    auto output = outside->clone();
    ASSERT_FALSE(output.ok());
    EXPECT_EQ(output.error().message,
              "cannot copy graph 'chain': value 'v2' used by the graph's outputs belongs to another graph");
}

} // namespace sextant::ir::test
