#include "TimelineView.h"

#include "TimelineTicks.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace sextant::views {

namespace {

constexpr double kGutter = 118.0;   // lane labels
constexpr double kAxisHeight = 26.0;
constexpr double kLaneHeight = 24.0;
constexpr double kLaneGap = 3.0;
constexpr double kCoreGap = 6.0;    // extra space between cores
constexpr double kMergePx = 3.0;  // Tasks narrower than this fold (TimelineModel::buildDrawList)

QColor unitColor(backend::UnitKind u) {
    switch (u) {
    case backend::UnitKind::Cube: return QColor(0x5b, 0x8d, 0xd6);
    case backend::UnitKind::Vector: return QColor(0x5c, 0xb0, 0x6a);
    case backend::UnitKind::Dma: return QColor(0xe0, 0x96, 0x4a);
    case backend::UnitKind::Host: return QColor(0x9a, 0x6f, 0xc4);
    }
    return Qt::gray;
}

/// A DMA span's fill: the Task's colour, lighter, so a transfer reads as part of its Task.
QColor dmaColor(backend::UnitKind u, DmaPhaseKind kind) {
    const QColor c = unitColor(u);
    const double keep = kind == DmaPhaseKind::Store ? 0.55 : 0.42; // share of the Task's colour
    auto mix = [keep](int v) { return static_cast<int>(v * keep + 255 * (1.0 - keep)); };
    return QColor(mix(c.red()), mix(c.green()), mix(c.blue()));
}

/// Tasks folded together on a lane of unit `u`: its colour, half way to white.
QColor foldColor(backend::UnitKind u) {
    const QColor c = unitColor(u);
    auto mix = [](int v) { return static_cast<int>(v * 0.5 + 255 * 0.5); };
    return QColor(mix(c.red()), mix(c.green()), mix(c.blue()));
}

/// Where a Task's unit waits for its DMA (its load or store phase): much paler than the DMA
/// span under it, so the compute lane reads as idle there.
QColor waitColor(backend::UnitKind u) {
    const QColor c = unitColor(u);
    auto mix = [](int v) { return static_cast<int>(v * 0.16 + 255 * 0.84); };
    return QColor(mix(c.red()), mix(c.green()), mix(c.blue()));
}

} // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setMinimumHeight(120);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
}

void TimelineView::setModel(std::shared_ptr<const TimelineModel> model, double clockGhz) {
    m_model = std::move(model);
    m_clockGhz = clockGhz > 0 ? clockGhz : 1.0;
    m_highlight.clear();
    m_focus = -1;
    updateMarks(true);
    const int lanes = m_model ? static_cast<int>(m_model->lanes().size()) : 0;
    setMinimumHeight(lanes > 0 ? static_cast<int>(laneTop(lanes - 1) + kLaneHeight + 12) : 120);
    fitAll();
    updateGeometry();
    update();
}

double TimelineView::dataWidth() const { return std::max(10.0, width() - kGutter - 8.0); }

double TimelineView::laneTop(int lane) const {
    if (!m_model)
        return kAxisHeight;
    double y = kAxisHeight + 4.0;
    const auto& lanes = m_model->lanes();
    for (int i = 0; i < lane && i < static_cast<int>(lanes.size()); ++i) {
        y += kLaneHeight + kLaneGap;
        if (i + 1 < static_cast<int>(lanes.size()) && lanes[i + 1].core != lanes[i].core)
            y += kCoreGap;
    }
    return y;
}

int TimelineView::laneAt(double y) const {
    if (!m_model)
        return -1;
    for (int i = 0; i < static_cast<int>(m_model->lanes().size()); ++i) {
        const double top = laneTop(i);
        if (y >= top && y < top + kLaneHeight)
            return i;
    }
    return -1;
}

void TimelineView::fitAll() {
    m_autoFit = true;
    if (!m_model)
        return;
    const uint64_t span = m_fitCycles > 0 ? m_fitCycles : m_model->totalCycles();
    m_coords.fit(0.0, static_cast<double>(std::max<uint64_t>(span, 1)), dataWidth(), 6.0);
    update();
}

void TimelineView::setFitCycles(uint64_t cycles) {
    m_fitCycles = cycles;
    if (m_autoFit)
        fitAll();
}

void TimelineView::showRange(double t0, double t1) {
    TimelineCoords c;
    c.fit(t0, t1, dataWidth());
    setCoords(c);
}

void TimelineView::setCoords(const TimelineCoords& coords) {
    m_coords = coords;
    m_autoFit = false;
    update();
}

