#include "GraphView.h"

#include "GraphHierarchy.h"

#include <QFontMetricsF>
#include <QGraphicsItem>
#include <QGraphicsScene>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QScrollBar>
#include <QWheelEvent>
#include <QtMath>

#include <cmath>

namespace sextant::views {

namespace {

struct Palette {
    QColor fill;
    QColor border;
};

Palette paletteFor(const LayoutNode& n) {
    if (n.kind == LayoutNodeKind::Group || n.kind == LayoutNodeKind::Port)
        return {QColor(0xec, 0xe6, 0xf7), QColor(0x6a, 0x4f, 0xa3)};
    if (n.kind != LayoutNodeKind::Op)
        return {QColor(0xfb, 0xf3, 0xd5), QColor(0xa8, 0x8a, 0x2c)};
    switch (n.cost) {
    case ir::CostClass::Cube: return {QColor(0xd6, 0xe4, 0xfb), QColor(0x3b, 0x6f, 0xb6)};
    case ir::CostClass::Vector: return {QColor(0xd9, 0xf0, 0xdb), QColor(0x3c, 0x8c, 0x4a)};
    case ir::CostClass::DmaOnly: return {QColor(0xfc, 0xe4, 0xcb), QColor(0xc8, 0x76, 0x28)};
    case ir::CostClass::Host: return {QColor(0xe8, 0xe8, 0xe8), QColor(0x80, 0x80, 0x80)};
    }
    return {Qt::white, Qt::black};
}

} // namespace

/// One node box. Paints itself (cheaper than a group of text items for thousands of nodes).
class GraphNodeItem : public QGraphicsItem {
public:
    explicit GraphNodeItem(const LayoutNode& node) : m_node(node) {
        setPos(node.x, node.y);
        if (node.kind == LayoutNodeKind::Port)
            setToolTip(node.op == "in" ? QObject::tr("tensors from outside the group come in here")
                                       : QObject::tr("tensors leave the group here"));
        else
            setToolTip(node.kind == LayoutNodeKind::Group
                           ? QString::fromStdString(node.shortName + "\n" + node.op + ": " + node.typeText +
                                                    (node.open ? "\n(double-click the title to fold)"
                                                               : "\n(double-click to open)"))
                           : QString::fromStdString(node.name + "\n" + node.op + "  " + node.typeText));
        setAcceptHoverEvents(false);
        setZValue(baseZ());
    }
    const LayoutNode& node() const { return m_node; }
    void setSelectedNode(bool on) {
        if (m_selectedNode == on)
            return;
        m_selectedNode = on;
        setZValue(on && !m_node.open ? 2 : baseZ());
        update();
    }
    /// Boxes above edges; an open group's frame below everything drawn inside it.
    double baseZ() const { return m_node.open ? -1 : 1; }
    /// Whether scene point `p` is on an open group's title strip.
    bool onTitle(const QPointF& p) const {
        return m_node.open && p.y() <= m_node.y - m_node.h / 2 + kFrameTitle;
    }
    QRectF boundingRect() const override {
        return QRectF(-m_node.w / 2 - 3, -m_node.h / 2 - 3, m_node.w + 6, m_node.h + 6);
    }
    void paint(QPainter* p, const QStyleOptionGraphicsItem*, QWidget*) override {
        const Palette pal = paletteFor(m_node);
        QRectF box(-m_node.w / 2, -m_node.h / 2, m_node.w, m_node.h);
        p->setRenderHint(QPainter::Antialiasing);
        if (m_node.open) {
            paintFrame(p, pal, box);
            return;
        }
        if (m_node.kind == LayoutNodeKind::Port) { // a dot where the edges cross the frame
            p->setPen(QPen(pal.border, 1.2));
            p->setBrush(pal.fill);
            p->drawEllipse(box);
            return;
        }
        if (m_node.kind == LayoutNodeKind::Group) {
            // A collapsed group: a stack of cards, the back one offset up and right.
            box.adjust(0, 4, -6, 0);
            p->setPen(QPen(pal.border, 1.0));
            p->setBrush(pal.fill.darker(106));
            p->drawRoundedRect(box.translated(6, -4), 6.0, 6.0);
        }
        QPen pen(m_selectedNode ? QColor(0xe6, 0x8a, 0x00) : pal.border, m_selectedNode ? 3.0 : 1.2);
        // A node the backend lowers to no Task (a view, a fill the loader does) is drawn hollow
        // with a dashed border: it appears in the graph but never in the timeline.
        if (m_node.view && !m_selectedNode)
            pen.setStyle(Qt::DashLine);
        p->setPen(pen);
        const QColor fill = m_node.view ? QColor(Qt::white) : pal.fill;
        p->setBrush(m_selectedNode ? fill.lighter(104) : fill);
        const bool boxy = m_node.kind == LayoutNodeKind::Op || m_node.kind == LayoutNodeKind::Group;
        const double radius = boxy ? 6.0 : m_node.h / 2;
        p->drawRoundedRect(box, radius, radius);

        QFont f = p->font();
        f.setPointSizeF(8.5);
        QFont bold = f;
        bold.setBold(true);
        const QRectF inner = box.adjusted(6, 3, -6, -3);
        const QColor textColor(0x20, 0x20, 0x20);
        if (boxy) {
            const double lh = inner.height() / 3;
            p->setFont(bold);
            p->setPen(textColor);
            p->drawText(QRectF(inner.left(), inner.top(), inner.width(), lh), Qt::AlignCenter,
                        QString::fromStdString(m_node.op));
            p->setFont(f);
            p->drawText(QRectF(inner.left(), inner.top() + lh, inner.width(), lh), Qt::AlignCenter,
                        QString::fromStdString(m_node.shortName));
            p->setPen(QColor(0x60, 0x60, 0x60));
            p->drawText(QRectF(inner.left(), inner.top() + 2 * lh, inner.width(), lh), Qt::AlignCenter,
                        QString::fromStdString(m_node.typeText));
            return;
        }
        const double lh = inner.height() / 2;
        p->setFont(bold);
        p->setPen(textColor);
        p->drawText(QRectF(inner.left(), inner.top(), inner.width(), lh), Qt::AlignCenter,
                    QString::fromStdString(m_node.shortName));
        p->setFont(f);
        p->setPen(QColor(0x60, 0x60, 0x60));
        p->drawText(QRectF(inner.left(), inner.top() + lh, inner.width(), lh), Qt::AlignCenter,
                    QString::fromStdString(m_node.typeText));
    }

private:
    /// An open group: a tinted frame with its name, size and op mix on a title strip.
    void paintFrame(QPainter* p, const Palette& pal, const QRectF& box) const {
        p->setPen(QPen(m_selectedNode ? QColor(0xe6, 0x8a, 0x00) : pal.border, m_selectedNode ? 3.0 : 1.2));
        p->setBrush(QColor(0xf7, 0xf4, 0xfc));
        p->drawRoundedRect(box, 8.0, 8.0);
        const QRectF title(box.left(), box.top(), box.width(), kFrameTitle);
        QPainterPath strip;
        strip.addRoundedRect(title, 8.0, 8.0);
        p->fillPath(strip, pal.fill);
        QFont f = p->font();
        f.setPointSizeF(8.5);
        QFont bold = f;
        bold.setBold(true);
        const QRectF text = title.adjusted(10, 0, -10, 0);
        const QString name = QStringLiteral("\u25be ") + QString::fromStdString(m_node.shortName);
        p->setFont(bold);
        p->setPen(QColor(0x20, 0x20, 0x20));
        p->drawText(text, Qt::AlignLeft | Qt::AlignVCenter, name);
        const double used = QFontMetricsF(bold).horizontalAdvance(name) + 12;
        p->setFont(f);
        p->setPen(QColor(0x60, 0x60, 0x60));
        const QString rest = QString::fromStdString(m_node.op + " \u00b7 " + m_node.typeText);
        p->drawText(text.adjusted(used, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter,
                    QFontMetricsF(f).elidedText(rest, Qt::ElideRight, std::max(0.0, text.width() - used)));
    }

    LayoutNode m_node;
    bool m_selectedNode = false;
};

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
    setScene(new QGraphicsScene(this));
    setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    setDragMode(QGraphicsView::ScrollHandDrag);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setBackgroundBrush(QColor(0xfa, 0xfa, 0xfa));
    setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
}

void GraphView::setGraphLayout(std::shared_ptr<const GraphLayoutResult> layout) {
    m_layout = std::move(layout);
    m_items.clear();
    scene()->clear();
    if (!m_layout)
        return;
    const QPen edgePen(QColor(0x70, 0x70, 0x78), 1.2);
    for (const LayoutEdge& e : m_layout->edges) {
        if (e.points.empty())
            continue;
        QPainterPath path(QPointF(e.points[0].x, e.points[0].y));
        for (size_t k = 1; k + 2 < e.points.size(); k += 3)
            path.cubicTo(QPointF(e.points[k].x, e.points[k].y), QPointF(e.points[k + 1].x, e.points[k + 1].y),
                         QPointF(e.points[k + 2].x, e.points[k + 2].y));
        // An edge between groups stands for `count` tensors: drawn heavier, its tooltip says so.
        QPen pen = edgePen;
        if (e.count > 1)
            pen.setWidthF(std::min(4.0, 1.2 + std::log2(static_cast<double>(e.count))));
        auto* item = scene()->addPath(path, pen);
        item->setToolTip(e.count > 1 ? tr("%1 tensors, first '%2'").arg(e.count).arg(QString::fromStdString(e.value))
                                     : QString::fromStdString(e.value));
        item->setZValue(0);
        if (!e.hasArrow)
            continue;
        // Arrow head: a triangle from the spline's end to the tip Graphviz reserved for it.
        const QPointF tip(e.arrowTip.x, e.arrowTip.y);
        const QPointF base(e.points.back().x, e.points.back().y);
        QPointF dir = tip - base;
        const double len = std::hypot(dir.x(), dir.y());
        if (len < 1e-6)
            continue;
        dir /= len;
        const QPointF normal(-dir.y(), dir.x());
        QPolygonF head;
        head << tip << base + normal * 3.5 << base - normal * 3.5;
        auto* arrow = scene()->addPolygon(head, QPen(Qt::NoPen), QBrush(edgePen.color()));
        arrow->setZValue(0);
    }
    for (const LayoutNode& n : m_layout->nodes) {
        auto* item = new GraphNodeItem(n);
        scene()->addItem(item);
        m_items.insert(QString::fromStdString(n.name), item);
    }
    scene()->setSceneRect(QRectF(-20, -20, m_layout->width + 40, m_layout->height + 40));
    if (auto* item = m_items.value(m_selected))
        item->setSelectedNode(true);
    fitToView();
}

QString GraphView::exportImage(const QString& path) const {
    if (!m_layout)
        return tr("no graph is shown yet");
    const QString ext = path.section(QLatin1Char('.'), -1).toLower();
    if (ext != QLatin1String("svg") && ext != QLatin1String("png"))
        return tr("'%1': the file name must end in .svg or .png").arg(path);
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return tr("'%1': cannot write (%2)").arg(path, file.errorString());
    const QRectF source = scene()->sceneRect();
    if (ext == QLatin1String("svg")) {
        QSvgGenerator svg;
        svg.setOutputDevice(&file);
        svg.setSize(source.size().toSize());
        svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
        svg.setTitle(tr("Sextant graph view"));
        QPainter p(&svg);
        p.fillRect(QRectF(QPointF(0, 0), source.size()), backgroundBrush());
        scene()->render(&p, QRectF(QPointF(0, 0), source.size()), source);
    } else {
        // Twice the scene's pixels, so the text stays sharp when the image is scaled into a page.
        QImage image((source.size() * 2).toSize(), QImage::Format_ARGB32_Premultiplied);
        image.fill(backgroundBrush().color());
        QPainter p(&image);
        p.setRenderHint(QPainter::Antialiasing);
        p.setRenderHint(QPainter::TextAntialiasing);
        scene()->render(&p, QRectF(QPointF(0, 0), image.size()), source);
        p.end();
        if (!image.save(&file, "PNG"))
            return tr("'%1': the PNG could not be written").arg(path);
    }
    if (!file.commit())
        return tr("'%1': %2").arg(path, file.errorString());
    return {};
}

void GraphView::selectNode(const QString& node) {
    if (auto* old = m_items.value(m_selected))
        old->setSelectedNode(false);
    m_selected = node;
    auto* item = m_items.value(node);
    if (!item)
        return;
    item->setSelectedNode(true);
    ensureVisible(item, 40, 40);
}

double GraphView::zoom() const { return transform().m11(); }

QPointF GraphView::nodeCenter(const QString& name) const {
    auto* item = m_items.value(name);
    return item ? item->pos() : QPointF();
}

void GraphView::fitToView() {
    if (!m_layout)
        return;
    if (!isVisible() || viewport()->width() < 10) {
        m_fitPending = true; // fit once the widget has a real size
        return;
    }
    m_fitPending = false;
    const QRectF r = scene()->sceneRect();
    const double sx = viewport()->width() / r.width();
    const double sy = viewport()->height() / r.height();
    // Fit the width when the graph is tall (a long chain reads best at a legible scale, scrolled);
    // never zoom in beyond 1:1 and never shrink text below legibility unless the graph is wide.
    double s = std::min(1.0, std::min(sx, sy));
    if (s < 0.55)
        s = std::min(1.0, std::max(sx * 0.98, 0.55));
    resetTransform();
    scale(s, s);
    // Start at the top, over the topmost node (the graph input): a wide layout's top centre can
    // be empty, and a view of nothing reads as a broken graph.
    double x = r.center().x();
    double top = r.bottom();
    for (const LayoutNode& n : m_layout->nodes)
        if (n.y < top) {
            top = n.y;
            x = n.x;
        }
    centerOn(x, r.top());
    if (auto* item = m_items.value(m_selected))
        ensureVisible(item, 40, 40);
}

void GraphView::zoomBy(double factor) {
    const double z = zoom() * factor;
    if (z < 0.02 || z > 8.0)
        return;
    scale(factor, factor);
}

void GraphView::wheelEvent(QWheelEvent* event) {
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0.0) {
        QGraphicsView::wheelEvent(event);
        return;
    }
    zoomBy(std::pow(1.15, steps));
    event->accept();
}

