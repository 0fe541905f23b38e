#pragma once

#include "core/runtime/Compare.h"

#include <QAbstractTableModel>

namespace sextant::views {

/// The Accuracy tab's table: every tensor the simulated NPU computed against the float64
/// reference's tensor of the same name, in graph order (runtime::ValueDrift). Failing rows are
/// tinted and the first of them is bold: where the numbers start to drift.
class AccuracyModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { TensorColumn, NodeColumn, MaxAbsColumn, MaxRelColumn, CosineColumn, VerdictColumn, ColumnCount };

    explicit AccuracyModel(QObject* parent = nullptr);

    void setDrift(runtime::ValueDrift drift);
    const runtime::ValueDrift& drift() const { return m_drift; }
    /// The node that computed the tensor of `row` ("" for a graph input or out of range).
    QString nodeAt(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    runtime::ValueDrift m_drift;
};

/// One line for above the table: how many tensors were compared and the first out of tolerance.
QString accuracySummary(const runtime::ValueDrift& drift);

} // namespace sextant::views
