#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

class QLabel;
class QLineEdit;
class QStringListModel;
class QToolButton;

namespace sextant::views {

struct GraphLevel;
struct SnapshotGraph;
class GraphLayoutWorker;
class GraphView;

/// The Graph tab: the graph of one pipeline snapshot (GraphView) under a bar with Fit, the colour
/// legend and the find box. Find resolves what the user typed in the shown snapshot (findNode: a
/// node, a tensor, or an ONNX node followed through provenance); text that names nothing is a
/// pattern over node names, op types and output types (findMatching), and the same text again
/// (Enter, F3) steps to the next match. The page selects nothing itself: it emits nodeActivated
/// for the window's SelectionModel and follows it through highlightNode.
///
/// The graph is laid out when it is shown, one level at a time, by a GraphLayoutWorker (cached per
/// snapshot). A graph of more than kCollapseAbove boxes opens collapsed (GraphHierarchy): its top
/// level shows groups. Double-clicking one opens it in place, as Model Explorer does: a frame
/// holding its own level, laid out on its own; double-clicking the frame folds it again. Selecting
/// a node inside a closed group (find, the timeline, the inspector) opens the groups around it.
/// The path above the graph can also show one group as a level of its own (openGroup), and Up
/// goes back to the level above. Open groups stay open when another snapshot is shown.
class GraphPage : public QWidget {
    Q_OBJECT
public:
    explicit GraphPage(QWidget* parent = nullptr);

    /// Shows snapshot `row` of `snapshot`'s pipeline (its layout, when there is one) with
    /// `selected` outlined, and offers its names for completion.
    void setContext(std::shared_ptr<const CompileSnapshot> snapshot, int row,
                    const QString& selected);
    /// Runs find on `text` as the find box does; returns the message it reported (empty when a
    /// node name matched).
    QString find(const QString& text);
    /// Find again with the box's text (F3); nothing when the box is empty.
    void findNext();
    /// Puts the keyboard focus in the find box with its text selected (Ctrl+F).
    void focusFind();
    GraphView* graphView() const { return m_graph; }
    GraphLayoutWorker* layoutWorker() const { return m_layouts; }
    /// The level shown: its group id ("" is the top).
    const std::string& shownGroup() const { return m_groupId; }
    /// True while the level asked for is being laid out (the view is empty meanwhile).
    bool layoutPending() const { return m_pending; }

    /// The groups open in place (their ids), in the level shown or not.
    const std::set<std::string>& expandedGroups() const { return m_expanded; }

    /// Shows the group `groupId` of the shown graph as a level of its own ("" or an unknown id:
    /// the top level).
    void openGroup(const QString& groupId);
    /// Closes the shown group: shows the level above it.
    void closeGroup();
    /// Opens the group `groupId` in place when it is closed; folds it (and every group inside
    /// it) when it is open.
    void toggleGroup(const QString& groupId);

public slots:
    /// Outlines `node` (empty: nothing).
    void highlightNode(const QString& node);

signals:
    /// The user chose `node`: clicked it, or find resolved to it.
    void nodeActivated(const QString& node);
    /// How find resolved the text, for the status bar and the log.
    void findMessage(const QString& message);
    /// A level was laid out and is shown (a line for the log).
    void graphShown(const QString& message);
    /// The level asked for is shown (laid out now or before).
    void levelShown();

private:
    /// The next node matching `pattern` as a pattern in `graph`, or why there is none.
    QString findPattern(const ir::Graph& graph, const QString& pattern, const QString& message);

    void showLevel(const std::string& groupId);
    void display(const std::shared_ptr<const GraphLevel>& level, bool announce);
    void updatePath();
    /// Opens (in place) the groups between the level shown and the one holding `node`, when the
    /// node is in a closed group of `level`'s graph; shows the top level first when the node is
    /// outside the level shown. Returns whether that changed anything.
    bool openAround(const GraphLevel& level, const QString& node);
    /// Outlines the selection in the view: its box, or the closed group's box that holds it.
    void selectShown();
    /// The groups of m_expanded that matter for level `groupId` of `graph` (all, unknown).
    std::set<std::string> expansionFor(const SnapshotGraph* graph, const std::string& groupId) const;

    std::shared_ptr<const CompileSnapshot> m_snapshot;
    int m_row = -1;
    GraphView* m_graph = nullptr;
    GraphLayoutWorker* m_layouts = nullptr;
    std::shared_ptr<const GraphLevel> m_level;
    std::shared_ptr<const SnapshotGraph> m_completionsFor;
    std::string m_groupId;
    std::set<std::string> m_expanded;
    bool m_reveal = false; ///< the selection changed: open the groups around it
    bool m_pending = false;
    QString m_selected;
    QLabel* m_path = nullptr;
    QToolButton* m_up = nullptr;
    QLineEdit* m_find = nullptr;
    QStringListModel* m_completions = nullptr;
    /// The pattern find last matched (text and snapshot), its matches and the next one to show.
    QString m_findKey;
    std::vector<std::string> m_findMatches;
    size_t m_findNext = 0;
};

} // namespace sextant::views
