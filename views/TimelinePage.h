#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

#include <memory>

class QLabel;

namespace sextant::views {

class TimelineView;

/// The Timeline tab: a summary line (Tasks, cores used, cycles, critical path, the database) and
/// the legend with "Critical path" above the scrollable TimelineView.
class TimelinePage : public QWidget {
    Q_OBJECT
public:
    explicit TimelinePage(QWidget* parent = nullptr);

    /// Shows `snapshot`'s simulated Tasks and critical path, or why nothing was simulated.
    void setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot);
    QString summaryText() const;
    TimelineView* timelineView() const { return m_timeline; }

public slots:
    /// Outlines the Tasks that execute `node`.
    void highlightNode(const QString& node);

signals:
    /// The user clicked a Task; `node` is the first IR node of the final graph it executes.
    void taskActivated(const QString& node);

private:
    TimelineView* m_timeline = nullptr;
    QLabel* m_summary = nullptr;
};

} // namespace sextant::views
