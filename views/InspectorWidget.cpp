#include "InspectorWidget.h"

#include "MemoryPage.h"
#include "MemoryView.h"
#include "SramView.h"
#include "core/backend/Grouping.h"
#include "core/ir/Printer.h"
#include "core/runtime/NetworkSummary.h"

#include <algorithm>
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
    if (snapshot != m_snapshot) // compared while the old one is still held: no address reuse
        m_summary.reset();
    m_snapshot = std::move(snapshot);
    m_index = snapshotIndex;
    render();
}

void InspectorWidget::showNode(const QString& node) {
    m_node = node;
    m_sramBuffer = -1;
    render();
}

void InspectorWidget::showSramBuffer(int id) {
    m_sramBuffer = id;
    render();
}

QString InspectorWidget::sramBufferHtml() const {
    if (m_sramBuffer < 0 || !m_snapshot)
        return QString();
    const SramMapData& map = m_snapshot->sram;
    const auto it = std::find_if(map.blocks.begin(), map.blocks.end(),
                                 [&](const SramBlock& b) { return b.sramBuffer == m_sramBuffer; });
    if (it == map.blocks.end())
        return tr("<p class='dim'>SRAM buffer %1 is not in this run's plan</p>").arg(m_sramBuffer);
    const SramBlock& b = *it;
    const auto& tasks = m_snapshot->program.tasks;
    const backend::Task* task =
        b.task >= 0 && static_cast<size_t>(b.task) < tasks.size() ? &tasks[static_cast<size_t>(b.task)] : nullptr;
    QString pair = tr("single slot");
    if (b.pair >= 0) {
        pair = tr("ping-pong slot %1").arg(b.pair);
        if (b.partner >= 0)
            pair += tr(" (with buffer %1)").arg(map.blocks[static_cast<size_t>(b.partner)].sramBuffer);
    }
    QString html = tr("<h3>SRAM buffer %1 <span class='dim'>%2</span></h3><table>")
                       .arg(b.sramBuffer)
                       .arg(sramRoleLabel(b.role).toHtmlEscaped());
    auto row = [&](const QString& k, const QString& v) {
        html += QStringLiteral("<tr><td class='k'>%1</td><td>%2</td></tr>").arg(k, v);
    };
    row(tr("role"), QStringLiteral("<span style='color:%1'>■</span> %2")
                        .arg(sramRoleColor(b.role).name(), sramRoleLabel(b.role).toHtmlEscaped()));
    row(tr("core"), QString::number(b.core));
    row(tr("address"), tr("0x%1 – 0x%2").arg(b.offset, 0, 16).arg(b.offset + b.size, 0, 16));
    row(tr("size"), tr("%1 (%2 B)").arg(formatBytes(b.size)).arg(b.size));
    row(tr("pair"), pair);
    row(tr("Task"), task ? tr("%1 %2 (%3)").arg(task->id).arg(esc(task->name), esc(task->kernel)) : tr("none"));
    row(tr("tensor"), esc(b.value));
    if (b.lastTask != b.firstTask)
        row(tr("Tasks"), tr("%1 to %2 on core %3").arg(b.firstTask).arg(b.lastTask).arg(b.core));
    row(tr("live"), tr("%1 – %2 cycles").arg(b.t0).arg(b.t1));
    return html + QStringLiteral("</table><hr>");
}