void TimelineView::setCriticalTasks(std::set<int> taskIds) {
    m_critical = std::move(taskIds);
    updateMarks(true);
    update();
}

void TimelineView::updateMarks(bool critical) {
    ++m_marksVersion;
    m_pinned = m_model ? m_model->marksOf(std::vector<int>(m_highlight.begin(), m_highlight.end()), true)
                       : TimelineMarks{};
    if (!critical)
        return;
    m_criticalMarks = {};
    if (!m_model || m_critical.empty())
        return;
    const size_t n = m_model->tasks().size();
    std::vector<uint8_t> flags(n, 0);
    for (size_t i = 0; i < n; ++i)
        flags[i] = m_critical.count(m_model->tasks()[i].task) != 0;
    m_criticalMarks = m_model->marks(flags, false);
}

const std::vector<TimelineDrawItem>& TimelineView::drawList() const {
    DrawCache& c = m_cache;
    const double w = dataWidth();
    if (c.model == m_model.get() && c.widthPx == w && c.marksVersion == m_marksVersion &&
        c.coords.viewStart == m_coords.viewStart &&
        c.coords.cyclesPerPixel == m_coords.cyclesPerPixel)
        return c.items;
    c.model = m_model.get();
    c.widthPx = w;
    c.marksVersion = m_marksVersion;
    c.coords = m_coords;
    c.items = m_model ? m_model->buildDrawList(m_coords, w, kMergePx, m_pinned)
                      : std::vector<TimelineDrawItem>{};
    ++m_drawListBuilds;
    // Items come lane by lane: where each lane's begin, for the hit tests' binary search.
    const size_t lanes = m_model ? m_model->lanes().size() : 0;
    c.laneBegin.assign(lanes + 1, c.items.size());
    for (size_t i = c.items.size(); i-- > 0;)
        c.laneBegin[static_cast<size_t>(c.items[i].lane)] = i;
    for (size_t l = lanes; l-- > 0;)
        c.laneBegin[l] = std::min(c.laneBegin[l], c.laneBegin[l + 1]);
    return c.items;
}

void TimelineView::setEmptyText(const QString& text) {
    m_emptyText = text;
    update();
}

void TimelineView::setShowCritical(bool show) {
    m_showCritical = show;
    update();
}

void TimelineView::highlightNode(const QString& node) {
    m_highlight.clear();
    m_focus = -1;
    if (m_model && !node.isEmpty())
        for (int i : m_model->tasksOfNode(node.toStdString()))
            m_highlight.insert(i);
    updateMarks();
    if (!m_highlight.empty())
        ensureTaskVisible(*m_highlight.begin());
    update();
}

void TimelineView::highlightTasks(const std::vector<int>& indices) {
    m_highlight.clear();
    const int n = m_model ? static_cast<int>(m_model->tasks().size()) : 0;
    if (indices.size() <= kMaxOutlined)
        for (int i : indices)
            if (i >= 0 && i < n)
                m_highlight.insert(i);
    if (m_focus >= 0 && m_focus < n && !indices.empty())
        m_highlight.insert(m_focus);
    updateMarks();
    update();
}

void TimelineView::focusTask(int taskIndex) {
    const int n = m_model ? static_cast<int>(m_model->tasks().size()) : 0;
    if (taskIndex < 0 || taskIndex >= n) {
        m_focus = -1;
        update();
        return;
    }
    m_focus = taskIndex;
    if (m_highlight.insert(taskIndex).second)
        updateMarks();
    const TimelineTask& t = m_model->tasks()[static_cast<size_t>(taskIndex)];
    const double mid = (static_cast<double>(t.start) + static_cast<double>(t.end)) / 2.0;
    const double span = m_coords.visibleSpan(dataWidth());
    const double widthPx = static_cast<double>(t.end - t.start) / m_coords.cyclesPerPixel;
    if (widthPx < 24.0) {
        // An eighth of the view, its neighbours on either side (at most the finest zoom).
        const double want = std::max(static_cast<double>(t.end - t.start), 1.0) * 8.0;
        showRange(mid - want / 2.0, mid + want / 2.0);
    } else {
        TimelineCoords c = m_coords;
        c.viewStart = mid - span / 2.0;
        setCoords(c);
    }
    update();
}

