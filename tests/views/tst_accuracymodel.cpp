// The Accuracy tab's model: one row per compared tensor, failing rows marked, the first of them
// bold, and a summary that names it.
#include "views/AccuracyModel.h"

#include <QBrush>
#include <QFont>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace sextant;

class TestAccuracyModel : public QObject {
    Q_OBJECT
private slots:
    void marksWhereTheDriftStarts() {
        runtime::ValueDrift d;
        runtime::TensorComparison ok;
        ok.name = "conv_out";
        ok.pass = true;
        ok.cosine = 1.0;
        runtime::TensorComparison bad;
        bad.name = "sig_out";
        bad.pass = false;
        bad.mismatches = 3;
        bad.maxAbs = 0.25;
        d.values = {ok, bad};
        d.nodes = {"conv", "sig"};
        d.firstFailing = 1;
        d.firstFailingNode = "sig";
        d.unmatched = 2;

        views::AccuracyModel m;
        m.setDrift(d);
        QCOMPARE(m.rowCount(), 2);
        QCOMPARE(m.nodeAt(1), QStringLiteral("sig"));
        QVERIFY(m.nodeAt(5).isEmpty());
        using C = views::AccuracyModel;
        QCOMPARE(m.data(m.index(0, C::VerdictColumn)).toString(), QStringLiteral("PASS"));
        QCOMPARE(m.data(m.index(1, C::VerdictColumn)).toString(), QStringLiteral("FAIL (3 elements)"));
        QCOMPARE(m.data(m.index(1, C::MaxAbsColumn)).toString(), QStringLiteral("2.5e-01"));
        QVERIFY(m.data(m.index(1, C::TensorColumn), Qt::FontRole).value<QFont>().bold());
        QVERIFY(!m.data(m.index(0, C::TensorColumn), Qt::FontRole).isValid());
        QVERIFY(m.data(m.index(1, C::NodeColumn), Qt::BackgroundRole).isValid());
        QVERIFY(!m.data(m.index(0, C::NodeColumn), Qt::BackgroundRole).isValid());

        const QString summary = views::accuracySummary(d);
        QVERIFY2(summary.contains(QStringLiteral("2 tensors")), qPrintable(summary));
        QVERIFY(summary.contains(QStringLiteral("2 without a counterpart")));
        QVERIFY(summary.contains(QStringLiteral("first out of tolerance: <b>sig_out</b> (node sig)")));
        d.firstFailing = -1;
        QVERIFY(views::accuracySummary(d).contains(QStringLiteral("all within tolerance")));
    }

    // An output that overflowed f16: its cosine is NaN and its errors infinite. The table says so.
    void showsNanAndInfinityAsSuch() {
        runtime::ValueDrift d;
        runtime::TensorComparison c;
        c.name = "y";
        c.pass = false;
        c.cosine = std::nan("");
        c.maxAbs = std::numeric_limits<double>::infinity();
        c.maxRel = -std::numeric_limits<double>::infinity();
        d.values = {c};
        d.nodes = {"add"};
        views::AccuracyModel m;
        m.setDrift(d);
        using C = views::AccuracyModel;
        QCOMPARE(m.data(m.index(0, C::CosineColumn)).toString(), QStringLiteral("nan"));
        QCOMPARE(m.data(m.index(0, C::MaxAbsColumn)).toString(), QStringLiteral("inf"));
        QCOMPARE(m.data(m.index(0, C::MaxRelColumn)).toString(), QStringLiteral("-inf"));
    }
};

QTEST_GUILESS_MAIN(TestAccuracyModel)
#include "tst_accuracymodel.moc"
