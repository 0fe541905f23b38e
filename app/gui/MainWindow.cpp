#include "MainWindow.h"

#include "core/backend/Artifact.h"
#include "views/AccuracyModel.h"
#include "views/DiffView.h"
#include "views/FindNode.h"
#include "views/GraphView.h"
#include "views/InspectorWidget.h"
#include "views/MemoryView.h"
#include "views/PassListModel.h"
#include "views/RunsView.h"
#include "views/SelectionModel.h"
#include "views/TargetDialog.h"
#include "views/TimelineView.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QComboBox>
#include <QCompleter>
#include <QFutureWatcher>
#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStatusBar>
#include <QStringListModel>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>

#include <set>
#include <QVBoxLayout>

namespace sextant::app {

namespace {

enum Tab { GraphTab, DiffTab, MemoryTab, TimelineTab, AccuracyTab, RunsTab };

QTableView* makeTable(QAbstractItemModel* model, QWidget* parent) {
    auto* view = new QTableView(parent);
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(22);
    view->setShowGrid(false);
    view->setAlternatingRowColors(true);
    view->horizontalHeader()->setHighlightSections(false);
    return view;
}

} // namespace

/// What a bisection run hands back to the GUI thread.
struct MainWindow::BisectDone {
    std::optional<runtime::BisectOutcome> outcome;
    QString error;
    bool cancelled = false;
    int optLevel = 2;
};

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(tr("Sextant"));
    m_worker = new views::CompileWorker(this);
    m_selection = new views::SelectionModel(this);
    buildUi();
    buildMenus();

    connect(m_worker, &views::CompileWorker::started, this, &MainWindow::onStarted);
    connect(m_worker, &views::CompileWorker::progress, this, &MainWindow::onProgress);
    connect(m_worker, &views::CompileWorker::finished, this, &MainWindow::onFinished);
    connect(m_worker, &views::CompileWorker::failed, this, &MainWindow::onFailed);
    connect(m_worker, &views::CompileWorker::cancelled, this, &MainWindow::onCancelled);
    connect(m_selection, &views::SelectionModel::nodeSelected, this, &MainWindow::onNodeSelected);
    m_bisectWatcher = new QFutureWatcher<BisectDone>(this);
    connect(m_bisectWatcher, &QFutureWatcher<BisectDone>::finished, this, &MainWindow::onBisectDone);
}

MainWindow::~MainWindow() {
    if (m_bisectCancel)
        m_bisectCancel->store(true);
    m_bisectWatcher->waitForFinished(); // its probes report to this window
}

