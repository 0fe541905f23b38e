#pragma once

// File > Target: the target description (docs/target-format.md) as editable JSON, checked as the
// user types by the same parser `sextant-cli compile --target` uses, so an edit that would be
// rejected says why (the field, or the line and column of a syntax error) before it is applied.

#include "core/backend/Target.h"

#include <QDialog>

#include <optional>

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace sextant::views {

/// One line on a target: "npu-a · 8 cores · 512 KiB SRAM · 1 GHz · NC1HWC0".
QString describeTarget(const backend::Target& target);

class TargetDialog : public QDialog {
    Q_OBJECT
public:
    /// Opens on `current` (as targetToJson writes it).
    explicit TargetDialog(const backend::Target& current, QWidget* parent = nullptr);

    /// Replaces the text (as typing would): it is checked at once.
    void setText(const QString& json);
    QString text() const;
    /// The target the text describes; empty while the text is not a valid target.
    const std::optional<backend::Target>& target() const { return m_target; }
    /// What the status line says: the target's summary, or why the text is not a target.
    QString status() const;

private:
    void check();
    void loadFile();
    void saveFile();

    QPlainTextEdit* m_edit = nullptr;
    QLabel* m_status = nullptr;
    QPushButton* m_apply = nullptr;
    QPushButton* m_save = nullptr;
    std::optional<backend::Target> m_target;
};

} // namespace sextant::views
