// Profile database: a simulated run written to SQLite reads back exactly, several runs share a
// file, bad files give clear errors, and the Chrome trace export is well-formed and deterministic.
#include "profiler/ProfileDb.h"
#include "core/backend/Lower.h"
#include "core/frontend/OnnxImporter.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/InputGenerator.h"
#include "core/runtime/Session.h"
#include "profiler/ChromeTrace.h"
#include "profiler/ProfileReader.h"
#include "profiler/RunCompare.h"
#include "profiler/RunRecord.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include <unistd.h>

using namespace sextant;
namespace fs = std::filesystem;

namespace {

ir::Tensor ramp(std::vector<int64_t> shape, double scale) {
    ir::Tensor t(ir::DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, std::sin(static_cast<double>(i) * scale));
    return t;
}

struct SimulatedRun {
    backend::Program program;
    sim::SimResult result;
};

SimulatedRun simulateSmallModel(const backend::Target& target = backend::defaultTarget()) {
    auto g = std::make_shared<ir::Graph>("small");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 2, 6, 6})).value();
    ir::AttributeMap conv;
    conv["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    conv["kernel_shape"] = std::vector<int64_t>{3, 3};
    ir::Value* w1 = g->addConstant("w1", ramp({4, 2, 3, 3}, 0.3)).value();
    ir::Value* w2 = g->addConstant("w2", ramp({4, 2, 3, 3}, 0.7)).value();
    ir::Node* c1 = g->addNode(ir::OpKind::Conv, "conv1", {x, w1}, {"c1"}, conv).value();
    ir::Node* c2 = g->addNode(ir::OpKind::Conv, "conv2", {x, w2}, {"c2"}, conv).value();
    ir::Node* r = g->addNode(ir::OpKind::Relu, "relu", {c2->output()}, {"r"}).value();
    ir::Node* a = g->addNode(ir::OpKind::Add, "add", {c1->output(), r->output()}, {"y"}).value();
    c1->mutableProvenance() = {{"Conv_0"}, "import"};
    a->mutableProvenance() = {{"Add_3", "Relu_2"}, "fuse/test-rule"};
    g->setOutputs({a->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    auto p = backend::lower(g, target);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    runtime::Session s(std::move(p.value()));
    auto result = s.run(runtime::generateInputs(*s.program().graph).value());
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return SimulatedRun{s.program(), std::move(result.value())};
}

/// The sample model, lowered for npu-a with 16 KiB of SRAM per core instead of 512: small enough
/// that some Tasks stream their tiles double-buffered and others load, compute and store one
/// after another, so the run has both kinds of phases. The Task that streams is its global
/// average pooling over the whole map, so split-global-pool (which would spread it over the
/// cores, each part's rows fitting at once) is off.
SimulatedRun simulateSample() {
    const std::string path = std::string(SEXTANT_SOURCE_DIR) + "/samples/residual_cnn.onnx";
    auto g = frontend::importOnnx(path);
    EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
    if (!g.ok())
        return {};
    runtime::CompileOptions options;
    options.target.sramBytes = 16 * 1024;
    options.pipeline.disabled = {"split-global-pool"};
    auto compiled = runtime::compileGraph(**g, options);
    EXPECT_TRUE(compiled.ok()) << (compiled.ok() ? "" : compiled.error().message);
    if (!compiled.ok())
        return {};
    runtime::Session s(std::move(compiled->program));
    auto result = s.run(runtime::generateInputs(*s.program().graph).value());
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return SimulatedRun{s.program(), std::move(result.value())};
}

/// The layout version 1 wrote, as it wrote it: the tables a database from before phases and SRAM
/// plans has.
const char* kVersion1Schema = R"sql(
CREATE TABLE schema_version(version INTEGER NOT NULL);
CREATE TABLE strings(id INTEGER PRIMARY KEY, text TEXT NOT NULL UNIQUE);
CREATE TABLE runs(id INTEGER PRIMARY KEY, model INTEGER NOT NULL, target INTEGER NOT NULL,
  pipeline INTEGER NOT NULL, created INTEGER NOT NULL);
CREATE TABLE nodes(run INTEGER NOT NULL, name INTEGER NOT NULL, op INTEGER NOT NULL,
  origins INTEGER NOT NULL, created_by INTEGER NOT NULL);
CREATE TABLE tasks(run INTEGER NOT NULL, id INTEGER NOT NULL, name INTEGER NOT NULL,
  kernel INTEGER NOT NULL, core INTEGER NOT NULL, unit INTEGER NOT NULL, start INTEGER NOT NULL,
  "end" INTEGER NOT NULL, ready INTEGER NOT NULL, flops INTEGER NOT NULL, dma_bytes INTEGER NOT NULL,
  nodes INTEGER NOT NULL);
CREATE TABLE task_nodes(run INTEGER NOT NULL, task INTEGER NOT NULL, node INTEGER NOT NULL);
CREATE TABLE deps(run INTEGER NOT NULL, src INTEGER NOT NULL, dst INTEGER NOT NULL,
  event INTEGER NOT NULL);
CREATE TABLE buffers(run INTEGER NOT NULL, id INTEGER NOT NULL, value INTEGER NOT NULL,
  level INTEGER NOT NULL, core INTEGER NOT NULL, "offset" INTEGER NOT NULL, size INTEGER NOT NULL,
  first_task INTEGER NOT NULL, last_task INTEGER NOT NULL);
CREATE TABLE metrics(run INTEGER NOT NULL, key INTEGER NOT NULL, value REAL NOT NULL);
CREATE INDEX tasks_by_lane ON tasks(run, core, start);
CREATE INDEX task_nodes_by_task ON task_nodes(run, task);
INSERT INTO schema_version VALUES(1);
INSERT INTO strings(id, text) VALUES(1, 'old.onnx'), (2, 'npu-a'), (3, 'canonicalize,fuse'),
  (4, 'conv1'), (5, 'FusedConv'), (6, 'cube'), (7, '["conv1"]'), (8, 'relu1'), (9, 'Relu'),
  (10, 'vector'), (11, '["relu1"]'), (12, 'total_cycles'), (13, 'clock_ghz'), (14, 'num_cores'),
  (15, 'c1'), (16, 'dram'), (17, '["Conv_0"]'), (18, 'import'), (19, 'Conv');
INSERT INTO runs VALUES(1, 1, 2, 3, 1600000000);
INSERT INTO nodes VALUES(1, 4, 19, 17, 18);
INSERT INTO tasks VALUES(1, 0, 4, 5, 0, 6, 100, 900, 100, 4096, 2048, 7),
                        (1, 1, 8, 9, 1, 10, 1100, 1500, 1100, 64, 128, 11);
INSERT INTO task_nodes VALUES(1, 0, 4), (1, 1, 8);
INSERT INTO deps VALUES(1, 0, 1, 0);
INSERT INTO buffers VALUES(1, 0, 15, 16, -1, 0, 4096, 0, 1);
INSERT INTO metrics VALUES(1, 12, 1500), (1, 13, 1.0), (1, 14, 2);
)sql";

class ProfileDbTest : public ::testing::Test {
protected:
    void SetUp() override {
        m_dir = fs::temp_directory_path() /
                ("sextant-profile-" +
                 std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                 "-" + std::to_string(::getpid()));
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }
    std::string path(const std::string& name) const { return (m_dir / name).string(); }
    static profiler::RunInfo info() {
        profiler::RunInfo i;
        i.model = "small.onnx";
        i.created = 1700000000;
        i.metrics = {{"cosine", 0.9999}};
        return i;
    }
    static void execOn(const std::string& db, const std::string& sql) {
        sqlite3* h = nullptr;
        ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
            << sqlite3_errmsg(h);
        sqlite3_close(h);
    }
    fs::path m_dir;
};

} // namespace

