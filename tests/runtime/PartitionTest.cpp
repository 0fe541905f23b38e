// Host + NPU partitions (DESIGN §6): a node the NPU cannot run becomes a host Task on the host
// lane, between NPU Tasks, synced by events; it runs on the reference kernels and reads and
// writes DRAM only. The artifact keeps it (version 5), with the weights of the subgraphs it runs.
#include "core/backend/Artifact.h"
#include "tests/backend/BackendTestUtil.h"
#include "core/backend/Lower.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/runtime/Compare.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/ModelInputs.h"
#include "core/runtime/ReferenceExecutor.h"
#include "core/runtime/Session.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace sextant::runtime {
namespace {

namespace fs = std::filesystem;
using ir::DType;
using ir::OpKind;
using ir::TensorType;

ir::Tensor ramp(std::vector<int64_t> shape, double start, double step) {
    ir::Tensor t(DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, start + step * static_cast<double>(i % 23));
    return t;
}

/// One branch of the If: y = a * k (k a 48-element constant, printed as a digest) or y = -a.
std::shared_ptr<const ir::Graph> branch(const std::string& name, bool scale) {
    auto b = std::make_shared<ir::Graph>(name);
    ir::Value* a = *b->addInput(name + "_a", TensorType::of(DType::F32, {1, 3, 4, 4}));
    ir::Node* n = nullptr;
    if (scale) {
        ir::Value* k = *b->addConstant(name + "_k", ramp({1, 3, 4, 4}, 0.5, 0.05));
        n = *b->addNode(OpKind::Mul, name + "_mul", {a, k}, {name + "_y"});
    } else {
        n = *b->addNode(OpKind::Neg, name + "_neg", {a}, {name + "_y"});
    }
    b->setOutputs({n->output()});
    EXPECT_TRUE(b->inferTypes().ok());
    return b;
}

/// x -> Conv -> Relu -> If(flag: a * k | -a) -> Add(x) : the If runs on the host between NPU Tasks.
std::shared_ptr<ir::Graph> partitioned() {
    auto g = std::make_shared<ir::Graph>("partitioned");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 3, 4, 4}));
    ir::Value* flag = *g->addInput("flag", TensorType::of(DType::Bool, {}));
    ir::Value* w = *g->addConstant("w", ramp({3, 3, 3, 3}, -0.2, 0.02));
    ir::Node* conv = *g->addNode(OpKind::Conv, "conv", {x, w}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Node* relu = *g->addNode(OpKind::Relu, "relu", {conv->output()}, {"r"});
    ir::Node* branchy = *g->addNode(OpKind::If, "choose", {flag, relu->output()}, {"chosen"},
                                    {{"then_branch", branch("then", true)}, {"else_branch", branch("else", false)}});
    ir::Node* add = *g->addNode(OpKind::Add, "add", {branchy->output(), x}, {"y"});
    g->setOutputs({add->output()});
    Status s = g->inferTypes();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return g;
}

std::vector<ir::Tensor> inputsWith(bool flag) {
    ir::Tensor f(DType::Bool, {});
    f.set(0, flag ? 1.0 : 0.0);
    return {ramp({1, 3, 4, 4}, -1.0, 0.1), f};
}

using backend::test::slurp;
using backend::test::spit;

std::string freshDir(const std::string& name) {
    fs::path d = fs::path(::testing::TempDir()) / ("sextant_partition_" + name);
    fs::remove_all(d);
    return d.string();
}

