// Weights the loader fills (backend::loadTimeFill, Buffer::fill): a ConstantOfShape read only as
// weights lowers to no Task; the loader writes its one value before the run, as it writes the
// weights, and the artifact says so without putting the bytes in weights.bin.

#include "core/backend/Artifact.h"
#include "core/backend/Grouping.h"
#include "core/backend/Lower.h"
#include "core/backend/MemoryPlanner.h"
#include "core/sim/Simulator.h"

#include "BackendTestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>

using namespace sextant;
using namespace sextant::backend;
using backend::test::bufferOf;
using backend::test::slurp;
using backend::test::spitManifest;
using ir::DType;
using ir::OpKind;
using ir::Tensor;
using ir::TensorType;
namespace fs = std::filesystem;

namespace {

constexpr float kFill = 0.1f; // not exact in binary: the loader must round it as a Task would

/// x[1,64] -> Gemm with B[64,32] -> Add of a [1,32] tensor of ones. B is a ConstantOfShape of
/// kFill (`asConstant`: the same values as a plain constant), the ones a ConstantOfShape read by
/// the Add, an activation operand.
std::shared_ptr<ir::Graph> gemmOfAFill(bool asConstant) {
    auto g = std::make_shared<ir::Graph>("fill");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 64}));
    ir::Value* b = nullptr;
    if (asConstant) {
        Tensor t(DType::F32, {64, 32});
        for (int64_t i = 0; i < t.numel(); ++i)
            t.mutableData<float>()[i] = kFill;
        b = *g->addConstant("B", t);
    } else {
        ir::Value* shape = *g->addConstant("B_shape", Tensor::fromVector<int64_t>({2}, {64, 32}));
        b = (*g->addNode(OpKind::ConstantOfShape, "fillB", {shape}, {"B"},
                         {{"value", Tensor::fromVector<float>({1}, {kFill})}}))
                ->output();
    }
    ir::Value* y = (*g->addNode(OpKind::Gemm, "fc", {x, b}, {"y"}))->output();
    ir::Value* onesShape = *g->addConstant("ones_shape", Tensor::fromVector<int64_t>({2}, {1, 32}));
    ir::Value* ones = (*g->addNode(OpKind::ConstantOfShape, "ones", {onesShape}, {"one"},
                                   {{"value", Tensor::fromVector<float>({1}, {1.0f})}}))
                          ->output();
    ir::Value* z = (*g->addNode(OpKind::Add, "plus", {y, ones}, {"z"}))->output();
    g->setOutputs({z});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

Tensor input() {
    Tensor x(DType::F32, {1, 64});
    for (int64_t i = 0; i < x.numel(); ++i)
        x.set(i, 0.03 * static_cast<double>(i % 17) - 0.2);
    return x;
}

bool hasTaskFor(const Program& p, const std::string& node) {
    return std::any_of(p.tasks.begin(), p.tasks.end(), [&](const Task& t) {
        return std::find(t.nodes.begin(), t.nodes.end(), node) != t.nodes.end();
    });
}

Tensor run(const Program& p, bool strict) {
    sim::SimOptions o;
    o.checkRaces = true;
    o.strict = strict;
    Expected<sim::SimResult> r = sim::simulate(p, std::vector<Tensor>{input()}, o);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() && !r->outputs.empty() ? r->outputs[0] : Tensor();
}

} // namespace

