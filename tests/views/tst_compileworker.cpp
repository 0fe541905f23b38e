// The GUI's walk (import → passes → lower → simulate → profile → layout), synchronously and on
// the worker thread, on the sample model and (when ../shared exists) on mnist.
#include "views/CompileWorker.h"

#include "profiler/ProfileReader.h"
#include "profiler/RunCompare.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <filesystem>

using namespace sextant;
using namespace sextant::views;

namespace {

const char* kSample = SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx";

bool logHas(const CompileSnapshot& s, const std::string& needle) {
    return std::any_of(s.log.begin(), s.log.end(), [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

} // namespace

class TestCompileWorker : public QObject {
    Q_OBJECT
private slots:
    void sampleGoesTheWholeWay() {
        QTemporaryDir dir;
        CompileRequest req;
        req.modelPath = kSample;
        req.profilePath = dir.filePath("run.db").toStdString();
        std::vector<int> percents;
        // The log lines come as the stages end, and the pipeline before lowering.
        std::vector<std::string> streamed;
        std::shared_ptr<const CompileSnapshot> early;
        CompileEvents events;
        events.log = [&](const std::string& line) { streamed.push_back(line); };
        events.pipeline = [&](std::shared_ptr<const CompileSnapshot> e) {
            // before lowering: nothing says it was compiled yet
            QVERIFY(std::none_of(streamed.begin(), streamed.end(),
                                 [](const std::string& l) { return l.find("compiled for") != std::string::npos; }));
            early = std::move(e);
        };
        auto result = compileModel(req, nullptr, [&](int p, const std::string&) { percents.push_back(p); }, events);
        QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
        const CompileSnapshot& s = **result;
        QVERIFY(s.pipeline.snapshots.size() >= 2);
        QCOMPARE(streamed.size(), s.log.size());
        for (size_t i = 0; i < s.log.size(); ++i)
            QVERIFY2(streamed[i].find(s.log[i]) != std::string::npos, streamed[i].c_str());
        QVERIFY(logHas(s, "lowering for npu-a"));
        QCOMPARE(std::count_if(s.log.begin(), s.log.end(), [](const std::string& l) { return l.rfind("pass ", 0) == 0; }),
                 static_cast<long>(s.pipeline.snapshots.size() - 1)); // one line per pass
        QVERIFY(early);
        QVERIFY(early->program.tasks.empty());
        QVERIFY(!early->loweringError.empty());
        QCOMPARE(early->pipeline.snapshots.size(), s.pipeline.snapshots.size());
        QCOMPARE(early->pipeline.snapshots.back().state, s.pipeline.snapshots.back().state);
        // The timeline is what the database holds: one item per Task of the Program.
        QCOMPARE(s.timeline.tasks().size(), s.program.tasks.size());
        QVERIFY(s.timeline.totalCycles() > 0);
        QCOMPARE(s.timeline.totalCycles(), s.sim.totalCycles);
        QVERIFY(std::filesystem::exists(req.profilePath));
        QVERIFY(!s.memory.blocks.empty());
        for (const MemoryBlock& b : s.memory.blocks)
            QVERIFY(b.t0 <= b.t1 && b.t1 <= s.sim.totalCycles);
        // Progress only goes forward and ends at 100.
        QVERIFY(!percents.empty());
        QVERIFY(std::is_sorted(percents.begin(), percents.end()));
        QCOMPARE(percents.back(), 100);
        QVERIFY(logHas(s, "PASS"));
        QVERIFY(logHas(s, "simulated latency"));
        // Accuracy tab: every tensor the NPU computed, compared; the intermediates are not kept.
        QVERIFY(s.accuracy.values.size() >= 5);
        QCOMPARE(s.accuracy.values.size(), s.accuracy.nodes.size());
        QCOMPARE(s.accuracy.firstFailing, -1);
        QVERIFY(s.sim.values.empty());
        QVERIFY(logHas(s, "per tensor: "));
    }

    // The timeline, the memory map and the Runs tab are built from the run itself; the database
    // keeps the same run. Reading it back must give exactly what the views show: the same Task
    // rows in the same order with the same names, lanes and metrics.
    void viewsShowWhatTheDatabaseKeeps() {
        QTemporaryDir dir;
        CompileRequest req;
        req.modelPath = kSample;
        req.profilePath = dir.filePath("run.db").toStdString();
        auto result = compileModel(req);
        QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
        const CompileSnapshot& s = **result;
        QVERIFY(s.profileError.empty());
        auto reader = profiler::ProfileReader::open(req.profilePath);
        QVERIFY2(reader.ok(), reader.ok() ? "" : reader.error().message.c_str());
        auto rows = reader->tasks();
        QVERIFY(rows.ok());
        const std::vector<TimelineTask> kept = timelineTasks(*rows);
        const std::vector<TimelineTask>& shown = s.timeline.tasks();
        QCOMPARE(shown.size(), kept.size());
        QVERIFY(shown.size() > 8);
        for (size_t i = 0; i < shown.size(); ++i) {
            QCOMPARE(shown[i].task, kept[i].task);
            QCOMPARE(shown[i].name, kept[i].name);
            QCOMPARE(shown[i].kernel, kept[i].kernel);
            QCOMPARE(shown[i].core, kept[i].core);
            QCOMPARE(shown[i].unit, kept[i].unit);
            QCOMPARE(shown[i].ready, kept[i].ready);
            QCOMPARE(shown[i].start, kept[i].start);
            QCOMPARE(shown[i].end, kept[i].end);
            QCOMPARE(shown[i].nodes, kept[i].nodes);
        }
        TimelineModel fromDb;
        fromDb.setTasks(kept, s.program.target.numCores);
        QCOMPARE(s.timeline.lanes().size(), fromDb.lanes().size());
        for (size_t i = 0; i < fromDb.lanes().size(); ++i) {
            QCOMPARE(s.timeline.lanes()[i].label, fromDb.lanes()[i].label);
            QCOMPARE(s.timeline.lanes()[i].items, fromDb.lanes()[i].items);
        }
        // The Runs tab's run of this compile is the one loadRun reads back.
        auto loaded = profiler::loadRun(req.profilePath);
        QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
        QCOMPARE(s.run.db, req.profilePath);
        QCOMPARE(s.run.label(), loaded->label());
        QCOMPARE(s.run.run.id, loaded->run.id);
        QCOMPARE(s.run.run.model, loaded->run.model);
        QCOMPARE(s.run.run.pipeline, loaded->run.pipeline);
        QCOMPARE(s.run.run.created, loaded->run.created);
        QCOMPARE(s.run.tasks.size(), loaded->tasks.size());
        QCOMPARE(s.run.metrics.size(), loaded->metrics.size());
        for (size_t i = 0; i < s.run.metrics.size(); ++i) {
            QCOMPARE(s.run.metrics[i].key, loaded->metrics[i].key);
            QCOMPARE(s.run.metrics[i].value, loaded->metrics[i].value);
        }
        QVERIFY(s.run.metric("cosine:probs", -1.0) > 0.99);
    }

    // Keeping the run is the last step: a database that cannot be written costs the file, not
    // the results.
    void unwritableProfileHidesNoResults() {
        QTemporaryDir dir;
        CompileRequest req;
        req.modelPath = kSample;
        req.profilePath = dir.filePath("no-such-folder/run.db").toStdString();
        auto result = compileModel(req);
        QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
        const CompileSnapshot& s = **result;
        QVERIFY(!s.profileError.empty());
        QVERIFY(logHas(s, "profile: not kept: "));
        QCOMPARE(s.timeline.tasks().size(), s.program.tasks.size());
        QVERIFY(!s.memory.blocks.empty());
        QCOMPARE(s.run.tasks.size(), s.program.tasks.size());
        QVERIFY(s.accuracy.values.size() >= 5);
    }

    // File > Compare with float model: the Accuracy tab's second comparison. The sample against
    // itself matches every tensor by name with cosine 1; a float model that cannot be read is
    // logged and leaves the rest of the run as it was.
    void aFloatModelIsComparedByNameOrSaysWhyNot() {
        CompileRequest req;
        req.modelPath = kSample;
        req.floatModelPath = kSample;
        auto same = compileModel(req);
        QVERIFY2(same.ok(), same.ok() ? "" : same.error().message.c_str());
        const CompileSnapshot& s = **same;
        QVERIFY(s.floatAccuracy.has_value());
        QVERIFY(s.floatAccuracy->values.size() >= 5);
        for (const runtime::TensorComparison& c : s.floatAccuracy->values)
            QVERIFY2(c.problem.empty() && c.maxAbs == 0.0, c.name.c_str());
        QVERIFY(s.floatModelError.empty());
        QVERIFY2(logHas(s, "tensors matched by name"), "no float model line in the log");

        req.floatModelPath = "/nonexistent/float.onnx";
        auto missing = compileModel(req);
        QVERIFY2(missing.ok(), missing.ok() ? "" : missing.error().message.c_str());
        QVERIFY(!(*missing)->floatAccuracy.has_value());
        QVERIFY2((*missing)->floatModelError.find("/nonexistent/float.onnx") != std::string::npos,
                 (*missing)->floatModelError.c_str());
        QVERIFY((*missing)->accuracy.values.size() >= 5);
        QVERIFY(logHas(**missing, "not compared"));
    }

    void mnistMatchesTheReference() {
        const std::string model = SEXTANT_SHARED_DIR "/models/ort-examples/mnist.onnx";
        if (!std::filesystem::exists(model))
            QSKIP("../shared not found: skipping the mnist GUI walk");
        QTemporaryDir dir;
        CompileRequest req;
        req.modelPath = model;
        req.profilePath = dir.filePath("mnist.db").toStdString();
        auto result = compileModel(req);
        QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
        QVERIFY((*result)->inputsSource.find("test_data_set_0") != std::string::npos);
        QVERIFY2(logHas(**result, "argmax 7/7"), "mnist's simulated argmax is not 7");
    }

    // PaddleOCR's models have symbolic input dims. The GUI compiles them at the shapes of the test
    // inputs next to the model, or at shapes the user gives; with neither it says what to do.
    void symbolicInputsTakeTheTestDataShapes() {
        const std::string cls = SEXTANT_SHARED_DIR "/models/paddleocr/ch_ppocr_mobile_v2.0_cls_infer.onnx";
        if (!std::filesystem::exists(cls))
            QSKIP("../shared not found: skipping the symbolic-input GUI walk");
        QTemporaryDir dir;
        CompileRequest req;
        req.modelPath = cls;
        req.profilePath = dir.filePath("cls.db").toStdString();
        auto fromTestData = compileModel(req);
        QVERIFY2(fromTestData.ok(), fromTestData.ok() ? "" : fromTestData.error().message.c_str());
        const ir::InputShapes expected{{"x", {1, 3, 48, 192}}};
        QVERIFY((*fromTestData)->inputShapes == expected);
        QVERIFY(logHas(**fromTestData, "input shapes from the test data"));
        QVERIFY((*fromTestData)->inputsSource.find("test_data_set_0") != std::string::npos);
        QVERIFY2(logHas(**fromTestData, "npu vs float64 reference"), "no accuracy line");

        // Shapes the user gives win; the test data no longer fits, so the inputs are generated.
        req.shapes = {{"x", {1, 3, 48, 96}}};
        req.profilePath = dir.filePath("cls96.db").toStdString();
        auto given = compileModel(req);
        QVERIFY2(given.ok(), given.ok() ? "" : given.error().message.c_str());
        QCOMPARE((*given)->program.graph->inputs()[0]->type().dims(), (std::vector<int64_t>{1, 3, 48, 96}));
        QVERIFY(logHas(**given, "input shapes given: x=1x3x48x96"));
        QVERIFY((*given)->inputsSource.find("other input shapes") != std::string::npos);

        // A bad shape is an error naming the input, not a crash.
        req.shapes = {{"x", {1, 3, 48}}};
        auto bad = compileModel(req);
        QVERIFY(!bad.ok());
        QVERIFY2(bad.error().message.find("input 'x' has rank 4") != std::string::npos, bad.error().message.c_str());

        // Without test data and without shapes: the error says how to give them.
        const QString alone = dir.filePath("alone.onnx");
        QVERIFY(QFile::copy(QString::fromStdString(cls), alone));
        req.modelPath = alone.toStdString();
        req.shapes.clear();
        auto none = compileModel(req);
        QVERIFY(!none.ok());
        QVERIFY2(none.error().message.find("symbolic dims") != std::string::npos, none.error().message.c_str());
        QVERIFY2(none.error().message.find("Input shapes") != std::string::npos, none.error().message.c_str());
    }

    // silero-vad: its sample rate decides an If, bound to the test data's value, so the branch it
    // takes runs on the NPU and its LSTMs on the host, on a lane of their own in the timeline.
    void modelWithHostStepsShowsThemOnTheHostLane() {
        const std::string silero = SEXTANT_SHARED_DIR "/models/silero-vad/silero_vad_legacy.onnx";
        if (!std::filesystem::exists(silero))
            QSKIP("../shared not found: skipping the host-steps GUI walk");
        QTemporaryDir dir;
        CompileRequest req;
        req.modelPath = silero;
        req.profilePath = dir.filePath("silero.db").toStdString();
        auto result = compileModel(req);
        QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
        const CompileSnapshot& s = **result;
        QVERIFY2(s.loweringError.empty(), s.loweringError.c_str());
        QVERIFY(s.pipeline.snapshots.size() >= 2);
        int host = 0, npu = 0;
        for (const TimelineTask& t : s.timeline.tasks()) {
            if (t.unit == backend::UnitKind::Host) {
                ++host;
                QCOMPARE(t.core, backend::hostLane(s.program.target));
                QCOMPARE(t.kernel, std::string("LSTM"));
            } else {
                ++npu;
            }
        }
        QVERIFY(host >= 1);
        QVERIFY(npu >= 10);
        const auto& lanes = s.timeline.lanes();
        QVERIFY(std::any_of(lanes.begin(), lanes.end(), [](const TimelineLane& l) { return l.label == "host"; }));
        QCOMPARE(s.program.inputGuards.size(), size_t(1));
    }

    void presetCancelStops() {
        QTemporaryDir dir;
        CompileRequest req;
        req.modelPath = kSample;
        req.profilePath = dir.filePath("run.db").toStdString();
        std::atomic<bool> cancel{true};
        auto result = compileModel(req, &cancel);
        QVERIFY(!result.ok());
        QCOMPARE(result.error().kind, ErrorKind::Cancelled);
    }

    void missingModelIsAnError() {
        QTemporaryDir dir;
        CompileRequest req;
        req.modelPath = dir.filePath("nope.onnx").toStdString();
        req.profilePath = dir.filePath("run.db").toStdString();
        auto result = compileModel(req);
        QVERIFY(!result.ok());
        QVERIFY2(result.error().message.find("nope.onnx") != std::string::npos, result.error().message.c_str());
    }

    void workerReportsOnTheGuiThread() {
        CompileWorker worker;
        QSignalSpy finished(&worker, &CompileWorker::finished);
        QSignalSpy failed(&worker, &CompileWorker::failed);
        QSignalSpy progress(&worker, &CompileWorker::progress);
        CompileRequest req;
        req.modelPath = kSample;
        worker.start(req);
        QVERIFY(worker.isRunning());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() > 0, 180000);
        QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
        QVERIFY(progress.count() > 0);
        auto snap = finished.first().first().value<std::shared_ptr<const CompileSnapshot>>();
        QVERIFY(snap);
        QVERIFY(!snap->profilePath.empty());
        QVERIFY(std::filesystem::exists(snap->profilePath)); // in the worker's temp folder
    }

    void startingAgainSupersedesTheRunningCompile() {
        const std::string mnist = SEXTANT_SHARED_DIR "/models/ort-examples/mnist.onnx";
        if (!std::filesystem::exists(mnist))
            QSKIP("../shared not found: skipping the superseding compile test");
        CompileWorker worker;
        QSignalSpy finished(&worker, &CompileWorker::finished);
        QSignalSpy failed(&worker, &CompileWorker::failed);
        QSignalSpy cancelled(&worker, &CompileWorker::cancelled);
        CompileRequest first;
        first.modelPath = kSample;
        CompileRequest second;
        second.modelPath = mnist;
        worker.start(first);
        worker.start(second); // the user opened another model before the first finished
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() > 0, 180000);
        QTest::qWait(50);
        QCOMPARE(failed.count(), 0);
        QCOMPARE(cancelled.count(), 0); // the superseded run is dropped silently
        QCOMPARE(finished.count(), 1);
        auto snap = finished.first().first().value<std::shared_ptr<const CompileSnapshot>>();
        QCOMPARE(snap->modelPath, mnist); // only the latest request reaches the views
        QVERIFY(!worker.isRunning());
    }

    void badModelFailsThroughTheWorker() {
        QTemporaryDir dir;
        const QString path = dir.filePath("garbage.onnx");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not a protobuf \x01\x02\x03 at all");
        f.close();
        CompileWorker worker;
        QSignalSpy finished(&worker, &CompileWorker::finished);
        QSignalSpy failed(&worker, &CompileWorker::failed);
        CompileRequest req;
        req.modelPath = path.toStdString();
        worker.start(req);
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() + failed.count() > 0, 60000);
        QCOMPARE(failed.count(), 1);
        const QString error = failed.first().first().toString();
        QVERIFY(!error.isEmpty());
        QVERIFY(!error.contains('\n')); // one line
    }
};

QTEST_GUILESS_MAIN(TestCompileWorker)
#include "tst_compileworker.moc"