void TimelineView::ensureTaskVisible(int taskIndex) {
    if (!m_model || taskIndex < 0 || taskIndex >= static_cast<int>(m_model->tasks().size()))
        return;
    const TimelineTask& t = m_model->tasks()[taskIndex];
    const double x0 = m_coords.mapTimeToX(static_cast<double>(t.start));
    const double x1 = m_coords.mapTimeToX(static_cast<double>(t.end));
    if (x1 >= 0 && x0 <= dataWidth())
        return;
    m_autoFit = false;
    m_coords.panByPixels(dataWidth() / 2 - (x0 + x1) / 2);
}

QRectF TimelineView::taskRect(int taskIndex) const {
    if (!m_model || taskIndex < 0 || taskIndex >= static_cast<int>(m_model->tasks().size()))
        return {};
    const TimelineTask& t = m_model->tasks()[taskIndex];
    const double x0 = kGutter + m_coords.mapTimeToX(static_cast<double>(t.start));
    const double x1 = kGutter + m_coords.mapTimeToX(static_cast<double>(t.end));
    const double top = laneTop(m_model->laneOf(taskIndex));
    return QRectF(x0, top, std::max(1.0, x1 - x0), kLaneHeight);
}

QRectF TimelineView::spanRect(int spanIndex) const {
    if (!m_model || spanIndex < 0 || spanIndex >= static_cast<int>(m_model->dmaSpans().size()))
        return {};
    const TimelineDmaSpan& s = m_model->dmaSpans()[static_cast<size_t>(spanIndex)];
    const double x0 = kGutter + m_coords.mapTimeToX(static_cast<double>(s.start));
    const double x1 = kGutter + m_coords.mapTimeToX(static_cast<double>(s.end));
    return QRectF(x0, laneTop(m_model->laneOfSpan(spanIndex)), std::max(1.0, x1 - x0), kLaneHeight);
}

TimelineDrawItem TimelineView::itemAt(const QPoint& pos) const {
    TimelineDrawItem none;
    none.count = 0;
    if (!m_model || pos.x() < kGutter)
        return none;
    const int lane = laneAt(pos.y());
    if (lane < 0)
        return none;
    const double x = pos.x() - kGutter;
    // An item drawn as itself wins over a folded item beside it (a pinned Task sits between
    // folded ones); of two drawn as themselves, the one under the pointer beats a neighbour
    // within the pixel of slack.
    const TimelineDrawItem* near = nullptr;
    const std::vector<TimelineDrawItem>& items = drawList();
    // A lane's items are in x order: the candidates are those starting up to a pixel right of
    // x, back to the first that ends more than a pixel left of it.
    const size_t begin = m_cache.laneBegin[static_cast<size_t>(lane)];
    const size_t end = m_cache.laneBegin[static_cast<size_t>(lane) + 1];
    size_t last = static_cast<size_t>(
        std::upper_bound(items.begin() + static_cast<std::ptrdiff_t>(begin),
                         items.begin() + static_cast<std::ptrdiff_t>(end), x + 1.0,
                         [](double v, const TimelineDrawItem& it) { return v < it.x0; }) -
        items.begin());
    size_t first = last;
    while (first > begin && items[first - 1].x1 + 1.0 >= x)
        --first;
    for (size_t i = first; i < last; ++i) {
        const TimelineDrawItem& item = items[i];
        if (item.count != 1 || x < item.x0 - 1 || x > item.x1 + 1)
            continue;
        if (x >= item.x0 && x <= item.x1)
            return item;
        if (!near)
            near = &item;
    }
    return near ? *near : none;
}

int TimelineView::taskAt(const QPoint& pos) const {
    const TimelineDrawItem item = itemAt(pos);
    return item.count == 1 ? item.task : -1;
}

int TimelineView::spanAt(const QPoint& pos) const {
    const TimelineDrawItem item = itemAt(pos);
    return item.count == 1 ? item.span : -1;
}