void MainWindow::buildUi() {
    // Central tabs.
    m_tabs = new QTabWidget(this);
    m_tabs->setDocumentMode(true);

    auto* graphPage = new QWidget;
    auto* graphLayout = new QVBoxLayout(graphPage);
    graphLayout->setContentsMargins(0, 0, 0, 0);
    m_graph = new views::GraphView(graphPage);
    auto* fit = new QToolButton(graphPage);
    fit->setText(tr("Fit"));
    fit->setToolTip(tr("Fit the graph into the view (wheel zooms, drag pans)"));
    auto* legend = new QLabel(
        tr("<span style='color:#3b6fb6'>■</span> cube &nbsp; <span style='color:#3c8c4a'>■</span> vector &nbsp; "
           "<span style='color:#c87628'>■</span> DMA &nbsp; <span style='color:#808080'>■</span> host &nbsp; "
           "<span style='color:#a88a2c'>■</span> graph input/output &nbsp; "
           "<span style='color:#c87628'>□</span> view (no Task)"),
        graphPage);
    auto* graphBar = new QHBoxLayout;
    graphBar->setContentsMargins(6, 2, 6, 2);
    graphBar->addWidget(fit);
    graphBar->addWidget(legend);
    graphBar->addStretch();
    // Find, as in Netron: by node name, tensor name or the name of a node of the ONNX model.
    m_find = new QLineEdit(graphPage);
    m_find->setPlaceholderText(tr("Find node, tensor, ONNX node, or a pattern over op types and shapes (Ctrl+F)"));
    m_find->setClearButtonEnabled(true);
    m_find->setMinimumWidth(280);
    m_findModel = new QStringListModel(this);
    auto* completer = new QCompleter(m_findModel, m_find);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    completer->setFilterMode(Qt::MatchContains);
    completer->setMaxVisibleItems(16);
    m_find->setCompleter(completer);
    graphBar->addWidget(m_find);
    connect(m_find, &QLineEdit::returnPressed, this, [this] { find(m_find->text()); });
    connect(completer, qOverload<const QString&>(&QCompleter::activated), this, [this](const QString& text) { find(text); });
    graphLayout->addLayout(graphBar);
    graphLayout->addWidget(m_graph, 1);
    connect(fit, &QToolButton::clicked, m_graph, &views::GraphView::fitToView);
    connect(m_graph, &views::GraphView::nodeClicked, m_selection, &views::SelectionModel::select);
    m_tabs->addTab(graphPage, tr("Graph"));

    auto* diffPage = new QWidget;
    auto* diffLayout = new QVBoxLayout(diffPage);
    diffLayout->setContentsMargins(0, 0, 0, 0);
    m_diff = new views::DiffView(diffPage);
    m_fullDiff = new QCheckBox(tr("Show every line"), diffPage);
    auto* diffBar = new QHBoxLayout;
    diffBar->setContentsMargins(6, 2, 6, 2);
    diffBar->addWidget(m_fullDiff);
    diffBar->addStretch();
    diffLayout->addLayout(diffBar);
    diffLayout->addWidget(m_diff, 1);
    connect(m_fullDiff, &QCheckBox::toggled, this, [this](bool on) { m_diff->setContextLines(on ? -1 : 4); });
    m_tabs->addTab(diffPage, tr("IR diff"));

    auto* memPage = new QWidget;
    auto* memLayout = new QVBoxLayout(memPage);
    memLayout->setContentsMargins(6, 4, 6, 4);
    m_memorySummary = new QLabel(tr("no run yet"), memPage);
    m_memorySummary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_memorySummary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_showWeights = new QCheckBox(tr("Show weights"), memPage);
    auto* memBar = new QHBoxLayout;
    memBar->addWidget(m_memorySummary, 1);
    memBar->addWidget(m_showWeights);
    memLayout->addLayout(memBar);
    m_memory = new views::MemoryView(memPage);
    memLayout->addWidget(m_memory, 1);
    connect(m_showWeights, &QCheckBox::toggled, this, [this](bool on) { m_memory->setShown(on, true, true); });
    connect(m_memory, &views::MemoryView::bufferClicked, this,
            [this](int, const QString& node) { m_selection->select(node); });
    m_tabs->addTab(memPage, tr("Memory"));

    auto* tlPage = new QWidget;
    auto* tlLayout = new QVBoxLayout(tlPage);
    tlLayout->setContentsMargins(6, 4, 6, 4);
    m_timelineSummary = new QLabel(tr("no run yet"), tlPage);
    auto* tlLegend = new QLabel(
        tr("<span style='color:#5b8dd6'>■</span> cube &nbsp; <span style='color:#5cb06a'>■</span> vector &nbsp; "
           "<span style='color:#e0964a'>■</span> DMA &nbsp; <span style='color:#909098'>▨</span> folded Tasks "
           "(zoom in) &nbsp; <span style='color:#c0392b'>▬</span> critical path &nbsp; "
           "<span style='color:#888'>wheel: zoom · drag: pan · double-click: fit</span>"),
        tlPage);
    m_timelineSummary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    tlLegend->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    auto* critical = new QCheckBox(tr("Critical path"), tlPage);
    critical->setChecked(true);
    critical->setToolTip(tr("Mark the Tasks that set the latency: each waited for the one before it"));
    auto* tlBar = new QHBoxLayout;
    tlBar->addWidget(tlLegend, 1);
    tlBar->addWidget(critical);
    tlLayout->addWidget(m_timelineSummary);
    tlLayout->addLayout(tlBar);
    m_timeline = new views::TimelineView;
    auto* scroll = new QScrollArea(tlPage);
    scroll->setWidget(m_timeline);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    tlLayout->addWidget(scroll, 1);
    connect(m_timeline, &views::TimelineView::taskClicked, this, &MainWindow::onTaskClicked);
    connect(critical, &QCheckBox::toggled, m_timeline, &views::TimelineView::setShowCritical);
    m_tabs->addTab(tlPage, tr("Timeline"));

    // Accuracy: every tensor the NPU computed against the float64 reference, in graph order.
    auto* accPage = new QWidget;
    auto* accLayout = new QVBoxLayout(accPage);
    accLayout->setContentsMargins(6, 4, 6, 0);
    m_accuracySummary = new QLabel(accPage);
    m_accuracySummary->setTextFormat(Qt::RichText);
    m_accuracySummary->setWordWrap(true);
    m_accuracySummary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_accuracyModel = new views::AccuracyModel(this);
    auto* accView = makeTable(m_accuracyModel, accPage);
    m_accuracyView = accView;
    accView->setSelectionBehavior(QAbstractItemView::SelectRows);
    accView->setSelectionMode(QAbstractItemView::SingleSelection);
    accView->horizontalHeader()->setSectionResizeMode(views::AccuracyModel::TensorColumn, QHeaderView::Stretch);
    accView->horizontalHeader()->setSectionResizeMode(views::AccuracyModel::NodeColumn, QHeaderView::Stretch);
    for (int c = views::AccuracyModel::MaxAbsColumn; c < views::AccuracyModel::ColumnCount; ++c)
        accView->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    accLayout->addWidget(m_accuracySummary);
    accLayout->addWidget(accView, 1);
    connect(accView, &QTableView::clicked, this, [this](const QModelIndex& index) {
        const QString node = m_accuracyModel->nodeAt(index.row());
        if (!node.isEmpty())
            m_selection->select(node);
    });
    m_tabs->addTab(accPage, tr("Accuracy"));

    m_runs = new views::RunsView;
    connect(m_runs, &views::RunsView::message, this, &MainWindow::log);
    m_tabs->addTab(m_runs, tr("Runs"));
    // A hidden table cannot scroll: bring the drift into view when the tab is shown.
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int tab) {
        if (tab == AccuracyTab)
            scrollAccuracyToDrift();
    });
    setCentralWidget(m_tabs);

    // Pipeline panel (left): passes above rule counters.
    m_passModel = new views::PassListModel(this);
    m_ruleModel = new views::RuleStatsModel(this);
    auto* pipeline = new QSplitter(Qt::Vertical);
    // The optimisation level, as sextant-cli's -O0..-O3: -O3 adds the rules that trade accuracy.
    auto* levelBar = new QWidget(pipeline);
    auto* levelLayout = new QHBoxLayout(levelBar);
    levelLayout->setContentsMargins(4, 2, 4, 2);
    m_level = new QComboBox(levelBar);
    m_level->addItem(tr("-O0  shape inference only"), 0);
    m_level->addItem(tr("-O1  clean-ups"), 1);
    m_level->addItem(tr("-O2  fusion, layout, precision"), 2);
    m_level->addItem(tr("-O3  + rules that trade accuracy"), 3);
    m_level->setCurrentIndex(2);
    levelLayout->addWidget(new QLabel(tr("Level"), levelBar));
    levelLayout->addWidget(m_level, 1);
    pipeline->addWidget(levelBar);
    // Another level or rule set numbers the applications anew: a bisect limit found for the old
    // one would cut at a different place, so it goes.
    connect(m_level, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        m_bisectLimit = -1;
        recompile();
    });
    m_passView = makeTable(m_passModel, pipeline);
    m_passView->horizontalHeader()->setSectionResizeMode(views::PassListModel::PassColumn, QHeaderView::Stretch);
    for (int c = 1; c < views::PassListModel::ColumnCount; ++c)
        m_passView->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_ruleView = makeTable(m_ruleModel, pipeline);
    m_ruleView->setSelectionMode(QAbstractItemView::NoSelection);
    m_ruleView->horizontalHeader()->setSectionResizeMode(views::RuleStatsModel::RuleColumn, QHeaderView::Stretch);
    for (int c = 1; c < views::RuleStatsModel::ColumnCount; ++c)
        m_ruleView->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    pipeline->addWidget(m_passView);
    pipeline->addWidget(m_ruleView);
    pipeline->setStretchFactor(0, 0);
    pipeline->setStretchFactor(1, 3);
    pipeline->setStretchFactor(2, 2);
    connect(m_passView->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                if (current.isValid() && current.row() != m_currentPass)
                    selectPass(current.row());
            });
    connect(m_ruleModel, &views::RuleStatsModel::disabledChanged, this, [this] {
        m_bisectLimit = -1;
        recompile();
    });
    auto* pipelineDock = new QDockWidget(tr("Pipeline"), this);
    pipelineDock->setObjectName("pipeline");
    pipelineDock->setWidget(pipeline);
    pipelineDock->setMinimumWidth(360);
    addDockWidget(Qt::LeftDockWidgetArea, pipelineDock);

    // Inspector (right) and log (bottom).
    m_inspector = new views::InspectorWidget(this);
    auto* inspectorDock = new QDockWidget(tr("Inspector"), this);
    inspectorDock->setObjectName("inspector");
    inspectorDock->setWidget(m_inspector);
    inspectorDock->setMinimumWidth(300);
    addDockWidget(Qt::RightDockWidgetArea, inspectorDock);

    m_log = new QPlainTextEdit(this);
    m_log->setReadOnly(true);
    m_log->setMaximumBlockCount(5000);
    m_log->setFont(QFont(QStringLiteral("monospace"), 9));
    auto* logDock = new QDockWidget(tr("Log"), this);
    logDock->setObjectName("log");
    logDock->setWidget(m_log);
    addDockWidget(Qt::BottomDockWidgetArea, logDock);
    resizeDocks({logDock}, {130}, Qt::Vertical);
    resizeDocks({pipelineDock, inspectorDock}, {360, 330}, Qt::Horizontal);

    // Status bar: stage, progress, cancel.
    m_status = new QLabel(tr("ready"), this);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 100);
    m_progress->setMaximumWidth(220);
    m_cancel = new QPushButton(tr("Cancel"), this);
    statusBar()->addWidget(m_status, 1);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        m_worker->cancel();
        if (m_bisectCancel)
            m_bisectCancel->store(true);
    });
    setBusy(false);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open model…"), this, &MainWindow::openDialog);
    open->setShortcut(QKeySequence::Open);
    file->addAction(tr("Input &shapes…"), this, &MainWindow::inputShapesDialog);
    file->addAction(tr("&Target…"), this, &MainWindow::targetDialog);
    QAction* again = file->addAction(tr("&Recompile"), this, &MainWindow::recompile);
    again->setShortcut(QKeySequence(Qt::Key_F5));
    file->addAction(tr("&Save profile database as…"), this, &MainWindow::saveProfileAs);
    file->addAction(tr("Open profile &database as run A…"), this, [this] {
        m_tabs->setCurrentIndex(RunsTab);
        m_runs->openRunDialog(views::RunsView::Side::A);
    });
    file->addAction(tr("Open profile database as run &B…"), this, [this] {
        m_tabs->setCurrentIndex(RunsTab);
        m_runs->openRunDialog(views::RunsView::Side::B);
    });
    file->addAction(tr("&Export artifact…"), this, &MainWindow::exportArtifactDialog);
    file->addSeparator();
    QAction* quit = file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* tools = menuBar()->addMenu(tr("&Tools"));
    QAction* bisect = tools->addAction(tr("&Bisect accuracy"), this, &MainWindow::bisectAccuracy);
    bisect->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    bisect->setToolTip(tr("Find the first rule application that moves the outputs out of tolerance"));
    tools->addAction(tr("&Clear bisect limit"), this, &MainWindow::clearBisectLimit);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    QAction* findAction = view->addAction(tr("&Find…"), this, [this] {
        m_tabs->setCurrentIndex(GraphTab);
        m_find->setFocus(Qt::ShortcutFocusReason);
        m_find->selectAll();
    });
    findAction->setShortcut(QKeySequence::Find);
    QAction* findNextAction = view->addAction(tr("Find &next"), this, [this] {
        if (!m_find->text().trimmed().isEmpty())
            find(m_find->text());
    });
    findNextAction->setShortcut(QKeySequence::FindNext);
    view->addAction(tr("&Fit graph"), m_graph, &views::GraphView::fitToView);
    view->addAction(tr("Fit &timeline"), m_timeline, &views::TimelineView::fitAll);
    view->addSeparator();
    for (QDockWidget* dock : findChildren<QDockWidget*>())
        view->addAction(dock->toggleViewAction());
}

