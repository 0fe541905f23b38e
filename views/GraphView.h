#pragma once

#include "GraphLayout.h"

#include <QGraphicsView>
#include <QHash>

#include <memory>

namespace sextant::views {

class GraphNodeItem;

/// Draws a GraphLayoutResult: nodes as rounded boxes coloured by cost class (cube blue, vector
/// green, DMA orange, host/IO grey), edges as Graphviz's splines with arrow heads. Wheel zooms
/// under the mouse, dragging pans, clicking a node emits nodeClicked.
class GraphView : public QGraphicsView {
    Q_OBJECT
public:
    explicit GraphView(QWidget* parent = nullptr);

    /// Shows a new layout (replacing the scene) and fits it into the view. Keeps the selected
    /// node highlighted if the new layout has it.
    void setGraphLayout(std::shared_ptr<const GraphLayoutResult> layout);
    const GraphLayoutResult* graphLayout() const { return m_layout.get(); }
    /// Highlights `node` (empty clears) and scrolls it into view; emits nothing.
    void selectNode(const QString& node);
    const QString& selectedNode() const { return m_selected; }
    /// Current zoom factor (1 = one scene pixel per screen pixel).
    double zoom() const;
    /// Scene position of the centre of node `name`, or a null point when absent (for tests).
    QPointF nodeCenter(const QString& name) const;
    /// File > Export graph view: the whole graph as shown (the hierarchy's open and closed
    /// groups, the colours, the selected node) into `path`, SVG or PNG by its extension (.svg,
    /// .png), written whole or not at all (QSaveFile). Empty on success, else why not.
    QString exportImage(const QString& path) const;

public slots:
    /// Scales the whole graph into the view (never zooming in beyond 1:1).
    void fitToView();

signals:
    /// The user clicked the node `node` (empty: clicked the background). A click on a group box
    /// outlines it and says nothing: the group is no node of the graph.
    void nodeClicked(const QString& node);
    /// The user double-clicked the closed group box `group` (its HierarchyGroup id), or an open
    /// group's title strip: open it, or fold it.
    void groupActivated(const QString& group);

protected:
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    void zoomBy(double factor);
    GraphNodeItem* nodeAt(const QPoint& pos) const;

    std::shared_ptr<const GraphLayoutResult> m_layout;
    QHash<QString, GraphNodeItem*> m_items;
    QString m_selected;
    QPoint m_pressPos;
    bool m_fitPending = false;
};

} // namespace sextant::views
