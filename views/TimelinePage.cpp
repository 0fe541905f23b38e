#include "TimelinePage.h"

#include "RunChooser.h"
#include "TimelineLoad.h"
#include "TimelineView.h"

#include <QCheckBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QShortcut>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <QPointer>

#include <algorithm>
#include <set>

namespace sextant::views {

namespace {

/// The cores that ran at least one Task: runs of non-empty lanes of one core count once. The
/// host lane is not a core.
int coresUsed(const TimelineModel& timeline) {
    const auto& lanes = timeline.lanes();
    int cores = 0;
    for (size_t i = 0; i < lanes.size(); ++i)
        if (!lanes[i].items.empty() && lanes[i].unit != backend::UnitKind::Host &&
            (i == 0 || lanes[i].core != lanes[i - 1].core || lanes[i - 1].items.empty()))
            ++cores;
    return cores;
}

/// Whether a host lane ran anything (host steps of a partitioned program).
bool hostRan(const TimelineModel& timeline) {
    const auto& lanes = timeline.lanes();
    return std::any_of(lanes.begin(), lanes.end(), [](const TimelineLane& l) {
        return l.unit == backend::UnitKind::Host && !l.items.empty();
    });
}

/// Queues `fn` from a pool thread onto `channel`, an object of the GUI thread. The queued call
/// holds the channel too: were the pool thread's reference the last, the channel's deleteLater
/// could be delivered first (QTest::qWait and nested event loops send DeferredDelete events on
/// their own), and Qt drops the pending calls of an object it deletes. The call would be lost.
template <class Fn>
void postThrough(const std::shared_ptr<QObject>& channel, Fn fn) {
    QObject* context = channel.get();
    QMetaObject::invokeMethod(
        context, [channel, fn = std::move(fn)]() mutable { fn(); }, Qt::QueuedConnection);
}

} // namespace

TimelinePage::TimelinePage(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    m_summary = new QLabel(tr("no run yet"), this);
    auto* legend = new QLabel(
        tr("<span style='color:#5b8dd6'>■</span> cube &nbsp; <span style='color:#5cb06a'>■</span> "
           "vector &nbsp; "
           "<span style='color:#e0964a'>■</span> DMA &nbsp; <span style='color:#9a6fc4'>■</span> host &nbsp; "
           "<span style='color:#a9c3ea'>■</span> "
           "load/store (▨ stream) &nbsp; <span style='color:#adc6ea'>■</span> folded (paler) &nbsp; "
           "<span style='color:#c0392b'>▬</span> critical path &nbsp; "
           "<span style='color:#888'>wheel: zoom · drag: pan · double-click: fit</span>"),
        this);
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    legend->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    legend->setToolTip(tr(
        "Each core's dma lane is its DMA engine: the DMA-only Tasks, and the loads and stores of "
        "the other Tasks in a lighter shade of their colour. A double-buffered Task streams its "
        "tiles (hatched) while it computes; a single-buffered one loads, computes, then stores. "
        "A Task is solid where its unit computes and pale where it waits for its DMA. Paler, with a "
        "count: Tasks too narrow to draw one by one, folded together (zoom in to see them). The host "
        "lane, last, holds the host steps: nodes the NPU cannot run, which the host runs between NPU "
        "Tasks (their time is an estimate)."));
    auto* critical = new QCheckBox(tr("Critical path"), this);
    critical->setChecked(true);
    critical->setToolTip(
        tr("Mark the Tasks that set the latency: each waited for the one before it"));
    // Find: outline the Tasks whose name, kernel or node contains the text, step through them.
    m_find = new QLineEdit(this);
    m_find->setObjectName(QStringLiteral("timelineFind"));
    m_find->setPlaceholderText(tr("Find Task: name, kernel or node"));
    m_find->setClearButtonEnabled(true);
    m_find->setMaximumWidth(230);
    m_find->setToolTip(tr("Outlines the Tasks whose name, kernel or graph node contains this text "
                          "(any case). Enter or F3: zoom to the next one; Shift+F3: the one before."));
    m_findPrev = new QToolButton(this);
    m_findPrev->setArrowType(Qt::LeftArrow);
    m_findPrev->setToolTip(tr("Previous match (Shift+F3)"));
    m_findNext = new QToolButton(this);
    m_findNext->setArrowType(Qt::RightArrow);
    m_findNext->setToolTip(tr("Next match (Enter, F3)"));
    m_findCount = new QLabel(this);
    m_findCount->setObjectName(QStringLiteral("timelineFindCount"));
    m_findTimer = new QTimer(this);
    m_findTimer->setSingleShot(true);
    m_findTimer->setInterval(150);
    connect(m_findTimer, &QTimer::timeout, this, &TimelinePage::startFind);
    connect(m_find, &QLineEdit::textChanged, this, [this] {
        m_pendingStep = 0;
        m_findTimer->start();
        updateFindStatus();
    });
    connect(m_find, &QLineEdit::returnPressed, this, &TimelinePage::findNext);
    connect(m_findPrev, &QToolButton::clicked, this, &TimelinePage::findPrevious);
    connect(m_findNext, &QToolButton::clicked, this, &TimelinePage::findNext);
    auto* next = new QShortcut(QKeySequence(Qt::Key_F3), this);
    next->setContext(Qt::WidgetWithChildrenShortcut);
    connect(next, &QShortcut::activated, this, &TimelinePage::findNext);
    auto* prev = new QShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F3), this);
    prev->setContext(Qt::WidgetWithChildrenShortcut);
    connect(prev, &QShortcut::activated, this, &TimelinePage::findPrevious);
    auto* bar = new QHBoxLayout;
    bar->addWidget(legend, 1);
    bar->addWidget(critical);
    // A database being read: how far, and a way to stop; a database shown: the way back.
    m_progress = new QProgressBar(this);
    m_progress->setMaximumWidth(220);
    m_progress->setFormat(tr("%v of %m Tasks"));
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_back = new QPushButton(tr("Show the compile"), this);
    m_back->setToolTip(tr("Show the current compile's run instead of the database's"));
    m_progress->hide();
    m_cancel->hide();
    m_back->hide();
    auto* top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(m_find);
    top->addWidget(m_findPrev);
    top->addWidget(m_findNext);
    top->addWidget(m_findCount);
    top->addWidget(m_progress);
    top->addWidget(m_cancel);
    top->addWidget(m_back);
    connect(m_cancel, &QPushButton::clicked, this, &TimelinePage::cancelLoad);
    connect(m_back, &QPushButton::clicked, this, &TimelinePage::showCompile);
    layout->addLayout(top);
    layout->addLayout(bar);
    m_timeline = new TimelineView;
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(m_timeline);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    layout->addWidget(scroll, 1);
    connect(critical, &QCheckBox::toggled, m_timeline, &TimelineView::setShowCritical);
    connect(m_timeline, &TimelineView::taskClicked, this, [this](int taskIndex) {
        const auto& tasks = m_timeline->model()->tasks();
        if (taskIndex >= 0 && taskIndex < static_cast<int>(tasks.size()) &&
            !tasks[static_cast<size_t>(taskIndex)].nodes.empty())
            emit taskActivated(
                QString::fromStdString(tasks[static_cast<size_t>(taskIndex)].nodes.front()));
    });
}