views::CompileRequest MainWindow::currentRequest() const {
    views::CompileRequest request;
    request.modelPath = m_modelPath.toStdString();
    request.pipeline.disabled = m_ruleModel->disabledRules();
    request.pipeline.optLevel = m_level->currentData().toInt();
    request.pipeline.bisectLimit = m_bisectLimit;
    request.shapes = m_shapes;
    request.target = m_target;
    return request;
}

bool MainWindow::setTargetJson(const QString& json, const QString& source, QString* error) {
    Expected<backend::Target> parsed = backend::parseTarget(json.toStdString(), source.toStdString());
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
        m_bisectLimit = -1;
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

void MainWindow::openModel(const QString& path) {
    m_modelPath = path;
    m_worker->start(currentRequest());
}

void MainWindow::bisectAccuracy() {
    if (m_modelPath.isEmpty() || m_worker->isRunning() || m_bisectWatcher->isRunning()) {
        m_status->setText(tr("bisect: wait for the running compile to finish"));
        return;
    }
    views::CompileRequest request = currentRequest();
    request.pipeline.bisectLimit = -1;
    setBusy(true);
    m_progress->setRange(0, 0); // probes: no percentage to show
    m_status->setText(tr("bisecting %1 at -O%2").arg(QFileInfo(m_modelPath).fileName()).arg(optLevel()));
    log(tr("— bisect %1 at -O%2: the optimised graph on the float64 reference executor against the "
           "imported model's")
            .arg(m_modelPath)
            .arg(optLevel()));
    m_bisectCancel = std::make_shared<std::atomic<bool>>(false);
    QPointer<MainWindow> self(this);
    auto cancel = m_bisectCancel;
    const int level = optLevel();
    m_bisectWatcher->setFuture(QtConcurrent::run([request, cancel, self, level]() {
        auto onProbe = [self](const runtime::BisectProbe& p) {
            const QString line = p.limit < 0 ? QStringLiteral("  all %1 applications: %2")
                                                   .arg(p.applications.size())
                                                   .arg(p.pass ? "PASS" : "FAIL")
                                             : QStringLiteral("  limit %1: %2").arg(p.limit).arg(p.pass ? "PASS" : "FAIL");
            QMetaObject::invokeMethod(self, [self, line] {
                if (self)
                    self->log(line);
            }, Qt::QueuedConnection);
        };
        BisectDone done;
        done.optLevel = level;
        Expected<runtime::BisectOutcome> r = views::bisectModel(request, cancel.get(), onProbe);
        if (r.ok())
            done.outcome = std::move(r).value();
        else if (r.error().kind == ErrorKind::Cancelled)
            done.cancelled = true;
        else
            done.error = QString::fromStdString(r.error().message);
        return done;
    }));
}

void MainWindow::onBisectDone() {
    const BisectDone done = m_bisectWatcher->result();
    m_progress->setRange(0, 100);
    setBusy(false);
    if (done.cancelled) {
        onCancelled();
        return;
    }
    if (!done.outcome) {
        onFailed(tr("bisect: %1").arg(done.error));
        return;
    }
    const runtime::BisectOutcome& r = *done.outcome;
    for (const runtime::TensorComparison& c : r.bad.comparisons)
        log(QStringLiteral("  ") + QString::fromStdString(runtime::formatComparison(c)));
    QString verdict;
    switch (r.kind) {
    case runtime::BisectOutcome::Kind::NoDrift:
        verdict = tr("bisect: no drift at -O%1: with all %2 rule applications the outputs stay within tolerance")
                      .arg(done.optLevel)
                      .arg(r.applications);
        break;
    case runtime::BisectOutcome::Kind::DriftWithoutRules:
        verdict = tr("bisect: out of tolerance with no rule applied: the drift is not a rule application's");
        break;
    case runtime::BisectOutcome::Kind::Culprit:
        verdict = tr("bisect: first bad application #%1 %2 (pass %3) at node '%4'")
                      .arg(r.culprit.seq)
                      .arg(QString::fromStdString(r.culprit.rule), QString::fromStdString(r.culprit.pass),
                           QString::fromStdString(r.culprit.node));
        break;
    }
    log(verdict);
    m_status->setText(verdict);
    const bool culprit = r.kind == runtime::BisectOutcome::Kind::Culprit;
    if (culprit) {
        // Show the compile that stops at the culprit: its pass diff ends with the culprit's rewrite.
        m_bisectLimit = r.culprit.seq;
        m_pendingCulprit = r.culprit;
        log(tr("recompiling with bisect limit %1 (Tools > Clear bisect limit undoes it)").arg(m_bisectLimit));
        recompile();
    }
    emit bisectFinished(verdict, culprit);
}

void MainWindow::clearBisectLimit() {
    if (m_bisectLimit < 0)
        return;
    m_bisectLimit = -1;
    recompile();
}

void MainWindow::recompile() {
    if (!m_modelPath.isEmpty())
        openModel(m_modelPath);
}

void MainWindow::openDialog() {
    const QString dir = m_modelPath.isEmpty() ? QString() : QFileInfo(m_modelPath).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open ONNX model"), dir, tr("ONNX models (*.onnx);;All files (*)"));
    if (path.isEmpty())
        return;
    m_shapes.clear(); // they were the previous model's
    m_bisectLimit = -1;
    openModel(path);
}

void MainWindow::inputShapesDialog() {
    // Offer what the last compile used: the shapes set here, or those it took from test data.
    const ir::InputShapes& current = !m_shapes.empty() || !m_snapshot ? m_shapes : m_snapshot->inputShapes;
    bool ok = false;
    const QString text = QInputDialog::getText(
        this, tr("Input shapes"),
        tr("Concrete dims for inputs with symbolic ones, NAME=DIMS separated by spaces\n"
           "(e.g. x=1x3x640x640). Empty: the shapes of the model's test inputs."),
        QLineEdit::Normal, QString::fromStdString(ir::formatShapeList(current)), &ok);
    if (!ok)
        return;
    Expected<ir::InputShapes> parsed = ir::parseShapeList(text.toStdString());
    if (!parsed.ok()) {
        onFailed(tr("input shapes: %1").arg(QString::fromStdString(parsed.error().message)));
        return;
    }
    m_shapes = std::move(parsed).value();
    recompile();
}

void MainWindow::saveProfileAs() {
    if (!m_snapshot)
        return;
    const QString path = QFileDialog::getSaveFileName(this, tr("Save profile database"), QStringLiteral("profile.db"),
                                                      tr("SQLite databases (*.db)"));
    if (path.isEmpty())
        return;
    if (!m_snapshot->profileError.empty() || m_snapshot->profilePath.empty()) {
        onFailed(tr("the run was not kept in a profile database: %1")
                     .arg(m_snapshot->profileError.empty() ? tr("nothing was simulated")
                                                           : QString::fromStdString(m_snapshot->profileError)));
        return;
    }
    QFile::remove(path);
    if (!QFile::copy(QString::fromStdString(m_snapshot->profilePath), path))
        onFailed(tr("could not write '%1'").arg(path));
    else
        log(tr("profile saved to %1").arg(path));
}

void MainWindow::exportArtifactDialog() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export the compiled artifact into"));
    if (!dir.isEmpty())
        exportArtifact(dir);
}

