// The Timeline tab shows any run of any profile database: read off the GUI thread, its summary
// naming the file and run, errors named, and the compile's run back on request.
#include "views/TimelineLoad.h"
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
        // The critical path from the stored dependencies, drawn as for a compile: it ends with the
        // Task that ended last.
        const std::set<int>& critical = page.timelineView()->criticalTasks();
        QVERIFY(!critical.empty());
        QVERIFY2(page.summaryText().contains(QStringLiteral("critical path %1 Tasks (from the stored dependencies)")
                                                 .arg(critical.size())),
                 qPrintable(page.summaryText()));
        const TimelineTask* last = &m->tasks().front();
        for (const TimelineTask& t : m->tasks())
            if (t.end > last->end)
                last = &t;
        QVERIFY(critical.count(last->task));

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

    void criticalPathFollowsWhatEndedLast() {
        // Core 0 runs a (0..10) then c (25..30); core 1 runs b (0..20); c waits for a and b.
        auto task = [](int id, int core, uint64_t start, uint64_t end) {
            TimelineTask t;
            t.task = id;
            t.core = core;
            t.start = start;
            t.end = end;
            return t;
        };
        std::vector<TimelineTask> tasks{task(0, 0, 0, 10), task(1, 1, 0, 20), task(2, 0, 25, 30)};
        QCOMPARE(storedCriticalPath(tasks, {{0, 2}, {1, 2}}), (std::vector<int>{1, 2}));
        // Without the dependency on b, c waited for a, the Task before it on its core.
        QCOMPARE(storedCriticalPath(tasks, {}), (std::vector<int>{0, 2}));
        // A damaged database: a dependency on a Task that ends later, or on one that is not there.
        QCOMPARE(storedCriticalPath(tasks, {{2, 0}, {7, 2}}), (std::vector<int>{0, 2}));
        QVERIFY(storedCriticalPath({}, {}).empty());
    }

    void findStepsThroughMatchingTasks() {
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("residual_cnn.db"));
        QVERIFY(QFile::copy(QStringLiteral(SEXTANT_SOURCE_DIR "/tests/data/profile-v2/residual_cnn.db"), db));
        TimelinePage page;
        page.resize(1000, 500);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        QSignalSpy loaded(&page, &TimelinePage::profileLoaded);
        page.openProfile(db);
        QVERIFY(loaded.wait(20000));
        TimelineView* view = page.timelineView();
        const TimelineModel* m = view->model();
        QVERIFY(m);
        // The Tasks a user would expect for "conv": those running a node or named with it.
        std::vector<int> convs;
        for (size_t i = 0; i < m->tasks().size(); ++i) {
            QString all = QString::fromStdString(m->tasks()[i].name + " " + m->tasks()[i].kernel);
            for (const std::string& n : m->tasks()[i].nodes)
                all += QLatin1Char(' ') + QString::fromStdString(n);
            if (all.contains(QStringLiteral("conv"), Qt::CaseInsensitive))
                convs.push_back(static_cast<int>(i));
        }
        QVERIFY(convs.size() >= 2 && convs.size() < m->tasks().size());

        page.findText(QStringLiteral("Conv"));
        QTRY_VERIFY_WITH_TIMEOUT(!page.isFinding() && page.findMatches().size() == convs.size(), 10000);
        QCOMPARE(view->highlighted(), std::set<int>(convs.begin(), convs.end()));
        QCOMPARE(page.findStatus(), QStringLiteral("%1 matches").arg(convs.size()));
        QCOMPARE(view->focusedTask(), -1);

        // Enter: the earliest match, in view and wide enough to see; again: the next one; back.
        page.findNext();
        const int first = page.findMatches().front();
        QCOMPARE(view->focusedTask(), first);
        QCOMPARE(page.findStatus(), QStringLiteral("1 of %1").arg(convs.size()));
        for (size_t i = 0; i < m->tasks().size(); ++i)
            QVERIFY(m->tasks()[static_cast<size_t>(first)].start <= m->tasks()[i].start || std::find(convs.begin(), convs.end(), static_cast<int>(i)) == convs.end());
        QRectF r = view->taskRect(first);
        QVERIFY2(r.left() >= 0 && r.right() <= view->width() && r.width() >= 20,
                 qPrintable(QStringLiteral("%1 %2 %3").arg(r.left()).arg(r.right()).arg(r.width())));
        page.findNext();
        QCOMPARE(view->focusedTask(), page.findMatches()[1]);
        r = view->taskRect(page.findMatches()[1]);
        QVERIFY(r.left() >= 0 && r.right() <= view->width());
        page.findPrevious();
        page.findPrevious(); // wraps to the last
        QCOMPARE(view->focusedTask(), page.findMatches().back());
        QCOMPARE(page.findStatus(), QStringLiteral("%1 of %1").arg(convs.size()));

        // A node selected in the graph outlines its Tasks; the next step outlines the matches again.
        page.highlightNode(QString::fromStdString(m->tasks().front().nodes.front()));
        page.findNext();
        QCOMPARE(view->highlighted(), std::set<int>(convs.begin(), convs.end()));

        // Nothing matches: said, nothing outlined; an empty box clears the outline.
        page.findText(QStringLiteral("no such task"));
        QTRY_VERIFY_WITH_TIMEOUT(!page.isFinding(), 10000);
        QCOMPARE(page.findStatus(), QStringLiteral("no Task matches"));
        QVERIFY(view->highlighted().empty());
        page.findText(QStringLiteral("conv"));
        QTRY_VERIFY_WITH_TIMEOUT(!page.isFinding() && !page.findMatches().empty(), 10000);
        page.findText(QString());
        QTRY_VERIFY_WITH_TIMEOUT(view->highlighted().empty(), 10000);
        QCOMPARE(page.findStatus(), QString());

        // Enter typed before the matches came: the step waits for them.
        page.findText(QStringLiteral("conv"));
        page.findNext();
        QTRY_VERIFY_WITH_TIMEOUT(!page.isFinding(), 10000);
        QCOMPARE(view->focusedTask(), first);
    }
};

QTEST_MAIN(TestTimelinePage)
#include "tst_timelinepage.moc"
