// The timeline of a lowered sample: DMA spans under the compute lanes, as the simulator timed
// them, and a click on a transfer selects its Task.
#include "views/CompileWorker.h"
#include "views/TimelineView.h"

#include <QSignalSpy>
#include <QtTest>

#include <map>

using namespace sextant;
using namespace sextant::views;

namespace {

const char* kSample = SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx";

/// The sample with 16 KiB of SRAM per core: some Tasks stream double-buffered, others load,
/// compute and store one after another. The one that streams is the global pooling over the
/// whole map, so split-global-pool (which spreads it over the cores) is off.
std::shared_ptr<const CompileSnapshot> compileSample() {
    CompileRequest req;
    req.modelPath = kSample;
    req.target.sramBytes = 16 * 1024;
    req.pipeline.disabled = {"split-global-pool"};
    auto result = compileModel(req);
    if (!result.ok())
        qWarning("%s", result.error().message.c_str());
    return result.ok() ? *result : nullptr;
}

} // namespace

class TestTimelineView : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        m_snapshot = compileSample();
        QVERIFY(m_snapshot);
    }

    void dmaSpansFollowTheSimulatedPhases() {
        const CompileSnapshot& s = *m_snapshot;
        const TimelineModel& m = s.timeline;
        std::map<int, size_t> traceOf;
        for (size_t i = 0; i < s.program.tasks.size(); ++i)
            traceOf[s.program.tasks[i].id] = i;
        std::map<int, std::vector<const TimelineDmaSpan*>> spansOf;
        for (size_t k = 0; k < m.dmaSpans().size(); ++k) {
            const TimelineDmaSpan& span = m.dmaSpans()[k];
            spansOf[span.task].push_back(&span);
            // On its core's DMA lane, below that core's compute lanes.
            const TimelineLane& lane =
                m.lanes()[static_cast<size_t>(m.laneOfSpan(static_cast<int>(k)))];
            const TimelineTask& t = m.tasks()[static_cast<size_t>(span.task)];
            QCOMPARE(lane.core, t.core);
            QCOMPARE(lane.unit, backend::UnitKind::Dma);
            QVERIFY(m.laneOfSpan(static_cast<int>(k)) > m.laneOf(span.task));
        }
        int streams = 0, sequential = 0;
        for (size_t i = 0; i < m.tasks().size(); ++i) {
            const TimelineTask& t = m.tasks()[i];
            const sim::TraceRecord& rec = s.sim.trace[traceOf.at(t.task)];
            const backend::Task& task = s.program.tasks[traceOf.at(t.task)];
            const auto& spans = spansOf[static_cast<int>(i)];
            if (t.unit == backend::UnitKind::Dma || task.dmaBytes == 0) {
                QVERIFY2(spans.empty(), t.name.c_str());
                continue;
            }
            if (task.tiling.doubleBuffered && task.tiling.numTiles > 1) {
                // One stream from the start to the last tile moved, overlapping the compute.
                QCOMPARE(spans.size(), size_t(1));
                QCOMPARE(spans[0]->kind, DmaPhaseKind::Stream);
                QCOMPARE(spans[0]->start, rec.start);
                QCOMPARE(spans[0]->end, rec.loadEnd);
                QCOMPARE(spans[0]->bytes, task.dmaBytes);
                QVERIFY2(spans[0]->start < rec.computeEnd && rec.computeStart < spans[0]->end,
                         t.name.c_str());
                ++streams;
                continue;
            }
            // A load before the compute and a store after it, not overlapping it.
            QVERIFY2(!spans.empty() && spans.size() <= 2, t.name.c_str());
            for (const TimelineDmaSpan* span : spans) {
                if (span->kind == DmaPhaseKind::Load) {
                    QCOMPARE(span->start, rec.start);
                    QCOMPARE(span->end, rec.loadEnd);
                    QVERIFY(span->end <= rec.computeStart);
                } else {
                    QCOMPARE(span->kind, DmaPhaseKind::Store);
                    QCOMPARE(span->start, rec.storeStart);
                    QCOMPARE(span->end, rec.end);
                    QVERIFY(span->start >= rec.computeEnd);
                }
            }
            ++sequential;
        }
        QVERIFY(streams > 0);
        QVERIFY(sequential > 0);
        QCOMPARE(s.timeline.totalCycles(), s.sim.totalCycles);
    }

    void clickingADmaSpanSelectsItsTask() {
        TimelineView view;
        view.resize(1400, 900);
        view.setModel(std::shared_ptr<const TimelineModel>(m_snapshot, &m_snapshot->timeline), 1.0);
        const TimelineModel& m = *view.model();
        // The widest span at the fitted zoom: wide enough to hit.
        int best = -1;
        for (int k = 0; k < static_cast<int>(m.dmaSpans().size()); ++k)
            if (best < 0 || view.spanRect(k).width() > view.spanRect(best).width())
                best = k;
        QVERIFY(best >= 0);
        QVERIFY(view.spanRect(best).width() >= 4);
        const QPoint center = view.spanRect(best).center().toPoint();
        QCOMPARE(view.spanAt(center), best);
        const int task = m.dmaSpans()[static_cast<size_t>(best)].task;
        QCOMPARE(view.taskAt(center), task);
        QSignalSpy clicked(&view, &TimelineView::taskClicked);
        QTest::mouseClick(&view, Qt::LeftButton, {}, center);
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.front().front().toInt(), task);
        // Its tooltip says what it moved, for which Task, then the Task's own.
        const TimelineDmaSpan& span = m.dmaSpans()[static_cast<size_t>(best)];
        const QString tip = view.toolTipAt(center);
        const QString what = QString::fromStdString(dmaSpanLabel(span));
        QVERIFY2(tip.startsWith(QStringLiteral("<b>") + what + QStringLiteral("</b> of ") +
                                QString::fromStdString(m.tasks()[static_cast<size_t>(task)].name)),
                 qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral(" KiB")) || tip.contains(QStringLiteral(" B")), qPrintable(tip));
        QVERIFY2(tip.contains(QStringLiteral("start %1 · end %2 cyc")
                                  .arg(m.tasks()[static_cast<size_t>(task)].start)
                                  .arg(m.tasks()[static_cast<size_t>(task)].end)),
                 qPrintable(tip));
        // The span is on a lane of its own below its Task's.
        QVERIFY(view.spanRect(best).top() > view.taskRect(task).bottom());
    }

    // Hover and clicks hit-test the draw list the frame painted: a tooltip over every pixel of
    // a lane builds none, and finds each Task where it is drawn.
    void tooltipsAndClicksReuseThePaintedDrawList() {
        TimelineView view;
        view.resize(1400, 900);
        view.setModel(std::shared_ptr<const TimelineModel>(m_snapshot, &m_snapshot->timeline), 1.0);
        const TimelineModel& m = *view.model();
        (void)view.grab(); // paints once
        const int built = view.drawListBuilds();
        QCOMPARE(built, 1);
        int found = 0;
        for (int i = 0; i < static_cast<int>(m.tasks().size()); ++i) {
            const QRectF r = view.taskRect(i);
            if (r.width() < 4)
                continue;
            const QPoint center = r.center().toPoint();
            QCOMPARE(view.taskAt(center), i);
            QVERIFY(view.toolTipAt(center).contains(QString::fromStdString(m.tasks()[static_cast<size_t>(i)].name).toHtmlEscaped()));
            ++found;
        }
        QVERIFY(found > 10);
        for (int x = 0; x < view.width(); x += 3)
            (void)view.toolTipAt(QPoint(x, static_cast<int>(view.taskRect(0).center().y())));
        QTest::mouseClick(&view, Qt::LeftButton, {}, view.taskRect(0).center().toPoint());
        QCOMPARE(view.drawListBuilds(), built);
        // A zoom changes what is drawn: the next hit test builds the list for it, once.
        view.setCoords(TimelineCoords{0.0, view.coords().cyclesPerPixel / 4});
        (void)view.taskAt(QPoint(200, 40));
        (void)view.taskAt(QPoint(300, 40));
        QCOMPARE(view.drawListBuilds(), built + 1);
    }

private:
    std::shared_ptr<const CompileSnapshot> m_snapshot;
};

QTEST_MAIN(TestTimelineView)
#include "tst_timelineview.moc"
