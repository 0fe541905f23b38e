#pragma once

// The --shape NAME=DIMS option shared by `import`, `compile`, `run` and `bisect`: collects the
// requested input shapes; runtime::specialiseInputs (core/runtime/ModelInputs.h) applies them.

#include "core/ir/Specialize.h"

#include <string>

namespace sextant::cli {

/// Parses one --shape value into `shapes`. Returns an empty string on success, else the error
/// message, prefixed with `command` ("compile: ...").
std::string addShapeOption(const std::string& command, const std::string& spec,
                           ir::InputShapes& shapes);

} // namespace sextant::cli