TEST(Partition, AHostNodeRunsOnTheHostLaneBetweenNpuTasks) {
    auto graph = partitioned();
    Expected<backend::Program> p = backend::lower(graph, backend::defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const int lane = backend::hostLane(p->target);
    std::vector<const backend::Task*> host;
    for (const backend::Task& t : p->tasks) {
        if (t.unit == backend::UnitKind::Host)
            host.push_back(&t);
        else
            EXPECT_LT(t.core, p->target.numCores) << t.name;
    }
    ASSERT_EQ(host.size(), 1u);
    const backend::Task& h = *host.front();
    EXPECT_EQ(h.core, lane);
    EXPECT_EQ(h.kernel, "If");
    EXPECT_GT(h.estCycles, 0u);
    EXPECT_EQ(h.dmaBytes, 0u);
    // Synced with the cores by events both ways: it waits for the Relu and the Add waits for it.
    EXPECT_FALSE(h.waitEvents.empty());
    EXPECT_FALSE(h.recordEvents.empty());
    // The host reaches DRAM only: no SRAM slot, no transfer, nothing it touches kept on chip.
    for (const backend::SramBuffer& sb : p->sramBuffers)
        EXPECT_NE(sb.task, h.id);
    for (const backend::Transfer& tr : p->transfers)
        EXPECT_NE(tr.task, h.id);
    for (int b : h.inputs)
        EXPECT_EQ(p->buffers[static_cast<size_t>(b)].level, backend::MemLevel::Dram);
    for (int b : h.outputs)
        EXPECT_EQ(p->buffers[static_cast<size_t>(b)].level, backend::MemLevel::Dram);
    // The host lane is not a core: the NPU's Tasks run on the cores, counted without it.
    EXPECT_GE(backend::coresUsed(*p), 1);
    EXPECT_LE(backend::coresUsed(*p), p->target.numCores);
    const std::vector<std::string> lines = backend::hostStepLines(*p);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].rfind("1 x If (choose): 'If' is control flow", 0), 0u) << lines[0];

    // Both branches, each against the float64 reference, in both run modes.
    for (bool flag : {true, false})
        for (RunMode mode : {RunMode::Strict, RunMode::GraphAsync}) {
            auto ran = runProgram(*p, inputsWith(flag), mode, /*checkRaces=*/true);
            ASSERT_TRUE(ran.ok()) << ran.error().message;
            auto ref = runReference(*graph, inputsWith(flag), DType::F64);
            ASSERT_TRUE(ref.ok()) << ref.error().message;
            TensorComparison c = compareTensors("y", ran->outputs[0], (*ref)[0], 1e-2, 1e-2);
            EXPECT_TRUE(c.pass) << formatComparison(c);
            // The trace has the host step on its lane, after the Relu and before the Add.
            const sim::TraceRecord& rec = ran->trace[static_cast<size_t>(h.id)];
            EXPECT_EQ(rec.core, lane);
            EXPECT_EQ(rec.unit, backend::UnitKind::Host);
            for (int d : h.deps)
                EXPECT_LE(ran->trace[static_cast<size_t>(d)].end, rec.start);
            // The transfers around it: it reads the flag and the Relu's output from DRAM, computes,
            // and writes its result back for the Add, in the time the cost model gave it.
            uint64_t read = 0, written = 0;
            for (int b : h.inputs)
                read += p->buffers[static_cast<size_t>(b)].size;
            for (int b : h.outputs)
                written += p->buffers[static_cast<size_t>(b)].size;
            EXPECT_GE(read, 3u * 4 * 4 * 4 + 1);
            EXPECT_GE(written, 3u * 4 * 4 * 4);
            EXPECT_EQ(rec.loadEnd - rec.start, (read + 15) / 16);
            EXPECT_EQ(rec.computeStart, rec.loadEnd);
            EXPECT_EQ(rec.storeStart, rec.computeEnd);
            EXPECT_EQ(rec.end - rec.storeStart, (written + 15) / 16);
            EXPECT_EQ(rec.end - rec.start, h.computeCycles);
        }
}

