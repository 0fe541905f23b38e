#include "AccuracyModel.h"

#include <QBrush>
#include <QColor>
#include <QFont>

#include <cmath>

namespace sextant::views {

namespace {

/// A comparison's number as the table writes it: NaN and infinities as "nan", "inf" and "-inf"
/// (an overflowed output's cosine is NaN: data, not a blank or a 0).
QString numberText(double v, char format, int precision) {
    if (std::isnan(v))
        return QStringLiteral("nan");
    if (std::isinf(v))
        return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(v, format, precision);
}

} // namespace

AccuracyModel::AccuracyModel(QObject* parent) : QAbstractTableModel(parent) {}

void AccuracyModel::setDrift(runtime::ValueDrift drift, Against against) {
    beginResetModel();
    m_drift = std::move(drift);
    m_against = against;
    if (against == Against::FloatModel) {
        m_order = runtime::lowestCosineFirst(m_drift);
    } else {
        m_order.resize(m_drift.values.size());
        for (size_t i = 0; i < m_order.size(); ++i)
            m_order[i] = i;
    }
    endResetModel();
}

int AccuracyModel::firstNotableRow() const {
    if (m_against == Against::Reference)
        return m_drift.firstFailing;
    return m_order.empty() || !m_drift.values[m_order[0]].problem.empty() ? -1 : 0;
}

const runtime::TensorComparison& AccuracyModel::comparisonAt(int row) const {
    return m_drift.values[m_order[static_cast<size_t>(row)]];
}

QString AccuracyModel::nodeAt(int row) const {
    if (row < 0 || row >= static_cast<int>(m_order.size()))
        return {};
    return QString::fromStdString(m_drift.nodes[m_order[static_cast<size_t>(row)]]);
}

int AccuracyModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(m_order.size());
}

int AccuracyModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant AccuracyModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const runtime::TensorComparison& c = comparisonAt(index.row());
    const bool againstFloat = m_against == Against::FloatModel;
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case TensorColumn: return QString::fromStdString(c.name);
        case NodeColumn: return nodeAt(index.row());
        case MaxAbsColumn: return numberText(c.maxAbs, 'e', 1);
        case MaxRelColumn: return numberText(c.maxRel, 'e', 1);
        case CosineColumn: return numberText(c.cosine, 'f', 6);
        case VerdictColumn:
            if (!c.problem.empty())
                return tr("FAIL (%1)").arg(QString::fromStdString(c.problem));
            if (againstFloat) // quantization error is expected: how much, not a verdict
                return numberText(c.rmse, 'e', 1);
            if (c.pass)
                return tr("PASS");
            return c.mismatches == 1 ? tr("FAIL (1 element)") : tr("FAIL (%1 elements)").arg(c.mismatches);
        default: return {};
        }
    }
    if (role == Qt::TextAlignmentRole && index.column() >= MaxAbsColumn &&
        index.column() <= (againstFloat ? VerdictColumn : CosineColumn))
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::BackgroundRole && (againstFloat ? !c.problem.empty() : !c.pass))
        return QBrush(QColor(250, 222, 222));
    if (role == Qt::FontRole && index.row() == firstNotableRow()) {
        QFont f;
        f.setBold(true);
        return f;
    }
    if (role == Qt::ToolTipRole && index.row() == firstNotableRow())
        return againstFloat ? tr("the most quantization error: the lowest cosine against the float model")
                            : tr("the first tensor out of tolerance: the numbers start to drift here");
    return {};
}

QVariant AccuracyModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case TensorColumn: return tr("Tensor");
    case NodeColumn: return tr("Node");
    case MaxAbsColumn: return tr("max abs");
    case MaxRelColumn: return tr("max rel");
    case CosineColumn: return tr("cosine");
    case VerdictColumn: return m_against == Against::FloatModel ? tr("rmse vs float model") : tr("vs float64 reference");
    default: return {};
    }
}

QString accuracySummary(const runtime::ValueDrift& drift) {
    QString s = QObject::tr("%1 tensors of the simulated NPU against the float64 reference (rtol 1e-2; atol 1e-2, "
                            "times max|reference| unless probability-like)")
                    .arg(drift.values.size());
    if (drift.unmatched > 0)
        s += QObject::tr(" · %1 without a counterpart").arg(drift.unmatched);
    if (drift.firstFailing < 0)
        return s + QObject::tr(" · all within tolerance");
    return s + QObject::tr(" · first out of tolerance: <b>%1</b> (node %2)")
                   .arg(QString::fromStdString(drift.values[static_cast<size_t>(drift.firstFailing)].name).toHtmlEscaped(),
                        QString::fromStdString(drift.firstFailingNode).toHtmlEscaped());
}

QString floatModelSummary(const runtime::ValueDrift& drift, const QString& path) {
    QString s = QObject::tr("%1 tensors of the quantized model against the float model %2 (matched by name, both "
                            "on the float64 reference), the lowest cosine first")
                    .arg(drift.values.size())
                    .arg(path.toHtmlEscaped());
    const std::vector<size_t> order = runtime::lowestCosineFirst(drift);
    if (order.empty() || !drift.values[order[0]].problem.empty())
        return s;
    const runtime::TensorComparison& c = drift.values[order[0]];
    return s + QObject::tr(" · most quantization error: <b>%1</b> (node %2, cosine %3)")
                   .arg(QString::fromStdString(c.name).toHtmlEscaped(),
                        QString::fromStdString(drift.nodes[order[0]]).toHtmlEscaped(), numberText(c.cosine, 'f', 6));
}

} // namespace sextant::views
