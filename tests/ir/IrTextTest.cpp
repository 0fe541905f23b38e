// Printer / parser round trip, golden text, parse errors; verifier; interpreter; op registry.

#include "TestUtil.h"

#include "core/ir/Parser.h"
#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor seededF32(std::vector<int64_t> shape, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    Tensor t(DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.mutableData<float>()[i] = dist(rng);
    return t;
}

/// A small CNN with awkward names, a symbolic batch, every attribute kind and a two-output node.
std::unique_ptr<Graph> buildSample() {
    auto g = std::make_unique<Graph>("sample cnn");
    TensorType inType;
    inType.dtype = DType::F32;
    inType.shape = {Dim::symbolic("N"), Dim::known(1), Dim::known(4), Dim::known(4)};
    Value* x = g->addInput("Input3", inType).value();
    Value* w = g->addConstant("conv/W:0", seededF32({2, 1, 3, 3}, 1)).value();
    Value* b = g->addConstant("conv.b", Tensor::fromVector<float>({2}, {0.5f, -0.25f})).value();
    Value* shape = g->addConstant("shape", Tensor::fromVector<int64_t>({2}, {0, 8})).value();
    Value* fcW = g->addConstant("fc_w", seededF32({8, 3}, 2)).value();
    Value* fcB = g->addConstant("fc_b", Tensor::fromVector<float>({3}, {0.1f, 1e-7f, -3.0f})).value();
    Node* conv = g->addNode(OpKind::Conv, "conv/1:0", {x, w, b}, {"conv_out"},
                            {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                             {"kernel_shape", std::vector<int64_t>{3, 3}},
                             {"auto_pad", std::string("NOTSET")}})
                     .value();
    conv->mutableProvenance() = {{"Convolution28", "Plus30"}, "import"};
    Node* relu = g->addNode(OpKind::Relu, "relu", {conv->output()}, {"relu_out"}).value();
    Node* drop = g->addNode(OpKind::Dropout, "drop", {relu->output()}, {"drop_out", "drop_mask"},
                            {{"ratio", 0.25}, {"note", std::string("tab\tquote\" \\ end")},
                             {"weights_hint", std::vector<double>{1.5, -2.0, 1e-20}},
                             {"tags", std::vector<std::string>{"a", "b c"}}})
                     .value();
    Node* pool = g->addNode(OpKind::MaxPool, "pool", {drop->output(0)}, {"pool_out"},
                            {{"kernel_shape", std::vector<int64_t>{2, 2}},
                             {"strides", std::vector<int64_t>{2, 2}}})
                     .value();
    Node* reshape = g->addNode(OpKind::Reshape, "flat", {pool->output(), shape}, {"flat_out"}).value();
    Node* gemm = g->addNode(OpKind::Gemm, "fc", {reshape->output(), fcW, fcB}, {"logits"},
                            {{"alpha", 1.0}, {"transB", int64_t{0}}})
                     .value();
    gemm->mutableProvenance() = {{"Times212"}, "fold/matmul-add"};
    Node* sm = g->addNode(OpKind::Softmax, "softmax", {gemm->output()}, {"probs"}, {{"axis", int64_t{-1}}}).value();
    g->setOutputs({sm->output(), gemm->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

std::map<std::string, Tensor> weightsOf(const Graph& g) {
    std::map<std::string, Tensor> w;
    for (const Value* c : g.constants())
        w[c->name()] = *c->constant();
    return w;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

TEST(OpRegistry, EveryOpIsComplete) {
    ASSERT_FALSE(allOps().empty());
    for (const OpInfo& op : allOps()) {
        SCOPED_TRACE(std::string(op.name));
        EXPECT_FALSE(op.summary.empty());
        EXPECT_GE(op.minInputs, 0);
        EXPECT_TRUE(op.maxInputs < 0 || op.maxInputs >= op.minInputs);
        EXPECT_GE(op.minOutputs, 1);
        EXPECT_GE(op.maxOutputs, op.minOutputs);
        auto found = findOp(op.domain, op.name);
        ASSERT_TRUE(found.has_value());
        EXPECT_EQ(*found, op.kind);
    }
    EXPECT_EQ(qualifiedOpName(OpKind::FusedConv), "sextant.FusedConv");
    EXPECT_EQ(findOp("ai.onnx", "Conv"), OpKind::Conv);
    EXPECT_FALSE(findOp("", "NoSuchOp").has_value());
}

// What a user reads and writes of the op table is the IR text (--print-changed, golden files,
// the GUI's diff): a node of every op, printed, must parse back as that op and print the same.
// A table row whose domain or name the printer and the parser spell differently fails here.
TEST(OpRegistry, EveryOpPrintsAndParsesBackAsItself) {
    for (const OpInfo& op : allOps()) {
        SCOPED_TRACE(qualifiedOpName(op.kind));
        Graph g("one op");
        std::vector<Value*> ins;
        for (int i = 0; i < op.minInputs; ++i)
            ins.push_back(g.addInput("x" + std::to_string(i), TensorType::of(DType::F32, {2, 3})).value());
        std::vector<std::string> outs;
        for (int i = 0; i < op.minOutputs; ++i)
            outs.push_back("y" + std::to_string(i));
        Node* n = g.addNode(op.kind, "n", ins, outs).value();
        for (Value* o : n->outputs())
            o->setType(TensorType::of(DType::F32, {2, 3}));
        g.setOutputs({n->output(0)});
        const std::string text = printGraph(g);
        auto parsed = parseGraph(text);
        ASSERT_TRUE(parsed.ok()) << parsed.error().message << "\n" << text;
        const Node* back = (*parsed)->findNode("n");
        ASSERT_NE(back, nullptr) << text;
        EXPECT_EQ(back->kind(), op.kind) << text;
        EXPECT_EQ(printGraph(**parsed), text);
    }
}

TEST(Printer, MatchesGoldenText) {
    auto g = buildSample();
    std::string text = printGraph(*g);
    const std::string path = std::string(SEXTANT_SOURCE_DIR) + "/tests/ir/golden/sample.ir";
    if (std::getenv("SEXTANT_UPDATE_GOLDEN")) // regenerate after an intended format change
        std::ofstream(path) << text;
    std::string golden = readFile(path);
    ASSERT_FALSE(golden.empty()) << "missing tests/ir/golden/sample.ir";
    EXPECT_EQ(text, golden);
}

TEST(Printer, QuotesAwkwardNamesAndInlinesSmallConstants) {
    auto g = buildSample();
    std::string text = printGraph(*g);
    EXPECT_NE(text.find("%\"conv/W:0\" = const f32[2,1,3,3] digest(\""), std::string::npos) << text;
    EXPECT_NE(text.find("%conv.b = const f32[2] [0.5, -0.25]"), std::string::npos) << text;
    EXPECT_NE(text.find("@\"conv/1:0\" origins=[\"Convolution28\", \"Plus30\"] by=\"import\""),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("f32[N,8]"), std::string::npos) << "symbolic batch should propagate\n" << text;
}

TEST(Parser, RoundTripIsExact) {
    auto g = buildSample();
    std::string text = printGraph(*g);
    auto weights = weightsOf(*g);
    auto parsed = parseGraph(text, &weights);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(printGraph(**parsed), text);
    EXPECT_TRUE(verifyGraph(**parsed).ok());
    // The parsed graph computes the same numbers.
    Tensor in = seededF32({2, 1, 4, 4}, 9);
    KernelContext ctx;
    auto a = interpret(*g, std::span<const Tensor>(&in, 1), ctx);
    auto b = interpret(**parsed, std::span<const Tensor>(&in, 1), ctx);
    ASSERT_TRUE(a.ok()) << a.error().message;
    ASSERT_TRUE(b.ok()) << b.error().message;
    ASSERT_EQ(a->size(), 2u);
    EXPECT_TRUE((*a)[0].identical((*b)[0]));
    EXPECT_TRUE((*a)[1].identical((*b)[1]));
}

TEST(Parser, ReadsGoldenFile) {
    auto g = buildSample();
    auto weights = weightsOf(*g);
    std::string golden = readFile(std::string(SEXTANT_SOURCE_DIR) + "/tests/ir/golden/sample.ir");
    auto parsed = parseGraph(golden, &weights);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(printGraph(**parsed), golden);
    const Node* drop = (*parsed)->findNode("drop");
    ASSERT_NE(drop, nullptr);
    EXPECT_EQ(drop->attrString("note", ""), "tab\tquote\" \\ end");
    EXPECT_EQ(drop->attrFloats("weights_hint"), (std::vector<double>{1.5, -2.0, 1e-20}));
    EXPECT_EQ(drop->numOutputs(), 2u);
}

TEST(Parser, FloatsRoundTripBitExactly) {
    Graph g("floats");
    Tensor t(DType::F32, {4});
    t.mutableData<float>()[0] = 0.1f;
    t.mutableData<float>()[1] = 1.0f / 3.0f;
    t.mutableData<float>()[2] = -std::numeric_limits<float>::infinity();
    t.mutableData<float>()[3] = 3.4028235e38f;
    Value* c = g.addConstant("c", t).value();
    Tensor d(DType::F64, {2});
    d.mutableData<double>()[0] = 0.1;
    d.mutableData<double>()[1] = 5e-324;
    Value* e = g.addConstant("d", d).value();
    Node* n = g.addNode(OpKind::Identity, "id", {c}, {"out"}, {{"eps", 1.0 / 3.0}}).value();
    ASSERT_TRUE(g.inferTypes().ok());
    g.setOutputs({n->output(), e});
    auto parsed = parseGraph(printGraph(g));
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_TRUE((*parsed)->findValue("c")->constant()->identical(t));
    EXPECT_TRUE((*parsed)->findValue("d")->constant()->identical(d));
    EXPECT_EQ((*parsed)->findNode("id")->attrFloat("eps", 0), 1.0 / 3.0);
}

TEST(Parser, IntegersOfEveryWidthRoundTripAndOutOfRangeIsAnError) {
    Graph g("ints");
    std::vector<Value*> outs;
    auto add = [&](const std::string& name, Tensor t) { outs.push_back(g.addConstant(name, std::move(t)).value()); };
    add("a", Tensor::fromVector<int16_t>({2}, {-32768, 32767}));
    add("b", Tensor::fromVector<uint16_t>({2}, {0, 65535}));
    add("c", Tensor::fromVector<uint32_t>({1}, {4294967295u}));
    add("d", Tensor::fromVector<uint64_t>({1}, {9007199254740993ull})); // 2^53 + 1: no double holds it
    g.setOutputs(outs);
    const std::string text = printGraph(g);
    EXPECT_NE(text.find("const u16[2] [0, 65535]"), std::string::npos) << text;
    auto parsed = parseGraph(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    for (const char* name : {"a", "b", "c", "d"})
        EXPECT_TRUE((*parsed)->findValue(name)->constant()->identical(*g.findValue(name)->constant())) << name;
    auto bad = parseGraph("graph @g() -> (%c: u16[1]) {\n  %c = const u16[1] [65536]\n  return %c\n}\n");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("does not fit u16"), std::string::npos) << bad.error().message;
}

TEST(Parser, ErrorsGiveLineColumnAndExpectation) {
    auto expectError = [](const std::string& text, const std::string& needle,
                          const std::map<std::string, Tensor>* weights = nullptr) {
        auto r = parseGraph(text, weights);
        ASSERT_FALSE(r.ok()) << "parsed: " << text;
        EXPECT_EQ(r.error().kind, ErrorKind::Parse);
        EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
    };
    expectError("graph @g(%x: f32[2]) -> (%y: f32[2]) {\n  %y: f32[2] = Frobnicate(%x) @n\n  return %y\n}\n",
                "line 2:16: unknown op 'Frobnicate'");
    expectError("graph @g(%x: f32[2]) -> (%y: f32[2]) {\n  %y: f32[2] = Relu(%z) @n\n  return %y\n}\n",
                "line 2:21: value 'z' is used before it is defined");
    expectError("graph @g(%x: f32[2) -> (%y: f32[2]) {\n}\n", "line 1:19: expected ']'");
    expectError("graph @g(%x: q7[2]) -> () {\n  return\n}\n", "line 1:14: unknown dtype 'q7'");
    expectError("graph @g() -> (%w: f32[20]) {\n  %w = const f32[20] digest(\"0123456789abcdef\")\n  return %w\n}\n",
                "line 2:3: constant 'w' is printed as a digest and no weight of that name was given");
    std::map<std::string, Tensor> wrong{{"w", Tensor(DType::F32, {20})}};
    expectError("graph @g() -> (%w: f32[20]) {\n  %w = const f32[20] digest(\"0123456789abcdef\")\n  return %w\n}\n",
                "line 2:29: weight 'w' has digest", &wrong);
    expectError("graph @g() -> (%c: i64[2]) {\n  %c = const i64[2] [1]\n  return %c\n}\n",
                "expected 2 elements for i64[2], got 1");
    expectError("graph @g(%x: f32[2]) -> (%x: f32[3]) {\n  return %x\n}\n",
                "output 'x' is declared f32[3] but defined as f32[2]");
}

TEST(Verifier, AcceptsWellFormedGraph) {
    auto g = buildSample();
    Status st = verifyGraph(*g);
    EXPECT_TRUE(st.ok()) << st.error().message;
}

TEST(Verifier, CatchesUseBeforeDefinition) {
    Graph g("g");
    Value* x = g.addInput("x", TensorType::of(DType::F32, {2})).value();
    Node* first = g.addNode(OpKind::Relu, "first", {x}, {"a"}).value();
    // "second" reads "a" but is inserted before its producer.
    Node* second = g.addNode(OpKind::Sigmoid, "second", {first->output()}, {"b"}, {}, first).value();
    g.setOutputs({second->output()});
    first->output()->setType(TensorType::of(DType::F32, {2}));
    second->output()->setType(TensorType::of(DType::F32, {2}));
    Status st = verifyGraph(g);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().subject, "second");
    EXPECT_NE(st.error().message.find("input 'a' is used before it is defined"), std::string::npos)
        << st.error().message;
    ASSERT_TRUE(g.topoSort().ok());
    EXPECT_TRUE(verifyGraph(g).ok());
}

TEST(Verifier, CatchesArityAndTypeErrors) {
    Graph g("g");
    Value* x = g.addInput("x", TensorType::of(DType::F32, {2})).value();
    Node* relu = g.addNode(OpKind::Relu, "twice", {x, x}, {"y"}).value();
    relu->output()->setType(TensorType::of(DType::F32, {2}));
    g.setOutputs({relu->output()});
    Status st = verifyGraph(g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("node 'twice' (Relu): has 2 inputs, the op takes 1..1"),
              std::string::npos)
        << st.error().message;

    Graph h("h");
    Value* hx = h.addInput("x", TensorType::of(DType::F32, {2})).value();
    Node* sig = h.addNode(OpKind::Sigmoid, "sig", {hx}, {"y"}).value();
    sig->output()->setType(TensorType::of(DType::F32, {3}));
    h.setOutputs({sig->output()});
    Status st2 = verifyGraph(h);
    ASSERT_FALSE(st2.ok());
    EXPECT_NE(st2.error().message.find("output 'y' has type f32[3] but inference gives f32[2]"),
              std::string::npos)
        << st2.error().message;

    Graph k("k");
    Value* kx = k.addInput("x", TensorType::of(DType::F32, {1, 1, 4, 4})).value();
    Node* pool = k.addNode(OpKind::MaxPool, "pool", {kx}, {"y"}, {{"kernel_shape", std::vector<int64_t>{2}}}).value();
    pool->output()->setType(TensorType::of(DType::F32, {1, 1, 3, 3}));
    k.setOutputs({pool->output()});
    Status st3 = verifyGraph(k);
    ASSERT_FALSE(st3.ok());
    EXPECT_NE(st3.error().message.find("kernel_shape has 1 dims"), std::string::npos) << st3.error().message;
}

TEST(Interpreter, RecordsEveryValueAndChecksInputs) {
    auto g = buildSample();
    Tensor in = seededF32({2, 1, 4, 4}, 3);
    KernelContext ctx;
    std::map<std::string, Tensor> values;
    auto out = interpret(*g, std::span<const Tensor>(&in, 1), ctx, &values);
    ASSERT_TRUE(out.ok()) << out.error().message;
    for (const char* name : {"Input3", "conv_out", "relu_out", "drop_out", "drop_mask", "pool_out",
                             "flat_out", "logits", "probs"})
        EXPECT_TRUE(values.count(name)) << name;
    ASSERT_EQ(out->size(), 2u);
    const Tensor& probs = (*out)[0];
    EXPECT_EQ(probs.shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(probs.dtype(), DType::F64);
    for (int64_t r = 0; r < 2; ++r)
        EXPECT_NEAR(probs.at(r * 3) + probs.at(r * 3 + 1) + probs.at(r * 3 + 2), 1.0, 1e-12);
    // f32 and f64 agree on the whole network.
    KernelContext f32;
    f32.compute = DType::F32;
    auto lo = interpret(*g, std::span<const Tensor>(&in, 1), f32);
    ASSERT_TRUE(lo.ok()) << lo.error().message;
    EXPECT_EQ((*lo)[1].dtype(), DType::F32);
    expectValues((*lo)[1], {2, 3}, (*out)[1].toDoubles(), 1e-5);

    Tensor wrong = seededF32({2, 3, 4, 4}, 3);
    auto bad = interpret(*g, std::span<const Tensor>(&wrong, 1), ctx);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("graph input 'Input3' has shape [2,3,4,4]"), std::string::npos)
        << bad.error().message;
    auto none = interpret(*g, std::span<const Tensor>(), ctx);
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.error().message.find("takes 1 inputs, got 0"), std::string::npos);
}

TEST(Interpreter, EvaluateNodeNamesTheNodeOnBadInputs) {
    auto g = buildSample();
    const Node* conv = g->findNode("conv/1:0");
    ASSERT_NE(conv, nullptr);
    KernelContext ctx;
    Tensor x = seededF32({1, 1, 4, 4}, 4);
    std::vector<Tensor> two{x, *g->findValue("conv/W:0")->constant()};
    auto r = evaluateNode(*conv, two, ctx);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().subject, "conv/1:0");
    EXPECT_NE(r.error().message.find("node 'conv/1:0' (Conv): expected 3 input tensors, got 2"),
              std::string::npos)
        << r.error().message;
    std::vector<Tensor> badChannels{seededF32({1, 1, 4, 4}, 4), seededF32({2, 2, 3, 3}, 5),
                                    *g->findValue("conv.b")->constant()};
    auto r2 = evaluateNode(*conv, badChannels, ctx);
    ASSERT_FALSE(r2.ok());
    EXPECT_NE(r2.error().message.find("conv/W:0"), std::string::npos) << r2.error().message;
}

TEST(Parser, SurvivesCorruptedText) {
    // Deterministic mutations of a valid text: every result is a graph or an error, never a crash,
    // and whatever parses prints back to text that parses to the same print.
    auto g = buildSample();
    const std::string text = printGraph(*g);
    auto weights = weightsOf(*g);
    std::mt19937 rng(1234);
    const std::string alphabet = "%@\"\\[](){}:,=-.0123456789eaf_ \n/x";
    int parsed = 0;
    for (int iter = 0; iter < 3000; ++iter) {
        std::string t = text;
        int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits; ++e) {
            size_t pos = rng() % t.size();
            switch (rng() % 3) {
            case 0: t.erase(pos, 1 + rng() % 4); break;
            case 1: t.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
            default: t[pos] = alphabet[rng() % alphabet.size()]; break;
            }
        }
        auto r = parseGraph(t, &weights);
        if (!r.ok()) {
            EXPECT_FALSE(r.error().message.empty());
            continue;
        }
        ++parsed;
        std::string again = printGraph(**r);
        auto r2 = parseGraph(again, &weights);
        ASSERT_TRUE(r2.ok()) << r2.error().message << "\n" << again;
        EXPECT_EQ(printGraph(**r2), again);
    }
    EXPECT_GT(parsed, 0);
}
