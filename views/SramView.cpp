#include "SramView.h"

#include "MemoryView.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace sextant::views {

namespace {

constexpr double kLeft = 86.0;   // core names and offsets
constexpr double kBottom = 28.0; // time axis
constexpr double kTop = 6.0;
constexpr double kRight = 16.0;
constexpr double kBandGap = 10.0;
constexpr double kLegendRow = 18.0;

constexpr backend::SramRole kRoles[] = {
    backend::SramRole::InputTile, backend::SramRole::WeightTile, backend::SramRole::OutputTile,
    backend::SramRole::Accumulator, backend::SramRole::Resident};

const QColor kCapacityColor(0x40, 0x40, 0x48);
const QColor kPeakColor(0xc0, 0x39, 0x2b);
const QColor kLowerBoundColor(0x2e, 0x8b, 0x57);
const QColor kHighlightColor(0xe6, 0x8a, 0x00);

QFont smallFont(const QFont& base) {
    QFont f = base;
    f.setPointSizeF(8);
    return f;
}

/// The legend's entries, each a swatch (a role colour, hatched, or a line style) and a label.
struct LegendItem {
    enum class Swatch { Role, Hatched, Capacity, Peak, LowerBound } swatch = Swatch::Role;
    backend::SramRole role = backend::SramRole::InputTile;
    QString label;
};

std::vector<LegendItem> legendItems() {
    std::vector<LegendItem> items;
    for (backend::SramRole r : kRoles)
        items.push_back({LegendItem::Swatch::Role, r, sramRoleLabel(r)});
    items.push_back({LegendItem::Swatch::Hatched, backend::SramRole::InputTile,
                     SramView::tr("second ping-pong slot (linked to the first)")});
    items.push_back({LegendItem::Swatch::Capacity, {}, SramView::tr("capacity")});
    items.push_back({LegendItem::Swatch::Peak, {}, SramView::tr("peak")});
    items.push_back({LegendItem::Swatch::LowerBound, {}, SramView::tr("lower bound")});
    return items;
}

/// Lays the legend out in rows `width` wide; returns each item's swatch position and the rows.
int layoutLegend(const std::vector<LegendItem>& items, const QFontMetricsF& fm, double width,
                 std::vector<QPointF>* at) {
    double x = kLeft, y = kTop;
    int rows = 1;
    for (const LegendItem& item : items) {
        const double w = 18 + fm.horizontalAdvance(item.label) + 16;
        if (x + w > width - kRight && x > kLeft) {
            x = kLeft;
            y += kLegendRow;
            ++rows;
        }
        if (at)
            at->push_back(QPointF(x, y));
        x += w;
    }
    return rows;
}

} // namespace

QColor sramRoleColor(backend::SramRole role) {
    switch (role) {
    case backend::SramRole::InputTile:
        return QColor(0x5b, 0x9b, 0xd5);
    case backend::SramRole::WeightTile:
        return QColor(0xe8, 0xb8, 0x4a);
    case backend::SramRole::OutputTile:
        return QColor(0xa9, 0x7b, 0xd8);
    case backend::SramRole::Accumulator:
        return QColor(0xe0, 0x7b, 0x53);
    case backend::SramRole::Resident:
        return QColor(0x4c, 0xaf, 0x7a);
    }
    return Qt::gray;
}

QString sramRoleLabel(backend::SramRole role) {
    switch (role) {
    case backend::SramRole::InputTile:
        return SramView::tr("input tile");
    case backend::SramRole::WeightTile:
        return SramView::tr("weight tile");
    case backend::SramRole::OutputTile:
        return SramView::tr("output tile");
    case backend::SramRole::Accumulator:
        return SramView::tr("accumulator");
    case backend::SramRole::Resident:
        return SramView::tr("resident");
    }
    return QString();
}

SramView::SramView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setMinimumSize(300, 200);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
}

void SramView::setMap(std::shared_ptr<const SramMapData> map) {
    m_map = std::move(map);
    m_viewStart = 0.0;
    m_viewCycles = 0.0;
    refresh();
}

void SramView::setCore(int core) {
    m_core = core;
    refresh();
}

void SramView::setFitToPeak(bool fit) {
    m_fitToPeak = fit;
    refresh();
}

void SramView::highlightNode(const QString& node) {
    m_highlight = node;
    update();
}