QString InspectorWidget::nodeOnChipHtml(const std::string& node) const {
    const backend::Program& prog = m_snapshot->program;
    if (prog.sramBuffers.empty())
        return QString();
    const NodeOnChip kept = nodeOnChip(prog, node);
    int buffers = 0;
    for (const SramBlock& b : m_snapshot->sram.blocks)
        buffers += SramMapData::usedBy(b, node) ? 1 : 0;
    QString html = tr("<p><b>On chip</b><br>");
    if (kept.kept.empty()) {
        html += tr("<span class='k'>kept in SRAM</span> nothing (its outputs go to DRAM)<br>");
    } else {
        html += tr("<span class='k'>kept in SRAM</span> %1 · <span class='k'>DRAM traffic saved</span> %2<br>")
                    .arg(formatBytes(kept.bytes), formatBytes(kept.savedDmaBytes));
        for (const backend::OnChip* oc : kept.kept)
            html += tr("&nbsp;&nbsp;%1 on core %2: %3, saves %4<br>")
                        .arg(esc(prog.buffers[static_cast<size_t>(oc->buffer)].value))
                        .arg(oc->core)
                        .arg(formatBytes(oc->bytes), formatBytes(oc->savedDmaBytes));
    }
    html += tr("<span class='k'>SRAM buffers</span> %1 (outlined in the Memory tab's SRAM level)</p>").arg(buffers);
    return html;
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
            html += tr("<tr><td class='k'>memory</td><td>%1</td></tr>")
                        .arg(memorySummary(m_snapshot->memory).toHtmlEscaped());
            html += tr("<tr><td class='k'>SRAM</td><td>%1</td></tr>")
                        .arg(sramSummary(m_snapshot->sram).toHtmlEscaped());
            // The per-network figures of sextant-cli run --summary-csv (docs/summary-csv.md).
            if (!m_summary)
                m_summary = runtime::summarise(prog, m_snapshot->modelPath, 2, m_snapshot->sim.totalCycles, "simulated");
            const runtime::NetworkSummary& sum = *m_summary;
            html += tr("<tr><td class='k'>network</td><td>%1 MMACs on %2 cores · roofline %3 cycles (%4-bound), "
                       "the latency %5x it · %6 events · %7 grey ops</td></tr></table>")
                        .arg(static_cast<double>(sum.macs) / 1e6, 0, 'f', 2)
                        .arg(sum.coresUsed)
                        .arg(sum.rooflineCycles)
                        .arg(QString::fromLatin1(sum.rooflineBound))
                        .arg(static_cast<double>(sum.latencyCycles) / static_cast<double>(std::max<uint64_t>(sum.rooflineCycles, 1)), 0, 'f', 1)
                        .arg(sum.events)
                        .arg(sum.greyTransposes + sum.greyCopyOrCast + sum.greyLayoutConversions +
                             sum.greyQuantization);
        }
        html.prepend(sramBufferHtml());
        if (!m_node.isEmpty())
            html += tr("<p class='dim'>'%1' is not in the graph after %2</p>")
                        .arg(m_node.toHtmlEscaped(), snap ? esc(snap->passId) : QString());
        else
            html += tr("<p class='dim'>click a node in the graph or a Task in the timeline</p>");
        setHtml(html);
        return;
    }

    html += sramBufferHtml();
    html += QStringLiteral("<h3>%1 <span class='dim'>%2</span></h3>")
                .arg(esc(node->name()), esc(ir::qualifiedOpName(node->kind())));
    html += tr("<table><tr><td class='k'>cost class</td><td>%1</td></tr>")
                .arg(esc(std::string(ir::costClassName(node->info().cost))));
    // Where it runs (DESIGN §6, partitions), and why when that is the host.
    if (const std::string why = backend::hostReason(*node); !why.empty())
        html += tr("<tr><td class='k'>runs on</td><td>the host: %1</td></tr>").arg(esc(why));
    else if (backend::loadTimeFill(*node))
        html += tr("<tr><td class='k'>runs on</td><td>the loader, before the run (read only as weights)</td></tr>");
    else
        html += tr("<tr><td class='k'>runs on</td><td>the NPU (%1 unit)</td></tr>")
                    .arg(esc(std::string(backend::unitName(backend::unitFor(*node)))));
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
    if (tasks.empty() && !m_snapshot->loweringError.empty()) {
        // Not lowered (yet): the early snapshot says it is still lowering, a failed one says why.
        html += tr("<p><b>Tasks</b><br><span class='dim'>none: %1</span></p>").arg(esc(m_snapshot->loweringError));
    } else if (const std::optional<double> fill = tasks.empty() ? backend::loadTimeFill(*node) : std::nullopt) {
        html += tr("<p><b>Tasks</b><br><span class='dim'>none: its output is read only as weights, so the loader "
                   "fills it with %1 before the run, as it writes the weights</span></p>")
                    .arg(*fill);
    } else if (tasks.empty()) {
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
                        .arg(t.unit == backend::UnitKind::Host ? tr("host") : QString::number(t.core))
                        .arg(esc(std::string(backend::unitName(t.unit))))
                        .arg(t.start)
                        .arg(t.end - t.start);
        }
        html += QStringLiteral("</table>");
    }
    html += nodeOnChipHtml(node->name());
    setHtml(html);
}

} // namespace sextant::views
