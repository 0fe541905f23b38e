#pragma once

#include "core/passes/PassManager.h"

#include <QSplitter>

#include <set>
#include <string>

class QComboBox;
class QTableView;

namespace sextant::views {

class PassListModel;
class RuleStatsModel;

/// The pipeline panel: the optimisation level (as sextant-cli's -O0..-O3), the passes of the last
/// compile (PassListModel) and the rule counters with their on/off switches (RuleStatsModel).
/// Choosing a pass emits passChosen; changing the level or a rule emits switchesChanged, for the
/// window to recompile.
class PipelinePanel : public QSplitter {
    Q_OBJECT
public:
    explicit PipelinePanel(QWidget* parent = nullptr);

    /// Lists `pipeline`'s passes and rule counters (the rule switches are kept).
    void setPipeline(const passes::PipelineResult& pipeline);
    /// The row of the pass `passId` of the last setPipeline, or -1.
    int rowOf(const QString& passId) const;
    /// Makes `row` the current pass without emitting passChosen.
    void setCurrentPass(int row);
    /// The level of the next compiles (0..3).
    int optLevel() const;
    /// Sets the level without emitting switchesChanged; false if out of range.
    bool setOptLevel(int level);
    /// The rules switched off.
    const std::set<std::string>& disabledRules() const;
    PassListModel* passModel() const { return m_passModel; }

signals:
    /// The user chose the pass of row `row` (0 = input).
    void passChosen(int row);
    /// The user changed the level or switched a rule on or off.
    void switchesChanged();

private:
    QComboBox* m_level = nullptr;
    PassListModel* m_passModel = nullptr;
    RuleStatsModel* m_ruleModel = nullptr;
    QTableView* m_passView = nullptr;
    QTableView* m_ruleView = nullptr;
};

} // namespace sextant::views
