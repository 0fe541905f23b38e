#pragma once

#include <QObject>
#include <QString>

class QLabel;
class QProgressBar;
class QPushButton;
class QStatusBar;

namespace sextant::views {

/// The window's status bar: the status line, and while something long runs (a compile, a
/// bisection) a progress bar and Cancel.
class StatusPanel : public QObject {
    Q_OBJECT
public:
    /// Puts the line, the bar and Cancel into `bar`.
    explicit StatusPanel(QStatusBar* bar);

    QString text() const;
    /// Shows (or hides) the progress bar and Cancel; `indeterminate`: busy with no percentage.
    void setBusy(bool busy, bool indeterminate = false);

public slots:
    void setText(const QString& text);
    void setProgress(int percent);
    /// A compile's progress: the percentage on the bar, the stage as the status line.
    void showProgress(int percent, const QString& stage);

signals:
    /// The user pressed Cancel.
    void cancelRequested();

private:
    QLabel* m_text = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
};

} // namespace sextant::views
