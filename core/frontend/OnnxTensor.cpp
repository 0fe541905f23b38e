#include "OnnxTensor.h"

#include "core/ir/TensorType.h"

#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>

namespace sextant::frontend {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; this importer adopts it without byte swapping");

using onnx::TensorProto;

namespace {
// ONNX's UINT4 and INT4 (IR 10, opset 21), newer than the onnx.proto Sextant builds against.
constexpr int32_t kOnnxUint4 = 21;
constexpr int32_t kOnnxInt4 = 22;
} // namespace

std::optional<ir::DType> dtypeFromOnnx(int32_t onnxType) {
    switch (onnxType) {
    case TensorProto::FLOAT: return ir::DType::F32;
    case TensorProto::DOUBLE: return ir::DType::F64;
    case TensorProto::FLOAT16: return ir::DType::F16;
    case TensorProto::BFLOAT16: return ir::DType::BF16;
    case TensorProto::INT64: return ir::DType::I64;
    case TensorProto::INT32: return ir::DType::I32;
    case TensorProto::INT8: return ir::DType::I8;
    case TensorProto::UINT8: return ir::DType::U8;
    case TensorProto::BOOL: return ir::DType::Bool;
    case TensorProto::INT16: return ir::DType::I16;
    case TensorProto::UINT16: return ir::DType::U16;
    case TensorProto::UINT32: return ir::DType::U32;
    case TensorProto::UINT64: return ir::DType::U64;
    case kOnnxUint4: return ir::DType::U4;
    case kOnnxInt4: return ir::DType::I4;
    default: return std::nullopt;
    }
}

int32_t dtypeToOnnx(ir::DType dtype) {
    switch (dtype) {
    case ir::DType::F64: return TensorProto::DOUBLE;
    case ir::DType::F32: return TensorProto::FLOAT;
    case ir::DType::F16: return TensorProto::FLOAT16;
    case ir::DType::BF16: return TensorProto::BFLOAT16;
    case ir::DType::I64: return TensorProto::INT64;
    case ir::DType::I32: return TensorProto::INT32;
    case ir::DType::I8: return TensorProto::INT8;
    case ir::DType::U8: return TensorProto::UINT8;
    case ir::DType::Bool: return TensorProto::BOOL;
    case ir::DType::I16: return TensorProto::INT16;
    case ir::DType::U16: return TensorProto::UINT16;
    case ir::DType::U32: return TensorProto::UINT32;
    case ir::DType::U64: return TensorProto::UINT64;
    case ir::DType::U4: return kOnnxUint4;
    case ir::DType::I4: return kOnnxInt4;
    }
    return TensorProto::UNDEFINED;
}

std::string onnxTypeName(int32_t onnxType) {
    if (TensorProto::DataType_IsValid(onnxType))
        return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(onnxType));
    // Types newer than the onnx.proto Sextant is built against (Debian's onnx 1.12): named, so a
    // model that uses one is told which type Sextant lacks rather than that it is not ONNX.
    switch (onnxType) {
    case 17: return "FLOAT8E4M3FN";
    case 18: return "FLOAT8E4M3FNUZ";
    case 19: return "FLOAT8E5M2";
    case 20: return "FLOAT8E5M2FNUZ";
    case 21: return "UINT4";
    case 22: return "INT4";
    case 23: return "FLOAT4E2M1";
    default: return std::to_string(onnxType) + " (not an ONNX data type)";
    }
}

