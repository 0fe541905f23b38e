#include "MainWindow.h"

#include "views/AccuracyPage.h"
#include "views/BisectController.h"
#include "views/DiffPage.h"
#include "views/ExportController.h"
#include "views/GraphPage.h"
#include "views/GraphView.h"
#include "views/InputShapesDialog.h"
#include "views/InspectorWidget.h"
#include "views/MemoryPage.h"
#include "views/PipelinePanel.h"
#include "views/RunsView.h"
#include "views/SelectionModel.h"
#include "views/StatusPanel.h"
#include "views/TargetDialog.h"
#include "views/TimelinePage.h"
#include "views/TimelineView.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QStatusBar>
#include <QTabWidget>

namespace sextant::app {

namespace {

/// The central tabs, in order; showTab takes their names.
enum Tab { GraphTab, DiffTab, MemoryTab, TimelineTab, AccuracyTab, RunsTab };
const char* const kTabNames[] = {"graph", "diff", "memory", "timeline", "accuracy", "runs"};

QDockWidget* addDock(QMainWindow* window, const QString& title, const char* name, QWidget* widget,
                     Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, window);
    dock->setObjectName(QString::fromLatin1(name));
    dock->setWidget(widget);
    window->addDockWidget(area, dock);
    return dock;
}

} // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("Sextant"));
    // Created first, destroyed first: its dtor waits for files still written from the worker's
    // runs.
    m_export = new views::ExportController(this);
    m_worker = new views::CompileWorker(this);
    m_bisect = new views::BisectController(this);
    m_selection = new views::SelectionModel(this);
    buildTabs();
    buildDocks();
    m_status = new views::StatusPanel(statusBar());
    buildMenus();
    connectWorkers();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildTabs() {
    m_tabs = new QTabWidget(this);
    m_tabs->setDocumentMode(true);
    m_graphPage = new views::GraphPage;
    m_diffPage = new views::DiffPage;
    m_memoryPage = new views::MemoryPage;
    m_timelinePage = new views::TimelinePage;
    m_accuracyPage = new views::AccuracyPage;
    m_runs = new views::RunsView;
    m_tabs->addTab(m_graphPage, tr("Graph"));
    m_tabs->addTab(m_diffPage, m_diffPage->title());
    m_tabs->addTab(m_memoryPage, tr("Memory"));
    m_tabs->addTab(m_timelinePage, tr("Timeline"));
    m_tabs->addTab(m_accuracyPage, m_accuracyPage->title());
    m_tabs->addTab(m_runs, tr("Runs"));
    setCentralWidget(m_tabs);

    connect(m_graphPage, &views::GraphPage::nodeActivated, m_selection,
            &views::SelectionModel::select);
    connect(m_memoryPage, &views::MemoryPage::nodeActivated, m_selection,
            &views::SelectionModel::select);
    // An SRAM buffer is a Task's: select as a click on that Task does, then show the buffer.
    connect(m_memoryPage, &views::MemoryPage::sramBufferActivated, this,
            [this](int sramBuffer, const QString& node) {
                onTaskActivated(node);
                m_inspector->showSramBuffer(sramBuffer);
            });
    connect(m_accuracyPage, &views::AccuracyPage::nodeActivated, m_selection,
            &views::SelectionModel::select);
    connect(m_timelinePage, &views::TimelinePage::taskActivated, this,
            &MainWindow::onTaskActivated);
    connect(m_diffPage, &views::DiffPage::titleChanged, this,
            [this](const QString& t) { m_tabs->setTabText(DiffTab, t); });
    connect(m_accuracyPage, &views::AccuracyPage::titleChanged, this,
            [this](const QString& t) { m_tabs->setTabText(AccuracyTab, t); });
    connect(m_graphPage, &views::GraphPage::findMessage, this, [this](const QString& message) {
        m_status->setText(message);
        log(tr("find: %1").arg(message));
    });
    connect(m_runs, &views::RunsView::message, this, &MainWindow::log);
    connect(m_selection, &views::SelectionModel::nodeSelected, this, &MainWindow::onNodeSelected);
}

