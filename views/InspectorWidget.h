#pragma once

#include "CompileSnapshot.h"

#include <QTextBrowser>

#include "core/runtime/NetworkSummary.h"

#include <memory>
#include <optional>

namespace sextant::views {

/// The inspector dock: what the selected node is (op, attributes, input and output types), where it
/// came from (original ONNX nodes, the pass/rule that created it) and which Tasks ran it, with
/// their core, unit and simulated times, and what it kept in SRAM. After a click on an SRAM buffer
/// it shows that buffer (role, core, address, size, ping-pong pair, Task) above its Task's node.
class InspectorWidget : public QTextBrowser {
    Q_OBJECT
public:
    explicit InspectorWidget(QWidget* parent = nullptr);

    /// The run and the pipeline snapshot whose graph the other views show.
    void setContext(std::shared_ptr<const CompileSnapshot> snapshot, int snapshotIndex);
    /// Shows `node` of the current snapshot's graph (empty: a summary of the run).
    void showNode(const QString& node);
    /// Shows the SRAM buffer with Program::sramBuffers id `id` above the node already shown
    /// (showNode first: it clears the buffer); -1 clears it.
    void showSramBuffer(int id);
    int sramBuffer() const { return m_sramBuffer; }

private:
    void render();
    QString sramBufferHtml() const;
    QString nodeOnChipHtml(const std::string& node) const;

    std::shared_ptr<const CompileSnapshot> m_snapshot;
    /// The network's figures of m_snapshot (runtime::summarise: a walk over every Task), made on
    /// the first render that shows them rather than on every one; setContext drops them when the
    /// snapshot changes.
    std::optional<runtime::NetworkSummary> m_summary;
    int m_index = 0;
    QString m_node;
    int m_sramBuffer = -1;
};

/// An attribute value as short text: ints and floats, lists in brackets, tensors by type and
/// digest, subgraphs by node count.
std::string attributeText(const ir::Attribute& attribute);

} // namespace sextant::views