void MainWindow::exportArtifact(const QString& dir) {
    QString why;
    if (!m_snapshot)
        why = tr("nothing compiled yet");
    else if (!m_snapshot->loweringError.empty())
        why = tr("the graph was not lowered (%1)").arg(QString::fromStdString(m_snapshot->loweringError));
    if (!why.isEmpty()) {
        onFailed(tr("export: %1").arg(why));
        emit artifactExported(dir, why);
        return;
    }
    m_status->setText(tr("exporting the artifact to %1").arg(dir));
    // The snapshot keeps the Program alive while the pool thread writes it.
    std::shared_ptr<const views::CompileSnapshot> snap = m_snapshot;
    auto* watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, dir] {
        const QString error = watcher->result();
        watcher->deleteLater();
        if (error.isEmpty()) {
            log(tr("artifact written to %1 (manifest.json, tasks.bin, weights.bin)").arg(dir));
            m_status->setText(tr("artifact written to %1").arg(dir));
        } else {
            onFailed(tr("export: %1").arg(error));
        }
        emit artifactExported(dir, error);
    });
    watcher->setFuture(QtConcurrent::run([snap, dir]() -> QString {
        Status s = backend::writeArtifact(snap->program, dir.toStdString());
        return s.ok() ? QString() : QString::fromStdString(s.error().message);
    }));
}