TEST_F(ProfileDbTest, RoundTripsTasksNodesBuffersDepsAndMetrics) {
    SimulatedRun run = simulateSmallModel();
    std::string db = path("run.db");
    auto id = profiler::writeProfile(db, run.program, run.result, info());
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_EQ(*id, 1);

    auto reader = profiler::ProfileReader::open(db);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto runs = reader->runs().value();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].model, "small.onnx");
    EXPECT_EQ(runs[0].target, "npu-a");
    EXPECT_EQ(runs[0].created, 1700000000);

    auto tasks = reader->tasks().value();
    ASSERT_EQ(tasks.size(), run.program.tasks.size());
    for (const profiler::TaskRow& t : tasks) {
        size_t i = 0;
        while (run.program.tasks[i].id != t.id)
            ++i;
        const backend::Task& want = run.program.tasks[i];
        EXPECT_EQ(t.name, want.name);
        EXPECT_EQ(t.kernel, want.kernel);
        EXPECT_EQ(t.core, want.core);
        EXPECT_EQ(t.unit, want.unit);
        EXPECT_EQ(t.nodes, want.nodes);
        EXPECT_EQ(t.flops, want.flops);
        EXPECT_EQ(t.dmaBytes, want.dmaBytes);
        EXPECT_EQ(t.start, run.result.trace[i].start);
        EXPECT_EQ(t.end, run.result.trace[i].end);
        EXPECT_EQ(t.ready, run.result.trace[i].ready);
    }
    for (size_t i = 1; i < tasks.size(); ++i)
        EXPECT_LE(tasks[i - 1].start, tasks[i].start); // ordered by start

    auto nodes = reader->nodes().value();
    ASSERT_EQ(nodes.size(), run.program.graph->numNodes());
    bool sawAdd = false;
    for (const profiler::NodeRow& n : nodes) {
        if (n.name != "add")
            continue;
        sawAdd = true;
        EXPECT_EQ(n.op, "Add");
        EXPECT_EQ(n.origins, (std::vector<std::string>{"Add_3", "Relu_2"}));
        EXPECT_EQ(n.createdBy, "fuse/test-rule");
    }
    EXPECT_TRUE(sawAdd);

    auto buffers = reader->buffers().value();
    ASSERT_EQ(buffers.size(), run.program.buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
        EXPECT_EQ(buffers[i].value, run.program.buffers[i].value);
        EXPECT_EQ(buffers[i].offset, run.program.buffers[i].offset);
        EXPECT_EQ(buffers[i].size, run.program.buffers[i].size);
        EXPECT_EQ(buffers[i].firstTask, run.program.buffers[i].firstTask);
        EXPECT_EQ(buffers[i].lastTask, run.program.buffers[i].lastTask);
    }

    size_t depCount = 0, eventDeps = 0;
    for (const backend::Task& t : run.program.tasks)
        depCount += t.deps.size();
    auto deps = reader->deps().value();
    EXPECT_EQ(deps.size(), depCount);
    for (const profiler::DepRow& d : deps)
        eventDeps += d.event >= 0 ? 1 : 0;
    // Every cross-core dependency travels through an event.
    size_t crossCore = 0;
    for (const profiler::DepRow& d : deps) {
        auto core = [&](int id) {
            for (const auto& t : run.program.tasks)
                if (t.id == id)
                    return t.core;
            return -1;
        };
        crossCore += core(d.src) != core(d.dst) ? 1 : 0;
    }
    EXPECT_EQ(eventDeps, crossCore);

    auto metrics = reader->metrics().value();
    auto metric = [&](const std::string& k) {
        for (const auto& m : metrics)
            if (m.key == k)
                return m.value;
        return -1.0;
    };
    EXPECT_EQ(metric("total_cycles"), static_cast<double>(run.result.totalCycles));
    EXPECT_EQ(metric("dram_peak"), static_cast<double>(run.program.memory.dramPeak));
    EXPECT_DOUBLE_EQ(metric("cosine"), 0.9999);
}

TEST_F(ProfileDbTest, SeveralRunsShareAFileAndLaneQueriesFilter) {
    SimulatedRun run = simulateSmallModel();
    std::string db = path("runs.db");
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, info()).ok());
    sim::SimResult slower = run.result;
    for (auto& r : slower.trace)
        for (uint64_t* c : {&r.start, &r.end, &r.ready, &r.loadEnd, &r.computeStart, &r.computeEnd,
                            &r.storeStart})
            *c += 1000;
    auto second = profiler::writeProfile(db, run.program, slower, info());
    ASSERT_TRUE(second.ok()) << second.error().message;
    EXPECT_EQ(*second, 2);
    auto reader = profiler::ProfileReader::open(db).value();
    EXPECT_EQ(reader.latestRun().value(), 2);
    EXPECT_EQ(reader.runs()->size(), 2u);
    EXPECT_EQ(reader.tasks(1)->front().start + 1000, reader.tasks(2)->front().start);
    EXPECT_FALSE(reader.tasks(3).ok());

    // Lane query: Tasks of core 0 overlapping a window, and nothing outside it.
    auto all = reader.tasks(1).value();
    const profiler::TaskRow* first = nullptr;
    for (const auto& t : all)
        if (t.core == 0 && !first)
            first = &t;
    ASSERT_NE(first, nullptr);
    auto hit = reader.tasksInRange(1, 0, first->start, first->start + 1).value();
    ASSERT_EQ(hit.size(), 1u);
    EXPECT_EQ(hit[0].id, first->id);
    EXPECT_TRUE(reader.tasksInRange(1, 0, 0, first->start).value().empty());
}

TEST_F(ProfileDbTest, BadFilesGiveClearErrors) {
    auto missing = profiler::ProfileReader::open(path("missing.db"));
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("missing.db"), std::string::npos);

    std::string junk = path("junk.db");
    std::ofstream(junk)
        << "this is not a database, just some text that is long enough to have a header....";
    auto notDb = profiler::ProfileReader::open(junk);
    ASSERT_FALSE(notDb.ok());
    EXPECT_NE(notDb.error().message.find("is not a profile database"), std::string::npos)
        << notDb.error().message;
    // Writing into it must fail too, not corrupt it further.
    SimulatedRun run = simulateSmallModel();
    EXPECT_FALSE(profiler::writeProfile(junk, run.program, run.result, info()).ok());

    std::string other = path("other.db");
    execOn(other, "CREATE TABLE t(x)");
    auto foreign = profiler::ProfileReader::open(other);
    ASSERT_FALSE(foreign.ok());
    EXPECT_NE(foreign.error().message.find("no schema_version table"), std::string::npos);

    std::string future = path("future.db");
    ASSERT_TRUE(profiler::writeProfile(future, run.program, run.result, info()).ok());
    execOn(future, "UPDATE schema_version SET version = 99");
    auto v = profiler::ProfileReader::open(future);
    ASSERT_FALSE(v.ok());
    EXPECT_NE(v.error().message.find("schema version 99"), std::string::npos) << v.error().message;
    EXPECT_FALSE(profiler::writeProfile(future, run.program, run.result, info()).ok());

    std::string partial = path("partial.db");
    ASSERT_TRUE(profiler::writeProfile(partial, run.program, run.result, info()).ok());
    execOn(partial, "DROP TABLE buffers");
    auto p = profiler::ProfileReader::open(partial);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().message.find("missing table 'buffers'"), std::string::npos)
        << p.error().message;

    // A version-2 file without its SRAM tables, or with phases outside their Task.
    std::string noSram = path("nosram.db");
    ASSERT_TRUE(profiler::writeProfile(noSram, run.program, run.result, info()).ok());
    execOn(noSram, "DROP TABLE sram_usage");
    auto ns = profiler::ProfileReader::open(noSram);
    ASSERT_FALSE(ns.ok());
    EXPECT_NE(ns.error().message.find("missing table 'sram_usage'"), std::string::npos)
        << ns.error().message;
    std::string badPhase = path("phase.db");
    ASSERT_TRUE(profiler::writeProfile(badPhase, run.program, run.result, info()).ok());
    execOn(badPhase, "UPDATE tasks SET load_end = \"end\" + 5 WHERE id = 0");
    auto bp = profiler::ProfileReader::open(badPhase).value().tasks();
    ASSERT_FALSE(bp.ok());
    EXPECT_NE(bp.error().message.find("Task 0 of run 1 has phases"), std::string::npos)
        << bp.error().message;
}

