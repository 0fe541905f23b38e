#include "TestUtil.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

namespace sextant::frontend {
namespace {

using namespace test;

#ifdef SEXTANT_MAKE_SAMPLE
TEST(SampleModel, GeneratorReproducesCommittedFilesByteForByte) {
    fs::path dir = tempDir();
    const std::string cmd = std::string("'") + SEXTANT_MAKE_SAMPLE + "' '" + dir.string() +
                            "' > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (const char* file : {"residual_cnn.onnx", "residual_cnn/input_0.pb"}) {
        ASSERT_TRUE(fs::exists(samplesDir() / file)) << file << " is not committed";
        EXPECT_TRUE(readBytes(dir / file) == readBytes(samplesDir() / file))
            << file << " differs from a fresh `make-sample` run: regenerate and commit it";
    }
}
#endif

TEST(SampleModel, ImportsAsAResidualCnn) {
    auto g = importOnnx((samplesDir() / "residual_cnn.onnx").string());
    ASSERT_TRUE(g.ok()) << g.error().message;
    std::map<std::string, int> perOp;
    for (const ir::Node* n : (*g)->nodes())
        ++perOp[std::string(n->info().name)];
    std::map<std::string, int> expected{
        {"Add", 1},  {"BatchNormalization", 2}, {"Conv", 2},    {"Flatten", 1},
        {"Gemm", 1}, {"GlobalAveragePool", 1},  {"Relu", 3},    {"Softmax", 1}};
    EXPECT_EQ(perOp, expected);
    EXPECT_EQ((*g)->inputs()[0]->type().str(), "f32[1,3,32,32]");
    EXPECT_EQ((*g)->outputs()[0]->type().str(), "f32[1,10]");
    // The skip connection: the Add reads the first block's Relu.
    const ir::Node* add = (*g)->findNode("skip_add");
    ASSERT_NE(add, nullptr);
    EXPECT_EQ(add->input(1)->producer()->name(), "block1_relu");

    auto input = loadTestDataSet((samplesDir() / "residual_cnn").string(), "input");
    ASSERT_TRUE(input.ok()) << input.error().message;
    ASSERT_EQ(input->size(), 1u);
    EXPECT_EQ((*input)[0].type().str(), "f32[1,3,32,32]");
}

} // namespace
} // namespace sextant::frontend
