// Smoke test of the whole window on the sample: it compiles off the GUI thread, every tab gets
// data, and selection flows between the timeline, the graph and the inspector.
#include "MainWindow.h"
#include "core/backend/Artifact.h"
#include "views/DiffView.h"
#include "views/GraphLayoutWorker.h"
#include "views/GraphPage.h"
#include "views/GraphView.h"
#include "views/InspectorWidget.h"
#include "views/MemoryView.h"
#include "views/PassListModel.h"
#include "views/RunsView.h"
#include "views/SelectionModel.h"
#include "views/SramView.h"
#include "views/TargetDialog.h"
#include "views/TimelineView.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <set>

using sextant::app::MainWindow;

class TestMainWindow : public QObject {
    Q_OBJECT
private:
    static bool compile(MainWindow& w, const QString& path) {
        QSignalSpy done(&w, &MainWindow::compileFinished);
        QSignalSpy failed(&w, &MainWindow::compileFailed);
        w.openModel(path);
        return QTest::qWaitFor([&] { return done.count() + failed.count() > 0; }, 180000) && failed.isEmpty();
    }

private slots:
    void opensTheSample() {
        MainWindow w;
        w.setQuietErrors(true);
        w.resize(1400, 900);
        w.show();
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        QVERIFY(w.lastError().isEmpty());
        auto snap = w.snapshot();
        QVERIFY(snap);

        // Pass list: input first, final pass selected, graph shows the final layout.
        QVERIFY(w.passModel()->rowCount() >= 2);
        QCOMPARE(w.passModel()->index(0, 0).data().toString(), QStringLiteral("input"));
        QCOMPARE(w.currentPass(), w.passModel()->rowCount() - 1);
        // The graph is laid out when shown; the sample is small, so it shows every node at once.
        QVERIFY(QTest::qWaitFor([&] { return w.graphView()->graphLayout() != nullptr; }, 60000));
        std::shared_ptr<const sextant::ir::Graph> finalGraph = snap->pipeline.snapshots.back().graph();
        for (const sextant::ir::Node* n : finalGraph->nodes())
            QVERIFY2(w.graphView()->graphLayout()->findNode(n->name()) >= 0, n->name().c_str());
        QVERIFY(!w.graphPage()->layoutWorker()->preparedGraph(*snap, w.currentPass())->hierarchy.collapsed());

        // Choosing the pass that fused shows a diff with additions and removals.
        int changed = -1;
        for (int i = 1; i < w.passModel()->rowCount(); ++i)
            if (w.passModel()->rows()[static_cast<size_t>(i)].changed)
                changed = i;
        QVERIFY(changed > 0);
        w.selectPass(changed);
        QVERIFY(w.diffView()->addedLines() > 0 || w.diffView()->removedLines() > 0);
        QVERIFY(QTest::qWaitFor([&] { return !w.graphPage()->layoutPending(); }, 60000));
        QVERIFY(w.graphView()->graphLayout());
        std::shared_ptr<const sextant::ir::Graph> changedGraph = snap->pipeline.snapshots[static_cast<size_t>(changed)].graph();
        QCOMPARE(w.graphView()->graphLayout()->nodes.size(),
                 changedGraph->inputs().size() + changedGraph->nodes().size() + changedGraph->outputs().size());

        // Timeline → graph: clicking a Task selects its node and shows the final graph.
        QVERIFY(w.showTab("timeline"));
        QApplication::processEvents();
        auto* tl = w.timelineView();
        QVERIFY(tl->model() && !tl->model()->tasks().empty());
        int taskIndex = -1;
        for (int i = 0; i < static_cast<int>(tl->model()->tasks().size()); ++i)
            if (!tl->model()->tasks()[static_cast<size_t>(i)].nodes.empty() && tl->taskRect(i).width() >= 4) {
                taskIndex = i;
                break;
            }
        QVERIFY2(taskIndex >= 0, "no Task wide enough to click");
        const QPoint center = tl->taskRect(taskIndex).center().toPoint();
        QCOMPARE(tl->taskAt(center), taskIndex);
        QTest::mouseClick(tl, Qt::LeftButton, {}, center);
        const QString node = QString::fromStdString(tl->model()->tasks()[static_cast<size_t>(taskIndex)].nodes.front());
        QCOMPARE(w.selection()->selectedNode(), node);
        QCOMPARE(w.graphView()->selectedNode(), node);
        QCOMPARE(w.currentPass(), w.passModel()->rowCount() - 1);
        QVERIFY(tl->highlighted().count(taskIndex));

        // Graph → timeline: selecting another node moves the highlight to its Tasks.
        QString other;
        for (const auto& t : tl->model()->tasks())
            if (!t.nodes.empty() && QString::fromStdString(t.nodes.front()) != node)
                other = QString::fromStdString(t.nodes.front());
        QVERIFY(!other.isEmpty());
        w.selectNode(other);
        QCOMPARE(w.graphView()->selectedNode(), other);
        QVERIFY(!tl->highlighted().empty());
        QVERIFY(!tl->highlighted().count(taskIndex));

        // Memory tab has buffers to draw.
        QVERIFY(w.showTab("memory"));
        QVERIFY(w.memoryView()->shownCount() > 0);
        QVERIFY(!w.showTab("nonsense"));

        // SRAM level: clicking a buffer selects its Task's node, outlines the node's buffers
        // and shows the buffer in the inspector; another selection clears it.
        w.selectPass(1);
        QVERIFY(w.memoryPage()->setLevel(QStringLiteral("sram")));
        QApplication::processEvents();
        sextant::views::SramView* sram = w.memoryPage()->sramView();
        QVERIFY(sram->isVisible());
        QCOMPARE(sram->shown().size(), snap->program.sramBuffers.size());
        const sextant::views::SramBlock* widest = nullptr;
        for (int i : sram->shown()) {
            const sextant::views::SramBlock& b = snap->sram.blocks[static_cast<size_t>(i)];
            if (!widest || sram->blockRect(b).width() * sram->blockRect(b).height() >
                               sram->blockRect(*widest).width() * sram->blockRect(*widest).height())
                widest = &b;
        }
        QVERIFY(widest);
        const QPoint at = sram->blockRect(*widest).center().toPoint();
        const sextant::views::SramBlock* hit = sram->blockAt(at);
        QVERIFY(hit);
        QTest::mouseClick(sram, Qt::LeftButton, {}, at);
        const QString taskNode =
            QString::fromStdString(snap->program.tasks[static_cast<size_t>(hit->task)].nodes.front());
        QCOMPARE(w.selection()->selectedNode(), taskNode);
        QCOMPARE(w.currentPass(), w.passModel()->rowCount() - 1); // Tasks run the final graph
        QCOMPARE(w.inspector()->sramBuffer(), hit->sramBuffer);
        QVERIFY(w.inspector()->toPlainText().contains(QStringLiteral("SRAM buffer %1").arg(hit->sramBuffer)));
        const std::vector<int> outlined = sram->outlined();
        QVERIFY(std::find(outlined.begin(), outlined.end(), static_cast<int>(hit - snap->sram.blocks.data())) !=
                outlined.end());
        w.selectNode(other);
        QCOMPARE(w.inspector()->sramBuffer(), -1);
        w.memoryPage()->setLevel(QStringLiteral("dram"));
        QVERIFY(w.showTab("accuracy"));
        // The timeline marks the critical path. The sample is a chain of groups, each shared out
        // across the cores: one part of every group is on it.
        std::set<std::string> groups, onPath;
        for (const auto& t : snap->program.tasks) {
            groups.insert(t.nodes.front());
            if (w.timelineView()->criticalTasks().count(t.id))
                onPath.insert(t.nodes.front());
        }
        QCOMPARE(onPath, groups);
        QVERIFY(w.timelineView()->criticalTasks().size() < snap->program.tasks.size());

        // Find: an ONNX node fused away leads to the node that covers it, and says so.
        const QString how = w.find(QStringLiteral("block1_bn"));
        QVERIFY2(how.contains(QStringLiteral("part of node 'block1_conv'")), qPrintable(how));
        QCOMPARE(w.selection()->selectedNode(), QStringLiteral("block1_conv"));
        QVERIFY(w.find(QStringLiteral("block2_conv")).isEmpty()); // a node name: nothing to explain
        QCOMPARE(w.selection()->selectedNode(), QStringLiteral("block2_conv"));
    }

