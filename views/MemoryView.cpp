#include "MemoryView.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace sextant::views {

namespace {

constexpr double kLeft = 86.0;   // address axis
constexpr double kBottom = 28.0; // time axis
constexpr double kTop = 12.0;
constexpr double kRight = 16.0;

QColor kindColor(const MemoryBlock& b) {
    switch (b.kind) {
    case backend::BufferKind::Input: return QColor(0xe8, 0xc5, 0x4a);
    case backend::BufferKind::Output: return QColor(0xb0, 0x7c, 0xd8);
    case backend::BufferKind::Weight: return QColor(0xa8, 0xa8, 0xb0);
    case backend::BufferKind::Intermediate: {
        // Neighbouring buffers get distinguishable shades of blue/teal.
        const int hue = 190 + (b.buffer * 37) % 50;
        return QColor::fromHsv(hue, 110, 215);
    }
    }
    return Qt::gray;
}

const char* kindName(backend::BufferKind k) {
    switch (k) {
    case backend::BufferKind::Input: return "input";
    case backend::BufferKind::Output: return "output";
    case backend::BufferKind::Weight: return "weight";
    case backend::BufferKind::Intermediate: return "intermediate";
    }
    return "";
}

} // namespace

QString formatBytes(uint64_t bytes) {
    if (bytes < 1024)
        return QStringLiteral("%1 B").arg(bytes);
    if (bytes < 1024ull * 1024)
        return QStringLiteral("%1 KiB").arg(static_cast<double>(bytes) / 1024.0, 0, 'f', 1);
    return QStringLiteral("%1 MiB").arg(static_cast<double>(bytes) / (1024.0 * 1024.0), 0, 'f', 2);
}

QString memorySummary(const MemoryMapData& map) {
    const double frag = map.arenaPeak == 0 ? 0.0
                                           : 100.0 * (1.0 - static_cast<double>(map.lowerBound) /
                                                                static_cast<double>(map.arenaPeak));
    return QObject::tr("arena peak %1 · lower bound %2 (fragmentation %3%) · weights %4 · I/O %5 · %6 buffers")
        .arg(formatBytes(map.arenaPeak), formatBytes(map.lowerBound))
        .arg(frag, 0, 'f', 1)
        .arg(formatBytes(map.weightBytes), formatBytes(map.ioBytes))
        .arg(map.blocks.size());
}

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setMinimumSize(300, 200);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
}

void MemoryView::setMap(std::shared_ptr<const MemoryMapData> map) {
    m_map = std::move(map);
    refresh();
}

void MemoryView::setShown(bool weights, bool io, bool intermediates) {
    m_weights = weights;
    m_io = io;
    m_intermediates = intermediates;
    refresh();
}

void MemoryView::highlightNode(const QString& node) {
    m_highlight = node;
    update();
}

void MemoryView::refresh() {
    m_shown.clear();
    m_addrLo = 0;
    m_addrHi = 1;
    if (m_map) {
        m_shown = m_map->select(m_weights, m_io, m_intermediates);
        if (!m_shown.empty()) {
            m_addrLo = UINT64_MAX;
            m_addrHi = 0;
            for (const MemoryBlock* b : m_shown) {
                m_addrLo = std::min(m_addrLo, b->offset);
                m_addrHi = std::max(m_addrHi, b->offset + b->size);
            }
            if (m_addrHi <= m_addrLo)
                m_addrHi = m_addrLo + 1;
        }
    }
    update();
}

QRectF MemoryView::plotRect() const {
    return QRectF(kLeft, kTop, std::max(10.0, width() - kLeft - kRight), std::max(10.0, height() - kTop - kBottom));
}

QRectF MemoryView::blockRect(const MemoryBlock& b) const {
    const QRectF plot = plotRect();
    const double total = static_cast<double>(std::max<uint64_t>(m_map ? m_map->totalCycles : 1, 1));
    const double span = static_cast<double>(m_addrHi - m_addrLo);
    const double x0 = plot.left() + plot.width() * static_cast<double>(b.t0) / total;
    const double x1 = plot.left() + plot.width() * static_cast<double>(b.t1) / total;
    // Address grows upwards, like a stack of allocations.
    const double y1 = plot.bottom() - plot.height() * static_cast<double>(b.offset - m_addrLo) / span;
    const double y0 = plot.bottom() - plot.height() * static_cast<double>(b.offset + b.size - m_addrLo) / span;
    return QRectF(x0, y0, std::max(2.0, x1 - x0), std::max(3.0, y1 - y0));
}

const MemoryBlock* MemoryView::blockAt(const QPoint& pos) const {
    // Topmost first: later-drawn blocks are on top.
    for (auto it = m_shown.rbegin(); it != m_shown.rend(); ++it)
        if (blockRect(**it).contains(pos))
            return *it;
    return nullptr;
}

