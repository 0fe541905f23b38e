// Import of If subgraphs: implicit outer-scope reads become explicit inputs (isolated from above),
// on small hand-built models and on both silero-vad models (node and op counts per INVENTORY.md,
// counting inside subgraphs; Constant nodes become constants).

#include "TestUtil.h"

#include "core/frontend/OnnxImporter.h"
#include "core/ir/Interpreter.h"
#include "core/ir/Parser.h"
#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

#include <gtest/gtest.h>

#include <map>

namespace sextant::frontend {
namespace {

using namespace test;

void countNodes(const ir::Graph& g, std::map<std::string, size_t>& byOp, size_t& graphs) {
    ++graphs;
    for (const ir::Node* n : g.nodes()) {
        ++byOp[ir::qualifiedOpName(n->kind())];
        for (const auto& [name, a] : n->attrs())
            if (auto* sub = std::get_if<std::shared_ptr<const ir::Graph>>(&a))
                countNodes(**sub, byOp, graphs);
    }
}

void addWeights(const ir::Graph& g, std::map<std::string, ir::Tensor>& weights) {
    for (const ir::Value* c : g.constants())
        weights.emplace(c->name(), *c->constant());
    for (const ir::Node* n : g.nodes())
        for (const auto& [name, a] : n->attrs())
            if (auto* sub = std::get_if<std::shared_ptr<const ir::Graph>>(&a))
                addWeights(**sub, weights);
}

onnx::ValueInfoProto* setInfo(onnx::ValueInfoProto* v, const std::string& name, int elemType,
                              std::vector<int64_t> dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elemType);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims)
        shape->add_dim()->set_dim_value(d);
    return v;
}

onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> ins,
                         std::vector<std::string> outs, const std::string& name) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : ins)
        n->add_input(i);
    for (auto& o : outs)
        n->add_output(o);
    return n;
}

/// main(c: bool, x: f32[2]) { k = x + x; y = If(c) then { t = Neg(k) } else { If(c) { e = k * x } ... } }
/// The else branch holds a nested If that reads both `k` (outer node output) and `x` (graph input).
std::string writeNestedIfModel(const fs::path& dir) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(16);
    onnx::GraphProto* g = m.mutable_graph();
    g->set_name("nested");
    setInfo(g->add_input(), "c", onnx::TensorProto::BOOL, {});
    setInfo(g->add_input(), "x", onnx::TensorProto::FLOAT, {2});
    addNode(g, "Add", {"x", "x"}, {"k"}, "add");
    onnx::NodeProto* iff = addNode(g, "If", {"c"}, {"y"}, "if_outer");

    auto* thenAttr = iff->add_attribute();
    thenAttr->set_name("then_branch");
    thenAttr->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* thenG = thenAttr->mutable_g();
    thenG->set_name("then_g");
    addNode(thenG, "Neg", {"k"}, {"t"}, "neg");
    setInfo(thenG->add_output(), "t", onnx::TensorProto::FLOAT, {2});

    auto* elseAttr = iff->add_attribute();
    elseAttr->set_name("else_branch");
    elseAttr->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* elseG = elseAttr->mutable_g();
    elseG->set_name("else_g");
    onnx::NodeProto* inner = addNode(elseG, "If", {"c"}, {"e"}, "if_inner");
    auto* innerThen = inner->add_attribute();
    innerThen->set_name("then_branch");
    innerThen->set_type(onnx::AttributeProto::GRAPH);
    innerThen->mutable_g()->set_name("inner_then");
    addNode(innerThen->mutable_g(), "Mul", {"k", "x"}, {"kx"}, "mul");
    setInfo(innerThen->mutable_g()->add_output(), "kx", onnx::TensorProto::FLOAT, {2});
    auto* innerElse = inner->add_attribute();
    innerElse->set_name("else_branch");
    innerElse->set_type(onnx::AttributeProto::GRAPH);
    innerElse->mutable_g()->set_name("inner_else");
    setInfo(innerElse->mutable_g()->add_output(), "x", onnx::TensorProto::FLOAT, {2}); // outer value, directly
    setInfo(elseG->add_output(), "e", onnx::TensorProto::FLOAT, {2});

    setInfo(g->add_output(), "y", onnx::TensorProto::FLOAT, {2});
    const fs::path path = dir / "nested_if.onnx";
    writeBytes(path, m.SerializeAsString());
    return path.string();
}

ir::Tensor boolScalar(bool b) {
    ir::Tensor t(ir::DType::Bool, {});
    t.set(0, b ? 1.0 : 0.0);
    return t;
}