TEST_F(ProfileDbTest, ChromeTraceIsWellFormedAndDeterministic) {
    SimulatedRun run = simulateSmallModel();
    std::string db = path("trace.db");
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, info()).ok());
    std::string out1 = path("a.json"), out2 = path("b.json");
    ASSERT_TRUE(profiler::exportChromeTrace(db, out1).ok());
    ASSERT_TRUE(profiler::exportChromeTrace(db, out2).ok());
    std::ifstream f1(out1), f2(out2);
    std::string s1((std::istreambuf_iterator<char>(f1)), {}),
        s2((std::istreambuf_iterator<char>(f2)), {});
    EXPECT_EQ(s1, s2);
    auto doc = nlohmann::json::parse(s1, nullptr, false);
    ASSERT_FALSE(doc.is_discarded());
    size_t complete = 0, flowStarts = 0, flowEnds = 0;
    for (const auto& e : doc["traceEvents"]) {
        std::string ph = e["ph"];
        if (ph == "X") {
            complete += e["cat"] != "dma"; // a Task, not one of its DMA phases
            EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("pid") &&
                        e.contains("tid"));
            EXPECT_GT(e["dur"].get<double>(), 0.0);
        }
        flowStarts += ph == "s";
        flowEnds += ph == "f";
    }
    EXPECT_EQ(complete, run.program.tasks.size());
    size_t depCount = 0;
    for (const auto& t : run.program.tasks)
        depCount += t.deps.size();
    EXPECT_EQ(flowStarts, depCount);
    EXPECT_EQ(flowEnds, depCount);
    EXPECT_EQ(doc["otherData"]["model"], "small.onnx");

    EXPECT_FALSE(profiler::exportChromeTrace(path("none.db"), path("c.json")).ok());
}

TEST_F(ProfileDbTest, TwoRunsCompareTaskByTask) {
    // The same graph on the 8-core default and on one core: every Task has its counterpart, and
    // the summary says what the core count did.
    SimulatedRun eight = simulateSmallModel();
    backend::Target one = backend::defaultTarget();
    one.name = "npu-a-1core";
    one.numCores = 1;
    SimulatedRun single = simulateSmallModel(one);
    const std::string db = path("runs.db");
    ASSERT_TRUE(profiler::writeProfile(db, eight.program, eight.result, info()).ok());
    ASSERT_TRUE(profiler::writeProfile(db, single.program, single.result, info()).ok());

    auto a = profiler::loadRun(db, 1);
    auto b = profiler::loadRun(db, 2);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(b->run.target, "npu-a-1core");
    const profiler::RunComparison c = profiler::compareRuns(*a, *b);
    // Groups, not Tasks: on one core nothing is split across cores.
    ASSERT_EQ(c.tasks.size(), single.program.tasks.size());
    EXPECT_EQ(c.onlyA, 0);
    EXPECT_EQ(c.onlyB, 0);
    for (const profiler::TaskDelta& d : c.tasks) {
        EXPECT_GE(d.taskA, 0);
        EXPECT_GE(d.taskB, 0);
        EXPECT_EQ(d.kernelA, d.kernelB);
        EXPECT_EQ(d.partsB, 1);
    }
    ASSERT_FALSE(c.summary.empty());
    EXPECT_EQ(c.summary[0].rfind("latency: ", 0), size_t{0}) << c.summary[0];
    // On one core the two convolutions queue up but the second's loads pipeline behind the
    // first's; on two cores the Add waits for an event. Which wins depends on the timing model;
    // the summary must say which way it went.
    ASSERT_NE(single.result.totalCycles, eight.result.totalCycles);
    const char* sign = single.result.totalCycles > eight.result.totalCycles ? "(+" : "(-";
    EXPECT_NE(c.summary[0].find(sign), std::string::npos) << c.summary[0];
    bool cores = false;
    for (const std::string& line : c.summary)
        cores |= line.find("cores used: 2 of 8 -> 1 of 1") != std::string::npos;
    EXPECT_TRUE(cores) << profiler::formatRunComparison(c);
    const std::string text = profiler::formatRunComparison(c, -1);
    EXPECT_NE(text.find("A: runs.db run 1 (small.onnx, npu-a)"), std::string::npos) << text;
    EXPECT_NE(text.find("B: runs.db run 2 (small.onnx, npu-a-1core)"), std::string::npos) << text;
    EXPECT_NE(text.find("conv2"), std::string::npos) << text;

    // A run the file does not hold, and a file that is not a database.
    auto missing = profiler::loadRun(db, 7);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("no run 7 (it holds runs 1, 2)"), std::string::npos)
        << missing.error().message;
    const std::string text2 = path("notes.txt");
    std::ofstream(text2) << "not a database";
    EXPECT_FALSE(profiler::loadRun(text2).ok());

    // A database edited into values no Program has: an error naming them, not a lane for core
    // 70000 or a million idle cores in the GUI.
    execOn(db, "UPDATE tasks SET core = 70000 WHERE run = 1 AND id = 0");
    auto farCore = profiler::loadRun(db, 1);
    ASSERT_FALSE(farCore.ok());
    EXPECT_NE(farCore.error().message.find("Task 0 of run 1 has core 70000"), std::string::npos)
        << farCore.error().message;
    execOn(db, "UPDATE metrics SET value = 1e15 WHERE run = 2 AND key = (SELECT id FROM strings WHERE text = "
               "'num_cores')");
    auto manyCores = profiler::loadRun(db, 2);
    ASSERT_FALSE(manyCores.ok());
    EXPECT_NE(manyCores.error().message.find("run 2 has num_cores 1e+15"), std::string::npos)
        << manyCores.error().message;
}

TEST(RunSpec, SplitPartsBelongToTheirGroup) {
    EXPECT_EQ(profiler::groupName("conv1[2/8]"), "conv1");
    EXPECT_EQ(profiler::groupName("p2o.Conv.0[10/16]"), "p2o.Conv.0");
    EXPECT_EQ(profiler::groupName("conv1"), "conv1");
    EXPECT_EQ(profiler::groupName("a[b]"), "a[b]");
    EXPECT_EQ(profiler::groupName("[1/2]"), "[1/2]");
}

