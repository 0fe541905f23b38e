// The Memory tab's SRAM level on the lowered sample: one rectangle per planned SRAM buffer of the
// chosen core, with its role, address and simulated cycles; the plan's capacity, peak and lower
// bound as lines; the selected node's buffers outlined; a click selects the buffer's Task.
#include "views/CompileWorker.h"
#include "views/InspectorWidget.h"
#include "views/MemoryPage.h"
#include "views/MemoryView.h"
#include "views/SramView.h"

#include <QSignalSpy>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

using namespace sextant;
using namespace sextant::views;

namespace {

const char* kSample = SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx";

bool executes(const backend::Task& t, const std::string& node) {
    return std::find(t.nodes.begin(), t.nodes.end(), node) != t.nodes.end();
}

} // namespace

class TestSramMap : public QObject {
    Q_OBJECT
private:
    std::shared_ptr<const CompileSnapshot> m_snap;

    const backend::Program& program() const { return m_snap->program; }
    /// The core with the most SRAM buffers (the sample's tail runs on one core).
    int busiestCore() const {
        std::vector<int> count(static_cast<size_t>(program().target.numCores), 0);
        for (const backend::SramBuffer& sb : program().sramBuffers)
            ++count[static_cast<size_t>(sb.core)];
        return static_cast<int>(std::max_element(count.begin(), count.end()) - count.begin());
    }

private slots:
    void initTestCase() {
        CompileRequest req;
        req.modelPath = kSample;
        auto result = compileModel(req);
        QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
        m_snap = *result;
        QVERIFY(m_snap->loweringError.empty());
        QVERIFY(!program().sramBuffers.empty());
        QVERIFY(!program().onChip.empty()); // the sample's single-core tail keeps tensors on chip
    }

    void oneBlockPerBufferOfTheCore() {
        const int core = busiestCore();
        SramView view;
        view.resize(1000, 600);
        view.setMap(std::shared_ptr<const SramMapData>(m_snap, &m_snap->sram));
        view.setCore(core);
        std::vector<const backend::SramBuffer*> expected;
        for (const backend::SramBuffer& sb : program().sramBuffers)
            if (sb.core == core)
                expected.push_back(&sb);
        QCOMPARE(view.shown().size(), expected.size());
        const TimelineModel& tl = m_snap->timeline;
        for (size_t i = 0; i < expected.size(); ++i) {
            const backend::SramBuffer& sb = *expected[i];
            const SramBlock& b = m_snap->sram.blocks[static_cast<size_t>(view.shown()[i])];
            QCOMPARE(b.sramBuffer, sb.id);
            QCOMPARE(b.core, core);
            QCOMPARE(b.role, sb.role);
            QCOMPARE(b.offset, sb.offset);
            QCOMPARE(b.size, sb.size);
            QCOMPARE(b.pair, sb.pair);
            QCOMPARE(b.task, sb.task);
            // Cycles from the trace: start of the first Task to the end of the last.
            QCOMPARE(b.t0, tl.tasks()[static_cast<size_t>(tl.indexOfTask(sb.firstTask))].start);
            QCOMPARE(b.t1, tl.tasks()[static_cast<size_t>(tl.indexOfTask(sb.lastTask))].end);
            QCOMPARE(b.value, program().buffers[static_cast<size_t>(sb.buffer)].value);
            // Higher addresses are drawn higher up, later cycles further right.
            const QRectF r = view.blockRect(b);
            QVERIFY(r.isValid());
            QVERIFY(view.blockAt(r.center().toPoint()) != nullptr);
        }
        // Every role the plan uses on the core is a different colour.
        QVERIFY(sramRoleColor(backend::SramRole::InputTile) !=
                sramRoleColor(backend::SramRole::Resident));
        QVERIFY(sramRoleColor(backend::SramRole::WeightTile) !=
                sramRoleColor(backend::SramRole::OutputTile));
    }

