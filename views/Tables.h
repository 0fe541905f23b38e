#pragma once

class QAbstractItemModel;
class QTableView;
class QWidget;

namespace sextant::views {

/// A table as the window's lists look: whole rows selected one at a time, no row numbers or grid,
/// 22-pixel rows in alternating colours.
QTableView* makeTable(QAbstractItemModel* model, QWidget* parent);

} // namespace sextant::views
