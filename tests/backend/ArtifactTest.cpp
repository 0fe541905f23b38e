#include "BackendTestUtil.h"
#include "core/backend/Artifact.h"
#include "core/backend/Lower.h"
#include "core/ir/Printer.h"

#include "core/frontend/OnnxImporter.h"
#include "core/runtime/Compiler.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <tuple>

using namespace sextant;
using namespace sextant::backend;
namespace fs = std::filesystem;
using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

std::shared_ptr<ir::Graph> smallCnn() {
    auto g = std::make_shared<ir::Graph>("small_cnn");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 2, 8, 8}));
    ir::Tensor w(DType::F32, {4, 2, 3, 3});
    for (int64_t i = 0; i < w.numel(); ++i)
        w.set(i, 0.01 * static_cast<double>(i % 13) - 0.05);
    ir::Value* wv = *g->addConstant("w", w);
    ir::Node* c = *g->addNode(OpKind::Conv, "conv", {x, wv}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {c->output()}, {"r"});
    ir::Node* r2 = *g->addNode(OpKind::Relu, "relu_side", {c->output()}, {"r2"});
    ir::Node* a = *g->addNode(OpKind::Add, "add", {r->output(), r2->output()}, {"y"});
    ir::Value* shape = *g->addConstant("shape", ir::Tensor::fromVector<int64_t>({2}, {1, 256}));
    ir::Node* re = *g->addNode(OpKind::Reshape, "reshape", {a->output(), shape}, {"flat"});
    g->setOutputs({re->output()});
    Status s = g->inferTypes();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return g;
}

Program compiled() {
    Expected<Program> p = lower(smallCnn(), defaultTarget());
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    Program prog = std::move(p).value();
    prog.pipeline = {"fold-constants", "fuse-conv-bias-relu"};
    prog.disabledRules = {"fuse-conv-bn"};
    prog.bisectLimit = 7;
    return prog;
}

std::string freshDir(const std::string& name) {
    fs::path d = fs::path(::testing::TempDir()) / ("sextant_artifact_" + name);
    fs::remove_all(d);
    return d.string();
}

using backend::test::slurp;
using backend::test::spit;

using backend::test::spitManifest;

/// Rewrites a binary file and fixes the manifest's size and hash for it, so that the reader's
/// deeper checks (magic, descriptors) are what must catch the damage.
void replaceWithValidHash(const std::string& dir, const std::string& file, const std::string& bytes) {
    spit(fs::path(dir) / file, bytes);
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    std::vector<uint8_t> v(bytes.begin(), bytes.end());
    m["files"][file]["bytes"] = v.size();
    m["files"][file]["fnv1a64"] = fnv1a64Hex(v);
    spitManifest(dir, m.dump(1));
}

std::string readError(const std::string& dir) {
    Expected<Program> p = readArtifact(dir);
    EXPECT_FALSE(p.ok());
    return p.ok() ? std::string() : p.error().message;
}

} // namespace

TEST(Artifact, RoundTripRebuildsTheProgram) {
    Program p = compiled();
    std::string dir = freshDir("roundtrip");
    Status w = writeArtifact(p, dir);
    ASSERT_TRUE(w.ok()) << w.error().message;
    for (const char* f : {"manifest.json", "tasks.bin", "weights.bin", kManifestHashFile})
        EXPECT_TRUE(fs::exists(fs::path(dir) / f)) << f;
    Expected<Program> back = readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->modelName, p.modelName);
    EXPECT_EQ(targetToJson(back->target), targetToJson(p.target));
    EXPECT_EQ(back->pipeline, p.pipeline);
    EXPECT_EQ(back->disabledRules, p.disabledRules);
    EXPECT_EQ(back->bisectLimit, 7);
    ASSERT_EQ(back->tasks.size(), p.tasks.size());
    for (size_t i = 0; i < p.tasks.size(); ++i) {
        const Task& a = p.tasks[i];
        const Task& b = back->tasks[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.kernel, b.kernel);
        EXPECT_EQ(a.core, b.core);
        EXPECT_EQ(a.unit, b.unit);
        EXPECT_EQ(a.nodes, b.nodes);
        EXPECT_EQ(a.inputs, b.inputs);
        EXPECT_EQ(a.outputs, b.outputs);
        EXPECT_EQ(a.deps, b.deps);
        EXPECT_EQ(a.waitEvents, b.waitEvents);
        EXPECT_EQ(a.recordEvents, b.recordEvents);
        EXPECT_EQ(a.estCycles, b.estCycles);
        EXPECT_EQ(a.computeCycles, b.computeCycles);
        EXPECT_EQ(a.tiling.tileShape, b.tiling.tileShape);
        EXPECT_EQ(a.tiling.candidates.size(), b.tiling.candidates.size());
    }
    ASSERT_EQ(back->buffers.size(), p.buffers.size());
    for (size_t i = 0; i < p.buffers.size(); ++i) {
        EXPECT_EQ(p.buffers[i].value, back->buffers[i].value);
        EXPECT_EQ(p.buffers[i].offset, back->buffers[i].offset);
        EXPECT_EQ(p.buffers[i].size, back->buffers[i].size);
        EXPECT_EQ(p.buffers[i].kind, back->buffers[i].kind);
        EXPECT_EQ(p.buffers[i].type, back->buffers[i].type);
    }
    EXPECT_EQ(back->events.size(), p.events.size());
    EXPECT_EQ(back->inputBuffers, p.inputBuffers);
    EXPECT_EQ(back->outputBuffers, p.outputBuffers);
    EXPECT_EQ(back->memory.dramPeak, p.memory.dramPeak);
    EXPECT_EQ(back->memory.dramLowerBound, p.memory.dramLowerBound);
    // The graph comes back with its weights, bit for bit.
    EXPECT_EQ(ir::printGraph(*back->graph), ir::printGraph(*p.graph));
    const ir::Value* weight = back->graph->findValue("w");
    ASSERT_TRUE(weight && weight->constant());
    EXPECT_TRUE(weight->constant()->identical(*p.graph->findValue("w")->constant()));
}