void MainWindow::log(const QString& line) { m_log->appendPlainText(line); }

void MainWindow::setBusy(bool busy) {
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    m_cancel->setEnabled(busy);
}

void MainWindow::onStarted(const QString& path) {
    setBusy(true);
    m_progress->setValue(0);
    m_status->setText(tr("compiling %1").arg(QFileInfo(path).fileName()));
    log(tr("— compiling %1").arg(path));
}

void MainWindow::onProgress(int percent, const QString& stage) {
    m_progress->setValue(percent);
    m_status->setText(stage);
}

void MainWindow::onFinished(std::shared_ptr<const views::CompileSnapshot> snapshot) {
    setBusy(false);
    m_snapshot = std::move(snapshot);
    m_lastError.clear();
    for (const std::string& line : m_snapshot->log)
        log(QString::fromStdString(line));
    setWindowTitle(tr("Sextant — %1").arg(QFileInfo(QString::fromStdString(m_snapshot->modelPath)).fileName()));

    // The Runs tab compares this compile with the one before (of the same model).
    if (m_snapshot->loweringError.empty())
        m_runs->addCompile(m_snapshot->run, m_snapshot->modelPath != m_runsModel);
    m_runsModel = m_snapshot->modelPath;
    m_passModel->setRows(views::passRows(m_snapshot->pipeline));
    m_ruleModel->setStats(m_snapshot->pipeline.stats);
    const double clock = m_snapshot->program.target.clockGhz;
    m_timeline->setModel(std::shared_ptr<const views::TimelineModel>(m_snapshot, &m_snapshot->timeline), clock);
    m_memory->setMap(std::shared_ptr<const views::MemoryMapData>(m_snapshot, &m_snapshot->memory));
    m_memory->setShown(m_showWeights->isChecked(), true, true);
    m_memorySummary->setText(views::memorySummary(m_snapshot->memory));
    m_accuracyModel->setDrift(m_snapshot->accuracy);
    m_accuracySummary->setText(views::accuracySummary(m_snapshot->accuracy));
    m_tabs->setTabText(AccuracyTab, m_snapshot->accuracy.firstFailing < 0 ? tr("Accuracy") : tr("Accuracy (drift)"));
    scrollAccuracyToDrift();
    const auto& lanes = m_snapshot->timeline.lanes();
    int cores = 0;
    for (size_t i = 0; i < lanes.size(); ++i)
        if (!lanes[i].items.empty() && (i == 0 || lanes[i].core != lanes[i - 1].core || lanes[i - 1].items.empty()))
            ++cores;
    m_timeline->setCriticalTasks(std::set<int>(m_snapshot->criticalTasks.begin(), m_snapshot->criticalTasks.end()));
    m_timeline->setEmptyText({});
    // Lowering gave up cores or splits because the events did not fit: say so next to the core
    // count, briefly (the log and the tooltip have the whole sentence).
    QStringList notes;
    for (const std::string& note : m_snapshot->program.notes)
        notes << QString::fromStdString(note);
    m_timelineSummary->setText(tr("%1 Tasks on %2 of %3 cores%8 · %4 cycles (%5 µs) · critical path %7 Tasks · from %6")
                                   .arg(m_snapshot->timeline.tasks().size())
                                   .arg(cores)
                                   .arg(m_snapshot->program.target.numCores)
                                   .arg(m_snapshot->sim.totalCycles)
                                   .arg(m_snapshot->program.target.cyclesToMicros(m_snapshot->sim.totalCycles), 0, 'f', 2)
                                   .arg(QString::fromStdString(m_snapshot->profilePath))
                                   .arg(m_snapshot->criticalTasks.size())
                                   .arg(notes.isEmpty() ? QString() : tr(" (too few event slots: see the log)")));
    m_timelineSummary->setToolTip(notes.join(QLatin1Char('\n')));

    // Show the final graph: Tasks name its nodes, so cross-selection works there.
    m_currentPass = -1;
    selectPass(static_cast<int>(m_snapshot->pipeline.snapshots.size()) - 1);
    // Keep the selection if the node survived; otherwise clear it.
    const QString node = m_selection->selectedNode();
    onNodeSelected(node);

    m_status->setText(tr("compiled %1: %2 passes, %3 Tasks, %4 cycles")
                          .arg(QFileInfo(QString::fromStdString(m_snapshot->modelPath)).fileName())
                          .arg(m_snapshot->pipeline.snapshots.size() - 1)
                          .arg(m_snapshot->program.tasks.size())
                          .arg(m_snapshot->sim.totalCycles));
    if (!m_snapshot->loweringError.empty()) {
        // The passes ran; the NPU cannot run the result: say why where the NPU's views would be.
        const QString why = QString::fromStdString(m_snapshot->loweringError);
        m_status->setText(tr("compiled %1: %2 passes; not lowered for %3: %4")
                              .arg(QFileInfo(QString::fromStdString(m_snapshot->modelPath)).fileName())
                              .arg(m_snapshot->pipeline.snapshots.size() - 1)
                              .arg(QString::fromStdString(m_snapshot->program.target.name), why));
        m_timelineSummary->setText(tr("not lowered for %1: %2").arg(QString::fromStdString(m_snapshot->program.target.name), why));
        m_timeline->setEmptyText(tr("nothing simulated: the final graph could not be lowered for %1 (%2)")
                                     .arg(QString::fromStdString(m_snapshot->program.target.name), why));
        m_memorySummary->setText(tr("no memory plan: the graph was not lowered (%1)").arg(why));
        m_accuracySummary->setText(tr("nothing simulated: the graph was not lowered (%1)").arg(why.toHtmlEscaped()));
    }
    std::optional<passes::RuleApplication> culprit = std::exchange(m_pendingCulprit, std::nullopt);
    if (culprit) {
        // A bisection found it: the culprit's pass (its diff ends with the rewrite) and its node.
        selectPassById(QString::fromStdString(culprit->pass));
        m_tabs->setCurrentIndex(DiffTab);
        find(QString::fromStdString(culprit->node));
        m_status->setText(tr("bisect: first bad application #%1 %2 at node '%3', shown after pass %4 (bisect limit %1)")
                              .arg(culprit->seq)
                              .arg(QString::fromStdString(culprit->rule), QString::fromStdString(culprit->node),
                                   QString::fromStdString(culprit->pass)));
    }
    emit compileFinished();
}

