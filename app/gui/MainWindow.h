#pragma once

#include "core/backend/Target.h"
#include "views/BisectController.h"
#include "views/CompileWorker.h"
#include "views/DiffPage.h"
#include "views/GraphPage.h"
#include "views/MemoryPage.h"
#include "views/PipelinePanel.h"
#include "views/SelectionModel.h"
#include "views/TimelinePage.h"

#include <QMainWindow>

#include <memory>
#include <optional>
#include <string>

class QPlainTextEdit;
class QTabWidget;

namespace sextant::views {
class AccuracyPage;
class DiffView;
class ExportController;
class GraphView;
class InspectorWidget;
class MemoryView;
class PassListModel;
class RunsView;
class StatusPanel;
class TimelineView;
} // namespace sextant::views

namespace sextant::app {

/// The Sextant main window: pipeline panel (passes, rule counters) on the left, central tabs
/// Graph / IR diff / Memory / Timeline / Accuracy / Runs, inspector and log docks, and a status bar
/// with progress and Cancel. It only wires: each tab is a widget of views/, bisection and export
/// are controllers of views/ (BisectController, ExportController), the worker's snapshots go to the
/// views, and one SelectionModel links them. Nothing long runs on the GUI thread.
class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    /// Compiles and simulates `path` in the background; the views update when it finishes.
    void openModel(const QString& path);
    /// Recompiles the current model with the rule switches of the pipeline panel.
    void recompile();
    /// Concrete dims for the model's inputs with symbolic ones, used from the next compile on
    /// (opening another model from File > Open clears them). Empty: the shapes of the model's
    /// test inputs.
    void setInputShapes(ir::InputShapes shapes) { m_shapes = std::move(shapes); }
    const ir::InputShapes& inputShapes() const { return m_shapes; }
    /// The float model the opened quantized model came from: from the next compile on, the
    /// Accuracy tab also shows the quantized model's tensors against its tensors of the same name
    /// (sextant-cli run --float-model). Empty: none; opening another model from File > Open
    /// clears it.
    void setFloatModel(const QString& path) { m_floatModel = path; }
    const QString& floatModel() const { return m_floatModel; }
    /// File > Compare with float model…: asks for the float model and recompiles.
    void floatModelDialog();
    /// The NPU of the next compiles (default npu-a). Does not compile by itself; File > Target
    /// edits it and recompiles.
    void setTarget(backend::Target target);
    /// Parses `json` as a target description (as sextant-cli --target reads one; `source` names
    /// it in errors) and makes it the target; false, with the reason in `error`, if it is not one
    /// (the target stays as it was).
    bool setTargetJson(const QString& json, const QString& source, QString* error = nullptr);
    const backend::Target& target() const { return m_target; }
    /// The optimisation level of the next compiles (0..3, as -O0..-O3); false if out of range.
    /// Does not compile by itself (changing it in the pipeline panel does).
    bool setOptLevel(int level) { return m_pipeline->setOptLevel(level); }
    int optLevel() const { return m_pipeline->optLevel(); }

    /// Tools > Bisect accuracy: searches, off the GUI thread, the first rule application after
    /// which the optimised graph's outputs (float64 reference executor) leave the tolerance against
    /// the imported model's (views::BisectController), at the current level and switches. With a
    /// culprit it recompiles with the bisect limit at it and shows the culprit's pass, diff and
    /// node.
    void bisectAccuracy();
    /// The bisect limit of the next compiles (-1: none); bisectAccuracy sets it.
    int64_t bisectLimit() const { return m_bisect->limit(); }
    void clearBisectLimit();
    /// File > Export artifact: writes the shown compile's artifact (manifest.json, tasks.bin,
    /// weights.bin, as sextant-cli compile -o does) into `dir`, off the GUI thread
    /// (views::ExportController); artifactExported says when and how it ended.
    void exportArtifact(const QString& dir);

    /// Shows the graph after snapshot `row` (0 = input) and its diff against the one before.
    void selectPass(int row);
    /// Selects a pass by id; false if no snapshot has it.
    bool selectPassById(const QString& passId);
    /// Raises a central tab by name: "graph", "diff", "memory", "timeline", "accuracy", "runs".
    /// False if unknown.
    bool showTab(const QString& name);
    /// Selects an IR node everywhere (as if clicked).
    void selectNode(const QString& node) { m_selection->select(node); }
    /// The graph tab's find box (views::GraphPage::find): selects what `name` stands for in the
    /// shown snapshot and says how in the status bar. Returns the status text (empty when a node
    /// name matched).
    QString find(const QString& name) { return m_graphPage->find(name); }

