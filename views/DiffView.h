#pragma once

#include <QPlainTextEdit>

#include <string>

namespace sextant::views {

/// The IR diff tab: the printed IR of two snapshots as an inline line diff, added lines on green,
/// removed lines on red, context grey, with old/new line numbers in a monospace font. Long runs of
/// unchanged lines fold into one "… N unchanged lines …" marker unless full context is on.
class DiffView : public QPlainTextEdit {
    Q_OBJECT
public:
    explicit DiffView(QWidget* parent = nullptr);

    /// Shows the diff from `before` (named `nameBefore`) to `after`.
    void setTexts(const std::string& before, const std::string& after, const QString& nameBefore,
                  const QString& nameAfter);
    /// Lines of context kept around each change; -1 shows every line.
    void setContextLines(int lines);
    int contextLines() const { return m_context; }
    /// Number of added and removed lines in the shown diff (for the tab title and tests).
    int addedLines() const { return m_added; }
    int removedLines() const { return m_removed; }

private:
    void render();

    std::string m_before, m_after;
    QString m_nameBefore, m_nameAfter;
    int m_context = 4;
    int m_added = 0;
    int m_removed = 0;
};

} // namespace sextant::views
