// The pipeline panel's item models, checked by QAbstractItemModelTester through resets and edits.
#include "views/PassListModel.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

using namespace sextant::views;

class TestModels : public QObject {
    Q_OBJECT
private slots:
    void passListModel() {
        PassListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        model.setRows({PassRow{"input", false, 0.0, 12, 0}, PassRow{"canonicalize", false, 0.01, 12, 0},
                       PassRow{"fuse", true, 0.07, 8, 4}});
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.columnCount(), int(PassListModel::ColumnCount));
        QCOMPARE(model.index(2, PassListModel::PassColumn).data().toString(), QStringLiteral("fuse"));
        QCOMPARE(model.index(2, PassListModel::ChangedColumn).data().toString(), QStringLiteral("\u25cf"));
        QCOMPARE(model.index(2, PassListModel::NodesColumn).data().toInt(), 8);
        QCOMPARE(model.index(2, PassListModel::RulesColumn).data().toInt(), 4);
        QCOMPARE(model.index(0, PassListModel::TimeColumn).data().toString(), QString()); // input has no time
        // An unchanged pass is greyed out, a changed one is not.
        QVERIFY(model.index(1, PassListModel::PassColumn).data(Qt::ForegroundRole).isValid());
        QVERIFY(!model.index(2, PassListModel::PassColumn).data(Qt::ForegroundRole).isValid());
        QVERIFY(model.index(1, 0).data(Qt::ToolTipRole).toString().contains("unchanged"));
        model.setRows({});
        QCOMPARE(model.rowCount(), 0);
    }

    void passRowsFromPipeline() {
        sextant::passes::PipelineResult r;
        r.snapshots.resize(3);
        r.snapshots[0].passId = "input";
        r.snapshots[1].passId = "fuse";
        r.snapshots[1].changed = true;
        r.snapshots[2].passId = "dce";
        r.applications = {{1, "fuse-conv-bn", "c1", "fuse"}, {2, "fuse-conv-bias-act", "c1", "fuse"}};
        const auto rows = passRows(r);
        QCOMPARE(rows.size(), size_t(3));
        QCOMPARE(rows[1].rulesApplied, 2);
        QCOMPARE(rows[2].rulesApplied, 0);
        QVERIFY(rows[1].changed);
        QCOMPARE(rows[0].nodes, 0); // no graph in this hand-made snapshot
    }

    void ruleStatsModelTogglesRules() {
        RuleStatsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        sextant::passes::RuleStats a;
        a.rule = "fuse-conv-bn";
        a.applied = 2;
        sextant::passes::RuleStats b;
        b.rule = "fuse-conv-bias-act";
        b.rejected = 1;
        b.reasons["bias is not per-channel"] = 1;
        model.setStats({a, b});
        QCOMPARE(model.rowCount(), 2);
        QCOMPARE(model.index(0, RuleStatsModel::AppliedColumn).data().toLongLong(), 2LL);
        QVERIFY(model.index(1, 0).data(Qt::ToolTipRole).toString().contains("bias is not per-channel"));
        QCOMPARE(model.index(0, 0).data(Qt::CheckStateRole).toInt(), int(Qt::Checked));

        QSignalSpy spy(&model, &RuleStatsModel::disabledChanged);
        QVERIFY(model.setData(model.index(0, 0), Qt::Unchecked, Qt::CheckStateRole));
        QCOMPARE(spy.count(), 1);
        QCOMPARE(model.disabledRules(), (std::set<std::string>{"fuse-conv-bn"}));
        QCOMPARE(model.index(0, 0).data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
        QVERIFY(model.setData(model.index(0, 0), Qt::Unchecked, Qt::CheckStateRole)); // no change, no signal
        QCOMPARE(spy.count(), 1);
        // New counters from a recompile keep the switches.
        model.setStats({a, b});
        QCOMPARE(model.index(0, 0).data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
        QVERIFY(model.setData(model.index(0, 0), Qt::Checked, Qt::CheckStateRole));
        QVERIFY(model.disabledRules().empty());
        QVERIFY(!model.setData(model.index(0, 1), Qt::Checked, Qt::CheckStateRole)); // counters are not checkable
    }
};

QTEST_MAIN(TestModels)
#include "tst_models.moc"