    std::shared_ptr<const views::CompileSnapshot> snapshot() const { return m_snapshot; }
    const QString& lastError() const { return m_lastError; }
    int currentPass() const { return m_currentPass; }
    views::GraphView* graphView() const { return m_graphPage->graphView(); }
    views::GraphPage* graphPage() const { return m_graphPage; }
    views::DiffView* diffView() const { return m_diffPage->diffView(); }
    views::TimelineView* timelineView() const { return m_timelinePage->timelineView(); }
    views::TimelinePage* timelinePage() const { return m_timelinePage; }
    views::MemoryView* memoryView() const { return m_memoryPage->memoryView(); }
    views::MemoryPage* memoryPage() const { return m_memoryPage; }
    views::AccuracyPage* accuracyPage() const { return m_accuracyPage; }
    views::InspectorWidget* inspector() const { return m_inspector; }
    views::RunsView* runsView() const { return m_runs; }
    views::SelectionModel* selection() const { return m_selection; }
    views::PassListModel* passModel() const { return m_pipeline->passModel(); }
    /// When true (tests, --screenshot) errors go to the log and lastError only, no dialog.
    void setQuietErrors(bool quiet) { m_quietErrors = quiet; }

signals:
    /// A compile finished and every view shows it.
    void compileFinished();
    /// A compile failed (or was cancelled) with this one-line message.
    void compileFailed(const QString& error);
    /// A bisection ended: `verdict` is the status line; with `culprit` a recompile at the culprit
    /// follows (compileFinished says when it is shown).
    void bisectFinished(const QString& verdict, bool culprit);
    /// An export ended: `error` is empty on success.
    void artifactExported(const QString& dir, const QString& error);

private:
    void buildTabs();
    void buildDocks();
    void buildMenus();
    void connectWorkers();
    void onStarted(const QString& path);
    void onPipelineReady(std::shared_ptr<const views::CompileSnapshot> early);
    void onFinished(std::shared_ptr<const views::CompileSnapshot> snapshot);
    void onFailed(const QString& error);
    void onCancelled();
    void onNodeSelected(const QString& node);
    void onTaskActivated(const QString& node);
    void onBisectFinished(const QString& verdict, bool culprit);
    /// The rule switches, level or target changed: the bisect limit goes (the applications are
    /// numbered anew), then the model is compiled again.
    void onSwitchesChanged();
    void showCulprit(const passes::RuleApplication& culprit);
    views::CompileRequest currentRequest() const;
    void openDialog();
    void inputShapesDialog();
    void targetDialog();
    void saveProfileAs();
    void exportArtifactDialog();
    void exportGraphDialog();
    /// File > Export graph as ONNX: the graph after the pass shown, as is or in standard ops.
    void exportOnnxDialog();
    void log(const QString& line);

    views::ExportController* m_export = nullptr;
    views::CompileWorker* m_worker = nullptr;
    views::BisectController* m_bisect = nullptr;
    views::SelectionModel* m_selection = nullptr;
    std::shared_ptr<const views::CompileSnapshot> m_snapshot;
    QString m_modelPath;
    QString m_floatModel;
    ir::InputShapes m_shapes;
    backend::Target m_target = backend::defaultTarget();
    /// The culprit to show once the recompile at its limit finishes.
    std::optional<passes::RuleApplication> m_pendingCulprit;
    QString m_lastError;
    int m_currentPass = -1;
    bool m_quietErrors = false;
    std::string m_runsModel; ///< the model of the last compile the Runs tab was given

    QTabWidget* m_tabs = nullptr;
    views::GraphPage* m_graphPage = nullptr;
    views::DiffPage* m_diffPage = nullptr;
    views::MemoryPage* m_memoryPage = nullptr;
    views::TimelinePage* m_timelinePage = nullptr;
    views::AccuracyPage* m_accuracyPage = nullptr;
    views::RunsView* m_runs = nullptr;
    views::PipelinePanel* m_pipeline = nullptr;
    views::InspectorWidget* m_inspector = nullptr;
    QPlainTextEdit* m_log = nullptr;
    views::StatusPanel* m_status = nullptr;
};

} // namespace sextant::app
