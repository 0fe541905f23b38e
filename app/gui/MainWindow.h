#pragma once

#include "views/CompileWorker.h"

#include <QMainWindow>

#include <atomic>
#include <string>
#include <vector>
#include <memory>
#include <optional>

class QCheckBox;
class QComboBox;
template <typename T> class QFutureWatcher;
class QLabel;
class QLineEdit;
class QStringListModel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableView;
class QTabWidget;

namespace sextant::views {
class AccuracyModel;
class DiffView;
class GraphView;
class InspectorWidget;
class MemoryView;
class PassListModel;
class RunsView;
class RuleStatsModel;
class SelectionModel;
class TimelineView;
} // namespace sextant::views

namespace sextant::app {

/// The Sextant main window: pipeline panel (passes, rule counters) on the left, central tabs
/// Graph / IR diff / Memory / Timeline, inspector and log docks, and a status bar with progress
/// and Cancel. It wires the worker's snapshots into the views and links them through one
/// SelectionModel; it never compiles on the GUI thread.
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
    bool setOptLevel(int level);
    int optLevel() const;

    /// Tools > Bisect accuracy: searches, off the GUI thread, the first rule application after
    /// which the optimised graph's outputs (float64 reference executor) leave the tolerance against
    /// the imported model's (views::bisectModel), at the current level and switches. With a culprit
    /// it recompiles with the bisect limit at it and shows the culprit's pass, diff and node.
    void bisectAccuracy();
    /// The bisect limit of the next compiles (-1: none); bisectAccuracy sets it.
    int64_t bisectLimit() const { return m_bisectLimit; }
    void clearBisectLimit();
    /// File > Export artifact: writes the shown compile's artifact (manifest.json, tasks.bin,
    /// weights.bin, as sextant-cli compile -o does) into `dir`, off the GUI thread;
    /// artifactExported says when and how it ended.
    void exportArtifact(const QString& dir);

    /// Shows the graph after snapshot `row` (0 = input) and its diff against the one before.
    void selectPass(int row);
    /// Selects a pass by id; false if no snapshot has it.
    bool selectPassById(const QString& passId);
    /// Raises a central tab by name: "graph", "diff", "memory", "timeline", "accuracy", "runs".
    /// False if unknown.
    bool showTab(const QString& name);
    /// Selects an IR node everywhere (as if clicked).
    void selectNode(const QString& node);
    /// The graph tab's find box: resolves `name` in the shown snapshot (a node, a tensor, or an
    /// ONNX node followed through provenance, see views::findNode), selects what it found and
    /// says how in the status bar. Text that names nothing is taken as a pattern over node names,
    /// op types and output types (views::findMatching): the first match is selected, and the
    /// same text again (Enter, F3) selects the next. Returns the status text (empty when a node
    /// name matched).
    QString find(const QString& name);

    std::shared_ptr<const views::CompileSnapshot> snapshot() const { return m_snapshot; }
    const QString& lastError() const { return m_lastError; }
    int currentPass() const { return m_currentPass; }
    views::GraphView* graphView() const { return m_graph; }
    views::DiffView* diffView() const { return m_diff; }
    views::TimelineView* timelineView() const { return m_timeline; }
    views::MemoryView* memoryView() const { return m_memory; }
    views::RunsView* runsView() const { return m_runs; }
    views::SelectionModel* selection() const { return m_selection; }
    views::PassListModel* passModel() const { return m_passModel; }
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
    void buildUi();
    void buildMenus();
    void onStarted(const QString& path);
    void onProgress(int percent, const QString& stage);
    void onFinished(std::shared_ptr<const views::CompileSnapshot> snapshot);
    void onFailed(const QString& error);
    void onCancelled();
    void onNodeSelected(const QString& node);
    void onTaskClicked(int taskIndex);
    void openDialog();
    struct BisectDone;
    void onBisectDone();
    views::CompileRequest currentRequest() const;
    /// Scrolls the Accuracy table to the first tensor out of tolerance (when it is shown).
    void scrollAccuracyToDrift();
    void inputShapesDialog();
    void targetDialog();
    void saveProfileAs();
    void exportArtifactDialog();
    void log(const QString& line);
    void setBusy(bool busy);

    views::CompileWorker* m_worker = nullptr;
    views::SelectionModel* m_selection = nullptr;
    std::shared_ptr<const views::CompileSnapshot> m_snapshot;
    QString m_modelPath;
    ir::InputShapes m_shapes;
    backend::Target m_target = backend::defaultTarget();
    int64_t m_bisectLimit = -1;
    QFutureWatcher<BisectDone>* m_bisectWatcher = nullptr;
    std::shared_ptr<std::atomic<bool>> m_bisectCancel;
    /// The culprit to show once the recompile at its limit finishes.
    std::optional<passes::RuleApplication> m_pendingCulprit;
    QString m_lastError;
    int m_currentPass = -1;
    bool m_quietErrors = false;

    QTabWidget* m_tabs = nullptr;
    QComboBox* m_level = nullptr;
    QLineEdit* m_find = nullptr;
    /// The pattern find last matched (text and snapshot), its matches and the next one to show.
    QString m_findKey;
    std::vector<std::string> m_findMatches;
    size_t m_findNext = 0;
    QStringListModel* m_findModel = nullptr;
    views::GraphView* m_graph = nullptr;
    views::DiffView* m_diff = nullptr;
    QCheckBox* m_fullDiff = nullptr;
    views::MemoryView* m_memory = nullptr;
    QLabel* m_memorySummary = nullptr;
    QCheckBox* m_showWeights = nullptr;
    views::TimelineView* m_timeline = nullptr;
    QLabel* m_timelineSummary = nullptr;
    views::AccuracyModel* m_accuracyModel = nullptr;
    QLabel* m_accuracySummary = nullptr;
    views::RunsView* m_runs = nullptr;
    std::string m_runsModel; ///< the model of the last compile the Runs tab was given
    QTableView* m_accuracyView = nullptr;
    views::InspectorWidget* m_inspector = nullptr;
    QPlainTextEdit* m_log = nullptr;
    QTableView* m_passView = nullptr;
    views::PassListModel* m_passModel = nullptr;
    QTableView* m_ruleView = nullptr;
    views::RuleStatsModel* m_ruleModel = nullptr;
    QLabel* m_status = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
};

} // namespace sextant::app
