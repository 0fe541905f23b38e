#pragma once

#include "core/ir/Specialize.h"

#include <QString>

#include <optional>

class QWidget;

namespace sextant::views {

/// File > Input shapes: asks for concrete dims of the inputs with symbolic ones (NAME=DIMS
/// separated by spaces, as sextant --shape takes them), offering `current`. Empty when the user
/// cancelled or the text is not a shape list (then `error` says why).
std::optional<ir::InputShapes> askInputShapes(QWidget* parent, const ir::InputShapes& current,
                                              QString* error);

} // namespace sextant::views
