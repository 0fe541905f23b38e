#include "MemoryPage.h"

#include "MemoryView.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

namespace sextant::views {

MemoryPage::MemoryPage(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    m_summary = new QLabel(tr("no run yet"), this);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_showWeights = new QCheckBox(tr("Show weights"), this);
    auto* bar = new QHBoxLayout;
    bar->addWidget(m_summary, 1);
    bar->addWidget(m_showWeights);
    layout->addLayout(bar);
    m_memory = new MemoryView(this);
    layout->addWidget(m_memory, 1);
    connect(m_showWeights, &QCheckBox::toggled, this,
            [this](bool on) { m_memory->setShown(on, true, true); });
    connect(m_memory, &MemoryView::bufferClicked, this,
            [this](int, const QString& node) { emit nodeActivated(node); });
}

void MemoryPage::setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot) {
    m_memory->setMap(std::shared_ptr<const MemoryMapData>(snapshot, &snapshot->memory));
    m_memory->setShown(m_showWeights->isChecked(), true, true);
    m_summary->setText(memorySummary(snapshot->memory));
    if (!snapshot->loweringError.empty())
        m_summary->setText(tr("no memory plan: the graph was not lowered (%1)")
                               .arg(QString::fromStdString(snapshot->loweringError)));
}

QString MemoryPage::summaryText() const {
    return m_summary->text();
}

void MemoryPage::highlightNode(const QString& node) {
    m_memory->highlightNode(node);
}

} // namespace sextant::views
