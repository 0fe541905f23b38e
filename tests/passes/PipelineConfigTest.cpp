// Optimisation levels, the fusion switch file and the checks on conflicting options.
#include "PassTestUtil.h"

#include "core/passes/FusionSwitch.h"
#include "core/passes/PassContext.h"

#include <set>

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

/// x -> Identity -> Conv(+bias constant via Add) -> Relu, and a duplicated Sigmoid: something for
/// every level to do.
std::unique_ptr<ir::Graph> smallNet() {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 5, 5});
    ir::Value* id = b.node(OpKind::Identity, "id", {x});
    ir::Value* c = b.node(OpKind::Conv, "conv", {id, b.constant("w", randomTensor({3, 2, 3, 3}, 5))},
                          {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Value* r = b.node(OpKind::Relu, "relu", {c});
    ir::Value* s1 = b.node(OpKind::Sigmoid, "sig1", {r});
    ir::Value* s2 = b.node(OpKind::Sigmoid, "sig2", {r});
    ir::Value* sum = b.node(OpKind::Add, "sum", {s1, s2});
    return b.finish({sum});
}

std::vector<std::string> passesRun(const PipelineResult& r) {
    std::vector<std::string> ids;
    for (size_t i = 1; i < r.snapshots.size(); ++i)
        ids.push_back(r.snapshots[i].passId);
    return ids;
}

PipelineConfig atLevel(int level) {
    PipelineConfig c;
    c.optLevel = level;
    return c;
}

std::string errorOf(const Status& s) { return s.ok() ? std::string("(ok)") : s.error().message; }

} // namespace

TEST(OptLevels, EachLevelRunsItsPassesAndKeepsResults) {
    auto g = smallNet();
    auto before = runF64(*g);
    PipelineResult o0 = pipeline(*g, atLevel(0));
    EXPECT_EQ(passesRun(o0), (std::vector<std::string>{"infer-shapes"}));
    EXPECT_EQ(o0.graph->numNodes(), g->numNodes());
    PipelineResult o1 = pipeline(*g, atLevel(1));
    EXPECT_EQ(passesRun(o1),
              (std::vector<std::string>{"infer-shapes", "canonicalize", "fold-constants", "dce"}));
    EXPECT_EQ(countKind(*o1.graph, OpKind::Identity), 0);
    EXPECT_EQ(countKind(*o1.graph, OpKind::Sigmoid), 2);
    PipelineResult o2 = pipeline(*g, atLevel(2));
    EXPECT_EQ(passesRun(o2), (std::vector<std::string>{"infer-shapes", "canonicalize",
                                                       "fold-constants", "cse", "fuse", "layout",
                                                       "precision", "dce"}));
    EXPECT_EQ(countKind(*o2.graph, OpKind::Sigmoid), 1) << "cse merges the twin Sigmoid";
    EXPECT_EQ(countKind(*o2.graph, OpKind::Conv), 0) << "fuse makes Conv+Relu one FusedConv";
    for (const PipelineResult* r : {&o0, &o1, &o2})
        expectSameOutputs(before, runF64(*r->graph));
    // The default is O2.
    EXPECT_EQ(PipelineConfig{}.optLevel, 2);
}

TEST(OptLevels, RulesListTheirLevelAndAccuracyTradingRulesNeedO3) {
    std::map<std::string, int> passLevel;
    for (const PassInfo& p : listPasses())
        passLevel[p.id] = p.minLevel;
    EXPECT_EQ(passLevel["infer-shapes"], 0);
    EXPECT_EQ(passLevel["canonicalize"], 1);
    EXPECT_EQ(passLevel["cse"], 2);
    EXPECT_EQ(passLevel["fuse"], 2);
    for (const RuleInfo& r : listRules()) {
        if (r.pass == "lower") // a backend rule: it runs with the optimisations, from -O2
            EXPECT_EQ(r.minLevel, 2) << r.id;
        else if (r.tradesAccuracy)
            EXPECT_EQ(r.minLevel, 3) << r.id;
        else
            EXPECT_EQ(r.minLevel, passLevel[r.pass]) << r.id;
    }
    // The decision itself: disabled beats switched on beats the level.
    PipelineConfig cfg = atLevel(2);
    cfg.disabled = {"a"};
    cfg.enabled = {"b"};
    PassContext ctx(cfg, {{"a", 0}, {"b", 3}, {"c", 3}, {"d", 2}});
    EXPECT_FALSE(ctx.isEnabled("a"));
    EXPECT_TRUE(ctx.isEnabled("b"));
    EXPECT_FALSE(ctx.isEnabled("c"));
    EXPECT_TRUE(ctx.isEnabled("d"));
}

