#include "GraphPage.h"

#include "FindNode.h"
#include "GraphLayoutWorker.h"
#include "GraphView.h"

#include <QCompleter>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QStringListModel>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

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
                                 "<span style='color:#c87628'>□</span> no Task (view, load-time fill)"),
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
    // Where in a collapsed graph the view is: the path from the top, and Up.
    auto* pathBar = new QHBoxLayout;
    pathBar->setContentsMargins(6, 0, 6, 2);
    m_up = new QToolButton(this);
    m_up->setText(tr("Up"));
    m_up->setToolTip(tr("Close the group shown: back to the level above"));
    m_path = new QLabel(this);
    m_path->setTextFormat(Qt::RichText);
    pathBar->addWidget(m_up);
    pathBar->addWidget(m_path, 1);
    layout->addLayout(pathBar);
    layout->addWidget(m_graph, 1);
    m_layouts = new GraphLayoutWorker(this);
    connect(m_layouts, &GraphLayoutWorker::levelReady, this,
            [this](const std::shared_ptr<const GraphLevel>& level) { display(level, true); });
    connect(m_layouts, &GraphLayoutWorker::failed, this, [this](const QString& error) {
        m_pending = false;
        m_path->setText(tr("layout failed: %1").arg(error.toHtmlEscaped()));
        emit graphShown(tr("graph: layout failed: %1").arg(error));
    });
    connect(m_up, &QToolButton::clicked, this, &GraphPage::closeGroup);
    connect(m_path, &QLabel::linkActivated, this,
            [this](const QString& link) { openGroup(link.mid(1)); }); // "#" + group id
    connect(m_graph, &GraphView::groupActivated, this, &GraphPage::toggleGroup);
    connect(m_find, &QLineEdit::returnPressed, this, [this] { find(m_find->text()); });
    connect(completer, qOverload<const QString&>(&QCompleter::activated), this,
            [this](const QString& text) { find(text); });
    connect(fit, &QToolButton::clicked, m_graph, &GraphView::fitToView);
    connect(m_graph, &GraphView::nodeClicked, this, &GraphPage::nodeActivated);
}

namespace {

/// Opens, in `expanded`, the groups between level `levelId` and group `holder` (the level's
/// own item: nothing); when `holder` is not inside that level, the level becomes the top.
/// Returns whether anything changed.
bool openPath(const GraphHierarchy& h, int holder, std::string& levelId, std::set<std::string>& expanded) {
    if (holder <= 0)
        return false;
    const std::vector<int> path = h.pathTo(holder);
    auto at = std::find(path.begin(), path.end(), std::max(0, h.findGroup(levelId)));
    bool changed = false;
    if (at == path.end()) {
        at = path.begin();
        changed = !levelId.empty();
        levelId.clear();
    }
    for (auto it = at + 1; it != path.end(); ++it)
        changed = expanded.insert(h.groups[static_cast<size_t>(*it)].id).second || changed;
    return changed;
}

} // namespace

void GraphPage::setContext(std::shared_ptr<const CompileSnapshot> snapshot, int row,
                           const QString& selected) {
    if (snapshot != m_snapshot && snapshot)
        m_layouts->keepOnly(*snapshot); // layouts of snapshots the new run shares stay
    m_snapshot = std::move(snapshot);
    m_row = row;
    m_selected = selected;
    m_reveal = true;
    // The level shown stays when this graph has it; groups open in place stay open. When the
    // graph was prepared before, the groups around the selection open now, in one layout.
    std::string level;
    if (auto prepared = m_layouts->preparedGraph(*m_snapshot, row)) {
        if (prepared->hierarchy.findGroup(m_groupId) > 0)
            level = m_groupId;
        openPath(prepared->hierarchy, prepared->hierarchy.groupOfName(prepared->items, selected.toStdString()), level,
                 m_expanded);
    }
    showLevel(level);
}

void GraphPage::openGroup(const QString& groupId) {
    if (m_snapshot)
        showLevel(groupId.toStdString());
}

void GraphPage::closeGroup() {
    if (!m_level || m_level->group <= 0)
        return;
    const int parent = m_level->graph->hierarchy.groups[static_cast<size_t>(m_level->group)].parent;
    showLevel(m_level->graph->hierarchy.groups[static_cast<size_t>(std::max(parent, 0))].id);
}

void GraphPage::toggleGroup(const QString& groupId) {
    const std::string id = groupId.toStdString();
    if (m_expanded.erase(id) > 0) {
        // Folding a group folds the groups inside it too: opened again, it shows closed ones.
        if (m_level) {
            const GraphHierarchy& h = m_level->graph->hierarchy;
            const int g = h.findGroup(id);
            for (auto it = m_expanded.begin(); g > 0 && it != m_expanded.end();) {
                const std::vector<int> path = h.pathTo(h.findGroup(*it));
                const bool inside = h.findGroup(*it) > 0 && std::find(path.begin(), path.end(), g) != path.end();
                it = inside ? m_expanded.erase(it) : std::next(it);
            }
        }
    } else {
        m_expanded.insert(id);
    }
    m_reveal = false; // a folded group stays folded, even around the selection
    if (m_snapshot)
        showLevel(m_groupId);
}