void TimelineView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    const QColor textColor(0x30, 0x30, 0x30);
    if (!m_model || m_model->tasks().empty()) {
        p.setPen(QColor(0x80, 0x80, 0x80));
        p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
                   m_emptyText.isEmpty() ? tr("no Tasks yet: open a model to compile and simulate it") : m_emptyText);
        return;
    }
    const double w = dataWidth();
    const auto& lanes = m_model->lanes();

    // Lane backgrounds and labels; cores alternate shades so a core's units read as a group.
    QFont labelFont = font();
    labelFont.setPointSizeF(8.5);
    p.setFont(labelFont);
    for (int i = 0; i < static_cast<int>(lanes.size()); ++i) {
        const double top = laneTop(i);
        const QColor bg = lanes[i].core % 2 == 0 ? QColor(0xf4, 0xf6, 0xf9) : QColor(0xfb, 0xfb, 0xfd);
        p.fillRect(QRectF(0, top, width(), kLaneHeight), bg);
        p.setPen(textColor);
        p.drawText(QRectF(6, top, kGutter - 10, kLaneHeight), Qt::AlignVCenter | Qt::AlignLeft,
                   QString::fromStdString(lanes[i].label));
    }

    const double bottom = laneTop(static_cast<int>(lanes.size()) - 1) + kLaneHeight;
    paintAxis(p, w, bottom);
    p.setPen(textColor);
    p.drawText(QRectF(6, 2, kGutter - 10, kAxisHeight - 4), Qt::AlignLeft | Qt::AlignVCenter,
               tr("total %1 cyc").arg(cyclesLabel(static_cast<double>(m_model->totalCycles()),
                                       std::max(1.0, m_model->totalCycles() / 1000.0))));

    // Tasks from the draw list, clipped to the data area.
    p.setClipRect(QRectF(kGutter, kAxisHeight, w + 8, height()));
    QFont taskFont = font();
    taskFont.setPointSizeF(8);
    p.setFont(taskFont);
    const QFontMetricsF fm(taskFont);
    for (const TimelineDrawItem& item : drawList()) {
        const double top = laneTop(item.lane) + 2;
        const QRectF r(kGutter + item.x0, top, std::max(1.0, item.x1 - item.x0), kLaneHeight - 4);
        if (item.count > 1) {
            // Folded: the lane's colour, paler, so a zoomed-out run still reads by unit (and a
            // solid fill costs a frame less than a pattern over the whole width).
            p.fillRect(r, foldColor(lanes[static_cast<size_t>(item.lane)].unit));
            if (r.width() > 28) {
                p.setPen(QColor(0x20, 0x20, 0x20));
                p.drawText(r, Qt::AlignCenter, QString::number(item.count));
            }
            continue;
        }
        if (item.span >= 0)
            paintSpan(p, item, r, fm);
        else
            paintTask(p, item, r, fm);
    }
    // The critical path: a bar under each of its Tasks, outside their outlines, drawn from its
    // own span list so that a critical Task folded into a grey item is still marked.
    if (m_showCritical)
        for (const TimelineDrawItem& span : m_model->buildSpanList(m_coords, w, m_criticalMarks)) {
            const double bottom = laneTop(span.lane) + kLaneHeight - 2;
            p.fillRect(QRectF(kGutter + span.x0, bottom + 1, std::max(1.0, span.x1 - span.x0), 2.5),
                       QColor(0xc0, 0x39, 0x2b));
        }
}

void TimelineView::paintAxis(QPainter& p, double w, double bottom) const {
    // Ticks in cycles, with microseconds at the target clock, spaced by their labels' widths.
    p.setPen(QColor(0xc8, 0xc8, 0xd0));
    p.drawLine(QPointF(kGutter, kAxisHeight), QPointF(kGutter + w, kAxisHeight));
    const QFontMetricsF fm(p.font());
    const auto width = [&fm](const QString& label) { return fm.horizontalAdvance(label); };
    for (const TimelineTick& tick : chooseTicks(m_coords, w, m_clockGhz, width)) {
        const double x = kGutter + tick.x;
        p.setPen(QColor(0xe2, 0xe2, 0xe8));
        p.drawLine(QPointF(x, kAxisHeight), QPointF(x, bottom));
        p.setPen(QColor(0x55, 0x55, 0x60));
        p.drawText(QRectF(x + 3, 2, width(tick.label) + 4, kAxisHeight - 4),
                   Qt::AlignLeft | Qt::AlignVCenter, tick.label);
    }
}