void TimelinePage::setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot) {
    m_snapshot = snapshot;
    if (!m_showsProfile)
        showSnapshot();
}

TimelinePage::~TimelinePage() {
    if (m_cancelFlag)
        m_cancelFlag->store(true); // a load still running stops at its next few thousand rows
    if (m_findCancel)
        m_findCancel->store(true);
}

void TimelinePage::showCompile() {
    cancelLoad();
    m_doneSerial = m_loadSerial; // what it still sends is dropped
    m_progress->hide();
    m_cancel->hide();
    m_showsProfile = false;
    m_back->hide();
    if (m_snapshot) {
        showSnapshot();
        return;
    }
    m_timeline->setModel(nullptr, 1.0);
    startFind();
    m_summary->setText(tr("no run yet"));
}

void TimelinePage::showSnapshot() {
    const std::shared_ptr<const CompileSnapshot>& snapshot = m_snapshot;
    const backend::Target& target = snapshot->program.target;
    m_timeline->setModel(std::shared_ptr<const TimelineModel>(snapshot, &snapshot->timeline),
                         target.clockGhz);
    m_timeline->setCriticalTasks(
        std::set<int>(snapshot->criticalTasks.begin(), snapshot->criticalTasks.end()));
    m_timeline->setEmptyText({});
    startFind();
    // Lowering gave up cores or splits because the events did not fit: say so next to the core
    // count, briefly (the log and the tooltip have the whole sentence).
    QStringList notes;
    for (const std::string& note : snapshot->program.notes)
        notes << QString::fromStdString(note);
    m_summary->setText(
        tr("%1 Tasks on %2 of %3 cores%9%8 · %4 cycles (%5 µs) · critical path %7 Tasks · from %6")
            .arg(snapshot->timeline.tasks().size())
            .arg(QString::number(coresUsed(snapshot->timeline)))
            .arg(target.numCores)
            .arg(snapshot->sim.totalCycles)
            .arg(target.cyclesToMicros(snapshot->sim.totalCycles), 0, 'f', 2)
            .arg(QString::fromStdString(snapshot->profilePath))
            .arg(snapshot->criticalTasks.size())
            .arg(notes.isEmpty() ? QString() : tr(" (too few event slots: see the log)"))
            .arg(hostRan(snapshot->timeline) ? tr(" and the host") : QString()));
    m_summary->setToolTip(notes.join(QLatin1Char('\n')));
    if (snapshot->loweringError.empty())
        return;
    const QString why = QString::fromStdString(snapshot->loweringError);
    const QString name = QString::fromStdString(target.name);
    m_summary->setText(tr("not lowered for %1: %2").arg(name, why));
    m_timeline->setEmptyText(
        tr("nothing simulated: the final graph could not be lowered for %1 (%2)").arg(name, why));
}

