#pragma once

// The --shape NAME=DIMS option shared by `import`, `compile` and `run`: collects the requested
// input shapes and specialises an imported graph with them (core/ir/Specialize.h does the work).

#include "core/ir/Graph.h"
#include "core/ir/Specialize.h"

#include <string>

namespace sextant::cli {

/// Parses one --shape value into `shapes`. Returns an empty string on success, else the error
/// message, prefixed with `command` ("compile: ...").
std::string addShapeOption(const std::string& command, const std::string& spec,
                           ir::InputShapes& shapes);

/// With `shapes` given: specialises `graph` to them and checks that no tensor then exceeds the
/// importer's size limit (frontend/SizeLimits.h). Without, when `requireStatic` is set and the
/// graph has symbolic input dims: an error saying which input needs --shape and how to write it.
Status applyShapeOptions(ir::Graph& graph, const ir::InputShapes& shapes, bool requireStatic);

/// For `run` and `bisect`, which compile a model to run it: the --shape options if any, else
/// the shapes of the tensors in `inputsDir` (input_0.pb, ...) for a graph with symbolic input
/// dims; without either, the error saying which input needs --shape.
Status applyShapesOrInputs(ir::Graph& graph, const ir::InputShapes& shapes, const std::string& inputsDir);

} // namespace sextant::cli
