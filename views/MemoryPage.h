#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

#include <memory>

class QCheckBox;
class QLabel;

namespace sextant::views {

class MemoryView;

/// The Memory tab: the summary line (peak, lower bound, fragmentation) and "Show weights" above the
/// DRAM map of the run (MemoryView).
class MemoryPage : public QWidget {
    Q_OBJECT
public:
    explicit MemoryPage(QWidget* parent = nullptr);

    /// Shows `snapshot`'s memory map, or why there is none when the graph was not lowered.
    void setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot);
    QString summaryText() const;
    MemoryView* memoryView() const { return m_memory; }

public slots:
    /// Outlines the buffers `node` reads or writes.
    void highlightNode(const QString& node);

signals:
    /// The user clicked a buffer; `node` is its first user.
    void nodeActivated(const QString& node);

private:
    MemoryView* m_memory = nullptr;
    QLabel* m_summary = nullptr;
    QCheckBox* m_showWeights = nullptr;
};

} // namespace sextant::views
