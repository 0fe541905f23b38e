#include "ExportController.h"

#include "core/backend/Artifact.h"
#include "core/ir/FileWrite.h"

#include <QFile>
#include <QFileInfo>
#include <QSaveFile>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>

namespace sextant::views {

ExportController::ExportController(QObject* parent) : QObject(parent) {}

ExportController::~ExportController() {
    for (auto* watcher : findChildren<QFutureWatcher<QString>*>())
        watcher->waitForFinished();
}

QString ExportController::whyNotExportable(const CompileSnapshot* snapshot) {
    if (!snapshot)
        return tr("nothing compiled yet");
    if (!snapshot->loweringError.empty())
        return tr("the graph was not lowered (%1)")
            .arg(QString::fromStdString(snapshot->loweringError));
    return {};
}

void ExportController::runWrite(std::function<QString()> write,
                                std::function<void(const QString&)> done) {
    ++m_running;
    auto* watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this,
            [this, watcher, done = std::move(done)] {
                const QString error = watcher->result();
                watcher->deleteLater();
                --m_running;
                done(error);
            });
    watcher->setFuture(QtConcurrent::run(std::move(write)));
}

void ExportController::exportArtifact(std::shared_ptr<const CompileSnapshot> snapshot,
                                      const QString& dir) {
    if (const QString why = whyNotExportable(snapshot.get()); !why.isEmpty()) {
        finishExport(dir, why);
        return;
    }
    emit status(tr("exporting the artifact to %1").arg(dir));
    // The snapshot keeps the Program alive while the pool thread writes it.
    runWrite(
        [snapshot = std::move(snapshot), dir]() -> QString {
            Status s = backend::writeArtifact(snapshot->program, dir.toStdString());
            return s.ok() ? QString() : QString::fromStdString(s.error().message);
        },
        [this, dir](const QString& error) { finishExport(dir, error); });
}

void ExportController::finishExport(const QString& dir, const QString& error) {
    if (error.isEmpty()) {
        emit message(tr("artifact written to %1 (manifest.json, tasks.bin, weights.bin, manifest.json.fnv1a64)").arg(dir));
        emit status(tr("artifact written to %1").arg(dir));
    } else {
        emit failed(tr("export: %1").arg(error));
    }
    emit exported(dir, error);
}

void ExportController::exportOnnx(std::shared_ptr<const CompileSnapshot> snapshot, int passRow, const QString& path,
                                  frontend::OnnxExportOptions form) {
    auto finish = [this, path](const QString& error) {
        if (error.isEmpty()) {
            emit message(tr("ONNX model written to %1").arg(path));
            emit status(tr("ONNX model written to %1").arg(path));
        } else {
            emit failed(tr("export ONNX: %1").arg(error));
        }
        emit onnxExported(path, error);
    };
    const int passes = snapshot ? static_cast<int>(snapshot->pipeline.snapshots.size()) : 0;
    if (passRow < 0 || passRow >= passes) {
        finish(snapshot ? tr("no graph after that pass") : tr("nothing compiled yet"));
        return;
    }
    emit status(tr("exporting the graph as ONNX to %1").arg(path));
    runWrite(
        [snapshot = std::move(snapshot), passRow, path, form = std::move(form)]() mutable -> QString {
            const passes::Snapshot& snap = snapshot->pipeline.snapshots[static_cast<size_t>(passRow)];
            Expected<std::map<std::string, int64_t>> opsets = frontend::modelOpsetImports(snapshot->modelPath);
            if (!opsets.ok())
                return QString::fromStdString(opsets.error().message);
            form.opsets = std::move(opsets).value();
            form.snapshot = snap.passId;
            form.source = QFileInfo(QString::fromStdString(snapshot->modelPath)).fileName().toStdString();
            // The snapshot's graph is rebuilt from the pipeline's shared records: on this thread.
            std::shared_ptr<const ir::Graph> graph = snap.graph();
            if (!graph)
                return tr("no graph after pass %1").arg(QString::fromStdString(snap.passId));
            Expected<std::string> bytes = frontend::exportOnnx(*graph, form);
            if (!bytes.ok())
                return QString::fromStdString(bytes.error().message);
            Status s = writeFileAtomically(path.toStdString(), *bytes, "ONNX model");
            return s.ok() ? QString() : QString::fromStdString(s.error().message);
        },
        std::move(finish));
}

void ExportController::saveProfile(std::shared_ptr<const CompileSnapshot> snapshot,
                                   const QString& path) {
    if (!snapshot)
        return;
    if (!snapshot->profileError.empty() || snapshot->profilePath.empty()) {
        const QString why = snapshot->profileError.empty()
                                ? tr("nothing was simulated")
                                : QString::fromStdString(snapshot->profileError);
        const QString error = tr("the run was not kept in a profile database: %1").arg(why);
        emit failed(error);
        emit profileSaved(path, error);
        return;
    }
    const QString from = QString::fromStdString(snapshot->profilePath);
    runWrite(
        [from, path]() -> QString {
            // Through a temporary beside it: a full disk leaves a database already at `path`
            // as it was, and no half a copy.
            QFile in(from);
            if (!in.open(QIODevice::ReadOnly))
                return tr("could not read '%1': %2").arg(from, in.errorString());
            QSaveFile out(path);
            if (!out.open(QIODevice::WriteOnly))
                return tr("could not write '%1': %2").arg(path, out.errorString());
            while (!in.atEnd()) {
                const QByteArray chunk = in.read(1 << 20);
                if (chunk.isEmpty() && in.error() != QFileDevice::NoError)
                    return tr("could not read '%1': %2").arg(from, in.errorString());
                if (out.write(chunk) != chunk.size())
                    return tr("could not write '%1': %2").arg(path, out.errorString());
            }
            return out.commit() ? QString() : tr("could not write '%1': %2").arg(path, out.errorString());
        },
        [this, path](const QString& error) {
            if (error.isEmpty())
                emit message(tr("profile saved to %1").arg(path));
            else
                emit failed(error);
            emit profileSaved(path, error);
        });
}

} // namespace sextant::views
