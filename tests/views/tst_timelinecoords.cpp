// The timeline's coordinate math, data-driven (KDAB hotspot style): the numbers a user sees as
// "the Task under the mouse stays under the mouse when zooming" and "dragging moves the view".
#include "views/TimelineCoords.h"

#include <QtTest>

using sextant::views::TimelineCoords;

class TestTimelineCoords : public QObject {
    Q_OBJECT
private slots:
    void mapTimeToX_data() {
        QTest::addColumn<double>("viewStart");
        QTest::addColumn<double>("cyclesPerPixel");
        QTest::addColumn<double>("time");
        QTest::addColumn<double>("x");
        QTest::newRow("origin") << 0.0 << 1.0 << 0.0 << 0.0;
        QTest::newRow("unit scale") << 0.0 << 1.0 << 250.0 << 250.0;
        QTest::newRow("10 cycles per px") << 0.0 << 10.0 << 250.0 << 25.0;
        QTest::newRow("scrolled") << 1000.0 << 10.0 << 1250.0 << 25.0;
        QTest::newRow("before the view") << 1000.0 << 10.0 << 900.0 << -10.0;
        QTest::newRow("zoomed in") << 100.0 << 0.25 << 101.0 << 4.0;
    }
    void mapTimeToX() {
        QFETCH(double, viewStart);
        QFETCH(double, cyclesPerPixel);
        QFETCH(double, time);
        QFETCH(double, x);
        TimelineCoords c{viewStart, cyclesPerPixel};
        QCOMPARE(c.mapTimeToX(time), x);
        QCOMPARE(c.mapXToTime(x), time); // the inverse maps back
    }

    void zoomKeepsAnchor_data() {
        QTest::addColumn<double>("anchorX");
        QTest::addColumn<double>("factor");
        QTest::addColumn<double>("expectedCyclesPerPixel");
        QTest::newRow("zoom in at left edge") << 0.0 << 2.0 << 5.0;
        QTest::newRow("zoom in mid view") << 400.0 << 2.0 << 5.0;
        QTest::newRow("zoom out at right") << 800.0 << 0.5 << 20.0;
        QTest::newRow("10x in") << 123.0 << 10.0 << 1.0;
    }
    void zoomKeepsAnchor() {
        QFETCH(double, anchorX);
        QFETCH(double, factor);
        QFETCH(double, expectedCyclesPerPixel);
        TimelineCoords c{5000.0, 10.0};
        const double timeUnderMouse = c.mapXToTime(anchorX);
        c.zoomAt(anchorX, factor);
        QCOMPARE(c.cyclesPerPixel, expectedCyclesPerPixel);
        QVERIFY(qAbs(c.mapTimeToX(timeUnderMouse) - anchorX) < 1e-9);
    }

    void zoomIsClamped() {
        TimelineCoords c{0.0, 1.0};
        for (int i = 0; i < 100; ++i)
            c.zoomAt(10.0, 10.0);
        QCOMPARE(c.cyclesPerPixel, TimelineCoords::minCyclesPerPixel);
        c.zoomAt(10.0, 0.0);  // nonsense factors are ignored
        c.zoomAt(10.0, -3.0);
        QCOMPARE(c.cyclesPerPixel, TimelineCoords::minCyclesPerPixel);
    }

    void panMovesContentWithTheMouse() {
        TimelineCoords c{1000.0, 4.0};
        const double t = 1400.0;
        const double before = c.mapTimeToX(t);
        c.panByPixels(30.0); // drag right by 30 px
        QCOMPARE(c.mapTimeToX(t), before + 30.0);
        QCOMPARE(c.viewStart, 880.0);
    }

    void fit_data() {
        QTest::addColumn<double>("t0");
        QTest::addColumn<double>("t1");
        QTest::addColumn<double>("width");
        QTest::addColumn<double>("margin");
        QTest::newRow("whole run") << 0.0 << 14432.0 << 800.0 << 0.0;
        QTest::newRow("with margin") << 0.0 << 14432.0 << 800.0 << 6.0;
        QTest::newRow("offset range") << 5000.0 << 6000.0 << 500.0 << 10.0;
    }
    void fit() {
        QFETCH(double, t0);
        QFETCH(double, t1);
        QFETCH(double, width);
        QFETCH(double, margin);
        TimelineCoords c;
        c.fit(t0, t1, width, margin);
        QVERIFY(qAbs(c.mapTimeToX(t0) - margin) < 1e-9);
        QVERIFY(qAbs(c.mapTimeToX(t1) - (width - margin)) < 1e-9);
    }
};

QTEST_APPLESS_MAIN(TestTimelineCoords)
#include "tst_timelinecoords.moc"
