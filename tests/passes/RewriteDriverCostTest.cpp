// The pattern-rewrite driver (PatternRewritePass) must not do per-(node, rule) work that grows
// with the graph beyond one match() per targeted node: asking each rule for its id and targets per
// node allocated a string and a vector each time and made allocation the biggest cost of the
// pipeline on large graphs. These tests count the calls, a deterministic proxy for that cost.

#include "core/passes/PassContext.h"
#include "core/passes/RewriteRule.h"

#include <gtest/gtest.h>

namespace sextant::passes::test {
namespace {

struct Counts {
    int id = 0, targets = 0, match = 0, apply = 0;
};

/// Targets Relu, never matches; or, with `renameOnce`, renames the first Relu it sees (a
/// structural change) so that the driver has to look nodes up again afterwards.
class CountingRule : public RewriteRule {
public:
    CountingRule(Counts& c, bool renameOnce) : m_c(c), m_renameOnce(renameOnce) {}
    std::string id() const override {
        ++m_c.id;
        return "counting-rule";
    }
    std::string summary() const override { return "counts the driver's calls"; }
    std::vector<ir::OpKind> targets() const override {
        ++m_c.targets;
        return {ir::OpKind::Relu};
    }
    Match match(const ir::Node& n) const override {
        ++m_c.match;
        return m_renameOnce && m_c.apply == 0 && n.name() == "r0" ? Match::matched() : Match::none();
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext&) const override {
        ++m_c.apply;
        return g.renameNode(&n, "r0_renamed");
    }

private:
    Counts& m_c;
    bool m_renameOnce;
};

/// Plans in match() what apply() does: the Relu it saw and the name it will give it. apply()
/// works from the plan alone, so a driver that handed it another node's match would rename the
/// wrong node, and one that handed it none would fail.
class PlanningRule : public RewriteRule {
public:
    struct Plan : MatchPlan {
        const ir::Node* anchor = nullptr;
        std::string newName;
    };
    std::string id() const override { return "planning-rule"; }
    std::string summary() const override { return "renames each Relu as its match planned"; }
    std::vector<ir::OpKind> targets() const override { return {ir::OpKind::Relu}; }
    Match match(const ir::Node& n) const override {
        if (n.name().ends_with("_planned"))
            return Match::none();
        auto plan = std::make_unique<Plan>();
        plan->anchor = &n;
        plan->newName = n.name() + "_planned";
        return Match::matched(std::move(plan));
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match& m, RewriteContext&) const override {
        if (!m.plan)
            return makeError(ErrorKind::Verify, "no plan");
        const Plan& p = m.planAs<Plan>();
        if (p.anchor != &n)
            return makeError(ErrorKind::Verify, "the plan is another node's");
        return g.renameNode(&n, p.newName);
    }
};

std::unique_ptr<ir::Graph> chain(int reluCount, int negCount) {
    auto g = std::make_unique<ir::Graph>("chain");
    ir::Value* v = g->addInput("x", ir::TensorType::of(ir::DType::F32, {4})).value();
    for (int i = 0; i < reluCount + negCount; ++i) {
        const bool relu = i < reluCount;
        const std::string name = (relu ? "r" : "n") + std::to_string(relu ? i : i - reluCount);
        v = g->addNode(relu ? ir::OpKind::Relu : ir::OpKind::Neg, name, {v}, {name + "_out"})
                .value()
                ->output(0);
    }
    g->setOutputs({v});
    return g;
}

Counts runCounting(ir::Graph& g, bool renameOnce) {
    Counts c;
    std::vector<std::unique_ptr<RewriteRule>> rules;
    rules.push_back(std::make_unique<CountingRule>(c, renameOnce));
    PatternRewritePass pass("count", "counting pass", std::move(rules));
    PipelineConfig cfg;
    PassContext ctx(cfg);
    EXPECT_TRUE(pass.run(g, ctx).ok());
    return c;
}

TEST(RewriteDriverCost, RulesAreAskedForIdAndTargetsOncePerRunNotPerNode) {
    auto small = chain(10, 10);
    auto big = chain(1000, 1000);
    Counts a = runCounting(*small, false);
    Counts b = runCounting(*big, false);
    // One match per Relu (nothing changes, so one sweep); other ops are never offered.
    EXPECT_EQ(a.match, 10);
    EXPECT_EQ(b.match, 1000);
    // id() and targets() do not depend on the graph's size.
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.targets, b.targets);
    EXPECT_LE(b.id, 2);
    EXPECT_LE(b.targets, 2);
}

TEST(RewriteDriverCost, AStructuralChangeIsSeenByLaterLookups) {
    auto g = chain(50, 0);
    Counts c = runCounting(*g, true);
    EXPECT_EQ(c.apply, 1);
    // The renamed node is no longer found under its old name; the first sweep offers the other 49
    // Relus, and the second sweep (after a change) offers all 50 once more.
    EXPECT_EQ(c.match, 1 + 49 + 50);
    EXPECT_NE(g->findNode("r0_renamed"), nullptr);
    EXPECT_EQ(g->findNode("r0"), nullptr);
    EXPECT_EQ(c.id, 1);
}

TEST(RewriteDriverCost, ApplyGetsThePlanItsMatchMade) {
    auto g = chain(3, 2);
    std::vector<std::unique_ptr<RewriteRule>> rules;
    rules.push_back(std::make_unique<PlanningRule>());
    PatternRewritePass pass("plan", "planning pass", std::move(rules));
    PipelineConfig cfg;
    PassContext ctx(cfg);
    Expected<bool> changed = pass.run(*g, ctx);
    ASSERT_TRUE(changed.ok()) << changed.error().message;
    EXPECT_TRUE(*changed);
    for (const char* name : {"r0_planned", "r1_planned", "r2_planned", "n0", "n1"})
        EXPECT_NE(g->findNode(name), nullptr) << name;
    EXPECT_EQ(g->findNode("r0"), nullptr);
}

} // namespace
} // namespace sextant::passes::test
