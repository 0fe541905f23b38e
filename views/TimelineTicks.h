#pragma once

#include "TimelineCoords.h"

#include <QString>

#include <functional>
#include <vector>

namespace sextant::views {

/// One labelled tick of the time axis.
struct TimelineTick {
    double cycle = 0.0; ///< where it sits, in cycles
    double x = 0.0;     ///< its pixel, as coords.mapTimeToX(cycle)
    QString label;      ///< "12.5k cyc · 12.5 µs"
};

/// The axis of a view `widthPx` wide under `coords` at `clockGhz`: a 1-2-5 step of whole cycles
/// chosen from the labels' own widths (`labelWidth` measures a label in pixels), the smallest
/// whose every label fits between its tick and the next with `gapPx` to spare, so labels never
/// overlap, at any zoom and on runs of 1 to 10^12 cycles and more. Labels carry as many digits
/// as the step needs to tell neighbours apart. Ticks whose label would run past the right edge
/// are left out.
std::vector<TimelineTick> chooseTicks(const TimelineCoords& coords, double widthPx,
                                      double clockGhz,
                                      const std::function<double(const QString&)>& labelWidth,
                                      double gapPx = 12.0);

/// "950", "12.5k", "3.2M", "1000.000000005G" cycles: with enough decimals to show `step`.
QString cyclesLabel(double cycles, double step);
/// "850 ns", "12.5 µs", "3.2 ms", "1.05 s" from microseconds, with enough decimals for `stepUs`.
QString timeLabel(double us, double stepUs);

} // namespace sextant::views
