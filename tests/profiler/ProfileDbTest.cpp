// Profile database: a simulated run written to SQLite reads back exactly, several runs share a
// file, bad files give clear errors, and the Chrome trace export is well-formed and deterministic.
#include "profiler/ProfileDb.h"
#include "core/backend/Lower.h"
#include "core/runtime/InputGenerator.h"
#include "core/runtime/Session.h"
#include "profiler/ChromeTrace.h"
#include "profiler/ProfileReader.h"
#include "profiler/RunCompare.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <fstream>

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
    for (auto& r : slower.trace) {
        r.start += 1000;
        r.end += 1000;
    }
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
            ++complete;
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
    EXPECT_GT(single.result.totalCycles, eight.result.totalCycles); // the two convolutions queue up
    EXPECT_NE(c.summary[0].find("(+"), std::string::npos) << c.summary[0]; // slower, and it says so
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