void TimelineView::paintSpan(QPainter& p, const TimelineDrawItem& item, const QRectF& r,
                             const QFontMetricsF& fm) const {
    // A DMA phase: the Task's colour, lighter; a double-buffered stream hatched with it, as it
    // runs under the compute it feeds.
    const TimelineTask& t = m_model->tasks()[static_cast<size_t>(item.task)];
    const TimelineDmaSpan& span = m_model->dmaSpans()[static_cast<size_t>(item.span)];
    const QColor base = unitColor(t.unit);
    p.fillRect(r, dmaColor(t.unit, span.kind));
    if (span.kind == DmaPhaseKind::Stream && r.width() > 4)
        p.fillRect(r, QBrush(QColor(base.red(), base.green(), base.blue(), 150), Qt::BDiagPattern));
    if (item.task == m_focus) {
        p.setPen(QPen(QColor(0x8a, 0x3c, 0x00), 3.5));
        p.drawRect(r.adjusted(-2, -2, 2, 2));
    } else if (m_highlight.count(item.task) != 0) {
        p.setPen(QPen(QColor(0xe6, 0x8a, 0x00), 2.5));
        p.drawRect(r.adjusted(-1, -1, 1, 1));
    } else if (r.width() > 4) {
        p.setPen(QPen(base, 1));
        p.drawRect(r);
    }
    // "load 7.3 KiB" where it fits, else "7.3 KiB", else nothing (the tooltip says it).
    const QString full = QString::fromStdString(dmaSpanLabel(span));
    const QString bytes = full.mid(full.indexOf(QLatin1Char(' ')) + 1);
    const QString label = fm.horizontalAdvance(full) <= r.width() - 6    ? full
                          : fm.horizontalAdvance(bytes) <= r.width() - 6 ? bytes
                                                                         : QString();
    if (label.isEmpty())
        return;
    p.setPen(base.darker(220));
    p.drawText(r.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, label);
}

void TimelineView::paintTask(QPainter& p, const TimelineDrawItem& item, const QRectF& r,
                             const QFontMetricsF& fm) const {
    const TimelineTask& t = m_model->tasks()[static_cast<size_t>(item.task)];
    const QColor base = unitColor(t.unit);
    // Solid over the compute phase; pale where the unit waits for its loads or stores.
    QRectF solid = r;
    if (t.phases && t.computeEnd > t.computeStart &&
        (t.computeStart > t.start || t.computeEnd < t.end)) {
        const double c0 =
            std::max(r.left(), kGutter + m_coords.mapTimeToX(static_cast<double>(t.computeStart)));
        const double c1 =
            std::min(r.right(), kGutter + m_coords.mapTimeToX(static_cast<double>(t.computeEnd)));
        solid = QRectF(c0, r.top(), std::max(1.0, c1 - c0), r.height());
        p.fillRect(r, waitColor(t.unit));
    }
    p.fillRect(solid, base);
    if (item.task == m_focus) {
        p.setPen(QPen(QColor(0x8a, 0x3c, 0x00), 3.5));
        p.drawRect(r.adjusted(-2, -2, 2, 2));
    } else if (m_highlight.count(item.task) != 0) {
        p.setPen(QPen(QColor(0xe6, 0x8a, 0x00), 2.5));
        p.drawRect(r.adjusted(-1, -1, 1, 1));
    } else if (r.width() > 4) {
        p.setPen(QPen(base.darker(140), 1));
        p.drawRect(r);
    }
    // White on the compute when it is wide enough to hold a label, dark on the pale part else.
    const bool onSolid = solid.width() > 26;
    if (!onSolid && r.width() <= 26)
        return;
    const QRectF box = onSolid ? solid : r;
    p.setPen(onSolid ? QColor(Qt::white) : base.darker(220));
    const QString label = fm.elidedText(QString::fromStdString(t.kernel + " " + t.name),
                                        Qt::ElideRight, box.width() - 6);
    p.drawText(box.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, label);
}

void TimelineView::wheelEvent(QWheelEvent* event) {
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0.0 || !m_model)
        return;
    m_coords.zoomAt(event->position().x() - kGutter, std::pow(1.25, steps));
    m_autoFit = false;
    update();
    emit coordsChanged(m_coords);
    event->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton)
        return;
    m_pressPos = event->pos();
    m_lastDragPos = event->pos();
    m_dragging = true;
}

void TimelineView::mouseMoveEvent(QMouseEvent* event) {
    if (!m_dragging)
        return;
    m_coords.panByPixels(event->pos().x() - m_lastDragPos.x());
    if (event->pos() != m_lastDragPos)
        m_autoFit = false;
    m_lastDragPos = event->pos();
    setCursor(Qt::ClosedHandCursor);
    update();
    emit coordsChanged(m_coords);
}

void TimelineView::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton)
        return;
    m_dragging = false;
    unsetCursor();
    if ((event->pos() - m_pressPos).manhattanLength() > 4)
        return; // a pan, not a click
    const int task = taskAt(event->pos());
    if (task >= 0)
        emit taskClicked(task);
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent*) {
    fitAll();
    emit coordsChanged(m_coords);
}

void TimelineView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (m_autoFit)
        fitAll();
}

