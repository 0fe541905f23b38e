#include "TestUtil.h"

#include "core/frontend/OnnxTensor.h"
#include "core/frontend/TensorProtoIO.h"

#include <gtest/gtest.h>

namespace sextant::frontend {
namespace {

using namespace test;

TEST(TensorProtoIO, LoadsMnistTestData) {
    SEXTANT_REQUIRE_SHARED("mnist test data");
    auto inputs = loadTestDataSet(mnistData().string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    ASSERT_EQ(inputs->size(), 1u);
    EXPECT_EQ((*inputs)[0].type().str(), "f32[1,1,28,28]");
    auto outputs = loadTestDataSet(mnistData().string(), "output");
    ASSERT_TRUE(outputs.ok()) << outputs.error().message;
    ASSERT_EQ(outputs->size(), 1u);
    EXPECT_EQ((*outputs)[0].type().str(), "f32[1,10]");
    // onnxruntime's answer for this digit is 7.
    std::vector<double> v = (*outputs)[0].toDoubles();
    EXPECT_EQ(std::max_element(v.begin(), v.end()) - v.begin(), 7);
}

TEST(TensorProtoIO, RoundTripsEveryDType) {
    fs::path dir = tempDir();
    std::vector<ir::Tensor> tensors;
    tensors.push_back(ir::Tensor::fromVector<float>({2, 2}, {1.5f, -2.0f, 0.0f, 3.25f}));
    tensors.push_back(ir::Tensor::fromVector<double>({3}, {1e-300, -7.0, 2.5}));
    tensors.push_back(ir::Tensor::fromVector<int64_t>({2}, {-9000000000LL, 4}));
    tensors.push_back(ir::Tensor::fromVector<int32_t>({1, 2}, {-5, 6}));
    tensors.push_back(ir::Tensor::fromVector<int8_t>({2}, {-128, 127}));
    tensors.push_back(ir::Tensor::fromVector<uint8_t>({2}, {0, 255}));
    tensors.push_back(ir::Tensor::fromVector<int16_t>({2}, {-32768, 32767}));
    tensors.push_back(ir::Tensor::fromVector<uint16_t>({2}, {0, 65535}));
    tensors.push_back(ir::Tensor::fromVector<uint32_t>({2}, {7, 4294967295u}));
    tensors.push_back(ir::Tensor::fromVector<uint64_t>({2}, {3, 18446744073709551615ull}));
    ir::Tensor half(ir::DType::F16, {3});
    half.set(0, 1.0);
    half.set(1, -0.5);
    half.set(2, 65504.0);
    tensors.push_back(half);
    ir::Tensor flags(ir::DType::Bool, {2});
    flags.set(1, 1.0);
    tensors.push_back(flags);
    tensors.push_back(ir::Tensor::scalar(42.0));
    tensors.push_back(ir::Tensor(ir::DType::F32, {0, 3}));

    for (size_t i = 0; i < tensors.size(); ++i) {
        fs::path file = dir / ("input_" + std::to_string(i) + ".pb");
        ASSERT_TRUE(saveTensorProto(tensors[i], "t" + std::to_string(i), file.string()).ok());
    }
    auto loaded = loadTestDataSet(dir.string(), "input");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    ASSERT_EQ(loaded->size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i)
        EXPECT_TRUE((*loaded)[i].identical(tensors[i])) << "tensor " << i << ": "
                                                        << tensors[i].type().str();
}

TEST(TensorProtoIO, ReadsTypedFields) {
    fs::path dir = tempDir();
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(3);
    for (float v : {1.0f, 2.0f, -3.0f})
        p.add_float_data(v);
    writeBytes(dir / "f.pb", p.SerializeAsString());
    auto f = loadTensorProto((dir / "f.pb").string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(f->toDoubles(), (std::vector<double>{1, 2, -3}));

    onnx::TensorProto q;
    q.set_data_type(onnx::TensorProto::INT64);
    q.add_dims(2);
    q.add_int64_data(5);
    q.add_int64_data(-6);
    writeBytes(dir / "i.pb", q.SerializeAsString());
    auto i = loadTensorProto((dir / "i.pb").string());
    ASSERT_TRUE(i.ok()) << i.error().message;
    EXPECT_EQ(i->dtype(), ir::DType::I64);
    EXPECT_EQ(i->toDoubles(), (std::vector<double>{5, -6}));

    onnx::TensorProto b;
    b.set_data_type(onnx::TensorProto::BOOL);
    b.add_dims(3);
    for (int v : {1, 0, 1})
        b.add_int32_data(v);
    writeBytes(dir / "b.pb", b.SerializeAsString());
    auto bl = loadTensorProto((dir / "b.pb").string());
    ASSERT_TRUE(bl.ok()) << bl.error().message;
    EXPECT_EQ(bl->toDoubles(), (std::vector<double>{1, 0, 1}));

    // ONNX's 16-bit integers travel in int32_data, its unsigned 32- and 64-bit ones in uint64_data.
    onnx::TensorProto s16;
    s16.set_data_type(onnx::TensorProto::INT16);
    s16.add_dims(2);
    s16.add_int32_data(-300);
    s16.add_int32_data(301);
    writeBytes(dir / "s16.pb", s16.SerializeAsString());
    auto i16 = loadTensorProto((dir / "s16.pb").string());
    ASSERT_TRUE(i16.ok()) << i16.error().message;
    EXPECT_EQ(i16->dtype(), ir::DType::I16);
    EXPECT_EQ(i16->toDoubles(), (std::vector<double>{-300, 301}));

    onnx::TensorProto w;
    w.set_data_type(onnx::TensorProto::UINT64);
    w.add_dims(2);
    w.add_uint64_data(1);
    w.add_uint64_data(18446744073709551615ull);
    writeBytes(dir / "w.pb", w.SerializeAsString());
    auto u64 = loadTensorProto((dir / "w.pb").string());
    ASSERT_TRUE(u64.ok()) << u64.error().message;
    ASSERT_EQ(u64->dtype(), ir::DType::U64);
    EXPECT_EQ(u64->data<uint64_t>()[1], 18446744073709551615ull);

    onnx::TensorProto u;
    u.set_data_type(onnx::TensorProto::UINT32);
    u.add_dims(1);
    u.add_uint64_data(4000000000u);
    writeBytes(dir / "u.pb", u.SerializeAsString());
    auto u32 = loadTensorProto((dir / "u.pb").string());
    ASSERT_TRUE(u32.ok()) << u32.error().message;
    EXPECT_EQ(u32->dtype(), ir::DType::U32);
    EXPECT_EQ(u32->toDoubles(), (std::vector<double>{4000000000.0}));
}

TEST(TensorProtoIO, BadFilesAreClearErrors) {
    fs::path dir = tempDir();
    auto missing = loadTensorProto((dir / "nope.pb").string());
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("nope.pb"), std::string::npos);

    writeBytes(dir / "empty.pb", "");
    auto empty = loadTensorProto((dir / "empty.pb").string());
    ASSERT_FALSE(empty.ok());
    EXPECT_EQ(empty.error().message, "tensor file '" + (dir / "empty.pb").string() + "' is empty");

    onnx::TensorProto p;
    p.set_name("x");
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(4);
    p.add_float_data(1.0f);
    writeBytes(dir / "short.pb", p.SerializeAsString());
    auto shortData = loadTensorProto((dir / "short.pb").string());
    ASSERT_FALSE(shortData.ok());
    EXPECT_NE(shortData.error().message.find("float_data has 1 elements, expected 4"),
              std::string::npos)
        << shortData.error().message;

    onnx::TensorProto s;
    s.set_data_type(onnx::TensorProto::STRING);
    s.add_dims(1);
    s.add_string_data("hello");
    writeBytes(dir / "string.pb", s.SerializeAsString());
    auto str = loadTensorProto((dir / "string.pb").string());
    ASSERT_FALSE(str.ok());
    EXPECT_NE(str.error().message.find("STRING"), std::string::npos) << str.error().message;

    writeBytes(dir / "junk.pb", "\xff\xff\xff\xff\xff");
    auto junk = loadTensorProto((dir / "junk.pb").string());
    ASSERT_FALSE(junk.ok());
    EXPECT_NE(junk.error().message.find("junk.pb"), std::string::npos);
}

TEST(TensorProtoIO, ReadsExternalData) {
    // A tensor file whose payload is in a side file, as `onnx.save_tensor` writes large test data.
    fs::path dir = tempDir();
    const std::vector<float> values = {0.5f, -1.0f, 2.0f, 8.0f};
    std::string payload(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    writeBytes(dir / "x.bin", "PAD!" + payload); // at offset 4
    onnx::TensorProto p;
    p.set_name("x");
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(2);
    p.add_dims(2);
    p.set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&p](const std::string& key, const std::string& value) {
        onnx::StringStringEntryProto* e = p.add_external_data();
        e->set_key(key);
        e->set_value(value);
    };
    entry("location", "x.bin");
    entry("offset", "4");
    entry("length", std::to_string(payload.size()));
    writeBytes(dir / "input_0.pb", p.SerializeAsString());
    auto loaded = loadTestDataSet(dir.string(), "input");
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ((*loaded)[0].type().str(), "f32[2,2]");
    EXPECT_EQ((*loaded)[0].toDoubles(), (std::vector<double>{0.5, -1, 2, 8}));

    // The side file missing, or named outside the tensor file's folder: an error naming it.
    fs::remove(dir / "x.bin");
    auto missing = loadTensorProto((dir / "input_0.pb").string());
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("x.bin"), std::string::npos) << missing.error().message;
    p.mutable_external_data(0)->set_value("../x.bin");
    writeBytes(dir / "escape.pb", p.SerializeAsString());
    auto escape = loadTensorProto((dir / "escape.pb").string());
    ASSERT_FALSE(escape.ok());
    EXPECT_NE(escape.error().message.find("../x.bin"), std::string::npos) << escape.error().message;
}

TEST(TensorProtoIO, AnUnknownDataTypeIsNamedOnce) {
    // It used to say "has data type type 999".
    fs::path dir = tempDir();
    onnx::TensorProto p;
    p.set_name("x");
    p.set_data_type(999);
    p.add_dims(1);
    writeBytes(dir / "odd.pb", p.SerializeAsString());
    auto loaded = loadTensorProto((dir / "odd.pb").string());
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(loaded.error().message.find("has data type 999 (not an ONNX data type)"), std::string::npos)
        << loaded.error().message;
}

TEST(TensorProtoIO, ANewerOnnxTypeIsNamedAsUnsupported) {
    // FLOAT8E4M3FN (17) is newer than the onnx.proto Sextant is built with: it is ONNX, just not
    // supported.
    fs::path dir = tempDir();
    onnx::TensorProto p;
    p.set_name("w");
    p.set_data_type(17);
    p.add_dims(2);
    p.set_raw_data(std::string("\x21\x43", 2));
    writeBytes(dir / "f8.pb", p.SerializeAsString());
    auto loaded = loadTensorProto((dir / "f8.pb").string());
    ASSERT_FALSE(loaded.ok());
    EXPECT_NE(loaded.error().message.find("has data type FLOAT8E4M3FN, which is not supported"), std::string::npos)
        << loaded.error().message;
}

// INT4 and UINT4 (22, 21) travel two to a byte, the lower index in the lower nibble; an odd count
// leaves the last high nibble unused. They load one per byte (int4 sign-extended) and save packed.
TEST(TensorProtoIO, FourBitTensorsUnpackAndPackBack) {
    fs::path dir = tempDir();
    onnx::TensorProto p;
    p.set_name("w");
    p.set_data_type(22);
    p.add_dims(5);
    p.set_raw_data(std::string("\x21\x8F\x07", 3)); // 1, 2, -1, -8, 7
    writeBytes(dir / "int4.pb", p.SerializeAsString());
    auto loaded = loadTensorProto((dir / "int4.pb").string());
    ASSERT_TRUE(loaded.ok()) << loaded.error().message;
    EXPECT_EQ(loaded->dtype(), ir::DType::I4);
    EXPECT_EQ(loaded->toDoubles(), (std::vector<double>{1, 2, -1, -8, 7}));
    onnx::TensorProto back;
    tensorToProto(*loaded, "w", back);
    EXPECT_EQ(back.data_type(), 22);
    EXPECT_EQ(back.raw_data(), std::string("\x21\x8F\x07", 3));

    onnx::TensorProto u;
    u.set_name("u");
    u.set_data_type(21);
    u.add_dims(3);
    u.add_int32_data(0xF0); // 0, 15
    u.add_int32_data(0x09); // 9
    writeBytes(dir / "uint4.pb", u.SerializeAsString());
    auto typed = loadTensorProto((dir / "uint4.pb").string());
    ASSERT_TRUE(typed.ok()) << typed.error().message;
    EXPECT_EQ(typed->dtype(), ir::DType::U4);
    EXPECT_EQ(typed->toDoubles(), (std::vector<double>{0, 15, 9}));

    p.set_raw_data(std::string("\x21\x8F", 2)); // 5 elements need 3 bytes
    writeBytes(dir / "short.pb", p.SerializeAsString());
    auto shortOne = loadTensorProto((dir / "short.pb").string());
    ASSERT_FALSE(shortOne.ok());
    EXPECT_NE(shortOne.error().message.find("raw_data has 2 bytes, expected 3"), std::string::npos)
        << shortOne.error().message;
}

TEST(TensorProtoIO, TestDataSetNeedsIndexZero) {
    fs::path dir = tempDir();
    auto none = loadTestDataSet(dir.string(), "input");
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().message, "test data folder '" + dir.string() + "' has no input_0.pb");
    auto noDir = loadTestDataSet((dir / "absent").string(), "output");
    ASSERT_FALSE(noDir.ok());
    EXPECT_NE(noDir.error().message.find("does not exist"), std::string::npos);
}

} // namespace
} // namespace sextant::frontend