void MainWindow::buildDocks() {
    m_pipeline = new views::PipelinePanel;
    QDockWidget* pipelineDock =
        addDock(this, tr("Pipeline"), "pipeline", m_pipeline, Qt::LeftDockWidgetArea);
    pipelineDock->setMinimumWidth(360);
    connect(m_pipeline, &views::PipelinePanel::passChosen, this, [this](int row) {
        if (row != m_currentPass)
            selectPass(row);
    });
    connect(m_pipeline, &views::PipelinePanel::switchesChanged, this,
            &MainWindow::onSwitchesChanged);

    m_inspector = new views::InspectorWidget(this);
    QDockWidget* inspectorDock =
        addDock(this, tr("Inspector"), "inspector", m_inspector, Qt::RightDockWidgetArea);
    inspectorDock->setMinimumWidth(300);

    m_log = new QPlainTextEdit(this);
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(5000);
    m_log->setFont(QFont(QStringLiteral("monospace"), 9));
    QDockWidget* logDock = addDock(this, tr("Log"), "log", m_log, Qt::BottomDockWidgetArea);
    resizeDocks({logDock}, {130}, Qt::Vertical);
    resizeDocks({pipelineDock, inspectorDock}, {360, 330}, Qt::Horizontal);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open model…"), this, &MainWindow::openDialog)
        ->setShortcut(QKeySequence::Open);
    file->addAction(tr("Input &shapes…"), this, &MainWindow::inputShapesDialog);
    file->addAction(tr("&Target…"), this, &MainWindow::targetDialog);
    file->addAction(tr("Compare with &float model…"), this, &MainWindow::floatModelDialog)
        ->setToolTip(tr("For a quantized model: compare each of its tensors with the float model's of the same name"));
    file->addAction(tr("&Recompile"), this, &MainWindow::recompile)
        ->setShortcut(QKeySequence(Qt::Key_F5));
    file->addAction(tr("&Save profile database as…"), this, &MainWindow::saveProfileAs);
    for (auto [text, side] :
         {std::pair{tr("Open profile &database as run A…"), views::RunsView::Side::A},
          std::pair{tr("Open profile database as run &B…"), views::RunsView::Side::B}})
        file->addAction(text, this, [this, side] {
            m_tabs->setCurrentIndex(RunsTab);
            m_runs->openRunDialog(side);
        });
    file->addAction(tr("Open profile database in the T&imeline…"), this, [this] {
        m_tabs->setCurrentIndex(TimelineTab);
        m_timelinePage->openProfileDialog();
    });
    file->addAction(tr("&Export artifact…"), this, &MainWindow::exportArtifactDialog);
    file->addAction(tr("Export &graph view as SVG/PNG…"), this, &MainWindow::exportGraphDialog);
    file->addAction(tr("Export graph as &ONNX…"), this, &MainWindow::exportOnnxDialog);
    file->addSeparator();
    file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows)
        ->setShortcut(QKeySequence::Quit);

    QMenu* tools = menuBar()->addMenu(tr("&Tools"));
    QAction* bisect = tools->addAction(tr("&Bisect accuracy"), this, &MainWindow::bisectAccuracy);
    bisect->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    bisect->setToolTip(
        tr("Find the first rule application that moves the outputs out of tolerance"));
    tools->addAction(tr("&Clear bisect limit"), this, &MainWindow::clearBisectLimit);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    QAction* findAction = view->addAction(tr("&Find…"), this, [this] {
        m_tabs->setCurrentIndex(GraphTab);
        m_graphPage->focusFind();
    });
    findAction->setShortcut(QKeySequence::Find);
    view->addAction(tr("Find &next"), m_graphPage, &views::GraphPage::findNext)
        ->setShortcut(QKeySequence::FindNext);
    view->addAction(tr("&Fit graph"), graphView(), &views::GraphView::fitToView);
    view->addAction(tr("Fit &timeline"), timelineView(), &views::TimelineView::fitAll);
    view->addSeparator();
    for (QDockWidget* dock : findChildren<QDockWidget*>())
        view->addAction(dock->toggleViewAction());
}

