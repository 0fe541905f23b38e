#include "SelectionModel.h"

namespace sextant::views {

void SelectionModel::select(const QString& node) {
    if (node == m_node)
        return;
    m_node = node;
    emit nodeSelected(m_node);
}

} // namespace sextant::views
