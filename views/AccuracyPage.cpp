#include "AccuracyPage.h"

#include "AccuracyModel.h"
#include "Tables.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

namespace sextant::views {

AccuracyPage::AccuracyPage(QWidget* parent) : QWidget(parent), m_title(tr("Accuracy")) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 0);
    m_summary = new QLabel(this);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setWordWrap(true);
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_model = new AccuracyModel(this);
    m_table = makeTable(m_model, this);
    QHeaderView* header = m_table->horizontalHeader();
    header->setSectionResizeMode(AccuracyModel::TensorColumn, QHeaderView::Stretch);
    header->setSectionResizeMode(AccuracyModel::NodeColumn, QHeaderView::Stretch);
    for (int c = AccuracyModel::MaxAbsColumn; c < AccuracyModel::ColumnCount; ++c)
        header->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_against = new QComboBox(this);
    m_against->addItem(tr("Simulated NPU vs float64 reference"));
    m_against->addItem(tr("Quantized model vs float model (quantization error per tensor)"));
    m_against->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_against->setVisible(false);
    connect(m_against, &QComboBox::currentIndexChanged, this, [this] { showComparison(); });
    auto* top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(m_against, 0, Qt::AlignTop);
    layout->addLayout(top);
    layout->addWidget(m_table, 1);
    connect(m_table, &QTableView::clicked, this, [this](const QModelIndex& index) {
        const QString node = m_model->nodeAt(index.row());
        if (!node.isEmpty())
            emit nodeActivated(node);
    });
}

void AccuracyPage::setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot) {
    m_snapshot = snapshot;
    m_title = snapshot->accuracy.firstFailing < 0 ? tr("Accuracy") : tr("Accuracy (drift)");
    emit titleChanged(m_title);
    m_against->setVisible(snapshot->floatAccuracy.has_value());
    if (!snapshot->floatAccuracy)
        m_against->setCurrentIndex(0); // no signal when already 0: showComparison below
    showComparison();
}

bool AccuracyPage::showFloatModel(bool on) {
    if (on && !(m_snapshot && m_snapshot->floatAccuracy))
        return false;
    m_against->setCurrentIndex(on ? 1 : 0);
    showComparison();
    return true;
}

void AccuracyPage::showComparison() {
    if (!m_snapshot)
        return;
    const CompileSnapshot& snap = *m_snapshot;
    const QString floatPath = QString::fromStdString(snap.floatModelPath);
    if (m_against->currentIndex() == 1 && snap.floatAccuracy) {
        m_model->setDrift(*snap.floatAccuracy, AccuracyModel::Against::FloatModel);
        m_summary->setText(floatModelSummary(*snap.floatAccuracy, floatPath));
    } else {
        m_model->setDrift(snap.accuracy);
        QString text = accuracySummary(snap.accuracy);
        if (!snap.floatModelError.empty())
            text += tr("<br>float model %1 not compared: %2")
                        .arg(floatPath.toHtmlEscaped(), QString::fromStdString(snap.floatModelError).toHtmlEscaped());
        m_summary->setText(text);
    }
    scrollToDrift();
    if (!snap.loweringError.empty())
        m_summary->setText(
            tr("nothing simulated: the graph was not lowered (%1)")
                .arg(QString::fromStdString(snap.loweringError).toHtmlEscaped()));
}

QString AccuracyPage::summaryText() const {
    return m_summary->text();
}

void AccuracyPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    scrollToDrift();
}

void AccuracyPage::scrollToDrift() {
    const int first = m_model->firstNotableRow();
    if (first >= 0 && m_table->isVisible())
        m_table->scrollTo(m_model->index(first, 0), QAbstractItemView::PositionAtCenter);
}

} // namespace sextant::views
