// Import of If, Loop and Scan subgraphs: implicit outer-scope reads become explicit inputs (isolated from above),
// on small hand-built models and on both silero-vad models (node and op counts per INVENTORY.md,
// counting inside subgraphs; Constant nodes become constants).

#include "TestUtil.h"

#include "core/frontend/OnnxExport.h"
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


// ---- Loop and Scan: declared body inputs typed from the node, captured outer values after them.

onnx::AttributeProto* bodyAttr(onnx::NodeProto* n, const std::string& name) {
    auto* a = n->add_attribute();
    a->set_name("body");
    a->set_type(onnx::AttributeProto::GRAPH);
    a->mutable_g()->set_name(name);
    return a;
}

void intsAttr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
        a->add_ints(x);
}

void intAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}

/// An initializer of `g`: i64 values of shape `dims`.
void addInt64(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> values) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims)
        t->add_dims(d);
    for (int64_t v : values)
        t->add_int64_data(v);
}

onnx::ModelProto modelAt(int opset, const std::string& name) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    m.mutable_graph()->set_name(name);
    return m;
}

std::vector<ir::Tensor> runModel(const onnx::ModelProto& m, const std::string& file, std::vector<ir::Tensor> feeds,
                                 std::unique_ptr<ir::Graph>* keep = nullptr) {
    const fs::path path = tempDir() / file;
    writeBytes(path, m.SerializeAsString());
    auto g = importOnnx(path.string());
    EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
    if (!g.ok())
        return {};
    EXPECT_TRUE(ir::verifyGraph(**g).ok());
    ir::KernelContext ctx;
    auto r = ir::interpret(**g, feeds, ctx);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (keep)
        *keep = std::move(g).value();
    return r.ok() ? std::move(r).value() : std::vector<ir::Tensor>{};
}

/// main(x: f32[2], m: i64[]) { w = x + x; acc, seq = Loop(m, true, x) body(i, c, acc_in) {
///   acc_out = acc_in + w * float(i); c_out = i < 2 } }: the body reads the outer `w`, and its
/// condition stops the loop after iteration 2 whatever m is.
onnx::ModelProto loopModel() {
    onnx::ModelProto m = modelAt(16, "loop");
    onnx::GraphProto* g = m.mutable_graph();
    setInfo(g->add_input(), "x", onnx::TensorProto::FLOAT, {2});
    setInfo(g->add_input(), "m", onnx::TensorProto::INT64, {});
    onnx::TensorProto* t = g->add_initializer();
    t->set_name("yes");
    t->set_data_type(onnx::TensorProto::BOOL);
    t->add_int32_data(1);
    addNode(g, "Add", {"x", "x"}, {"w"}, "double");
    onnx::NodeProto* loop = addNode(g, "Loop", {"m", "yes", "x"}, {"acc", "seq"}, "loop");
    onnx::GraphProto* b = bodyAttr(loop, "loop_body")->mutable_g();
    setInfo(b->add_input(), "i", onnx::TensorProto::INT64, {});
    setInfo(b->add_input(), "c", onnx::TensorProto::BOOL, {});
    setInfo(b->add_input(), "acc_in", onnx::TensorProto::FLOAT, {2});
    addInt64(b, "two", {}, {2});
    auto* cast = addNode(b, "Cast", {"i"}, {"fi"}, "cast");
    intAttr(cast, "to", onnx::TensorProto::FLOAT);
    addNode(b, "Mul", {"w", "fi"}, {"wi"}, "mul");
    addNode(b, "Add", {"acc_in", "wi"}, {"acc_out"}, "add");
    addNode(b, "Less", {"i", "two"}, {"c_out"}, "less");
    addNode(b, "Identity", {"acc_out"}, {"step"}, "copy");
    setInfo(b->add_output(), "c_out", onnx::TensorProto::BOOL, {});
    setInfo(b->add_output(), "acc_out", onnx::TensorProto::FLOAT, {2});
    setInfo(b->add_output(), "step", onnx::TensorProto::FLOAT, {2});
    setInfo(g->add_output(), "acc", onnx::TensorProto::FLOAT, {2});
    g->add_output()->set_name("seq");
    return m;
}

