#include "RunsView.h"

#include "RunChooser.h"

#include "TimelineView.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cstdlib>

namespace sextant::views {

// ---- RunCompareModel

void RunCompareModel::setComparison(std::shared_ptr<const profiler::RunComparison> comparison) {
    beginResetModel();
    m_comparison = std::move(comparison);
    endResetModel();
}

int RunCompareModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() || !m_comparison ? 0 : static_cast<int>(m_comparison->tasks.size());
}

int RunCompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunCompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case TaskColumn: return tr("Task (group)");
    case KernelColumn: return tr("Kernel");
    case CyclesAColumn: return tr("Cycles A");
    case CyclesBColumn: return tr("Cycles B");
    case DeltaColumn: return tr("Δ cycles");
    case ChangeColumn: return tr("Change");
    default: return {};
    }
}

QVariant RunCompareModel::data(const QModelIndex& index, int role) const {
    if (!m_comparison || !index.isValid() || index.row() >= rowCount())
        return {};
    const profiler::TaskDelta& d = m_comparison->tasks[static_cast<size_t>(index.row())];
    const bool inA = d.taskA >= 0, inB = d.taskB >= 0;
    const QLocale locale = QLocale::c();
    if (role == Qt::TextAlignmentRole)
        return index.column() >= CyclesAColumn ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                               : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && index.column() >= DeltaColumn) {
        if (!inA || !inB || d.delta() == 0)
            return {};
        return QColor(d.delta() < 0 ? 0x1e7b34 : 0xb3261e); // faster green, slower red
    }
    if (role == Qt::UserRole) { // what sorting compares
        switch (index.column()) {
        case TaskColumn: return QString::fromStdString(d.name);
        case KernelColumn: return QString::fromStdString(inA ? d.kernelA : d.kernelB);
        case CyclesAColumn: return static_cast<qulonglong>(d.cyclesA);
        case CyclesBColumn: return static_cast<qulonglong>(d.cyclesB);
        case DeltaColumn:
        case ChangeColumn: return static_cast<qlonglong>(std::llabs(d.delta()));
        default: return {};
        }
    }
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case TaskColumn: return QString::fromStdString(d.name);
    case KernelColumn: {
        auto k = [](const std::string& kernel, int parts) {
            return QString::fromStdString(kernel) + (parts > 1 ? QStringLiteral(" ×%1").arg(parts) : QString());
        };
        const QString ka = k(d.kernelA, d.partsA), kb = k(d.kernelB, d.partsB);
        if (inA && inB && ka != kb)
            return ka + QStringLiteral(" → ") + kb;
        return inA ? ka : kb;
    }
    case CyclesAColumn: return inA ? locale.toString(static_cast<qulonglong>(d.cyclesA)) : QStringLiteral("–");
    case CyclesBColumn: return inB ? locale.toString(static_cast<qulonglong>(d.cyclesB)) : QStringLiteral("–");
    case DeltaColumn: {
        const QString n = locale.toString(static_cast<qlonglong>(d.delta()));
        return d.delta() > 0 ? QStringLiteral("+") + n : n;
    }
    case ChangeColumn:
        if (!inA)
            return tr("only in B");
        if (!inB)
            return tr("only in A");
        if (d.cyclesA == 0)
            return d.cyclesB == 0 ? QStringLiteral("0.0 %") : tr("new");
        return QStringLiteral("%1%2 %").arg(d.delta() > 0 ? "+" : "").arg(100.0 * static_cast<double>(d.delta()) / static_cast<double>(d.cyclesA), 0, 'f', 1);
    default: return {};
    }
}

// ---- RunsView

