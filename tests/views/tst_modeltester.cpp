// Every item model of views/ under QAbstractItemModelTester, fed what the GUI feeds it: two
// compiles of the sample model (-O2, then -O1 with no fusion), refilled from one to the other,
// reset to empty and filled again, as recompiling and opening another model do.
#include "views/AccuracyModel.h"
#include "views/CompileWorker.h"
#include "views/PassListModel.h"
#include "views/RunsView.h"

#include <QAbstractItemModelTester>
#include <QBrush>
#include <QColor>
#include <QFont>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <memory>

using namespace sextant;
using namespace sextant::views;

namespace {

const char* kSample = SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx";

/// The tester checks the roles' types on the first cell only; the views read every cell. A role
/// answered with the wrong type shows as an empty or default-styled cell, so check them all.
void checkEveryCell(const QAbstractItemModel& m) {
    for (int r = 0; r < m.rowCount(); ++r)
        for (int c = 0; c < m.columnCount(); ++c) {
            const QModelIndex i = m.index(r, c);
            QVERIFY(i.isValid());
            const QVariant text = i.data(Qt::DisplayRole);
            QVERIFY2(!text.isValid() || text.canConvert<QString>(), qPrintable(QStringLiteral("display %1,%2").arg(r).arg(c)));
            const QVariant tip = i.data(Qt::ToolTipRole);
            QVERIFY(!tip.isValid() || tip.canConvert<QString>());
            for (int role : {int(Qt::ForegroundRole), int(Qt::BackgroundRole)}) {
                const QVariant colour = i.data(role);
                QVERIFY(!colour.isValid() || colour.canConvert<QColor>() || colour.canConvert<QBrush>());
            }
            const QVariant font = i.data(Qt::FontRole);
            QVERIFY(!font.isValid() || font.canConvert<QFont>());
            const QVariant align = i.data(Qt::TextAlignmentRole);
            QVERIFY(!align.isValid() || (align.toInt() & ~int(Qt::AlignHorizontal_Mask | Qt::AlignVertical_Mask)) == 0);
            const QVariant check = i.data(Qt::CheckStateRole);
            QVERIFY(!check.isValid() || (check.toInt() >= Qt::Unchecked && check.toInt() <= Qt::Checked));
        }
}

} // namespace