void TimelinePage::openProfileDialog() {
    RunChoice choice;
    choice.open = [this](const QString& path, int64_t run) { openProfile(path, run); };
    choice.failed = [this](const QString& message) {
        QMessageBox::warning(this, tr("Open profile database"), message);
    };
    askForRun(this, tr("Open profile database"), std::move(choice));
}

void TimelinePage::openProfile(const QString& path, int64_t run) {
    cancelLoad();
    const int serial = ++m_loadSerial;
    m_cancelFlag = std::make_shared<std::atomic<bool>>(false);
    m_showsProfile = true;
    m_back->setVisible(m_snapshot != nullptr);
    m_progress->setRange(0, 0); // until the count is known
    m_progress->show();
    m_cancel->show();
    m_summary->setText(tr("reading %1 …").arg(path));
    m_timeline->setModel(nullptr, 1.0);
    m_timeline->setEmptyText(tr("reading %1 …").arg(path));
    startFind();
    // The pool thread reports through queued calls on a GUI-thread object it shares (deleted
    // there once both are done with it); each call finds the page again, and is dropped when the
    // page is gone or a newer load (or the compile) took its place.
    std::shared_ptr<QObject> channel(new QObject, [](QObject* o) { o->deleteLater(); });
    QPointer<TimelinePage> self(this);
    auto post = [channel, self, serial](auto fn) {
        postThrough(channel, [self, serial, fn] {
            if (self && self->m_loadSerial == serial && self->m_showsProfile)
                fn(*self);
        });
    };
    TimelineLoadHooks hooks;
    hooks.cancelled = [flag = m_cancelFlag] { return flag->load(); };
    hooks.progress = [post](size_t done, size_t total) {
        post([done, total](TimelinePage& page) {
            page.m_progress->setRange(0, static_cast<int>(std::min<size_t>(total, INT32_MAX)));
            page.m_progress->setValue(static_cast<int>(std::min<size_t>(done, INT32_MAX)));
        });
    };
    hooks.partial = [post](std::shared_ptr<const TimelineModel> model, const TimelineRunInfo& info) {
        post([model, info](TimelinePage& page) { page.showProfileModel(model, info, false); });
    };
    (void)QtConcurrent::run([db = path.toStdString(), run, hooks, post] {
        TimelineRunInfo info;
        auto model = loadTimelineRun(db, run, hooks, info);
        const QString error = model.ok() ? QString() : QString::fromStdString(model.error().message);
        std::shared_ptr<const TimelineModel> whole = model.ok() ? *model : nullptr;
        post([whole, info, error](TimelinePage& page) {
            if (whole)
                page.showProfileModel(whole, info, true);
            page.finishLoad(page.m_loadSerial, error);
        });
    });
}

