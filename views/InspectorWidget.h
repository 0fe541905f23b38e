#pragma once

#include "CompileSnapshot.h"

#include <QTextBrowser>

#include <memory>

namespace sextant::views {

/// The inspector dock: what the selected node is (op, attributes, input and output types), where it
/// came from (original ONNX nodes, the pass/rule that created it) and which Tasks ran it, with
/// their core, unit and simulated times.
class InspectorWidget : public QTextBrowser {
    Q_OBJECT
public:
    explicit InspectorWidget(QWidget* parent = nullptr);

    /// The run and the pipeline snapshot whose graph the other views show.
    void setContext(std::shared_ptr<const CompileSnapshot> snapshot, int snapshotIndex);
    /// Shows `node` of the current snapshot's graph (empty: a summary of the run).
    void showNode(const QString& node);

private:
    void render();

    std::shared_ptr<const CompileSnapshot> m_snapshot;
    int m_index = 0;
    QString m_node;
};

/// An attribute value as short text: ints and floats, lists in brackets, tensors by type and
/// digest, subgraphs by node count.
std::string attributeText(const ir::Attribute& attribute);

} // namespace sextant::views