    void linesMatchThePlan() {
        const int core = busiestCore();
        SramView view;
        view.resize(1000, 600);
        view.setMap(std::shared_ptr<const SramMapData>(m_snap, &m_snap->sram));
        view.setCore(core);
        const std::vector<backend::SramStats>& plan = program().memory.sram;
        QCOMPARE(plan.size(), static_cast<size_t>(program().target.numCores));
        const backend::SramStats& stats = plan[static_cast<size_t>(core)];
        QVERIFY(stats.peak > 0);
        QVERIFY(stats.lowerBound <= stats.peak);
        uint64_t highest = 0;
        for (const backend::SramBuffer& sb : program().sramBuffers)
            if (sb.core == core)
                highest = std::max(highest, sb.offset + sb.size);
        QCOMPARE(stats.peak, highest);
        const auto lines = view.lines();
        QCOMPARE(lines.size(), size_t{3});
        double capacityY = 0, peakY = 0;
        for (const SramView::Line& l : lines) {
            QCOMPARE(l.core, core);
            switch (l.kind) {
            case SramView::Line::Kind::Capacity:
                QCOMPARE(l.bytes, stats.capacity);
                QCOMPARE(l.bytes, program().target.sramBytes);
                capacityY = l.y;
                break;
            case SramView::Line::Kind::Peak:
                QCOMPARE(l.bytes, stats.peak);
                peakY = l.y;
                break;
            case SramView::Line::Kind::LowerBound:
                QCOMPARE(l.bytes, stats.lowerBound);
                break;
            }
        }
        QVERIFY(capacityY < peakY); // the capacity is above the peak
        // No buffer reaches above the peak line (a sliver is drawn 2 px tall, up from its offset).
        for (int i : view.shown())
            QVERIFY(view.blockRect(m_snap->sram.blocks[static_cast<size_t>(i)]).top() >=
                    peakY - 2.0);
        // Fit to peak: the capacity is off the band, the peak inside it.
        view.setFitToPeak(true);
        for (const SramView::Line& l : view.lines()) {
            if (l.kind == SramView::Line::Kind::Capacity && stats.peak < stats.capacity)
                QVERIFY(std::isnan(l.y));
            if (l.kind == SramView::Line::Kind::Peak)
                QVERIFY(!std::isnan(l.y));
        }
    }

    void allCoresStackInBands() {
        SramView view;
        view.resize(1000, 900);
        view.setMap(std::shared_ptr<const SramMapData>(m_snap, &m_snap->sram));
        view.setCore(-1);
        QCOMPARE(view.shown().size(), program().sramBuffers.size());
        QCOMPARE(view.lines().size(), 3 * static_cast<size_t>(program().target.numCores));
        // Each core's capacity line sits above all of its buffers and below the core before's.
        std::vector<double> capacityY(static_cast<size_t>(program().target.numCores), 0.0);
        for (const SramView::Line& l : view.lines())
            if (l.kind == SramView::Line::Kind::Capacity)
                capacityY[static_cast<size_t>(l.core)] = l.y;
        for (size_t c = 1; c < capacityY.size(); ++c)
            QVERIFY(capacityY[c] > capacityY[c - 1]);
        for (int i : view.shown()) {
            const SramBlock& b = m_snap->sram.blocks[static_cast<size_t>(i)];
            const QRectF r = view.blockRect(b);
            QVERIFY(r.top() >= capacityY[static_cast<size_t>(b.core)] - 0.5);
            if (static_cast<size_t>(b.core) + 1 < capacityY.size())
                QVERIFY(r.bottom() < capacityY[static_cast<size_t>(b.core) + 1]);
        }
    }

