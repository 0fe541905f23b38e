#include "TimelinePage.h"

#include "TimelineView.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include <set>

namespace sextant::views {

namespace {

/// The cores that ran at least one Task: runs of non-empty lanes of one core count once.
int coresUsed(const TimelineModel& timeline) {
    const auto& lanes = timeline.lanes();
    int cores = 0;
    for (size_t i = 0; i < lanes.size(); ++i)
        if (!lanes[i].items.empty() &&
            (i == 0 || lanes[i].core != lanes[i - 1].core || lanes[i - 1].items.empty()))
            ++cores;
    return cores;
}

} // namespace

TimelinePage::TimelinePage(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    m_summary = new QLabel(tr("no run yet"), this);
    auto* legend = new QLabel(
        tr("<span style='color:#5b8dd6'>■</span> cube &nbsp; <span style='color:#5cb06a'>■</span> "
           "vector &nbsp; "
           "<span style='color:#e0964a'>■</span> DMA &nbsp; <span style='color:#a9c3ea'>■</span> "
           "load/store (▨ stream) &nbsp; <span style='color:#909098'>▨</span> folded &nbsp; "
           "<span style='color:#c0392b'>▬</span> critical path &nbsp; "
           "<span style='color:#888'>wheel: zoom · drag: pan · double-click: fit</span>"),
        this);
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    legend->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    legend->setToolTip(tr(
        "Each core's dma lane is its DMA engine: the DMA-only Tasks, and the loads and stores of "
        "the other Tasks in a lighter shade of their colour. A double-buffered Task streams its "
        "tiles (hatched) while it computes; a single-buffered one loads, computes, then stores. "
        "A Task is solid where its unit computes and pale where it waits for its DMA. Grey: Tasks "
        "too narrow to draw one by one, folded together (zoom in to see them)."));
    auto* critical = new QCheckBox(tr("Critical path"), this);
    critical->setChecked(true);
    critical->setToolTip(
        tr("Mark the Tasks that set the latency: each waited for the one before it"));
    auto* bar = new QHBoxLayout;
    bar->addWidget(legend, 1);
    bar->addWidget(critical);
    layout->addWidget(m_summary);
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
    const backend::Target& target = snapshot->program.target;
    m_timeline->setModel(std::shared_ptr<const TimelineModel>(snapshot, &snapshot->timeline),
                         target.clockGhz);
    m_timeline->setCriticalTasks(
        std::set<int>(snapshot->criticalTasks.begin(), snapshot->criticalTasks.end()));
    m_timeline->setEmptyText({});
    // Lowering gave up cores or splits because the events did not fit: say so next to the core
    // count, briefly (the log and the tooltip have the whole sentence).
    QStringList notes;
    for (const std::string& note : snapshot->program.notes)
        notes << QString::fromStdString(note);
    m_summary->setText(
        tr("%1 Tasks on %2 of %3 cores%8 · %4 cycles (%5 µs) · critical path %7 Tasks · from %6")
            .arg(snapshot->timeline.tasks().size())
            .arg(coresUsed(snapshot->timeline))
            .arg(target.numCores)
            .arg(snapshot->sim.totalCycles)
            .arg(target.cyclesToMicros(snapshot->sim.totalCycles), 0, 'f', 2)
            .arg(QString::fromStdString(snapshot->profilePath))
            .arg(snapshot->criticalTasks.size())
            .arg(notes.isEmpty() ? QString() : tr(" (too few event slots: see the log)")));
    m_summary->setToolTip(notes.join(QLatin1Char('\n')));
    if (snapshot->loweringError.empty())
        return;
    const QString why = QString::fromStdString(snapshot->loweringError);
    const QString name = QString::fromStdString(target.name);
    m_summary->setText(tr("not lowered for %1: %2").arg(name, why));
    m_timeline->setEmptyText(
        tr("nothing simulated: the final graph could not be lowered for %1 (%2)").arg(name, why));
}

QString TimelinePage::summaryText() const {
    return m_summary->text();
}

void TimelinePage::highlightNode(const QString& node) {
    m_timeline->highlightNode(node);
}

} // namespace sextant::views
