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

    /// Shows snapshot `row` of `pipeline` against row - 1 (row 0, the input, against itself). A
    /// graph of more than kDiffWhenShownAbove nodes is printed and compared only once the tab is
    /// shown (printing and comparing 20,000 nodes takes seconds): until then the title says only
    /// whether the pass changed anything.
    void showPass(const passes::PipelineResult& pipeline, int row);
    /// The tab's title for the shown diff: "IR diff", or "IR diff (+A −R)" after a pass.
    const QString& title() const { return m_title; }
    DiffView* diffView() const { return m_diff; }

    /// Above this many nodes the diff waits until the tab is shown.
    static constexpr size_t kDiffWhenShownAbove = 2000;

signals:
    void titleChanged(const QString& title);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void compare();

    passes::Snapshot m_before;
    passes::Snapshot m_after;
    int m_row = -1;
    bool m_stale = false; ///< m_before/m_after are not what the view shows yet
    DiffView* m_diff = nullptr;
    QCheckBox* m_fullDiff = nullptr;
    QString m_title;
};

} // namespace sextant::views