void MainWindow::connectWorkers() {
    connect(m_status, &views::StatusPanel::cancelRequested, m_worker,
            &views::CompileWorker::cancel);
    connect(m_status, &views::StatusPanel::cancelRequested, m_bisect,
            &views::BisectController::cancel);
    connect(m_worker, &views::CompileWorker::started, this, &MainWindow::onStarted);
    connect(m_worker, &views::CompileWorker::progress, m_status, &views::StatusPanel::showProgress);
    connect(m_worker, &views::CompileWorker::logLine, this, &MainWindow::log);
    connect(m_worker, &views::CompileWorker::pipelineReady, this, &MainWindow::onPipelineReady);
    connect(m_graphPage, &views::GraphPage::graphShown, this, &MainWindow::log);
    connect(m_worker, &views::CompileWorker::finished, this, &MainWindow::onFinished);
    connect(m_worker, &views::CompileWorker::failed, this, &MainWindow::onFailed);
    connect(m_worker, &views::CompileWorker::cancelled, this, &MainWindow::onCancelled);

    // Probes have no percentage to show.
    connect(m_bisect, &views::BisectController::busyChanged, m_status,
            [this](bool busy) { m_status->setBusy(busy, true); });
    connect(m_bisect, &views::BisectController::status, m_status, &views::StatusPanel::setText);
    connect(m_bisect, &views::BisectController::message, this, &MainWindow::log);
    connect(m_bisect, &views::BisectController::failed, this, &MainWindow::onFailed);
    connect(m_bisect, &views::BisectController::cancelled, this, &MainWindow::onCancelled);
    connect(m_bisect, &views::BisectController::finished, this, &MainWindow::onBisectFinished);

    connect(m_export, &views::ExportController::status, m_status, &views::StatusPanel::setText);
    connect(m_export, &views::ExportController::message, this, &MainWindow::log);
    connect(m_export, &views::ExportController::failed, this, &MainWindow::onFailed);
    connect(m_export, &views::ExportController::exported, this, &MainWindow::artifactExported);
}

void MainWindow::log(const QString& line) {
    m_log->appendPlainText(line);
}

views::CompileRequest MainWindow::currentRequest() const {
    views::CompileRequest request;
    request.modelPath = m_modelPath.toStdString();
    request.pipeline.disabled = m_pipeline->disabledRules();
    request.pipeline.optLevel = optLevel();
    request.pipeline.bisectLimit = m_bisect->limit();
    request.shapes = m_shapes;
    request.target = m_target;
    request.floatModelPath = m_floatModel.toStdString();
    return request;
}

void MainWindow::openModel(const QString& path) {
    m_modelPath = path;
    m_worker->start(currentRequest());
}

void MainWindow::recompile() {
    if (!m_modelPath.isEmpty())
        openModel(m_modelPath);
}

void MainWindow::onSwitchesChanged() {
    m_bisect->clearLimit();
    recompile();
}

void MainWindow::bisectAccuracy() {
    if (m_modelPath.isEmpty() || m_worker->isRunning() || m_bisect->isRunning()) {
        m_status->setText(tr("bisect: wait for the running compile to finish"));
        return;
    }
    m_bisect->start(currentRequest());
}

void MainWindow::onBisectFinished(const QString& verdict, bool culprit) {
    if (culprit) {
        // Show the compile that stops at the culprit: its pass diff ends with the culprit's
        // rewrite.
        m_pendingCulprit = m_bisect->culprit();
        log(tr("recompiling with bisect limit %1 (Tools > Clear bisect limit undoes it)")
                .arg(m_bisect->limit()));
        recompile();
    }
    emit bisectFinished(verdict, culprit);
}

void MainWindow::clearBisectLimit() {
    if (m_bisect->clearLimit())
        recompile();
}

void MainWindow::showCulprit(const passes::RuleApplication& culprit) {
    // A bisection found it: the culprit's pass (its diff ends with the rewrite) and its node.
    selectPassById(QString::fromStdString(culprit.pass));
    m_tabs->setCurrentIndex(DiffTab);
    find(QString::fromStdString(culprit.node));
    m_status->setText(tr("bisect: first bad application #%1 %2 at node '%3', shown after pass %4 "
                         "(bisect limit %1)")
                          .arg(culprit.seq)
                          .arg(QString::fromStdString(culprit.rule),
                               QString::fromStdString(culprit.node),
                               QString::fromStdString(culprit.pass)));
}

void MainWindow::exportArtifact(const QString& dir) {
    m_export->exportArtifact(m_snapshot, dir);
}

void MainWindow::exportArtifactDialog() {
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Export the compiled artifact into"));
    if (!dir.isEmpty())
        exportArtifact(dir);
}

void MainWindow::exportGraphDialog() {
    QString filter = tr("SVG images (*.svg)");
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the graph as shown"), QStringLiteral("graph.svg"),
                                                      tr("SVG images (*.svg);;PNG images (*.png)"), &filter);
    if (path.isEmpty())
        return;
    // A name without an extension takes the chosen filter's.
    QString file = path;
    if (!file.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive) && !file.endsWith(QLatin1String(".png"), Qt::CaseInsensitive))
        file += filter.contains(QLatin1String("png")) ? QStringLiteral(".png") : QStringLiteral(".svg");
    if (const QString error = graphView()->exportImage(file); !error.isEmpty())
        onFailed(tr("export graph: %1").arg(error));
    else
        log(tr("exported the graph view to %1").arg(file));
}

