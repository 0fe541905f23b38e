#pragma once

#include "TimelineCoords.h"
#include "TimelineModel.h"

#include <QWidget>

class QPainter;
class QFontMetricsF;

#include <memory>
#include <set>

namespace sextant::views {

/// The Task timeline: one lane per (core, unit) and a DMA lane per core under them, a time axis in
/// cycles and microseconds, Task rectangles labelled by kernel when wide enough (solid over their
/// compute phase, pale where the unit waits for the DMA), and each Task's loads, stores and
/// double-buffered streams on its core's DMA lane in a lighter shade of the Task's colour. Wheel
/// zooms under the mouse, dragging pans, double-click fits. Painting consumes
/// TimelineModel::buildDrawList, so items narrower than 3 px fold into one item with a count.
class TimelineView : public QWidget {
    Q_OBJECT
public:
    explicit TimelineView(QWidget* parent = nullptr);

    /// Shows new data (shared, immutable) and fits the whole run into view.
    void setModel(std::shared_ptr<const TimelineModel> model, double clockGhz);
    const TimelineModel* model() const { return m_model.get(); }
    const std::shared_ptr<const TimelineModel>& sharedModel() const { return m_model; }
    /// Outlines the Tasks that execute IR node `node` (empty clears); brings the first into view.
    void highlightNode(const QString& node);
    /// Task indices currently outlined.
    const std::set<int>& highlighted() const { return m_highlight; }
    /// Outlines the Tasks at `indices` (into model()->tasks(); empty clears) without moving the
    /// view: the find box's matches. Outlined Tasks are drawn one by one, never folded, so past
    /// kMaxOutlined matches only the focused Task is outlined (painting stays O(pixels)).
    void highlightTasks(const std::vector<int>& indices);
    static constexpr size_t kMaxOutlined = 5000;
    /// Makes the Task at `taskIndex` the current one (-1: none): outlined thicker, and brought to
    /// the middle of the view; one narrower than 24 px is zoomed to an eighth of the view.
    void focusTask(int taskIndex);
    /// The current Task's index, or -1.
    int focusedTask() const { return m_focus; }
    /// Marks the Tasks (Program Task ids) of the critical path with a red bar under each.
    void setCriticalTasks(std::set<int> taskIds);
    void setShowCritical(bool show);
    /// What to say when there are no Tasks (empty: the default "open a model" hint).
    void setEmptyText(const QString& text);
    const std::set<int>& criticalTasks() const { return m_critical; }
    const TimelineCoords& coords() const { return m_coords; }
    /// Whether the view keeps the whole run fitted (no zoom or pan by the user since).
    bool autoFit() const { return m_autoFit; }
    /// Index of the Task drawn under widget position `pos`, or -1 (also -1 for folded items). Over
    /// a DMA span, the Task the span belongs to: clicking a transfer selects its Task.
    int taskAt(const QPoint& pos) const;
    /// Index of the DMA span (TimelineModel::dmaSpans) drawn under `pos`, or -1.
    int spanAt(const QPoint& pos) const;
    /// Widget rectangle of the Task at `taskIndex` under the current zoom (for tests and tooltips).
    QRectF taskRect(int taskIndex) const;
    /// Widget rectangle of the DMA span at `spanIndex` under the current zoom.
    QRectF spanRect(int spanIndex) const;
    /// The tooltip at `pos` (rich text): the Task's, or for a DMA span what it moved ("load
    /// 12.3 KiB of conv1 ...") above its Task's; empty where there is no single item.
    QString toolTipAt(const QPoint& pos) const;

    /// How many times a draw list was built: painting builds one per frame; tooltips, clicks and
    /// hover read the one last painted (for tests).
    int drawListBuilds() const { return m_drawListBuilds; }

    /// Fits [0, `cycles`] instead of [0, the model's total] from now on (0: the total again), so
    /// two timelines compared one above the other share one time scale.
    void setFitCycles(uint64_t cycles);
    /// Shows cycles [t0, t1] across the view (as a zoom there would); emits nothing.
    void showRange(double t0, double t1);
    /// Shows the given zoom and pan (another timeline's, to keep two in step); emits nothing.
    void setCoords(const TimelineCoords& coords);

public slots:
    void fitAll();

signals:
    /// The user clicked Task `taskIndex` (an index into model()->tasks()).
    void taskClicked(int taskIndex);
    /// The user zoomed, panned or fitted (not emitted for setCoords).
    void coordsChanged(const sextant::views::TimelineCoords& coords);

protected:
    void paintEvent(QPaintEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool event(QEvent* event) override;

private:
    double dataWidth() const;
    /// The item drawn as itself (not folded) under `pos`; count 0 when there is none.
    TimelineDrawItem itemAt(const QPoint& pos) const;
    QString taskToolTip(int taskIndex) const;
    /// Paints one DMA span, or one Task (not folded), of the draw list into `r`.
    void paintSpan(QPainter& p, const TimelineDrawItem& item, const QRectF& r,
                   const QFontMetricsF& fm) const;
    void paintTask(QPainter& p, const TimelineDrawItem& item, const QRectF& r,
                   const QFontMetricsF& fm) const;
    double laneTop(int lane) const;
    int laneAt(double y) const;
    void ensureTaskVisible(int taskIndex);
    /// Rebuilds m_pinned from m_highlight (in time that grows with the outlined Tasks), and with
    /// `critical` m_criticalMarks from m_critical too (a walk over every Task).
    void updateMarks(bool critical = false);
    /// The draw list for the current model, zoom, width and pins: the one last painted when
    /// nothing changed since, else built (and kept) now.
    const std::vector<TimelineDrawItem>& drawList() const;
    /// Paints the time axis: ticks from chooseTicks, so labels never overlap.
    void paintAxis(QPainter& p, double w, double bottom) const;

    std::shared_ptr<const TimelineModel> m_model;
    double m_clockGhz = 1.0;
    TimelineCoords m_coords;
    std::set<int> m_highlight;
    int m_focus = -1; ///< see focusTask
    std::set<int> m_critical; ///< Program Task ids
    /// Per Task index (see TimelineModel::buildDrawList, buildSpanList): the highlighted Tasks,
    /// never folded, and the critical path's Tasks. Empty when there are none.
    TimelineMarks m_pinned;
    TimelineMarks m_criticalMarks;
    /// The last draw list and what it was built for (drawList()).
    struct DrawCache {
        const TimelineModel* model = nullptr;
        TimelineCoords coords;
        double widthPx = -1.0;
        int marksVersion = -1;
        std::vector<TimelineDrawItem> items;
        std::vector<size_t> laneBegin; ///< items of lane i: [laneBegin[i], laneBegin[i + 1])
    };
    mutable DrawCache m_cache;
    mutable int m_drawListBuilds = 0;
    int m_marksVersion = 0;
    bool m_showCritical = true;
    QString m_emptyText;
    QPoint m_pressPos;
    QPoint m_lastDragPos;
    bool m_dragging = false;
    uint64_t m_fitCycles = 0; ///< see setFitCycles
    bool m_autoFit = true; ///< keep the whole run fitted on resize until the user zooms or pans
};

} // namespace sextant::views