bool TimelineView::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip)
        return QWidget::event(event);
    auto* help = static_cast<QHelpEvent*>(event);
    const QString text = toolTipAt(help->pos());
    if (text.isEmpty()) {
        QToolTip::hideText();
        event->ignore();
        return true;
    }
    QToolTip::showText(help->globalPos(), text, this);
    return true;
}

QString TimelineView::toolTipAt(const QPoint& pos) const {
    const TimelineDrawItem item = itemAt(pos);
    if (item.count != 1 || item.task < 0 || !m_model)
        return {};
    const QString text = taskToolTip(item.task);
    if (item.span < 0)
        return text;
    const TimelineDmaSpan& s = m_model->dmaSpans()[static_cast<size_t>(item.span)];
    const TimelineTask& t = m_model->tasks()[static_cast<size_t>(item.task)];
    const double us = static_cast<double>(s.end - s.start) / (m_clockGhz * 1000.0);
    const bool host = t.unit == backend::UnitKind::Host;
    const QString what =
        host ? (s.kind == DmaPhaseKind::Store ? tr("the host writes its outputs to DRAM for the NPU")
                                               : tr("the host reads its inputs from the NPU's DRAM"))
        : s.kind == DmaPhaseKind::Stream
            ? tr("double-buffered: tiles move in and out while the unit computes")
        : s.kind == DmaPhaseKind::Store ? tr("after the unit computed")
        : s.bytes == 0
            ? tr("no bytes from DRAM (its inputs are on chip): the DRAM latency of its stores")
            : tr("before the unit computes (the DRAM latency, then the bytes)");
    const QString where = host ? tr("host transfer") : tr("core %1 DMA").arg(t.core);
    // One arg() call: a name holding "%1" is not a placeholder for the next argument.
    return tr("<b>%1</b> of %2 (task %3)<br>%4 · %5<br>%6 to %7 cyc · %8 cyc (%9 µs)<hr>")
               .arg(QString::fromStdString(dmaSpanLabel(s)).toHtmlEscaped(),
                    QString::fromStdString(t.name).toHtmlEscaped(), QString::number(t.task), where,
                    what, QString::number(s.start), QString::number(s.end),
                    QString::number(s.end - s.start), QString::number(us, 'f', 3)) +
           text;
}

QString TimelineView::taskToolTip(int task) const {
    const TimelineTask& t = m_model->tasks()[static_cast<size_t>(task)];
    QStringList nodes;
    for (const std::string& n : t.nodes)
        nodes << QString::fromStdString(n);
    const double us = static_cast<double>(t.end - t.start) / (m_clockGhz * 1000.0);
    // Where it ran: its lane ("core 0 · cube"); a host step says it is not on the NPU.
    const QString lane = t.unit == backend::UnitKind::Host
                             ? tr("host step (runs on the host, not the NPU)")
                             : QString::fromStdString(m_model->lanes()[m_model->laneOf(task)].label);
    QString text = tr("<b>%1</b> (task %2, %3)<br>%4<br>start %5 · end %6 cyc<br>"
                      "duration %7 cyc (%8 µs)<br>events ready at %9 cyc<br>nodes: %10")
                       .arg(QString::fromStdString(t.name).toHtmlEscaped())
                       .arg(t.task)
                       .arg(QString::fromStdString(t.kernel).toHtmlEscaped())
                       .arg(lane)
                       .arg(t.start)
                       .arg(t.end)
                       .arg(t.end - t.start)
                       .arg(us, 0, 'f', 3)
                       .arg(t.ready)
                       .arg(nodes.join(", ").toHtmlEscaped());
    if (t.phases && t.unit != backend::UnitKind::Dma && t.computeEnd > t.computeStart)
        text += tr("<br>computes %1 to %2 cyc%3")
                    .arg(t.computeStart)
                    .arg(t.computeEnd)
                    .arg(t.streamed ? tr(" (double-buffered)") : QString());
    if (t.phases && t.loadBytes + t.storeBytes > 0) {
        TimelineDmaSpan load{0, DmaPhaseKind::Load, 0, 0, t.loadBytes};
        TimelineDmaSpan store{0, DmaPhaseKind::Store, 0, 0, t.storeBytes};
        text += (t.unit == backend::UnitKind::Host ? tr("<br>DRAM: %1 · %2") : tr("<br>DMA: %1 · %2"))
                    .arg(QString::fromStdString(dmaSpanLabel(load)),
                         QString::fromStdString(dmaSpanLabel(store)));
    }
    return text;
}

} // namespace sextant::views
