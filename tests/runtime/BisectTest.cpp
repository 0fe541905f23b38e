// Accuracy bisection (core/runtime/Bisect.h) on the project's sample: -O3 folds BatchNorm in f16,
// which a tight tolerance sees; the search names that application and stops on a true step.
#include "core/runtime/Bisect.h"
#include "core/frontend/OnnxImporter.h"
#include "core/runtime/InputGenerator.h"
#include "core/runtime/ReferenceExecutor.h"

#include <gtest/gtest.h>

using namespace sextant;

namespace {

struct Sample {
    std::unique_ptr<ir::Graph> graph;
    runtime::BisectBaseline baseline;
};

Sample sample(double tolerance) {
    Sample s;
    auto g = frontend::importOnnx(SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx");
    EXPECT_TRUE(g.ok());
    s.graph = std::move(g).value();
    s.baseline.inputs = runtime::generateInputs(*s.graph).value();
    s.baseline.expected = runtime::runReference(*s.graph, s.baseline.inputs, ir::DType::F64).value();
    s.baseline.atols.assign(s.baseline.expected.size(), tolerance);
    s.baseline.rtol = tolerance;
    return s;
}

passes::PipelineConfig o3() {
    passes::PipelineConfig c;
    c.optLevel = 3;
    return c;
}

} // namespace

TEST(Bisect, NamesTheFirstApplicationThatLeavesTheTolerance) {
    Sample s = sample(1e-7);
    std::vector<int64_t> limits;
    auto r = runtime::bisectRuleApplications(*s.graph, o3(), s.baseline,
                                             [&](const runtime::BisectProbe& p) { limits.push_back(p.limit); });
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->kind, runtime::BisectOutcome::Kind::Culprit);
    EXPECT_EQ(r->culprit.rule, "fuse-conv-bn-f16");
    EXPECT_EQ(r->culprit.node, "block1_conv");
    // A true step: the limit before passes, the culprit's fails, and the diff is between them.
    EXPECT_TRUE(r->good.pass);
    EXPECT_FALSE(r->bad.pass);
    EXPECT_EQ(r->bad.limit, r->good.limit + 1);
    EXPECT_EQ(r->culprit.seq, r->bad.limit);
    EXPECT_NE(r->good.text, r->bad.text);
    // The unlimited compile first, then limit 0, then halving: about log2(applications) probes.
    ASSERT_GE(limits.size(), 2u);
    EXPECT_EQ(limits[0], -1);
    EXPECT_EQ(limits[1], 0);
    EXPECT_LE(static_cast<int64_t>(limits.size()), 2 + 5);
}

TEST(Bisect, NoDriftAtTheUsualTolerance) {
    Sample s = sample(1e-3);
    auto r = runtime::bisectRuleApplications(*s.graph, o3(), s.baseline);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->kind, runtime::BisectOutcome::Kind::NoDrift);
    EXPECT_GT(r->applications, 0);
}

TEST(Bisect, DriftWithNoRuleAppliedIsNotBlamedOnARule) {
    Sample s = sample(1e-3);
    for (ir::Tensor& t : s.baseline.expected) // a baseline no compile can meet
        for (int64_t i = 0; i < t.numel(); ++i)
            t.set(i, t.at(i) + 1.0);
    auto r = runtime::bisectRuleApplications(*s.graph, o3(), s.baseline);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->kind, runtime::BisectOutcome::Kind::DriftWithoutRules);
}

TEST(Bisect, CancelledBeforeTheFirstProbe) {
    Sample s = sample(1e-7);
    std::atomic<bool> cancel{true};
    auto r = runtime::bisectRuleApplications(*s.graph, o3(), s.baseline, {}, &cancel);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::Cancelled);
}