void SramView::refresh() {
    m_shown.clear();
    m_bands.clear();
    m_range = 1;
    if (m_map) {
        const int numCores = static_cast<int>(m_map->cores.size());
        const int core = m_core < numCores ? m_core : -1;
        m_shown = m_map->blocksOfCore(core);
        uint64_t peak = 0;
        for (const SramCoreLines& c : m_map->cores) {
            if (core >= 0 && c.core != core)
                continue;
            m_bands.push_back(c.core);
            peak = std::max(peak, c.peak);
        }
        for (int i : m_shown) { // a plan's peak covers its buffers; this guards a stale one
            const SramBlock& b = m_map->blocks[static_cast<size_t>(i)];
            peak = std::max(peak, b.offset + b.size);
        }
        // Fit: the peak a little under the band's top, so its line and label stay inside.
        m_range =
            m_fitToPeak && peak > 0 ? peak + peak / 12 + 1 : std::max<uint64_t>(m_map->capacity, 1);
    }
    update();
}

void SramView::layoutBands() const {
    if (m_laidOutFor == size())
        return;
    m_laidOutFor = size();
    const QFontMetricsF fm(smallFont(font()));
    const double legend = layoutLegend(legendItems(), fm, width(), nullptr) * kLegendRow + 4;
    const double top = kTop + legend;
    m_plot = QRectF(kLeft, top, std::max(10.0, width() - kLeft - kRight),
                    std::max(10.0, height() - top - kBottom));
    m_bandRects.assign(m_map ? m_map->cores.size() : 0, QRectF());
    const double n = static_cast<double>(m_bands.size());
    const double h = std::max(4.0, (m_plot.height() - kBandGap * (n - 1)) / n);
    for (size_t i = 0; i < m_bands.size(); ++i)
        m_bandRects[static_cast<size_t>(m_bands[i])] =
            QRectF(m_plot.left(), m_plot.top() + static_cast<double>(i) * (h + kBandGap),
                   m_plot.width(), h);
}

QRectF SramView::plotRect() const {
    layoutBands();
    return m_plot;
}

QRectF SramView::bandRect(int core) const {
    layoutBands();
    return core >= 0 && static_cast<size_t>(core) < m_bandRects.size()
               ? m_bandRects[static_cast<size_t>(core)]
               : QRectF();
}

void SramView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    m_laidOutFor = QSize();
}

double SramView::yOf(const QRectF& band, uint64_t bytes) const {
    // Offsets grow upwards, as in the DRAM map.
    return band.bottom() -
           band.height() * static_cast<double>(bytes) / static_cast<double>(m_range);
}

double SramView::windowCycles() const {
    if (m_viewCycles > 0.0)
        return m_viewCycles;
    return static_cast<double>(std::max<uint64_t>(m_map ? m_map->totalCycles : 1, 1));
}

void SramView::setTimeWindow(double start, double cycles) {
    const double total = static_cast<double>(std::max<uint64_t>(m_map ? m_map->totalCycles : 1, 1));
    // No closer than 50 cycles across the width, no further out than the whole run.
    cycles = cycles <= 0.0 ? total : std::clamp(cycles, std::min(50.0, total), total);
    m_viewCycles = cycles >= total ? 0.0 : cycles;
    m_viewStart = m_viewCycles == 0.0 ? 0.0 : std::clamp(start, 0.0, total - cycles);
    update();
}

double SramView::xOf(double t) const {
    const QRectF plot = plotRect();
    return plot.left() + plot.width() * (t - m_viewStart) / windowCycles();
}

QRectF SramView::blockRect(const SramBlock& b) const {
    const QRectF band = bandRect(b.core);
    if (band.isEmpty())
        return QRectF();
    const double x0 = xOf(static_cast<double>(b.t0));
    const double x1 = xOf(static_cast<double>(b.t1));
    const double y0 = yOf(band, std::min(b.offset + b.size, m_range));
    const double y1 = yOf(band, std::min(b.offset, m_range));
    // A sliver grows up from its offset, so it stays inside its band.
    const double h = std::max(2.0, y1 - y0);
    return QRectF(x0, y1 - h, std::max(2.0, x1 - x0), h);
}

std::vector<int> SramView::outlined() const {
    std::vector<int> out;
    if (!m_map || m_highlight.isEmpty())
        return out;
    const std::string node = m_highlight.toStdString();
    for (int i : m_shown)
        if (SramMapData::usedBy(m_map->blocks[static_cast<size_t>(i)], node))
            out.push_back(i);
    return out;
}

std::vector<SramView::Line> SramView::lines() const {
    std::vector<Line> out;
    if (!m_map)
        return out;
    for (int core : m_bands) {
        const SramCoreLines& c = m_map->cores[static_cast<size_t>(core)];
        const QRectF band = bandRect(core);
        auto line = [&](Line::Kind kind, uint64_t bytes) {
            const double y =
                bytes > m_range ? std::numeric_limits<double>::quiet_NaN() : yOf(band, bytes);
            out.push_back({kind, core, bytes, y});
        };
        line(Line::Kind::Capacity, c.capacity);
        line(Line::Kind::Peak, c.peak);
        line(Line::Kind::LowerBound, c.lowerBound);
    }
    return out;
}

