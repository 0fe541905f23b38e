#pragma once

#include "core/ir/Error.h"
#include "core/ir/Tensor.h"

#include <string>
#include <vector>

namespace sextant::runtime {

/// Reads a PaddleOCR-style character list (one character per line) into a CTC alphabet:
/// index 0 is the blank, then the file's characters in order, then a space.
Expected<std::vector<std::string>> loadCtcAlphabet(const std::string& keysPath);

/// Greedy CTC decoding of per-timestep class scores shaped [N, T, C] (or [T, C]): the best class
/// per timestep, repeats merged, blanks dropped. One string per batch item. Fails when C is not the
/// alphabet's size, naming both.
Expected<std::vector<std::string>> ctcGreedyDecode(const ir::Tensor& scores,
                                                   const std::vector<std::string>& alphabet);

} // namespace sextant::runtime