/// x -> Conv -> Relu -> Loop(3 times: r = r * 0.5 + x, stacking each r) -> Add(x): a loop with a
/// constant trip count has static outputs, so it is a host step between NPU Tasks.
std::shared_ptr<ir::Graph> looped() {
    auto body = std::make_shared<ir::Graph>("halve");
    ir::Value* i = *body->addInput("i", TensorType::of(DType::I64, {}));
    ir::Value* c = *body->addInput("c", TensorType::of(DType::Bool, {}));
    ir::Value* rIn = *body->addInput("r_in", TensorType::of(DType::F32, {1, 3, 4, 4}));
    ir::Value* xIn = *body->addInput("x_in", TensorType::of(DType::F32, {1, 3, 4, 4}));
    (void)i;
    ir::Value* half = *body->addConstant("half", ir::Tensor::scalar(0.5));
    ir::Node* mul = *body->addNode(OpKind::Mul, "scale", {rIn, half}, {"rh"});
    ir::Node* add = *body->addNode(OpKind::Add, "plus_x", {mul->output(), xIn}, {"r_out"});
    ir::Node* keep = *body->addNode(OpKind::Identity, "keep", {c}, {"c_out"});
    ir::Node* step = *body->addNode(OpKind::Identity, "step", {add->output()}, {"r_step"});
    body->setOutputs({keep->output(), add->output(), step->output()});
    EXPECT_TRUE(body->inferTypes().ok());

    auto g = std::make_shared<ir::Graph>("looped");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 3, 4, 4}));
    ir::Value* w = *g->addConstant("w", ramp({3, 3, 3, 3}, -0.2, 0.02));
    ir::Value* trips = *g->addConstant("trips", ir::Tensor::fromVector<int64_t>({}, {3}));
    ir::Node* conv = *g->addNode(OpKind::Conv, "conv", {x, w}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Node* relu = *g->addNode(OpKind::Relu, "relu", {conv->output()}, {"r"});
    ir::Node* loop = *g->addNode(OpKind::Loop, "repeat", {trips, nullptr, relu->output(), x}, {"final", "steps"},
                                 {{"body", std::shared_ptr<const ir::Graph>(body)}, {"num_captured", int64_t{1}}});
    ir::Node* out = *g->addNode(OpKind::Add, "add", {loop->output(0), x}, {"y"});
    g->setOutputs({out->output(), loop->output(1)});
    Status s = g->inferTypes();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return g;
}

TEST(Partition, ALoopWithAKnownTripCountIsAHostStep) {
    auto graph = looped();
    EXPECT_EQ(graph->outputs()[1]->type(), TensorType::of(DType::F32, {3, 1, 3, 4, 4}));
    Expected<backend::Program> p = backend::lower(graph, backend::defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    std::vector<const backend::Task*> host;
    for (const backend::Task& t : p->tasks)
        if (t.unit == backend::UnitKind::Host)
            host.push_back(&t);
    ASSERT_EQ(host.size(), 1u);
    EXPECT_EQ(host.front()->kernel, "Loop");
    EXPECT_EQ(host.front()->core, backend::hostLane(p->target));
    const std::vector<std::string> lines = backend::hostStepLines(*p);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].rfind("1 x Loop (repeat)", 0), 0u) << lines[0];
    const std::vector<ir::Tensor> in{ramp({1, 3, 4, 4}, -1.0, 0.1)};
    auto ran = runProgram(*p, in, RunMode::GraphAsync, /*checkRaces=*/true);
    ASSERT_TRUE(ran.ok()) << ran.error().message;
    auto ref = runReference(*graph, in, DType::F64);
    ASSERT_TRUE(ref.ok()) << ref.error().message;
    for (size_t k = 0; k < 2; ++k) {
        TensorComparison c = compareTensors(k ? "steps" : "y", ran->outputs[k], (*ref)[k], 1e-2, 1e-2);
        EXPECT_TRUE(c.pass) << formatComparison(c);
    }
    // The reference itself, by hand for one element: r3 = r/8 + x(1/4 + 1/2 + 1) and y = r3 + x.
    const double x0 = in[0].at(0), r0 = (*ref)[1].at(0) * 2 - 2 * x0;
    EXPECT_NEAR((*ref)[0].at(0), r0 / 8 + x0 * 1.75 + x0, 1e-9);
}

