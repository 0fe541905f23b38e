// Ops whose kernels need the model's opset (GroupNormalization 18 / 21, DFT 17 / 20, Attention
// 23 and the refused 24, 25): the importer records it as "_opset", and a version Sextant does not
// implement (OnnxOpVersions.h's unimplementedOpVersions) is an error naming the node, the op, the
// version and the opset.

#include "TestUtil.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/OnnxOpVersions.h"
#include "core/ir/Graph.h"

#include <gtest/gtest.h>

namespace sextant::frontend {
namespace {

using namespace test;

void addFloats(onnx::ModelProto& m, const std::string& name, const std::vector<float>& v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (float f : v)
        t->add_float_data(f);
}

void setInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}

Expected<std::unique_ptr<ir::Graph>> importAt(onnx::ModelProto& m, const std::string& stem) {
    fs::path path = tempDir() / (stem + ".onnx");
    writeModel(m, path);
    return importOnnx(path.string());
}

Expected<std::unique_ptr<ir::Graph>> groupNorm(int64_t opset, int64_t scaleLength) {
    auto m = emptyModel({1, 4, 3}, opset);
    addFloats(m, "s", std::vector<float>(static_cast<size_t>(scaleLength), 1.0f));
    addFloats(m, "b", std::vector<float>(static_cast<size_t>(scaleLength), 0.0f));
    setInt(addNode(m, "GroupNormalization", "gn", {"x", "s", "b"}, {"y"}), "num_groups", 2);
    addOutput(m, "y");
    return importAt(m, "gn" + std::to_string(opset) + "_" + std::to_string(scaleLength));
}

} // namespace

TEST(VersionedOpsImport, GroupNormalizationScalePerGroupAt18PerChannelAt21) {
    auto g18 = groupNorm(18, 2);
    ASSERT_TRUE(g18.ok()) << g18.error().message;
    EXPECT_EQ((*g18)->findNode("gn")->attrInt("_opset", 0), 18);
    auto g21 = groupNorm(21, 4);
    ASSERT_TRUE(g21.ok()) << g21.error().message;
    EXPECT_EQ((*g21)->findNode("gn")->attrInt("_opset", 0), 21);
    auto bad = groupNorm(21, 2);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("scale must have 4 entries (one per channel at opset 21), got [2]"),
              std::string::npos)
        << bad.error().message;
}

TEST(VersionedOpsImport, DftAxisAttributeAt17InputAt20) {
    auto m17 = emptyModel({1, 6, 3, 1}, 17);
    setInt(addNode(m17, "DFT", "dft", {"x"}, {"y"}), "axis", 2);
    addOutput(m17, "y");
    auto g17 = importAt(m17, "dft17");
    ASSERT_TRUE(g17.ok()) << g17.error().message;
    EXPECT_EQ((*g17)->findNode("dft")->output()->type().str(), "f32[1,6,3,2]");
    auto m20 = emptyModel({1, 6, 3, 1}, 20);
    setInt(addNode(m20, "DFT", "dft", {"x"}, {"y"}), "axis", 2);
    addOutput(m20, "y");
    auto g20 = importAt(m20, "dft20");
    ASSERT_FALSE(g20.ok());
    EXPECT_NE(g20.error().message.find("dft takes axis as input 2 from opset 20 on, not as an attribute (opset 20)"),
              std::string::npos)
        << g20.error().message;
}

TEST(VersionedOpsImport, Attention23ImportsLaterVersionsAreRefused) {
    auto at = [](int64_t opset) {
        auto m = emptyModel({1, 2, 3, 4}, opset);
        addNode(m, "Attention", "attn", {"x", "x", "x"}, {"y"});
        addOutput(m, "y");
        return importAt(m, "attention" + std::to_string(opset));
    };
    auto g23 = at(23);
    ASSERT_TRUE(g23.ok()) << g23.error().message;
    EXPECT_EQ((*g23)->findNode("attn")->output()->type().str(), "f32[1,2,3,4]");
    auto g24 = at(24);
    ASSERT_FALSE(g24.ok());
    EXPECT_EQ(g24.error().message, "op 'Attention' at node 'attn' is Attention-24 at opset 24, which Sextant does not "
                                   "implement (it has Attention-23)");
    auto g28 = at(28);
    ASSERT_FALSE(g28.ok());
    EXPECT_NE(g28.error().message.find("is Attention-25 at opset 28, which Sextant does not implement"), std::string::npos)
        << g28.error().message;
    EXPECT_EQ(unimplementedOpVersions("Attention").size(), 2u);
    EXPECT_TRUE(unimplementedOpVersions("GroupNormalization").empty());
}

} // namespace sextant::frontend