RunsView::RunsView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);

    auto sideBar = [this, layout](Side side, QLabel*& label) {
        auto* row = new QHBoxLayout;
        label = new QLabel(this);
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
        label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
        auto* open = new QPushButton(side == Side::A ? tr("Open A…") : tr("Open B…"), this);
        open->setToolTip(tr("Show a run of any profile database (sextant-cli run --profile, File > Save profile "
                            "database) on this side"));
        connect(open, &QPushButton::clicked, this, [this, side] { openRunDialog(side); });
        row->addWidget(label, 1);
        row->addWidget(open);
        if (side == Side::B) {
            auto* follow = new QPushButton(tr("Previous vs current compile"), this);
            connect(follow, &QPushButton::clicked, this, &RunsView::followCompiles);
            row->addWidget(follow);
        }
        layout->addLayout(row);
    };
    sideBar(Side::A, m_labelA);
    sideBar(Side::B, m_labelB);

    m_summary = new QLabel(this);
    m_summary->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    layout->addWidget(m_summary);

    auto* split = new QSplitter(Qt::Vertical, this);
    m_timelineA = new TimelineView;
    m_timelineB = new TimelineView;
    m_timelineA->setEmptyText(tr("A: the previous compile appears here after a recompile, or open a run (Open A…)"));
    m_timelineB->setEmptyText(tr("B: the current compile, or open a run (Open B…)"));
    m_model = new RunCompareModel(this);
    m_sorted = new QSortFilterProxyModel(this);
    m_sorted->setSourceModel(m_model);
    m_sorted->setSortRole(Qt::UserRole);
    m_table = new QTableView(split);
    m_table->setModel(m_sorted);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(RunCompareModel::DeltaColumn, Qt::DescendingOrder); // biggest change first
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(22);
    m_table->setShowGrid(false);
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setSectionResizeMode(RunCompareModel::TaskColumn, QHeaderView::Stretch);
    for (int c = RunCompareModel::KernelColumn; c < RunCompareModel::ColumnCount; ++c)
        m_table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    // Each timeline scrolls on its own: eight cores' lanes are taller than half the tab.
    for (TimelineView* view : {m_timelineA, m_timelineB}) {
        auto* scroll = new QScrollArea(split);
        scroll->setWidget(view);
        scroll->setWidgetResizable(true);
        scroll->setFrameShape(QFrame::NoFrame);
        scroll->setMinimumHeight(90);
        split->addWidget(scroll);
    }
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 3);
    split->setStretchFactor(2, 2);
    layout->addWidget(split, 1);

    // One time scale: zooming or panning either timeline moves the other.
    connect(m_timelineA, &TimelineView::coordsChanged, m_timelineB, &TimelineView::setCoords);
    connect(m_timelineB, &TimelineView::coordsChanged, m_timelineA, &TimelineView::setCoords);
    // A Task or a row: the Tasks running the same node light up in both runs.
    auto onTask = [this](const std::shared_ptr<TimelineModel>& model, int index) {
        if (model && index >= 0 && index < static_cast<int>(model->tasks().size()) &&
            !model->tasks()[static_cast<size_t>(index)].nodes.empty())
            highlight(QString::fromStdString(model->tasks()[static_cast<size_t>(index)].nodes.front()));
    };
    connect(m_timelineA, &TimelineView::taskClicked, this, [this, onTask](int i) { onTask(m_modelA, i); });
    connect(m_timelineB, &TimelineView::taskClicked, this, [this, onTask](int i) { onTask(m_modelB, i); });
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                const QModelIndex source = m_sorted->mapToSource(current);
                const profiler::RunComparison* c = m_model->comparison();
                if (!c || !source.isValid())
                    return;
                const profiler::TaskDelta& d = c->tasks[static_cast<size_t>(source.row())];
                // The Task's first node, from whichever run has it.
                for (const auto& [runTasks, id] : {std::pair{&c->a.tasks, d.taskA}, std::pair{&c->b.tasks, d.taskB}})
                    for (const profiler::TaskRow& t : *runTasks)
                        if (id >= 0 && t.id == id && !t.nodes.empty()) {
                            highlight(QString::fromStdString(t.nodes.front()));
                            return;
                        }
            });
    refresh();
}

void RunsView::highlight(const QString& node) {
    m_timelineA->highlightNode(node);
    m_timelineB->highlightNode(node);
}

void RunsView::addCompile(profiler::LoadedRun run, bool startOver) {
    m_previousCompile = startOver ? std::nullopt : std::move(m_currentCompile);
    m_currentCompile = std::move(run);
    if (!m_pinnedA)
        m_a = m_previousCompile;
    if (!m_pinnedB)
        m_b = m_currentCompile;
    if (!m_pinnedA || !m_pinnedB)
        refresh();
}

void RunsView::followCompiles() {
    m_pinnedA = m_pinnedB = false;
    ++m_serialA; // a read still in flight no longer decides a side
    ++m_serialB;
    m_a = m_previousCompile;
    m_b = m_currentCompile;
    refresh();
}