/// x -> QuantizeLinear/DequantizeLinear (one scale) -> Relu -> QuantizeLinear/DequantizeLinear
/// (a scale per channel): the first pair runs on the vector unit, the per-channel one on the host.
std::shared_ptr<ir::Graph> quantized() {
    auto g = std::make_shared<ir::Graph>("quantized");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 3, 4, 4}));
    ir::Value* s = *g->addConstant("s", ir::Tensor::fromVector<float>({}, {0.0625f}));
    ir::Value* z = *g->addConstant("z", ir::Tensor::fromVector<uint8_t>({}, {100}));
    ir::Value* sc = *g->addConstant("sc", ir::Tensor::fromVector<float>({3}, {0.03f, 0.05f, 0.07f}));
    ir::Value* zc = *g->addConstant("zc", ir::Tensor::fromVector<int8_t>({3}, {-5, 0, 5}));
    ir::Node* q = *g->addNode(OpKind::QuantizeLinear, "q", {x, s, z}, {"xq"});
    ir::Node* dq = *g->addNode(OpKind::DequantizeLinear, "dq", {q->output(), s, z}, {"xd"});
    ir::Node* relu = *g->addNode(OpKind::Relu, "relu", {dq->output()}, {"r"});
    ir::Node* qc = *g->addNode(OpKind::QuantizeLinear, "qc", {relu->output(), sc, zc}, {"rq"});
    ir::Node* dqc = *g->addNode(OpKind::DequantizeLinear, "dqc", {qc->output(), sc, zc}, {"y"});
    g->setOutputs({dqc->output()});
    Status st = g->inferTypes();
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    return g;
}