TEST(Artifact, CompilingTwiceGivesByteIdenticalFiles) {
    std::string a = freshDir("twice_a"), b = freshDir("twice_b");
    ASSERT_TRUE(writeArtifact(compiled(), a).ok());
    ASSERT_TRUE(writeArtifact(compiled(), b).ok());
    for (const char* f : {"manifest.json", "tasks.bin", "weights.bin", kManifestHashFile})
        EXPECT_EQ(slurp(fs::path(a) / f), slurp(fs::path(b) / f)) << f << " differs between two compilations";
    // The SRAM plan is part of what must not move.
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(a) / "manifest.json"));
    EXPECT_FALSE(m["sram_buffers"].empty());
    EXPECT_FALSE(m["transfers"].empty());
    EXPECT_FALSE(m["on_chip"].empty());
    // Overwriting an existing artifact gives the same bytes too.
    ASSERT_TRUE(writeArtifact(compiled(), a).ok());
    EXPECT_EQ(slurp(fs::path(a) / "manifest.json"), slurp(fs::path(b) / "manifest.json"));
}

TEST(Artifact, TasksBinStartsWithItsMagicAndAlignedDescriptors) {
    Program p = compiled();
    std::vector<uint8_t> bin = encodeTasks(p);
    ASSERT_GE(bin.size(), 64u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bin.data()), 7), "SXTASKS");
    EXPECT_EQ(bin[7], 0);
    EXPECT_EQ(bin.size() % 64, 0u);
    EXPECT_EQ(bin[12], p.tasks.size());
}

