// The time axis: the tick step comes from the labels' widths, so at any zoom and on runs from
// 1 to 10^12 cycles the labels never overlap, never repeat, and there is always one to read.
#include "views/TimelineTicks.h"

#include <QtTest>

#include <cmath>

using namespace sextant::views;

namespace {

/// A font's widths without a font: 6.5 px per character (the test must not depend on the
/// machine's fonts; the view passes QFontMetricsF::horizontalAdvance).
double labelWidth(const QString& s) { return 6.5 * s.size(); }

} // namespace

class TestTimelineTicks : public QObject {
    Q_OBJECT
private slots:
    void labelsNeverOverlap_data() {
        QTest::addColumn<double>("run");
        QTest::addColumn<double>("zoom");
        QTest::addColumn<double>("at");
        for (double run : {1.0, 7.0, 1e3, 123456.0, 1e6, 3.3e8, 1e9, 1e12, 4.7e13})
            for (double zoom : {1.0, 10.0, 1e3, 1e6, 1e9, 1e14})
                for (double at : {0.0, 0.5, 1.0})
                    QTest::addRow("run %g zoom %g at %g", run, zoom, at) << run << zoom << at;
    }
    void labelsNeverOverlap() {
        QFETCH(double, run);
        QFETCH(double, zoom);
        QFETCH(double, at);
        const double width = 1400.0;
        TimelineCoords c;
        c.fit(0.0, run, width, 6.0);
        c.zoomAt(width * at, zoom); // clamped at TimelineCoords::minCyclesPerPixel
        const std::vector<TimelineTick> ticks = chooseTicks(c, width, 1.0, labelWidth);
        QVERIFY2(!ticks.empty(), "no tick in view");
        for (size_t i = 0; i < ticks.size(); ++i) {
            const TimelineTick& t = ticks[i];
            QVERIFY(t.x >= 0.0 && t.x <= width);
            QCOMPARE(t.x, c.mapTimeToX(t.cycle));
            QCOMPARE(t.cycle, std::round(t.cycle)); // whole cycles
            QVERIFY2(t.x + 3.0 + labelWidth(t.label) <= width + 8.0, qPrintable(t.label));
            if (i == 0)
                continue;
            const TimelineTick& prev = ticks[i - 1];
            QVERIFY2(prev.x + labelWidth(prev.label) < t.x,
                     qPrintable(prev.label + QStringLiteral(" runs into ") + t.label));
            QVERIFY2(prev.label != t.label, qPrintable(QStringLiteral("repeated ") + t.label));
        }
    }

    void labelsCarryTheDigitsTheStepNeeds() {
        QCOMPARE(cyclesLabel(12500.0, 500.0), QStringLiteral("12.5k"));
        QCOMPARE(cyclesLabel(12000.0, 2000.0), QStringLiteral("12k"));
        QCOMPARE(cyclesLabel(950.0, 50.0), QStringLiteral("950"));
        QCOMPARE(cyclesLabel(1e12 + 5.0, 1.0), QStringLiteral("1000.000000005G"));
        QCOMPARE(timeLabel(0.85, 0.05), QStringLiteral("850 ns"));
        QCOMPARE(timeLabel(3200.0, 100.0), QStringLiteral("3.2 ms"));
        QCOMPARE(timeLabel(0.0, 1.0), QStringLiteral("0 µs"));
    }
};

QTEST_APPLESS_MAIN(TestTimelineTicks)
#include "tst_timelineticks.moc"
