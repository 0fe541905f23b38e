#include "Tables.h"

#include <QHeaderView>
#include <QTableView>

namespace sextant::views {

QTableView* makeTable(QAbstractItemModel* model, QWidget* parent) {
    auto* view = new QTableView(parent);
    view->setModel(model);
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setSelectionMode(QAbstractItemView::SingleSelection);
    view->verticalHeader()->hide();
    view->verticalHeader()->setDefaultSectionSize(22);
    view->setShowGrid(false);
    view->setAlternatingRowColors(true);
    view->horizontalHeader()->setHighlightSections(false);
    return view;
}

} // namespace sextant::views
