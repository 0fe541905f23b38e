// Concats lowered in place (rule concat-in-place): the producers write their parts of the
// Concat's output straight into its DRAM buffer, and no Task copies them.

#include "core/backend/Artifact.h"
#include "core/backend/Lower.h"
#include "core/backend/MemoryPlanner.h"
#include "core/ir/InPlace.h"
#include "core/sim/Simulator.h"

#include "BackendTestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

using namespace sextant;
using namespace sextant::backend;
using backend::test::filled;
using backend::test::bufferOf;
using backend::test::slurp;
using backend::test::spitManifest;
using ir::DType;
using ir::OpKind;
using ir::Tensor;
using ir::TensorType;
namespace fs = std::filesystem;

namespace {

/// x -> three producers (a sigmoid, a convolution, a tanh) -> Concat along the channels -> a
/// 3x3 convolution; the sigmoid's output is also read by an Add, a second graph output. Each
/// part is 16 x 32 x 32 f32 (64 KiB, aligned). `inPlace`: the Concat marked as the rule marks it.
std::shared_ptr<ir::Graph> threeWayConcat(bool inPlace) {
    auto g = std::make_shared<ir::Graph>("concat3");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 32, 32}));
    ir::AttributeMap pad{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    ir::Value* a = (*g->addNode(OpKind::Sigmoid, "sig", {x}, {"a"}))->output();
    ir::Value* w = *g->addConstant("w", filled({16, 16, 3, 3}, -0.02f));
    ir::Value* b = (*g->addNode(OpKind::Conv, "conv", {x, w}, {"b"}, pad))->output();
    ir::Value* c = (*g->addNode(OpKind::Tanh, "tanh", {x}, {"c"}))->output();
    ir::Node* cat = *g->addNode(OpKind::Concat, "cat", {a, b, c}, {"joined"}, {{"axis", int64_t{1}}});
    cat->setView(inPlace);
    ir::Value* w2 = *g->addConstant("w2", filled({8, 48, 3, 3}, 0.01f));
    ir::Value* y = (*g->addNode(OpKind::Conv, "head", {cat->output(), w2}, {"y"}, pad))->output();
    ir::Value* z = (*g->addNode(OpKind::Add, "side", {a, x}, {"z"}))->output();
    g->setOutputs({y, z});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

Tensor input() {
    Tensor x(DType::F32, {1, 16, 32, 32});
    for (int64_t i = 0; i < x.numel(); ++i)
        x.set(i, 0.002 * static_cast<double>(i % 541) - 0.5);
    return x;
}

sim::SimResult run(const Program& p, bool strict) {
    sim::SimOptions o;
    o.checkRaces = true;
    o.strict = strict;
    Expected<sim::SimResult> r = sim::simulate(p, std::vector<Tensor>{input()}, o);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? std::move(r).value() : sim::SimResult{};
}

} // namespace