TEST(LoopImport, CarriesValuesReadsOuterValuesAndStopsOnTheBodysCondition) {
    std::unique_ptr<ir::Graph> g;
    auto out = runModel(loopModel(), "loop.onnx",
                        {ir::Tensor::fromVector<float>({2}, {1, 2}), ir::Tensor::fromVector<int64_t>({}, {10})}, &g);
    ASSERT_EQ(out.size(), 2u);
    // w = [2, 4]; acc: [1,2] (+0w) -> [3,6] (+1w) -> [7,14] (+2w), then 2 < 2 is false.
    EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{7, 14}));
    EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(out[1].toDoubles(), (std::vector<double>{1, 2, 3, 6, 7, 14}));
    // M, cond, the carried x, then the captured w; the body's count is recorded.
    const ir::Node* loop = g->findNode("loop");
    ASSERT_NE(loop, nullptr);
    ASSERT_EQ(loop->numInputs(), 4u);
    EXPECT_EQ(loop->input(3)->name(), "w");
    EXPECT_EQ(loop->attrInt("num_captured", -1), 1);
    EXPECT_EQ(loop->attrGraph("body")->inputs().size(), 4u);
    // The trip count depends on the data: the stacked output's first dim is unknown.
    const ir::TensorType& seq = loop->output(1)->type();
    ASSERT_EQ(seq.rank(), 2u);
    EXPECT_FALSE(seq.shape[0].isKnown());
    EXPECT_EQ(seq.shape[1], ir::Dim::known(2));
    // A trip count below the condition's stop: M decides (zero iterations leave x as it was).
    auto one = runModel(loopModel(), "loop1.onnx",
                        {ir::Tensor::fromVector<float>({2}, {1, 2}), ir::Tensor::fromVector<int64_t>({}, {0})});
    ASSERT_EQ(one.size(), 2u);
    EXPECT_EQ(one[0].toDoubles(), (std::vector<double>{1, 2}));
    EXPECT_EQ(one[1].shape(), (std::vector<int64_t>{0, 2}));

    const std::string text = ir::printGraph(*g);
    auto parsed = ir::parseGraph(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(ir::printGraph(**parsed), text);
}

TEST(LoopImport, ACarriedValueThatGrowsGetsAnUnknownDim) {
    // y_out = Concat(y_in, float(i)): f32[1] -> [2] -> [3] -> [4] over M = 3 iterations.
    onnx::ModelProto m = modelAt(13, "grow");
    onnx::GraphProto* g = m.mutable_graph();
    setInfo(g->add_input(), "y", onnx::TensorProto::FLOAT, {1});
    addInt64(g, "three", {}, {3});
    onnx::NodeProto* loop = addNode(g, "Loop", {"three", "", "y"}, {"grown"}, "loop");
    onnx::GraphProto* b = bodyAttr(loop, "grow_body")->mutable_g();
    setInfo(b->add_input(), "i", onnx::TensorProto::INT64, {});
    setInfo(b->add_input(), "c", onnx::TensorProto::BOOL, {});
    b->add_input()->set_name("y_in"); // no type: the node's carried value gives it
    addInt64(b, "axes", {1}, std::vector<int64_t>{0});
    auto* cast = addNode(b, "Cast", {"i"}, {"fi"}, "cast");
    intAttr(cast, "to", onnx::TensorProto::FLOAT);
    addNode(b, "Unsqueeze", {"fi", "axes"}, {"fi1"}, "unsq");
    auto* cat = addNode(b, "Concat", {"y_in", "fi1"}, {"y_out"}, "cat");
    intAttr(cat, "axis", 0);
    addNode(b, "Identity", {"c"}, {"c_out"}, "keep");
    setInfo(b->add_output(), "c_out", onnx::TensorProto::BOOL, {});
    b->add_output()->set_name("y_out");
    g->add_output()->set_name("grown");
    std::unique_ptr<ir::Graph> keep;
    auto out = runModel(m, "grow.onnx", {ir::Tensor::fromVector<float>({1}, {5})}, &keep);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{5, 0, 1, 2}));
    const ir::Node* n = keep->findNode("loop");
    EXPECT_FALSE(n->attrGraph("body")->inputs()[2]->type().shape[0].isKnown());
    EXPECT_FALSE(n->output(0)->type().shape[0].isKnown());
}

