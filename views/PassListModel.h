#pragma once

#include "core/passes/PassManager.h"

#include <QAbstractTableModel>

#include <set>
#include <string>
#include <vector>

namespace sextant::views {

/// One row of the pass list: a pipeline snapshot summarised.
struct PassRow {
    std::string passId;
    bool changed = false;
    double millis = 0.0;
    int nodes = 0;          ///< node count of the graph after the pass
    int rulesApplied = 0;   ///< rule applications made by this pass
};

/// Summarises a pipeline run, one row per snapshot (row 0 is "input").
std::vector<PassRow> passRows(const passes::PipelineResult& pipeline);

/// The pipeline panel's list: pass id, changed marker, time, node count, rule applications.
/// Unchanged passes are drawn grey so the eye finds the ones that did something.
class PassListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { PassColumn, ChangedColumn, TimeColumn, NodesColumn, RulesColumn, ColumnCount };

    explicit PassListModel(QObject* parent = nullptr);

    /// Replaces every row (a complete snapshot of the run, never patched incrementally).
    void setRows(std::vector<PassRow> rows);
    const std::vector<PassRow>& rows() const { return m_rows; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<PassRow> m_rows;
};

/// Rule counters of a pipeline run: rule id, applied, rejected, skipped (bisect), with the
/// rejection reasons as tooltip. The rule column is checkable: unchecking a rule adds it to
/// disabledRules() and emits disabledChanged, so the window can recompile without it.
class RuleStatsModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { RuleColumn, AppliedColumn, RejectedColumn, SkippedColumn, ColumnCount };

    explicit RuleStatsModel(QObject* parent = nullptr);

    /// Replaces the counters; the set of disabled rules is kept.
    void setStats(std::vector<passes::RuleStats> stats);
    const std::set<std::string>& disabledRules() const { return m_disabled; }

    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

signals:
    /// The user switched a rule on or off.
    void disabledChanged();

private:
    std::vector<passes::RuleStats> m_stats;
    std::set<std::string> m_disabled;
};

} // namespace sextant::views