void MemoryView::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    if (!m_map || m_shown.empty()) {
        p.setPen(QColor(0x80, 0x80, 0x80));
        p.drawText(rect(), Qt::AlignCenter, tr("no buffers to show"));
        return;
    }
    const QRectF plot = plotRect();
    p.fillRect(plot, QColor(0xf7, 0xf8, 0xfa));
    QFont small = font();
    small.setPointSizeF(8);
    p.setFont(small);

    // Axes: addresses (left), cycles (bottom).
    p.setPen(QColor(0x55, 0x55, 0x60));
    for (int i = 0; i <= 4; ++i) {
        const double frac = i / 4.0;
        const double y = plot.bottom() - plot.height() * frac;
        const uint64_t addr = m_addrLo + static_cast<uint64_t>(frac * static_cast<double>(m_addrHi - m_addrLo));
        p.setPen(QColor(0xe0, 0xe0, 0xe6));
        p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
        p.setPen(QColor(0x55, 0x55, 0x60));
        p.drawText(QRectF(2, y - 8, kLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                   QStringLiteral("0x%1").arg(addr, 0, 16));
        const double t = frac * static_cast<double>(m_map->totalCycles);
        const double x = plot.left() + plot.width() * frac;
        const QRectF box = i == 0 ? QRectF(x, plot.bottom() + 4, 120, 16)
                         : i == 4 ? QRectF(x - 120, plot.bottom() + 4, 120, 16)
                                  : QRectF(x - 60, plot.bottom() + 4, 120, 16);
        p.drawText(box, (i == 0 ? Qt::AlignLeft : i == 4 ? Qt::AlignRight : Qt::AlignHCenter) | Qt::AlignVCenter,
                   tr("%1 cyc").arg(static_cast<qulonglong>(t)));
    }

    // Blocks.
    const QFontMetricsF fm(small);
    for (const MemoryBlock* b : m_shown) {
        const QRectF r = blockRect(*b);
        const QColor c = kindColor(*b);
        p.fillRect(r, c);
        const bool hi = !m_highlight.isEmpty() &&
                        std::find(b->nodes.begin(), b->nodes.end(), m_highlight.toStdString()) != b->nodes.end();
        p.setPen(hi ? QPen(QColor(0xe6, 0x8a, 0x00), 2.5) : QPen(c.darker(150), 1));
        p.drawRect(r);
        if (r.width() > 40 && r.height() > 13) {
            p.setPen(QColor(0x10, 0x10, 0x20));
            p.drawText(r.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       fm.elidedText(QString::fromStdString(b->value), Qt::ElideMiddle, r.width() - 6));
        }
    }

    // Peak and lower bound of the intermediate arena, measured from its lowest address.
    uint64_t arenaBase = UINT64_MAX;
    for (const MemoryBlock& b : m_map->blocks)
        if (b.kind == backend::BufferKind::Intermediate)
            arenaBase = std::min(arenaBase, b.offset);
    if (arenaBase != UINT64_MAX && m_intermediates) {
        const double span = static_cast<double>(m_addrHi - m_addrLo);
        auto line = [&](uint64_t bytes, const QColor& color, const QString& label, bool above) {
            const uint64_t addr = arenaBase + bytes;
            if (addr < m_addrLo || addr > m_addrHi)
                return;
            const double y = plot.bottom() - plot.height() * static_cast<double>(addr - m_addrLo) / span;
            p.setPen(QPen(color, 1.5, Qt::DashLine));
            p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
            const double textW = fm.horizontalAdvance(label) + 10;
            QRectF box(plot.right() - textW - 4, above ? y - 17 : y + 3, textW, 14);
            if (box.top() < plot.top())
                box.moveTop(y + 3);
            p.fillRect(box, QColor(255, 255, 255, 220));
            p.setPen(color);
            p.drawText(box, Qt::AlignCenter, label);
        };
        if (m_map->lowerBound == m_map->arenaPeak) {
            line(m_map->arenaPeak, QColor(0x2e, 0x8b, 0x57),
                 tr("arena peak = lower bound = %1").arg(formatBytes(m_map->arenaPeak)), true);
        } else {
            line(m_map->lowerBound, QColor(0x2e, 0x8b, 0x57), tr("lower bound %1").arg(formatBytes(m_map->lowerBound)), false);
            line(m_map->arenaPeak, QColor(0xc0, 0x39, 0x2b), tr("arena peak %1").arg(formatBytes(m_map->arenaPeak)), true);
        }
    }
    p.setPen(QColor(0xb0, 0xb0, 0xb8));
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);
}

void MemoryView::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton)
        return;
    if (const MemoryBlock* b = blockAt(event->pos()))
        emit bufferClicked(b->buffer, b->nodes.empty() ? QString() : QString::fromStdString(b->nodes.front()));
}

bool MemoryView::event(QEvent* event) {
    if (event->type() != QEvent::ToolTip)
        return QWidget::event(event);
    auto* help = static_cast<QHelpEvent*>(event);
    const MemoryBlock* b = blockAt(help->pos());
    if (!b) {
        QToolTip::hideText();
        event->ignore();
        return true;
    }
    QToolTip::showText(help->globalPos(),
                       tr("<b>%1</b> (%2, buffer %3)<br>%8<br>size %4 at offset 0x%5<br>live %6 – %7 cyc")
                           .arg(QString::fromStdString(b->value).toHtmlEscaped(),
                                b->fill ? tr("weight, filled with %1 by the loader").arg(*b->fill)
                                        : QString(kindName(b->kind)))
                           .arg(b->buffer)
                           .arg(formatBytes(b->size))
                           .arg(b->offset, 0, 16)
                           .arg(b->t0)
                           .arg(b->t1)
                           .arg(QString::fromStdString(b->type).toHtmlEscaped()),
                       this);
    return true;
}

} // namespace sextant::views
