// The Timeline tab shows any run of any profile database: read off the GUI thread, its summary
// naming the file and run, errors named, and the compile's run back on request.
#include "views/TimelinePage.h"
#include "views/TimelineView.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace sextant::views;

class TestTimelinePage : public QObject {
    Q_OBJECT
private slots:
    void opensARunOfADatabase() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("residual_cnn.db"));
        // A copy: even a reader of a WAL database writes beside it.
        QVERIFY(QFile::copy(QStringLiteral(SEXTANT_SOURCE_DIR "/tests/data/profile-v2/residual_cnn.db"), db));
        TimelinePage page;
        QSignalSpy loaded(&page, &TimelinePage::profileLoaded);
        page.openProfile(db);
        QVERIFY(page.showsProfile());
        QVERIFY(loaded.wait(20000));
        QCOMPARE(loaded.front().front().toString(), QString());
        QVERIFY(!page.isLoading());
        const TimelineModel* m = page.timelineView()->model();
        QVERIFY(m);
        QCOMPARE(m->tasks().size(), size_t(36));
        QCOMPARE(m->totalCycles(), uint64_t(6481));
        QVERIFY2(page.summaryText().contains(QStringLiteral("36 Tasks on 8 cores")), qPrintable(page.summaryText()));
        QVERIFY2(page.summaryText().contains(QStringLiteral("residual_cnn.db run 1 (residual_cnn.onnx, npu-a)")),
                 qPrintable(page.summaryText()));

        // No such run, and a file that is no database: the reason, and nothing shown.
        page.openProfile(db, 9);
        QVERIFY(loaded.wait(20000));
        QVERIFY2(loaded.back().front().toString().contains(QStringLiteral("no run 9")),
                 qPrintable(loaded.back().front().toString()));
        QVERIFY(!page.timelineView()->model());
        const QString junk = dir.filePath(QStringLiteral("junk.db"));
        QFile f(junk);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a database at all, just text");
        f.close();
        page.openProfile(junk);
        QVERIFY(loaded.wait(20000));
        QVERIFY2(loaded.back().front().toString().contains(QStringLiteral("not a profile database")),
                 qPrintable(loaded.back().front().toString()));
        QVERIFY2(page.summaryText().startsWith(QStringLiteral("could not read the database")),
                 qPrintable(page.summaryText()));

        // Back to the compile (none yet here): the database's run is gone.
        page.showCompile();
        QVERIFY(!page.showsProfile());
        QCOMPARE(page.summaryText(), QStringLiteral("no run yet"));
    }
};

QTEST_MAIN(TestTimelinePage)
#include "tst_timelinepage.moc"