    void inputShapesReachTheCompile() {
        const QString cls = SEXTANT_SHARED_DIR "/models/paddleocr/ch_ppocr_mobile_v2.0_cls_infer.onnx";
        if (!QFile::exists(cls))
            QSKIP("../shared not found: skipping the input-shapes window test");
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        const sextant::ir::InputShapes shapes{{"x", {1, 3, 48, 96}}};
        w.setInputShapes(shapes);
        QVERIFY2(compile(w, cls), qPrintable(w.lastError()));
        QVERIFY(w.snapshot()->inputShapes == shapes);
        // Recompiling (F5, or after switching a rule) keeps them.
        QSignalSpy done(&w, &MainWindow::compileFinished);
        w.recompile();
        QVERIFY(QTest::qWaitFor([&] { return done.count() > 0; }, 180000));
        QVERIFY(w.snapshot()->inputShapes == shapes);
    }

    void optimisationLevelReachesTheCompile() {
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        QVERIFY(!w.setOptLevel(4));
        QVERIFY(w.setOptLevel(3));
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        const auto& applied = w.snapshot()->pipeline.applications;
        QVERIFY2(std::any_of(applied.begin(), applied.end(),
                             [](const sextant::passes::RuleApplication& a) { return a.rule == "fuse-conv-bn-f16"; }),
                 "-O3 should fold BatchNorm in f16");
        QVERIFY(w.setOptLevel(1));
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        for (const auto& snap : w.snapshot()->pipeline.snapshots)
            QVERIFY2(snap.passId != "fuse", "fusion runs from -O2 on");
        QCOMPARE(w.optLevel(), 1);
    }

