// Shape refinement (issue 21 item 4): a static model whose value_info leaves activations' dims
// unknown, as tf2onnx writes them, computing its Resize sizes with Shape -> Slice -> Concat. The
// importer takes declared dims where its inference cannot tell them and rejects a declaration that
// contradicts what the model computes; fold-constants infers a node's type again once its inputs
// fold, so every Shape of the chain folds and nothing is left for the host.
#include "PassTestUtil.h"

#include "core/frontend/OnnxImporter.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

void addI64(onnx::GraphProto& g, const std::string& name, std::vector<int64_t> values) {
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values)
        t->add_int64_data(v);
}

void declare(onnx::ValueInfoProto* info, const std::string& name, std::vector<std::string> dims) {
    info->set_name(name);
    auto* tt = info->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (const std::string& d : dims) {
        auto* dim = tt->mutable_shape()->add_dim();
        if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
            dim->set_dim_value(std::stoll(d));
        else
            dim->set_dim_param(d);
    }
}

void node(onnx::GraphProto& g, const std::string& op, const std::string& name, std::vector<std::string> in,
          std::vector<std::string> out) {
    onnx::NodeProto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const std::string& i : in)
        n->add_input(i);
    for (const std::string& o : out)
        n->add_output(o);
}

/// x [1,4,16,16] -> Relu c -> Resize u to twice Shape(c)'s H and W -> Resize y to twice Shape(u)'s.
/// `cDims` is what value_info declares for c (u is declared [unk,4,?,?]).
onnx::ModelProto upsampleChain(std::vector<std::string> cDims) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    onnx::GraphProto& g = *m.mutable_graph();
    g.set_name("refine");
    declare(g.add_input(), "x", {"1", "4", "16", "16"});
    declare(g.add_output(), "y", {"unk__1", "4", "unk__4", "unk__5"});
    declare(g.add_value_info(), "c", cDims);
    declare(g.add_value_info(), "u", {"unk__1", "4", "unk__2", "unk__3"});
    addI64(g, "st", {2});
    addI64(g, "en", {4});
    addI64(g, "two", {2, 2});
    addI64(g, "nc", {1, 4});
    node(g, "Relu", "relu", {"x"}, {"c"});
    for (const auto& [from, to, tag] : {std::tuple{"c", "u", "1"}, std::tuple{"u", "y", "2"}}) {
        const std::string t = tag;
        node(g, "Shape", "shape" + t, {from}, {"s" + t});
        node(g, "Slice", "slice" + t, {"s" + t, "st", "en"}, {"hw" + t});
        node(g, "Mul", "mul" + t, {"hw" + t, "two"}, {"hw2" + t});
        node(g, "Concat", "concat" + t, {"nc", "hw2" + t}, {"sizes" + t});
        g.mutable_node(g.node_size() - 1)->add_attribute()->set_name("axis");
        g.mutable_node(g.node_size() - 1)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
        g.mutable_node(g.node_size() - 1)->mutable_attribute(0)->set_i(0);
        node(g, "Resize", "resize" + t, {from, "", "", "sizes" + t}, {to});
    }
    return m;
}

Expected<std::unique_ptr<ir::Graph>> importModel(const onnx::ModelProto& m) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                       ("sextant-refine-" + std::to_string(::getpid()) + "-" + info->name() + ".onnx");
    std::string bytes;
    m.SerializeToString(&bytes);
    std::ofstream(path, std::ios::binary) << bytes;
    auto g = frontend::importOnnx(path.string());
    std::filesystem::remove(path);
    return g;
}

const ir::Value* valueNamed(const ir::Graph& g, const std::string& name) {
    for (const ir::Node* n : g.nodes())
        for (const ir::Value* o : n->outputs())
            if (o->name() == name)
                return o;
    return nullptr;
}

} // namespace

TEST(ShapeRefinement, DeclaredDimsRefineWhatInferenceCannotTell) {
    auto g = importModel(upsampleChain({"unk__1", "4", "unk__2", "unk__3"}));
    ASSERT_TRUE(g.ok()) << g.error().message;
    // c is computed from the static input: the declaration's unknown dims do not replace it.
    EXPECT_EQ(valueNamed(**g, "c")->type().str(), "f32[1,4,16,16]");
    // u's sizes are computed at run time: the declared channel count is all that is known.
    EXPECT_EQ(valueNamed(**g, "u")->type().str(), "f32[?,4,?,?]");
}

TEST(ShapeRefinement, ShapeChainsFoldOnceTheSizesDo) {
    auto g = importModel(upsampleChain({"unk__1", "4", "unk__2", "unk__3"}));
    ASSERT_TRUE(g.ok()) << g.error().message;
    PipelineResult r = pipeline(**g);
    ASSERT_TRUE(r.graph);
    EXPECT_EQ(countKind(*r.graph, OpKind::Shape), 0) << "a Shape was left for the host";
    EXPECT_EQ(r.graph->outputs()[0]->type().str(), "f32[1,4,64,64]");
    expectSameOutputs(runF64(**g), runF64(*r.graph));
}

TEST(ShapeRefinement, AContradictingDeclarationNamesBothTypes) {
    auto g = importModel(upsampleChain({"1", "8", "16", "16"}));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().message,
              "node 'relu' (Relu): value 'c' is declared f32[1,8,16,16] but computes f32[1,4,16,16]");
}
