// Shape specialisation on the real PaddleOCR models: every symbolic dim resolves, the specialised
// graph computes exactly what the symbolic one does, and it compiles for the NPU (or stops at a
// backend limit that names a node).
#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/ir/Specialize.h"
#include "core/runtime/Compare.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>
#include <string>

namespace sextant::runtime {
namespace {

namespace fs = std::filesystem;

const fs::path kPaddle = fs::path(SEXTANT_SHARED_DIR) / "models" / "paddleocr";

struct PaddleCase {
    const char* stem;
    std::vector<int64_t> shape;  ///< of input 'x', as in the model's test_data
    std::vector<int64_t> output; ///< the specialised output shape
};

std::ostream& operator<<(std::ostream& os, const PaddleCase& c) { return os << c.stem; }

class SpecializesPaddleOcr : public ::testing::TestWithParam<PaddleCase> {};

TEST_P(SpecializesPaddleOcr, ResolvesEveryDimAndKeepsTheNumbers) {
    const PaddleCase& c = GetParam();
    const fs::path model = kPaddle / (std::string(c.stem) + ".onnx");
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping specialisation of " << c.stem;
    auto symbolic = frontend::importOnnx(model.string());
    ASSERT_TRUE(symbolic.ok()) << symbolic.error().message;
    auto specialized = frontend::importOnnx(model.string());
    ASSERT_TRUE(specialized.ok());
    ASSERT_FALSE(ir::requireStaticInputs(**symbolic).ok());

    std::vector<std::string> folded;
    Status s = ir::specializeInputs(**specialized, {{"x", c.shape}}, &folded);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_TRUE(ir::requireStaticInputs(**specialized).ok());
    for (const ir::Value* v : (*specialized)->values())
        EXPECT_TRUE(v->type().isStatic()) << v->name() << " " << v->type().str();
    ASSERT_EQ((*specialized)->outputs().size(), 1u);
    EXPECT_EQ((*specialized)->outputs()[0]->type().dims(), c.output);
    // Every folded node was shape arithmetic on the way to a Reshape (or none was needed).
    for (const std::string& name : folded)
        EXPECT_EQ((*specialized)->findNode(name), nullptr) << name;

    // The same test image through both graphs: identical float64 results, and onnxruntime's.
    const fs::path data = kPaddle / "test_data" / c.stem / "test_data_set_0";
    auto inputs = frontend::loadTestDataSet(data.string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    auto expected = frontend::loadTestDataSet(data.string(), "output");
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    auto before = runReference(**symbolic, *inputs, ir::DType::F64);
    ASSERT_TRUE(before.ok()) << before.error().message;
    auto after = runReference(**specialized, *inputs, ir::DType::F64);
    ASSERT_TRUE(after.ok()) << after.error().message;
    EXPECT_TRUE((*before)[0].identical((*after)[0]));
    const ir::Value& out = *(*specialized)->outputs()[0];
    TensorComparison cmp = compareTensors(out.name(), (*after)[0], (*expected)[0],
                                          outputAtol(out, (*expected)[0]), kOutputRtol);
    EXPECT_TRUE(cmp.pass) << formatComparison(cmp);
}

INSTANTIATE_TEST_SUITE_P(
    PaddleOcr, SpecializesPaddleOcr,
    ::testing::Values(PaddleCase{"ch_PP-OCRv4_rec_infer", {1, 3, 48, 320}, {1, 40, 6625}},
                      PaddleCase{"ch_PP-OCRv4_det_infer", {1, 3, 320, 320}, {1, 1, 320, 320}},
                      PaddleCase{"ch_ppocr_mobile_v2.0_cls_infer", {1, 3, 48, 192}, {1, 2}}));

// The specialised recogniser compiles for the NPU; a wider image gives a longer sequence.
TEST(SpecializesPaddleOcrRec, CompilesAndFollowsTheImageWidth) {
    const fs::path model = kPaddle / "ch_PP-OCRv4_rec_infer.onnx";
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping the PaddleOCR rec compile";
    auto g = frontend::importOnnx(model.string());
    ASSERT_TRUE(g.ok()) << g.error().message;
    ASSERT_TRUE(ir::specializeInputs(**g, {{"x", {2, 3, 48, 640}}}).ok());
    EXPECT_EQ((*g)->outputs()[0]->type().str(), "f32[2,80,6625]");
    auto compiled = compileGraph(**g, CompileOptions{});
    ASSERT_TRUE(compiled.ok()) << compiled.error().message;
    EXPECT_FALSE(compiled->program.tasks.empty());
}

} // namespace
} // namespace sextant::runtime