TEST(Artifact, TruncatedTasksBinIsRejected) {
    std::string dir = freshDir("truncated");
    ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
    std::string bin = slurp(fs::path(dir) / "tasks.bin");
    spit(fs::path(dir) / "tasks.bin", bin.substr(0, bin.size() - 100));
    std::string e = readError(dir);
    EXPECT_NE(e.find("tasks.bin"), std::string::npos) << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST(Artifact, FlippedWeightByteIsAHashMismatch) {
    std::string dir = freshDir("flipped");
    ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
    std::string w = slurp(fs::path(dir) / "weights.bin");
    w[w.size() / 2] ^= 0x40;
    spit(fs::path(dir) / "weights.bin", w);
    std::string e = readError(dir);
    EXPECT_NE(e.find("weights.bin"), std::string::npos) << e;
    EXPECT_NE(e.find("hash"), std::string::npos) << e;
}

TEST(Artifact, BadMagicIsRejectedEvenWithAMatchingHash) {
    std::string dir = freshDir("magic");
    ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
    std::string bin = slurp(fs::path(dir) / "tasks.bin");
    bin[0] = 'X';
    replaceWithValidHash(dir, "tasks.bin", bin);
    std::string e = readError(dir);
    EXPECT_NE(e.find("tasks.bin: bad magic"), std::string::npos) << e;
}

TEST(Artifact, DescriptorDisagreeingWithManifestIsRejected) {
    std::string dir = freshDir("descriptor");
    ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
    std::string bin = slurp(fs::path(dir) / "tasks.bin");
    uint64_t firstDesc = 0;
    for (int i = 0; i < 8; ++i)
        firstDesc |= static_cast<uint64_t>(static_cast<uint8_t>(bin[64 + i])) << (8 * i);
    bin[firstDesc + 64] ^= 0x01; // the first input address
    replaceWithValidHash(dir, "tasks.bin", bin);
    std::string e = readError(dir);
    EXPECT_NE(e.find("descriptor 0"), std::string::npos) << e;
}

TEST(Artifact, MissingFileIsNamed) {
    std::string dir = freshDir("missing");
    ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
    fs::remove(fs::path(dir) / "weights.bin");
    std::string e = readError(dir);
    EXPECT_NE(e.find("weights.bin: missing"), std::string::npos) << e;
    EXPECT_NE(readError(dir + "/nope").find("not an artifact directory"), std::string::npos);
}

TEST(Artifact, OffsetOutOfBoundsInManifestIsNamed) {
    std::string dir = freshDir("bounds");
    ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    size_t last = m["buffers"].size() - 1;
    m["buffers"][last]["offset"] = uint64_t{1} << 40;
    spitManifest(dir, m.dump(1));
    std::string e = readError(dir);
    EXPECT_NE(e.find("manifest.json: field 'buffers[" + std::to_string(last) + "].offset'"), std::string::npos) << e;
    EXPECT_NE(e.find("outside"), std::string::npos) << e;
}

TEST(Artifact, AShapeWhoseSizeOverflowsIsTooLargeNotZero) {
    // [65536]x4 elements wrap a 64-bit count to 0 and [99999]x4 overflow it: either way the
    // buffer is far smaller than the tensor, which the reader must say (and UBSan stay quiet).
    for (const int64_t dim : {int64_t{65536}, int64_t{99999}}) {
        std::string dir = freshDir("overflow");
        ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
        nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
        size_t last = m["buffers"].size() - 1;
        m["buffers"][last]["shape"] = nlohmann::json::array({dim, dim, dim, dim});
        spitManifest(dir, m.dump(1));
        std::string e = readError(dir);
        EXPECT_NE(e.find("field 'buffers[" + std::to_string(last) + "].size' is smaller than the tensor"),
                  std::string::npos)
            << dim << ": " << e;
    }
}

TEST(Artifact, OverlappingBuffersInManifestAreAHazard) {
    Program p = compiled();
    std::string dir = freshDir("hazard");
    ASSERT_TRUE(writeArtifact(p, dir).ok());
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    // r and r2 are written by two Tasks that may run at the same time: make them share memory.
    int r = -1, r2 = -1;
    for (const Buffer& b : p.buffers) {
        if (b.value == "r")
            r = b.id;
        if (b.value == "r2")
            r2 = b.id;
    }
    ASSERT_GE(r, 0);
    ASSERT_GE(r2, 0);
    m["buffers"][r2]["offset"] = m["buffers"][r]["offset"];
    spitManifest(dir, m.dump(1));
    // tasks.bin still has the old address: the descriptor check or the hazard check must fire.
    std::string e = readError(dir);
    EXPECT_FALSE(e.empty());
}

TEST(Artifact, ChunkedReductionRoundTripsAndIsChecked) {
    auto g = std::make_shared<ir::Graph>("gap");
    ir::Value* in = *g->addInput("in", TensorType::of(DType::F32, {1, 16, 320, 320}));
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {in}, {"x"});
    ir::Node* gap = *g->addNode(OpKind::GlobalAveragePool, "gap", {r->output()}, {"avg"});
    g->setOutputs({gap->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    Target one = defaultTarget(); // one core: the pooling is one Task, not split across cores
    one.numCores = 1;
    Expected<Program> p = lower(g, one);
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_EQ(p->tasks.back().name, "gap");
    const int chunks = p->tasks.back().tiling.reduceChunks;
    ASSERT_GT(chunks, 1);
    std::string dir = freshDir("chunks");
    ASSERT_TRUE(writeArtifact(*p, dir).ok());
    Expected<Program> back = readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->tasks.back().tiling.reduceChunks, chunks);
    EXPECT_EQ(back->tasks.back().tiling.numTiles, p->tasks.back().tiling.numTiles);
    EXPECT_EQ(back->tasks.front().tiling.reduceChunks, 1);

    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    const size_t last = m["tasks"].size() - 1;
    m["tasks"][last]["tiling"]["reduce_chunks"] = p->tasks.back().tiling.numTiles + 1;
    spitManifest(dir, m.dump(1));
    std::string e = readError(dir);
    EXPECT_NE(e.find("field 'tasks[" + std::to_string(last) + "].tiling.reduce_chunks'"), std::string::npos) << e;
    EXPECT_NE(e.find("does not divide num_tiles"), std::string::npos) << e;
}

TEST(Artifact, SplitTasksRoundTripAndAreChecked) {
    // A convolution big enough to be shared out across the cores.
    auto g = std::make_shared<ir::Graph>("split");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 64, 56, 56}));
    std::vector<float> w(64 * 64 * 9, 0.01f);
    ir::Value* wv = *g->addConstant("w", ir::Tensor::fromVector<float>({64, 64, 3, 3}, w));
    ir::Node* c = *g->addNode(OpKind::Conv, "conv", {x, wv}, {"y"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    g->setOutputs({c->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    Expected<Program> p = lower(g, defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    ASSERT_GT(p->tasks.size(), 1u);
    std::string dir = freshDir("split");
    ASSERT_TRUE(writeArtifact(*p, dir).ok());
    Expected<Program> back = readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back->tasks.size(), p->tasks.size());
    for (size_t i = 0; i < p->tasks.size(); ++i) {
        EXPECT_EQ(back->tasks[i].part, p->tasks[i].part);
        EXPECT_EQ(back->tasks[i].parts, p->tasks[i].parts);
        EXPECT_EQ(back->tasks[i].sliceAxis, p->tasks[i].sliceAxis);
        EXPECT_EQ(back->tasks[i].sliceBegin, p->tasks[i].sliceBegin);
        EXPECT_EQ(back->tasks[i].sliceEnd, p->tasks[i].sliceEnd);
    }
    // A slice past the end of its dim, and two parts claiming the same rows.
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    nlohmann::json good = m;
    m["tasks"][0]["split"]["end"] = 1000;
    spitManifest(dir, m.dump(1));
    std::string e = readError(dir);
    EXPECT_NE(e.find("field 'tasks[0].split.end'"), std::string::npos) << e;
    m = good;
    m["tasks"][1]["split"]["begin"] = m["tasks"][0]["split"]["begin"];
    m["tasks"][1]["split"]["end"] = m["tasks"][0]["split"]["end"];
    spitManifest(dir, m.dump(1));
    e = readError(dir);
    EXPECT_NE(e.find("write overlapping slices"), std::string::npos) << e;
    // One part claiming to be the whole story: the rest of its output would be garbage.
    m = good;
    m["tasks"][0]["split"]["parts"] = 9;
    spitManifest(dir, m.dump(1));
    e = readError(dir);
    EXPECT_NE(e.find("writing tasks (expected 1, or the parts of one split group)"), std::string::npos) << e;
}

TEST(Artifact, ComputeCyclesAreCheckedAndOptional) {
    Program p = compiled();
    std::string dir = freshDir("compute");
    ASSERT_TRUE(writeArtifact(p, dir).ok());
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    // More compute than the whole Task's estimate: no cost model gives that.
    m["tasks"][0]["compute_cycles"] = p.tasks[0].estCycles + 1;
    spitManifest(dir, m.dump(1));
    std::string e = readError(dir);
    EXPECT_NE(e.find("field 'tasks[0].compute_cycles'"), std::string::npos) << e;
    EXPECT_NE(e.find("more than the Task's est_cycles"), std::string::npos) << e;
    // An artifact written before the field existed still reads; the simulator then times the
    // compute from the flops.
    for (auto& t : m["tasks"])
        t.erase("compute_cycles");
    spitManifest(dir, m.dump(1));
    Expected<Program> old = readArtifact(dir);
    ASSERT_TRUE(old.ok()) << old.error().message;
    EXPECT_EQ(old->tasks[0].computeCycles, 0u);
}

TEST(Artifact, BadJsonAndWrongVersionAreRejected) {
    std::string dir = freshDir("json");
    ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
    std::string text = slurp(fs::path(dir) / "manifest.json");
    spitManifest(dir, text.substr(0, text.size() / 2));
    EXPECT_NE(readError(dir).find("manifest.json: invalid JSON"), std::string::npos);
    nlohmann::json m = nlohmann::json::parse(text);
    m["version"] = 99;
    spitManifest(dir, m.dump(1));
    EXPECT_NE(readError(dir).find("field 'version' is 99"), std::string::npos) << readError(dir);
    m["version"] = kArtifactVersion;
    m["tasks"][0].erase("core");
    spitManifest(dir, m.dump(1));
    EXPECT_NE(readError(dir).find("field 'tasks[0].core' is missing"), std::string::npos) << readError(dir);
}

namespace {

/// The id of the first resident SRAM buffer of `p` (-1: none).
int firstResident(const Program& p) {
    for (const SramBuffer& sb : p.sramBuffers)
        if (sb.role == SramRole::Resident)
            return sb.id;
    return -1;
}

/// Writes `p` to a fresh directory `name`, edits its manifest with `edit`, and returns the
/// reader's error.
template <typename Edit>
std::string errorAfterEdit(const Program& p, const std::string& name, Edit edit) {
    std::string dir = freshDir(name);
    EXPECT_TRUE(writeArtifact(p, dir).ok());
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    edit(m);
    spitManifest(dir, m.dump(1));
    return readError(dir);
}

const std::string kV1Artifact = std::string(SEXTANT_SOURCE_DIR) + "/tests/data/artifact-v1/residual_cnn";

} // namespace

TEST(Artifact, SramPlanRoundTrips) {
    Program p = compiled();
    // What makes the test worth having: the small CNN keeps a tensor on chip.
    ASSERT_FALSE(p.onChip.empty());
    ASSERT_GE(firstResident(p), 0);
    ASSERT_EQ(p.memory.sram.size(), static_cast<size_t>(p.target.numCores));
    std::string dir = freshDir("sram_roundtrip");
    ASSERT_TRUE(writeArtifact(p, dir).ok());
    Expected<Program> back = readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back->sramBuffers.size(), p.sramBuffers.size());
    for (size_t i = 0; i < p.sramBuffers.size(); ++i) {
        const SramBuffer& a = p.sramBuffers[i];
        const SramBuffer& b = back->sramBuffers[i];
        EXPECT_EQ(std::tie(a.id, a.core, a.offset, a.size, a.role, a.pair, a.task, a.buffer, a.firstTask, a.lastTask),
                  std::tie(b.id, b.core, b.offset, b.size, b.role, b.pair, b.task, b.buffer, b.firstTask, b.lastTask))
            << "SRAM buffer " << i;
    }
    ASSERT_EQ(back->transfers.size(), p.transfers.size());
    for (size_t i = 0; i < p.transfers.size(); ++i) {
        const Transfer& a = p.transfers[i];
        const Transfer& b = back->transfers[i];
        EXPECT_EQ(std::tie(a.task, a.load, a.dramBuffer, a.sramBuffer, a.bytes),
                  std::tie(b.task, b.load, b.dramBuffer, b.sramBuffer, b.bytes))
            << "transfer " << i;
    }
    ASSERT_EQ(back->onChip.size(), p.onChip.size());
    for (size_t i = 0; i < p.onChip.size(); ++i) {
        const OnChip& a = p.onChip[i];
        const OnChip& b = back->onChip[i];
        EXPECT_EQ(std::tie(a.buffer, a.core, a.bytes, a.savedDmaBytes), std::tie(b.buffer, b.core, b.bytes, b.savedDmaBytes));
    }
    ASSERT_EQ(back->memory.sram.size(), p.memory.sram.size());
    for (size_t c = 0; c < p.memory.sram.size(); ++c) {
        EXPECT_EQ(back->memory.sram[c].capacity, p.memory.sram[c].capacity);
        EXPECT_EQ(back->memory.sram[c].peak, p.memory.sram[c].peak);
        EXPECT_EQ(back->memory.sram[c].lowerBound, p.memory.sram[c].lowerBound);
    }
    EXPECT_EQ(back->memory.dramTrafficBytes, p.memory.dramTrafficBytes);
    EXPECT_EQ(back->memory.compulsoryBytes, p.memory.compulsoryBytes);
    for (size_t i = 0; i < p.buffers.size(); ++i) {
        EXPECT_EQ(back->buffers[i].level, p.buffers[i].level) << p.buffers[i].value;
        EXPECT_EQ(back->buffers[i].core, p.buffers[i].core) << p.buffers[i].value;
    }
    // tasks.bin says which memory each address is in: a kept tensor's reference has level 1.
    const std::string bin = slurp(fs::path(dir) / "tasks.bin");
    const OnChip& kept = p.onChip.front();
    const Task& writer = p.tasks[static_cast<size_t>(p.sramBuffers[static_cast<size_t>(firstResident(p))].task)];
    ASSERT_EQ(p.sramBuffers[static_cast<size_t>(firstResident(p))].buffer, kept.buffer);
    uint64_t desc = 0;
    for (int i = 0; i < 8; ++i)
        desc |= static_cast<uint64_t>(static_cast<uint8_t>(bin[64 + 8 * writer.id + i])) << (8 * i);
    const size_t out = desc + 64 + 24 * writer.inputs.size(); // its first output's reference
    EXPECT_EQ(static_cast<uint8_t>(bin[out + 16]), kept.buffer);
    EXPECT_EQ(static_cast<uint8_t>(bin[out + 21]), 1);
}

TEST(Artifact, VersionOneArtifactStillReads) {
    // Written by the version 1 writer (tests/data/artifact-v1/README.md): no SRAM plan.
    Expected<Program> old = readArtifact(kV1Artifact);
    ASSERT_TRUE(old.ok()) << old.error().message;
    EXPECT_EQ(old->modelName, "residual_cnn");
    EXPECT_TRUE(old->sramBuffers.empty());
    EXPECT_TRUE(old->transfers.empty());
    EXPECT_TRUE(old->onChip.empty());
    // The figures that can be recomputed are: each core's largest Task working set, the Tasks'
    // DMA bytes, the weights and graph inputs and outputs.
    ASSERT_EQ(old->memory.sram.size(), static_cast<size_t>(old->target.numCores));
    uint64_t dma = 0, largest = 0;
    for (const Task& t : old->tasks) {
        dma += t.dmaBytes;
        if (t.core == 0)
            largest = std::max(largest, t.tiling.sramBytes);
    }
    EXPECT_EQ(old->memory.sram[0].capacity, old->target.sramBytes);
    EXPECT_EQ(old->memory.sram[0].peak, largest);
    EXPECT_GT(largest, 0u);
    EXPECT_EQ(old->memory.dramTrafficBytes, dma);
    EXPECT_GE(old->memory.compulsoryBytes, old->memory.weightBytes);
    EXPECT_GT(old->memory.dramTrafficBytes, old->memory.compulsoryBytes);

    // A version 1 manifest claiming a tensor in SRAM has nothing to hold it.
    std::string dir = freshDir("v1_sram");
    fs::create_directories(dir);
    for (const char* f : {"manifest.json", "tasks.bin", "weights.bin"})
        fs::copy_file(fs::path(kV1Artifact) / f, fs::path(dir) / f);
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    ASSERT_EQ(m["version"], 1);
    size_t inter = 0;
    while (m["buffers"][inter]["kind"] != "intermediate")
        ++inter;
    m["buffers"][inter]["level"] = "sram";
    m["buffers"][inter]["core"] = 0;
    m["buffers"][inter]["offset"] = 0;
    spitManifest(dir, m.dump(1));
    std::string e = readError(dir);
    EXPECT_NE(e.find("field 'buffers[" + std::to_string(inter) + "].level' is sram in a version 1 artifact"),
              std::string::npos)
        << e;
}

TEST(Artifact, ResidentMovedPastTheSramIsNamed) {
    Program p = compiled();
    const int r = firstResident(p);
    ASSERT_GE(r, 0);
    const int b = p.sramBuffers[static_cast<size_t>(r)].buffer;
    const uint64_t past = p.target.sramBytes;
    // The SRAM plan's entry alone...
    std::string e = errorAfterEdit(p, "resident_past", [&](nlohmann::json& m) { m["sram_buffers"][r]["offset"] = past; });
    EXPECT_NE(e.find("field 'sram_buffers[" + std::to_string(r) + "].offset' puts the resident at [" +
                     std::to_string(past)),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("past the " + std::to_string(past) + " bytes of SRAM of core"), std::string::npos) << e;
    // ...and the buffer with it.
    e = errorAfterEdit(p, "resident_past_buffer", [&](nlohmann::json& m) {
        m["sram_buffers"][r]["offset"] = past;
        m["buffers"][b]["offset"] = past;
    });
    EXPECT_NE(e.find("field 'buffers[" + std::to_string(b) + "].offset'"), std::string::npos) << e;
    EXPECT_NE(e.find("outside the " + std::to_string(past) + " bytes of SRAM of core"), std::string::npos) << e;
    // Inside the SRAM but not where the buffer says.
    e = errorAfterEdit(p, "resident_elsewhere", [&](nlohmann::json& m) {
        m["sram_buffers"][r]["offset"] = m["sram_buffers"][r]["offset"].get<uint64_t>() + p.target.sramAlign;
    });
    EXPECT_NE(e.find("field 'sram_buffers[" + std::to_string(r) + "].offset' holds buffer " + std::to_string(b)),
              std::string::npos)
        << e;
    // Misaligned.
    e = errorAfterEdit(p, "resident_misaligned", [&](nlohmann::json& m) {
        m["sram_buffers"][r]["offset"] = m["sram_buffers"][r]["offset"].get<uint64_t>() + 1;
    });
    EXPECT_NE(e.find("field 'sram_buffers[" + std::to_string(r) + "].offset' is "), std::string::npos) << e;
    EXPECT_NE(e.find("not a multiple of the target's sram_align"), std::string::npos) << e;
}

TEST(Artifact, TransferNamingAMissingTaskIsNamed) {
    Program p = compiled();
    ASSERT_FALSE(p.transfers.empty());
    const std::string nt = std::to_string(p.tasks.size());
    std::string e = errorAfterEdit(p, "transfer_task", [&](nlohmann::json& m) { m["transfers"][0]["task"] = p.tasks.size(); });
    EXPECT_NE(e.find("field 'transfers[0].task' is " + nt + ", outside [0, " + std::to_string(p.tasks.size() - 1) + "]"),
              std::string::npos)
        << e;
    // A transfer moved to another Task: not that Task's buffer or slot.
    e = errorAfterEdit(p, "transfer_other_task", [&](nlohmann::json& m) {
        m["transfers"][0]["task"] = p.transfers.back().task;
    });
    EXPECT_NE(e.find("field 'transfers[0]."), std::string::npos) << e;
    // One transfer moving more than its Task's dma_bytes say.
    const int t = p.transfers[0].task;
    e = errorAfterEdit(p, "transfer_bytes", [&](nlohmann::json& m) {
        m["transfers"][0]["bytes"] = p.transfers[0].bytes + 64;
    });
    EXPECT_NE(e.find("field 'tasks[" + std::to_string(t) + "].dma_bytes' is " + std::to_string(p.tasks[t].dmaBytes) +
                     ", but the Task's transfers move " + std::to_string(p.tasks[t].dmaBytes + 64)),
              std::string::npos)
        << e;
    e = errorAfterEdit(p, "transfer_direction", [&](nlohmann::json& m) { m["transfers"][0]["direction"] = "sideways"; });
    EXPECT_NE(e.find("field 'transfers[0].direction' is 'sideways', expected 'load' or 'store'"), std::string::npos) << e;
}

TEST(Artifact, SramBufferOnACoreOutOfRangeIsNamed) {
    Program p = compiled();
    ASSERT_FALSE(p.sramBuffers.empty());
    const std::string cores = std::to_string(p.target.numCores);
    std::string e = errorAfterEdit(p, "sram_core", [&](nlohmann::json& m) { m["sram_buffers"][0]["core"] = p.target.numCores; });
    EXPECT_NE(e.find("field 'sram_buffers[0].core' is " + cores + ", outside [0, " +
                     std::to_string(p.target.numCores - 1) + "]"),
              std::string::npos)
        << e;
    // On a real core, but not the one its Task runs on.
    const int other = (p.sramBuffers[0].core + 1) % p.target.numCores;
    e = errorAfterEdit(p, "sram_other_core", [&](nlohmann::json& m) { m["sram_buffers"][0]["core"] = other; });
    EXPECT_NE(e.find("field 'sram_buffers[0].first_task' is task "), std::string::npos) << e;
    EXPECT_NE(e.find("not on the buffer's core " + std::to_string(other)), std::string::npos) << e;
    e = errorAfterEdit(p, "sram_role", [&](nlohmann::json& m) { m["sram_buffers"][0]["role"] = "scratch"; });
    EXPECT_NE(e.find("field 'sram_buffers[0].role' has unknown SRAM role 'scratch'"), std::string::npos) << e;
    e = errorAfterEdit(p, "sram_stats", [&](nlohmann::json& m) { m["memory"]["sram"].erase(0); });
    EXPECT_NE(e.find("field 'memory.sram' has " + std::to_string(p.target.numCores - 1) + " entries"), std::string::npos)
        << e;
    e = errorAfterEdit(p, "sram_peak", [&](nlohmann::json& m) { m["memory"]["sram"][0]["peak"] = 1; });
    EXPECT_NE(e.find("field 'memory.sram[0].peak' is 1, but core 0's SRAM buffers reach "), std::string::npos) << e;
    e = errorAfterEdit(p, "on_chip_missing", [&](nlohmann::json& m) { m["on_chip"] = nlohmann::json::array(); });
    EXPECT_NE(e.find("field 'on_chip' does not list buffer " + std::to_string(p.onChip.front().buffer)), std::string::npos)
        << e;
    e = errorAfterEdit(p, "traffic", [&](nlohmann::json& m) { m["memory"]["dram_traffic_bytes"] = 1; });
    EXPECT_NE(e.find("field 'memory.dram_traffic_bytes' is 1, but the Tasks' dma_bytes add up to "), std::string::npos)
        << e;
}

// A tensor kept a stripe per core, and the parts that read only their slice: both round trip and
// a corrupted stripe or slice-local input is named by its field.
TEST(Artifact, StripesAndSliceLocalInputsRoundTripAndAreChecked) {
    // The sample on 8 cores: its convolutions' outputs feed elementwise parts split alike.
    Expected<std::unique_ptr<ir::Graph>> g = frontend::importOnnx(std::string(SEXTANT_SOURCE_DIR) + "/samples/residual_cnn.onnx");
    ASSERT_TRUE(g.ok()) << g.error().message;
    Expected<runtime::CompileResult> c = runtime::compileGraph(**g, {});
    ASSERT_TRUE(c.ok()) << c.error().message;
    Program p = c->program;
    int b = -1;
    for (const Buffer& buf : p.buffers)
        if (buf.stripes.size() > 1 && b < 0)
            b = buf.id;
    ASSERT_GE(b, 0) << "the sample keeps no tensor a stripe per core";
    int reader = -1;
    for (const Task& t : p.tasks)
        if (!t.sliceLocalInputs.empty() && reader < 0)
            reader = t.id;
    ASSERT_GE(reader, 0);
    std::string dir = freshDir("stripes_roundtrip");
    ASSERT_TRUE(writeArtifact(p, dir).ok());
    Expected<Program> back = readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    const Buffer& a = p.buffers[static_cast<size_t>(b)];
    const Buffer& r = back->buffers[static_cast<size_t>(b)];
    ASSERT_EQ(r.stripes.size(), a.stripes.size());
    EXPECT_EQ(r.stripeAxis, a.stripeAxis);
    for (size_t i = 0; i < a.stripes.size(); ++i) {
        EXPECT_EQ(r.stripes[i].core, a.stripes[i].core);
        EXPECT_EQ(r.stripes[i].offset, a.stripes[i].offset);
        EXPECT_EQ(r.stripes[i].begin, a.stripes[i].begin);
        EXPECT_EQ(r.stripes[i].end, a.stripes[i].end);
    }
    EXPECT_EQ(back->tasks[static_cast<size_t>(reader)].sliceLocalInputs, p.tasks[static_cast<size_t>(reader)].sliceLocalInputs);
    const std::string path = "buffers[" + std::to_string(b) + "].stripes.parts[1]";
    std::string e = errorAfterEdit(p, "stripe_past", [&](nlohmann::json& m) {
        m["buffers"][b]["stripes"]["parts"][1]["offset"] = p.target.sramBytes;
    });
    EXPECT_NE(e.find("field '" + path + ".offset' puts the stripe outside the"), std::string::npos) << e;
    e = errorAfterEdit(p, "stripe_core", [&](nlohmann::json& m) {
        m["buffers"][b]["stripes"]["parts"][1]["core"] = p.target.numCores;
    });
    EXPECT_NE(e.find("field '" + path + ".core'"), std::string::npos) << e;
    e = errorAfterEdit(p, "stripe_order", [&](nlohmann::json& m) {
        m["buffers"][b]["stripes"]["parts"][1]["begin"] = 0;
    });
    EXPECT_NE(e.find("field '" + path + ".begin'"), std::string::npos) << e;
    e = errorAfterEdit(p, "slice_local", [&](nlohmann::json& m) {
        m["tasks"][reader]["slice_local_inputs"] = nlohmann::json::array({p.tasks[static_cast<size_t>(reader)].outputs.front()});
    });
    EXPECT_NE(e.find("field 'tasks[" + std::to_string(reader) + "].slice_local_inputs' names buffer"), std::string::npos)
        << e;
}

namespace {

std::string fnvOf(const std::string& s) { return fnv1a64Hex(std::vector<uint8_t>(s.begin(), s.end())); }

const std::string kV2Artifact = std::string(SEXTANT_SOURCE_DIR) + "/tests/data/artifact-v2/residual_cnn";

/// A copy of a checked-in artifact in a fresh directory `name`.
std::string copyOf(const std::string& from, const std::string& name) {
    std::string dir = freshDir(name);
    fs::create_directories(dir);
    for (const char* f : {"manifest.json", "tasks.bin", "weights.bin"})
        fs::copy_file(fs::path(from) / f, fs::path(dir) / f);
    return dir;
}

} // namespace

TEST(Artifact, HashIsStandardFnv1a64) {
    // The published FNV-1a 64 test vectors (offset basis 14695981039346656037, prime 1099511628211),
    // so that any standard implementation checks an artifact.
    EXPECT_EQ(fnvOf(""), "cbf29ce484222325");
    EXPECT_EQ(fnvOf("a"), "af63dc4c8601ec8c");
    EXPECT_EQ(fnvOf("foobar"), "85944171f73967e8");
    // What versions 1 and 2 wrote: the same loop from a basis one digit short.
    EXPECT_NE(legacyFnv1a64Hex({'a'}), "af63dc4c8601ec8c");
}

TEST(Artifact, ManifestIsCoveredByItsHashFile) {
    std::string dir = freshDir("manifest_hash");
    ASSERT_TRUE(writeArtifact(compiled(), dir).ok());
    const std::string text = slurp(fs::path(dir) / "manifest.json");
    // One line as sha256sum prints one, the standard FNV-1a 64 of the manifest's bytes.
    EXPECT_EQ(slurp(fs::path(dir) / kManifestHashFile), fnvOf(text) + "  manifest.json\n");
    nlohmann::json m = nlohmann::json::parse(text);
    EXPECT_EQ(m["version"], kArtifactVersion);
    EXPECT_EQ(m["files"]["tasks.bin"]["fnv1a64"], fnvOf(slurp(fs::path(dir) / "tasks.bin")));
    // One changed digit in the manifest, the hash file left alone: named as a corrupt manifest
    // before any of its fields is believed.
    std::string flipped = text;
    const size_t at = flipped.find("\"est_cycles\": ") + 14;
    flipped[at] = flipped[at] == '1' ? '2' : '1';
    spit(fs::path(dir) / "manifest.json", flipped);
    std::string e = readError(dir);
    EXPECT_NE(e.find("manifest.json: content hash " + fnvOf(flipped) + " does not match " + fnvOf(text) +
                     " in manifest.json.fnv1a64 (corrupt file)"),
              std::string::npos)
        << e;
    // No hash file: a version 3 manifest must have one.
    spit(fs::path(dir) / "manifest.json", text);
    fs::remove(fs::path(dir) / kManifestHashFile);
    e = readError(dir);
    EXPECT_NE(e.find("manifest.json.fnv1a64: missing"), std::string::npos) << e;
    // A hash file that is not one line of 16 hex digits and the name.
    spit(fs::path(dir) / kManifestHashFile, "not a hash\n");
    e = readError(dir);
    EXPECT_NE(e.find("manifest.json.fnv1a64: expected '<16 lower-case hex digits>  manifest.json'"), std::string::npos)
        << e;
}

TEST(Artifact, VersionTwoArtifactStillReads) {
    // Written by the version 2 writer (tests/data/artifact-v2/README.md): the old hash, no hash file.
    Expected<Program> old = readArtifact(kV2Artifact);
    ASSERT_TRUE(old.ok()) << old.error().message;
    EXPECT_EQ(old->modelName, "residual_cnn");
    EXPECT_FALSE(old->sramBuffers.empty());
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(kV2Artifact) / "manifest.json"));
    const std::string tasks = slurp(fs::path(kV2Artifact) / "tasks.bin");
    EXPECT_EQ(m["files"]["tasks.bin"]["fnv1a64"], legacyFnv1a64Hex(std::vector<uint8_t>(tasks.begin(), tasks.end())));
    // The old hash is read as the old hash only: a version 2 manifest carrying the standard one
    // is a mismatch.
    std::string dir = copyOf(kV2Artifact, "v2_standard_hash");
    m["files"]["tasks.bin"]["fnv1a64"] = fnvOf(tasks);
    spit(fs::path(dir) / "manifest.json", m.dump(1));
    std::string e = readError(dir);
    EXPECT_NE(e.find("tasks.bin: content hash"), std::string::npos) << e;
}

