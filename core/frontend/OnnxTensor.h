#pragma once

// Conversions between ONNX TensorProto and ir::Tensor, shared by the importer, TensorProtoIO and
// the sample generator. This header exposes the onnx protobuf types, so only frontend code and
// tools that write ONNX files include it; everyone else uses OnnxImporter.h / TensorProtoIO.h.

#include "core/ir/Error.h"
#include "core/ir/Tensor.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>

namespace sextant::frontend {

/// The IR dtype for an ONNX TensorProto::DataType value; nullopt for types the IR has no
/// equivalent of (strings, complex, 16-bit and unsigned wide integers).
std::optional<ir::DType> dtypeFromOnnx(int32_t onnxType);
/// The ONNX TensorProto::DataType value for an IR dtype.
int32_t dtypeToOnnx(ir::DType dtype);
/// "FLOAT", "INT64", ... for error messages; "type N" for values the enum does not know.
std::string onnxTypeName(int32_t onnxType);

/// Converts a TensorProto into a Tensor. Large payloads (raw_data and the float/double/int64/int32
/// arrays) are moved out of `proto`, not copied, so a model's weights are copied only once: from
/// the file into protobuf memory. `proto` is left without its data. `what` names the tensor in
/// error messages ("initializer 'conv1.w'").
Expected<ir::Tensor> tensorFromProto(onnx::TensorProto& proto, const std::string& what);

/// Fills `out` with `tensor` as raw_data (little-endian), with the given name.
void tensorToProto(const ir::Tensor& tensor, const std::string& name, onnx::TensorProto& out);

} // namespace sextant::frontend