TEST(Partition, PerTensorQuantizationRunsOnTheVectorUnitPerChannelOnTheHost) {
    auto graph = quantized();
    Expected<backend::Program> p = backend::lower(graph, backend::defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    std::map<std::string, backend::UnitKind> unit;
    for (const backend::Task& t : p->tasks)
        for (const std::string& n : t.nodes)
            unit[n] = t.unit;
    EXPECT_EQ(unit["q"], backend::UnitKind::Vector);
    EXPECT_EQ(unit["dq"], backend::UnitKind::Vector);
    EXPECT_EQ(unit["qc"], backend::UnitKind::Host);
    EXPECT_EQ(unit["dqc"], backend::UnitKind::Host);
    const std::vector<std::string> lines = backend::hostStepLines(*p);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_NE(lines[0].find("per-axis or blocked scale (f32[3])"), std::string::npos) << lines[0];
    // The int8 tensor between q and dq is stored as bytes.
    for (const backend::Buffer& b : p->buffers)
        if (b.value == "xq") {
            EXPECT_EQ(b.type.dtype, DType::U8);
        }
    // Exactly the reference's numbers: quantization on the NPU rounds as the reference does.
    const std::vector<ir::Tensor> in{ramp({1, 3, 4, 4}, -1.0, 0.37)};
    for (RunMode mode : {RunMode::Strict, RunMode::GraphAsync}) {
        auto ran = runProgram(*p, in, mode, /*checkRaces=*/true);
        ASSERT_TRUE(ran.ok()) << ran.error().message;
        auto ref = runReference(*graph, in, DType::F64);
        ASSERT_TRUE(ref.ok()) << ref.error().message;
        TensorComparison c = compareTensors("y", ran->outputs[0], (*ref)[0], 0.0, 0.0);
        EXPECT_TRUE(c.pass) << formatComparison(c);
    }
}

/// scores = Sigmoid(logits) on the NPU; NonMaxSuppression keeps boxes 0, 2 and 4 of six (1 and
/// 3 overlap the one before them); picked = boxes[kept]: a detector's tail, whose shapes only the
/// run decides ([?, 3] and [?, 4]).
std::shared_ptr<ir::Graph> detectorTail() {
    auto g = std::make_shared<ir::Graph>("detector");
    ir::Value* boxes = *g->addInput("boxes", TensorType::of(DType::F32, {1, 6, 4}));
    ir::Value* logits = *g->addInput("logits", TensorType::of(DType::F32, {1, 1, 6}));
    ir::Value* maxOut = *g->addConstant("max_out", ir::Tensor::fromVector<int64_t>({1}, {3}));
    ir::Value* iou = *g->addConstant("iou", ir::Tensor::fromVector<float>({1}, {0.5f}));
    ir::Value* column = *g->addConstant("column", ir::Tensor::fromVector<int64_t>({}, {2}));
    ir::Value* batch = *g->addConstant("batch", ir::Tensor::fromVector<int64_t>({1}, {0}));
    ir::Node* sig = *g->addNode(OpKind::Sigmoid, "score", {logits}, {"scores"});
    ir::Node* nms = *g->addNode(OpKind::NonMaxSuppression, "nms", {boxes, sig->output(), maxOut, iou}, {"selected"});
    ir::Node* col = *g->addNode(OpKind::Gather, "box_index", {nms->output(), column}, {"kept"}, {{"axis", int64_t{1}}});
    ir::Node* flat = *g->addNode(OpKind::Squeeze, "flat", {boxes, batch}, {"boxes2d"});
    ir::Node* pick = *g->addNode(OpKind::Gather, "pick", {flat->output(), col->output()}, {"picked"}, {{"axis", int64_t{0}}});
    g->setOutputs({pick->output(), sig->output()});
    Status s = g->inferTypes();
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return g;
}

std::vector<ir::Tensor> detectorInputs() {
    return {ir::Tensor::fromVector<float>({1, 6, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 0, 2.05f, 1, 3.05f,
                                                     0, 5, 1, 6, 0, 8, 1, 9}),
            ir::Tensor::fromVector<float>({1, 1, 6}, {5, 4, 3, 2, 1, 0})};
}

TEST(Partition, ValuesWhoseShapeTheRunDecidesAreHeldByTheHost) {
    auto graph = detectorTail();
    ASSERT_FALSE(graph->outputs()[0]->type().isStatic());
    Expected<backend::Program> p = backend::lower(graph, backend::defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    // The NMS, and the two Gathers that read what it decided, run on the host; the Sigmoid on
    // the NPU.
    std::vector<std::string> host, npu;
    for (const backend::Task& t : p->tasks)
        (t.unit == backend::UnitKind::Host ? host : npu).push_back(t.nodes.front());
    std::sort(host.begin(), host.end());
    EXPECT_EQ(host, (std::vector<std::string>{"box_index", "nms", "pick"}));
    EXPECT_NE(std::find(npu.begin(), npu.end(), "score"), npu.end());
    const std::vector<std::string> lines = backend::hostStepLines(*p);
    const std::string all = [&] {
        std::string a;
        for (const std::string& l : lines)
            a += l + "\n";
        return a;
    }();
    EXPECT_NE(all.find("reads 'selected' (i64[?,3]), whose shape only the run decides"), std::string::npos) << all;
    // Their buffers have no address: size 0, nothing in the DRAM plan.
    for (const backend::Buffer& b : p->buffers)
        if (b.value == "selected" || b.value == "kept" || b.value == "picked") {
            EXPECT_FALSE(b.type.isStatic()) << b.value;
            EXPECT_EQ(b.size, 0u) << b.value;
        }
    auto ref = runReference(*graph, detectorInputs(), DType::F64);
    ASSERT_TRUE(ref.ok()) << ref.error().message;
    const std::vector<double> expected{0, 0, 1, 1, 0, 2, 1, 3, 0, 5, 1, 6};
    EXPECT_EQ((*ref)[0].toDoubles(), expected);
    for (RunMode mode : {RunMode::Strict, RunMode::GraphAsync}) {
        auto ran = runProgram(*p, detectorInputs(), mode, /*checkRaces=*/true);
        ASSERT_TRUE(ran.ok()) << ran.error().message;
        EXPECT_EQ(ran->outputs[0].shape(), (std::vector<int64_t>{3, 4}));
        EXPECT_EQ(ran->outputs[0].toDoubles(), expected);
        TensorComparison c = compareTensors("scores", ran->outputs[1], (*ref)[1], 1e-2, 1e-2);
        EXPECT_TRUE(c.pass) << formatComparison(c);
    }
    // The artifact keeps them (unknown dims as null) and runs the same.
    const std::string dir = freshDir("held");
    ASSERT_TRUE(backend::writeArtifact(*p, dir).ok());
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    bool sawNull = false;
    for (const auto& b : m["buffers"])
        if (b["value"] == "picked") {
            EXPECT_TRUE(b["shape"][0].is_null());
            EXPECT_EQ(b["shape"][1], 4);
            sawNull = true;
        }
    EXPECT_TRUE(sawNull);
    Expected<backend::Program> back = backend::readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    auto again = runProgram(*back, detectorInputs());
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->outputs[0].toDoubles(), expected);
    // An NPU Task touching a held buffer, or a held buffer given an address, is refused.
    for (auto& b : m["buffers"])
        if (b["value"] == "picked")
            b["size"] = 64;
    backend::test::spitManifest(dir, m.dump());
    Expected<backend::Program> bad = backend::readArtifact(dir);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("which the host holds"), std::string::npos) << bad.error().message;
}