TEST(RunSpec, PathAndOptionalRunId) {
    EXPECT_EQ(profiler::parseRunSpec("runs.db"), std::make_pair(std::string("runs.db"), int64_t{-1}));
    EXPECT_EQ(profiler::parseRunSpec("runs.db:3"), std::make_pair(std::string("runs.db"), int64_t{3}));
    EXPECT_EQ(profiler::parseRunSpec("a:1.db:2"), std::make_pair(std::string("a:1.db"), int64_t{2}));
    EXPECT_EQ(profiler::parseRunSpec("runs.db:"), std::make_pair(std::string("runs.db:"), int64_t{-1}));
    EXPECT_EQ(profiler::parseRunSpec("runs.db:x1"), std::make_pair(std::string("runs.db:x1"), int64_t{-1}));
}

TEST_F(ProfileDbTest, RoundTripsPhasesAndTheSramPlanOfTheSample) {
    SimulatedRun run = simulateSample();
    ASSERT_FALSE(run.program.tasks.empty());
    ASSERT_FALSE(run.program.sramBuffers.empty());
    const std::string db = path("sample.db");
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, info()).ok());
    auto reader = profiler::ProfileReader::open(db);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    EXPECT_EQ(reader->schemaVersion(), profiler::kProfileSchemaVersion);

    // Every Task's phases as the simulator recorded them, and its DMA bytes split into loads and
    // stores as the Program's transfers say.
    const auto tasks = reader->tasks().value();
    ASSERT_EQ(tasks.size(), run.program.tasks.size());
    int streamed = 0, sequential = 0;
    for (const profiler::TaskRow& t : tasks) {
        size_t i = 0;
        while (run.program.tasks[i].id != t.id)
            ++i;
        const sim::TraceRecord& rec = run.result.trace[i];
        const backend::Task& task = run.program.tasks[i];
        EXPECT_EQ(t.loadEnd, rec.loadEnd) << t.name;
        EXPECT_EQ(t.computeStart, rec.computeStart) << t.name;
        EXPECT_EQ(t.computeEnd, rec.computeEnd) << t.name;
        EXPECT_EQ(t.storeStart, rec.storeStart) << t.name;
        uint64_t loads = 0, stores = 0;
        for (const backend::Transfer& tr : run.program.transfers)
            if (tr.task == t.id)
                (tr.load ? loads : stores) += tr.bytes;
        EXPECT_EQ(t.loadBytes, loads) << t.name;
        EXPECT_EQ(t.storeBytes, stores) << t.name;
        EXPECT_EQ(t.streamed, task.tiling.doubleBuffered && task.tiling.numTiles > 1) << t.name;
        if (t.streamed) {
            ++streamed;
            EXPECT_LT(t.computeStart, t.loadEnd) << t.name << ": a stream overlaps the compute";
            EXPECT_EQ(t.storeStart, t.end) << t.name;
        } else if (t.unit != backend::UnitKind::Dma && t.dmaBytes > 0) {
            ++sequential;
            EXPECT_LE(t.loadEnd, t.computeStart) << t.name << ": loads come before the compute";
            EXPECT_LE(t.computeEnd, t.storeStart) << t.name << ": stores after it";
        }
    }
    EXPECT_GT(streamed, 0);
    EXPECT_GT(sequential, 0);

    // The SRAM plan, buffer for buffer.
    const auto sram = reader->sramBuffers().value();
    ASSERT_EQ(sram.size(), run.program.sramBuffers.size());
    for (size_t i = 0; i < sram.size(); ++i) {
        const backend::SramBuffer& want = run.program.sramBuffers[i];
        EXPECT_EQ(sram[i].id, want.id);
        EXPECT_EQ(sram[i].core, want.core);
        EXPECT_EQ(sram[i].offset, want.offset);
        EXPECT_EQ(sram[i].size, want.size);
        EXPECT_EQ(sram[i].role, want.role);
        EXPECT_EQ(sram[i].pair, want.pair);
        EXPECT_EQ(sram[i].task, want.task);
        EXPECT_EQ(sram[i].buffer, want.buffer);
        EXPECT_EQ(sram[i].firstTask, want.firstTask);
        EXPECT_EQ(sram[i].lastTask, want.lastTask);
    }

    // The occupancy steps: at each step, the bytes of the buffers live then (from their first
    // Task's start to their last Task's end), counted here from the plan and the trace directly;
    // a core ends empty and never holds more than its SRAM.
    const auto steps = reader->sramOccupancy().value();
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.size(), profiler::sramOccupancy(run.program, run.result).size());
    auto traceOf = [&](int id) -> const sim::TraceRecord& {
        size_t i = 0;
        while (run.program.tasks[i].id != id)
            ++i;
        return run.result.trace[i];
    };
    std::map<int, uint64_t> peak;
    for (size_t k = 0; k < steps.size(); ++k) {
        const profiler::SramStepRow& step = steps[k];
        uint64_t live = 0;
        for (const backend::SramBuffer& b : run.program.sramBuffers)
            if (b.core == step.core && traceOf(b.firstTask).start <= step.cycle &&
                step.cycle < traceOf(b.lastTask).end)
                live += b.size;
        EXPECT_EQ(step.bytes, live) << "core " << step.core << " at cycle " << step.cycle;
        EXPECT_LE(step.bytes, run.program.target.sramBytes);
        peak[step.core] = std::max(peak[step.core], step.bytes);
        if (k + 1 == steps.size() || steps[k + 1].core != step.core)
            EXPECT_EQ(step.bytes, 0u) << "core " << step.core << " ends with SRAM in use";
        else
            EXPECT_LT(step.cycle, steps[k + 1].cycle);
    }
    for (const auto& [core, bytes] : peak)
        EXPECT_GT(bytes, 0u) << "core " << core;

    // A second file from the same run holds the same rows (the content is a function of the
    // Program and the trace).
    const std::string again = path("again.db");
    ASSERT_TRUE(profiler::writeProfile(again, run.program, run.result, info()).ok());
    auto other = profiler::ProfileReader::open(again).value();
    EXPECT_EQ(profiler::chromeTraceJson(other).value(), profiler::chromeTraceJson(*reader).value());
    const auto steps2 = other.sramOccupancy().value();
    ASSERT_EQ(steps2.size(), steps.size());
    for (size_t k = 0; k < steps.size(); ++k)
        EXPECT_TRUE(steps2[k].core == steps[k].core && steps2[k].cycle == steps[k].cycle &&
                    steps2[k].bytes == steps[k].bytes);
}

