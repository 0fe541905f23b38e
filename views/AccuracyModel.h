#pragma once

#include "core/runtime/Compare.h"

#include <QAbstractTableModel>

#include <vector>

namespace sextant::views {

/// The Accuracy tab's table: every tensor the simulated NPU computed against the float64
/// reference's tensor of the same name, in graph order (runtime::ValueDrift). Failing rows are
/// tinted and the first of them is bold: where the numbers start to drift. Against a quantized
/// model's float model, the rows are the quantized model's tensors against the float model's,
/// the lowest cosine first (bold): the layer whose quantization costs the most.
class AccuracyModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { TensorColumn, NodeColumn, MaxAbsColumn, MaxRelColumn, CosineColumn, VerdictColumn, ColumnCount };
    /// What the drift compares: the NPU with the float64 reference, or the quantized model with
    /// its float model (both on the float64 reference).
    enum class Against { Reference, FloatModel };

    explicit AccuracyModel(QObject* parent = nullptr);

    void setDrift(runtime::ValueDrift drift, Against against = Against::Reference);
    const runtime::ValueDrift& drift() const { return m_drift; }
    Against against() const { return m_against; }
    /// The row to show first: the first tensor out of tolerance, or against a float model the
    /// one with the most quantization error (row 0); -1 when there is none.
    int firstNotableRow() const;
    /// The node that computed the tensor of `row` ("" for a graph input or out of range).
    QString nodeAt(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    const runtime::TensorComparison& comparisonAt(int row) const;

    runtime::ValueDrift m_drift;
    Against m_against = Against::Reference;
    std::vector<size_t> m_order; ///< row -> index into m_drift.values
};

/// One line for above the table: how many tensors were compared and the first out of tolerance.
QString accuracySummary(const runtime::ValueDrift& drift);
/// The same against a float model (`path`): how many tensors matched by name, and the one with
/// the most quantization error.
QString floatModelSummary(const runtime::ValueDrift& drift, const QString& path);

} // namespace sextant::views