TEST(OptLevels, BackendRulesAreListedAndSwitchedLikeGraphRules) {
    const std::vector<RuleInfo> backend = backendRules();
    ASSERT_EQ(backend.size(), 1u);
    EXPECT_EQ(backend[0].id, "keep-on-chip");
    const std::vector<RuleInfo> all = listRules();
    EXPECT_EQ(all.back().id, "keep-on-chip");
    EXPECT_FALSE(ruleRuns(atLevel(1), "keep-on-chip"));
    EXPECT_TRUE(ruleRuns(atLevel(2), "keep-on-chip"));
    PipelineConfig off = atLevel(2);
    off.disabled = {"keep-on-chip"};
    EXPECT_TRUE(validateConfig(off).ok());
    EXPECT_FALSE(ruleRuns(off, "keep-on-chip"));
    PipelineConfig on = atLevel(0);
    on.enabled = {"keep-on-chip"};
    EXPECT_TRUE(validateConfig(on).ok());
    EXPECT_TRUE(ruleRuns(on, "keep-on-chip"));
}

TEST(OptLevels, BadLevelIsAnError) {
    EXPECT_NE(errorOf(validateConfig(atLevel(4))).find("optimisation level must be 0..3, got 4"),
              std::string::npos);
    EXPECT_FALSE(validateConfig(atLevel(-1)).ok());
}

TEST(FusionSwitch, TurnsRulesAndPassesOffAndOn) {
    PipelineConfig cfg;
    Status s = applyFusionSwitch(R"({"rules": {"remove-identity": "off"},
                                     "passes": {"cse": "off", "fuse": "off"}})",
                                 "sw.json", cfg);
    ASSERT_TRUE(s.ok()) << errorOf(s);
    EXPECT_EQ(cfg.disabled, (std::set<std::string>{"cse", "fuse", "remove-identity"}));
    ASSERT_TRUE(validateConfig(cfg).ok());
    auto g = smallNet();
    PipelineResult r = pipeline(*g, cfg);
    EXPECT_EQ(countKind(*r.graph, OpKind::Identity), 1);
    EXPECT_EQ(stats(r, "remove-identity").matched, 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::Sigmoid), 2);

    // "on" runs a pass below its level.
    PipelineConfig o1 = atLevel(1);
    ASSERT_TRUE(applyFusionSwitch(R"({"passes": {"cse": "on"}})", "sw.json", o1).ok());
    ASSERT_TRUE(validateConfig(o1).ok());
    PipelineResult r1 = pipeline(*g, o1);
    EXPECT_EQ(countKind(*r1.graph, OpKind::Sigmoid), 1);
    EXPECT_EQ(countKind(*r1.graph, OpKind::Conv), 1) << "fuse still off at O1";
}