TEST(ConcatInPlace, ProducersWriteTheirPartsAndNoTaskCopies) {
    Expected<Program> p = lower(threeWayConcat(true), defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    for (const Task& t : p->tasks)
        EXPECT_TRUE(std::find(t.nodes.begin(), t.nodes.end(), "cat") == t.nodes.end()) << t.name << " copies";
    const Buffer& whole = bufferOf(*p, "joined");
    const uint64_t part = 16ull * 32 * 32 * 4;
    uint64_t at = 0;
    for (const char* v : {"a", "b", "c"}) {
        const Buffer& b = bufferOf(*p, v);
        EXPECT_EQ(b.inPlaceOf, whole.id) << v;
        EXPECT_EQ(b.inPlaceOffset, at) << v;
        EXPECT_EQ(b.offset, whole.offset + at) << v;
        EXPECT_EQ(b.level, MemLevel::Dram) << v << " is a part of a DRAM tensor, never kept on chip";
        at += part;
    }
    EXPECT_EQ(whole.inPlaceOf, -1);
    EXPECT_GE(whole.firstTask, 0) << "first written by the first of its parts' writers";
    ASSERT_TRUE(checkHazards(*p).ok());

    // Copied, the same numbers, in async and strict mode, with the race checker on.
    Expected<Program> copied = lower(threeWayConcat(false), defaultTarget());
    ASSERT_TRUE(copied.ok()) << copied.error().message;
    EXPECT_LT(p->tasks.size(), copied->tasks.size());
    EXPECT_EQ(bufferOf(*copied, "a").inPlaceOf, -1);
    const sim::SimResult inPlace = run(*p, false), strict = run(*p, true), copy = run(*copied, false);
    ASSERT_EQ(inPlace.outputs.size(), 2u);
    ASSERT_EQ(copy.outputs.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_TRUE(inPlace.outputs[i].identical(copy.outputs[i])) << i;
        EXPECT_TRUE(inPlace.outputs[i].identical(strict.outputs[i])) << i;
    }
    EXPECT_LT(inPlace.totalCycles, copy.totalCycles) << "no copy Task, no extra DRAM round trip";

    // The per-tensor compare still sees the joined tensor, which no Task computes: as the copy
    // Task computes it, once every part is written (a reader split by rows may start before).
    sim::SimOptions keep;
    keep.keepValues = true;
    auto joined = [&](const Program& prog) {
        Expected<sim::SimResult> kept = sim::simulate(prog, std::vector<Tensor>{input()}, keep);
        EXPECT_TRUE(kept.ok()) << kept.error().message;
        for (const auto& [name, value] : kept.ok() ? kept->values : decltype(kept->values){})
            if (name == "joined")
                return value;
        ADD_FAILURE() << "'joined' not kept";
        return Tensor();
    };
    const Tensor a = joined(*p), b = joined(*copied);
    ASSERT_EQ(a.numel(), 48 * 32 * 32);
    EXPECT_TRUE(a.identical(b));
}

TEST(ConcatInPlace, APartAtTheWrongAddressIsCaughtByTheCheckerAndTheRaceChecker) {
    Expected<Program> p = lower(threeWayConcat(true), defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    Program bad = *p;
    Buffer& b = bad.buffers[static_cast<size_t>(bufferOf(*p, "b").id)];
    b.offset = bad.memory.dramTotal; // past everything: the Concat's bytes there are never written
    bad.memory.dramTotal += b.size;
    bad.memory.dramPeak += b.size;
    Status s = checkHazards(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("is not its part"), std::string::npos) << s.error().message;

    sim::SimOptions races;
    races.checkRaces = true;
    Expected<sim::SimResult> raced = sim::simulate(bad, std::vector<Tensor>{input()}, races);
    ASSERT_FALSE(raced.ok());
    EXPECT_NE(raced.error().message.find("race: "), std::string::npos) << raced.error().message;
    EXPECT_NE(raced.error().message.find("'joined'"), std::string::npos) << raced.error().message;
    // Without the checker the numbers show it: the head reads what was never written there.
    Expected<sim::SimResult> wrong = sim::simulate(bad, std::vector<Tensor>{input()});
    ASSERT_TRUE(wrong.ok()) << wrong.error().message;
    Expected<sim::SimResult> good = sim::simulate(*p, std::vector<Tensor>{input()});
    ASSERT_TRUE(good.ok()) << good.error().message;
    EXPECT_FALSE(wrong->outputs[0].identical(good->outputs[0]));

    // A reader that does not wait for one part's writer is a hazard the checker names.
    Program early = *p;
    const Buffer& whole = bufferOf(*p, "joined");
    for (Task& t : early.tasks)
        if (std::find(t.inputs.begin(), t.inputs.end(), whole.id) != t.inputs.end()) {
            t.deps.clear();
            t.waitEvents.clear();
        }
    Status e = checkHazards(early);
    ASSERT_FALSE(e.ok());
    EXPECT_NE(e.error().message.find("writes a part of it in place"), std::string::npos) << e.error().message;
}

TEST(ConcatInPlace, WhatCannotBeWrittenInPlaceIsCopied) {
    // Joined along H with 16 channels before it: each input is strided in the output.
    auto g = std::make_shared<ir::Graph>("rows");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 8, 8}));
    ir::Value* a = (*g->addNode(OpKind::Relu, "relu", {x}, {"a"}))->output();
    ir::Value* b = (*g->addNode(OpKind::Sigmoid, "sig", {x}, {"b"}))->output();
    ir::Node* cat = *g->addNode(OpKind::Concat, "cat", {a, b}, {"joined"}, {{"axis", int64_t{2}}});
    cat->setView(true); // marked by hand: the backend still has the last word
    ir::Value* y = (*g->addNode(OpKind::Tanh, "tanh", {cat->output()}, {"y"}))->output();
    g->setOutputs({y});
    ASSERT_TRUE(g->inferTypes().ok());
    EXPECT_NE(ir::concatInPlaceReason(*cat, 16).find("dim 1 before axis 2 is 16"), std::string::npos)
        << ir::concatInPlaceReason(*cat, 16);
    Expected<Program> p = lower(g, defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_TRUE(std::any_of(p->tasks.begin(), p->tasks.end(), [](const Task& t) { return t.kernel == "Concat"; }));
    EXPECT_EQ(bufferOf(*p, "a").inPlaceOf, -1);
    EXPECT_TRUE(checkHazards(*p).ok());
}

TEST(ConcatInPlace, AnArtifactKeepsThePartsAndRefusesABadOne) {
    Expected<Program> p = lower(threeWayConcat(true), defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const std::string dir = (fs::temp_directory_path() / "sextant-concat-in-place").string();
    fs::remove_all(dir);
    ASSERT_TRUE(writeArtifact(*p, dir).ok());
    Expected<Program> back = readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    const int b = bufferOf(*p, "b").id;
    EXPECT_EQ(back->buffers[static_cast<size_t>(b)].inPlaceOf, p->buffers[static_cast<size_t>(b)].inPlaceOf);
    EXPECT_EQ(back->buffers[static_cast<size_t>(b)].inPlaceOffset, p->buffers[static_cast<size_t>(b)].inPlaceOffset);

    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    nlohmann::json good = m;
    m["buffers"][static_cast<size_t>(b)]["in_place"]["of"] = m["buffers"].size() + 5;
    spitManifest(dir, m.dump(1));
    Expected<Program> outside = readArtifact(dir);
    ASSERT_FALSE(outside.ok());
    EXPECT_NE(outside.error().message.find("in_place.of"), std::string::npos) << outside.error().message;

    m = good;
    m["buffers"][static_cast<size_t>(b)]["in_place"]["offset"] = 64;
    spitManifest(dir, m.dump(1));
    Expected<Program> shifted = readArtifact(dir);
    ASSERT_FALSE(shifted.ok());
    EXPECT_NE(shifted.error().message.find("is not its part"), std::string::npos) << shifted.error().message;

    // Two buffers each written in place into the other: a chain that never ends, refused.
    m = good;
    const int whole = bufferOf(*p, "joined").id;
    m["buffers"][static_cast<size_t>(whole)]["in_place"] = {{"of", b}, {"offset", 0}};
    spitManifest(dir, m.dump(1));
    Expected<Program> loop = readArtifact(dir);
    ASSERT_FALSE(loop.ok());
    EXPECT_NE(loop.error().message.find("that never ends"), std::string::npos) << loop.error().message;
    fs::remove_all(dir);
}
