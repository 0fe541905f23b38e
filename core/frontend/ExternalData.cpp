#include "ExternalData.h"

#include "OnnxTensor.h"

#include "core/ir/DType.h"
#include "core/ir/TensorType.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace sextant::frontend {

namespace fs = std::filesystem;

namespace {

/// Closes a file descriptor on every exit path.
class Fd {
public:
    explicit Fd(int fd) : m_fd(fd) {}
    ~Fd() {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }

private:
    int m_fd;
};

/// A non-negative decimal that fits in int64; nullopt for anything else ("", "-1", "0x10", "1e3").
std::optional<int64_t> parseCount(const std::string& text) {
    if (text.empty() || text.size() > 19)
        return std::nullopt;
    int64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return v;
}

/// The payload size the tensor's dims and type call for; nullopt when the type is not one we
/// know (tensorFromProto reports that) or the size overflows.
std::optional<int64_t> expectedBytes(const onnx::TensorProto& tensor) {
    std::optional<ir::DType> dtype = dtypeFromOnnx(tensor.data_type());
    if (!dtype)
        return std::nullopt;
    int64_t bytes = static_cast<int64_t>(ir::dtypeSize(*dtype));
    for (int64_t d : tensor.dims()) {
        if (d < 0)
            return std::nullopt;
        if (d != 0 && bytes > std::numeric_limits<int64_t>::max() / d)
            return std::nullopt;
        bytes *= d;
    }
    return bytes;
}

std::string typeText(const onnx::TensorProto& tensor) {
    std::optional<ir::DType> dtype = dtypeFromOnnx(tensor.data_type());
    if (!dtype)
        return onnxTypeName(tensor.data_type());
    return ir::TensorType::of(*dtype, {tensor.dims().begin(), tensor.dims().end()}).str();
}

/// Checks that `location` stays inside `dir` and returns the full path.
Expected<fs::path> resolveLocation(const std::string& location, const fs::path& dir,
                                   const std::string& what) {
    auto fail = [&](const std::string& why) {
        return makeError(ErrorKind::Invalid,
                         what + ": external data location '" + location + "' " + why);
    };
    if (location.empty())
        return makeError(ErrorKind::Invalid, what + ": external data has no 'location'");
    if (location.find('\0') != std::string::npos)
        return fail("contains a NUL byte");
    fs::path rel(location);
    if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
        return fail("is an absolute path; it must be relative to the model's folder");
    for (const fs::path& part : rel)
        if (part == "..")
            return fail("leaves the model's folder ('..' is not allowed)");
    fs::path full = dir / rel;

    // A symlink inside the folder may still point outside it: compare the resolved paths.
    std::error_code ec;
    fs::path realDir = fs::canonical(dir, ec);
    if (ec)
        return makeError(ErrorKind::Io, what + ": cannot resolve the model's folder '" +
                                            dir.string() + "': " + ec.message());
    fs::path realFull = fs::canonical(full, ec);
    if (ec)
        return makeError(ErrorKind::Io, what + ": cannot open external data file '" +
                                            full.string() + "': " + ec.message());
    auto [dirEnd, fullIt] = std::mismatch(realDir.begin(), realDir.end(), realFull.begin(),
                                          realFull.end());
    if (dirEnd != realDir.end() || fullIt == realFull.end())
        return fail("resolves to '" + realFull.string() + "', outside the model's folder");
    return full;
}

Status readFully(int fd, char* out, int64_t length, int64_t offset, const std::string& file,
                 const std::string& what) {
    while (length > 0) {
        ssize_t got = ::pread(fd, out, static_cast<size_t>(length), static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return makeError(ErrorKind::Io, what + ": cannot read external data file '" + file +
                                                "': " + std::strerror(errno));
        if (got == 0)
            return makeError(ErrorKind::Io, what + ": external data file '" + file +
                                                "' ended early (was it truncated while reading?)");
        out += got;
        length -= got;
        offset += got;
    }
    return {};
}

Status loadGraph(onnx::GraphProto& graph, const std::string& modelDir, int depth);

Status loadAttribute(onnx::AttributeProto& attr, const std::string& nodeName,
                     const std::string& modelDir, int depth) {
    const std::string what = "attribute '" + attr.name() + "' of node '" + nodeName + "'";
    if (attr.has_t())
        SX_TRY(loadExternalTensor(*attr.mutable_t(), modelDir, what));
    for (onnx::TensorProto& t : *attr.mutable_tensors())
        SX_TRY(loadExternalTensor(t, modelDir, what));
    if (attr.has_g())
        SX_TRY(loadGraph(*attr.mutable_g(), modelDir, depth + 1));
    for (onnx::GraphProto& g : *attr.mutable_graphs())
        SX_TRY(loadGraph(g, modelDir, depth + 1));
    return {};
}

Status loadGraph(onnx::GraphProto& graph, const std::string& modelDir, int depth) {
    // Protobuf itself stops nesting at 100 levels; this keeps a hostile file from recursing deep.
    if (depth > 64)
        return makeError(ErrorKind::Invalid,
                         "graph '" + graph.name() + "' is nested more than 64 subgraphs deep");
    for (onnx::TensorProto& t : *graph.mutable_initializer())
        SX_TRY(loadExternalTensor(t, modelDir, "initializer '" + t.name() + "'"));
    for (onnx::NodeProto& n : *graph.mutable_node()) {
        const std::string nodeName = n.name().empty() ? n.op_type() : n.name();
        for (onnx::AttributeProto& a : *n.mutable_attribute())
            SX_TRY(loadAttribute(a, nodeName, modelDir, depth));
    }
    return {};
}

} // namespace

Status loadExternalTensor(onnx::TensorProto& tensor, const std::string& modelDir,
                          const std::string& what) {
    if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
        return {};
    std::string location;
    std::string offsetText, lengthText;
    bool hasLocation = false, hasOffset = false, hasLength = false;
    for (const onnx::StringStringEntryProto& e : tensor.external_data()) {
        if (e.key() == "location") {
            location = e.value();
            hasLocation = true;
        } else if (e.key() == "offset") {
            offsetText = e.value();
            hasOffset = true;
        } else if (e.key() == "length") {
            lengthText = e.value();
            hasLength = true;
        }
        // "checksum" and unknown keys are ignored, as onnxruntime does.
    }
    if (!hasLocation)
        return makeError(ErrorKind::Invalid, what + ": external data has no 'location'");
    std::optional<int64_t> offset = hasOffset ? parseCount(offsetText) : std::optional<int64_t>(0);
    if (!offset)
        return makeError(ErrorKind::Invalid,
                         what + ": external data offset '" + offsetText + "' is not a number");
    std::optional<int64_t> length;
    if (hasLength) {
        length = parseCount(lengthText);
        if (!length)
            return makeError(ErrorKind::Invalid,
                             what + ": external data length '" + lengthText + "' is not a number");
    }

    SX_ASSIGN(fs::path path, resolveLocation(location, fs::path(modelDir), what));
    const std::string file = path.string();
    Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (fd.get() < 0)
        return makeError(ErrorKind::Io, what + ": cannot open external data file '" + file +
                                            "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        return makeError(ErrorKind::Io, what + ": cannot read external data file '" + file +
                                            "': " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        return makeError(ErrorKind::Invalid,
                         what + ": external data file '" + file + "' is not a regular file");
    const int64_t fileSize = st.st_size;
    if (*offset > fileSize)
        return makeError(ErrorKind::Invalid, what + ": external data offset " +
                                                 std::to_string(*offset) + " is past the end of '" +
                                                 file + "' (" + std::to_string(fileSize) +
                                                 " bytes)");
    if (!length)
        length = fileSize - *offset;
    if (*length > fileSize - *offset)
        return makeError(ErrorKind::Invalid,
                         what + ": external data at offset " + std::to_string(*offset) +
                             " with length " + std::to_string(*length) + " reaches past the end of '" +
                             file + "' (" + std::to_string(fileSize) + " bytes)");
    // Check the size against the tensor before reading, so a wrong header costs no I/O.
    std::optional<int64_t> expected = expectedBytes(tensor);
    if (expected && *expected != *length)
        return makeError(ErrorKind::Invalid,
                         what + ": external data has " + std::to_string(*length) +
                             " bytes, expected " + std::to_string(*expected) + " for " +
                             typeText(tensor));
    // tensorFromProto reports unknown types; protobuf strings stop at 2 GiB.
    if (*length >= std::numeric_limits<int>::max())
        return makeError(ErrorKind::Unsupported,
                         what + ": external data of " + std::to_string(*length) +
                             " bytes is too large (tensors must be under 2 GiB)");

    std::string* raw = tensor.mutable_raw_data();
    raw->resize(static_cast<size_t>(*length));
    SX_TRY(readFully(fd.get(), raw->data(), *length, *offset, file, what));
    tensor.clear_external_data();
    tensor.set_data_location(onnx::TensorProto::DEFAULT);
    return {};
}

Status loadExternalData(onnx::ModelProto& model, const std::string& modelPath) {
    if (!model.has_graph())
        return {};
    fs::path dir = fs::path(modelPath).parent_path();
    if (dir.empty())
        dir = ".";
    return loadGraph(*model.mutable_graph(), dir.string(), 0);
}

} // namespace sextant::frontend