TEST_F(ProfileDbTest, AVersionOneDatabaseStillReadsAndTakesNewRuns) {
    const std::string db = path("v1.db");
    execOn(db, kVersion1Schema);
    auto reader = profiler::ProfileReader::open(db);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    EXPECT_EQ(reader->schemaVersion(), 1);
    auto tasks = reader->tasks();
    ASSERT_TRUE(tasks.ok()) << tasks.error().message;
    ASSERT_EQ(tasks->size(), 2u);
    // No phases stored: no DMA phase, compute over the whole Task, as before they were.
    for (const profiler::TaskRow& t : *tasks) {
        EXPECT_EQ(t.loadEnd, t.start);
        EXPECT_EQ(t.computeStart, t.start);
        EXPECT_EQ(t.computeEnd, t.end);
        EXPECT_EQ(t.storeStart, t.end);
        EXPECT_FALSE(t.streamed);
    }
    EXPECT_EQ((*tasks)[0].name, "conv1");
    EXPECT_EQ((*tasks)[0].dmaBytes, 2048u);
    EXPECT_EQ((*tasks)[1].start, 1100u);
    EXPECT_TRUE(reader->sramBuffers().value().empty());
    EXPECT_TRUE(reader->sramOccupancy().value().empty());
    EXPECT_EQ(reader->buffers().value().size(), 1u);
    EXPECT_EQ(reader->deps().value().size(), 1u);
    auto loaded = profiler::loadRun(db);
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->run.model, "old.onnx");

    // Its trace: the Tasks whole on their units, no DMA thread (nothing is known about the DMA).
    auto trace = profiler::chromeTraceJson(*reader);
    ASSERT_TRUE(trace.ok()) << trace.error().message;
    auto doc = nlohmann::json::parse(*trace);
    size_t slices = 0;
    for (const auto& e : doc["traceEvents"]) {
        EXPECT_NE(e["tid"], 2) << e.dump();
        if (e["ph"] == "X") {
            ++slices;
            EXPECT_EQ(e["dur"].get<double>(), (e["args"]["end_cycle"].get<double>() -
                                               e["args"]["start_cycle"].get<double>()) /
                                                  1000.0);
        }
    }
    EXPECT_EQ(slices, 2u);

    // Appending a run upgrades the file in the same write; the old run reads as it did.
    SimulatedRun run = simulateSmallModel();
    auto id = profiler::writeProfile(db, run.program, run.result, info());
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_EQ(*id, 2);
    auto upgraded = profiler::ProfileReader::open(db);
    ASSERT_TRUE(upgraded.ok()) << upgraded.error().message;
    EXPECT_EQ(upgraded->schemaVersion(), profiler::kProfileSchemaVersion);
    const auto old = upgraded->tasks(1).value();
    ASSERT_EQ(old.size(), 2u);
    EXPECT_EQ(old[0].computeEnd, old[0].end);
    EXPECT_EQ(old[1].loadEnd, old[1].start);
    EXPECT_TRUE(upgraded->sramBuffers(1).value().empty());
    EXPECT_EQ(upgraded->sramBuffers(2).value().size(), run.program.sramBuffers.size());
    const auto fresh = upgraded->tasks(2).value();
    ASSERT_EQ(fresh.size(), run.program.tasks.size());
    bool phased = false;
    for (const profiler::TaskRow& t : fresh)
        phased |= t.loadEnd > t.start;
    EXPECT_TRUE(phased);
}

