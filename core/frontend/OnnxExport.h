#pragma once

// Writing an ir::Graph (any pass's snapshot) back out as an ONNX model, in one of two forms
// (docs/onnx-export.md):
//   as is     the graph exactly as the compiler holds it: its own ops in the "sextant" domain
//             with their attributes (an ElementwiseGroup's steps as the string list "body"),
//             each node's precision, view mark and provenance, and each value's layout, in
//             doc strings. Netron opens it; onnxruntime does not run the sextant ops.
//   standard  every op is a standard ONNX op at the model's own opset, so onnxruntime runs it:
//             the fused ops decomposed back (FusedConv to Conv, Add and the activation,
//             Attention to MatMul and Softmax, an ElementwiseGroup to its steps, Int8Conv to
//             QLinearConv, ...), layout conversions as Identity (the IR's tensors are logical,
//             so a TransData changes no value), and ops newer than the opset (LayerNormalization,
//             HardSwish) written as the ops they are made of. With `npuF16`, a node the
//             precision pass put in f16 also reads (and a vector node writes) its float tensors
//             rounded to f16, by Cast pairs, so onnxruntime computes what the NPU does.
// Weights are written once, as raw little-endian initializers. The same graph and options give
// the same bytes.

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <cstdint>
#include <map>
#include <string>

namespace sextant::frontend {

/// The version of the export's conventions (metadata keys, doc strings, decompositions), written
/// as the model's metadata "sextant.export_version".
inline constexpr int kOnnxExportVersion = 1;

enum class OnnxExportForm : uint8_t { AsIs, Standard };

struct OnnxExportOptions {
    OnnxExportForm form = OnnxExportForm::AsIs;
    /// Standard form only: round to f16 where the NPU computes in f16 (see above).
    bool npuF16 = false;
    /// The opsets of the model the graph was imported from, by domain ("" = ai.onnx): the graph's
    /// nodes are in that opset's forms (modelOpsetImports reads them).
    std::map<std::string, int64_t> opsets;
    std::string snapshot; ///< the pass the graph is the snapshot after, as metadata
    std::string source;   ///< the model file it came from, as metadata
};

/// The opset_import entries of the ONNX model at `path`, by domain ("" for ai.onnx), read without
/// parsing the graph. Errors name the file.
Expected<std::map<std::string, int64_t>> modelOpsetImports(const std::string& path);

/// The serialized ModelProto. Errors (naming the node) for what the chosen form cannot express:
/// in the standard form, an op that does not exist at the model's opset and that the exporter
/// cannot write as older ops; a model over protobuf's 2 GiB.
Expected<std::string> exportOnnx(const ir::Graph& graph, const OnnxExportOptions& options);

} // namespace sextant::frontend
