// Shape specialisation (core/ir/Specialize.h): --shape parsing, input checks, resolution of the
// Shape -> Gather -> Concat -> Reshape chains exported models use, and unresolved-dim errors.
#include "core/ir/Interpreter.h"
#include "core/ir/Parser.h"
#include "core/ir/Specialize.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace sextant::ir {
namespace {

// A PaddleOCR-style head: flatten everything but the batch, where the batch extent is read from
// the input at run time (Shape -> Gather -> Concat -> Reshape).
const char* kDynamicFlatten = R"(graph @flatten(%x: f32[N,3,H,W]) -> (%y: f32[N,?]) {
  %i0 = const i64[1] [0]
  %m1 = const i64[1] [-1]
  %s: i64[4] = Shape(%x) @shape
  %n: i64[1] = Gather(%s, %i0) {axis = 0} @gather
  %spec: i64[2] = Concat(%n, %m1) {axis = 0} @concat
  %y: f32[N,?] = Reshape(%x, %spec) @reshape
  return %y
}
)";

std::unique_ptr<Graph> parse(const char* text) {
    auto g = parseGraph(text);
    EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
    return g.ok() ? std::move(*g) : nullptr;
}

std::string errorOf(const Status& s) { return s.ok() ? "(no error)" : s.error().message; }

TEST(ShapeSpec, ParsesNameAndDims) {
    auto s = parseShapeSpec("x=1x3x48x320");
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(s->first, "x");
    EXPECT_EQ(s->second, (std::vector<int64_t>{1, 3, 48, 320}));
    // ONNX names may hold '=' or ':'; the dims follow the last '='.
    auto t = parseShapeSpec("input:0=1x256x256x3");
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->first, "input:0");
    auto scalar = parseShapeSpec("sr=");
    ASSERT_TRUE(scalar.ok());
    EXPECT_TRUE(scalar->second.empty());
    EXPECT_EQ(formatShapeSpec({1, 3, 48, 320}), "1x3x48x320");
}

TEST(ShapeSpec, RejectsMalformedSpecs) {
    for (const char* bad : {"x", "=1x2", "x=1xx2", "x=1x", "x=-1x3", "x=ax3", "x=1x3.5"}) {
        auto s = parseShapeSpec(bad);
        EXPECT_FALSE(s.ok()) << bad;
        if (!s.ok()) {
            EXPECT_NE(s.error().message.find(bad), std::string::npos) << s.error().message;
        }
    }
}

TEST(ShapeSpec, ListsParseAndPrintBack) {
    auto two = parseShapeList("  x=1x3x640x640\ty=2 ");
    ASSERT_TRUE(two.ok()) << two.error().message;
    EXPECT_EQ(two->size(), 2u);
    EXPECT_EQ(two->at("x"), (std::vector<int64_t>{1, 3, 640, 640}));
    EXPECT_EQ(two->at("y"), (std::vector<int64_t>{2}));
    EXPECT_EQ(formatShapeList(*two), "x=1x3x640x640 y=2");
    auto empty = parseShapeList("   ");
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE(empty->empty());
    auto twice = parseShapeList("x=1 x=2");
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.error().message.find("input 'x' is given two shapes"), std::string::npos);
    auto bad = parseShapeList("x=1x3 y");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("'y' is not NAME=DIMS"), std::string::npos) << bad.error().message;
}

TEST(Specialize, ResolvesShapeArithmeticAndKeepsResults) {
    auto g = parse(kDynamicFlatten);
    ASSERT_TRUE(g);
    auto originalCloned = g->clone();
    ASSERT_TRUE(originalCloned.ok()) << originalCloned.error().message;
    std::unique_ptr<Graph> original = std::move(originalCloned).value();
    std::vector<std::string> folded;
    Status s = specializeInputs(*g, {{"x", {2, 3, 4, 5}}}, &folded);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(g->inputs()[0]->type().str(), "f32[2,3,4,5]");
    EXPECT_EQ(g->outputs()[0]->type().str(), "f32[2,60]");
    // The shape arithmetic became constants under the same names; the Reshape stays.
    EXPECT_EQ(folded, (std::vector<std::string>{"shape", "gather", "concat"}));
    ASSERT_EQ(g->numNodes(), 1u);
    ASSERT_NE(g->findValue("spec"), nullptr);
    ASSERT_TRUE(g->findValue("spec")->isConstant());
    EXPECT_EQ(g->findValue("spec")->constant()->toDoubles(), (std::vector<double>{2, -1}));

    // Same numbers as the unspecialised graph.
    Tensor x(DType::F32, {2, 3, 4, 5});
    for (int64_t i = 0; i < x.numel(); ++i)
        x.set(i, 0.25 * static_cast<double>(i % 17) - 1.0);
    KernelContext ctx;
    auto before = interpret(*original, std::span<const Tensor>(&x, 1), ctx);
    auto after = interpret(*g, std::span<const Tensor>(&x, 1), ctx);
    ASSERT_TRUE(before.ok() && after.ok());
    EXPECT_TRUE((*before)[0].identical((*after)[0]));
}

