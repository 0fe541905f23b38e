#pragma once

// ONNX external data: tensors whose bytes live in a separate file next to the model
// (TensorProto.data_location = EXTERNAL with the keys location / offset / length). Used by the
// importer right after parsing, so everything downstream sees ordinary raw_data.

#include "core/ir/Error.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace sextant::frontend {

/// Reads the payload of every external tensor in `model` (initializers, tensor attributes, also
/// inside subgraphs) into its raw_data and marks it as stored inline. `modelPath` is the .onnx
/// file; `location` is resolved relative to its folder. Each payload is read with one pread
/// straight into the protobuf's buffer (one copy, file → memory).
///
/// Fails, naming the tensor and the file, when: the location key is missing or empty, the path is
/// absolute, contains `..` or leads (through symlinks) out of the model's folder, the file is
/// missing or not a regular file, offset/length are not decimal numbers or reach past the end of
/// the file, or length disagrees with the tensor's dims and type.
Status loadExternalData(onnx::ModelProto& model, const std::string& modelPath);

/// The same for one tensor; `what` names it in errors ("initializer 'conv1.w'"), `modelDir` is
/// the folder locations are relative to.
Status loadExternalTensor(onnx::TensorProto& tensor, const std::string& modelDir,
                          const std::string& what);

} // namespace sextant::frontend
