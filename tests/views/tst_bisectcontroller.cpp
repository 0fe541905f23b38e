// The bisect controller on the project's sample: it searches on a pool thread and reports on the
// GUI thread. At a tolerance of 1e-7 (sextant-cli bisect --atol 1e-7 --rtol 1e-7) -O3's BatchNorm
// folding in f16 is the culprit; at the run's tolerances there is no drift; Cancel stops it.
#include "views/BisectController.h"

#include <QSignalSpy>
#include <QThread>
#include <QtTest>

using namespace sextant;
using namespace sextant::views;

namespace {

CompileRequest sampleAtO3() {
    CompileRequest r;
    r.modelPath = SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx";
    r.pipeline.optLevel = 3;
    r.pipeline.bisectLimit = 5; // ignored: the search sets it
    return r;
}

} // namespace

class TestBisectController : public QObject {
    Q_OBJECT
private slots:
    void reportsTheCulpritRule() {
        BisectController c;
        c.setTolerance({1e-7, 1e-7});
        QSignalSpy busy(&c, &BisectController::busyChanged);
        QSignalSpy messages(&c, &BisectController::message);
        QSignalSpy finished(&c, &BisectController::finished);
        QSignalSpy failed(&c, &BisectController::failed);
        bool onGuiThread = true;
        connect(&c, &BisectController::message, this,
                [&] { onGuiThread = onGuiThread && QThread::currentThread() == thread(); });
        QVERIFY(c.start(sampleAtO3()));
        // start() only launched the search: nothing has been decided on this thread yet.
        QVERIFY(c.isRunning());
        QCOMPARE(finished.count(), 0);
        QVERIFY(!c.start(sampleAtO3())); // one search at a time
        QVERIFY(QTest::qWaitFor([&] { return finished.count() + failed.count() > 0; }, 180000));
        QVERIFY2(failed.isEmpty(),
                 failed.isEmpty() ? "" : qPrintable(failed.first().at(0).toString()));
        QVERIFY(onGuiThread);
        QVERIFY(!c.isRunning());

        const QString verdict = finished.first().at(0).toString();
        QVERIFY(finished.first().at(1).toBool());
        QVERIFY2(verdict.contains(QStringLiteral("fuse-conv-bn-f16")) &&
                     verdict.contains(QStringLiteral("'block1_conv'")),
                 qPrintable(verdict));
        QVERIFY(c.culprit());
        QCOMPARE(c.culprit()->rule, std::string("fuse-conv-bn-f16"));
        QCOMPARE(c.culprit()->node, std::string("block1_conv"));
        QCOMPARE(c.limit(), int64_t{c.culprit()->seq});
        // busy, then idle before the verdict; the log heard the start, every probe and the verdict.
        QCOMPARE(busy.count(), 2);
        QCOMPARE(busy.at(0).at(0).toBool(), true);
        QCOMPARE(busy.at(1).at(0).toBool(), false);
        QStringList lines;
        for (const QList<QVariant>& m : messages)
            lines << m.at(0).toString();
        QVERIFY2(lines.first().startsWith(QStringLiteral("— bisect ")), qPrintable(lines.first()));
        QVERIFY2(lines.filter(QRegularExpression(QStringLiteral("^  all \\d+ applications: FAIL$")))
                         .size() == 1,
                 qPrintable(lines.join('\n')));
        QVERIFY2(lines.contains(QStringLiteral("  limit 0: PASS")), qPrintable(lines.join('\n')));
        QCOMPARE(lines.last(), verdict);
        // The limit holds until something renumbers the applications.
        QVERIFY(c.clearLimit());
        QCOMPARE(c.limit(), int64_t{-1});
        QVERIFY(!c.clearLimit());
    }

    void noDriftAtTheRunTolerances() {
        BisectController c;
        QSignalSpy finished(&c, &BisectController::finished);
        QVERIFY(c.start(sampleAtO3()));
        QVERIFY(QTest::qWaitFor([&] { return finished.count() > 0; }, 180000));
        const QString verdict = finished.first().at(0).toString();
        QVERIFY2(verdict.startsWith(QStringLiteral("bisect: no drift at -O3: with all ")),
                 qPrintable(verdict));
        QCOMPARE(finished.first().at(1).toBool(), false);
        QVERIFY(!c.culprit());
        QCOMPARE(c.limit(), int64_t{-1});
    }

    void cancelStopsTheSearch() {
        BisectController c;
        c.setTolerance({1e-7, 1e-7});
        QSignalSpy finished(&c, &BisectController::finished);
        QSignalSpy cancelled(&c, &BisectController::cancelled);
        QVERIFY(c.start(sampleAtO3()));
        c.cancel();
        QVERIFY(QTest::qWaitFor([&] { return finished.count() + cancelled.count() > 0; }, 180000));
        QCOMPARE(cancelled.count(), 1);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(c.limit(), int64_t{-1});
    }

    void aModelThatCannotBeReadFails() {
        BisectController c;
        QSignalSpy failed(&c, &BisectController::failed);
        CompileRequest r = sampleAtO3();
        r.modelPath = SEXTANT_SOURCE_DIR "/samples/no-such-model.onnx";
        QVERIFY(c.start(r));
        QVERIFY(QTest::qWaitFor([&] { return failed.count() > 0; }, 60000));
        QVERIFY2(failed.first().at(0).toString().startsWith(QStringLiteral("bisect: ")),
                 qPrintable(failed.first().at(0).toString()));
    }

    void destroyingARunningSearchWaitsForIt() {
        auto c = std::make_unique<BisectController>();
        c->setTolerance({1e-7, 1e-7});
        QVERIFY(c->start(sampleAtO3()));
        c.reset(); // cancels and waits: no probe reports to a dead object
        QTest::qWait(50);
    }
};

QTEST_MAIN(TestBisectController)
#include "tst_bisectcontroller.moc"
