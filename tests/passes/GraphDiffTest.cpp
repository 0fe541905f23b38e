// Structural diff between snapshots: what a pass added, removed and changed, and what a fused
// node replaced (through provenance).
#include "PassTestUtil.h"

#include "core/passes/GraphDiff.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

TEST(GraphDiff, FusionShowsChangedAnchorAndRemovedNodes) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 5, 5});
    ir::Value* c =
        b.node(OpKind::Conv, "conv", {x, b.constant("w", randomTensor({3, 2, 3, 3}, 1))});
    ir::Value* a =
        b.node(OpKind::Add, "add", {c, b.constant("bias", randomTensor({1, 3, 1, 1}, 2))});
    ir::Value* r = b.node(OpKind::Relu, "relu", {a});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {r});
    auto g = b.finish({s});
    PipelineResult res = pipeline(*g);
    const Snapshot* before = nullptr;
    const Snapshot* after = nullptr;
    for (size_t i = 1; i < res.snapshots.size(); ++i)
        if (res.snapshots[i].passId == "fuse") {
            before = &res.snapshots[i - 1];
            after = &res.snapshots[i];
        }
    ASSERT_TRUE(before && after);
    std::vector<NodeChange> changes = diffGraphs(*before->graph(), *after->graph());
    std::vector<std::string> removed, changed, added;
    for (const NodeChange& ch : changes) {
        std::string key = (ch.isConstant ? "const:" : "") + ch.node;
        if (ch.kind == NodeChange::Kind::Removed)
            removed.push_back(key);
        else if (ch.kind == NodeChange::Kind::Added)
            added.push_back(key);
        else
            changed.push_back(key);
        if (ch.node == "conv") {
            EXPECT_EQ(ch.kind, NodeChange::Kind::Changed);
            EXPECT_EQ(ch.replaces, (std::vector<std::string>{"add", "relu"}));
            EXPECT_NE(ch.after.find("sextant.FusedConv"), std::string::npos) << ch.after;
        }
    }
    EXPECT_EQ(removed, (std::vector<std::string>{"add", "relu", "const:bias"}));
    // sig is unchanged: the fused node produces the value name the Relu produced.
    EXPECT_EQ(changed, (std::vector<std::string>{"conv"}));
    EXPECT_EQ(added, (std::vector<std::string>{"const:conv_bias"}));
    EXPECT_EQ(summarizeChanges(countChanges(changes)), "+0 -2 ~1 nodes, +1 -1 ~0 constants");
    EXPECT_TRUE(diffGraphs(*after->graph(), *after->graph()).empty());
}
