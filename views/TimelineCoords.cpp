#include "TimelineCoords.h"

#include <algorithm>

namespace sextant::views {

void TimelineCoords::zoomAt(double anchorX, double factor) {
    if (!(factor > 0.0))
        return;
    const double anchorTime = mapXToTime(anchorX);
    cyclesPerPixel = std::clamp(cyclesPerPixel / factor, minCyclesPerPixel, maxCyclesPerPixel);
    viewStart = anchorTime - anchorX * cyclesPerPixel;
}

void TimelineCoords::fit(double t0, double t1, double widthPx, double marginPx) {
    const double usable = std::max(1.0, widthPx - 2.0 * marginPx);
    const double span = std::max(t1 - t0, 1.0);
    cyclesPerPixel = std::clamp(span / usable, minCyclesPerPixel, maxCyclesPerPixel);
    viewStart = t0 - marginPx * cyclesPerPixel;
}

} // namespace sextant::views
