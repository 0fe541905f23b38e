#pragma once

// Which version of an ai.onnx operator a model's opset means: ONNX gives an op a new version at
// some opsets (Relu at 1, 6, 13 and 14), and a model importing opset N uses, for each op, the
// latest version at or below N. The list comes from ONNX's own operator table
// (scripts/onnx-op-versions.py writes OnnxOpVersions.inc); docs/onnx-versions.md says what each
// version since opset 22 changed for the ops Sextant has, and why the importer accepts it.

#include <optional>
#include <span>
#include <string_view>

namespace sextant::frontend {

/// The versions ONNX defines `op` at, ascending; empty when ONNX does not define it (another
/// domain, or an op ONNX has not heard of).
std::span<const int> onnxOpHistory(std::string_view op);

/// The version of `op` that `opset` means (the latest at or below it); nothing when the op does
/// not exist yet at `opset` or ONNX does not define it.
std::optional<int> onnxOpVersion(std::string_view op, int64_t opset);

/// The versions of `op` that Sextant's kernel does not implement although the op is in its table
/// (Attention-24 and -25: the kernel is Attention-23's); empty for every other op. The importer
/// refuses a node whose opset means one of them, naming node, op, version and opset, and
/// `sextant-cli ops` does not list them.
std::span<const int> unimplementedOpVersions(std::string_view op);

} // namespace sextant::frontend