    void bisectWithoutDriftSaysSo() {
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        QVERIFY(w.setOptLevel(3));
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        QSignalSpy bisected(&w, &MainWindow::bisectFinished);
        w.bisectAccuracy();
        QVERIFY(QTest::qWaitFor([&] { return bisected.count() > 0; }, 180000));
        QVERIFY2(bisected.first().at(0).toString().contains(QStringLiteral("no drift at -O3")),
                 qPrintable(bisected.first().at(0).toString()));
        QCOMPARE(bisected.first().at(1).toBool(), false);
        QCOMPARE(w.bisectLimit(), int64_t{-1});
    }

    void bisectShowsTheCulprit() {
        const QString rec = SEXTANT_SHARED_DIR "/models/paddleocr/ch_PP-OCRv4_rec_infer.onnx";
        if (!QFile::exists(rec))
            QSKIP("../shared not found: skipping the GUI bisection of the recogniser");
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        QVERIFY(w.setOptLevel(3));
        QVERIFY2(compile(w, rec), qPrintable(w.lastError()));
        QSignalSpy bisected(&w, &MainWindow::bisectFinished);
        QSignalSpy done(&w, &MainWindow::compileFinished);
        w.bisectAccuracy();
        QVERIFY(QTest::qWaitFor([&] { return bisected.count() > 0; }, 180000));
        QCOMPARE(bisected.first().at(1).toBool(), true);
        QVERIFY2(bisected.first().at(0).toString().contains(QStringLiteral("fuse-conv-bn-f16")),
                 qPrintable(bisected.first().at(0).toString()));
        // Then the window recompiles at the culprit and shows it: its pass, its node.
        QVERIFY(QTest::qWaitFor([&] { return done.count() > 0; }, 180000));
        QVERIFY(w.bisectLimit() > 0);
        const auto& applied = w.snapshot()->pipeline.applications;
        QVERIFY(!applied.empty());
        QCOMPARE(applied.back().rule, std::string("fuse-conv-bn-f16"));
        QCOMPARE(int64_t{applied.back().seq}, w.bisectLimit());
        QCOMPARE(w.snapshot()->pipeline.snapshots[static_cast<size_t>(w.currentPass())].passId, std::string("fuse"));
        QCOMPARE(w.selection()->selectedNode(), QString::fromStdString(applied.back().node));
        // Clearing the limit compiles everything again.
        const size_t atCulprit = applied.size(); // `applied` goes with the snapshot the recompile replaces
        QSignalSpy again(&w, &MainWindow::compileFinished);
        w.clearBisectLimit();
        QVERIFY(QTest::qWaitFor([&] { return again.count() > 0; }, 180000));
        QCOMPARE(w.bisectLimit(), int64_t{-1});
        QVERIFY(w.snapshot()->pipeline.applications.size() > atCulprit);
    }

