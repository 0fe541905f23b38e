#pragma once

#include "CompileSnapshot.h"

#include "core/frontend/OnnxExport.h"

#include <QObject>
#include <QString>

#include <functional>
#include <memory>

namespace sextant::views {

/// What the File menu writes out of a compile: its artifact (File > Export artifact: manifest.json,
/// tasks.bin, weights.bin, as sextant-cli compile -o does), the graph after any pass as ONNX
/// (File > Export graph as ONNX, as sextant-cli compile --export-onnx does) and the profile
/// database its run was kept in (File > Save profile database as). Files are written on a pool thread, never on the GUI
/// thread, and the outcome is reported on the GUI thread. A compile that has nothing to write
/// (none yet, a graph the target could not run, a run not kept) is refused at once with the reason.
class ExportController : public QObject {
    Q_OBJECT
public:
    explicit ExportController(QObject* parent = nullptr);
    /// Waits for the exports still writing.
    ~ExportController() override;

    /// Why `snapshot` has no artifact to export (empty: it has one).
    static QString whyNotExportable(const CompileSnapshot* snapshot);
    /// Starts writing `snapshot`'s artifact into `dir` (kept alive until written); exported
    /// follows, at once when there is nothing to export.
    void exportArtifact(std::shared_ptr<const CompileSnapshot> snapshot, const QString& dir);
    /// Starts writing the graph after pass `passRow` of `snapshot`'s pipeline to `path` as ONNX
    /// (frontend::exportOnnx: as is, or in standard ops when `form` says so); onnxExported
    /// follows, at once when there is no such snapshot.
    void exportOnnx(std::shared_ptr<const CompileSnapshot> snapshot, int passRow, const QString& path,
                    frontend::OnnxExportOptions form);
    /// Starts copying the profile database `snapshot`'s run was kept in to `path` (replacing
    /// it); profileSaved follows.
    void saveProfile(std::shared_ptr<const CompileSnapshot> snapshot, const QString& path);
    /// Files still being written.
    int running() const { return m_running; }

signals:
    /// A line for the status bar.
    void status(const QString& text);
    /// A line for the log.
    void message(const QString& line);
    /// An export or a save was refused or could not be written, with the reason ("export: ...");
    /// exported or profileSaved follows.
    void failed(const QString& error);
    /// An export ended: `error` is empty when the artifact is in `dir`.
    void exported(const QString& dir, const QString& error);
    /// An ONNX export ended: `error` is empty when the model is in `path`.
    void onnxExported(const QString& path, const QString& error);
    /// A save of the profile database ended: `error` is empty when it is in `path`.
    void profileSaved(const QString& path, const QString& error);

private:
    /// Runs `write` (which returns an error, or empty) on a pool thread, then `done` with its
    /// result on the GUI thread.
    void runWrite(std::function<QString()> write, std::function<void(const QString&)> done);
    void finishExport(const QString& dir, const QString& error);

    int m_running = 0;
};

} // namespace sextant::views
