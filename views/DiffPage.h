#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

class QCheckBox;

namespace sextant::views {

class DiffView;

/// The IR diff tab: a pipeline snapshot's printed IR against the one before it (DiffView), with
/// "Show every line" to turn the folding of unchanged lines off.
class DiffPage : public QWidget {
    Q_OBJECT
public:
    explicit DiffPage(QWidget* parent = nullptr);

    /// Shows snapshot `row` of `pipeline` against row - 1 (row 0, the input, against itself).
    void showPass(const passes::PipelineResult& pipeline, int row);
    /// The tab's title for the shown diff: "IR diff", or "IR diff (+A −R)" after a pass.
    const QString& title() const { return m_title; }
    DiffView* diffView() const { return m_diff; }

signals:
    void titleChanged(const QString& title);

private:
    DiffView* m_diff = nullptr;
    QCheckBox* m_fullDiff = nullptr;
    QString m_title;
};

} // namespace sextant::views