    void pingPongSlotsArePairedAndHatched() {
        // The sample's tiles are single slots; SqueezeNet double-buffers its big convolutions.
        const std::string model = SEXTANT_SHARED_DIR "/models/onnx-light/light_squeezenet.onnx";
        if (!std::filesystem::exists(model))
            QSKIP("../shared not found: skipping the ping-pong pairs");
        CompileRequest req;
        req.modelPath = model;
        auto result = compileModel(req);
        QVERIFY2(result.ok(), result.ok() ? "" : result.error().message.c_str());
        const std::shared_ptr<const CompileSnapshot> snap = *result;
        const auto& blocks = snap->sram.blocks;
        const SramBlock* largest = nullptr; // the second slot of the largest pair, to look at
        for (size_t i = 0; i < blocks.size(); ++i) {
            const SramBlock& b = blocks[i];
            if (b.pair < 0) {
                QCOMPARE(b.partner, -1);
                continue;
            }
            QVERIFY2(b.partner >= 0,
                     qPrintable(QStringLiteral("SRAM buffer %1 has no partner").arg(b.sramBuffer)));
            const SramBlock& q = blocks[static_cast<size_t>(b.partner)];
            QCOMPARE(q.partner, static_cast<int>(i));
            QCOMPARE(q.task, b.task);
            QCOMPARE(q.role, b.role);
            QCOMPARE(q.pair, 1 - b.pair);
            if (b.pair == 1 &&
                (!largest || b.size * (b.t1 - b.t0) > largest->size * (largest->t1 - largest->t0)))
                largest = &b;
        }
        QVERIFY2(largest, "no ping-pong pair in SqueezeNet's plan");

        // On screen the second slot is hatched over its role's colour, the first is not.
        SramView view;
        view.resize(1000, 700);
        view.setMap(std::shared_ptr<const SramMapData>(snap, &snap->sram));
        view.setCore(largest->core);
        const QImage image = view.grab().toImage();
        auto colours = [&](const SramBlock& b) {
            // A patch in the upper right, clear of the name (left) and the link (centre).
            const QRectF r = view.blockRect(b);
            std::set<QRgb> seen;
            for (double x = r.left() + 0.65 * r.width(); x < r.left() + 0.9 * r.width(); ++x)
                for (double y = r.top() + 0.15 * r.height(); y < r.top() + 0.35 * r.height(); ++y)
                    seen.insert(image.pixel(static_cast<int>(x), static_cast<int>(y)));
            return seen;
        };
        const SramBlock& first = blocks[static_cast<size_t>(largest->partner)];
        QVERIFY(view.blockRect(*largest).width() > 20 && view.blockRect(*largest).height() > 20);
        QCOMPARE(colours(first).size(), size_t{1});
        QVERIFY(colours(*largest).size() >= 2);
        QVERIFY(colours(*largest).count(sramRoleColor(largest->role).rgb()));
    }

    void selectingANodeOutlinesItsBuffers() {
        // The consumer of a kept tensor: selecting it outlines its own slots and the resident
        // tensor it reads, and nothing of other Tasks but that tensor.
        const backend::OnChip& kept = program().onChip.front();
        const backend::Buffer& tensor = program().buffers[static_cast<size_t>(kept.buffer)];
        QVERIFY(tensor.lastTask >= 0);
        const backend::Task& reader = program().tasks[static_cast<size_t>(tensor.lastTask)];
        const std::string node = reader.nodes.front();
        SramView view;
        view.resize(1000, 600);
        view.setMap(std::shared_ptr<const SramMapData>(m_snap, &m_snap->sram));
        view.setCore(kept.core);
        QVERIFY(view.outlined().empty());
        view.highlightNode(QString::fromStdString(node));
        const std::vector<int> outlined = view.outlined();
        QVERIFY(!outlined.empty());
        bool resident = false;
        for (int i : view.shown()) {
            const SramBlock& b = m_snap->sram.blocks[static_cast<size_t>(i)];
            const bool isOutlined =
                std::find(outlined.begin(), outlined.end(), i) != outlined.end();
            const bool own = executes(program().tasks[static_cast<size_t>(b.task)], node);
            if (own)
                QVERIFY2(
                    isOutlined,
                    qPrintable(QStringLiteral("slot %1 of the node's Task").arg(b.sramBuffer)));
            if (isOutlined && !own) {
                // A resident tensor some Task of the node reads.
                QCOMPARE(b.role, backend::SramRole::Resident);
                bool read = false;
                for (int id = b.firstTask; id <= b.lastTask; ++id) {
                    const backend::Task& t = program().tasks[static_cast<size_t>(id)];
                    read = read || (executes(t, node) && std::find(t.inputs.begin(), t.inputs.end(),
                                                                   b.buffer) != t.inputs.end());
                }
                QVERIFY(read);
            }
            resident = resident || (isOutlined && b.buffer == kept.buffer &&
                                    b.role == backend::SramRole::Resident);
        }
        QVERIFY(resident);
    }