TEST(Specialize, BindsSharedSymbolsAcrossInputs) {
    auto g = parse(R"(graph @rnn(%x: f32[B,T], %h: f32[2,B,4]) -> (%y: f32[2,B,4]) {
  %y: f32[2,B,4] = Relu(%h) @relu
  return %y
}
)");
    ASSERT_TRUE(g);
    Status s = specializeInputs(*g, {{"x", {3, 100}}});
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(g->inputs()[1]->type().str(), "f32[2,3,4]");
    EXPECT_EQ(g->outputs()[0]->type().str(), "f32[2,3,4]");

    auto conflict = parse(R"(graph @rnn(%x: f32[B,T], %h: f32[2,B,4]) -> (%y: f32[2,B,4]) {
  %y: f32[2,B,4] = Relu(%h) @relu
  return %y
}
)");
    Status c = specializeInputs(*conflict, {{"x", {3, 100}}, {"h", {2, 5, 4}}});
    EXPECT_EQ(errorOf(c), "dim 'B' is 5 in input 'h' but 3 in input 'x'");
}

TEST(Specialize, RejectsBadRequests) {
    auto g = parse(kDynamicFlatten);
    ASSERT_TRUE(g);
    EXPECT_EQ(errorOf(specializeInputs(*g, {{"y", {1, 3, 4, 4}}})),
              "cannot specialise 'y': the graph has no input of that name (inputs: 'x')");
    EXPECT_EQ(errorOf(specializeInputs(*g, {{"x", {1, 3, 4}}})),
              "input 'x' has rank 4 (f32[N,3,H,W]) but the shape [1,3,4] has rank 3");
    EXPECT_EQ(errorOf(specializeInputs(*g, {{"x", {1, 4, 4, 4}}})),
              "input 'x' dim 1 is fixed to 3 by the model (f32[N,3,H,W]) but the shape "
              "[1,4,4,4] gives 4");
    EXPECT_NE(errorOf(specializeInputs(*g, {{"x", {1 << 20, 3, 1 << 20, 1 << 10}}}))
                  .find("is too large"),
              std::string::npos);
}

TEST(Specialize, NamesADimThatStaysUnresolved) {
    // The second input's dim M is never given: the error names it and the tensor.
    auto g = parse(R"(graph @two(%x: f32[N,4], %z: f32[M,4]) -> (%y: f32[N,4]) {
  %y: f32[N,4] = Relu(%x) @relu
  return %y
}
)");
    ASSERT_TRUE(g);
    EXPECT_EQ(errorOf(specializeInputs(*g, {{"x", {2, 4}}})),
              "cannot resolve dim 'M' of tensor 'z' (a graph input: give its shape too)");

    // A Reshape whose target shape is data (a graph input), not shape arithmetic.
    auto r = parse(R"(graph @data(%x: f32[N,4], %t: i64[2]) -> (%y: f32[?,?]) {
  %y: f32[?,?] = Reshape(%x, %t) @reshape
  return %y
}
)");
    ASSERT_TRUE(r);
    std::string e = errorOf(specializeInputs(*r, {{"x", {2, 4}}}));
    EXPECT_NE(e.find("of tensor 'y' (output of node 'reshape' (Reshape)) after specialising the "
                     "inputs"),
              std::string::npos)
        << e;
    EXPECT_EQ(e.rfind("cannot resolve ", 0), 0u) << e;
}

TEST(Specialize, SaysWhichInputNeedsAShape) {
    auto g = parse(kDynamicFlatten);
    ASSERT_TRUE(g);
    EXPECT_EQ(symbolicInputs(*g).size(), 1u);
    EXPECT_EQ(errorOf(requireStaticInputs(*g)),
              "input 'x' has symbolic dims f32[N,3,H,W]: give it a concrete shape with --shape "
              "x=Nx3xNxN (N: a number per symbolic dim)");
    ASSERT_TRUE(specializeInputs(*g, {{"x", {1, 3, 8, 8}}}).ok());
    EXPECT_TRUE(requireStaticInputs(*g).ok());
    EXPECT_TRUE(symbolicInputs(*g).empty());
}

} // namespace
} // namespace sextant::ir
