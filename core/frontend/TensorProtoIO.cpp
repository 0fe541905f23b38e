#include "TensorProtoIO.h"

#include "ExternalData.h"
#include "OnnxTensor.h"
#include "ProtoFile.h"
#include "core/ir/FileWrite.h"

#include <filesystem>
#include <fstream>

namespace sextant::frontend {

namespace {

Expected<ir::Tensor> loadTensorProto(const std::string& path, std::string* name) {
    onnx::TensorProto proto;
    SX_TRY(parseProtoFile(path, "tensor file", proto));
    std::string what = "tensor file '" + path + "'";
    if (!proto.name().empty())
        what += " (tensor '" + proto.name() + "')";
    if (proto.data_type() == onnx::TensorProto::UNDEFINED)
        return makeError(ErrorKind::Parse, what + " has no data type: not a TensorProto");
    if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
        // Like an initializer's: the payload lives in a file named relative to this one's folder.
        const std::string dir = std::filesystem::path(path).parent_path().string();
        SX_TRY(loadExternalTensor(proto, dir.empty() ? "." : dir, what));
    }
    if (name)
        *name = proto.name();
    return tensorFromProto(proto, what);
}

} // namespace

Expected<ir::Tensor> loadTensorProto(const std::string& path) { return loadTensorProto(path, nullptr); }

Expected<TestDataSet> loadNamedTestDataSet(const std::string& dir, const std::string& prefix) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return makeError(ErrorKind::Io, "test data folder '" + dir + "' does not exist");
    TestDataSet set;
    for (size_t i = 0;; ++i) {
        fs::path file = fs::path(dir) / (prefix + "_" + std::to_string(i) + ".pb");
        if (!fs::exists(file, ec))
            break;
        std::string name;
        SX_ASSIGN(ir::Tensor t, loadTensorProto(file.string(), &name));
        set.tensors.push_back(std::move(t));
        set.names.push_back(std::move(name));
    }
    if (set.tensors.empty())
        return makeError(ErrorKind::Io, "test data folder '" + dir + "' has no " + prefix +
                                            "_0.pb");
    return set;
}

Expected<std::vector<ir::Tensor>> loadTestDataSet(const std::string& dir, const std::string& prefix) {
    SX_ASSIGN(TestDataSet set, loadNamedTestDataSet(dir, prefix));
    return std::move(set.tensors);
}

Status saveTensorProto(const ir::Tensor& tensor, const std::string& name, const std::string& path) {
    onnx::TensorProto proto;
    tensorToProto(tensor, name, proto);
    std::string bytes;
    proto.SerializeToString(&bytes);
    return writeFileAtomically(path, bytes, "tensor file");
}

} // namespace sextant::frontend