void RunsView::showError(const QString& why) {
    emit message(tr("runs: %1").arg(why));
    m_summary->setText(why);
}

namespace {

/// What a pool thread hands back: a run, or why there is none.
struct LoadOutcome {
    std::optional<profiler::LoadedRun> run;
    QString error;
};

} // namespace

void RunsView::openRun(Side side, const QString& path, int64_t run) {
    const int serial = ++(side == Side::A ? m_serialA : m_serialB);
    ++m_loading;
    auto* watcher = new QFutureWatcher<LoadOutcome>(this);
    connect(watcher, &QFutureWatcher<LoadOutcome>::finished, this, [this, watcher, side, serial] {
        LoadOutcome out = watcher->result();
        watcher->deleteLater();
        --m_loading;
        if (serial != (side == Side::A ? m_serialA : m_serialB))
            return; // superseded
        if (!out.run) {
            showError(out.error);
            emit runOpened(side, out.error);
            return;
        }
        (side == Side::A ? m_a : m_b) = std::move(out.run);
        (side == Side::A ? m_pinnedA : m_pinnedB) = true;
        emit message(tr("runs: %1 is %2").arg(side == Side::A ? "A" : "B",
                                               QString::fromStdString((side == Side::A ? m_a : m_b)->label())));
        refresh();
        emit runOpened(side, QString());
    });
    watcher->setFuture(QtConcurrent::run([db = path.toStdString(), run]() -> LoadOutcome {
        LoadOutcome out;
        auto loaded = profiler::loadRun(db, run);
        if (loaded.ok())
            out.run = std::move(loaded).value();
        else
            out.error = QString::fromStdString(loaded.error().message);
        return out;
    }));
}

void RunsView::openRunDialog(Side side) {
    RunChoice choice;
    choice.open = [this, side](const QString& path, int64_t run) { openRun(side, path, run); };
    choice.failed = [this](const QString& message) { showError(message); };
    choice.busy = [this](bool busy) { m_loading += busy ? 1 : -1; };
    askForRun(this, side == Side::A ? tr("Open run A") : tr("Open run B"), std::move(choice));
}

QString RunsView::summaryText() const { return m_summary->text(); }

void RunsView::refresh() {
    auto describe = [this](Side side) {
        const std::optional<profiler::LoadedRun>& r = run(side);
        const bool pinned = side == Side::A ? m_pinnedA : m_pinnedB;
        const QString name = side == Side::A ? QStringLiteral("A") : QStringLiteral("B");
        if (!r)
            return tr("<b>%1</b>: %2").arg(name, side == Side::A ? tr("no previous compile yet") : tr("no compile yet"));
        const QString origin = pinned ? tr("opened") : side == Side::A ? tr("previous compile") : tr("current compile");
        return tr("<b>%1</b> (%2): %3").arg(name, origin, QString::fromStdString(r->label()).toHtmlEscaped());
    };
    m_labelA->setText(describe(Side::A));
    m_labelB->setText(describe(Side::B));

    auto show = [](TimelineView* view, std::shared_ptr<TimelineModel>& model, const std::optional<profiler::LoadedRun>& r) {
        model = std::make_shared<TimelineModel>();
        if (r)
            model->setTasks(timelineTasks(r->tasks), static_cast<int>(r->metric("num_cores")));
        view->setModel(model, r ? r->metric("clock_ghz", 1.0) : 1.0);
    };
    show(m_timelineA, m_modelA, m_a);
    show(m_timelineB, m_modelB, m_b);
    const uint64_t span = std::max(m_modelA->totalCycles(), m_modelB->totalCycles());
    m_timelineA->setFitCycles(span);
    m_timelineB->setFitCycles(span);
    m_timelineA->fitAll();
    m_timelineB->fitAll();

    if (m_a && m_b) {
        auto c = std::make_shared<const profiler::RunComparison>(profiler::compareRuns(*m_a, *m_b));
        QStringList lines;
        for (const std::string& s : c->summary)
            lines << QString::fromStdString(s);
        m_summary->setText(lines.join('\n'));
        m_model->setComparison(std::move(c));
    } else {
        m_summary->setText(tr("Two runs are compared here: recompile (a rule, the level or the target changed) to see the "
                              "previous compile against the current one, or open runs from profile databases."));
        m_model->setComparison(nullptr);
    }
}

} // namespace sextant::views
