#pragma once

// Reading and writing single tensors as ONNX TensorProto files: the input_N.pb / output_N.pb
// layout of the ONNX backend tests, which is how reference inputs and onnxruntime outputs ship
// next to a model.

#include "core/ir/Error.h"
#include "core/ir/Tensor.h"

#include <string>
#include <vector>

namespace sextant::frontend {

/// Loads one serialized onnx.TensorProto. Errors name the file (missing, empty, not a tensor,
/// unsupported dtype, data size not matching the dims). A tensor stored as external data is read
/// from its file, resolved relative to this file's folder and confined to it, as for a model.
Expected<ir::Tensor> loadTensorProto(const std::string& path);

/// Loads `dir`/`prefix`_0.pb, `prefix`_1.pb, ... in order, stopping at the first index that does
/// not exist. `prefix` is "input" or "output". Fails if `prefix`_0.pb is missing.
Expected<std::vector<ir::Tensor>> loadTestDataSet(const std::string& dir, const std::string& prefix);

/// A test data set with the name each file gives its tensor ("" where the file gives none), so a
/// caller can check the files against the model's inputs.
struct TestDataSet {
    std::vector<ir::Tensor> tensors;
    std::vector<std::string> names;
};

/// loadTestDataSet, keeping the tensors' names.
Expected<TestDataSet> loadNamedTestDataSet(const std::string& dir, const std::string& prefix);

/// Writes `tensor` as a TensorProto named `name` (raw_data, little-endian) to `path`.
Status saveTensorProto(const ir::Tensor& tensor, const std::string& name, const std::string& path);

} // namespace sextant::frontend