void GraphView::mousePressEvent(QMouseEvent* event) {
    m_pressPos = event->pos();
    QGraphicsView::mousePressEvent(event);
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
    QGraphicsView::mouseReleaseEvent(event);
    if (event->button() != Qt::LeftButton || (event->pos() - m_pressPos).manhattanLength() > 4)
        return; // a drag (pan), not a click
    GraphNodeItem* node = nodeAt(event->pos());
    if (node && node->node().kind == LayoutNodeKind::Port)
        node = nullptr; // a port is no node: a click on it is a click on the background
    const QString name = node ? QString::fromStdString(node->node().name) : QString();
    selectNode(name);
    if (!node || node->node().kind != LayoutNodeKind::Group)
        emit nodeClicked(name);
}

void GraphView::mouseDoubleClickEvent(QMouseEvent* event) {
    GraphNodeItem* node = event->button() == Qt::LeftButton ? nodeAt(event->pos()) : nullptr;
    // An open group folds from its title strip only (a double-click inside it misses a box).
    if (!node || node->node().kind != LayoutNodeKind::Group ||
        (node->node().open && !node->onTitle(mapToScene(event->pos())))) {
        QGraphicsView::mouseDoubleClickEvent(event);
        return;
    }
    event->accept();
    emit groupActivated(QString::fromStdString(node->node().name));
}

GraphNodeItem* GraphView::nodeAt(const QPoint& pos) const {
    for (QGraphicsItem* item : items(pos))
        if (auto* node = dynamic_cast<GraphNodeItem*>(item))
            return node;
    return nullptr;
}

void GraphView::showEvent(QShowEvent* event) {
    QGraphicsView::showEvent(event);
    if (m_fitPending)
        fitToView(); // a layout that arrived while the Graph tab was hidden
}

void GraphView::resizeEvent(QResizeEvent* event) {
    QGraphicsView::resizeEvent(event);
    if (m_fitPending)
        fitToView();
}

} // namespace sextant::views