TEST(FusionSwitch, UnknownIdNamesItAndTheClosestValidId) {
    PipelineConfig cfg;
    Status s = applyFusionSwitch(R"({"rules": {"fuse-conv-bnn": "off"}})", "sw.json", cfg);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().subject, "fuse-conv-bnn");
    EXPECT_NE(s.error().message.find("sw.json: unknown rule id 'fuse-conv-bnn'"), std::string::npos)
        << s.error().message;
    EXPECT_NE(s.error().message.find("did you mean 'fuse-conv-bn'?"), std::string::npos)
        << s.error().message;
    Status p = applyFusionSwitch(R"({"rules": {"cse": "off"}})", "sw.json", cfg);
    EXPECT_NE(errorOf(p).find("'cse' is a pass, not a rule"), std::string::npos) << errorOf(p);
    Status v = applyFusionSwitch(R"({"rules": {"fuse-conv-bn": "maybe"}})", "sw.json", cfg);
    EXPECT_NE(errorOf(v).find("must be \"on\" or \"off\", got \"maybe\""), std::string::npos)
        << errorOf(v);
    Status k = applyFusionSwitch(R"({"rule": {}})", "sw.json", cfg);
    EXPECT_NE(errorOf(k).find("unknown key 'rule'"), std::string::npos) << errorOf(k);
    EXPECT_TRUE(cfg.disabled.empty()) << "a failed file changes nothing";
}

TEST(FusionSwitch, MalformedJsonSaysLineAndColumn) {
    PipelineConfig cfg;
    Status s = applyFusionSwitch("{\n  \"rules\": {\n    \"fuse-conv-bn\" \"off\"\n  }\n}", "sw.json",
                                 cfg);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind, ErrorKind::Parse);
    EXPECT_NE(s.error().message.find("sw.json: malformed JSON at line 3, column"),
              std::string::npos)
        << s.error().message;
    Status missing = loadFusionSwitch("/nonexistent/sw.json", cfg);
    EXPECT_NE(errorOf(missing).find("cannot open"), std::string::npos);
}

TEST(FusionSwitch, ANumberBeyondADoubleIsMalformedJsonNotACrash) {
    // Found by target_fuzzer: nlohmann reports 5e400 as out_of_range, not as a parse_error.
    PipelineConfig cfg;
    Status s = applyFusionSwitch("[5e400]", "sw.json", cfg);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().message, "sw.json: malformed JSON: a number beyond the range of a double");
}

TEST(FusionSwitch, ConflictingOptionsAreErrors) {
    // --disable X and the file switching X on.
    PipelineConfig a;
    a.disabled = {"fuse-conv-bn"};
    ASSERT_TRUE(applyFusionSwitch(R"({"rules": {"fuse-conv-bn": "on"}})", "sw.json", a).ok());
    EXPECT_NE(errorOf(validateConfig(a)).find("'fuse-conv-bn' is both disabled and switched on"),
              std::string::npos)
        << errorOf(validateConfig(a));
    // -O0 with a fusion rule switched on: its pass does not run.
    PipelineConfig b = atLevel(0);
    ASSERT_TRUE(applyFusionSwitch(R"({"rules": {"fuse-conv-bn": "on"}})", "sw.json", b).ok());
    EXPECT_NE(errorOf(validateConfig(b))
                  .find("rule 'fuse-conv-bn' is switched on but its pass 'fuse' does not run at -O0"),
              std::string::npos)
        << errorOf(validateConfig(b));
    // ... unless the pass is switched on too.
    ASSERT_TRUE(applyFusionSwitch(R"({"passes": {"fuse": "on"}})", "sw.json", b).ok());
    EXPECT_TRUE(validateConfig(b).ok()) << errorOf(validateConfig(b));
    // A rule switched on whose pass is disabled.
    PipelineConfig c;
    c.disabled = {"fuse"};
    c.enabled = {"fuse-conv-bn"};
    EXPECT_NE(errorOf(validateConfig(c)).find("its pass 'fuse' is disabled"), std::string::npos);
    // Negative bisect limits other than -1 (none).
    PipelineConfig d;
    d.bisectLimit = -2;
    EXPECT_FALSE(validateConfig(d).ok());
    // Unknown --disable ids get a hint too.
    PipelineConfig e;
    e.disabled = {"dcee"};
    EXPECT_NE(errorOf(validateConfig(e)).find("did you mean 'dce'?"), std::string::npos)
        << errorOf(validateConfig(e));
}
