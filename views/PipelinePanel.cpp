#include "PipelinePanel.h"

#include "PassListModel.h"
#include "Tables.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QTableView>

namespace sextant::views {

PipelinePanel::PipelinePanel(QWidget* parent) : QSplitter(Qt::Vertical, parent) {
    m_passModel = new PassListModel(this);
    m_ruleModel = new RuleStatsModel(this);
    // The optimisation level, as sextant-cli's -O0..-O3: -O3 adds the rules that trade accuracy.
    auto* levelBar = new QWidget(this);
    auto* levelLayout = new QHBoxLayout(levelBar);
    levelLayout->setContentsMargins(4, 2, 4, 2);
    m_level = new QComboBox(levelBar);
    m_level->addItem(tr("-O0  shape inference only"), 0);
    m_level->addItem(tr("-O1  clean-ups"), 1);
    m_level->addItem(tr("-O2  fusion, layout, precision"), 2);
    m_level->addItem(tr("-O3  + rules that trade accuracy"), 3);
    m_level->setCurrentIndex(2);
    levelLayout->addWidget(new QLabel(tr("Level"), levelBar));
    levelLayout->addWidget(m_level, 1);
    addWidget(levelBar);
    m_passView = makeTable(m_passModel, this);
    m_passView->horizontalHeader()->setSectionResizeMode(PassListModel::PassColumn,
                                                         QHeaderView::Stretch);
    for (int c = 1; c < PassListModel::ColumnCount; ++c)
        m_passView->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_ruleView = makeTable(m_ruleModel, this);
    m_ruleView->setSelectionMode(QAbstractItemView::NoSelection);
    m_ruleView->horizontalHeader()->setSectionResizeMode(RuleStatsModel::RuleColumn,
                                                         QHeaderView::Stretch);
    for (int c = 1; c < RuleStatsModel::ColumnCount; ++c)
        m_ruleView->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    addWidget(m_passView);
    addWidget(m_ruleView);
    setStretchFactor(0, 0);
    setStretchFactor(1, 3);
    setStretchFactor(2, 2);
    connect(m_level, qOverload<int>(&QComboBox::currentIndexChanged), this,
            &PipelinePanel::switchesChanged);
    connect(m_ruleModel, &RuleStatsModel::disabledChanged, this, &PipelinePanel::switchesChanged);
    connect(m_passView->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) {
                if (current.isValid())
                    emit passChosen(current.row());
            });
}

void PipelinePanel::setPipeline(const passes::PipelineResult& pipeline) {
    m_passModel->setRows(passRows(pipeline));
    m_ruleModel->setStats(pipeline.stats);
}

int PipelinePanel::rowOf(const QString& passId) const {
    const std::vector<PassRow>& rows = m_passModel->rows();
    for (size_t i = 0; i < rows.size(); ++i)
        if (QString::fromStdString(rows[i].passId) == passId)
            return static_cast<int>(i);
    return -1;
}

void PipelinePanel::setCurrentPass(int row) {
    if (m_passView->currentIndex().row() == row)
        return;
    const QSignalBlocker quiet(this); // the caller shows the pass
    m_passView->setCurrentIndex(m_passModel->index(row, 0));
}

int PipelinePanel::optLevel() const {
    return m_level->currentData().toInt();
}

bool PipelinePanel::setOptLevel(int level) {
    const int index = m_level->findData(level);
    if (index < 0)
        return false;
    const QSignalBlocker quiet(m_level); // the caller compiles when it is ready
    m_level->setCurrentIndex(index);
    return true;
}

const std::set<std::string>& PipelinePanel::disabledRules() const {
    return m_ruleModel->disabledRules();
}

} // namespace sextant::views
