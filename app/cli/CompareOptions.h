#pragma once

// The options `run` and `bisect` share to feed a model and judge its outputs: --inputs DIR,
// --expected DIR, --atol A, --rtol R and --shape NAME=DIMS. One parser so both commands spell and
// check them the same way (as PipelineOptions does for the pipeline options).

#include "Commands.h"

#include "core/ir/Specialize.h"

#include <optional>
#include <string>

namespace sextant::cli {

struct CompareOptions {
    std::string inputsDir, expectedDir;
    std::optional<double> atol, rtol;
    ir::InputShapes shapes;
};

/// If args[i] is one of the options above, consumes it and its value (advancing `i`) and returns
/// true; `error` is set (prefixed with `command`) when the value is missing or malformed.
bool parseCompareOption(const std::string& command, Args args, size_t& i, CompareOptions& out,
                        std::string& error);

} // namespace sextant::cli
