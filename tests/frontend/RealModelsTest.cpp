#include "TestUtil.h"

#include "core/frontend/OnnxImporter.h"
#include "core/ir/Parser.h"
#include "core/ir/Printer.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <ostream>

namespace sextant::frontend {
namespace {

using namespace test;

struct ModelCase {
    const char* path;  ///< under models/
    size_t nodes;      ///< top-level ONNX nodes minus Constant nodes (INVENTORY.md)
    size_t inputs;     ///< graph inputs that are not initializers
};

std::ostream& operator<<(std::ostream& os, const ModelCase& c) { return os << c.path; }

/// The weights of `g` and of every subgraph inside it (If branches), by value name: what the parser
/// needs for constants printed as digests.
void collectWeights(const ir::Graph& g, std::map<std::string, ir::Tensor>& weights) {
    for (const ir::Value* c : g.constants())
        weights.emplace(c->name(), *c->constant());
    for (const ir::Node* n : g.nodes())
        for (const auto& [name, attr] : n->attrs())
            if (const auto* sub = std::get_if<std::shared_ptr<const ir::Graph>>(&attr); sub && *sub)
                collectWeights(**sub, weights);
}

class ImportsSharedModel : public ::testing::TestWithParam<ModelCase> {};

// Each real model imports with the node count INVENTORY.md gives (Constant nodes become
// constants), every node keeps its ONNX name as provenance, and the textual IR of the import
// parses back to the same text.
TEST_P(ImportsSharedModel, CountsProvenanceAndTextRoundTrip) {
    const fs::path model = sharedModels() / GetParam().path;
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping " << GetParam().path;
    auto g = importOnnx(model.string());
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ((*g)->numNodes(), GetParam().nodes);
    EXPECT_EQ((*g)->inputs().size(), GetParam().inputs);
    for (const ir::Node* n : (*g)->nodes()) {
        ASSERT_EQ(n->provenance().origins.size(), 1u) << n->name();
        EXPECT_EQ(n->provenance().createdBy, "import");
    }
    for (const ir::Value* out : (*g)->outputs())
        EXPECT_TRUE(ir::isFloat(out->type().dtype)) << out->name() << " " << out->type().str();

    std::map<std::string, ir::Tensor> weights;
    collectWeights(**g, weights);
    const std::string text = ir::printGraph(**g);
    auto parsed = ir::parseGraph(text, &weights);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_TRUE(ir::printGraph(**parsed) == text) << "print(parse(print(import))) changed the text";
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, ImportsSharedModel,
    ::testing::Values(ModelCase{"ort-examples/mnist.onnx", 12, 1},
                      ModelCase{"ort-examples/ultraface_version-RFB-320.onnx", 126, 1},
                      ModelCase{"blazeface/face_detection_back_256x256_barracuda.onnx", 149, 1},
                      ModelCase{"blazeface/face_detection_front_128x128_barracuda.onnx", 104, 1},
                      ModelCase{"onnx-light/light_bvlc_alexnet.onnx", 40, 1},
                      ModelCase{"onnx-light/light_densenet121.onnx", 1746, 1},
                      ModelCase{"onnx-light/light_inception_v1.onnx", 237, 1},
                      ModelCase{"onnx-light/light_inception_v2.onnx", 916, 1},
                      ModelCase{"onnx-light/light_resnet50.onnx", 415, 1},
                      ModelCase{"onnx-light/light_shufflenet.onnx", 446, 1},
                      ModelCase{"onnx-light/light_squeezenet.onnx", 105, 1},
                      ModelCase{"onnx-light/light_vgg19.onnx", 82, 1},
                      ModelCase{"onnx-light/light_zfnet512.onnx", 38, 1},
                      ModelCase{"paddleocr/ch_PP-OCRv4_det_infer.onnx", 330, 1},
                      ModelCase{"paddleocr/ch_PP-OCRv4_rec_infer.onnx", 440, 1},
                      ModelCase{"paddleocr/ch_ppocr_mobile_v2.0_cls_infer.onnx", 221, 1},
                      // If branches are subgraphs: only the top-level nodes count here.
                      ModelCase{"silero-vad/silero_vad_legacy.onnx", 2, 4},
                      ModelCase{"silero-vad/silero_vad_v5.onnx", 4, 3}),
    [](const ::testing::TestParamInfo<ModelCase>& info) {
        std::string name = fs::path(info.param.path).filename().string();
        name = name.substr(0, name.size() - 5); // ".onnx"
        for (char& ch : name)
            if (!std::isalnum(static_cast<unsigned char>(ch)))
                ch = '_';
        return name;
    });

} // namespace
} // namespace sextant::frontend