// Numbers that are each a valid integer but do not fit the rest of the manifest (issue 20:
// each of these ran with exit 0). Every one is an error naming the field.
TEST(Artifact, NumbersOutOfRangeOfTheOthersAreNamed) {
    const Program p = compiled();
    const std::string nt = std::to_string(p.tasks.size() - 1);
    const uint64_t huge = UINT64_MAX;
    int r = -1; // the intermediate 'r' (in DRAM: r2 is kept on chip, or the other way round)
    for (const Buffer& b : p.buffers)
        if (b.kind == BufferKind::Intermediate && b.level == MemLevel::Dram && r < 0)
            r = b.id;
    ASSERT_GE(r, 0);
    const std::string rb = "buffers[" + std::to_string(r) + "]";
    const int out = p.outputBuffers.front();
    struct Case {
        const char* name;
        std::function<void(nlohmann::json&)> edit;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {"dma_bytes", [](nlohmann::json& m) { m["tasks"][0]["dma_bytes"] = uint64_t{1} << 62; },
         "field 'tasks[0].dma_bytes' is 4611686018427387904, more than its "},
        {"tile_zeros", [](nlohmann::json& m) { m["tasks"][0]["tiling"]["tile_shape"] = {0, 0, 0, 0}; },
         "field 'tasks[0].tiling.tile_shape[0]' is 0, outside [1, 1]"},
        {"tile_2_40", [](nlohmann::json& m) { m["tasks"][0]["tiling"]["tile_shape"][1] = uint64_t{1} << 40; },
         "field 'tasks[0].tiling.tile_shape[1]' is 1099511627776, outside [1, "},
        {"tile_rank", [](nlohmann::json& m) { m["tasks"][0]["tiling"]["tile_shape"] = {1}; },
         "field 'tasks[0].tiling.tile_shape' has rank 1, but the Task's output"},
        {"candidate_tile", [](nlohmann::json& m) { m["tasks"][0]["tiling"]["candidates"][0]["tile_shape"][0] = 0; },
         "field 'tasks[0].tiling.candidates[0].tile_shape[0]' is 0, outside [1, 1]"},
        {"num_tiles", [](nlohmann::json& m) { m["tasks"][0]["tiling"]["num_tiles"] = 1000000; },
         "field 'tasks[0].tiling.num_tiles' is 1000000, more than the "},
        {"first_task", [&](nlohmann::json& m) { m["buffers"][r]["first_task"] = huge; },
         "field '" + rb + ".first_task' is 18446744073709551615, outside [-1, " + nt + "]"},
        {"last_task", [&](nlohmann::json& m) { m["buffers"][r]["last_task"] = huge; },
         "field '" + rb + ".last_task' is 18446744073709551615, outside [-1, " + nt + "]"},
        {"first_task_wrong", [&](nlohmann::json& m) { m["buffers"][r]["first_task"] = -1; },
         "field '" + rb + ".first_task' is -1, but the first Task writing '"},
        {"io_base", [](nlohmann::json& m) { m["memory"]["io_base"] = UINT64_MAX; },
         "field 'memory.io_base' is 18446744073709551615, past arena_base "},
        {"io_bytes", [](nlohmann::json& m) { m["memory"]["io_bytes"] = UINT64_MAX; },
         "field 'memory.io_bytes' is 18446744073709551615: the I/O region from io_base "},
        {"outputs_empty", [](nlohmann::json& m) { m["outputs"] = nlohmann::json::array(); },
         "field 'outputs' does not list buffer " + std::to_string(out)},
        {"inputs_empty", [](nlohmann::json& m) { m["inputs"] = nlohmann::json::array(); },
         "field 'inputs' does not list buffer " + std::to_string(p.inputBuffers.front())},
        {"outputs_wrong_kind", [&](nlohmann::json& m) { m["outputs"] = {r}; },
         "field 'outputs[0]' is buffer " + std::to_string(r)},
        {"size_too_big", [&](nlohmann::json& m) { m["buffers"][r]["size"] = p.buffers[r].size + 64; },
         "field '" + rb + ".size' is " + std::to_string(p.buffers[r].size + 64) + ", but the "},
        {"dtype", [&](nlohmann::json& m) { m["buffers"][r]["dtype"] = "f64"; },
         "field '" + rb + ".size' is smaller than the tensor f64"},
        {"intermediate_in_io", [&](nlohmann::json& m) { m["buffers"][r]["offset"] = p.memory.ioBase; },
         "field '" + rb + ".offset' puts intermediate '" + p.buffers[r].value + "' at [" +
             std::to_string(p.memory.ioBase) + ", "},
        {"output_in_arena", [&](nlohmann::json& m) { m["buffers"][out]["offset"] = p.memory.arenaBase; },
         "outside the program's I/O region"},
        {"dram_total", [](nlohmann::json& m) { m["memory"]["dram_total"] = UINT64_MAX; },
         "field 'memory.dram_total' is 18446744073709551615, more than the target's "},
    };
    for (const Case& c : cases) {
        std::string e = errorAfterEdit(p, std::string("range_") + c.name, c.edit);
        EXPECT_NE(e.find(c.expected), std::string::npos) << c.name << ": " << e;
    }
}

// The artifact_fuzzer's checked-in manifests (tests/fuzz-corpus/artifact/, beside the binary files
// of tests/data/artifact-fuzz/residual_cnn), replayed on every build: each bad one is an error
// naming manifest.json (a field, or the JSON), the sample's own manifest reads, and nothing crashes.
TEST(Artifact, FuzzCorpusGivesNamedErrors) {
    const fs::path sample = fs::path(SEXTANT_SOURCE_DIR) / "tests/data/artifact-fuzz/residual_cnn";
    ASSERT_TRUE(readArtifact(sample.string()).ok()) << readArtifact(sample.string()).error().message;
    size_t files = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(SEXTANT_SOURCE_DIR) / "tests/fuzz-corpus/artifact")) {
        if (entry.path().extension() != ".json")
            continue;
        ++files;
        const std::string dir = copyOf(sample.string(), "corpus_" + entry.path().stem().string());
        spitManifest(dir, slurp(entry.path()));
        std::string e = readError(dir);
        EXPECT_NE(e.find("manifest.json: "), std::string::npos) << entry.path() << ": " << e;
    }
    EXPECT_GE(files, 10u);
}
