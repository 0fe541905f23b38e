#pragma once

#include "MemoryMap.h"

#include <QWidget>

#include <memory>

namespace sextant::views {

/// "arena peak 12.0 KiB · lower bound 10.5 KiB (fragmentation 12.5%) · weights 24.0 KiB · I/O 3.2 KiB"
QString memorySummary(const MemoryMapData& map);
/// 1536 -> "1.5 KiB".
QString formatBytes(uint64_t bytes);

/// The memory tab: every DRAM buffer as a rectangle, x = lifetime (first writer start to last reader
/// end, in cycles), y = address. Hover shows the tensor, size and offset; clicking a buffer emits
/// bufferClicked; the buffers of the selected node are outlined. Dashed lines mark the arena's
/// peak and its lower bound.
class MemoryView : public QWidget {
    Q_OBJECT
public:
    explicit MemoryView(QWidget* parent = nullptr);

    void setMap(std::shared_ptr<const MemoryMapData> map);
    /// Which buffer kinds to draw (weights are off by default: they live the whole run).
    void setShown(bool weights, bool io, bool intermediates);
    /// Outlines the buffers that node `node` reads or writes.
    void highlightNode(const QString& node);
    /// The block under widget position `pos`, or nullptr.
    const MemoryBlock* blockAt(const QPoint& pos) const;
    /// Widget rectangle of a drawn block (for tests).
    QRectF blockRect(const MemoryBlock& block) const;
    int shownCount() const { return static_cast<int>(m_shown.size()); }

signals:
    /// The user clicked the buffer with this id.
    void bufferClicked(int bufferId, const QString& firstNode);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;

private:
    void refresh();
    QRectF plotRect() const;

    std::shared_ptr<const MemoryMapData> m_map;
    std::vector<const MemoryBlock*> m_shown;
    bool m_weights = false, m_io = true, m_intermediates = true;
    uint64_t m_addrLo = 0, m_addrHi = 1;
    QString m_highlight;
};

} // namespace sextant::views