TEST(Partition, ArtifactKeepsHostTasksAndTheirSubgraphWeights) {
    auto graph = partitioned();
    Expected<backend::Program> p = backend::lower(graph, backend::defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const std::string dir = freshDir("roundtrip");
    Status w = backend::writeArtifact(*p, dir);
    ASSERT_TRUE(w.ok()) << w.error().message;
    ASSERT_TRUE(fs::exists(fs::path(dir) / "host_weights.bin"));
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    EXPECT_EQ(m["version"], backend::kArtifactVersion);
    ASSERT_EQ(m["host_weights"].size(), 1u);
    EXPECT_EQ(m["host_weights"][0]["value"], "then_k");

    Expected<backend::Program> back = backend::readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back->tasks.size(), p->tasks.size());
    for (size_t i = 0; i < p->tasks.size(); ++i) {
        EXPECT_EQ(back->tasks[i].unit, p->tasks[i].unit);
        EXPECT_EQ(back->tasks[i].core, p->tasks[i].core);
    }
    for (bool flag : {true, false}) {
        auto a = runProgram(*p, inputsWith(flag));
        auto b = runProgram(*back, inputsWith(flag));
        ASSERT_TRUE(a.ok() && b.ok());
        ASSERT_EQ(a->outputs[0].byteSize(), b->outputs[0].byteSize());
        EXPECT_EQ(0, std::memcmp(a->outputs[0].bytes(), b->outputs[0].bytes(), a->outputs[0].byteSize()));
    }
    // Written twice: byte-identical.
    const std::string again = freshDir("roundtrip_again");
    ASSERT_TRUE(backend::writeArtifact(*p, again).ok());
    for (const char* f : {"manifest.json", "tasks.bin", "weights.bin", "host_weights.bin"})
        EXPECT_EQ(slurp(fs::path(dir) / f), slurp(fs::path(again) / f)) << f;

    // A flipped byte of the subgraphs' weights is a hash mismatch naming the file.
    std::string bytes = slurp(fs::path(dir) / "host_weights.bin");
    bytes[3] = static_cast<char>(bytes[3] ^ 0x40);
    spit(fs::path(dir) / "host_weights.bin", bytes);
    Expected<backend::Program> corrupt = backend::readArtifact(dir);
    ASSERT_FALSE(corrupt.ok());
    EXPECT_NE(corrupt.error().message.find("host_weights.bin: content hash"), std::string::npos)
        << corrupt.error().message;
}

