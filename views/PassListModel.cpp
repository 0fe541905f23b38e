#include "PassListModel.h"

#include <QBrush>
#include <QColor>
#include <QFont>

namespace sextant::views {

std::vector<PassRow> passRows(const passes::PipelineResult& pipeline) {
    std::vector<PassRow> rows;
    rows.reserve(pipeline.snapshots.size());
    for (const passes::Snapshot& s : pipeline.snapshots) {
        PassRow row;
        row.passId = s.passId;
        row.changed = s.changed;
        row.millis = s.millis;
        row.nodes = static_cast<int>(s.numNodes());
        for (const passes::RuleApplication& a : pipeline.applications)
            if (a.pass == s.passId)
                ++row.rulesApplied;
        rows.push_back(std::move(row));
    }
    return rows;
}

PassListModel::PassListModel(QObject* parent) : QAbstractTableModel(parent) {}

void PassListModel::setRows(std::vector<PassRow> rows) {
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
}

int PassListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int PassListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PassListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const PassRow& row = m_rows[static_cast<size_t>(index.row())];
    const bool isInput = index.row() == 0;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case PassColumn: return QString::fromStdString(row.passId);
        case ChangedColumn: return isInput ? QString() : (row.changed ? QStringLiteral("\u25cf") : QStringLiteral("\u00b7"));
        case TimeColumn: return isInput ? QString() : QString::number(row.millis, 'f', 2);
        case NodesColumn: return row.nodes;
        case RulesColumn: return row.rulesApplied > 0 ? QVariant(row.rulesApplied) : QVariant(QString());
        }
        return {};
    case Qt::ToolTipRole:
        if (isInput)
            return tr("the imported graph, before any pass");
        return row.changed ? tr("%1 changed the graph (%2 rule applications, %3 ms)")
                                 .arg(QString::fromStdString(row.passId))
                                 .arg(row.rulesApplied)
                                 .arg(row.millis, 0, 'f', 2)
                           : tr("%1 left the graph unchanged").arg(QString::fromStdString(row.passId));
    case Qt::ForegroundRole:
        if (!isInput && !row.changed)
            return QBrush(QColor(0x88, 0x88, 0x88));
        if (index.column() == ChangedColumn)
            return QBrush(QColor(0x1f, 0x7a, 0x3a));
        return {};
    case Qt::TextAlignmentRole:
        if (index.column() == PassColumn)
            return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
        if (index.column() == ChangedColumn)
            return QVariant::fromValue(Qt::AlignCenter);
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    default:
        return {};
    }
}

QVariant PassListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case PassColumn: return tr("Pass");
    case ChangedColumn: return tr("Δ");
    case TimeColumn: return tr("ms");
    case NodesColumn: return tr("Nodes");
    case RulesColumn: return tr("Rules");
    }
    return {};
}

RuleStatsModel::RuleStatsModel(QObject* parent) : QAbstractTableModel(parent) {}

void RuleStatsModel::setStats(std::vector<passes::RuleStats> stats) {
    beginResetModel();
    m_stats = std::move(stats);
    endResetModel();
}

int RuleStatsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_stats.size());
}

int RuleStatsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RuleStatsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const passes::RuleStats& s = m_stats[static_cast<size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case RuleColumn: return QString::fromStdString(s.rule);
        case AppliedColumn: return static_cast<qlonglong>(s.applied);
        case RejectedColumn: return static_cast<qlonglong>(s.rejected);
        case SkippedColumn: return static_cast<qlonglong>(s.skipped);
        }
        return {};
    case Qt::CheckStateRole:
        if (index.column() == RuleColumn)
            return m_disabled.count(s.rule) ? Qt::Unchecked : Qt::Checked;
        return {};
    case Qt::ToolTipRole: {
        if (m_disabled.count(s.rule))
            return tr("%1 is disabled: check it to enable it again").arg(QString::fromStdString(s.rule));
        if (s.reasons.empty())
            return tr("%1: applied %2, rejected %3").arg(QString::fromStdString(s.rule)).arg(s.applied).arg(s.rejected);
        QStringList lines;
        for (const auto& [reason, count] : s.reasons)
            lines << tr("%1× %2").arg(count).arg(QString::fromStdString(reason));
        return tr("rejected because:\n") + lines.join('\n');
    }
    case Qt::ForegroundRole:
        if (s.applied == 0)
            return QBrush(QColor(0x88, 0x88, 0x88));
        return {};
    case Qt::TextAlignmentRole:
        if (index.column() == RuleColumn)
            return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    default:
        return {};
    }
}

Qt::ItemFlags RuleStatsModel::flags(const QModelIndex& index) const {
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    if (index.isValid() && index.column() == RuleColumn)
        f |= Qt::ItemIsUserCheckable;
    return f;
}

bool RuleStatsModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (role != Qt::CheckStateRole || !checkIndex(index, CheckIndexOption::IndexIsValid) ||
        index.column() != RuleColumn)
        return false;
    const std::string& rule = m_stats[static_cast<size_t>(index.row())].rule;
    const bool enable = static_cast<Qt::CheckState>(value.toInt()) == Qt::Checked;
    const bool changed = enable ? m_disabled.erase(rule) > 0 : m_disabled.insert(rule).second;
    if (!changed)
        return true;
    emit dataChanged(index.siblingAtColumn(0), index.siblingAtColumn(ColumnCount - 1));
    emit disabledChanged();
    return true;
}

QVariant RuleStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case RuleColumn: return tr("Rule");
    case AppliedColumn: return tr("Applied");
    case RejectedColumn: return tr("Rejected");
    case SkippedColumn: return tr("Skipped");
    }
    return {};
}

} // namespace sextant::views
