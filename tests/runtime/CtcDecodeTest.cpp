#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/runtime/CtcDecode.h"
#include "core/runtime/ReferenceExecutor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace sextant::runtime {
namespace {

namespace fs = std::filesystem;

const fs::path kPaddle = fs::path(SEXTANT_SHARED_DIR) / "models" / "paddleocr";

/// One-hot scores [1, T, C] picking `classes[t]` at step t.
ir::Tensor oneHot(const std::vector<int>& classes, int64_t numClasses) {
    ir::Tensor t(ir::DType::F32, {1, static_cast<int64_t>(classes.size()), numClasses});
    for (size_t s = 0; s < classes.size(); ++s)
        t.set(static_cast<int64_t>(s) * numClasses + classes[s], 1.0);
    return t;
}

TEST(CtcDecode, MergesRepeatsAndDropsBlanks) {
    const std::vector<std::string> alphabet{"", "a", "b", " "};
    // a a _ a b b _ _ space b  ->  "aab b"
    auto texts = ctcGreedyDecode(oneHot({1, 1, 0, 1, 2, 2, 0, 0, 3, 2}, 4), alphabet);
    ASSERT_TRUE(texts.ok()) << texts.error().message;
    ASSERT_EQ(texts->size(), 1u);
    EXPECT_EQ((*texts)[0], "aab b");
}

TEST(CtcDecode, AlphabetSizeMismatchIsAClearError) {
    auto texts = ctcGreedyDecode(oneHot({1, 2}, 5), {"", "a", "b", " "});
    ASSERT_FALSE(texts.ok());
    EXPECT_NE(texts.error().message.find("5 classes but the alphabet has 4"), std::string::npos)
        << texts.error().message;
}

TEST(CtcDecode, MissingCharacterListIsAClearError) {
    auto alphabet = loadCtcAlphabet("/nonexistent/keys.txt");
    ASSERT_FALSE(alphabet.ok());
    EXPECT_NE(alphabet.error().message.find("/nonexistent/keys.txt"), std::string::npos);
}

// The PaddleOCR recognizer on its rendered test image reads "Hello NPU 2026" through the float64
// reference executor: the end-to-end check a person can read.
TEST(CtcDecode, PaddleOcrRecognizerReadsTheRenderedText) {
    const fs::path model = kPaddle / "ch_PP-OCRv4_rec_infer.onnx";
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping the PaddleOCR text read";
    auto graph = frontend::importOnnx(model.string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    auto inputs = frontend::loadTestDataSet(
        (kPaddle / "test_data" / "ch_PP-OCRv4_rec_infer" / "test_data_set_0").string(), "input");
    ASSERT_TRUE(inputs.ok()) << inputs.error().message;
    auto outputs = runReference(**graph, *inputs, ir::DType::F64);
    ASSERT_TRUE(outputs.ok()) << outputs.error().message;
    auto alphabet = loadCtcAlphabet((kPaddle / "ppocr_keys_v1.txt").string());
    ASSERT_TRUE(alphabet.ok()) << alphabet.error().message;
    auto texts = ctcGreedyDecode((*outputs)[0], *alphabet);
    ASSERT_TRUE(texts.ok()) << texts.error().message;
    ASSERT_EQ(texts->size(), 1u);
    EXPECT_EQ((*texts)[0], "Hello NPU 2026");
}

} // namespace
} // namespace sextant::runtime