TEST(Partition, AHostTaskOnACoreOrAnNpuTaskOnTheHostLaneIsRejected) {
    auto graph = partitioned();
    Expected<backend::Program> p = backend::lower(graph, backend::defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    const auto host = std::find_if(p->tasks.begin(), p->tasks.end(),
                                   [](const backend::Task& t) { return t.unit == backend::UnitKind::Host; });
    ASSERT_NE(host, p->tasks.end());
    const std::string dir = freshDir("lane");
    ASSERT_TRUE(backend::writeArtifact(*p, dir).ok());
    nlohmann::json m = nlohmann::json::parse(slurp(fs::path(dir) / "manifest.json"));
    const std::string path = "tasks[" + std::to_string(host->id) + "].core";
    for (int core : {0, backend::hostLane(p->target) + 1}) {
        nlohmann::json edited = m;
        edited["tasks"][static_cast<size_t>(host->id)]["core"] = core;
        const std::string text = edited.dump(1);
        spit(fs::path(dir) / "manifest.json", text);
        spit(fs::path(dir) / backend::kManifestHashFile,
             backend::fnv1a64Hex(std::vector<uint8_t>(text.begin(), text.end())) + "  manifest.json\n");
        Expected<backend::Program> bad = backend::readArtifact(dir);
        ASSERT_FALSE(bad.ok()) << core;
        EXPECT_NE(bad.error().message.find(path), std::string::npos) << bad.error().message;
    }
    // And the simulator refuses a Program whose host Task sits on a core, naming it.
    backend::Program moved = *p;
    moved.tasks[static_cast<size_t>(host->id)].core = 0;
    auto ran = runProgram(moved, inputsWith(true));
    ASSERT_FALSE(ran.ok());
    EXPECT_NE(ran.error().message.find("(host) is on core 0"), std::string::npos) << ran.error().message;
}

TEST(Partition, AnInputThatDecidesAnIfIsBoundAndGuarded) {
    // The flag comes from a directory of test data, as `run --inputs DIR` reads it.
    auto graph = partitioned();
    const std::string data = freshDir("data");
    fs::create_directories(data);
    const std::vector<ir::Tensor> in = inputsWith(false);
    for (size_t i = 0; i < in.size(); ++i) {
        Status s = frontend::saveTensorProto(in[i], graph->inputs()[i]->name(),
                                             (fs::path(data) / ("input_" + std::to_string(i) + ".pb")).string());
        ASSERT_TRUE(s.ok()) << s.error().message;
    }
    auto guards = bindControlInputs(*graph, data);
    ASSERT_TRUE(guards.ok()) << guards.error().message;
    ASSERT_EQ(guards->size(), 1u);
    EXPECT_EQ((*guards)[0].input, 1);
    EXPECT_EQ((*guards)[0].decides, "choose");
    CompileOptions options;
    options.inputGuards = *guards;
    auto compiled = compileGraph(*graph, options);
    ASSERT_TRUE(compiled.ok()) << compiled.error().message;
    const backend::Program& p = compiled->program;
    // The If folded into its else branch (a Neg): nothing runs on the host any more.
    for (const backend::Task& t : p.tasks)
        EXPECT_NE(t.unit, backend::UnitKind::Host) << t.name;
    const std::vector<ir::Node*> nodes = p.graph->nodes(); // a copy: one vector for both ends
    EXPECT_TRUE(std::none_of(nodes.begin(), nodes.end(), [](const ir::Node* n) { return n->kind() == OpKind::If; }));
    auto ran = runProgram(p, in);
    ASSERT_TRUE(ran.ok()) << ran.error().message;
    auto ref = runReference(*partitioned(), in, DType::F64);
    ASSERT_TRUE(ref.ok());
    EXPECT_TRUE(compareTensors("y", ran->outputs[0], (*ref)[0], 1e-2, 1e-2).pass);
    auto refused = runProgram(p, inputsWith(true));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("input 'flag' is 1, but the program was compiled for 0 (it decides 'choose')"),
              std::string::npos)
        << refused.error().message;
    // The guard survives the artifact.
    const std::string dir = freshDir("guarded");
    ASSERT_TRUE(backend::writeArtifact(p, dir).ok());
    Expected<backend::Program> back = backend::readArtifact(dir);
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back->inputGuards.size(), 1u);
    EXPECT_FALSE(runProgram(*back, inputsWith(true)).ok());
    EXPECT_TRUE(runProgram(*back, in).ok());
    // Without a directory nothing is bound.
    auto none = bindControlInputs(*partitioned(), "");
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
}

} // namespace
} // namespace sextant::runtime
