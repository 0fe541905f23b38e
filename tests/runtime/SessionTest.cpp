// Session: a lowered Program runs on the simulated device in both run modes, inputs are checked,
// and an artifact written to disk runs the same as the Program in memory.
#include "core/runtime/Session.h"
#include "core/sim/CriticalPath.h"
#include "core/backend/Artifact.h"
#include "core/backend/Lower.h"
#include "core/ir/Interpreter.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/InputGenerator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <set>

#include <unistd.h>

using namespace sextant;

namespace {

ir::Tensor ramp(std::vector<int64_t> shape, double scale, double shift) {
    ir::Tensor t(ir::DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, std::cos(static_cast<double>(i) * scale) + shift);
    return t;
}

/// Two conv branches joined by an Add, then a MaxPool: enough work for several cores.
std::shared_ptr<ir::Graph> makeGraph() {
    auto g = std::make_shared<ir::Graph>("branches");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 3, 8, 8})).value();
    ir::AttributeMap conv;
    conv["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    conv["kernel_shape"] = std::vector<int64_t>{3, 3};
    ir::Value* w1 = g->addConstant("w1", ramp({4, 3, 3, 3}, 0.31, 0.0)).value();
    ir::Value* w2 = g->addConstant("w2", ramp({4, 3, 3, 3}, 0.53, -0.1)).value();
    ir::Value* b1 = g->addConstant("b1", ramp({4}, 1.1, 0.0)).value();
    ir::Node* c1 = g->addNode(ir::OpKind::Conv, "conv1", {x, w1, b1}, {"c1"}, conv).value();
    ir::Node* r1 = g->addNode(ir::OpKind::Relu, "relu1", {c1->output()}, {"r1"}).value();
    ir::Node* c2 = g->addNode(ir::OpKind::Conv, "conv2", {x, w2}, {"c2"}, conv).value();
    ir::Node* s2 = g->addNode(ir::OpKind::Sigmoid, "sig2", {c2->output()}, {"s2"}).value();
    ir::Node* a = g->addNode(ir::OpKind::Add, "add", {r1->output(), s2->output()}, {"a"}).value();
    ir::AttributeMap pool;
    pool["kernel_shape"] = std::vector<int64_t>{2, 2};
    pool["strides"] = std::vector<int64_t>{2, 2};
    ir::Node* p = g->addNode(ir::OpKind::MaxPool, "pool", {a->output()}, {"y"}, pool).value();
    g->setOutputs({p->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

ir::Tensor interpretF32(const ir::Graph& g, const ir::Tensor& in) {
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F32;
    std::vector<ir::Tensor> inputs{in};
    auto out = ir::interpret(g, inputs, ctx);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.value()[0];
}

double maxAbsDiff(const ir::Tensor& a, const ir::Tensor& b) {
    EXPECT_EQ(a.numel(), b.numel());
    double m = 0;
    for (int64_t i = 0; i < a.numel() && i < b.numel(); ++i)
        m = std::max(m, std::fabs(a.at(i) - b.at(i)));
    return m;
}

runtime::Session lowered() {
    auto p = backend::lower(makeGraph(), backend::defaultTarget());
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    return runtime::Session(std::move(p.value()));
}

} // namespace

TEST(Session, RunsALoweredProgramLikeTheInterpreter) {
    runtime::Session s = lowered();
    auto inputs = runtime::generateInputs(*s.program().graph);
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    auto r = s.run(*inputs);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->outputs.size(), 1u);
    EXPECT_EQ(r->outputs[0].shape(), (std::vector<int64_t>{1, 4, 4, 4}));
    EXPECT_LT(maxAbsDiff(r->outputs[0], interpretF32(*s.program().graph, (*inputs)[0])), 3e-2);
    EXPECT_EQ(r->trace.size(), s.program().tasks.size());
    EXPECT_GT(r->totalCycles, 0u);
}

TEST(Session, StrictModeGivesTheSameNumbersMoreSlowly) {
    runtime::Session s = lowered();
    auto inputs = runtime::generateInputs(*s.program().graph).value();
    auto async = s.run(inputs, runtime::RunMode::GraphAsync);
    auto strict = s.run(inputs, runtime::RunMode::Strict);
    ASSERT_TRUE(async.ok() && strict.ok());
    EXPECT_TRUE(async->outputs[0].identical(strict->outputs[0]));
    EXPECT_GE(strict->totalCycles, async->totalCycles);
    for (size_t i = 1; i < strict->trace.size(); ++i)
        EXPECT_GE(strict->trace[i].start, strict->trace[i - 1].end);
}

TEST(Session, ChecksInputs) {
    runtime::Session s = lowered();
    std::vector<ir::Tensor> none;
    auto r0 = s.run(none);
    ASSERT_FALSE(r0.ok());
    EXPECT_NE(r0.error().message.find("takes 1 input(s), got 0"), std::string::npos)
        << r0.error().message;

    std::vector<ir::Tensor> wrong{ir::Tensor(ir::DType::F32, {1, 3, 8, 9})};
    auto r1 = s.run(wrong);
    ASSERT_FALSE(r1.ok());
    EXPECT_NE(r1.error().message.find("input 0 'x': expected f32[1,3,8,8], got f32[1,3,8,9]"),
              std::string::npos)
        << r1.error().message;

    std::vector<ir::Tensor> ints{ir::Tensor(ir::DType::I64, {1, 3, 8, 8})};
    EXPECT_FALSE(s.run(ints).ok());

    // A float64 input of the right shape is converted, not rejected.
    std::vector<ir::Tensor> f64{
        runtime::generateInputs(*s.program().graph).value()[0].castTo(ir::DType::F64)};
    EXPECT_TRUE(s.run(f64).ok());
}

TEST(Session, KeepsEveryComputedValueWhenAsked) {
    runtime::Session s = lowered();
    auto inputs = runtime::generateInputs(*s.program().graph).value();
    auto plain = s.run(inputs);
    ASSERT_TRUE(plain.ok());
    EXPECT_TRUE(plain->values.empty()) << "values are kept only on request";
    auto kept = s.run(inputs, runtime::RunMode::GraphAsync, false, /*keepValues=*/true);
    ASSERT_TRUE(kept.ok()) << kept.error().message;
    // One entry per node output the Tasks computed, the graph output among them, same numbers.
    std::set<std::string> names;
    for (const auto& [name, t] : kept->values)
        names.insert(name);
    for (const ir::Node* n : s.program().graph->nodes())
        for (const ir::Value* v : n->outputs())
            EXPECT_TRUE(names.count(v->name())) << v->name();
    const std::string out = s.program().graph->outputs()[0]->name();
    auto it = std::find_if(kept->values.begin(), kept->values.end(), [&](const auto& p) { return p.first == out; });
    ASSERT_NE(it, kept->values.end());
    EXPECT_LT(maxAbsDiff(it->second, kept->outputs[0]), 1e-6);
}

TEST(Session, CriticalPathAccountsForTheWholeLatency) {
    runtime::Session s = lowered();
    auto inputs = runtime::generateInputs(*s.program().graph).value();
    for (runtime::RunMode mode : {runtime::RunMode::GraphAsync, runtime::RunMode::Strict}) {
        auto r = s.run(inputs, mode);
        ASSERT_TRUE(r.ok()) << r.error().message;
        const auto path = sim::criticalPath(s.program(), *r, mode == runtime::RunMode::Strict);
        ASSERT_FALSE(path.empty());
        EXPECT_EQ(path.front().cause, sim::CriticalStep::Cause::First);
        EXPECT_EQ(r->trace[path.back().task].end, r->totalCycles) << "the path ends with the last Task";
        // Each step starts when the one before it ended plus the gap, or (async) it started earlier
        // and counts from that Task's end: together they are the run.
        uint64_t covered = r->trace[path.front().task].start;
        for (size_t i = 0; i < path.size(); ++i) {
            const auto& t = r->trace[path[i].task];
            uint64_t from = t.start;
            if (i > 0) {
                const auto& before = r->trace[path[i].after];
                EXPECT_EQ(path[i].after, path[i - 1].task);
                if (t.start < before.end) {
                    // Beside the Task before it on its core, or loading its weights while it
                    // waited for that Task on another core.
                    EXPECT_EQ(mode, runtime::RunMode::GraphAsync);
                    EXPECT_EQ(path[i].gap, 0u);
                    from = before.end;
                } else {
                    EXPECT_EQ(t.start, before.end + path[i].gap);
                }
            }
            covered += path[i].gap + (t.end - from);
        }
        EXPECT_EQ(covered, r->totalCycles);
        // Where the time goes splits the same span: every cycle once, the busy part at most all.
        const sim::PathTime time = sim::pathTime(s.program(), *r, path);
        EXPECT_EQ(time.busy() + time.dispatch + time.events + time.waits, r->totalCycles);
        EXPECT_LE(time.busy(), r->totalCycles);
    }
}

// The onnx "light" models build their weights at run time with ConstantOfShape. One too large
// to fold into weights.bin, read only as weights, gets no Task: the loader fills it before the
// run, as it writes the weights. One read as data (here by an Add) is filled by a vector Task.
// Either way such a model runs end to end.
TEST(Session, WeightsFilledByConstantOfShapeRunOnTheNpu) {
    auto g = std::make_shared<ir::Graph>("filled");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 3, 8, 8})).value();
    ir::Value* shape = g->addConstant("w_shape", ir::Tensor::fromVector<int64_t>({4}, {4, 3, 3, 3})).value();
    ir::Node* fill = g->addNode(ir::OpKind::ConstantOfShape, "fill", {shape}, {"w"},
                                {{"value", ir::Tensor::fromVector<float>({1}, {0.05f})}})
                         .value();
    ir::AttributeMap conv;
    conv["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    ir::Node* c = g->addNode(ir::OpKind::Conv, "conv", {x, fill->output()}, {"y"}, conv).value();
    ir::Value* biasShape = g->addConstant("b_shape", ir::Tensor::fromVector<int64_t>({4}, {1, 4, 8, 8})).value();
    ir::Node* bias = g->addNode(ir::OpKind::ConstantOfShape, "bias", {biasShape}, {"b"},
                                {{"value", ir::Tensor::fromVector<float>({1}, {0.5f})}})
                         .value();
    ir::Node* add = g->addNode(ir::OpKind::Add, "add", {c->output(), bias->output()}, {"z"}).value();
    g->setOutputs({add->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    auto p = backend::lower(g, backend::defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    std::set<std::string> filledBy;
    for (const backend::Task& t : p->tasks)
        if (t.kernel == "ConstantOfShape" && t.unit == backend::UnitKind::Vector)
            filledBy.insert(t.nodes.begin(), t.nodes.end());
    EXPECT_EQ(filledBy, std::set<std::string>{"bias"}) << "the weights' fill is the loader's, the data's a vector Task";
    bool loaderFills = false;
    for (const backend::Buffer& b : p->buffers)
        loaderFills = loaderFills || (b.value == "w" && b.kind == backend::BufferKind::Weight && b.fill == 0.05f);
    EXPECT_TRUE(loaderFills);
    runtime::Session s(std::move(p).value());
    auto inputs = runtime::generateInputs(*g).value();
    auto r = s.run(inputs);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_LT(maxAbsDiff(r->outputs[0], interpretF32(*g, inputs[0])), 3e-2);
}

TEST(Session, RunModeNames) {
    EXPECT_EQ(runtime::parseRunMode("strict"), runtime::RunMode::Strict);
    EXPECT_EQ(runtime::parseRunMode("async"), runtime::RunMode::GraphAsync);
    EXPECT_FALSE(runtime::parseRunMode("fast").has_value());
    EXPECT_EQ(runtime::runModeName(runtime::RunMode::Strict), "strict");
}

TEST(Session, ArtifactRunsLikeTheProgramInMemory) {
    runtime::Session s = lowered();
    auto dir = std::filesystem::temp_directory_path() /
               ("sextant-session-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(backend::writeArtifact(s.program(), dir.string()).ok());
    auto loaded = runtime::Session::fromArtifact(dir.string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    auto inputs = runtime::generateInputs(*s.program().graph).value();
    auto a = s.run(inputs);
    auto b = loaded->run(inputs);
    ASSERT_TRUE(a.ok() && b.ok()) << (b.ok() ? "" : b.error().message);
    EXPECT_TRUE(a->outputs[0].identical(b->outputs[0]));
    EXPECT_EQ(a->totalCycles, b->totalCycles);
    std::filesystem::remove_all(dir);

    auto missing = runtime::Session::fromArtifact((dir / "nope").string());
    EXPECT_FALSE(missing.ok());
}

// A BatchNormalization left unfused (its rule switched off, as bisection does) runs on the
// vector unit with the model's raw running statistics. They need not fit f16: here the mean and
// the variance are beyond its largest finite value (65504). The precision pass keeps the op in
// f32, so the NPU's numbers stay those of the model, not infinities.
TEST(Session, UnfusedBatchNormWithLargeStatisticsStaysAccurate) {
    auto g = std::make_shared<ir::Graph>("conv_bn");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 3, 8, 8})).value();
    ir::AttributeMap conv;
    conv["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    conv["kernel_shape"] = std::vector<int64_t>{3, 3};
    ir::Value* w = g->addConstant("w", ramp({4, 3, 3, 3}, 0.31, 0.0)).value();
    ir::Node* c = g->addNode(ir::OpKind::Conv, "conv", {x, w}, {"c"}, conv).value();
    ir::Value* scale = g->addConstant("scale", ramp({4}, 0.7, 1.5)).value();
    ir::Value* bias = g->addConstant("bias", ramp({4}, 0.9, 0.0)).value();
    ir::Value* mean = g->addConstant("mean", ramp({4}, 0.5, 70000.0)).value();
    ir::Value* var = g->addConstant("var", ramp({4}, 0.3, 90000.0)).value();
    ir::Node* bn = g->addNode(ir::OpKind::BatchNormalization, "bn", {c->output(), scale, bias, mean, var},
                              {"y"}, {{"epsilon", 1e-5}})
                       .value();
    g->setOutputs({bn->output()});
    ASSERT_TRUE(g->inferTypes().ok());

    runtime::CompileOptions options;
    options.pipeline.disabled.insert("fuse-conv-bn");
    auto compiled = runtime::compileGraph(*g, options);
    ASSERT_TRUE(compiled.ok()) << compiled.error().message;
    const ir::Node* kept = compiled->program.graph->findNode("bn");
    ASSERT_NE(kept, nullptr) << "the BatchNormalization should stay a node of its own";
    EXPECT_EQ(kept->precision(), ir::Precision::F32);

    runtime::Session s(std::move(compiled->program));
    auto inputs = runtime::generateInputs(*g).value();
    auto r = s.run(inputs);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const ir::Tensor want = interpretF32(*g, inputs[0]);
    ASSERT_EQ(r->outputs[0].numel(), want.numel());
    // Outputs are about -230 (mean 7e4 over a standard deviation of 300); the cube's f16 inputs
    // leave well under one unit of error.
    for (int64_t i = 0; i < want.numel(); ++i)
        ASSERT_TRUE(std::isfinite(r->outputs[0].at(i))) << "element " << i;
    EXPECT_LT(maxAbsDiff(r->outputs[0], want), 0.5);
}

TEST(InputGenerator, IsDeterministicAndInRange) {
    auto g = makeGraph();
    auto a = runtime::generateInputs(*g).value();
    auto b = runtime::generateInputs(*g).value();
    auto c = runtime::generateInputs(*g, 7).value();
    ASSERT_EQ(a.size(), 1u);
    EXPECT_TRUE(a[0].identical(b[0]));
    EXPECT_FALSE(a[0].identical(c[0]));
    for (int64_t i = 0; i < a[0].numel(); ++i) {
        EXPECT_GE(a[0].at(i), -1.0);
        EXPECT_LT(a[0].at(i), 1.0);
    }
}
