#include "MemoryPage.h"

#include "MemoryView.h"
#include "SramView.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace sextant::views {

QString sramSummary(const SramMapData& map) {
    if (map.cores.empty())
        return QObject::tr("no SRAM plan");
    const SramCoreLines* highest = &map.cores.front();
    for (const SramCoreLines& c : map.cores)
        if (c.peak > highest->peak)
            highest = &c;
    QString text = QObject::tr("SRAM %1 cores × %2 · highest peak %3 (core %4, lower bound %5)")
                       .arg(map.cores.size())
                       .arg(formatBytes(map.capacity), formatBytes(highest->peak))
                       .arg(highest->core)
                       .arg(formatBytes(highest->lowerBound));
    text += QObject::tr(" · DRAM traffic %1 (compulsory %2)")
                .arg(formatBytes(map.dramTrafficBytes), formatBytes(map.compulsoryBytes));
    if (map.onChipTensors > 0)
        text += QObject::tr(" · kept on chip %n tensor(s), %1, %2 of DMA saved", nullptr, map.onChipTensors)
                    .arg(formatBytes(map.onChipBytes), formatBytes(map.savedDmaBytes));
    else
        text += QObject::tr(" · nothing kept on chip");
    return text + QObject::tr(" · %n buffer(s)", nullptr, static_cast<int>(map.blocks.size()));
}

MemoryPage::MemoryPage(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);

    m_levelBox = new QComboBox(this);
    m_levelBox->addItem(tr("DRAM"));
    m_levelBox->addItem(tr("SRAM"));
    m_levelBox->setToolTip(tr("Memory level: the DRAM plan, or each core's on-chip SRAM"));
    m_coreBox = new QComboBox(this);
    m_coreBox->setToolTip(tr("SRAM of one core, or every core in stacked bands"));
    m_showWeights = new QCheckBox(tr("Show weights"), this);
    m_fitToPeak = new QCheckBox(tr("Fit to peak"), this);
    m_fitToPeak->setToolTip(tr("Scale each core's band to the highest peak instead of the whole SRAM"));
    m_summary = new QLabel(tr("no run yet"), this);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_summary->setWordWrap(true);

    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Level"), this));
    bar->addWidget(m_levelBox);
    bar->addWidget(m_coreBox);
    bar->addWidget(m_fitToPeak);
    bar->addWidget(m_showWeights);
    bar->addStretch(1);
    layout->addLayout(bar);
    layout->addWidget(m_summary);

    m_stack = new QStackedWidget(this);
    m_memory = new MemoryView(m_stack);
    m_sram = new SramView(m_stack);
    m_stack->addWidget(m_memory);
    m_stack->addWidget(m_sram);
    layout->addWidget(m_stack, 1);
    fillCores(0);
    setLevel(Level::Dram);

    connect(m_levelBox, &QComboBox::currentIndexChanged, this,
            [this](int index) { setLevel(index == 1 ? Level::Sram : Level::Dram); });
    connect(m_coreBox, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (index >= 0)
            m_sram->setCore(m_coreBox->itemData(index).toInt());
    });
    connect(m_showWeights, &QCheckBox::toggled, this,
            [this](bool on) { m_memory->setShown(on, true, true); });
    connect(m_fitToPeak, &QCheckBox::toggled, m_sram, &SramView::setFitToPeak);
    connect(m_memory, &MemoryView::bufferClicked, this,
            [this](int, const QString& node) { emit nodeActivated(node); });
    connect(m_sram, &SramView::sramBufferClicked, this, &MemoryPage::sramBufferActivated);
}

void MemoryPage::fillCores(int numCores) {
    const int previous = m_coreBox->count() > 0 ? m_coreBox->currentData().toInt() : -1;
    const QSignalBlocker block(m_coreBox);
    m_coreBox->clear();
    m_coreBox->addItem(tr("all cores"), -1);
    for (int c = 0; c < numCores; ++c)
        m_coreBox->addItem(tr("core %1").arg(c), c);
    const int index = m_coreBox->findData(previous < numCores ? previous : -1);
    m_coreBox->setCurrentIndex(index < 0 ? 0 : index);
    m_sram->setCore(m_coreBox->currentData().toInt());
}

void MemoryPage::setSnapshot(const std::shared_ptr<const CompileSnapshot>& snapshot) {
    m_snapshot = snapshot;
    m_memory->setMap(std::shared_ptr<const MemoryMapData>(snapshot, &snapshot->memory));
    m_memory->setShown(m_showWeights->isChecked(), true, true);
    fillCores(static_cast<int>(snapshot->sram.cores.size()));
    m_sram->setMap(std::shared_ptr<const SramMapData>(snapshot, &snapshot->sram));
    updateSummary();
}

void MemoryPage::setLevel(Level level) {
    m_level = level;
    const bool sram = level == Level::Sram;
    {
        const QSignalBlocker block(m_levelBox);
        m_levelBox->setCurrentIndex(sram ? 1 : 0);
    }
    m_stack->setCurrentWidget(sram ? static_cast<QWidget*>(m_sram) : m_memory);
    m_coreBox->setVisible(sram);
    m_fitToPeak->setVisible(sram);
    m_showWeights->setVisible(!sram);
    updateSummary();
}

bool MemoryPage::setLevel(const QString& name) {
    const QString n = name.toLower();
    if (n != QLatin1String("dram") && n != QLatin1String("sram"))
        return false;
    setLevel(n == QLatin1String("sram") ? Level::Sram : Level::Dram);
    return true;
}

bool MemoryPage::setSramCore(int core) {
    const int index = m_coreBox->findData(core);
    if (index < 0)
        return false;
    m_coreBox->setCurrentIndex(index); // currentIndexChanged tells the view
    m_sram->setCore(core);
    return true;
}

void MemoryPage::setFitToPeak(bool fit) {
    m_fitToPeak->setChecked(fit); // toggled tells the view
}

void MemoryPage::updateSummary() {
    if (!m_snapshot) {
        m_summary->setText(tr("no run yet"));
        return;
    }
    if (!m_snapshot->loweringError.empty()) {
        m_summary->setText(tr("no memory plan: the graph was not lowered (%1)")
                               .arg(QString::fromStdString(m_snapshot->loweringError)));
        return;
    }
    m_summary->setText(m_level == Level::Sram ? sramSummary(m_snapshot->sram) : memorySummary(m_snapshot->memory));
}

QString MemoryPage::summaryText() const {
    return m_summary->text();
}

void MemoryPage::highlightNode(const QString& node) {
    m_memory->highlightNode(node);
    m_sram->highlightNode(node);
}

} // namespace sextant::views
