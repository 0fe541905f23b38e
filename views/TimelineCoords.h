#pragma once

namespace sextant::views {

/// The coordinate mapping of a timeline: which time (in cycles) sits at pixel x = 0 and how many
/// cycles one pixel spans. A plain value type so zoom and pan can be tested without a widget.
struct TimelineCoords {
    double viewStart = 0.0;      ///< time at x = 0, in cycles
    double cyclesPerPixel = 1.0; ///< horizontal scale; smaller is more zoomed in

    /// The finest zoom allowed: one pixel never spans less than this many cycles.
    static constexpr double minCyclesPerPixel = 0.01;
    /// The coarsest zoom allowed.
    static constexpr double maxCyclesPerPixel = 1e12;

    /// Pixel x (may be off-screen) of time t.
    double mapTimeToX(double t) const { return (t - viewStart) / cyclesPerPixel; }
    /// Time under pixel x.
    double mapXToTime(double x) const { return viewStart + x * cyclesPerPixel; }
    /// Visible time span of a view `widthPx` wide.
    double visibleSpan(double widthPx) const { return widthPx * cyclesPerPixel; }

    /// Zooms by `factor` (> 1 zooms in) keeping the time under pixel `anchorX` where it is, so
    /// the item under the mouse stays under the mouse. The scale is clamped to the limits above.
    void zoomAt(double anchorX, double factor);
    /// Moves the view by `dx` pixels: a drag to the right (dx > 0) shows earlier times.
    void panByPixels(double dx) { viewStart -= dx * cyclesPerPixel; }
    /// Shows [t0, t1] across `widthPx` pixels with a margin of `marginPx` pixels on each side.
    void fit(double t0, double t1, double widthPx, double marginPx = 0.0);
};

} // namespace sextant::views
