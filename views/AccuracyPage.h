#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QTableView;

namespace sextant::views {

class AccuracyModel;

/// The Accuracy tab: every tensor the NPU computed against the float64 reference, in graph order
/// (AccuracyModel), under a summary naming the first one out of tolerance. When shown, the table
/// scrolls to that tensor; clicking a row chooses the node that computed it.
class AccuracyPage : public QWidget {
    Q_OBJECT
public:
    explicit AccuracyPage(QWidget* parent = nullptr);

    /// Shows `snapshot`'s comparison, or why nothing was compared when the graph was not lowered.
    void setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot);
    /// The tab's title: "Accuracy", or "Accuracy (drift)" when a tensor is out of tolerance.
    const QString& title() const { return m_title; }
    QString summaryText() const;
    AccuracyModel* model() const { return m_model; }
    /// Shows the NPU against the float64 reference (false) or the quantized model against its
    /// float model (true); false when the snapshot has no float model comparison.
    bool showFloatModel(bool on);

signals:
    /// The user clicked the row of a tensor computed by `node`.
    void nodeActivated(const QString& node);
    void titleChanged(const QString& title);

protected:
    void showEvent(QShowEvent* event) override;

private:
    /// Scrolls the table to the first tensor out of tolerance (a hidden table cannot scroll).
    void scrollToDrift();
    void showComparison();

    std::shared_ptr<const CompileSnapshot> m_snapshot;
    AccuracyModel* m_model = nullptr;
    QComboBox* m_against = nullptr;
    QTableView* m_table = nullptr;
    QLabel* m_summary = nullptr;
    QString m_title;
};

} // namespace sextant::views