void MainWindow::onFailed(const QString& error) {
    setBusy(false);
    m_lastError = error;
    m_status->setText(tr("error: %1").arg(error));
    log(tr("error: %1").arg(error));
    if (!m_quietErrors) {
        auto* box = new QMessageBox(QMessageBox::Critical, tr("Sextant"), error, QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open(); // window-modal and asynchronous: the event loop (and the window) keep running
    }
    emit compileFailed(error);
}

void MainWindow::onCancelled() {
    setBusy(false);
    m_status->setText(tr("cancelled"));
    log(tr("cancelled"));
    emit compileFailed(tr("cancelled"));
}

void MainWindow::selectPass(int row) {
    if (!m_snapshot || row < 0 || row >= static_cast<int>(m_snapshot->pipeline.snapshots.size()))
        return;
    m_currentPass = row;
    const auto& snaps = m_snapshot->pipeline.snapshots;
    if (row < static_cast<int>(m_snapshot->layouts.size()))
        m_graph->setGraphLayout(m_snapshot->layouts[static_cast<size_t>(row)]);
    const passes::Snapshot& after = snaps[static_cast<size_t>(row)];
    const passes::Snapshot& before = snaps[static_cast<size_t>(row > 0 ? row - 1 : 0)];
    m_diff->setTexts(before.text(), after.text(), QString::fromStdString(before.passId), QString::fromStdString(after.passId));
    m_tabs->setTabText(DiffTab, row == 0 ? tr("IR diff") : tr("IR diff (+%1 −%2)").arg(m_diff->addedLines()).arg(m_diff->removedLines()));
    m_inspector->setContext(m_snapshot, row);
    if (std::shared_ptr<const ir::Graph> graph = after.graph()) {
        QStringList names;
        for (const std::string& n : views::findCompletions(*graph))
            names << QString::fromStdString(n);
        m_findModel->setStringList(names);
    }
    m_inspector->showNode(m_selection->selectedNode());
    m_graph->selectNode(m_selection->selectedNode());
    const QModelIndex index = m_passModel->index(row, 0);
    if (m_passView->currentIndex().row() != row)
        m_passView->setCurrentIndex(index);
}

bool MainWindow::selectPassById(const QString& passId) {
    if (!m_snapshot)
        return false;
    const auto& snaps = m_snapshot->pipeline.snapshots;
    for (size_t i = 0; i < snaps.size(); ++i) {
        if (QString::fromStdString(snaps[i].passId) == passId) {
            selectPass(static_cast<int>(i));
            return true;
        }
    }
    return false;
}

bool MainWindow::showTab(const QString& name) {
    const QString n = name.toLower();
    const int tab = n == "graph"      ? GraphTab
                    : n == "diff"     ? DiffTab
                    : n == "memory"   ? MemoryTab
                    : n == "timeline" ? TimelineTab
                    : n == "accuracy" ? AccuracyTab
                    : n == "runs"     ? RunsTab
                                      : -1;
    if (tab < 0)
        return false;
    m_tabs->setCurrentIndex(tab);
    return true;
}

void MainWindow::selectNode(const QString& node) { m_selection->select(node); }

void MainWindow::scrollAccuracyToDrift() {
    const int first = m_accuracyModel->drift().firstFailing;
    if (first >= 0 && m_accuracyView->isVisible())
        m_accuracyView->scrollTo(m_accuracyModel->index(first, 0), QAbstractItemView::PositionAtCenter);
}

bool MainWindow::setOptLevel(int level) {
    const int index = m_level->findData(level);
    if (index < 0)
        return false;
    const QSignalBlocker quiet(m_level); // the caller compiles when it is ready
    m_level->setCurrentIndex(index);
    return true;
}

int MainWindow::optLevel() const { return m_level->currentData().toInt(); }

QString MainWindow::find(const QString& name) {
    if (!m_snapshot || m_currentPass < 0)
        return {};
    const passes::Snapshot& shown = m_snapshot->pipeline.snapshots[static_cast<size_t>(m_currentPass)];
    std::shared_ptr<const ir::Graph> graph = shown.graph();
    if (!graph)
        return {};
    const views::FindResult r = views::findNode(*graph, m_snapshot->pipeline, name.toStdString());
    QString message = QString::fromStdString(r.message);
    if (r.known) {
        m_findMatches.clear();
        if (!r.node.empty())
            m_selection->select(QString::fromStdString(r.node));
    } else {
        // Not a name: a pattern over names, op types and shapes. Asking again for the same one
        // in the same graph steps to the next match.
        const QString key = name.trimmed() + QLatin1Char('\n') + QString::fromStdString(shown.passId);
        if (key != m_findKey || m_findMatches.empty()) {
            m_findKey = key;
            m_findNext = 0;
            Expected<std::vector<std::string>> matches = views::findMatching(*graph, name.toStdString());
            m_findMatches = matches.ok() ? std::move(matches).value() : std::vector<std::string>{};
            if (!matches.ok())
                message = QString::fromStdString(matches.error().message);
        }
        if (!m_findMatches.empty()) {
            const size_t i = m_findNext++ % m_findMatches.size();
            const std::string& node = m_findMatches[i];
            const ir::Node* n = graph->findNode(node);
            message = tr("'%1': %2 of %3 matching nodes: '%4' (%5)%6")
                          .arg(name.trimmed())
                          .arg(i + 1)
                          .arg(m_findMatches.size())
                          .arg(QString::fromStdString(node),
                               n ? QString::fromUtf8(n->info().name.data(), static_cast<int>(n->info().name.size()))
                                 : QString(),
                               m_findMatches.size() > 1 ? tr(" · Enter or F3 for the next") : QString());
            m_selection->select(QString::fromStdString(node));
        } else if (message == QString::fromStdString(r.message)) {
            message = tr("nothing in this graph is named '%1', and no node's name, op type or output type matches "
                         "it as a pattern")
                          .arg(name.trimmed());
        }
    }
    if (!message.isEmpty()) {
        m_status->setText(message);
        log(tr("find: %1").arg(message));
    }
    return message;
}

void MainWindow::onNodeSelected(const QString& node) {
    m_graph->selectNode(node);
    m_timeline->highlightNode(node);
    m_memory->highlightNode(node);
    m_inspector->showNode(node);
}

void MainWindow::onTaskClicked(int taskIndex) {
    if (!m_snapshot)
        return;
    const auto& tasks = m_snapshot->timeline.tasks();
    if (taskIndex < 0 || taskIndex >= static_cast<int>(tasks.size()) || tasks[static_cast<size_t>(taskIndex)].nodes.empty())
        return;
    // Tasks execute nodes of the final graph: show that graph so the selection is visible.
    const int last = static_cast<int>(m_snapshot->pipeline.snapshots.size()) - 1;
    if (m_currentPass != last)
        selectPass(last);
    m_selection->select(QString::fromStdString(tasks[static_cast<size_t>(taskIndex)].nodes.front()));
}

} // namespace sextant::app