    void theEditedTargetIsWhatTheNextCompileUses() {
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        // Not a target: refused with the field named, and the target stays npu-a.
        QString error;
        std::string text = sextant::backend::targetToJson(sextant::backend::defaultTarget());
        const std::string eight = "\"num_cores\": 8";
        const auto at = text.find(eight);
        QVERIFY(at != std::string::npos);
        std::string zeroCores = text;
        zeroCores.replace(at, eight.size(), "\"num_cores\": 0");
        QVERIFY(!w.setTargetJson(QString::fromStdString(zeroCores), QStringLiteral("edited"), &error));
        QVERIFY2(error.contains(QStringLiteral("num_cores")), qPrintable(error));
        QCOMPARE(w.target().numCores, 8);
        // Two cores: the compile uses them, and only them.
        std::string twoCores = text;
        twoCores.replace(at, eight.size(), "\"num_cores\": 2");
        QVERIFY2(w.setTargetJson(QString::fromStdString(twoCores), QStringLiteral("edited"), &error), qPrintable(error));
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        QCOMPARE(w.snapshot()->program.target.numCores, 2);
        for (const auto& t : w.snapshot()->program.tasks)
            QVERIFY(t.core < 2);
        int lanesOfCore2 = 0;
        for (const auto& lane : w.snapshot()->timeline.lanes())
            lanesOfCore2 += lane.core >= 2;
        QCOMPARE(lanesOfCore2, 0);
    }

    void targetDialogChecksAsTheUserTypes() {
        sextant::views::TargetDialog dialog(sextant::backend::defaultTarget());
        QVERIFY(dialog.target());
        QVERIFY2(dialog.status().startsWith(QStringLiteral("npu-a · 8 cores · 512 KiB SRAM per core")),
                 qPrintable(dialog.status()));
        dialog.setText(dialog.text().replace(QStringLiteral("\"num_cores\": 8,"), QStringLiteral("\"num_cores\": 8")));
        QVERIFY(!dialog.target());
        QVERIFY2(dialog.status().contains(QStringLiteral("invalid JSON at line")), qPrintable(dialog.status()));
        dialog.setText(dialog.text().replace(QStringLiteral("\"num_cores\": 8"), QStringLiteral("\"num_cores\": 4,")));
        QVERIFY2(dialog.target(), qPrintable(dialog.status()));
        QCOMPARE(dialog.target()->numCores, 4);
        dialog.setText(dialog.text().replace(QStringLiteral("\"sram_bytes\": 524288"), QStringLiteral("\"sram_bytes\": 1000")));
        QVERIFY(!dialog.target());
        QVERIFY2(dialog.status().contains(QStringLiteral("sram_bytes")), qPrintable(dialog.status()));
    }

    void findStepsThroughThePatternsMatches() {
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        // The final graph has two FusedConv nodes: Enter twice selects one, then the other.
        QString first = w.find(QStringLiteral("FusedConv"));
        QVERIFY2(first.contains(QStringLiteral("1 of 2 matching nodes")), qPrintable(first));
        QCOMPARE(w.selection()->selectedNode(), QStringLiteral("block1_conv"));
        QString second = w.find(QStringLiteral("FusedConv"));
        QVERIFY2(second.contains(QStringLiteral("2 of 2")), qPrintable(second));
        QCOMPARE(w.selection()->selectedNode(), QStringLiteral("block2_conv"));
        QVERIFY(w.find(QStringLiteral("FusedConv")).contains(QStringLiteral("1 of 2"))); // wraps around
        QVERIFY(w.find(QStringLiteral("conv(")).contains(QStringLiteral("not a regular expression")));
        QVERIFY(w.find(QStringLiteral("lstm")).contains(QStringLiteral("no node's name, op type or output type")));
        QVERIFY(w.find(QStringLiteral("block1_bn")).contains(QStringLiteral("is part of node 'block1_conv'")));
    }

