// Graph::removeUnusedConstants looks only at constants that could have become unused since its
// last call (it runs after every fusion, so it must not scan the whole graph). These tests pin
// down that every way a constant can become unused is still seen.

#include "TestUtil.h"

namespace sextant::ir::test {
namespace {

Tensor scalarF32(float v) { return Tensor::fromVector<float>({1}, {v}); }

struct Small {
    std::unique_ptr<Graph> g = std::make_unique<Graph>("g");
    Value* x = nullptr;
    Value* c1 = nullptr;
    Value* c2 = nullptr;
    Node* add = nullptr;

    Small() {
        x = g->addInput("x", TensorType::of(DType::F32, {1})).value();
        c1 = g->addConstant("c1", scalarF32(1)).value();
        c2 = g->addConstant("c2", scalarF32(2)).value();
        add = g->addNode(OpKind::Add, "add", {x, c1}, {"y"}).value();
        g->setOutputs({add->output(0)});
    }
};

TEST(GraphCleanup, AConstantNothingUsesIsRemovedAndUsedOnesStay) {
    Small s;
    s.g->removeUnusedConstants();
    EXPECT_EQ(s.g->findValue("c2"), nullptr);
    EXPECT_NE(s.g->findValue("c1"), nullptr);
    EXPECT_EQ(s.g->constants().size(), 1u);
}

TEST(GraphCleanup, AConstantThatLosesItsLastUseIsRemoved) {
    Small s;
    s.g->removeUnusedConstants(); // c2 goes
    s.g->setInput(s.add, 1, s.x); // c1 loses its only use
    s.g->removeUnusedConstants();
    EXPECT_EQ(s.g->findValue("c1"), nullptr);
    EXPECT_TRUE(s.g->constants().empty());
}

TEST(GraphCleanup, ReplacedAndErasedUsesAreSeen) {
    Small s;
    Node* mul = s.g->addNode(OpKind::Mul, "mul", {s.add->output(0), s.c2}, {"z"}).value();
    s.g->setOutputs({mul->output(0)});
    s.g->removeUnusedConstants();
    ASSERT_NE(s.g->findValue("c2"), nullptr);
    // Bypass mul, then erase it: c2 loses its use through eraseNode.
    s.g->replaceAllUsesWith(mul->output(0), s.add->output(0));
    ASSERT_TRUE(s.g->eraseNode(mul).ok());
    s.g->removeUnusedConstants();
    EXPECT_EQ(s.g->findValue("c2"), nullptr);
    // A constant replaced by another everywhere goes too.
    Value* c3 = s.g->addConstant("c3", scalarF32(3)).value();
    s.g->replaceAllUsesWith(s.c1, c3);
    s.g->removeUnusedConstants();
    EXPECT_EQ(s.g->findValue("c1"), nullptr);
    EXPECT_NE(s.g->findValue("c3"), nullptr);
}

TEST(GraphCleanup, AConstantThatStopsBeingAGraphOutputIsRemoved) {
    Small s;
    s.g->setOutputs({s.add->output(0), s.c2});
    s.g->removeUnusedConstants();
    ASSERT_NE(s.g->findValue("c2"), nullptr) << "a graph output is kept";
    s.g->setOutputs({s.add->output(0)});
    s.g->removeUnusedConstants();
    EXPECT_EQ(s.g->findValue("c2"), nullptr);
}

TEST(GraphCleanup, AClonesUnusedConstantsAreRemovedAndOrderIsKept) {
    Small s;
    s.g->addConstant("c4", scalarF32(4)).value();
    auto cloned = s.g->clone();
    ASSERT_TRUE(cloned.ok()) << cloned.error().message;
    std::unique_ptr<Graph> copy = std::move(cloned).value();
    copy->removeUnusedConstants();
    std::vector<std::string> names;
    for (const Value* v : copy->values())
        names.push_back(v->name());
    EXPECT_EQ(names, (std::vector<std::string>{"x", "c1", "y"}));
    // The original is untouched until it is cleaned itself.
    EXPECT_NE(s.g->findValue("c4"), nullptr);
}

TEST(GraphCleanup, ARenamedUnusedConstantIsStillRemoved) {
    Small s;
    ASSERT_TRUE(s.g->renameValue(s.c2, "two").ok());
    s.g->removeUnusedConstants();
    EXPECT_EQ(s.g->findValue("two"), nullptr);
    EXPECT_EQ(s.g->findValue("c2"), nullptr);
}

} // namespace
} // namespace sextant::ir::test