void TimelinePage::showProfileModel(std::shared_ptr<const TimelineModel> model,
                                    const TimelineRunInfo& info, bool complete) {
    const bool keep = m_timeline->model() != nullptr && !m_timeline->autoFit();
    const TimelineCoords coords = m_timeline->coords();
    m_timeline->setModel(model, info.clockGhz);
    m_timeline->setCriticalTasks(std::set<int>(info.criticalTasks.begin(), info.criticalTasks.end()));
    if (!complete)
        m_timeline->setFitCycles(info.totalCycles); // the part read so far, on the whole run's scale
    else
        m_timeline->setFitCycles(0);
    if (keep)
        m_timeline->setCoords(coords); // keep where the user is looking while the rest arrives
    startFind(); // the Tasks read so far (the matches' indices are the new model's)
    const QLocale locale;
    const QString tasks = complete ? locale.toString(static_cast<qulonglong>(model->tasks().size()))
                                   : tr("%1 of %2").arg(locale.toString(static_cast<qulonglong>(model->tasks().size())),
                                                        locale.toString(static_cast<qulonglong>(info.tasks)));
    const QString critical = info.criticalTasks.empty()
                                 ? (complete ? tr("no critical path stored") : tr("critical path when all is read"))
                                 : tr("critical path %1 Tasks (from the stored dependencies)")
                                       .arg(locale.toString(static_cast<qulonglong>(info.criticalTasks.size())));
    m_summary->setText(tr("%1 Tasks on %2 cores · %3 cycles (%4 µs) · %5 run %6 (%7, %8) · %9")
                           .arg(tasks)
                           .arg(info.numCores)
                           .arg(locale.toString(static_cast<qulonglong>(info.totalCycles)))
                           .arg(static_cast<double>(info.totalCycles) / (info.clockGhz * 1000.0), 0, 'f', 2)
                           .arg(QFileInfo(QString::fromStdString(info.db)).fileName())
                           .arg(info.run.id)
                           .arg(QFileInfo(QString::fromStdString(info.run.model)).fileName(),
                                QString::fromStdString(info.run.target))
                           .arg(critical));
    m_summary->setToolTip(QString::fromStdString(info.db));
}

void TimelinePage::finishLoad(int serial, const QString& error) {
    m_doneSerial = serial;
    m_progress->hide();
    m_cancel->hide();
    if (!error.isEmpty()) {
        m_summary->setText(m_timeline->model()
                               ? m_summary->text() + tr(" · stopped: %1").arg(error)
                               : tr("could not read the database: %1").arg(error));
        m_timeline->setEmptyText(error);
    }
    emit profileLoaded(error);
}

void TimelinePage::cancelLoad() {
    if (!isLoading())
        return;
    if (m_cancelFlag)
        m_cancelFlag->store(true);
}

QString TimelinePage::summaryText() const {
    return m_summary->text();
}

void TimelinePage::highlightNode(const QString& node) {
    m_timeline->highlightNode(node);
    m_findOutlines = false;
}

void TimelinePage::findText(const QString& text) {
    m_find->setText(text);
}

