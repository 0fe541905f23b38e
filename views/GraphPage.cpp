#include "GraphPage.h"

#include "FindNode.h"
#include "GraphView.h"

#include <QCompleter>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QStringListModel>
#include <QToolButton>
#include <QVBoxLayout>

namespace sextant::views {

GraphPage::GraphPage(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_graph = new GraphView(this);
    auto* fit = new QToolButton(this);
    fit->setText(tr("Fit"));
    fit->setToolTip(tr("Fit the graph into the view (wheel zooms, drag pans)"));
    auto* legend = new QLabel(tr("<span style='color:#3b6fb6'>■</span> cube &nbsp; <span "
                                 "style='color:#3c8c4a'>■</span> vector &nbsp; "
                                 "<span style='color:#c87628'>■</span> DMA &nbsp; <span "
                                 "style='color:#808080'>■</span> host &nbsp; "
                                 "<span style='color:#a88a2c'>■</span> graph input/output &nbsp; "
                                 "<span style='color:#c87628'>□</span> view (no Task)"),
                              this);
    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(6, 2, 6, 2);
    bar->addWidget(fit);
    bar->addWidget(legend);
    bar->addStretch();
    // Find, as in Netron: by node name, tensor name or the name of a node of the ONNX model.
    m_find = new QLineEdit(this);
    m_find->setPlaceholderText(
        tr("Find node, tensor, ONNX node, or a pattern over op types and shapes (Ctrl+F)"));
    m_find->setClearButtonEnabled(true);
    m_find->setMinimumWidth(280);
    m_completions = new QStringListModel(this);
    auto* completer = new QCompleter(m_completions, m_find);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    completer->setFilterMode(Qt::MatchContains);
    completer->setMaxVisibleItems(16);
    m_find->setCompleter(completer);
    bar->addWidget(m_find);
    layout->addLayout(bar);
    layout->addWidget(m_graph, 1);
    connect(m_find, &QLineEdit::returnPressed, this, [this] { find(m_find->text()); });
    connect(completer, qOverload<const QString&>(&QCompleter::activated), this,
            [this](const QString& text) { find(text); });
    connect(fit, &QToolButton::clicked, m_graph, &GraphView::fitToView);
    connect(m_graph, &GraphView::nodeClicked, this, &GraphPage::nodeActivated);
}

void GraphPage::setContext(std::shared_ptr<const CompileSnapshot> snapshot, int row,
                           const QString& selected) {
    m_snapshot = std::move(snapshot);
    m_row = row;
    if (row < static_cast<int>(m_snapshot->layouts.size()))
        m_graph->setGraphLayout(m_snapshot->layouts[static_cast<size_t>(row)]);
    if (std::shared_ptr<const ir::Graph> graph =
            m_snapshot->pipeline.snapshots[static_cast<size_t>(row)].graph()) {
        QStringList names;
        for (const std::string& n : findCompletions(*graph))
            names << QString::fromStdString(n);
        m_completions->setStringList(names);
    }
    m_graph->selectNode(selected);
}

void GraphPage::highlightNode(const QString& node) {
    m_graph->selectNode(node);
}

void GraphPage::focusFind() {
    m_find->setFocus(Qt::ShortcutFocusReason);
    m_find->selectAll();
}

void GraphPage::findNext() {
    if (!m_find->text().trimmed().isEmpty())
        find(m_find->text());
}

QString GraphPage::find(const QString& text) {
    if (!m_snapshot || m_row < 0)
        return {};
    const passes::Snapshot& shown = m_snapshot->pipeline.snapshots[static_cast<size_t>(m_row)];
    std::shared_ptr<const ir::Graph> graph = shown.graph();
    if (!graph)
        return {};
    const FindResult r = findNode(*graph, m_snapshot->pipeline, text.toStdString());
    QString message = QString::fromStdString(r.message);
    if (r.known) {
        m_findMatches.clear();
        if (!r.node.empty())
            emit nodeActivated(QString::fromStdString(r.node));
    } else {
        // Not a name: a pattern over names, op types and shapes. Asking again for the same one
        // in the same graph steps to the next match.
        const QString key =
            text.trimmed() + QLatin1Char('\n') + QString::fromStdString(shown.passId);
        if (key != m_findKey || m_findMatches.empty()) {
            m_findKey = key;
            m_findNext = 0;
            Expected<std::vector<std::string>> matches = findMatching(*graph, text.toStdString());
            m_findMatches = matches.ok() ? std::move(matches).value() : std::vector<std::string>{};
            if (!matches.ok())
                message = QString::fromStdString(matches.error().message);
        }
        message = findPattern(*graph, text,
                              message == QString::fromStdString(r.message) ? QString() : message);
    }
    if (!message.isEmpty())
        emit findMessage(message);
    return message;
}

QString GraphPage::findPattern(const ir::Graph& graph, const QString& pattern,
                               const QString& message) {
    if (m_findMatches.empty()) {
        if (!message.isEmpty())
            return message; // the pattern is not a regular expression: say why
        return tr("nothing in this graph is named '%1', and no node's name, op type or output type "
                  "matches "
                  "it as a pattern")
            .arg(pattern.trimmed());
    }
    const size_t i = m_findNext++ % m_findMatches.size();
    const std::string& node = m_findMatches[i];
    const ir::Node* n = graph.findNode(node);
    emit nodeActivated(QString::fromStdString(node));
    return tr("'%1': %2 of %3 matching nodes: '%4' (%5)%6")
        .arg(pattern.trimmed())
        .arg(i + 1)
        .arg(m_findMatches.size())
        .arg(QString::fromStdString(node),
             n ? QString::fromUtf8(n->info().name.data(), static_cast<int>(n->info().name.size()))
               : QString(),
             m_findMatches.size() > 1 ? tr(" · Enter or F3 for the next") : QString());
}

} // namespace sextant::views
