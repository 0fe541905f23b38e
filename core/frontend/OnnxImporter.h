#pragma once

// ONNX model import: one .onnx file → one ir::Graph with its weights as constants.

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <memory>
#include <optional>
#include <string>

namespace sextant::frontend {

/// Supported range of the ai.onnx opset. Ops whose semantics changed between versions (Softmax at
/// 13) get the model's opset as the int attribute "_opset" so their kernels can follow it; the
/// versions of every op up to kMaxOnnxOpset are in OnnxOpVersions.h, and docs/onnx-versions.md
/// says what the versions since opset 22 changed for Sextant's ops.
inline constexpr int64_t kMinOnnxOpset = 7;
inline constexpr int64_t kMaxOnnxOpset = 28;

/// Imports the ONNX model at `path`.
///
/// Initializers and Constant nodes become graph constants (weights are moved out of the parsed
/// protobuf, never copied again); graph inputs that are initializers are constants, not inputs;
/// node lists out of order are sorted (stably). Unnamed nodes are named `<OpType>_<index in file>`
/// and a repeated name gets `_1`, `_2`, ...; that name is the node's provenance origin. Each node
/// is then verified and its output types inferred, in order; symbolic input dims stay symbolic.
/// Errors name the file, node, attribute or tensor concerned; an op missing from the op table is
/// `unsupported op 'Foo' (opset 13) at node 'bar'`. Never crashes on bad input.
Expected<std::unique_ptr<ir::Graph>> importOnnx(const std::string& path);

/// The op of the table an ai.onnx op that is not in it imports as, or nullopt: Upsample (opsets
/// 7 and 9) is the opset-10 Resize it was replaced by, the same computation (asymmetric
/// coordinates, nearest rounding down), so the importer writes a Resize node of the same name.
std::optional<ir::OpKind> importedAs(const std::string& domain, const std::string& opType);

} // namespace sextant::frontend