TEST(SubgraphImport, OuterValuesBecomeExplicitInputsAndRun) {
    auto g = importOnnx(writeNestedIfModel(tempDir()));
    ASSERT_TRUE(g.ok()) << g.error().message;
    const ir::Node* outer = (*g)->findNode("if_outer");
    ASSERT_NE(outer, nullptr);
    // Condition, then the captured values in first-use order: k (then_branch), then c (the nested
    // If's condition) and x (read inside the nested If's branches).
    ASSERT_EQ(outer->numInputs(), 4u);
    EXPECT_EQ(outer->input(0)->name(), "c");
    EXPECT_EQ(outer->input(1)->name(), "k");
    EXPECT_EQ(outer->input(2)->name(), "c");
    EXPECT_EQ(outer->input(3)->name(), "x");
    const ir::Graph* elseG = outer->attrGraph("else_branch");
    ASSERT_NE(elseG, nullptr);
    ASSERT_EQ(elseG->inputs().size(), 3u);
    EXPECT_EQ(outer->attrGraph("then_branch")->inputs().size(), 3u);
    const ir::Node* inner = elseG->findNode("if_inner");
    ASSERT_NE(inner, nullptr);
    // The nested If: its condition (the branch's capture of c), then k and x.
    EXPECT_EQ(inner->numInputs(), 3u);
    EXPECT_EQ(inner->attrGraph("else_branch")->outputs()[0]->name(), "x");
    ASSERT_TRUE(ir::verifyGraph(**g).ok());

    ir::KernelContext ctx;
    auto a = ir::interpret(**g, std::vector<ir::Tensor>{boolScalar(true), ir::Tensor::fromVector<float>({2}, {1, 2})}, ctx);
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ((*a)[0].toDoubles(), (std::vector<double>{-2, -4}));
    auto b = ir::interpret(**g, std::vector<ir::Tensor>{boolScalar(false), ir::Tensor::fromVector<float>({2}, {1, 2})}, ctx);
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ((*b)[0].toDoubles(), (std::vector<double>{1, 2})); // false, false: inner else returns x

    const std::string text = ir::printGraph(**g);
    auto parsed = ir::parseGraph(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(ir::printGraph(**parsed), text);
}

TEST(SubgraphImport, ASubgraphReadingAnUndefinedValueIsNamed) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(16);
    onnx::GraphProto* g = m.mutable_graph();
    setInfo(g->add_input(), "c", onnx::TensorProto::BOOL, {});
    onnx::NodeProto* iff = addNode(g, "If", {"c"}, {"y"}, "if0");
    for (const char* which : {"then_branch", "else_branch"}) {
        auto* a = iff->add_attribute();
        a->set_name(which);
        a->set_type(onnx::AttributeProto::GRAPH);
        addNode(a->mutable_g(), "Neg", {"nowhere"}, {"t"}, "neg");
        setInfo(a->mutable_g()->add_output(), "t", onnx::TensorProto::FLOAT, {2});
    }
    setInfo(g->add_output(), "y", onnx::TensorProto::FLOAT, {2});
    const fs::path path = tempDir() / "undefined.onnx";
    writeBytes(path, m.SerializeAsString());
    auto r = importOnnx(path.string());
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("uses undefined value 'nowhere'"), std::string::npos) << r.error().message;
}

struct SileroCase {
    const char* file;
    size_t nodes;  ///< ONNX nodes in all graphs minus Constant nodes (INVENTORY.md)
    size_t graphs; ///< the main graph and every subgraph
    size_t ifs, lstms, convs;
};

class ImportsSilero : public ::testing::TestWithParam<SileroCase> {};

TEST_P(ImportsSilero, CountsIncludingSubgraphsAndTextRoundTrip) {
    const fs::path model = sharedModels() / "silero-vad" / GetParam().file;
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping " << GetParam().file;
    auto g = importOnnx(model.string());
    ASSERT_TRUE(g.ok()) << g.error().message;
    std::map<std::string, size_t> byOp;
    size_t graphs = 0;
    countNodes(**g, byOp, graphs);
    size_t total = 0;
    for (const auto& [op, count] : byOp)
        total += count;
    EXPECT_EQ(total, GetParam().nodes);
    EXPECT_EQ(graphs, GetParam().graphs);
    EXPECT_EQ(byOp["If"], GetParam().ifs);
    EXPECT_EQ(byOp["LSTM"], GetParam().lstms);
    EXPECT_EQ(byOp["Conv"], GetParam().convs);
    ASSERT_TRUE(ir::verifyGraph(**g).ok()) << ir::verifyGraph(**g).error().message;

    std::map<std::string, ir::Tensor> weights;
    addWeights(**g, weights);
    const std::string text = ir::printGraph(**g);
    auto parsed = ir::parseGraph(text, &weights);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_TRUE(ir::printGraph(**parsed) == text) << "print(parse(print(import))) changed the text";
}

INSTANTIATE_TEST_SUITE_P(Silero, ImportsSilero,
                         ::testing::Values(SileroCase{"silero_vad_legacy.onnx", 250, 19, 9, 8, 36},
                                           SileroCase{"silero_vad_v5.onnx", 348, 51, 25, 4, 12}),
                         [](const ::testing::TestParamInfo<SileroCase>& info) {
                             return std::string(info.param.file).find("legacy") != std::string::npos ? "legacy"
                                                                                                      : "v5";
                         });

} // namespace
} // namespace sextant::frontend
