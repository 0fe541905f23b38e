#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/runtime/Compare.h"
#include "core/runtime/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <cctype>
#include <cmath>
#include <numeric>
#include <ostream>

namespace sextant::runtime {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(SEXTANT_SHARED_DIR) / "models";
const fs::path kMnist = kModels / "ort-examples" / "mnist.onnx";
const fs::path kMnistData = kModels / "ort-examples" / "test_data" / "mnist" / "test_data_set_0";
const fs::path kSamples = fs::path(SEXTANT_SOURCE_DIR) / "samples";

/// Imports mnist and runs it on its test data in `compute`; compares to onnxruntime's output with
/// the default tolerance of `sextant-cli run --reference`.
void checkMnist(ir::DType compute) {
    auto graph = frontend::importOnnx(kMnist.string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    auto inputs = frontend::loadTestDataSet(kMnistData.string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    auto expected = frontend::loadTestDataSet(kMnistData.string(), "output");
    ASSERT_TRUE(expected.ok()) << expected.error().message;

    auto outputs = runReference(**graph, *inputs, compute);
    ASSERT_TRUE(outputs.ok()) << outputs.error().message;
    ASSERT_EQ(outputs->size(), 1u);
    EXPECT_EQ((*outputs)[0].dtype(), compute);
    TensorComparison c = compareTensors("Plus214_Output_0", (*outputs)[0], (*expected)[0], 1e-4, 1e-3);
    EXPECT_TRUE(c.pass) << formatComparison(c);
    EXPECT_EQ(c.argmaxGot, 7);
    EXPECT_EQ(c.argmaxExpected, 7);
    EXPECT_GT(c.cosine, 0.999999);
}

TEST(ReferenceExecutor, MnistFloat64MatchesOnnxRuntime) {
    if (!fs::exists(kMnist))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping mnist reference run";
    checkMnist(ir::DType::F64);
}

TEST(ReferenceExecutor, MnistFloat32MatchesOnnxRuntime) {
    if (!fs::exists(kMnist))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping mnist reference run";
    checkMnist(ir::DType::F32);
}

TEST(ReferenceExecutor, SampleModelGivesAProbabilityDistribution) {
    auto graph = frontend::importOnnx((kSamples / "residual_cnn.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    auto inputs = frontend::loadTestDataSet((kSamples / "residual_cnn").string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;

    std::map<std::string, ir::Tensor> values;
    auto f64 = runReference(**graph, *inputs, ir::DType::F64, &values);
    ASSERT_TRUE(f64.ok()) << f64.error().message;
    ASSERT_EQ(f64->size(), 1u);
    const ir::Tensor& probs = (*f64)[0];
    EXPECT_EQ(probs.type().str(), "f64[1,10]");
    std::vector<double> p = probs.toDoubles();
    EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-12);
    for (double v : p) {
        EXPECT_GT(v, 0.0);
        EXPECT_LT(v, 1.0);
    }
    // Not a degenerate model: the classes are not all equally likely and the skip path is live.
    EXPECT_GT(*std::max_element(p.begin(), p.end()) - *std::min_element(p.begin(), p.end()), 1e-3);
    ASSERT_TRUE(values.count("skip_sum"));
    ASSERT_TRUE(values.count("block1_relu_out"));
    EXPECT_GT(values.at("block1_relu_out").toDoubles().size(), 0u);

    // f32 follows f64 closely.
    auto f32 = runReference(**graph, *inputs, ir::DType::F32);
    ASSERT_TRUE(f32.ok()) << f32.error().message;
    TensorComparison c = compareTensors("probs", (*f32)[0], probs, 1e-6, 1e-5);
    EXPECT_TRUE(c.pass) << formatComparison(c);
    EXPECT_EQ(c.argmaxGot, c.argmaxExpected);
}

// samples/residual_cnn/output_0.pb is onnxruntime's output (samples/ort_reference.mjs), so this
// checks BatchNormalization, Gemm(transB), GlobalAveragePool, Flatten and Softmax-13 against an
// independent implementation.
TEST(ReferenceExecutor, SampleModelMatchesOnnxRuntime) {
    auto graph = frontend::importOnnx((kSamples / "residual_cnn.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    auto inputs = frontend::loadTestDataSet((kSamples / "residual_cnn").string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    auto expected = frontend::loadTestDataSet((kSamples / "residual_cnn").string(), "output");
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    ASSERT_EQ(expected->size(), 1u);
    for (ir::DType compute : {ir::DType::F64, ir::DType::F32}) {
        auto outputs = runReference(**graph, *inputs, compute);
        ASSERT_TRUE(outputs.ok()) << outputs.error().message;
        TensorComparison c = compareTensors("probs", (*outputs)[0], (*expected)[0], 1e-6, 1e-4);
        EXPECT_TRUE(c.pass) << ir::dtypeName(compute) << ": " << formatComparison(c);
        EXPECT_EQ(c.argmaxGot, c.argmaxExpected);
    }
}

TEST(ReferenceExecutor, RejectsWrongInputs) {
    auto graph = frontend::importOnnx((kSamples / "residual_cnn.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;

    auto none = runReference(**graph, {}, ir::DType::F64);
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().message, "graph 'residual_cnn' has 1 input(s) ('image'), got 0");

    std::vector<ir::Tensor> wrongShape{ir::Tensor(ir::DType::F32, {1, 3, 32})};
    auto shape = runReference(**graph, wrongShape, ir::DType::F64);
    ASSERT_FALSE(shape.ok());
    EXPECT_EQ(shape.error().message, "input 'image' expects f32[1,3,32,32], got f32[1,3,32]");

    std::vector<ir::Tensor> wrongType{ir::Tensor(ir::DType::I64, {1, 3, 32, 32})};
    auto type = runReference(**graph, wrongType, ir::DType::F64);
    ASSERT_FALSE(type.ok());
    EXPECT_EQ(type.error().message, "input 'image' expects f32[1,3,32,32], got i64[1,3,32,32]");

    std::vector<ir::Tensor> ok{ir::Tensor(ir::DType::F32, {1, 3, 32, 32})};
    auto f16 = runReference(**graph, ok, ir::DType::F16);
    ASSERT_FALSE(f16.ok());
    EXPECT_EQ(f16.error().kind, ErrorKind::Unsupported);
}

TEST(ReferenceExecutor, AcceptsF64InputsForF32Graph) {
    auto graph = frontend::importOnnx((kSamples / "residual_cnn.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    auto inputs = frontend::loadTestDataSet((kSamples / "residual_cnn").string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    std::vector<ir::Tensor> asF64{(*inputs)[0].castTo(ir::DType::F64)};
    auto a = runReference(**graph, *inputs, ir::DType::F64);
    auto b = runReference(**graph, asF64, ir::DType::F64);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE((*a)[0].identical((*b)[0]));
}

} // namespace
} // namespace sextant::runtime

namespace sextant::runtime {
namespace {

/// A real model from ../shared/models with onnxruntime's outputs next to it.
struct RealModel {
    const char* path; ///< under models/, without ".onnx"
    ir::DType compute;
};

std::ostream& operator<<(std::ostream& os, const RealModel& m) {
    return os << m.path << " " << ir::dtypeName(m.compute);
}

class ReferenceMatchesOnnxRuntime : public ::testing::TestWithParam<RealModel> {};

// Import → reference run → compare with onnxruntime for every output, with the tolerance
// INVENTORY.md suggests (rtol 1e-3, atol 1e-4 scaled by the output's magnitude when it exceeds 1).
TEST_P(ReferenceMatchesOnnxRuntime, AllOutputs) {
    const fs::path model = kModels / (std::string(GetParam().path) + ".onnx");
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping " << GetParam().path;
    const fs::path data = model.parent_path() / "test_data" / model.stem() / "test_data_set_0";
    auto graph = frontend::importOnnx(model.string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    auto inputs = frontend::loadTestDataSet(data.string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    auto expected = frontend::loadTestDataSet(data.string(), "output");
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    auto outputs = runReference(**graph, *inputs, GetParam().compute);
    ASSERT_TRUE(outputs.ok()) << outputs.error().message;
    ASSERT_EQ(outputs->size(), expected->size());
    for (size_t i = 0; i < outputs->size(); ++i) {
        double magnitude = 1.0;
        for (double v : (*expected)[i].toDoubles())
            magnitude = std::max(magnitude, std::fabs(v));
        TensorComparison c = compareTensors((*graph)->outputs()[i]->name(), (*outputs)[i],
                                            (*expected)[i], 1e-4 * magnitude, 1e-3);
        EXPECT_TRUE(c.pass) << formatComparison(c);
        EXPECT_GT(c.cosine, 0.99999) << formatComparison(c);
    }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, ReferenceMatchesOnnxRuntime,
    ::testing::Values(RealModel{"ort-examples/ultraface_version-RFB-320", ir::DType::F64},
                      RealModel{"ort-examples/ultraface_version-RFB-320", ir::DType::F32},
                      RealModel{"blazeface/face_detection_front_128x128_barracuda", ir::DType::F64},
                      RealModel{"blazeface/face_detection_front_128x128_barracuda", ir::DType::F32},
                      RealModel{"blazeface/face_detection_back_256x256_barracuda", ir::DType::F64},
                      RealModel{"paddleocr/ch_ppocr_mobile_v2.0_cls_infer", ir::DType::F64},
                      RealModel{"paddleocr/ch_PP-OCRv4_det_infer", ir::DType::F64},
                      RealModel{"paddleocr/ch_PP-OCRv4_rec_infer", ir::DType::F64},
                      RealModel{"onnx-light/light_squeezenet", ir::DType::F64},
                      RealModel{"onnx-light/light_shufflenet", ir::DType::F64},
                      RealModel{"onnx-light/light_densenet121", ir::DType::F64}),
    [](const ::testing::TestParamInfo<RealModel>& info) {
        std::string name = fs::path(info.param.path).filename().string() + "_" +
                           std::string(ir::dtypeName(info.param.compute));
        for (char& ch : name)
            if (!std::isalnum(static_cast<unsigned char>(ch)))
                ch = '_';
        return name;
    });

} // namespace
} // namespace sextant::runtime