TEST_F(ProfileDbTest, ChromeTraceShowsDmaPhasesOnTheirOwnThread) {
    SimulatedRun run = simulateSample();
    ASSERT_FALSE(run.program.tasks.empty());
    const std::string db = path("dma.db");
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, info()).ok());
    auto reader = profiler::ProfileReader::open(db).value();
    const auto tasks = reader.tasks().value();
    auto doc = nlohmann::json::parse(profiler::chromeTraceJson(reader).value());
    std::map<std::pair<int, int>, std::string> threads;
    std::map<int, nlohmann::json> compute;          // Task id -> its slice on its unit
    std::map<int, std::vector<nlohmann::json>> dma; // Task id -> its DMA phases
    for (const auto& e : doc["traceEvents"]) {
        if (e["ph"] == "M" && e["name"] == "thread_name")
            threads[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
        if (e["ph"] != "X")
            continue;
        if (e["cat"] == "dma")
            dma[e["args"]["task"].get<int>()].push_back(e);
        else
            compute[e["args"]["task"].get<int>()] = e;
    }
    auto us = [](uint64_t cycles) { return static_cast<double>(cycles) / 1000.0; }; // npu-a: 1 GHz
    int overlapping = 0, sequential = 0;
    for (const profiler::TaskRow& t : tasks) {
        ASSERT_TRUE(compute.count(t.id)) << t.name;
        const nlohmann::json& c = compute[t.id];
        if (t.unit == backend::UnitKind::Dma) {
            EXPECT_EQ(c["tid"], 2);
            EXPECT_FALSE(dma.count(t.id)) << t.name << " is a DMA Task: it is its own DMA slice";
            continue;
        }
        // The compute slice covers the compute phase only.
        EXPECT_DOUBLE_EQ(c["ts"].get<double>(), us(t.computeStart)) << t.name;
        EXPECT_DOUBLE_EQ(c["dur"].get<double>(), us(t.computeEnd - t.computeStart)) << t.name;
        if (t.dmaBytes == 0)
            continue;
        ASSERT_TRUE(dma.count(t.id)) << t.name << " moves " << t.dmaBytes << " bytes";
        EXPECT_EQ(threads[std::make_pair(t.core, 2)], "core " + std::to_string(t.core) + " dma");
        for (const nlohmann::json& d : dma[t.id]) {
            EXPECT_EQ(d["pid"], t.core);
            EXPECT_EQ(d["tid"], d["name"] == "store" ? 3 : 2) << d.dump();
            // In cycles (the args), not the microseconds' floating sums.
            const uint64_t d0 = d["args"]["start_cycle"], d1 = d["args"]["end_cycle"];
            const uint64_t c0 = c["args"]["compute_start_cycle"],
                           c1 = c["args"]["compute_end_cycle"];
            EXPECT_DOUBLE_EQ(d["ts"].get<double>(), us(d0));
            if (t.streamed) {
                EXPECT_EQ(d["name"], "stream") << t.name;
                EXPECT_EQ(d["args"]["bytes"], t.dmaBytes) << t.name;
                EXPECT_TRUE(d0 < c1 && c0 < d1)
                    << t.name << ": the stream runs while the unit computes";
                ++overlapping;
            } else {
                EXPECT_TRUE(d["name"] == "load" || d["name"] == "store") << d.dump();
                EXPECT_TRUE(d1 <= c0 || c1 <= d0)
                    << t.name << ": " << d["name"] << " overlaps the compute";
                EXPECT_EQ(d["args"]["bytes"], d["name"] == "load" ? t.loadBytes : t.storeBytes);
                ++sequential;
            }
        }
    }
    EXPECT_GT(overlapping, 0);
    EXPECT_GT(sequential, 0);
    EXPECT_EQ(threads[std::make_pair(0, 0)], "core 0 cube");
    // Trace viewers nest the slices of one thread: none may overlap another partly, though a Task
    // loads while the one before it on its core computes and stores.
    std::map<std::pair<int, int>, std::vector<std::pair<uint64_t, uint64_t>>> byThread;
    for (const auto& e : doc["traceEvents"])
        if (e["ph"] == "X") {
            const uint64_t b = e["cat"] == "dma" ? e["args"]["start_cycle"].get<uint64_t>()
                                                 : e["args"]["compute_start_cycle"].get<uint64_t>();
            const uint64_t f = e["cat"] == "dma" ? e["args"]["end_cycle"].get<uint64_t>()
                                                 : e["args"]["compute_end_cycle"].get<uint64_t>();
            byThread[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(b, f);
        }
    for (auto& [thread, slices] : byThread) {
        std::sort(slices.begin(), slices.end());
        for (size_t i = 1; i < slices.size(); ++i)
            EXPECT_LE(slices[i - 1].second, slices[i].first)
                << "core " << thread.first << " thread " << thread.second << ": slices overlap";
    }
    bool beside = false;
    for (size_t i = 0; i < tasks.size(); ++i)
        for (size_t j = 0; j < tasks.size(); ++j)
            beside = beside || (tasks[i].core == tasks[j].core && tasks[i].start < tasks[j].start &&
                                tasks[j].start < tasks[i].end);
    EXPECT_TRUE(beside) << "no Task started while the one before it on its core ran";
    EXPECT_EQ(threads[std::make_pair(0, 3)], "core 0 dma store");
}

// A host step (here an Einsum between two NPU Tasks) reads its inputs from the NPU's DRAM and writes
// its output back: the profile records those bytes and phases, and the Chrome trace shows them on
// the host's own threads, named for what they are.
TEST_F(ProfileDbTest, AHostStepsTransfersAreRecordedAndTraced) {
    auto g = std::make_shared<ir::Graph>("hosted");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 2, 6, 6})).value();
    ir::Node* r = g->addNode(ir::OpKind::Relu, "relu", {x}, {"r"}).value();
    ir::Node* e = g->addNode(ir::OpKind::Einsum, "swap", {r->output()}, {"e"},
                             {{"equation", std::string("nchw->nhwc")}}).value();
    ir::Node* n = g->addNode(ir::OpKind::Neg, "neg", {e->output()}, {"y"}).value();
    g->setOutputs({n->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    auto p = backend::lower(g, backend::defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    runtime::Session s(std::move(p.value()));
    auto result = s.run(runtime::generateInputs(*s.program().graph).value());
    ASSERT_TRUE(result.ok()) << result.error().message;
    const std::string db = path("host.db");
    ASSERT_TRUE(profiler::writeProfile(db, s.program(), *result, info()).ok());
    auto reader = profiler::ProfileReader::open(db).value();
    const auto tasks = reader.tasks().value();
    const profiler::TaskRow* host = nullptr;
    for (const profiler::TaskRow& t : tasks)
        if (t.unit == backend::UnitKind::Host)
            host = &t;
    ASSERT_NE(host, nullptr);
    // 72 f32 values in, 72 out (each buffer at least that, aligned).
    EXPECT_GE(host->loadBytes, 288u);
    EXPECT_GE(host->storeBytes, 288u);
    EXPECT_LT(host->loadBytes, 1024u);
    EXPECT_GT(host->loadEnd, host->start);
    EXPECT_EQ(host->computeStart, host->loadEnd);
    EXPECT_GT(host->computeEnd, host->computeStart);
    EXPECT_EQ(host->storeStart, host->computeEnd);
    EXPECT_GT(host->end, host->storeStart);

    auto doc = nlohmann::json::parse(profiler::chromeTraceJson(reader).value());
    std::map<int, std::string> hostThreads;
    std::vector<nlohmann::json> moves;
    for (const auto& ev : doc["traceEvents"]) {
        if (ev["ph"] == "M" && ev["name"] == "thread_name" && ev["pid"] == host->core)
            hostThreads[ev["tid"].get<int>()] = ev["args"]["name"];
        if (ev["ph"] == "X" && ev["cat"] == "dma" && ev["args"]["task"] == host->id)
            moves.push_back(ev);
    }
    ASSERT_EQ(moves.size(), 2u);
    for (const nlohmann::json& m : moves) {
        const bool load = m["name"] == "load";
        EXPECT_EQ(hostThreads[m["tid"].get<int>()], load ? "host reads from DRAM" : "host writes to DRAM");
        EXPECT_EQ(m["args"]["bytes"], load ? host->loadBytes : host->storeBytes);
        EXPECT_EQ(m["args"]["start_cycle"], load ? host->start : host->storeStart);
        EXPECT_EQ(m["args"]["end_cycle"], load ? host->loadEnd : host->end);
    }
}

// The cosine of an output that overflowed is NaN, and a max error may be infinite: they are data,
// kept and read back as such (SQLite would turn a NaN into NULL, which the column refuses).
TEST_F(ProfileDbTest, NanAndInfiniteMetricsAreKept) {
    SimulatedRun run = simulateSmallModel();
    std::string db = path("nan.db");
    profiler::RunInfo i = info();
    i.metrics = {{"cosine", std::nan("")}, {"max_abs", std::numeric_limits<double>::infinity()},
                 {"min", -std::numeric_limits<double>::infinity()}};
    auto id = profiler::writeProfile(db, run.program, run.result, i);
    ASSERT_TRUE(id.ok()) << id.error().message;
    auto reader = profiler::ProfileReader::open(db);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto metrics = reader->metrics(*id);
    ASSERT_TRUE(metrics.ok()) << metrics.error().message;
    std::map<std::string, double> byKey;
    for (const profiler::MetricRow& m : *metrics)
        byKey[m.key] = m.value;
    EXPECT_TRUE(std::isnan(byKey.at("cosine")));
    EXPECT_EQ(byKey.at("max_abs"), std::numeric_limits<double>::infinity());
    EXPECT_EQ(byKey.at("min"), -std::numeric_limits<double>::infinity());
    // Other text where a number belongs is damage, named.
    execOn(db, "UPDATE metrics SET value = 'lots' WHERE rowid = (SELECT max(rowid) FROM metrics)");
    auto damaged = reader->metrics(*id);
    ASSERT_FALSE(damaged.ok());
    EXPECT_NE(damaged.error().message.find("is the text 'lots', not a number"), std::string::npos)
        << damaged.error().message;
}

// A run whose output overflowed (NaN cosine, infinite error) loads, and the comparison treats
// NaN as a value: NaN against a number is a change, NaN against NaN is not.
TEST_F(ProfileDbTest, NanMetricsLoadAndCompareAsValues) {
    SimulatedRun run = simulateSmallModel();
    const std::string db = path("nan-compare.db");
    const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
    profiler::RunInfo a = info();
    a.metrics = {{"cosine:y", 0.99}, {"cosine:z", nan}, {"max_abs:y", inf}};
    profiler::RunInfo b = info();
    b.metrics = {{"cosine:y", nan}, {"cosine:z", nan}, {"max_abs:y", inf}, {"cosine:w", -inf}};
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, a).ok());
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, b).ok());
    auto ra = profiler::loadRun(db, 1);
    auto rb = profiler::loadRun(db, 2);
    ASSERT_TRUE(ra.ok()) << ra.error().message;
    ASSERT_TRUE(rb.ok()) << rb.error().message;
    EXPECT_TRUE(std::isnan(ra->metric("cosine:z")));
    const profiler::RunComparison c = profiler::compareRuns(*ra, *rb);
    std::map<std::string, const profiler::MetricDelta*> byKey;
    for (const profiler::MetricDelta& d : c.metrics)
        byKey[d.key] = &d;
    ASSERT_EQ(byKey.size(), 4u) << profiler::formatRunComparison(c);
    EXPECT_TRUE(byKey.at("cosine:y")->changed());
    EXPECT_FALSE(byKey.at("cosine:z")->changed());
    EXPECT_FALSE(byKey.at("max_abs:y")->changed());
    EXPECT_TRUE(byKey.at("cosine:w")->changed()); // only B has it
    const std::string text = profiler::formatRunComparison(c);
    EXPECT_NE(text.find("  cosine:y: 0.99 -> nan (changed)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  cosine:z: nan -> nan (same)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  max_abs:y: inf -> inf (same)\n"), std::string::npos) << text;
    EXPECT_NE(text.find("  cosine:w: - -> -inf (changed)\n"), std::string::npos) << text;
    EXPECT_EQ(profiler::metricText(nan), "nan");
    EXPECT_EQ(profiler::metricText(-inf), "-inf");
    EXPECT_EQ(profiler::metricText(0.5), "0.5");
}