void MainWindow::exportOnnxDialog() {
    if (!m_snapshot || m_currentPass < 0) {
        onFailed(tr("export ONNX: nothing compiled yet"));
        return;
    }
    const QString asIs = tr("ONNX, as the compiler holds it: sextant ops, for Netron (*.onnx)");
    const QString standard = tr("ONNX, standard ops: runs in onnxruntime (*.onnx)");
    const QString npuF16 = tr("ONNX, standard ops rounded to f16 where the NPU is (*.onnx)");
    const std::string& passId = m_snapshot->pipeline.snapshots[static_cast<size_t>(m_currentPass)].passId;
    const QString suggested = QFileInfo(m_modelPath).completeBaseName() + QLatin1Char('-') +
                              QString::fromStdString(passId) + QStringLiteral(".onnx");
    QString filter = asIs;
    QString path = QFileDialog::getSaveFileName(this, tr("Export the graph after pass %1 as ONNX")
                                                          .arg(QString::fromStdString(passId)),
                                                suggested, asIs + QStringLiteral(";;") + standard +
                                                               QStringLiteral(";;") + npuF16,
                                                &filter);
    if (path.isEmpty())
        return;
    if (!path.endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive))
        path += QStringLiteral(".onnx");
    frontend::OnnxExportOptions form;
    if (filter != asIs)
        form.form = frontend::OnnxExportForm::Standard;
    form.npuF16 = filter == npuF16;
    m_export->exportOnnx(m_snapshot, m_currentPass, path, std::move(form));
}

void MainWindow::saveProfileAs() {
    if (!m_snapshot)
        return;
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Save profile database"),
                                     QStringLiteral("profile.db"), tr("SQLite databases (*.db)"));
    if (!path.isEmpty())
        m_export->saveProfile(m_snapshot, path);
}

bool MainWindow::setTargetJson(const QString& json, const QString& source, QString* error) {
    Expected<backend::Target> parsed =
        backend::parseTarget(json.toStdString(), source.toStdString());
    if (!parsed.ok()) {
        if (error)
            *error = QString::fromStdString(parsed.error().message);
        return false;
    }
    setTarget(std::move(parsed).value());
    return true;
}

void MainWindow::setTarget(backend::Target target) {
    // Another target may change the layout and precision passes' work, and with it the rule
    // applications' numbering: a bisect limit found for the old one goes.
    if (backend::targetToJson(target) != backend::targetToJson(m_target))
        m_bisect->clearLimit();
    m_target = std::move(target);
    log(tr("target: %1").arg(views::describeTarget(m_target)));
}

void MainWindow::targetDialog() {
    views::TargetDialog dialog(m_target, this);
    if (dialog.exec() != QDialog::Accepted || !dialog.target())
        return;
    setTarget(*dialog.target());
    recompile();
}

void MainWindow::openDialog() {
    const QString dir = m_modelPath.isEmpty() ? QString() : QFileInfo(m_modelPath).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open ONNX model"), dir,
                                                      tr("ONNX models (*.onnx);;All files (*)"));
    if (path.isEmpty())
        return;
    m_shapes.clear(); // they were the previous model's
    m_floatModel.clear();
    m_bisect->clearLimit();
    openModel(path);
}

void MainWindow::floatModelDialog() {
    const QString dir = m_modelPath.isEmpty() ? QString() : QFileInfo(m_modelPath).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Float model to compare the quantized model with"), dir,
                                                      tr("ONNX models (*.onnx);;All files (*)"));
    if (path.isEmpty())
        return;
    m_floatModel = path;
    log(tr("float model: %1 (the Accuracy tab compares the quantized model's tensors with its)").arg(path));
    recompile();
}

void MainWindow::inputShapesDialog() {
    // Offer what the last compile used: the shapes set here, or those it took from test data.
    QString error;
    std::optional<ir::InputShapes> shapes = views::askInputShapes(
        this, !m_shapes.empty() || !m_snapshot ? m_shapes : m_snapshot->inputShapes, &error);
    if (!error.isEmpty())
        onFailed(error);
    if (!shapes)
        return;
    m_shapes = std::move(*shapes);
    recompile();
}

void MainWindow::onStarted(const QString& path) {
    m_status->setBusy(true);
    m_status->setProgress(0);
    m_status->setText(tr("compiling %1").arg(QFileInfo(path).fileName()));
    log(tr("— compiling %1").arg(path));
}

