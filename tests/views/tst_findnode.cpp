// Find in the graph view: node and tensor names, and ONNX node names followed through
// provenance into fused nodes, removals and folded constants.
#include "views/FindNode.h"
#include "core/frontend/OnnxImporter.h"
#include "core/ir/Tensor.h"

#include <QtTest>

#include <algorithm>

using namespace sextant;
using sextant::views::findCompletions;
using sextant::views::findNode;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

passes::PipelineResult compileSample() {
    auto g = frontend::importOnnx(SEXTANT_SOURCE_DIR "/samples/residual_cnn.onnx");
    if (!g.ok())
        qFatal("%s", g.error().message.c_str());
    auto r = passes::runPipeline(**g, passes::PipelineConfig{});
    if (!r.ok())
        qFatal("%s", r.error().message.c_str());
    return std::move(r).value();
}

} // namespace

class TestFindNode : public QObject {
    Q_OBJECT
private slots:
    void followsNamesAndProvenanceInTheSample() {
        const passes::PipelineResult r = compileSample();
        const ir::Graph& g = *r.graph;

        // A node of the graph on screen: selected, nothing to explain.
        auto byName = findNode(g, r, "  block1_conv ");
        QCOMPARE(byName.node, std::string("block1_conv"));
        QVERIFY(byName.message.empty());

        // An ONNX node that fusion merged: the fused node, and who made it.
        auto fused = findNode(g, r, "block1_bn");
        QCOMPARE(fused.node, std::string("block1_conv"));
        QVERIFY2(contains(fused.message, "ONNX node 'block1_bn' is part of node 'block1_conv'"), fused.message.c_str());
        QVERIFY2(contains(fused.message, "fuse/fuse-conv-bias-act"), fused.message.c_str());

        // A tensor: its producer.
        auto tensor = findNode(g, r, "block1_relu_out");
        QCOMPARE(tensor.node, std::string("block1_conv"));
        QVERIFY(contains(tensor.message, "is an output of node 'block1_conv'"));

        // Inputs and weights have no node to select; the message says what they are.
        auto input = findNode(g, r, "image");
        QVERIFY(input.node.empty());
        QVERIFY2(contains(input.message, "'image' is a graph input"), input.message.c_str());
        auto weight = findNode(g, r, "fc.weight");
        QVERIFY(weight.node.empty());
        QVERIFY(contains(weight.message, "is a constant"));

        auto nothing = findNode(g, r, "no_such_thing");
        QVERIFY(nothing.node.empty());
        QVERIFY(contains(nothing.message, "no node, value or ONNX node named 'no_such_thing'"));
        QVERIFY(findNode(g, r, "   ").node.empty());

        // In the input snapshot the ONNX node is still a node of its own.
        std::shared_ptr<const ir::Graph> input0 = r.snapshots.front().graph();
        QVERIFY(input0);
        QCOMPARE(findNode(*input0, r, "block1_bn").node, std::string("block1_bn"));

        // Completions: the node names, then the ONNX names only provenance knows.
        const std::vector<std::string> names = findCompletions(g);
        QVERIFY(std::find(names.begin(), names.end(), "block1_conv") != names.end());
        QVERIFY(std::find(names.begin(), names.end(), "block1_bn") != names.end());
        QCOMPARE(std::count(names.begin(), names.end(), std::string("block1_conv")), 1);
    }

    void patternsMatchNamesOpTypesAndShapes() {
        const passes::PipelineResult r = compileSample();
        const ir::Graph& g = *r.graph;
        QVERIFY(!findNode(g, r, "fusedconv").known); // names nothing: the find box tries a pattern
        QVERIFY(findNode(g, r, "block1_bn").known);

        // An op type, in any case: both fused convolutions, in graph order.
        auto convs = views::findMatching(g, "fusedconv");
        QVERIFY(convs.ok());
        QCOMPARE(*convs, (std::vector<std::string>{"block1_conv", "block2_conv"}));
        // A name pattern.
        auto blocks = views::findMatching(g, "^block\\d_conv$");
        QVERIFY(blocks.ok());
        QCOMPARE(blocks->size(), size_t(2));
        // An output type: the NC1HWC0 values of 16 channels at 32x32.
        auto shaped = views::findMatching(g, "\\[1,16,32,32\\]@NC1HWC0");
        QVERIFY(shaped.ok());
        QCOMPARE(*shaped, (std::vector<std::string>{"block1_conv", "block2_conv", "skip_add"}));
        // Nothing matches: an empty list, not an error.
        auto none = views::findMatching(g, "lstm");
        QVERIFY(none.ok() && none->empty());
        // A broken pattern says what is wrong.
        auto broken = views::findMatching(g, "conv(");
        QVERIFY(!broken.ok());
        QVERIFY2(contains(broken.error().message, "'conv(' is not a regular expression"), broken.error().message.c_str());
    }

    void removedAndFoldedNodesAreExplained() {
        ir::Graph g("small");
        ir::Value* x = *g.addInput("x", ir::TensorType::of(ir::DType::F32, {1, 4}));
        ir::Value* a = *g.addConstant("a", ir::Tensor::fromVector<float>({4}, {1, 2, 3, 4}));
        ir::Value* b = *g.addConstant("b", ir::Tensor::fromVector<float>({4}, {1, 1, 1, 1}));
        ir::Node* id = *g.addNode(ir::OpKind::Identity, "keep_me", {x}, {"xi"});
        ir::Node* sum = *g.addNode(ir::OpKind::Add, "constant_sum", {a, b}, {"ab"});
        ir::Node* out = *g.addNode(ir::OpKind::Add, "add", {id->output(), sum->output()}, {"y"});
        g.setOutputs({out->output()});
        for (ir::Node* n : {id, sum, out}) // as the importer records them
            n->mutableProvenance() = ir::Provenance{{n->name()}, "import"};
        QVERIFY(g.inferTypes().ok());
        auto r = passes::runPipeline(g, passes::PipelineConfig{});
        QVERIFY2(r.ok(), r.ok() ? "" : r.error().message.c_str());

        auto removed = findNode(*r->graph, *r, "keep_me");
        QVERIFY(removed.node.empty());
        QVERIFY2(contains(removed.message, "'keep_me' was removed by canonicalize/remove-identity"), removed.message.c_str());
        auto folded = findNode(*r->graph, *r, "constant_sum");
        QVERIFY(folded.node.empty());
        QVERIFY2(contains(folded.message, "ONNX node 'constant_sum' was folded into constant"), folded.message.c_str());
    }
};

QTEST_GUILESS_MAIN(TestFindNode)
#include "tst_findnode.moc"