    void runsTabComparesThePreviousCompileWithThisOne() {
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        QVERIFY(w.setOptLevel(1));
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        sextant::views::RunsView* runs = w.runsView();
        QVERIFY(!runs->run(sextant::views::RunsView::Side::A)); // nothing before the first compile
        QVERIFY(runs->run(sextant::views::RunsView::Side::B));
        QVERIFY(w.setOptLevel(2));
        QSignalSpy again(&w, &MainWindow::compileFinished);
        w.recompile();
        QVERIFY(QTest::qWaitFor([&] { return again.count() > 0; }, 180000));
        const auto& a = runs->run(sextant::views::RunsView::Side::A);
        const auto& b = runs->run(sextant::views::RunsView::Side::B);
        QVERIFY(a && b);
        QVERIFY(a->db != b->db);
        QCOMPARE(b->tasks.size(), w.snapshot()->program.tasks.size());
        QVERIFY2(runs->summaryText().startsWith(QStringLiteral("latency: ")), qPrintable(runs->summaryText()));
        // O2 fused the convolutions: FusedConv Tasks in B, under the names O1's Conv Tasks had.
        bool kernelChanged = false;
        for (int row = 0; row < runs->model()->rowCount(); ++row)
            kernelChanged |= runs->model()
                                 ->index(row, sextant::views::RunCompareModel::KernelColumn)
                                 .data()
                                 .toString()
                                 .contains(QRegularExpression(QStringLiteral("^Conv( ×\\d+)? → FusedConv")));
        QVERIFY(kernelChanged);
        // Either side can be any database, read off the GUI thread; one that is not gives the
        // reason on the tab and leaves the side as it was.
        QSignalSpy opened(runs, &sextant::views::RunsView::runOpened);
        const std::string before = a->label();
        runs->openRun(sextant::views::RunsView::Side::A, QStringLiteral(SEXTANT_SOURCE_DIR "/README.md"));
        QVERIFY(runs->isLoading());
        QVERIFY(QTest::qWaitFor([&] { return opened.count() == 1; }, 60000));
        const QString error = opened.first().at(1).toString();
        QVERIFY2(error.contains(QStringLiteral("not a profile database")), qPrintable(error));
        QVERIFY2(runs->summaryText().contains(QStringLiteral("not a profile database")), qPrintable(runs->summaryText()));
        QCOMPARE(runs->run(sextant::views::RunsView::Side::A)->label(), before);
        // The database the compile was kept in holds what the tab showed for it.
        QVERIFY(!b->db.empty());
        runs->openRun(sextant::views::RunsView::Side::A, QString::fromStdString(b->db));
        QVERIFY(QTest::qWaitFor([&] { return opened.count() == 2; }, 60000));
        QVERIFY2(opened.last().at(1).toString().isEmpty(), qPrintable(opened.last().at(1).toString()));
        QVERIFY(!runs->isLoading());
        QCOMPARE(runs->run(sextant::views::RunsView::Side::A)->db, b->db);
        QCOMPARE(runs->model()->comparison()->onlyA + runs->model()->comparison()->onlyB, 0); // B against itself
        QVERIFY2(runs->summaryText().startsWith(QStringLiteral("latency: ")), qPrintable(runs->summaryText()));
    }

    void exportsTheArtifactItShows() {
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        QTemporaryDir dir;
        QSignalSpy exported(&w, &MainWindow::artifactExported);
        w.exportArtifact(dir.path()); // nothing compiled yet: an error, not a crash
        QCOMPARE(exported.count(), 1);
        QVERIFY(!exported.first().at(1).toString().isEmpty());
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        w.exportArtifact(dir.filePath("sample"));
        QVERIFY(QTest::qWaitFor([&] { return exported.count() == 2; }, 60000));
        QVERIFY2(exported.last().at(1).toString().isEmpty(), qPrintable(exported.last().at(1).toString()));
        auto back = sextant::backend::readArtifact(dir.filePath("sample").toStdString());
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().message.c_str());
        QCOMPARE(back->tasks.size(), w.snapshot()->program.tasks.size());
    }

    void badModelKeepsTheWindowUsable() {
        QTemporaryDir dir;
        const QString bad = dir.filePath("broken.onnx");
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("\x08\x07garbage");
        f.close();
        MainWindow w;
        w.setQuietErrors(true);
        w.show();
        QVERIFY(!compile(w, bad));
        QVERIFY(!w.lastError().isEmpty());
        QVERIFY(!w.snapshot());
        // The next model still opens.
        QVERIFY2(compile(w, SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx"), qPrintable(w.lastError()));
        QVERIFY(w.lastError().isEmpty());
        QVERIFY(w.snapshot());
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
