#include "DiffPage.h"

#include "DiffView.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QVBoxLayout>

namespace sextant::views {

DiffPage::DiffPage(QWidget* parent) : QWidget(parent), m_title(tr("IR diff")) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_diff = new DiffView(this);
    m_fullDiff = new QCheckBox(tr("Show every line"), this);
    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(6, 2, 6, 2);
    bar->addWidget(m_fullDiff);
    bar->addStretch();
    layout->addLayout(bar);
    layout->addWidget(m_diff, 1);
    connect(m_fullDiff, &QCheckBox::toggled, this,
            [this](bool on) { m_diff->setContextLines(on ? -1 : 4); });
}

void DiffPage::showPass(const passes::PipelineResult& pipeline, int row) {
    m_after = pipeline.snapshots[static_cast<size_t>(row)];
    m_before = pipeline.snapshots[static_cast<size_t>(row > 0 ? row - 1 : 0)];
    m_row = row;
    m_stale = true;
    if (isVisible() || m_after.numNodes() <= kDiffWhenShownAbove) {
        compare();
        return;
    }
    // Unchanged means the printed IR is the same: nothing added, nothing removed.
    m_title = row == 0 ? tr("IR diff") : m_after.changed ? tr("IR diff (changed)") : tr("IR diff (+0 −0)");
    emit titleChanged(m_title);
}

void DiffPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (m_stale)
        compare();
}

void DiffPage::compare() {
    m_stale = false;
    m_diff->setTexts(m_before.text(), m_after.text(), QString::fromStdString(m_before.passId),
                     QString::fromStdString(m_after.passId));
    m_title = m_row == 0
                  ? tr("IR diff")
                  : tr("IR diff (+%1 −%2)").arg(m_diff->addedLines()).arg(m_diff->removedLines());
    emit titleChanged(m_title);
}

} // namespace sextant::views