// A database the version 2 writer wrote (tests/data/profile-v2) still opens, and the export,
// which streams row by row, writes the bytes of residual_cnn.trace.json for it (the whole-document
// export's, with the stores on the store thread each core has had since Tasks overlap).
TEST_F(ProfileDbTest, VersionTwoDatabaseStillReads) {
    const fs::path data = fs::path(SEXTANT_SOURCE_DIR) / "tests/data/profile-v2";
    const std::string db = path("residual_cnn.db");
    fs::copy_file(data / "residual_cnn.db", db); // a WAL database: even a reader writes beside it
    auto reader = profiler::ProfileReader::open(db);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    EXPECT_EQ(reader->schemaVersion(), 2);
    auto runs = reader->runs();
    ASSERT_TRUE(runs.ok() && runs->size() == 1);
    EXPECT_EQ(runs->front().model, "samples/residual_cnn.onnx");
    auto tasks = reader->tasks();
    ASSERT_TRUE(tasks.ok()) << tasks.error().message;
    EXPECT_EQ(tasks->size(), 36u);
    auto run = profiler::loadRun(db);
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->metric("total_cycles"), 6481.0);

    const std::string out = path("trace.json");
    ASSERT_TRUE(profiler::exportChromeTrace(db, out).ok());
    std::ifstream got(out, std::ios::binary), want(data / "residual_cnn.trace.json", std::ios::binary);
    const std::string g((std::istreambuf_iterator<char>(got)), {});
    const std::string w((std::istreambuf_iterator<char>(want)), {});
    EXPECT_EQ(g.size(), w.size());
    EXPECT_TRUE(g == w) << "the export no longer writes the bytes it wrote for this database";

    // A run the file does not hold: an error, and no half-written file.
    const std::string none = path("none.json");
    auto missing = profiler::exportChromeTrace(db, none, 9);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("no run 9"), std::string::npos) << missing.error().message;
    EXPECT_FALSE(fs::exists(none));
}

// Issue 20 item 3: a damaged or edited database is an error naming the file, the table and the
// row, never a read that quietly gives other numbers.
namespace {

std::string readBytes(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
}

void writeBytes(const std::string& file, const std::string& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

/// The root page of table or index `name` and the page size, read with SQLite itself.
std::pair<int64_t, int64_t> rootPage(const std::string& db, const std::string& name) {
    sqlite3* h = nullptr;
    EXPECT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    int64_t root = 0, pageSize = 0;
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(h, ("SELECT rootpage FROM sqlite_master WHERE name = '" + name + "'").c_str(), -1, &q,
                       nullptr);
    if (sqlite3_step(q) == SQLITE_ROW)
        root = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_prepare_v2(h, "PRAGMA page_size", -1, &q, nullptr);
    if (sqlite3_step(q) == SQLITE_ROW)
        pageSize = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    return {root, pageSize};
}

/// The Tasks of the newest run, read back completely, or the error.
std::string readAll(const std::string& db) {
    auto reader = profiler::ProfileReader::open(db);
    if (!reader.ok())
        return reader.error().message;
    std::string error;
    auto check = [&](const auto& result) {
        if (error.empty() && !result.ok())
            error = result.error().message;
    };
    check(reader->runs());
    check(reader->nodes());
    check(reader->tasks());
    check(reader->deps());
    check(reader->buffers());
    check(reader->metrics());
    check(reader->sramBuffers());
    check(reader->sramOccupancy());
    return error.empty() ? "read" : error;
}

} // namespace

TEST_F(ProfileDbTest, AByteFlippedPageIsDamageNamedNotOtherNumbers) {
    SimulatedRun run = simulateSample();
    const std::string db = path("flip.db");
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, info()).ok());
    ASSERT_EQ(readAll(db), "read");
    const std::string good = readBytes(db);

    // The tasks table's root page with its page-type byte flipped: quick_check finds it.
    const auto [root, pageSize] = rootPage(db, "tasks");
    ASSERT_GT(root, 1);
    std::string bytes = good;
    bytes[static_cast<size_t>((root - 1) * pageSize)] ^= 0x5a;
    writeBytes(db, bytes);
    auto flipped = profiler::ProfileReader::open(db);
    ASSERT_FALSE(flipped.ok());
    EXPECT_NE(flipped.error().message.find("profile '" + db + "' is damaged: SQLite's quick_check reports"),
              std::string::npos)
        << flipped.error().message;
    // Nor does a run go into it.
    auto append = profiler::writeProfile(db, run.program, run.result, info());
    ASSERT_FALSE(append.ok());
    EXPECT_NE(append.error().message.find("is damaged"), std::string::npos) << append.error().message;
    EXPECT_NE(append.error().message.find("the run was not saved"), std::string::npos);
    EXPECT_EQ(readBytes(db), bytes) << "a refused write changed the file";

    // One index entry whose run was flipped from 1 to 0 (its serial type 9, "the integer 1",
    // becomes 8, "the integer 0"): the b-trees are sound, so quick_check passes, but the Task is
    // gone from run 1 when read through the index. That is how 888 Tasks read as 876; the count
    // the run recorded names it, and integrity_check (the writer's) refuses the file.
    const auto [index, size] = rootPage(db, "tasks_by_lane");
    bytes = good;
    const size_t page = static_cast<size_t>((index - 1) * size);
    ASSERT_EQ(static_cast<unsigned char>(bytes[page]), 0x0a) << "the index is not one leaf page";
    const size_t cell = page + ((static_cast<unsigned char>(bytes[page + 8]) << 8) |
                                static_cast<unsigned char>(bytes[page + 9]));
    ASSERT_EQ(bytes[cell + 2], 9) << "the first index entry's run is not stored as the integer 1";
    bytes[cell + 2] = 8;
    writeBytes(db, bytes);
    const std::string lost = readAll(db);
    EXPECT_NE(lost.find("run 1 recorded " + std::to_string(run.program.tasks.size()) +
                        " Tasks (metric num_tasks) but table tasks holds " +
                        std::to_string(run.program.tasks.size() - 1)),
              std::string::npos)
        << lost;
    auto onto = profiler::writeProfile(db, run.program, run.result, info());
    ASSERT_FALSE(onto.ok());
    EXPECT_NE(onto.error().message.find("SQLite's integrity_check reports"), std::string::npos)
        << onto.error().message;
    EXPECT_EQ(readBytes(db), bytes) << "a refused write changed the file";
}