TEST(LoopImport, ALoopWithNeitherTripCountNorConditionIsRefusedWhenRun) {
    onnx::ModelProto m = modelAt(13, "forever");
    onnx::GraphProto* g = m.mutable_graph();
    setInfo(g->add_input(), "y", onnx::TensorProto::FLOAT, {1});
    onnx::NodeProto* loop = addNode(g, "Loop", {"", "", "y"}, {"out"}, "forever");
    onnx::GraphProto* b = bodyAttr(loop, "forever_body")->mutable_g();
    setInfo(b->add_input(), "i", onnx::TensorProto::INT64, {});
    setInfo(b->add_input(), "c", onnx::TensorProto::BOOL, {});
    setInfo(b->add_input(), "y_in", onnx::TensorProto::FLOAT, {1});
    addNode(b, "Identity", {"c"}, {"c_out"}, "keep");
    addNode(b, "Identity", {"y_in"}, {"y_out"}, "same");
    setInfo(b->add_output(), "c_out", onnx::TensorProto::BOOL, {});
    setInfo(b->add_output(), "y_out", onnx::TensorProto::FLOAT, {1});
    setInfo(g->add_output(), "out", onnx::TensorProto::FLOAT, {1});
    const fs::path path = tempDir() / "forever.onnx";
    writeBytes(path, m.SerializeAsString());
    auto imported = importOnnx(path.string());
    ASSERT_TRUE(imported.ok()) << imported.error().message;
    ir::KernelContext ctx;
    auto r = ir::interpret(**imported, std::vector<ir::Tensor>{ir::Tensor::fromVector<float>({1}, {1})}, ctx);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("neither a trip count nor a condition"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("forever"), std::string::npos) << r.error().message;
}