const SramBlock* SramView::blockAt(const QPoint& pos) const {
    if (!m_map)
        return nullptr;
    // Topmost first: later-drawn blocks are on top.
    for (auto it = m_shown.rbegin(); it != m_shown.rend(); ++it) {
        const SramBlock& b = m_map->blocks[static_cast<size_t>(*it)];
        if (blockRect(b).contains(pos) &&
            bandRect(b.core).adjusted(-1, -1, 1, 1).contains(pos)) // zoomed: clipped to its band
            return &b;
    }
    return nullptr;
}

void SramView::paintLegend(QPainter& p) const {
    const QFontMetricsF fm(p.font());
    const std::vector<LegendItem> items = legendItems();
    std::vector<QPointF> at;
    layoutLegend(items, fm, width(), &at);
    for (size_t i = 0; i < items.size(); ++i) {
        const LegendItem& item = items[i];
        const QRectF sw(at[i].x(), at[i].y() + 3, 14, 11);
        switch (item.swatch) {
        case LegendItem::Swatch::Role:
            p.fillRect(sw, sramRoleColor(item.role));
            p.setPen(sramRoleColor(item.role).darker(150));
            p.drawRect(sw);
            break;
        case LegendItem::Swatch::Hatched: {
            const QColor c(0x90, 0x90, 0x98);
            p.fillRect(sw, c.lighter(125));
            p.fillRect(sw, QBrush(c.darker(160), Qt::BDiagPattern));
            p.setPen(c.darker(150));
            p.drawRect(sw);
            break;
        }
        case LegendItem::Swatch::Capacity:
            p.setPen(QPen(kCapacityColor, 1.5));
            p.drawLine(QPointF(sw.left(), sw.center().y()), QPointF(sw.right(), sw.center().y()));
            break;
        case LegendItem::Swatch::Peak:
            p.setPen(QPen(kPeakColor, 1.5, Qt::DashLine));
            p.drawLine(QPointF(sw.left(), sw.center().y()), QPointF(sw.right(), sw.center().y()));
            break;
        case LegendItem::Swatch::LowerBound:
            p.setPen(QPen(kLowerBoundColor, 1.5, Qt::DashLine));
            p.drawLine(QPointF(sw.left(), sw.center().y()), QPointF(sw.right(), sw.center().y()));
            break;
        }
        p.setPen(QColor(0x30, 0x30, 0x38));
        p.drawText(QRectF(sw.right() + 4, at[i].y(), fm.horizontalAdvance(item.label) + 4, 16),
                   Qt::AlignLeft | Qt::AlignVCenter, item.label);
    }
}

