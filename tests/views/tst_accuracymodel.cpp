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

    // A quantized model against its float model: the layer whose quantization costs the most
    // (lowest cosine) leads and is bold, clicking a row still names its node, the last column is
    // the rmse (quantization error is expected, not a failure), and the summary names the worst.
    void againstTheFloatModelTheMostQuantizationErrorLeads() {
        runtime::ValueDrift d;
        auto tensor = [](const char* name, double cosine, double rmse) {
            runtime::TensorComparison c;
            c.name = name;
            c.cosine = cosine;
            c.rmse = rmse;
            c.pass = false; // against a float model's 1e-2 most tensors are "out of tolerance"
            return c;
        };
        runtime::TensorComparison odd = tensor("shape_mismatch", 1.0, 0.0);
        odd.problem = "shape [2] vs [3]";
        d.values = {tensor("conv1", 0.9999, 1e-3), odd, tensor("conv2", 0.991, 4e-2), tensor("fc", 0.9995, 2e-3)};
        d.nodes = {"c1", "x", "c2", "fc"};
        d.firstFailing = 0;
        views::AccuracyModel m;
        m.setDrift(d, views::AccuracyModel::Against::FloatModel);
        using C = views::AccuracyModel;
        QCOMPARE(m.rowCount(), 4);
        QCOMPARE(m.data(m.index(0, C::TensorColumn)).toString(), QStringLiteral("conv2"));
        QCOMPARE(m.nodeAt(0), QStringLiteral("c2"));
        QCOMPARE(m.data(m.index(1, C::TensorColumn)).toString(), QStringLiteral("fc"));
        QCOMPARE(m.data(m.index(3, C::TensorColumn)).toString(), QStringLiteral("shape_mismatch"));
        QCOMPARE(m.firstNotableRow(), 0);
        QVERIFY(m.data(m.index(0, C::TensorColumn), Qt::FontRole).value<QFont>().bold());
        QCOMPARE(m.data(m.index(0, C::VerdictColumn)).toString(), QStringLiteral("4.0e-02"));
        QCOMPARE(m.headerData(C::VerdictColumn, Qt::Horizontal).toString(), QStringLiteral("rmse vs float model"));
        QVERIFY(!m.data(m.index(0, C::NodeColumn), Qt::BackgroundRole).isValid());
        QVERIFY(m.data(m.index(3, C::NodeColumn), Qt::BackgroundRole).isValid());
        const QString summary = views::floatModelSummary(d, QStringLiteral("m.onnx"));
        QVERIFY2(summary.contains(QStringLiteral("4 tensors")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("most quantization error: <b>conv2</b> (node c2, cosine 0.991000)")),
                 qPrintable(summary));

        // Back against the reference: graph order, the first failing bold.
        m.setDrift(d);
        QCOMPARE(m.nodeAt(0), QStringLiteral("c1"));
        QCOMPARE(m.firstNotableRow(), 0);
        QCOMPARE(m.headerData(C::VerdictColumn, Qt::Horizontal).toString(), QStringLiteral("vs float64 reference"));
    }
};

QTEST_GUILESS_MAIN(TestAccuracyModel)
#include "tst_accuracymodel.moc"