void MainWindow::onPipelineReady(std::shared_ptr<const views::CompileSnapshot> early) {
    // The passes and graphs, while lowering and simulation go on; onFinished replaces it.
    m_snapshot = std::move(early);
    m_pipeline->setPipeline(m_snapshot->pipeline);
    m_currentPass = -1;
    selectPass(static_cast<int>(m_snapshot->pipeline.snapshots.size()) - 1);
}

void MainWindow::onFinished(std::shared_ptr<const views::CompileSnapshot> snapshot) {
    m_status->setBusy(false);
    // The log lines came as the stages ended (CompileWorker::logLine). A pass chosen while the
    // run was lowering (its pipeline shown early) stays chosen.
    const bool sameRun = m_snapshot && snapshot->pipeline.snapshots.size() == m_snapshot->pipeline.snapshots.size() &&
                         snapshot->pipeline.snapshots.back().state == m_snapshot->pipeline.snapshots.back().state;
    const int keepPass = sameRun ? m_currentPass : -1;
    m_snapshot = std::move(snapshot);
    m_lastError.clear();
    setWindowTitle(tr("Sextant — %1")
                       .arg(QFileInfo(QString::fromStdString(m_snapshot->modelPath)).fileName()));
    // The Runs tab compares this compile with the one before (of the same model).
    if (m_snapshot->loweringError.empty())
        m_runs->addCompile(m_snapshot->run, m_snapshot->modelPath != m_runsModel);
    m_runsModel = m_snapshot->modelPath;
    m_pipeline->setPipeline(m_snapshot->pipeline);
    m_timelinePage->setSnapshot(m_snapshot);
    m_memoryPage->setSnapshot(m_snapshot);
    m_accuracyPage->setSnapshot(m_snapshot);
    // Show the final graph: Tasks name its nodes, so cross-selection works there. The selection
    // stays; the views outline it if the node survived.
    m_currentPass = -1;
    selectPass(keepPass >= 0 ? keepPass : static_cast<int>(m_snapshot->pipeline.snapshots.size()) - 1);
    onNodeSelected(m_selection->selectedNode());
    m_status->setText(views::compileSummary(*m_snapshot));
    if (std::optional<passes::RuleApplication> culprit =
            std::exchange(m_pendingCulprit, std::nullopt))
        showCulprit(*culprit);
    emit compileFinished();
}

void MainWindow::onFailed(const QString& error) {
    m_status->setBusy(false);
    m_lastError = error;
    m_status->setText(tr("error: %1").arg(error));
    log(tr("error: %1").arg(error));
    if (!m_quietErrors) {
        auto* box =
            new QMessageBox(QMessageBox::Critical, tr("Sextant"), error, QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open(); // window-modal and asynchronous: the event loop (and the window) keep running
    }
    emit compileFailed(error);
}

void MainWindow::onCancelled() {
    m_status->setBusy(false);
    m_status->setText(tr("cancelled"));
    log(tr("cancelled"));
    emit compileFailed(tr("cancelled"));
}

void MainWindow::selectPass(int row) {
    if (!m_snapshot || row < 0 || row >= static_cast<int>(m_snapshot->pipeline.snapshots.size()))
        return;
    m_currentPass = row;
    m_graphPage->setContext(m_snapshot, row, m_selection->selectedNode());
    m_diffPage->showPass(m_snapshot->pipeline, row);
    m_inspector->setContext(m_snapshot, row);
    m_inspector->showNode(m_selection->selectedNode());
    m_pipeline->setCurrentPass(row);
}

bool MainWindow::selectPassById(const QString& passId) {
    const int row = m_pipeline->rowOf(passId);
    if (row >= 0)
        selectPass(row);
    return row >= 0;
}

bool MainWindow::showTab(const QString& name) {
    for (int tab = GraphTab; tab <= RunsTab; ++tab) {
        if (name.toLower() == QLatin1String(kTabNames[tab])) {
            m_tabs->setCurrentIndex(tab);
            return true;
        }
    }
    return false;
}

void MainWindow::onNodeSelected(const QString& node) {
    m_graphPage->highlightNode(node);
    m_timelinePage->highlightNode(node);
    m_memoryPage->highlightNode(node);
    m_inspector->showNode(node);
}

void MainWindow::onTaskActivated(const QString& node) {
    // Tasks execute nodes of the final graph: show that graph so the selection is visible.
    const int last = static_cast<int>(m_snapshot->pipeline.snapshots.size()) - 1;
    if (m_currentPass != last)
        selectPass(last);
    m_selection->select(node);
}

} // namespace sextant::app