void SramView::paintBand(QPainter& p, const SramCoreLines& core, const QRectF& band) const {
    const QFontMetricsF fm(p.font());
    p.fillRect(band, QColor(0xf7, 0xf8, 0xfa));
    // Offsets: five ticks in a band tall enough for them, else its bottom and top only.
    const int ticks = band.height() >= 120 ? 4 : 1;
    for (int i = 0; i <= ticks; ++i) {
        const double frac = static_cast<double>(i) / ticks;
        const double y = band.bottom() - band.height() * frac;
        p.setPen(QColor(0xe0, 0xe0, 0xe6));
        p.drawLine(QPointF(band.left(), y), QPointF(band.right(), y));
        if (band.height() < 34 && i > 0)
            continue;
        p.setPen(QColor(0x55, 0x55, 0x60));
        const auto bytes = static_cast<uint64_t>(frac * static_cast<double>(m_range));
        const double ty = i == 0 ? y - 13 : i == ticks ? y - 1 : y - 7;
        p.drawText(QRectF(2, ty, kLeft - 8, 14), Qt::AlignRight | Qt::AlignVCenter,
                   i == 0 ? QStringLiteral("0") : formatBytes(bytes));
    }
    // The core's name, left of the band, between its ticks.
    if (m_bands.size() > 1) {
        QFont bold = p.font();
        bold.setBold(true);
        p.save();
        p.setFont(bold);
        p.setPen(QColor(0x20, 0x20, 0x30));
        p.drawText(QRectF(2, band.center().y() - 8, kLeft - 8, 16),
                   Qt::AlignRight | Qt::AlignVCenter, tr("core %1").arg(core.core));
        p.restore();
    }

    // Blocks, with the ping-pong links drawn over them.
    const std::string node = m_highlight.toStdString();
    p.save();
    p.setClipRect(band.adjusted(-1, -1, 1, 1));
    for (int i : m_shown) {
        const SramBlock& b = m_map->blocks[static_cast<size_t>(i)];
        if (b.core != core.core)
            continue;
        const QRectF r = blockRect(b);
        if (r.right() < band.left() || r.left() > band.right()) // outside the time window
            continue;
        const QColor c = sramRoleColor(b.role);
        p.fillRect(r, c);
        if (b.pair == 1)
            p.fillRect(r, QBrush(c.darker(170), Qt::BDiagPattern));
        if (r.width() >= 3 && r.height() >= 3) { // a sliver is all outline: its fill says enough
            p.setPen(QPen(c.darker(150), 1));
            p.drawRect(r);
        }
        const QRectF visible = r.intersected(band); // the name stays in view when zoomed
        if (visible.width() > 48 && visible.height() > 13) {
            p.setPen(QColor(0x10, 0x10, 0x20));
            p.drawText(visible.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       fm.elidedText(QString::fromStdString(b.value), Qt::ElideMiddle,
                                     visible.width() - 6));
        }
    }
    // The selected node's buffers, outlined over their neighbours.
    if (!node.empty()) {
        p.setPen(QPen(kHighlightColor, 2.5));
        for (int i : m_shown) {
            const SramBlock& b = m_map->blocks[static_cast<size_t>(i)];
            if (b.core != core.core || !SramMapData::usedBy(b, node))
                continue;
            // At least 8 px each way, so the selection shows on a sliver of a buffer too.
            QRectF r = blockRect(b);
            const double dx = std::max(0.0, 8.0 - r.width()) / 2,
                         dy = std::max(0.0, 8.0 - r.height()) / 2;
            p.drawRect(r.adjusted(-dx, -dy, dx, dy));
        }
    }
    for (int i : m_shown) {
        const SramBlock& b = m_map->blocks[static_cast<size_t>(i)];
        if (b.core != core.core || b.pair != 1 || b.partner < 0)
            continue;
        const QRectF r = blockRect(b);
        const QRectF q = blockRect(m_map->blocks[static_cast<size_t>(b.partner)]);
        const double x = std::min(r.center().x(), q.center().x());
        p.setPen(QPen(sramRoleColor(b.role).darker(200), 1.2));
        p.drawLine(QPointF(x, r.center().y()), QPointF(x, q.center().y()));
        // End marks as small squares: an ellipse per pair costs a path each.
        const QColor mark = sramRoleColor(b.role).darker(200);
        p.fillRect(QRectF(x - 1.5, r.center().y() - 1.5, 3, 3), mark);
        p.fillRect(QRectF(x - 1.5, q.center().y() - 1.5, 3, 3), mark);
    }
    p.restore();

    // Capacity (solid), peak and lower bound (dashed), named in one label per band so they never
    // overlap however close the figures are.
    auto drawLine = [&](uint64_t bytes, const QPen& pen) {
        if (bytes > m_range)
            return;
        const double y = yOf(band, bytes);
        p.setPen(pen);
        p.drawLine(QPointF(band.left(), y), QPointF(band.right(), y));
    };
    drawLine(core.capacity, QPen(kCapacityColor, 1.5));
    if (core.lowerBound != core.peak)
        drawLine(core.lowerBound, QPen(kLowerBoundColor, 1.5, Qt::DashLine));
    drawLine(core.peak, QPen(kPeakColor, 1.5, Qt::DashLine));
    if (core.lowerBound == core.peak && core.peak <= m_range) { // both: alternate the two colours
        QPen green(kLowerBoundColor, 1.5, Qt::CustomDashLine);
        green.setDashPattern({4, 4});
        green.setDashOffset(4);
        const double y = yOf(band, core.peak);
        p.setPen(green);
        p.drawLine(QPointF(band.left(), y), QPointF(band.right(), y));
    }

    const double usedPct = core.capacity == 0 ? 0.0
                                              : 100.0 * static_cast<double>(core.peak) /
                                                    static_cast<double>(core.capacity);
    QString label = core.peak == core.lowerBound
                        ? tr("peak = lower bound = %1").arg(formatBytes(core.peak))
                        : tr("peak %1 · lower bound %2")
                              .arg(formatBytes(core.peak), formatBytes(core.lowerBound));
    label += tr(" · %1% of %2").arg(usedPct, 0, 'f', 1).arg(formatBytes(core.capacity));
    if (m_bands.size() > 1)
        label = tr("core %1: %2").arg(core.core).arg(label);
    const double textW = fm.horizontalAdvance(label) + 10;
    // Above the peak line when there is room inside the band, else just under it.
    const double peakY = core.peak <= m_range ? yOf(band, core.peak) : band.top();
    double top = peakY - 16;
    if (top < band.top() + 1) // no room above: under the line, off it
        top = std::min(peakY + 3, band.bottom() - 15);
    const QRectF box(band.right() - textW - 4, top, textW, 14);
    p.fillRect(box, QColor(255, 255, 255, 225));
    p.setPen(QColor(0x30, 0x30, 0x38));
    p.drawText(box, Qt::AlignCenter, label);

    p.setPen(QColor(0xb0, 0xb0, 0xb8));
    p.drawRect(band);
}

