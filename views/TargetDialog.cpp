#include "TargetDialog.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QVBoxLayout>

namespace sextant::views {

namespace {

QString bytesText(uint64_t bytes) {
    if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
        return QStringLiteral("%1 GiB").arg(bytes >> 30);
    if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
        return QStringLiteral("%1 MiB").arg(bytes >> 20);
    if (bytes >= 1024 && bytes % 1024 == 0)
        return QStringLiteral("%1 KiB").arg(bytes >> 10);
    return QStringLiteral("%1 B").arg(bytes);
}

} // namespace

QString describeTarget(const backend::Target& t) {
    return QStringLiteral("%1 · %2 cores · %3 SRAM per core · %4 GHz · %5")
        .arg(QString::fromStdString(t.name))
        .arg(t.numCores)
        .arg(bytesText(t.sramBytes))
        .arg(t.clockGhz)
        .arg(QString::fromStdString(std::string(ir::npuLayoutName(t.layout))));
}

TargetDialog::TargetDialog(const backend::Target& current, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Target"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("The NPU the model is compiled and simulated for (fields: docs/target-format.md). "
                                "Applying recompiles."),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    m_edit = new QPlainTextEdit(this);
    m_edit->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_edit->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_edit->setMinimumSize(520, 460);
    layout->addWidget(m_edit, 1);

    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);

    auto* buttons = new QDialogButtonBox(this);
    QPushButton* load = buttons->addButton(tr("Load…"), QDialogButtonBox::ActionRole);
    m_save = buttons->addButton(tr("Save as…"), QDialogButtonBox::ActionRole);
    QPushButton* defaults = buttons->addButton(tr("Defaults (npu-a)"), QDialogButtonBox::ResetRole);
    m_apply = buttons->addButton(tr("Apply and recompile"), QDialogButtonBox::AcceptRole);
    buttons->addButton(QDialogButtonBox::Cancel);
    layout->addWidget(buttons);

    connect(m_edit, &QPlainTextEdit::textChanged, this, &TargetDialog::check);
    connect(load, &QPushButton::clicked, this, &TargetDialog::loadFile);
    connect(m_save, &QPushButton::clicked, this, &TargetDialog::saveFile);
    connect(defaults, &QPushButton::clicked, this,
            [this] { setText(QString::fromStdString(backend::targetToFileJson(backend::defaultTarget()))); });
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (m_target)
            accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    setText(QString::fromStdString(backend::targetToFileJson(current)));
}

void TargetDialog::setText(const QString& json) {
    m_edit->setPlainText(json); // textChanged -> check()
    check();
}

QString TargetDialog::text() const { return m_edit->toPlainText(); }

QString TargetDialog::status() const { return m_status->text(); }

void TargetDialog::check() {
    Expected<backend::Target> parsed = backend::parseTarget(text().toStdString(), "target");
    if (parsed.ok()) {
        m_target = std::move(parsed).value();
        m_status->setStyleSheet(QStringLiteral("color: #1e7b34;"));
        m_status->setText(describeTarget(*m_target));
    } else {
        m_target.reset();
        m_status->setStyleSheet(QStringLiteral("color: #b3261e;"));
        m_status->setText(QString::fromStdString(parsed.error().message));
    }
    m_apply->setEnabled(m_target.has_value());
    m_save->setEnabled(m_target.has_value());
}

void TargetDialog::loadFile() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Load a target"), QString(), tr("Target descriptions (*.json)"));
    if (path.isEmpty())
        return;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        m_status->setStyleSheet(QStringLiteral("color: #b3261e;"));
        m_status->setText(tr("cannot read '%1': %2").arg(path, f.errorString()));
        return;
    }
    setText(QString::fromUtf8(f.readAll()));
}

void TargetDialog::saveFile() {
    if (!m_target)
        return;
    const QString path = QFileDialog::getSaveFileName(this, tr("Save the target"),
                                                      QString::fromStdString(m_target->name) + QStringLiteral(".json"),
                                                      tr("Target descriptions (*.json)"));
    if (path.isEmpty())
        return;
    // QSaveFile writes beside the file and renames over it on commit: a failed save leaves the
    // file that was there as it was.
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text().toUtf8()) < 0 || !f.commit()) {
        m_status->setStyleSheet(QStringLiteral("color: #b3261e;"));
        m_status->setText(tr("cannot write '%1': %2").arg(path, f.errorString()));
    }
}

} // namespace sextant::views
