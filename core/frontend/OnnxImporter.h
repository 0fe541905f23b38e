#pragma once

// ONNX model import: one .onnx file → one ir::Graph with its weights as constants.

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <memory>
#include <string>

namespace sextant::frontend {

/// Supported range of the ai.onnx opset. Ops whose semantics changed between versions (Softmax at
/// 13) get the model's opset as the int attribute "_opset" so their kernels can follow it.
inline constexpr int64_t kMinOnnxOpset = 7;
inline constexpr int64_t kMaxOnnxOpset = 21;

/// Imports the ONNX model at `path`.
///
/// Initializers and Constant nodes become graph constants (weights are moved out of the parsed
/// protobuf, never copied again); graph inputs that are initializers are constants, not inputs;
/// node lists out of order are sorted; nodes with empty or duplicate names get stable unique names
/// (`<OpType>_<index in file>`), recorded as their provenance origin. Types are inferred at the end.
/// Errors name the file, node, attribute or tensor concerned; an op missing from the op table is
/// `unsupported op 'Foo' (opset 13) at node 'bar'`. Never crashes on bad input.
Expected<std::unique_ptr<ir::Graph>> importOnnx(const std::string& path);

} // namespace sextant::frontend
