// The export controller: a compile's artifact is written on a pool thread and reads back as the
// compile's Program; what cannot be exported is refused at once with the reason; the profile
// database is copied where asked.
#include "views/CompileWorker.h"
#include "views/ExportController.h"

#include "core/backend/Artifact.h"
#include "core/frontend/OnnxImporter.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace sextant;
using namespace sextant::views;

class TestExportController : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    std::shared_ptr<const CompileSnapshot> m_sample;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        CompileRequest req;
        req.modelPath = SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx";
        req.profilePath = m_dir.filePath("run.db").toStdString();
        auto compiled = compileModel(req);
        QVERIFY2(compiled.ok(), compiled.ok() ? "" : compiled.error().message.c_str());
        m_sample = *compiled;
    }

    void writesAnArtifactThatReadsBack() {
        ExportController c;
        QSignalSpy exported(&c, &ExportController::exported);
        QSignalSpy messages(&c, &ExportController::message);
        QSignalSpy failed(&c, &ExportController::failed);
        const QString dir = m_dir.filePath("artifact");
        c.exportArtifact(m_sample, dir);
        // Written on a pool thread: the call returned before the files were.
        QCOMPARE(c.running(), 1);
        QCOMPARE(exported.count(), 0);
        QVERIFY(QTest::qWaitFor([&] { return exported.count() > 0; }, 60000));
        QCOMPARE(c.running(), 0);
        QCOMPARE(exported.first().at(0).toString(), dir);
        QVERIFY2(exported.first().at(1).toString().isEmpty(),
                 qPrintable(exported.first().at(1).toString()));
        QVERIFY(failed.isEmpty());
        QCOMPARE(messages.count(), 1);
        QCOMPARE(messages.first().at(0).toString(),
                 QStringLiteral("artifact written to %1 (manifest.json, tasks.bin, weights.bin, manifest.json.fnv1a64)")
                     .arg(dir));
        Expected<backend::Program> back = backend::readArtifact(dir.toStdString());
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().message.c_str());
        QCOMPARE(back->tasks.size(), m_sample->program.tasks.size());
        QCOMPARE(back->target.name, m_sample->program.target.name);
    }

    void refusesWhatHasNoArtifact() {
        ExportController c;
        QSignalSpy exported(&c, &ExportController::exported);
        QSignalSpy failed(&c, &ExportController::failed);
        c.exportArtifact(nullptr, m_dir.filePath("none")); // refused at once, not on a thread
        QCOMPARE(exported.count(), 1);
        QCOMPARE(exported.first().at(1).toString(), QStringLiteral("nothing compiled yet"));
        QCOMPARE(failed.first().at(0).toString(), QStringLiteral("export: nothing compiled yet"));
        auto unlowered = std::make_shared<CompileSnapshot>();
        unlowered->loweringError = "op 'If' runs on the host";
        c.exportArtifact(unlowered, m_dir.filePath("none"));
        QCOMPARE(exported.count(), 2);
        QCOMPARE(exported.last().at(1).toString(),
                 QStringLiteral("the graph was not lowered (op 'If' runs on the host)"));
        QVERIFY(!QFile::exists(m_dir.filePath("none")));
    }

    void aFolderThatCannotBeWrittenIsAnError() {
        QFile blocker(m_dir.filePath("a-file"));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        ExportController c;
        QSignalSpy exported(&c, &ExportController::exported);
        QSignalSpy failed(&c, &ExportController::failed);
        c.exportArtifact(m_sample, m_dir.filePath("a-file/artifact"));
        QVERIFY(QTest::qWaitFor([&] { return exported.count() > 0; }, 60000));
        QVERIFY(!exported.first().at(1).toString().isEmpty());
        QCOMPARE(failed.count(), 1);
        QVERIFY(failed.first().at(0).toString().startsWith(QStringLiteral("export: ")));
    }

    void writesAnySnapshotAsOnnx() {
        // The fuse snapshot as is reads back into Sextant with its fused ops; the standard form
        // has none; both are written off the GUI thread, and a pass out of range is refused.
        ExportController c;
        QSignalSpy done(&c, &ExportController::onnxExported);
        int fuse = -1;
        for (size_t i = 0; i < m_sample->pipeline.snapshots.size(); ++i)
            if (m_sample->pipeline.snapshots[i].passId == "fuse")
                fuse = static_cast<int>(i);
        QVERIFY(fuse > 0);
        const QString asIs = m_dir.filePath("fuse.onnx"), standard = m_dir.filePath("fuse-standard.onnx");
        c.exportOnnx(m_sample, fuse, asIs, {});
        QCOMPARE(c.running(), 1);
        frontend::OnnxExportOptions std;
        std.form = frontend::OnnxExportForm::Standard;
        c.exportOnnx(m_sample, fuse, standard, std);
        QVERIFY(QTest::qWaitFor([&] { return done.count() == 2; }, 60000));
        for (const QList<QVariant>& d : done)
            QVERIFY2(d.at(1).toString().isEmpty(), qPrintable(d.at(1).toString()));
        Expected<std::unique_ptr<ir::Graph>> back = frontend::importOnnx(asIs.toStdString());
        QVERIFY2(back.ok(), back.ok() ? "" : back.error().message.c_str());
        std::shared_ptr<const ir::Graph> fused = m_sample->pipeline.snapshots[static_cast<size_t>(fuse)].graph();
        QCOMPARE((*back)->numNodes(), fused->numNodes());
        auto count = [](const ir::Graph& g, ir::OpKind k) {
            int n = 0;
            for (const ir::Node* node : g.nodeOrder())
                n += node->kind() == k;
            return n;
        };
        QVERIFY(count(*fused, ir::OpKind::FusedConv) > 0);
        QCOMPARE(count(**back, ir::OpKind::FusedConv), count(*fused, ir::OpKind::FusedConv));
        Expected<std::unique_ptr<ir::Graph>> plain = frontend::importOnnx(standard.toStdString());
        QVERIFY2(plain.ok(), plain.ok() ? "" : plain.error().message.c_str());
        for (const ir::Node* node : (*plain)->nodeOrder())
            QVERIFY2(node->info().domain.empty(), node->name().c_str());
        c.exportOnnx(m_sample, 999, m_dir.filePath("none.onnx"), {});
        QCOMPARE(done.count(), 3);
        QCOMPARE(done.last().at(1).toString(), QStringLiteral("no graph after that pass"));
        QVERIFY(!QFile::exists(m_dir.filePath("none.onnx")));
    }

    void savesTheProfileDatabase() {
        ExportController c;
        QSignalSpy saved(&c, &ExportController::profileSaved);
        const QString path = m_dir.filePath("saved.db");
        c.saveProfile(m_sample, path);
        QVERIFY(QTest::qWaitFor([&] { return saved.count() > 0; }, 60000));
        QVERIFY2(saved.first().at(1).toString().isEmpty(),
                 qPrintable(saved.first().at(1).toString()));
        QFile copy(path), original(QString::fromStdString(m_sample->profilePath));
        QVERIFY(copy.open(QIODevice::ReadOnly) && original.open(QIODevice::ReadOnly));
        QCOMPARE(copy.readAll(), original.readAll());
        // A run kept nowhere has nothing to save.
        auto notKept = std::make_shared<CompileSnapshot>();
        c.saveProfile(notKept, m_dir.filePath("nothing.db"));
        QCOMPARE(saved.count(), 2);
        QCOMPARE(
            saved.last().at(1).toString(),
            QStringLiteral("the run was not kept in a profile database: nothing was simulated"));
    }
};

QTEST_MAIN(TestExportController)
#include "tst_exportcontroller.moc"
