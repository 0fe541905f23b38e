#include "StatusPanel.h"

#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>

namespace sextant::views {

StatusPanel::StatusPanel(QStatusBar* bar) : QObject(bar) {
    m_text = new QLabel(tr("ready"), bar);
    m_progress = new QProgressBar(bar);
    m_progress->setRange(0, 100);
    m_progress->setMaximumWidth(220);
    m_cancel = new QPushButton(tr("Cancel"), bar);
    bar->addWidget(m_text, 1);
    bar->addPermanentWidget(m_progress);
    bar->addPermanentWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, this, &StatusPanel::cancelRequested);
    setBusy(false);
}

QString StatusPanel::text() const {
    return m_text->text();
}

void StatusPanel::setText(const QString& text) {
    m_text->setText(text);
}

void StatusPanel::setProgress(int percent) {
    m_progress->setValue(percent);
}

void StatusPanel::showProgress(int percent, const QString& stage) {
    m_progress->setValue(percent);
    m_text->setText(stage);
}

void StatusPanel::setBusy(bool busy, bool indeterminate) {
    m_progress->setRange(0, busy && indeterminate ? 0 : 100);
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    m_cancel->setEnabled(busy);
}

} // namespace sextant::views