TEST_F(ProfileDbTest, EditedRowsAreErrorsNamingTableAndRow) {
    SimulatedRun run = simulateSmallModel();
    const std::string good = path("good.db");
    ASSERT_TRUE(profiler::writeProfile(good, run.program, run.result, info()).ok());
    ASSERT_EQ(readAll(good), "read");
    ASSERT_GE(run.program.tasks.size(), 3u);
    auto edited = [&](const std::string& name, const std::string& sql) {
        const std::string db = path(name);
        fs::copy_file(good, db);
        execOn(db, sql);
        return readAll(db);
    };
    auto rowOf = [&](const std::string& table, const std::string& where) {
        return "table " + table + ", row " + where;
    };
    // Text in an integer column: an error, not a Task starting at cycle 0.
    std::string e = edited("text.db", "UPDATE tasks SET start = 'soon' WHERE id = 1");
    EXPECT_NE(e.find(rowOf("tasks", "")), std::string::npos) << e;
    EXPECT_NE(e.find("Task 1 of run 1: column 'start' holds the text 'soon', not an integer"), std::string::npos) << e;
    e = edited("real.db", "UPDATE deps SET event = 1.5 WHERE rowid = 1");
    EXPECT_NE(e.find("table deps, row 1: a dependency of run 1: column 'event' holds the real 1.5"),
              std::string::npos)
        << e;
    // A text column that names no string.
    e = edited("string.db", "UPDATE tasks SET kernel = 99999 WHERE id = 2");
    EXPECT_NE(e.find("Task 2 of run 1: column 'kernel' holds the integer 99999, which is not the id of a row of "
                     "table strings"),
              std::string::npos)
        << e;
    // A dependency on a Task the run does not have.
    e = edited("dangling.db", "UPDATE deps SET src = 999 WHERE rowid = 1");
    EXPECT_NE(e.find("table deps, row 1: a dependency of run 1 names Task 999 (src), which run 1 does not have"),
              std::string::npos)
        << e;
    // Two Tasks with one id.
    e = edited("duplicate.db", "UPDATE tasks SET id = 0 WHERE id = 1");
    EXPECT_NE(e.find("run 1 has a second Task with id 0 (the first is row "), std::string::npos) << e;
    EXPECT_EQ(e.rfind("profile database '" + path("duplicate.db") + "': table tasks, row ", 0), 0u) << e;
    // A Task moved to another run: run 1 has fewer Tasks than it recorded.
    e = edited("moved.db", "UPDATE tasks SET run = 5 WHERE id = 2");
    EXPECT_NE(e.find("run 1 recorded " + std::to_string(run.program.tasks.size()) + " Tasks"), std::string::npos)
        << e;
    // A value that is still a valid value (a Task ending 7 cycles later: busy cycles off by 7):
    // only the checksum written with the run can tell.
    e = edited("later.db", "UPDATE tasks SET \"end\" = \"end\" + 7, store_start = store_start + 7 WHERE id = 0");
    EXPECT_NE(e.find("table checksums, row 1: run 1's Tasks do not match the checksum written with them"),
              std::string::npos)
        << e;
    // A buffer whose lifetime names a Task that does not exist.
    e = edited("buffer.db", "UPDATE buffers SET last_task = 4242 WHERE rowid = 1");
    EXPECT_NE(e.find("table buffers, row 1: a buffer of run 1: column 'last_task' names Task 4242"),
              std::string::npos)
        << e;
    // A column of the wrong declared type, or missing: the schema is not the one this build reads.
    e = edited("schema.db", "ALTER TABLE deps RENAME COLUMN event TO evt");
    EXPECT_NE(e.find("table deps has no column 'event'"), std::string::npos) << e;
    e = edited("type.db", "DROP TABLE sram_usage; CREATE TABLE sram_usage(run INTEGER, core INTEGER, "
                          "cycle TEXT, bytes INTEGER)");
    EXPECT_NE(e.find("column 'cycle' of table sram_usage is declared 'TEXT', not INTEGER"), std::string::npos) << e;
}

// compare-runs said "holds 0 run" of a database holding 3 whose strings were gone: the runs are
// there, what they name is not, and that is what the error says.
TEST_F(ProfileDbTest, RunsNamingMissingStringsAreAnErrorNotNoRuns) {
    SimulatedRun run = simulateSmallModel();
    const std::string db = path("nostrings.db");
    for (int i = 0; i < 3; ++i)
        ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, info()).ok());
    execOn(db, "DELETE FROM strings");
    auto reader = profiler::ProfileReader::open(db);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto runs = reader->runs();
    ASSERT_FALSE(runs.ok());
    EXPECT_NE(runs.error().message.find("table runs, row 1: run 1: column 'model' holds the integer "),
              std::string::npos)
        << runs.error().message;
    EXPECT_NE(runs.error().message.find("which is not the id of a row of table strings"), std::string::npos);
    EXPECT_FALSE(profiler::loadRun(db).ok());
}

// The writer appends only to its own kind of file: another program's SQLite database is refused
// untouched (its tables and its journal mode), an empty file takes a run.
TEST_F(ProfileDbTest, TheWriterRefusesAnotherProgramsDatabase) {
    SimulatedRun run = simulateSmallModel();
    const std::string other = path("photos.db");
    execOn(other, "CREATE TABLE photos(id INTEGER PRIMARY KEY, path TEXT); INSERT INTO photos(path) VALUES('a.jpg')");
    const std::string before = readBytes(other);
    auto w = profiler::writeProfile(other, run.program, run.result, info());
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.error().message.find("'" + other + "' is not a profile database (no schema_version table; it "
                                                   "holds table photos)"),
              std::string::npos)
        << w.error().message;
    EXPECT_NE(w.error().message.find("the run was not saved"), std::string::npos);
    EXPECT_EQ(readBytes(other), before);
    EXPECT_FALSE(fs::exists(other + "-wal"));

    const std::string empty = path("empty.db");
    writeBytes(empty, "");
    auto fresh = profiler::writeProfile(empty, run.program, run.result, info());
    ASSERT_TRUE(fresh.ok()) << fresh.error().message;
    EXPECT_EQ(readAll(empty), "read");
}

// Another connection holding the write lock: the writer waits (telling its caller), gives up
// after the bound with an error saying the run was not saved, and the file keeps every run.
TEST_F(ProfileDbTest, ALockedDatabaseIsWaitedForThenRefusedClearly) {
    SimulatedRun run = simulateSmallModel();
    const std::string db = path("locked.db");
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, info()).ok());
    sqlite3* holder = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(holder, "BEGIN IMMEDIATE; INSERT INTO strings(text) VALUES('held')", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    profiler::WriteOptions options;
    options.lockTimeoutMs = 300;
    std::vector<std::string> told;
    options.onWait = [&](const std::string& m) { told.push_back(m); };
    auto blocked = profiler::writeProfile(db, run.program, run.result, info(), options);
    ASSERT_FALSE(blocked.ok());
    EXPECT_NE(blocked.error().message.find("it stayed locked by another process for 0.3 s; the run was not saved"),
              std::string::npos)
        << blocked.error().message;
    ASSERT_FALSE(told.empty());
    EXPECT_EQ(told.front(), "waiting for '" + db + "': locked by another process (0 s of at most 0.3 s)...");

    ASSERT_EQ(sqlite3_exec(holder, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(holder);
    auto second = profiler::writeProfile(db, run.program, run.result, info(), options);
    ASSERT_TRUE(second.ok()) << second.error().message;
    EXPECT_EQ(*second, 2);
    auto reader = profiler::ProfileReader::open(db).value();
    EXPECT_EQ(reader.runs()->size(), 2u);
    EXPECT_EQ(reader.tasks(1)->size(), run.program.tasks.size());
}

// Found by profile_fuzzer (tests/fuzz-corpus/profile/invalid_utf8_string.db): a name that is not
// UTF-8 made the Chrome trace export throw out of nlohmann::json and abort. It is written as
// U+FFFD now.
TEST_F(ProfileDbTest, ANameThatIsNotUtf8ExportsAsAReplacementCharacter) {
    SimulatedRun run = simulateSmallModel();
    const std::string db = path("utf8.db");
    ASSERT_TRUE(profiler::writeProfile(db, run.program, run.result, info()).ok());
    // The edit changes a Task's name, which the run's checksum notices: without it, as in a file
    // written before checksums were, the name reads as it is.
    execOn(db, "UPDATE strings SET text = CAST(x'6e6f74ff7574662d38' AS TEXT) WHERE id = "
               "(SELECT name FROM tasks WHERE id = 0); DELETE FROM checksums");
    auto reader = profiler::ProfileReader::open(db).value();
    auto trace = profiler::chromeTraceJson(reader);
    ASSERT_TRUE(trace.ok()) << trace.error().message;
    EXPECT_NE(trace->find("not\xEF\xBF\xBDutf-8"), std::string::npos);
}
