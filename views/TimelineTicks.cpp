#include "TimelineTicks.h"

#include <algorithm>
#include <cmath>

namespace sextant::views {

namespace {

/// `value / unit` with the decimals that resolve `step / unit` (at most 12).
QString scaled(double value, double unit, double step) {
    const double s = step / unit;
    const int decimals = s >= 1.0 ? 0 : std::min(12, static_cast<int>(std::ceil(-std::log10(s) - 1e-9)));
    return QString::number(value / unit, 'f', decimals);
}

/// The ticks of `step` cycles in view, labelled (at most `cap`).
std::vector<TimelineTick> ticksOf(const TimelineCoords& coords, double widthPx, double clockGhz,
                                  double step, size_t cap) {
    std::vector<TimelineTick> out;
    const double first = std::ceil(coords.mapXToTime(0.0) / step) * step;
    const double microsPerCycle = 1.0 / (clockGhz * 1000.0);
    for (double i = 0;; ++i) {
        const double t = first + i * step;
        const double x = coords.mapTimeToX(t);
        if (x > widthPx)
            break;
        if (out.size() >= cap)
            break;
        out.push_back(TimelineTick{t, x,
                                   QStringLiteral("%1 cyc · %2")
                                       .arg(cyclesLabel(t, step),
                                            timeLabel(t * microsPerCycle, step * microsPerCycle))});
    }
    return out;
}

} // namespace

QString cyclesLabel(double c, double step) {
    const double a = std::abs(c);
    if (a >= 1e9)
        return scaled(c, 1e9, step) + QStringLiteral("G");
    if (a >= 1e6)
        return scaled(c, 1e6, step) + QStringLiteral("M");
    if (a >= 1e4)
        return scaled(c, 1e3, step) + QStringLiteral("k");
    return scaled(c, 1.0, step);
}

QString timeLabel(double us, double stepUs) {
    const double a = std::abs(us);
    if (a == 0.0)
        return QStringLiteral("0 µs");
    if (a < 1.0)
        return scaled(us, 1e-3, stepUs) + QStringLiteral(" ns");
    if (a < 1000.0)
        return scaled(us, 1.0, stepUs) + QStringLiteral(" µs");
    if (a < 1e6)
        return scaled(us, 1e3, stepUs) + QStringLiteral(" ms");
    return scaled(us, 1e6, stepUs) + QStringLiteral(" s");
}

std::vector<TimelineTick> chooseTicks(const TimelineCoords& coords, double widthPx,
                                      double clockGhz,
                                      const std::function<double(const QString&)>& labelWidth,
                                      double gapPx) {
    if (!(widthPx > 0.0) || !(coords.cyclesPerPixel > 0.0) || !(clockGhz > 0.0))
        return {};
    // 1-2-5 steps of whole cycles from one where ticks are 40 px apart, up until every label fits
    // before the next tick. A label is at most a few hundred pixels, so few steps are tried.
    const double raw = std::max(1.0, coords.cyclesPerPixel * 40.0);
    double decade = std::pow(10.0, std::floor(std::log10(raw)));
    for (int tries = 0; tries < 60; ++tries, decade *= 10.0)
        for (double m : {1.0, 2.0, 5.0}) {
            const double step = m * decade;
            if (step < raw)
                continue;
            const double stepPx = step / coords.cyclesPerPixel;
            const size_t cap = static_cast<size_t>(widthPx / stepPx) + 2;
            std::vector<TimelineTick> ticks = ticksOf(coords, widthPx, clockGhz, step, cap);
            const bool fits = std::all_of(ticks.begin(), ticks.end(), [&](const TimelineTick& t) {
                return labelWidth(t.label) + gapPx <= stepPx;
            });
            if (!fits)
                continue;
            // Past the right edge a label would be clipped: leave its tick's label out.
            while (!ticks.empty() && ticks.back().x + 3.0 + labelWidth(ticks.back().label) > widthPx + 8.0)
                ticks.pop_back();
            return ticks;
        }
    return {};
}

} // namespace sextant::views