namespace {

bool aligned8(const void* p) { return reinterpret_cast<uintptr_t>(p) % 8 == 0; }

/// Takes the elements of a repeated field without copying them: the field is swapped into a
/// heap object that the tensor keeps alive.
template <typename T>
ir::Tensor adoptRepeated(ir::DType dtype, std::vector<int64_t> shape,
                         google::protobuf::RepeatedField<T>* field) {
    auto owner = std::make_shared<google::protobuf::RepeatedField<T>>();
    owner->Swap(field);
    const auto* bytes = reinterpret_cast<const std::byte*>(owner->data());
    if (!aligned8(bytes))
        return ir::Tensor::copyOf(dtype, std::move(shape),
                                  {bytes, static_cast<size_t>(owner->size()) * sizeof(T)});
    return ir::Tensor::view(dtype, std::move(shape), std::move(owner), bytes);
}

std::string shapeText(ir::DType dtype, const std::vector<int64_t>& dims) {
    return ir::TensorType::of(dtype, dims).str();
}

/// The element type of a tensor whose data this importer can read (inline, unsegmented).
Expected<ir::DType> readableDtype(const TensorProto& proto, const std::string& what) {
    if (proto.data_location() == TensorProto::EXTERNAL)
        return makeError(ErrorKind::Unsupported,
                         what + " uses external data, which is not supported yet");
    if (proto.has_segment())
        return makeError(ErrorKind::Unsupported, what + " is segmented, which is not supported");
    std::optional<ir::DType> dtype = dtypeFromOnnx(proto.data_type());
    if (!dtype)
        return makeError(ErrorKind::Unsupported,
                         what + " has data type " + onnxTypeName(proto.data_type()) +
                             ", which is not supported");
    return *dtype;
}

/// The element count of `dims`, each non-negative, guarded against overflow before anything
/// multiplies it.
Expected<int64_t> elementCount(const std::vector<int64_t>& dims, const std::string& what) {
    const int64_t limit = std::numeric_limits<int64_t>::max() / 16;
    int64_t numel = 1;
    for (int64_t d : dims) {
        if (d < 0)
            return makeError(ErrorKind::Invalid, what + " has a negative dimension " +
                                                     std::to_string(d));
        if (d != 0 && numel > limit / d)
            return makeError(ErrorKind::Invalid, what + " has too many elements");
        numel *= d;
    }
    return numel;
}

bool isFourBit(ir::DType dtype) { return dtype == ir::DType::I4 || dtype == ir::DType::U4; }

/// 4-bit elements from `packed` bytes, two to a byte, the lower index in the lower nibble (an odd
/// count leaves the last high nibble unused): one per byte, sign-extended for int4.
ir::Tensor unpackFourBit(ir::DType dtype, std::vector<int64_t> dims, int64_t numel,
                         const std::function<uint8_t(int64_t)>& packed) {
    ir::Tensor t(dtype, std::move(dims));
    for (int64_t i = 0; i < numel; ++i) {
        const int nibble = (packed(i / 2) >> (i % 2 ? 4 : 0)) & 0xF;
        t.set(i, dtype == ir::DType::I4 && nibble >= 8 ? nibble - 16 : nibble);
    }
    return t;
}

/// A tensor adopting raw_data (viewed in place when 8-byte aligned, else copied).
Expected<ir::Tensor> fromRawData(TensorProto& proto, ir::DType dtype, std::vector<int64_t> dims, int64_t numel,
                                 const std::string& what) {
    const size_t expected = isFourBit(dtype) ? static_cast<size_t>((numel + 1) / 2)
                                             : static_cast<size_t>(numel) * ir::dtypeSize(dtype);
    if (proto.raw_data().size() != expected)
        return makeError(ErrorKind::Invalid,
                         what + ": raw_data has " + std::to_string(proto.raw_data().size()) +
                             " bytes, expected " + std::to_string(expected) + " for " +
                             shapeText(dtype, dims));
    if (isFourBit(dtype)) {
        const std::string& raw = proto.raw_data();
        return unpackFourBit(dtype, std::move(dims), numel,
                             [&raw](int64_t b) { return static_cast<uint8_t>(raw[static_cast<size_t>(b)]); });
    }
    std::shared_ptr<std::string> owner(proto.release_raw_data());
    const auto* bytes = reinterpret_cast<const std::byte*>(owner->data());
    if (!aligned8(bytes))
        return ir::Tensor::copyOf(dtype, std::move(dims), {bytes, expected});
    return ir::Tensor::view(dtype, std::move(dims), std::move(owner), bytes);
}

/// A tensor from the typed repeated field its type travels in (float_data, int32_data...).
Expected<ir::Tensor> fromTypedData(TensorProto& proto, ir::DType dtype, std::vector<int64_t> dims, int64_t numel,
                                   const std::string& what) {
    const std::string typeText = shapeText(dtype, dims);
    auto countError = [&](const char* field, int count) {
        return makeError(ErrorKind::Invalid, what + ": " + field + " has " +
                                                 std::to_string(count) + " elements, expected " +
                                                 std::to_string(numel) + " for " + typeText);
    };
    switch (dtype) {
    case ir::DType::F32:
        if (proto.float_data_size() != numel)
            return countError("float_data", proto.float_data_size());
        return adoptRepeated(dtype, std::move(dims), proto.mutable_float_data());
    case ir::DType::F64:
        if (proto.double_data_size() != numel)
            return countError("double_data", proto.double_data_size());
        return adoptRepeated(dtype, std::move(dims), proto.mutable_double_data());
    case ir::DType::I64:
        if (proto.int64_data_size() != numel)
            return countError("int64_data", proto.int64_data_size());
        return adoptRepeated(dtype, std::move(dims), proto.mutable_int64_data());
    case ir::DType::I32:
        if (proto.int32_data_size() != numel)
            return countError("int32_data", proto.int32_data_size());
        return adoptRepeated(dtype, std::move(dims), proto.mutable_int32_data());
    case ir::DType::F16:
    case ir::DType::BF16: {
        // 16-bit floats travel as their bit patterns, one per int32_data element.
        if (proto.int32_data_size() != numel)
            return countError("int32_data", proto.int32_data_size());
        ir::Tensor t(dtype, std::move(dims));
        uint16_t* out = t.mutableData<uint16_t>();
        for (int64_t i = 0; i < numel; ++i)
            out[i] = static_cast<uint16_t>(proto.int32_data(static_cast<int>(i)));
        return t;
    }
    case ir::DType::I8:
    case ir::DType::U8:
    case ir::DType::I16:
    case ir::DType::U16:
    case ir::DType::Bool: {
        if (proto.int32_data_size() != numel)
            return countError("int32_data", proto.int32_data_size());
        ir::Tensor t(dtype, std::move(dims));
        for (int64_t i = 0; i < numel; ++i)
            t.set(i, proto.int32_data(static_cast<int>(i)));
        return t;
    }
    case ir::DType::I4:
    case ir::DType::U4: {
        // Two 4-bit elements per int32_data entry, packed as in raw_data (one byte each).
        const int64_t bytes = (numel + 1) / 2;
        if (proto.int32_data_size() != bytes)
            return makeError(ErrorKind::Invalid, what + ": int32_data has " + std::to_string(proto.int32_data_size()) +
                                                     " elements, expected " + std::to_string(bytes) +
                                                     " (two 4-bit values each) for " + typeText);
        return unpackFourBit(dtype, std::move(dims), numel, [&proto](int64_t b) {
            return static_cast<uint8_t>(proto.int32_data(static_cast<int>(b)));
        });
    }
    case ir::DType::U32:
    case ir::DType::U64: {
        // Unsigned 32- and 64-bit integers travel in uint64_data.
        if (proto.uint64_data_size() != numel)
            return countError("uint64_data", proto.uint64_data_size());
        ir::Tensor t(dtype, std::move(dims));
        for (int64_t i = 0; i < numel; ++i) {
            const uint64_t v = proto.uint64_data(static_cast<int>(i));
            if (dtype == ir::DType::U64)
                t.mutableData<uint64_t>()[i] = v;
            else
                t.mutableData<uint32_t>()[i] = static_cast<uint32_t>(v);
        }
        return t;
    }
    }
    return makeError(ErrorKind::Unsupported, what + " has an unsupported data type");
}

} // namespace