TEST(LoadTimeFill, AConstantOfShapeReadAsWeightsIsFilledByTheLoaderNotATask) {
    std::shared_ptr<ir::Graph> g = gemmOfAFill(false);
    EXPECT_EQ(loadTimeFill(*g->findNode("fillB")), std::optional<double>(static_cast<double>(kFill)));
    EXPECT_FALSE(loadTimeFill(*g->findNode("ones"))) << "read by an Add: not a weight, a Task fills it";

    Expected<Program> p = lower(g, defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_FALSE(hasTaskFor(*p, "fillB"));
    EXPECT_TRUE(hasTaskFor(*p, "ones"));
    const Buffer& b = bufferOf(*p, "B");
    EXPECT_EQ(b.kind, BufferKind::Weight);
    ASSERT_TRUE(b.fill);
    EXPECT_EQ(*b.fill, static_cast<double>(kFill));
    EXPECT_EQ(b.firstTask, -1) << "written by the host before the run";
    EXPECT_GE(b.offset, p->memory.weightsBase + p->memory.weightBytes) << "after weights.bin's bytes";
    EXPECT_LE(b.offset + b.size, p->memory.ioBase);
    EXPECT_GE(p->memory.compulsoryBytes, storedBytes(b.type, p->target.c0)) << "a weight any program must read";
    EXPECT_FALSE(bufferOf(*p, "one").fill);
    for (const Task& t : p->tasks)
        if (std::find(t.inputs.begin(), t.inputs.end(), b.id) != t.inputs.end()) {
            EXPECT_TRUE(t.deps.empty()) << t.name << " waits for nothing to read a weight";
        }
    ASSERT_TRUE(checkHazards(*p).ok());

    // The same numbers as the graph with B a plain constant, in async and strict mode, with the
    // race checker on.
    Expected<Program> plain = lower(gemmOfAFill(true), defaultTarget());
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    const Tensor filledAsync = run(*p, false), filledStrict = run(*p, true), constant = run(*plain, false);
    ASSERT_EQ(filledAsync.numel(), 32);
    EXPECT_TRUE(filledAsync.identical(constant));
    EXPECT_TRUE(filledAsync.identical(filledStrict));
}

TEST(LoadTimeFill, ALoaderThatDoesNotFillGivesWrongNumbers) {
    Expected<Program> p = lower(gemmOfAFill(false), defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    Program unfilled = *p;
    unfilled.buffers[static_cast<size_t>(bufferOf(*p, "B").id)].fill = 0.0;
    Expected<sim::SimResult> zero = sim::simulate(unfilled, std::vector<Tensor>{input()});
    ASSERT_TRUE(zero.ok()) << zero.error().message;
    ASSERT_EQ(zero->outputs.size(), 1u);
    EXPECT_FALSE(zero->outputs[0].identical(run(*p, false)));
    for (int64_t i = 0; i < zero->outputs[0].numel(); ++i)
        EXPECT_EQ(zero->outputs[0].at(i), 1.0) << "x times zeros, plus one";
}

TEST(LoadTimeFill, AnArtifactKeepsTheFillOutOfWeightsBinAndRefusesABadOne) {
    Expected<Program> p = lower(gemmOfAFill(false), defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const std::string dir = (fs::temp_directory_path() / "sextant-load-time-fill").string();
    fs::remove_all(dir);
    ASSERT_TRUE(writeArtifact(*p, dir).ok());
    EXPECT_EQ(fs::file_size(fs::path(dir) / "weights.bin"), p->memory.weightBytes);
    EXPECT_LT(p->memory.weightBytes, 64u * 32 * 4) << "B's bytes are not in weights.bin";
    Expected<Program> back = readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    const int b = bufferOf(*p, "B").id;
    ASSERT_TRUE(back->buffers[static_cast<size_t>(b)].fill);
    EXPECT_EQ(*back->buffers[static_cast<size_t>(b)].fill, static_cast<double>(kFill)) << "the value, exactly";
    EXPECT_TRUE(run(*back, false).identical(run(*p, false)));

    const nlohmann::json good = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    EXPECT_EQ(good["version"], 7);
    // The manifest as `edit` leaves a copy of the good one must be refused, the message saying `why`.
    auto refused = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& why) {
        nlohmann::json m = good;
        edit(m);
        spitManifest(dir, m.dump(1));
        Expected<Program> read = readArtifact(dir);
        ASSERT_FALSE(read.ok()) << why;
        EXPECT_NE(read.error().message.find(why), std::string::npos) << read.error().message;
    };
    const size_t fb = static_cast<size_t>(b), ones = static_cast<size_t>(bufferOf(*p, "one").id);
    refused([&](nlohmann::json& m) { m["buffers"][fb]["fill"] = 0.5; },
            "does not compute as a ConstantOfShape of 0.5");
    refused([&](nlohmann::json& m) { m["buffers"][fb]["fill"] = "0.1"; }, "fill' must be a finite number");
    refused( // a float out of an integer's range is no value
        [&](nlohmann::json& m) {
            m["buffers"][fb]["dtype"] = "i8";
            m["buffers"][fb]["fill"] = 1e300;
        },
        "only a float weight is filled");
    refused([&](nlohmann::json& m) { m["buffers"][ones]["fill"] = 1.0; }, "which is not a DRAM weight");
    refused([&](nlohmann::json& m) { m["buffers"][fb]["offset"] = m["buffers"][0]["offset"]; }, // into weights.bin's
            "region of filled weights");
    fs::remove_all(dir);
}
