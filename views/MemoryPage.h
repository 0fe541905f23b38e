#pragma once

#include "CompileSnapshot.h"

#include <QWidget>

#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QStackedWidget;

namespace sextant::views {

class MemoryView;
class SramView;

/// "SRAM 8 cores × 512.0 KiB · highest peak 64.0 KiB (core 0) · DRAM traffic 210.0 KiB (compulsory
/// 24.0 KiB) · kept on chip 3 tensors, 48.0 KiB, 96.0 KiB of DMA saved · 120 buffers"
QString sramSummary(const SramMapData& map);

/// The Memory tab: a level switch (DRAM / SRAM) and, for SRAM, a core selector (one core, or
/// every core stacked) and "Fit to peak"; for DRAM "Show weights". Under them the summary line
/// of the level shown (peak, lower bound, fragmentation or traffic) and its map: MemoryView for
/// DRAM, SramView for SRAM.
class MemoryPage : public QWidget {
    Q_OBJECT
public:
    enum class Level { Dram, Sram };

    explicit MemoryPage(QWidget* parent = nullptr);

    /// Shows `snapshot`'s memory maps, or why there are none when the graph was not lowered.
    void setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot);
    QString summaryText() const;
    MemoryView* memoryView() const { return m_memory; }
    SramView* sramView() const { return m_sram; }

    void setLevel(Level level);
    /// "dram" or "sram" (any case); false for anything else.
    bool setLevel(const QString& name);
    Level level() const { return m_level; }
    /// The SRAM core shown: 0..cores-1, or -1 for every core stacked. False if the run's target
    /// has no such core (the selection stays).
    bool setSramCore(int core);
    /// The "Fit to peak" switch of the SRAM level.
    void setFitToPeak(bool fit);

public slots:
    /// Outlines the buffers `node` reads or writes, at both levels.
    void highlightNode(const QString& node);

signals:
    /// The user clicked a DRAM buffer; `node` is its first user.
    void nodeActivated(const QString& node);
    /// The user clicked an SRAM buffer (a Program::sramBuffers id); `node` is the first IR node
    /// of its Task.
    void sramBufferActivated(int sramBufferId, const QString& node);

private:
    void updateSummary();
    void fillCores(int numCores);

    std::shared_ptr<const CompileSnapshot> m_snapshot;
    Level m_level = Level::Dram;
    QStackedWidget* m_stack = nullptr;
    MemoryView* m_memory = nullptr;
    SramView* m_sram = nullptr;
    QLabel* m_summary = nullptr;
    QComboBox* m_levelBox = nullptr;
    QComboBox* m_coreBox = nullptr;
    QCheckBox* m_showWeights = nullptr;
    QCheckBox* m_fitToPeak = nullptr;
};

} // namespace sextant::views