TEST(ScanImport, AxesAndDirectionsOfInputsAndOutputs) {
    // s_out = s + a_t * b_t, a scanned forward along axis 0, b in reverse along axis 1; y = s_out
    // stacked along axis 1, z = a_t stacked in reverse.
    onnx::ModelProto m = modelAt(16, "scan");
    onnx::GraphProto* g = m.mutable_graph();
    setInfo(g->add_input(), "s", onnx::TensorProto::FLOAT, {2});
    setInfo(g->add_input(), "a", onnx::TensorProto::FLOAT, {3, 2});
    setInfo(g->add_input(), "b", onnx::TensorProto::FLOAT, {2, 3});
    onnx::NodeProto* scan = addNode(g, "Scan", {"s", "a", "b"}, {"s_final", "y", "z"}, "scan");
    intAttr(scan, "num_scan_inputs", 2);
    intsAttr(scan, "scan_input_axes", {0, -1});
    intsAttr(scan, "scan_input_directions", {0, 1});
    intsAttr(scan, "scan_output_axes", {1, 0});
    intsAttr(scan, "scan_output_directions", {0, 1});
    onnx::GraphProto* b = bodyAttr(scan, "scan_body")->mutable_g();
    setInfo(b->add_input(), "s_in", onnx::TensorProto::FLOAT, {2});
    setInfo(b->add_input(), "a_t", onnx::TensorProto::FLOAT, {2});
    setInfo(b->add_input(), "b_t", onnx::TensorProto::FLOAT, {2});
    addNode(b, "Mul", {"a_t", "b_t"}, {"ab"}, "mul");
    addNode(b, "Add", {"s_in", "ab"}, {"s_out"}, "add");
    addNode(b, "Identity", {"s_out"}, {"y_t"}, "y");
    addNode(b, "Identity", {"a_t"}, {"z_t"}, "z");
    for (const char* o : {"s_out", "y_t", "z_t"})
        setInfo(b->add_output(), o, onnx::TensorProto::FLOAT, {2});
    for (const char* o : {"s_final", "y", "z"})
        g->add_output()->set_name(o);
    std::unique_ptr<ir::Graph> keep;
    auto out = runModel(m, "scan.onnx",
                        {ir::Tensor::fromVector<float>({2}, {0, 0}), ir::Tensor::fromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6}),
                         ir::Tensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                        &keep);
    ASSERT_EQ(out.size(), 3u);
    // b's columns in reverse: [3,6], [2,5], [1,4]; s: [3,12] -> [9,32] -> [14,56].
    EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{14, 56}));
    EXPECT_EQ(out[1].shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(out[1].toDoubles(), (std::vector<double>{3, 9, 14, 12, 32, 56}));
    EXPECT_EQ(out[2].shape(), (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(out[2].toDoubles(), (std::vector<double>{5, 6, 3, 4, 1, 2}));
    // Shapes known before the run: the sequence length is a static dim.
    const ir::Node* n = keep->findNode("scan");
    EXPECT_EQ(n->output(1)->type(), ir::TensorType::of(ir::DType::F32, {2, 3}));
    EXPECT_EQ(n->output(2)->type(), ir::TensorType::of(ir::DType::F32, {3, 2}));
}

// Export (issue 23): a body reads the outer values it captured by their names in the enclosing
// graph, even after a pass renamed them; both forms read back and compute the same.
TEST(LoopImport, AnExportedLoopReadsItsCapturedValuesByTheirNewNames) {
    const fs::path path = tempDir() / "loop.onnx";
    writeBytes(path, loopModel().SerializeAsString());
    auto g = importOnnx(path.string());
    ASSERT_TRUE(g.ok()) << g.error().message;
    ASSERT_TRUE((*g)->renameValue((*g)->findValue("w"), "w_renamed").ok());
    const std::vector<ir::Tensor> feeds{ir::Tensor::fromVector<float>({2}, {1, 2}),
                                        ir::Tensor::fromVector<int64_t>({}, {10})};
    for (OnnxExportForm form : {OnnxExportForm::AsIs, OnnxExportForm::Standard}) {
        OnnxExportOptions options;
        options.form = form;
        options.opsets = {{"", 16}};
        auto bytes = exportOnnx(**g, options);
        ASSERT_TRUE(bytes.ok()) << bytes.error().message;
        onnx::ModelProto m;
        ASSERT_TRUE(m.ParseFromString(*bytes));
        const onnx::NodeProto* loop = nullptr;
        for (const onnx::NodeProto& n : m.graph().node())
            if (n.op_type() == "Loop")
                loop = &n;
        ASSERT_NE(loop, nullptr);
        EXPECT_EQ(loop->input_size(), 3) << "M, cond and the carried x: the captured w is read by name";
        bool readsNewName = false;
        for (const onnx::NodeProto& n : loop->attribute(0).g().node())
            for (const std::string& in : n.input())
                readsNewName = readsNewName || in == "w_renamed";
        EXPECT_TRUE(readsNewName);
        EXPECT_EQ(loop->attribute(0).g().input_size(), 3);
        auto out = runModel(m, "exported.onnx", feeds);
        ASSERT_EQ(out.size(), 2u);
        EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{7, 14}));
        EXPECT_EQ(out[1].toDoubles(), (std::vector<double>{1, 2, 3, 6, 7, 14}));
    }
}

} // namespace
} // namespace sextant::frontend