Expected<ir::Tensor> tensorFromProto(TensorProto& proto, const std::string& what) {
    SX_ASSIGN(const ir::DType dtype, readableDtype(proto, what));
    std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
    SX_ASSIGN(const int64_t numel, elementCount(dims, what));
    if (numel == 0)
        return ir::Tensor(dtype, std::move(dims));
    if (proto.has_raw_data())
        return fromRawData(proto, dtype, std::move(dims), numel, what);
    return fromTypedData(proto, dtype, std::move(dims), numel, what);
}

void tensorToProto(const ir::Tensor& tensor, const std::string& name, TensorProto& out) {
    out.Clear();
    out.set_name(name);
    for (int64_t d : tensor.shape())
        out.add_dims(d);
    out.set_data_type(dtypeToOnnx(tensor.dtype()));
    if (isFourBit(tensor.dtype())) { // two to a byte, the lower index in the lower nibble
        std::string packed(static_cast<size_t>((tensor.numel() + 1) / 2), '\0');
        for (int64_t i = 0; i < tensor.numel(); ++i)
            packed[static_cast<size_t>(i / 2)] |=
                static_cast<char>((static_cast<int>(tensor.at(i)) & 0xF) << (i % 2 ? 4 : 0));
        out.set_raw_data(std::move(packed));
        return;
    }
    out.set_raw_data(reinterpret_cast<const char*>(tensor.bytes()), tensor.byteSize());
}

} // namespace sextant::frontend
