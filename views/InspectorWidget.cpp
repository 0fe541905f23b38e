#include "InspectorWidget.h"

#include "MemoryView.h"
#include "core/ir/Printer.h"

#include <sstream>
#include <type_traits>

namespace sextant::views {

namespace {

QString esc(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

template <typename T> std::string joinList(const std::vector<T>& v) {
    std::ostringstream os;
    os << '[';
    for (size_t i = 0; i < v.size(); ++i) {
        if (i)
            os << ", ";
        if (i == 16) {
            os << "… " << v.size() << " items";
            break;
        }
        os << v[i];
    }
    os << ']';
    return os.str();
}

} // namespace

std::string attributeText(const ir::Attribute& attribute) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, int64_t>) {
                return std::to_string(v);
            } else if constexpr (std::is_same_v<T, double>) {
                std::ostringstream os;
                os << v;
                return os.str();
            } else if constexpr (std::is_same_v<T, std::string>) {
                return "\"" + v + "\"";
            } else if constexpr (std::is_same_v<T, ir::Tensor>) {
                return v.type().str() + " #" + v.digest();
            } else if constexpr (std::is_same_v<T, std::shared_ptr<const ir::Graph>>) {
                return v ? "subgraph '" + v->name() + "' (" + std::to_string(v->numNodes()) + " nodes)" : "null";
            } else {
                return joinList(v);
            }
        },
        attribute);
}

InspectorWidget::InspectorWidget(QWidget* parent) : QTextBrowser(parent) {
    setOpenLinks(false);
    document()->setDefaultStyleSheet(
        "h3 { margin: 2px 0 4px 0; } table { border-collapse: collapse; } td { padding: 1px 6px 1px 0; }"
        " .k { color: #666; } .dim { color: #888; }");
}

void InspectorWidget::setContext(std::shared_ptr<const CompileSnapshot> snapshot, int snapshotIndex) {
    m_snapshot = std::move(snapshot);
    m_index = snapshotIndex;
    render();
}

void InspectorWidget::showNode(const QString& node) {
    m_node = node;
    render();
}

void InspectorWidget::render() {
    if (!m_snapshot) {
        setHtml(tr("<p class='dim'>nothing compiled yet</p>"));
        return;
    }
    const auto& snaps = m_snapshot->pipeline.snapshots;
    const passes::Snapshot* snap =
        m_index >= 0 && m_index < static_cast<int>(snaps.size()) ? &snaps[static_cast<size_t>(m_index)] : nullptr;
    QString html;
    // Held to the end of this function: the snapshot's graph is built on demand and shared.
    const std::shared_ptr<const ir::Graph> graph = snap && !m_node.isEmpty() ? snap->graph() : nullptr;
    const ir::Node* node = graph ? graph->findNode(m_node.toStdString()) : nullptr;
    if (!node) {
        // No node: a run summary, and a hint.
        const auto& prog = m_snapshot->program;
        html += tr("<h3>%1</h3>").arg(esc(m_snapshot->modelPath));
        html += tr("<table><tr><td class='k'>target</td><td>%1 (%2 cores)</td></tr>")
                    .arg(esc(prog.target.name))
                    .arg(prog.target.numCores);
        if (!m_snapshot->loweringError.empty()) {
            html += tr("<tr><td class='k'>lowering</td><td>not lowered: %1</td></tr></table>")
                        .arg(esc(m_snapshot->loweringError));
        } else {
            html += tr("<tr><td class='k'>tasks</td><td>%1</td></tr>").arg(prog.tasks.size());
            html += tr("<tr><td class='k'>latency</td><td>%1 cycles (%2 µs)</td></tr>")
                        .arg(m_snapshot->sim.totalCycles)
                        .arg(prog.target.cyclesToMicros(m_snapshot->sim.totalCycles), 0, 'f', 2);
            html += tr("<tr><td class='k'>memory</td><td>%1</td></tr></table>")
                        .arg(memorySummary(m_snapshot->memory).toHtmlEscaped());
        }
        if (!m_node.isEmpty())
            html += tr("<p class='dim'>'%1' is not in the graph after %2</p>")
                        .arg(m_node.toHtmlEscaped(), snap ? esc(snap->passId) : QString());
        else
            html += tr("<p class='dim'>click a node in the graph or a Task in the timeline</p>");
        setHtml(html);
        return;
    }

    html += QStringLiteral("<h3>%1 <span class='dim'>%2</span></h3>")
                .arg(esc(node->name()), esc(ir::qualifiedOpName(node->kind())));
    html += tr("<table><tr><td class='k'>cost class</td><td>%1</td></tr>")
                .arg(esc(std::string(ir::costClassName(node->info().cost))));
    html += tr("<tr><td class='k'>graph</td><td>after pass %1</td></tr>").arg(esc(snap->passId));
    for (size_t i = 0; i < node->numInputs(); ++i) {
        const ir::Value* v = node->input(i);
        html += tr("<tr><td class='k'>in %1</td><td>%2</td></tr>")
                    .arg(i)
                    .arg(v ? esc(v->name() + " : " + v->type().str() + (v->isConstant() ? "  (constant)" : ""))
                           : tr("(omitted)"));
    }
    for (size_t i = 0; i < node->numOutputs(); ++i) {
        const ir::Value* v = node->output(i);
        html += tr("<tr><td class='k'>out %1</td><td>%2</td></tr>").arg(i).arg(esc(v->name() + " : " + v->type().str()));
    }
    // The attributes and the typed fields (precision, view, body) in the printed IR's order.
    ir::forEachPrintedAttribute(*node, [&](std::string_view name, const ir::Attribute& value) {
        html += QStringLiteral("<tr><td class='k'>%1</td><td>%2</td></tr>")
                    .arg(esc(std::string(name)), esc(attributeText(value)));
    });
    html += QStringLiteral("</table>");

    const ir::Provenance& prov = node->provenance();
    QStringList origins;
    for (const std::string& o : prov.origins)
        origins << esc(o);
    html += tr("<p><b>Provenance</b><br><span class='k'>created by</span> %1<br><span class='k'>ONNX nodes</span> %2</p>")
                .arg(esc(prov.createdBy.empty() ? "import" : prov.createdBy))
                .arg(origins.isEmpty() ? tr("(none)") : origins.join(", "));

    const TimelineModel& tl = m_snapshot->timeline;
    const std::vector<int> tasks = tl.tasksOfNode(node->name());
    if (tasks.empty()) {
        html += tr("<p><b>Tasks</b><br><span class='dim'>no Task executes this node (it is not in the compiled "
                   "graph, or it became an alias)</span></p>");
    } else {
        // No wrapping inside a cell (the dock is narrow): "FusedConv" or a cycle count broken in two
        // reads as two values. The end is start + cycles, so it is left out.
        html += tr("<p><b>Tasks</b></p><table style='white-space:nowrap'><tr class='k'><td>id</td><td>kernel</td>"
                   "<td>core</td><td>unit</td><td>start</td><td>cycles</td></tr>");
        for (int i : tasks) {
            const TimelineTask& t = tl.tasks()[static_cast<size_t>(i)];
            html += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td></tr>")
                        .arg(t.task)
                        .arg(esc(t.kernel))
                        .arg(t.core)
                        .arg(esc(std::string(backend::unitName(t.unit))))
                        .arg(t.start)
                        .arg(t.end - t.start);
        }
        html += QStringLiteral("</table>");
    }
    setHtml(html);
}

} // namespace sextant::views
