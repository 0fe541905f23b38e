#pragma once

#include "SramMap.h"

#include <QColor>
#include <QWidget>

#include <memory>
#include <vector>

namespace sextant::views {

/// The colour of an SRAM buffer of role `role` (the legend's).
QColor sramRoleColor(backend::SramRole role);
/// "input tile", "weight tile", "output tile", "accumulator", "resident".
QString sramRoleLabel(backend::SramRole role);

/// The memory tab's SRAM level: every planned SRAM buffer of one core, or of every core in
/// stacked bands (one per core, each 0..sram_bytes), as a rectangle, x = lifetime in simulated
/// cycles, y = offset in the core's SRAM, coloured by role. The second slot of a ping-pong pair
/// is hatched in its partner's colour and a thin line links the two. Per core, a solid line
/// marks the capacity and dashed lines the plan's peak and the lower bound. Hover shows the
/// buffer; clicking one emits sramBufferClicked; the buffers of the selected node are outlined.
/// The wheel zooms the time axis around the pointer, a drag pans, a double-click shows it all.
class SramView : public QWidget {
    Q_OBJECT
public:
    /// A figure line of one core's band.
    struct Line {
        enum class Kind { Capacity, Peak, LowerBound } kind = Kind::Capacity;
        int core = 0;
        uint64_t bytes = 0;
        double y = 0.0; ///< widget y; NaN when above the band's range (fit to peak)
    };

    explicit SramView(QWidget* parent = nullptr);

    void setMap(std::shared_ptr<const SramMapData> map);
    /// Shows core `core` alone, or every core stacked for -1.
    void setCore(int core);
    int core() const { return m_core; }
    /// Scales each band to the highest peak shown instead of the whole SRAM, for plans that use
    /// a small part of it (the capacity line is then named above the band).
    void setFitToPeak(bool fit);
    /// Shows the cycles [start, start + cycles) across the width (the wheel zooms around the
    /// pointer, a drag pans, a double-click shows the whole run again). cycles 0: the whole run.
    void setTimeWindow(double start, double cycles);
    double windowStart() const { return m_viewStart; }
    /// Cycles across the width (the run's, when not zoomed).
    double windowCycles() const;
    /// Outlines the buffers node `node` uses (SramBlock::nodes).
    void highlightNode(const QString& node);

    /// Indices into the map's blocks of the buffers shown (the chosen core's), in paint order.
    const std::vector<int>& shown() const { return m_shown; }
    /// Indices of the shown blocks outlined for the highlighted node.
    std::vector<int> outlined() const;
    /// The figure lines drawn, per shown core: capacity, peak, lower bound.
    std::vector<Line> lines() const;
    /// The block under widget position `pos`, or nullptr.
    const SramBlock* blockAt(const QPoint& pos) const;
    /// Widget rectangle of a drawn block (for tests and hit-testing).
    QRectF blockRect(const SramBlock& block) const;

signals:
    /// The user clicked the SRAM buffer with this Program::sramBuffers id; `node` is the first
    /// IR node its Task executes.
    void sramBufferClicked(int sramBufferId, const QString& node);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    bool event(QEvent* event) override;

private:
    void refresh();
    /// Recomputes the plot and band rectangles (the legend's rows depend on the width) when the
    /// size or the bands changed since they were last laid out.
    void layoutBands() const;
    QRectF plotRect() const;
    /// The band of core `core` (the whole plot when one core is shown); empty if not shown.
    QRectF bandRect(int core) const;
    /// Widget y of `bytes` in band `band`.
    double yOf(const QRectF& band, uint64_t bytes) const;
    /// Widget x of cycle `t` under the time window.
    double xOf(double t) const;
    void paintLegend(QPainter& p) const;
    void paintBand(QPainter& p, const SramCoreLines& core, const QRectF& band) const;

    std::shared_ptr<const SramMapData> m_map;
    int m_core = -1;
    bool m_fitToPeak = false;
    std::vector<int> m_shown;
    std::vector<int> m_bands; ///< cores shown, top band first
    uint64_t m_range = 1;     ///< bytes a band spans
    QString m_highlight;
    double m_viewStart = 0.0, m_viewCycles = 0.0; ///< the time window; 0 cycles: the whole run
    QPoint m_pressPos;
    double m_pressStart = 0.0;
    bool m_dragging = false;
    // The laid-out geometry, a cache: hit-testing and painting ask for it per block.
    mutable QRectF m_plot;
    mutable std::vector<QRectF> m_bandRects; ///< per core, empty for a core not shown
    mutable QSize m_laidOutFor;              ///< the size it was computed for (invalid: stale)
};

} // namespace sextant::views
