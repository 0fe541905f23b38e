// sextant: the Qt workbench. `sextant [MODEL.onnx] [--screenshot FILE.png] [--tab T] [--pass ID]
// [--select NAME] [--memory-level dram|sram] [--memory-core N] [--memory-fit] [--shape NAME=DIMS]
// [--level N] [--target FILE] [--run-a DB[:RUN]] [--run-b DB[:RUN]] [--profile DB[:RUN]] [--first-graph]` opens the model (the sample by default),
// compiles and simulates it off the GUI thread, and shows the result; --screenshot saves the
// window once the first compile finished and quits (how docs/ screenshots and GUI smoke checks
// are made).
#include "MainWindow.h"

#include "core/ir/Allocator.h"
#include "views/AccuracyPage.h"
#include "views/GraphView.h"
#include "views/RunsView.h"
#include "views/TimelineView.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTimer>

#include <cstdio>
#include <functional>
#include <map>

int main(int argc, char** argv) {
    sextant::ir::tuneAllocator();
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("sextant"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Sextant: graph compiler and NPU simulator workbench"));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("model"), QStringLiteral("ONNX model to open (default: the sample)"));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("Save the window to FILE.png after the first compile, then quit."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption tab(QStringLiteral("tab"), QStringLiteral("Tab to show: graph, diff, memory, timeline, accuracy, runs."),
                                 QStringLiteral("NAME"));
    const QCommandLineOption pass(QStringLiteral("pass"), QStringLiteral("Pipeline snapshot to show (pass id)."),
                                  QStringLiteral("ID"));
    const QCommandLineOption select(QStringLiteral("select"),
                                    QStringLiteral("Node to select, as the find box takes it: an IR node, a tensor, "
                                                   "an ONNX node of the model, or a pattern over names, op types "
                                                   "and output types (the first match)."),
                                    QStringLiteral("NAME"));
    const QCommandLineOption size(QStringLiteral("size"), QStringLiteral("Window size, e.g. 1560x960."),
                                  QStringLiteral("WxH"));
    const QCommandLineOption shape(QStringLiteral("shape"),
                                   QStringLiteral("Concrete dims for an input with symbolic ones, e.g. x=1x3x640x640 "
                                                  "(repeatable; default: the shapes of the model's test inputs)."),
                                   QStringLiteral("NAME=DIMS"));
    const QCommandLineOption level(QStringLiteral("level"),
                                   QStringLiteral("Optimisation level 0-3, as sextant-cli's -O0..-O3 (default 2)."),
                                   QStringLiteral("N"));
    const QCommandLineOption bisect(QStringLiteral("bisect"),
                                    QStringLiteral("After the first compile, run Tools > Bisect accuracy (with "
                                                   "--screenshot: save the window once the culprit is shown)."));
    const QCommandLineOption target(QStringLiteral("target"),
                                    QStringLiteral("Target description to compile for, as sextant-cli --target "
                                                   "(default: the built-in npu-a; File > Target edits it)."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption runA(QStringLiteral("run-a"),
                                  QStringLiteral("Show run A of the Runs tab from a profile database (RUN: a run id, "
                                                 "default the newest) instead of the previous compile."),
                                  QStringLiteral("DB[:RUN]"));
    const QCommandLineOption runB(QStringLiteral("run-b"),
                                  QStringLiteral("Show run B of the Runs tab from a profile database instead of the "
                                                 "current compile."),
                                  QStringLiteral("DB[:RUN]"));
    const QCommandLineOption profile(QStringLiteral("profile"),
                                     QStringLiteral("Show a run of a profile database in the Timeline tab (RUN: a "
                                                    "run id, default the newest) instead of the compile's."),
                                     QStringLiteral("DB[:RUN]"));
    const QCommandLineOption timelineRange(QStringLiteral("timeline-range"),
                                           QStringLiteral("Cycles the Timeline tab shows, e.g. 2000000:2060000 "
                                                          "(default: the whole run)."),
                                           QStringLiteral("T0:T1"));
    const QCommandLineOption timelineFind(QStringLiteral("timeline-find"),
                                          QStringLiteral("Text for the Timeline tab's find box: its matching Tasks "
                                                         "are outlined and the first is zoomed to."),
                                          QStringLiteral("TEXT"));
    const QCommandLineOption memoryLevel(QStringLiteral("memory-level"),
                                         QStringLiteral("Memory tab level to show: dram or sram (default dram)."),
                                         QStringLiteral("LEVEL"));
    const QCommandLineOption memoryCore(QStringLiteral("memory-core"),
                                        QStringLiteral("SRAM core the Memory tab shows (default: all cores stacked)."),
                                        QStringLiteral("N"));
    const QCommandLineOption memoryFit(QStringLiteral("memory-fit"),
                                       QStringLiteral("Scale the Memory tab's SRAM bands to the highest peak "
                                                      "instead of the whole SRAM (its Fit to peak)."));
    const QCommandLineOption firstGraph(QStringLiteral("first-graph"),
                                        QStringLiteral("With --screenshot: save the window as soon as the first graph "
                                                       "is shown, before lowering and simulation finish, and print "
                                                       "how long that took."));
    const QCommandLineOption floatModel(QStringLiteral("float-model"),
                                        QStringLiteral("The float model the quantized model came from: the Accuracy "
                                                       "tab compares their tensors of the same name (and shows that "
                                                       "comparison with --tab accuracy)."),
                                        QStringLiteral("file.onnx"));
    const QCommandLineOption exportGraph(QStringLiteral("export-graph"),
                                         QStringLiteral("With --screenshot: also write the Graph tab's graph, as "
                                                        "shown, to FILE (.svg or .png), as File > Export graph "
                                                        "view does."),
                                         QStringLiteral("file"));
    parser.addOptions({screenshot, tab, pass, select, size, shape, level, bisect, target, runA, runB, profile,
                       timelineRange, timelineFind, memoryLevel, memoryCore, memoryFit, firstGraph, floatModel,
                       exportGraph});
    parser.process(app);

    const QStringList args = parser.positionalArguments();
    const QString model = args.isEmpty() ? QStringLiteral(SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx") : args.first();

    sextant::ir::InputShapes shapes;
    for (const QString& spec : parser.values(shape)) {
        auto parsed = sextant::ir::parseShapeSpec(spec.toStdString());
        if (!parsed.ok() || !shapes.emplace(parsed->first, parsed->second).second) {
            std::fprintf(stderr, "error: --shape %s: %s\n", qPrintable(spec),
                         parsed.ok() ? "input given twice" : parsed.error().message.c_str());
            return 2;
        }
    }

    sextant::app::MainWindow window;
    window.setInputShapes(std::move(shapes));
    window.setFloatModel(parser.value(floatModel));
    if (parser.isSet(target)) {
        auto loaded = sextant::backend::loadTarget(parser.value(target).toStdString());
        if (!loaded.ok()) {
            std::fprintf(stderr, "error: --target: %s\n", loaded.error().message.c_str());
            return 2;
        }
        window.setTarget(std::move(loaded).value());
    }
    bool levelIsNumber = true;
    if (parser.isSet(level) && (!window.setOptLevel(parser.value(level).toInt(&levelIsNumber)) || !levelIsNumber)) {
        std::fprintf(stderr, "error: --level %s: the levels are 0, 1, 2 and 3\n", qPrintable(parser.value(level)));
        return 2;
    }
    // --run-a / --run-b: read on a pool thread like any run the tab opens; one that cannot be
    // read ends the program with the reason, as a bad option does.
    int exitCode = 0;
    std::map<sextant::views::RunsView::Side, QString> startupRuns;
    for (const auto& [option, side] : {std::pair{&runA, sextant::views::RunsView::Side::A},
                                       std::pair{&runB, sextant::views::RunsView::Side::B}})
        if (parser.isSet(*option))
            startupRuns[side] = option->names().first();
    QObject::connect(window.runsView(), &sextant::views::RunsView::runOpened, &window,
                     [&](sextant::views::RunsView::Side side, const QString& error) {
                         auto it = startupRuns.find(side);
                         if (it == startupRuns.end())
                             return;
                         const QString option = it->second;
                         startupRuns.erase(it);
                         if (error.isEmpty())
                             return;
                         std::fprintf(stderr, "error: --%s: %s\n", qPrintable(option), qPrintable(error));
                         exitCode = 2;
                         app.quit();
                     });
    for (const auto& [option, side] : {std::pair{&runA, sextant::views::RunsView::Side::A},
                                       std::pair{&runB, sextant::views::RunsView::Side::B}}) {
        if (!parser.isSet(*option))
            continue;
        const auto [db, run] = sextant::profiler::parseRunSpec(parser.value(*option).toStdString());
        window.runsView()->openRun(side, QString::fromStdString(db), run);
    }
    // --profile: the Timeline tab reads it on a pool thread; the screenshot waits for the whole.
    int shotWaitsFor = 1 + (parser.isSet(profile) ? 1 : 0); // the compile, and the database
    std::function<void()> readyForShot;
    if (parser.isSet(profile)) {
        const auto [db, run] = sextant::profiler::parseRunSpec(parser.value(profile).toStdString());
        QObject::connect(window.timelinePage(), &sextant::views::TimelinePage::profileLoaded, &window,
                         [&](const QString& error) {
                             if (!error.isEmpty()) {
                                 std::fprintf(stderr, "error: --profile: %s\n", qPrintable(error));
                                 exitCode = 2;
                                 app.quit();
                                 return;
                             }
                             if (readyForShot)
                                 readyForShot();
                         }, Qt::SingleShotConnection);
        window.timelinePage()->openProfile(QString::fromStdString(db), run);
    }
    if (parser.isSet(memoryLevel) && !window.memoryPage()->setLevel(parser.value(memoryLevel))) {
        std::fprintf(stderr, "error: --memory-level %s: the levels are dram and sram\n",
                     qPrintable(parser.value(memoryLevel)));
        return 2;
    }
    window.memoryPage()->setFitToPeak(parser.isSet(memoryFit));
    bool coreIsNumber = true;
    const int sramCore = parser.isSet(memoryCore) ? parser.value(memoryCore).toInt(&coreIsNumber) : -1;
    if (!coreIsNumber || sramCore < -1) {
        std::fprintf(stderr, "error: --memory-core %s: not a core number\n", qPrintable(parser.value(memoryCore)));
        return 2;
    }
    int w = 1560, h = 960;
    if (parser.isSet(size)) {
        const QStringList parts = parser.value(size).split('x');
        if (parts.size() == 2) {
            w = parts[0].toInt();
            h = parts[1].toInt();
        }
    }
    window.resize(w, h);
    const bool shot = parser.isSet(screenshot);
    window.setQuietErrors(shot);

    auto applyOptions = [&] {
        if (parser.isSet(pass) && !window.selectPassById(parser.value(pass)))
            std::fprintf(stderr, "warning: no pass '%s' in the pipeline\n", qPrintable(parser.value(pass)));
        if (parser.isSet(select)) // as the find box does: a node, a tensor or an ONNX node
            window.find(parser.value(select));
        // The run's target says which cores there are.
        if (parser.isSet(memoryCore) && !window.memoryPage()->setSramCore(sramCore))
            std::fprintf(stderr, "warning: --memory-core %d: the target has no such core\n", sramCore);
        if (parser.isSet(tab) && !window.showTab(parser.value(tab)))
            std::fprintf(stderr, "warning: unknown tab '%s'\n", qPrintable(parser.value(tab)));
        if (parser.isSet(floatModel) && !window.accuracyPage()->showFloatModel(true))
            std::fprintf(stderr, "warning: --float-model: nothing compared (see the log)\n");
    };
    QElapsedTimer sinceStart;
    sinceStart.start();
    std::function<void()> saveScreenshot = [&] {
        // The graph is laid out when shown: wait for the level the options chose.
        if (window.graphPage()->layoutPending()) {
            QObject::connect(window.graphPage(), &sextant::views::GraphPage::levelShown, &window,
                             [&] { saveScreenshot(); }, Qt::SingleShotConnection);
            return;
        }
        // The timeline's find box searches on a pool thread: wait for its matches.
        if (window.timelinePage()->isFinding()) {
            QTimer::singleShot(50, &window, [&] { saveScreenshot(); });
            return;
        }
        // Let the views lay themselves out and paint once before grabbing.
        QTimer::singleShot(400, &window, [&] {
            if (parser.isSet(exportGraph))
                if (const QString error = window.graphView()->exportImage(parser.value(exportGraph)); !error.isEmpty()) {
                    std::fprintf(stderr, "error: --export-graph %s\n", qPrintable(error));
                    exitCode = 2;
                }
            const QString file = parser.value(screenshot);
            if (!window.grab().save(file)) {
                std::fprintf(stderr, "error: could not write screenshot '%s'\n", qPrintable(file));
                exitCode = 2;
            }
            if (parser.isSet(firstGraph))
                std::fprintf(stderr, "first graph shown and saved after %.2f s\n", sinceStart.elapsed() / 1000.0);
            app.quit();
        });
    };
    readyForShot = [&] {
        if (--shotWaitsFor != 0)
            return;
        const QStringList range = parser.value(timelineRange).split(QLatin1Char(':'));
        if (range.size() == 2 && range[0].toDouble() < range[1].toDouble())
            window.timelineView()->showRange(range[0].toDouble(), range[1].toDouble());
        else if (parser.isSet(timelineRange))
            std::fprintf(stderr, "warning: --timeline-range %s: not T0:T1 with T0 < T1\n",
                         qPrintable(parser.value(timelineRange)));
        if (parser.isSet(timelineFind)) {
            window.timelinePage()->findText(parser.value(timelineFind));
            window.timelinePage()->findNext(); // once the matches come
        }
        if (shot && !parser.isSet(firstGraph))
            saveScreenshot();
    };
    if (shot && parser.isSet(firstGraph))
        QObject::connect(window.graphPage(), &sextant::views::GraphPage::levelShown, &window, [&] {
            // The first graph is what is shown; a node to select is found in it (its group opens,
            // and the screenshot waits for that level).
            if (parser.isSet(select))
                window.find(parser.value(select));
            saveScreenshot();
        }, Qt::SingleShotConnection);
    QObject::connect(&window, &sextant::app::MainWindow::compileFinished, &window, [&] {
        applyOptions();
        if (parser.isSet(bisect)) {
            window.bisectAccuracy(); // the screenshot waits for its outcome
            return;
        }
        readyForShot();
    }, Qt::SingleShotConnection);
    QObject::connect(&window, &sextant::app::MainWindow::bisectFinished, &window, [&](const QString&, bool culprit) {
        if (!shot)
            return;
        if (!culprit) {
            saveScreenshot();
            return;
        }
        // The window shows the culprit once the recompile at its bisect limit is in.
        QObject::connect(&window, &sextant::app::MainWindow::compileFinished, &window, saveScreenshot,
                         Qt::SingleShotConnection);
    });
    QObject::connect(&window, &sextant::app::MainWindow::compileFailed, &window, [&](const QString& error) {
        if (!shot)
            return;
        std::fprintf(stderr, "error: %s\n", qPrintable(error));
        exitCode = 2; // as sextant-cli exits on a model it cannot compile
        app.quit();
    });

    window.show();
    window.openModel(QFileInfo(model).absoluteFilePath());
    const int rc = app.exec();
    return exitCode != 0 ? exitCode : rc;
}