class TestModelTester : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::shared_ptr<const CompileSnapshot> m_o2, m_o1;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        CompileRequest req;
        req.modelPath = kSample;
        req.profilePath = m_dir.filePath("o2.db").toStdString();
        auto o2 = compileModel(req);
        QVERIFY2(o2.ok(), o2.ok() ? "" : o2.error().message.c_str());
        m_o2 = *o2;
        req.pipeline.optLevel = 1;
        req.profilePath = m_dir.filePath("o1.db").toStdString();
        auto o1 = compileModel(req);
        QVERIFY2(o1.ok(), o1.ok() ? "" : o1.error().message.c_str());
        m_o1 = *o1;
        // The two compiles differ the way a refill must cope with: other passes, other Tasks.
        QVERIFY(m_o2->pipeline.snapshots.size() != m_o1->pipeline.snapshots.size());
        QVERIFY(m_o2->program.tasks.size() != m_o1->program.tasks.size());
    }

    void passListModel() {
        PassListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setRows(passRows(m_o2->pipeline));
        QCOMPARE(model.rowCount(), int(m_o2->pipeline.snapshots.size()));
        QCOMPARE(model.index(0, PassListModel::PassColumn).data().toString(), QStringLiteral("input"));
        checkEveryCell(model);
        model.setRows(passRows(m_o1->pipeline));
        QCOMPARE(model.rowCount(), int(m_o1->pipeline.snapshots.size()));
        checkEveryCell(model);
        model.setRows({});
        QCOMPARE(model.rowCount(), 0);
        model.setRows(passRows(m_o2->pipeline));
        QCOMPARE(model.rowCount(), int(m_o2->pipeline.snapshots.size()));
    }

    void ruleStatsModel() {
        RuleStatsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setStats(m_o2->pipeline.stats);
        QVERIFY(model.rowCount() > 0);
        QCOMPARE(model.rowCount(), int(m_o2->pipeline.stats.size()));
        checkEveryCell(model);
        // Switching a rule off is an edit the tester watches (dataChanged on that cell).
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QVERIFY(model.setData(model.index(0, RuleStatsModel::RuleColumn), Qt::Unchecked, Qt::CheckStateRole));
        QCOMPARE(changed.count(), 1);
        const std::string rule = m_o2->pipeline.stats.front().rule;
        QCOMPARE(model.disabledRules(), (std::set<std::string>{rule}));
        model.setStats(m_o1->pipeline.stats);
        QCOMPARE(model.rowCount(), int(m_o1->pipeline.stats.size()));
        checkEveryCell(model);
        model.setStats({});
        QCOMPARE(model.rowCount(), 0);
        model.setStats(m_o2->pipeline.stats);
        // The switch outlives the refills: the rule is still off.
        QCOMPARE(model.index(0, RuleStatsModel::RuleColumn).data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
    }

    void accuracyModel() {
        AccuracyModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setDrift(m_o2->accuracy);
        QVERIFY(model.rowCount() >= 5);
        QCOMPARE(model.rowCount(), int(m_o2->accuracy.values.size()));
        QCOMPARE(model.nodeAt(model.rowCount() - 1), QString::fromStdString(m_o2->accuracy.nodes.back()));
        checkEveryCell(model);
        model.setDrift(m_o1->accuracy);
        QCOMPARE(model.rowCount(), int(m_o1->accuracy.values.size()));
        checkEveryCell(model);
        model.setDrift({});
        QCOMPARE(model.rowCount(), 0);
        model.setDrift(m_o2->accuracy);
        QCOMPARE(model.rowCount(), int(m_o2->accuracy.values.size()));
    }

    void runCompareModelAndItsSortedView() {
        auto a = profiler::loadRun(m_o2->profilePath);
        QVERIFY2(a.ok(), a.ok() ? "" : a.error().message.c_str());
        auto b = profiler::loadRun(m_o1->profilePath);
        QVERIFY2(b.ok(), b.ok() ? "" : b.error().message.c_str());
        RunCompareModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        // The Runs tab shows the model through a proxy sorted by the numbers in Qt::UserRole.
        QSortFilterProxyModel sorted;
        sorted.setSortRole(Qt::UserRole);
        sorted.setSourceModel(&model);
        QAbstractItemModelTester sortedTester(&sorted, QAbstractItemModelTester::FailureReportingMode::QtTest);
        sorted.sort(RunCompareModel::DeltaColumn, Qt::DescendingOrder);

        auto ab = std::make_shared<const profiler::RunComparison>(profiler::compareRuns(*a, *b));
        model.setComparison(ab);
        QCOMPARE(model.rowCount(), int(ab->tasks.size()));
        QVERIFY(ab->onlyA > 0 || ab->onlyB > 0); // no fusion at -O1: other groups
        checkEveryCell(model);
        // Sorted by |delta|, largest first, as the user sees the table.
        QCOMPARE(sorted.rowCount(), model.rowCount());
        const qlonglong top = sorted.index(0, RunCompareModel::DeltaColumn).data(Qt::UserRole).toLongLong();
        for (int r = 1; r < sorted.rowCount(); ++r)
            QVERIFY(sorted.index(r, RunCompareModel::DeltaColumn).data(Qt::UserRole).toLongLong() <= top);

        model.setComparison(nullptr);
        QCOMPARE(model.rowCount(), 0);
        QCOMPARE(sorted.rowCount(), 0);
        auto ba = std::make_shared<const profiler::RunComparison>(profiler::compareRuns(*b, *a));
        model.setComparison(ba);
        QCOMPARE(model.rowCount(), int(ba->tasks.size()));
        QCOMPARE(sorted.rowCount(), model.rowCount());
        checkEveryCell(sorted);
        model.setComparison(ab);
        QCOMPARE(model.rowCount(), int(ab->tasks.size()));
    }
};

QTEST_MAIN(TestModelTester)
#include "tst_modeltester.moc"
