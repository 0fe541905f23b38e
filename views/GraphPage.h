#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

#include <memory>
#include <string>
#include <vector>

class QLineEdit;
class QStringListModel;

namespace sextant::views {

class GraphView;

/// The Graph tab: the graph of one pipeline snapshot (GraphView) under a bar with Fit, the colour
/// legend and the find box. Find resolves what the user typed in the shown snapshot (findNode: a
/// node, a tensor, or an ONNX node followed through provenance); text that names nothing is a
/// pattern over node names, op types and output types (findMatching), and the same text again
/// (Enter, F3) steps to the next match. The page selects nothing itself: it emits nodeActivated
/// for the window's SelectionModel and follows it through highlightNode.
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

public slots:
    /// Outlines `node` (empty: nothing).
    void highlightNode(const QString& node);

signals:
    /// The user chose `node`: clicked it, or find resolved to it.
    void nodeActivated(const QString& node);
    /// How find resolved the text, for the status bar and the log.
    void findMessage(const QString& message);

private:
    /// The next node matching `pattern` as a pattern in `graph`, or why there is none.
    QString findPattern(const ir::Graph& graph, const QString& pattern, const QString& message);

    std::shared_ptr<const CompileSnapshot> m_snapshot;
    int m_row = -1;
    GraphView* m_graph = nullptr;
    QLineEdit* m_find = nullptr;
    QStringListModel* m_completions = nullptr;
    /// The pattern find last matched (text and snapshot), its matches and the next one to show.
    QString m_findKey;
    std::vector<std::string> m_findMatches;
    size_t m_findNext = 0;
};

} // namespace sextant::views
