#pragma once

#include "Tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace sextant::ir {

class Graph;

/// An attribute value. Subgraphs (If/Loop bodies) are shared, immutable once built.
using Attribute = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, Tensor,
                               std::shared_ptr<const Graph>>;

/// Attributes by name; std::map keeps printing and hashing deterministic.
using AttributeMap = std::map<std::string, Attribute>;

} // namespace sextant::ir