void TimelinePage::startFind() {
    m_findTimer->stop();
    if (m_findCancel)
        m_findCancel->store(true);
    const int serial = ++m_findSerial;
    m_matches.clear();
    m_matchPos = -1;
    const std::string query = m_find->text().trimmed().toStdString();
    std::shared_ptr<const TimelineModel> model = m_timeline->sharedModel();
    if (query.empty() || !model) {
        m_findDone = serial;
        m_pendingStep = 0;
        if (m_findOutlines)
            m_timeline->highlightTasks({}); // the old matches, not a node's Tasks
        m_findOutlines = false;
        m_timeline->focusTask(-1);
        updateFindStatus();
        return;
    }
    m_findCancel = std::make_shared<std::atomic<bool>>(false);
    updateFindStatus();
    // As openProfile: the answer comes back through a GUI-thread object, and is dropped when
    // the page is gone, a newer search started or the Tasks shown changed.
    std::shared_ptr<QObject> channel(new QObject, [](QObject* o) { o->deleteLater(); });
    QPointer<TimelinePage> self(this);
    (void)QtConcurrent::run([model, query, flag = m_findCancel, channel, self, serial] {
        std::vector<int> found = model->findTasks(query, [flag] { return flag->load(); });
        if (flag->load())
            return;
        postThrough(
            channel,
            [self, serial, model, found = std::move(found)] {
                if (!self || self->m_findSerial != serial || self->m_timeline->model() != model.get())
                    return;
                TimelinePage& page = *self;
                page.m_findDone = serial;
                page.m_matches = found;
                page.m_timeline->focusTask(-1);
                page.m_timeline->highlightTasks(page.m_matches);
                page.m_findOutlines = true;
                const int step = page.m_pendingStep;
                page.m_pendingStep = 0;
                if (step != 0)
                    page.stepFind(step);
                page.updateFindStatus();
            });
    });
}

bool TimelinePage::isFinding() const {
    return m_findSerial != m_findDone || m_findTimer->isActive();
}

void TimelinePage::findNext() {
    stepFind(1);
}

void TimelinePage::findPrevious() {
    stepFind(-1);
}

void TimelinePage::stepFind(int direction) {
    if (m_findTimer->isActive())
        startFind(); // Enter before the pause: search now
    if (m_findSerial != m_findDone) {
        m_pendingStep = direction; // once the matches come
        return;
    }
    if (m_matches.empty())
        return;
    const int n = static_cast<int>(m_matches.size());
    m_matchPos = m_matchPos < 0 ? (direction > 0 ? 0 : n - 1) : ((m_matchPos + direction) % n + n) % n;
    const int task = m_matches[static_cast<size_t>(m_matchPos)];
    m_timeline->focusTask(task);
    // A node selected meanwhile outlined its own Tasks: the matches come back. Past the limit
    // the outline is the focused Task alone, so it moves with it.
    if (!m_findOutlines || m_matches.size() > TimelineView::kMaxOutlined)
        m_timeline->highlightTasks(m_matches);
    m_findOutlines = true;
    updateFindStatus();
}

void TimelinePage::updateFindStatus() {
    m_findCount->setText(findStatus());
    const bool any = !m_matches.empty();
    m_findPrev->setEnabled(any);
    m_findNext->setEnabled(any);
}

QString TimelinePage::findStatus() const {
    if (m_find->text().trimmed().isEmpty())
        return {};
    if (isFinding())
        return tr("finding …");
    if (m_matches.empty())
        return m_timeline->model() ? tr("no Task matches") : QString();
    const QLocale locale;
    const QString total = locale.toString(static_cast<qulonglong>(m_matches.size()));
    if (m_matchPos < 0)
        return m_matches.size() > TimelineView::kMaxOutlined
                   ? tr("%1 matches (too many to outline: Enter steps through them)").arg(total)
                   : tr("%1 matches").arg(total);
    return tr("%1 of %2").arg(locale.toString(m_matchPos + 1), total);
}

} // namespace sextant::views