    void clickSelectsTheBuffersTask() {
        const int core = busiestCore();
        SramView view;
        view.resize(1000, 600);
        view.setMap(std::shared_ptr<const SramMapData>(m_snap, &m_snap->sram));
        view.setCore(core);
        QSignalSpy clicked(&view, &SramView::sramBufferClicked);
        const SramBlock& b = m_snap->sram.blocks[static_cast<size_t>(view.shown().back())];
        const QPoint at = view.blockRect(b).center().toPoint();
        const SramBlock* hit = view.blockAt(at);
        QVERIFY(hit);
        QTest::mouseClick(&view, Qt::LeftButton, {}, at);
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.first().at(0).toInt(), hit->sramBuffer);
        const backend::Task& task = program().tasks[static_cast<size_t>(hit->task)];
        QCOMPARE(clicked.first().at(1).toString(), QString::fromStdString(task.nodes.front()));
    }

    void wheelZoomsTimeAroundThePointer() {
        const int core = busiestCore();
        SramView view;
        view.resize(1000, 600);
        view.setMap(std::shared_ptr<const SramMapData>(m_snap, &m_snap->sram));
        view.setCore(core);
        // The narrowest buffer of the core, under the pointer.
        const SramBlock* narrow = nullptr;
        for (int i : view.shown()) {
            const SramBlock& b = m_snap->sram.blocks[static_cast<size_t>(i)];
            if (b.t1 > b.t0 && (!narrow || b.t1 - b.t0 < narrow->t1 - narrow->t0))
                narrow = &b;
        }
        QVERIFY(narrow);
        const QRectF before = view.blockRect(*narrow);
        const QPointF at = before.center();
        for (int i = 0; i < 6; ++i) {
            QWheelEvent wheel(at, view.mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton,
                              Qt::NoModifier, Qt::NoScrollPhase, false);
            QApplication::sendEvent(&view, &wheel);
        }
        QVERIFY(view.windowCycles() < static_cast<double>(m_snap->sram.totalCycles) / 3);
        const QRectF after = view.blockRect(*narrow);
        QVERIFY(after.width() > 3 * before.width());
        QVERIFY(after.contains(at)); // the cycle under the pointer stayed there
        // Double-click: the whole run again.
        QTest::mouseDClick(&view, Qt::LeftButton, {}, at.toPoint());
        QCOMPARE(view.windowCycles(), static_cast<double>(m_snap->sram.totalCycles));
        QCOMPARE(view.blockRect(*narrow), before);
    }

    void inspectorShowsOnChipAndBuffer() {
        const backend::OnChip& kept = program().onChip.front();
        const backend::Buffer& tensor = program().buffers[static_cast<size_t>(kept.buffer)];
        const std::string producer =
            program().tasks[static_cast<size_t>(tensor.firstTask)].nodes.front();
        const NodeOnChip figures = nodeOnChip(program(), producer);
        QVERIFY(figures.bytes >= kept.bytes);
        QVERIFY(figures.savedDmaBytes >= kept.savedDmaBytes);
        QVERIFY(kept.savedDmaBytes > 0);

        InspectorWidget inspector;
        inspector.setContext(m_snap, static_cast<int>(m_snap->pipeline.snapshots.size()) - 1);
        inspector.showNode(QString::fromStdString(producer));
        const QString text = inspector.toPlainText();
        QVERIFY2(text.contains(QStringLiteral("kept in SRAM %1").arg(formatBytes(figures.bytes))),
                 qPrintable(text));
        QVERIFY2(
            text.contains(
                QStringLiteral("DRAM traffic saved %1").arg(formatBytes(figures.savedDmaBytes))),
            qPrintable(text));

        const SramBlock& b = m_snap->sram.blocks.front();
        inspector.showSramBuffer(b.sramBuffer);
        const QString shown = inspector.toPlainText();
        QVERIFY2(shown.contains(QStringLiteral("SRAM buffer %1").arg(b.sramBuffer)),
                 qPrintable(shown));
        QVERIFY(shown.contains(sramRoleLabel(b.role)));
        QVERIFY(shown.contains(QStringLiteral("0x%1").arg(b.offset, 0, 16)));
        QVERIFY(shown.contains(QStringLiteral("%1 B").arg(b.size)));
        inspector.showNode(QString()); // another selection clears it
        QVERIFY(
            !inspector.toPlainText().contains(QStringLiteral("SRAM buffer %1").arg(b.sramBuffer)));
    }

    void inspectorSaysTasksAreNotKnownWhileLowering() {
        // The graph shows before lowering ends (CompileEvents::pipeline); a node selected then has
        // no Tasks yet, and the inspector says so instead of "not in the compiled graph".
        std::shared_ptr<const CompileSnapshot> early;
        CompileEvents events;
        events.pipeline = [&](std::shared_ptr<const CompileSnapshot> s) { early = std::move(s); };
        CompileRequest req;
        req.modelPath = kSample;
        auto result = compileModel(req, nullptr, {}, events);
        QVERIFY(result.ok());
        QVERIFY(early);
        const std::string node = program().tasks.front().nodes.front();
        const int last = static_cast<int>(early->pipeline.snapshots.size()) - 1;
        InspectorWidget inspector;
        inspector.setContext(early, last);
        inspector.showNode(QString::fromStdString(node));
        QString text = inspector.toPlainText();
        QVERIFY2(text.contains(QStringLiteral("none: still lowering")), qPrintable(text));
        QVERIFY2(!text.contains(QStringLiteral("not in the compiled graph")), qPrintable(text));
        inspector.setContext(*result, last);
        inspector.showNode(QString::fromStdString(node));
        text = inspector.toPlainText();
        QVERIFY2(!text.contains(QStringLiteral("none:")), qPrintable(text));
    }

    void pageSwitchesLevelAndCore() {
        MemoryPage page;
        page.resize(1000, 700);
        page.setSnapshot(m_snap);
        QCOMPARE(page.level(), MemoryPage::Level::Dram);
        QVERIFY(page.summaryText().contains(QStringLiteral("arena peak")));
        QVERIFY(page.setLevel(QStringLiteral("SRAM")));
        QCOMPARE(page.level(), MemoryPage::Level::Sram);
        QVERIFY2(page.summaryText().contains(QStringLiteral("DRAM traffic")),
                 qPrintable(page.summaryText()));
        QVERIFY(!page.setLevel(QStringLiteral("l2")));
        QCOMPARE(page.sramView()->core(), -1);
        QVERIFY(page.setSramCore(2));
        QCOMPARE(page.sramView()->core(), 2);
        QVERIFY(!page.setSramCore(program().target.numCores));
        QCOMPARE(page.sramView()->core(), 2);
        page.highlightNode(QString::fromStdString(program().tasks.front().nodes.front()));
        QVERIFY(page.memoryView()->shownCount() > 0);
    }
};

QTEST_MAIN(TestSramMap)
#include "tst_srammap.moc"