std::set<std::string> GraphPage::expansionFor(const SnapshotGraph* graph, const std::string& groupId) const {
    if (!graph)
        return m_expanded;
    std::set<std::string> shown;
    for (int g : openGroupsOf(graph->hierarchy, std::max(0, graph->hierarchy.findGroup(groupId)), m_expanded))
        shown.insert(graph->hierarchy.groups[static_cast<size_t>(g)].id);
    return shown;
}

void GraphPage::showLevel(const std::string& groupId) {
    m_groupId = groupId;
    std::shared_ptr<const SnapshotGraph> prepared = m_layouts->preparedGraph(*m_snapshot, m_row);
    if (std::shared_ptr<const GraphLevel> level =
            m_layouts->request(m_snapshot, m_row, groupId, expansionFor(prepared.get(), groupId))) {
        display(level, false);
        return;
    }
    m_pending = true;
    m_level.reset();
    m_graph->setGraphLayout(nullptr);
    m_up->setEnabled(false);
    m_path->setText(tr("laying out the graph after %1 …")
                        .arg(QString::fromStdString(m_snapshot->pipeline.snapshots[static_cast<size_t>(m_row)].passId)));
}

void GraphPage::display(const std::shared_ptr<const GraphLevel>& level, bool announce) {
    m_pending = false;
    if (m_completionsFor != level->graph) { // the find box offers the names of the graph shown
        m_completionsFor = level->graph;
        QStringList names;
        names.reserve(static_cast<qsizetype>(level->graph->completions.size()));
        for (const std::string& n : level->graph->completions)
            names << QString::fromStdString(n);
        m_completions->setStringList(names);
    }
    // A selection inside a closed group opens the groups around it (once per selection).
    if (m_reveal && openAround(*level, m_selected)) {
        showLevel(m_groupId);
        return;
    }
    // The request was made before the graph was prepared: ask again with only what shows, so
    // the same view has one cache key.
    if (expansionFor(level->graph.get(), m_groupId) != level->expanded) {
        showLevel(m_groupId);
        return;
    }
    m_reveal = false;
    m_level = level;
    m_graph->setGraphLayout(level->layout);
    selectShown();
    updatePath();
    emit levelShown();
    if (announce)
        emit graphShown(tr("graph after %1: %2 boxes laid out in %3 ms")
                            .arg(QString::fromStdString(m_snapshot->pipeline.snapshots[static_cast<size_t>(m_row)].passId))
                            .arg(level->layout->nodes.size())
                            .arg(level->millis, 0, 'f', 0));
}

void GraphPage::selectShown() {
    // A node inside a closed group: the group's box is outlined in its place.
    QString shown = m_selected;
    if (m_level && !m_selected.isEmpty() && m_level->layout->findNode(m_selected.toStdString()) < 0) {
        const GraphHierarchy& h = m_level->graph->hierarchy;
        const std::vector<int> path = h.pathTo(h.groupOfName(m_level->graph->items, m_selected.toStdString()));
        for (auto it = path.rbegin(); it != path.rend(); ++it)
            if (*it > 0 && m_level->layout->findNode(h.groups[static_cast<size_t>(*it)].id) >= 0) {
                shown = QString::fromStdString(h.groups[static_cast<size_t>(*it)].id);
                break;
            }
    }
    m_graph->selectNode(shown);
}

bool GraphPage::openAround(const GraphLevel& level, const QString& node) {
    if (node.isEmpty() || level.layout->findNode(node.toStdString()) >= 0)
        return false;
    const GraphHierarchy& h = level.graph->hierarchy;
    return openPath(h, h.groupOfName(level.graph->items, node.toStdString()), m_groupId, m_expanded);
}

void GraphPage::updatePath() {
    const GraphHierarchy& h = m_level->graph->hierarchy;
    m_up->setVisible(h.collapsed());
    m_up->setEnabled(m_level->group > 0);
    if (!h.collapsed()) {
        m_path->setText(QString());
        m_path->setVisible(false);
        return;
    }
    m_path->setVisible(true);
    QStringList parts;
    const std::vector<int> path = h.pathTo(m_level->group);
    for (size_t i = 0; i < path.size(); ++i) {
        const HierarchyGroup& g = h.groups[static_cast<size_t>(path[i])];
        const QString label = i == 0 ? tr("top") : QString::fromStdString(g.label).toHtmlEscaped();
        parts << (i + 1 == path.size() ? QStringLiteral("<b>%1</b>").arg(label)
                                       : QStringLiteral("<a href='#%1'>%2</a>").arg(QString::fromStdString(g.id), label));
    }
    m_path->setText(tr("%1 &nbsp;·&nbsp; %2 nodes, shown collapsed (graphs over %3 boxes open as groups): "
                       "double-click a group to open it in place, an open group's title to fold it")
                        .arg(parts.join(QStringLiteral(" ▸ ")))
                        .arg(h.groups.front().size)
                        .arg(kCollapseAbove));
}

void GraphPage::highlightNode(const QString& node) {
    m_selected = node;
    m_reveal = true; // a new selection opens the groups around it, now or when the layout comes
    if (m_level && openAround(*m_level, node)) {
        showLevel(m_groupId);
        return;
    }
    selectShown();
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
