#pragma once

#include "Error.h"
#include "Graph.h"
#include "Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace sextant::ir {

/// Rebuilds a graph from the text printGraph wrote. Constants printed as a digest take their data
/// from `weights` (keyed by value name); a missing weight or one whose digest, dtype or shape
/// differs is an error. Output types are taken from the text as printed (no inference is run).
/// Errors are ErrorKind::Parse with "line L:C: " and what was expected. `//` starts a comment.
/// print(parse(print(g))) == print(g) exactly.
Expected<std::unique_ptr<Graph>> parseGraph(std::string_view text,
                                            const std::map<std::string, Tensor>* weights = nullptr);

} // namespace sextant::ir
