#include "AccuracyPage.h"

#include "AccuracyModel.h"
#include "Tables.h"

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
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
    connect(m_table, &QTableView::clicked, this, [this](const QModelIndex& index) {
        const QString node = m_model->nodeAt(index.row());
        if (!node.isEmpty())
            emit nodeActivated(node);
    });
}

void AccuracyPage::setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot) {
    m_model->setDrift(snapshot->accuracy);
    m_summary->setText(accuracySummary(snapshot->accuracy));
    m_title = snapshot->accuracy.firstFailing < 0 ? tr("Accuracy") : tr("Accuracy (drift)");
    emit titleChanged(m_title);
    scrollToDrift();
    if (!snapshot->loweringError.empty())
        m_summary->setText(
            tr("nothing simulated: the graph was not lowered (%1)")
                .arg(QString::fromStdString(snapshot->loweringError).toHtmlEscaped()));
}

QString AccuracyPage::summaryText() const {
    return m_summary->text();
}

void AccuracyPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    scrollToDrift();
}

void AccuracyPage::scrollToDrift() {
    const int first = m_model->drift().firstFailing;
    if (first >= 0 && m_table->isVisible())
        m_table->scrollTo(m_model->index(first, 0), QAbstractItemView::PositionAtCenter);
}

} // namespace sextant::views
