// Snapshot capture shares the records of unchanged sources (graph inputs, constants) by their
// Value::stamp, and makes new ones for sources a pass changed: a stale record would show the
// input's old type or the constant's old name in --print-changed and the GUI's IR view.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"
#include "core/passes/SnapshotState.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

std::unique_ptr<ir::Graph> reluOfSum() {
    Builder b;
    ir::Value* x = b.input("x", {1, 4});
    ir::Value* c = b.constant("c", randomTensor({1, 4}, 7));
    ir::Value* s = b.node(OpKind::Add, "add", {x, c});
    return b.finish({b.node(OpKind::Relu, "relu", {s})});
}

} // namespace

TEST(ValueStamp, ChangesWithTheNameOrTypeOnly) {
    auto g = reluOfSum();
    ir::Value* x = g->findValue("x");
    const uint64_t first = x->stamp();
    x->setType(x->type()); // the same type: not a change
    EXPECT_EQ(x->stamp(), first);
    x->setType(ir::TensorType::of(x->type().dtype, {2, 4}));
    const uint64_t second = x->stamp();
    EXPECT_NE(second, first);
    ASSERT_TRUE(g->renameValue(x, "input").ok());
    EXPECT_NE(x->stamp(), second);
    EXPECT_NE(x->stamp(), first);
    // A clone's values are other values: their stamps are their own.
    auto copyCloned = g->clone();
    ASSERT_TRUE(copyCloned.ok()) << copyCloned.error().message;
    std::unique_ptr<ir::Graph> copy = std::move(copyCloned).value();
    EXPECT_NE(copy->findValue("input")->stamp(), x->stamp());
    EXPECT_NE(copy->findValue("c")->stamp(), g->findValue("c")->stamp());
}

TEST(SnapshotState, UnchangedSourcesShareRecordsAndChangedOnesGetNewOnes) {
    auto g = reluOfSum();
    auto before = SnapshotState::capture(*g, nullptr);
    bool changed = true;
    auto same = SnapshotState::capture(*g, before.get(), &changed);
    EXPECT_FALSE(changed);
    EXPECT_EQ(same->sources(), before->sources()); // the same records, by pointer

    ir::Value* x = g->findValue("x");
    x->setType(ir::TensorType::of(x->type().dtype, {3, 4}));
    ASSERT_TRUE(g->renameValue(g->findValue("c"), "bias").ok());
    auto after = SnapshotState::capture(*g, same.get(), &changed);
    EXPECT_TRUE(changed);
    ASSERT_EQ(after->sources().size(), 2u);
    EXPECT_NE(after->sources()[0], before->sources()[0]);
    EXPECT_NE(after->sources()[1], before->sources()[1]);
    EXPECT_EQ(after->text(), ir::printGraph(*g));
    EXPECT_NE(after->text().find("%bias"), std::string::npos);
    EXPECT_NE(after->text().find("[3,4]"), std::string::npos);
    // The earlier snapshot still shows the graph as it was.
    EXPECT_NE(before->text().find("%c"), std::string::npos) << before->text();
    EXPECT_EQ(before->text().find("%bias"), std::string::npos);
    EXPECT_EQ(before->text().find("[3,4]"), std::string::npos);
}