void SramView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    if (!m_map || m_bands.empty()) {
        p.setPen(QColor(0x80, 0x80, 0x80));
        p.drawText(rect(), Qt::AlignCenter, tr("no SRAM plan to show"));
        return;
    }
    p.setFont(smallFont(font()));
    paintLegend(p);
    for (int core : m_bands)
        paintBand(p, m_map->cores[static_cast<size_t>(core)], bandRect(core));
    if (m_shown.empty()) {
        p.setPen(QColor(0x80, 0x80, 0x80));
        p.drawText(plotRect(), Qt::AlignCenter, tr("no SRAM buffers on this core"));
    }

    // The time axis, under the last band.
    const QRectF plot = plotRect();
    p.setPen(QColor(0x55, 0x55, 0x60));
    for (int i = 0; i <= 4; ++i) {
        const double frac = i / 4.0;
        const double x = plot.left() + plot.width() * frac;
        const double t = m_viewStart + frac * windowCycles();
        const QRectF box = i == 0   ? QRectF(x, plot.bottom() + 4, 120, 16)
                           : i == 4 ? QRectF(x - 120, plot.bottom() + 4, 120, 16)
                                    : QRectF(x - 60, plot.bottom() + 4, 120, 16);
        p.drawText(box,
                   (i == 0   ? Qt::AlignLeft
                    : i == 4 ? Qt::AlignRight
                             : Qt::AlignHCenter) |
                       Qt::AlignVCenter,
                   tr("%1 cyc").arg(static_cast<qulonglong>(t)));
    }
}

void SramView::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton)
        return;
    m_pressPos = event->pos();
    m_pressStart = m_viewStart;
    m_dragging = false;
}

void SramView::mouseMoveEvent(QMouseEvent* event) {
    if (!(event->buttons() & Qt::LeftButton) || m_viewCycles == 0.0)
        return;
    const int dx = event->pos().x() - m_pressPos.x();
    if (!m_dragging && std::abs(dx) < 4)
        return;
    m_dragging = true;
    setTimeWindow(m_pressStart - dx * windowCycles() / plotRect().width(), m_viewCycles);
}

void SramView::wheelEvent(QWheelEvent* event) {
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0.0 || !m_map)
        return;
    // Zoom around the cycle under the pointer, which stays under it.
    const QRectF plot = plotRect();
    const double frac = std::clamp((event->position().x() - plot.left()) / plot.width(), 0.0, 1.0);
    const double pivot = m_viewStart + frac * windowCycles();
    const double cycles = windowCycles() * std::pow(1.25, -steps);
    setTimeWindow(pivot - frac * cycles, cycles);
    event->accept();
}

void SramView::mouseDoubleClickEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton)
        setTimeWindow(0.0, 0.0);
}

void SramView::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton || std::exchange(m_dragging, false))
        return;
    if (const SramBlock* b = blockAt(event->pos()))
        emit sramBufferClicked(
            b->sramBuffer, b->nodes.empty() ? QString() : QString::fromStdString(b->nodes.front()));
}

bool SramView::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip)
        return QWidget::event(event);
    auto* help = static_cast<QHelpEvent*>(event);
    const SramBlock* b = blockAt(help->pos());
    if (!b) {
        QToolTip::hideText();
        event->ignore();
        return true;
    }
    const QString pair = b->pair < 0 ? tr("single slot") : tr("ping-pong slot %1").arg(b->pair);
    QToolTip::showText(
        help->globalPos(),
        tr("<b>%1</b> of %2<br>core %3, %4 at offset 0x%5, %6<br>Task %7, live %8 – %9 cyc")
            .arg(sramRoleLabel(b->role), QString::fromStdString(b->value).toHtmlEscaped())
            .arg(b->core)
            .arg(formatBytes(b->size))
            .arg(b->offset, 0, 16)
            .arg(pair)
            .arg(b->task)
            .arg(b->t0)
            .arg(b->t1),
        this);
    return true;
}

} // namespace sextant::views
