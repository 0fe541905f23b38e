// The typed node fields (precision, the view mark, a group's fused body) and the enums behind
// them: names round-trip, the IR text keeps the attribute syntax they had (byte for byte), the
// parser reads that syntax into the fields, clones copy them, the verifier checks them.

#include "TestUtil.h"

#include "core/ir/FusedBody.h"
#include "core/ir/Interpreter.h"
#include "core/ir/Parser.h"
#include "core/ir/Precision.h"
#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

using namespace sextant;
using namespace sextant::ir;

namespace {

/// Text as the printer writes it, with every typed field and attributes sorting before, between
/// and after them (transB > precision > body; Clip's attributes inside a body step).
const char* kTyped =
    "graph @typed(%x: f32[2,4], %w: f32[2,4], %b: f32[3,4]) -> (%y: f32[2,3], %f: f32[8]) {\n"
    "  %shape = const i64[1] [8]\n"
    "  %g: f32[2,4] = sextant.ElementwiseGroup(%x, %w) {body = [\"Mul(i0,i1)\", \"Clip(t0) max=6 min=0\", "
    "\"Add(t1,i1)\"], precision = \"f16\"} @grp origins=[\"a\", \"c\", \"m\"] by=\"fuse/fuse-elementwise-chain\"\n"
    "  %y: f32[2,3] = Gemm(%g, %b) {alpha = 1.0, precision = \"f16-acc-f32\", transB = 1} @fc\n"
    "  %f: f32[8] = Reshape(%g, %shape) {view = 1} @flat\n"
    "  return %y, %f\n"
    "}\n";

std::unique_ptr<Graph> parseOk(const std::string& text) {
    auto g = parseGraph(text);
    EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().message);
    return g.ok() ? std::move(*g) : nullptr;
}

std::string parseError(const std::string& text) {
    auto g = parseGraph(text);
    return g.ok() ? std::string("parsed") : g.error().message;
}

} // namespace

TEST(PrecisionNames, RoundTrip) {
    for (Precision p : {Precision::F32, Precision::F16, Precision::F16AccF32}) {
        ASSERT_TRUE(parsePrecision(precisionName(p)).has_value()) << precisionName(p);
        EXPECT_EQ(*parsePrecision(precisionName(p)), p);
    }
    EXPECT_EQ(precisionName(Precision::F16AccF32), "f16-acc-f32");
    EXPECT_EQ(precisionName(Precision::Unset), "");
    EXPECT_FALSE(parsePrecision("").has_value()) << "unset is no name";
    EXPECT_FALSE(parsePrecision("bf16").has_value());
    EXPECT_FALSE(parsePrecision("F16").has_value()) << "names are lower-case, as the JSON has them";
    for (NpuLayout l : {NpuLayout::NC1HWC0, NpuLayout::NCHW})
        EXPECT_EQ(*parseNpuLayout(npuLayoutName(l)), l);
    EXPECT_FALSE(parseNpuLayout("NHWC").has_value());
}

TEST(TypedFields, ParsedThenPrintedIsIdentical) {
    auto g = parseOk(kTyped);
    ASSERT_TRUE(g);
    EXPECT_EQ(printGraph(*g), kTyped);

    const Node* grp = g->findNode("grp");
    const Node* fc = g->findNode("fc");
    const Node* flat = g->findNode("flat");
    ASSERT_TRUE(grp && fc && flat);
    // Fields, not attributes.
    EXPECT_EQ(grp->precision(), Precision::F16);
    EXPECT_EQ(fc->precision(), Precision::F16AccF32);
    EXPECT_EQ(flat->precision(), Precision::Unset);
    EXPECT_TRUE(flat->isView());
    EXPECT_FALSE(fc->isView());
    EXPECT_TRUE(grp->attrs().empty());
    EXPECT_EQ(fc->attrs().size(), 2u) << "alpha and transB";
    EXPECT_TRUE(flat->attrs().empty());
    ASSERT_NE(grp->body(), nullptr);
    EXPECT_EQ(fc->body(), nullptr);
    const FusedBody& body = *grp->body();
    ASSERT_EQ(body.steps.size(), 3u);
    EXPECT_EQ(body.steps[1].op, OpKind::Clip);
    EXPECT_EQ(body.steps[1].operands, std::vector<BodyOperand>{BodyOperand::step(0)});
    ASSERT_EQ(body.steps[1].attrs.size(), 2u);
    EXPECT_EQ(body.steps[1].attrs[0].first, "max");
    EXPECT_EQ(body.steps[1].attrs[0].second, 6.0);
    EXPECT_EQ(body.steps[2].operands,
              (std::vector<BodyOperand>{BodyOperand::step(1), BodyOperand::input(1)}));
    EXPECT_TRUE(verifyGraph(*g).ok());

    // The inspector's rows: the same names in the same order as the text.
    std::vector<std::string> names;
    forEachPrintedAttribute(*fc, [&](std::string_view n, const Attribute&) { names.emplace_back(n); });
    EXPECT_EQ(names, (std::vector<std::string>{"alpha", "precision", "transB"}));
}

TEST(TypedFields, CloneCopiesThemAndSettersCountAsChanges) {
    auto g = parseOk(kTyped);
    ASSERT_TRUE(g);
    auto c = g->clone();
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(printGraph(**c), kTyped);
    EXPECT_EQ((*c)->findNode("grp")->body(), g->findNode("grp")->body()) << "immutable, shared";

    Node* fc = (*c)->findNode("fc");
    const uint32_t v0 = fc->version();
    fc->setPrecision(Precision::F32);
    EXPECT_GT(fc->version(), v0);
    const uint32_t v1 = fc->version();
    (*c)->findNode("flat")->setView(false);
    Node* grp = (*c)->findNode("grp");
    const uint32_t v2 = grp->version();
    grp->setBody(nullptr);
    EXPECT_GT(grp->version(), v2);
    EXPECT_EQ(fc->version(), v1);
    const std::string text = printGraph(**c);
    EXPECT_NE(text.find("{alpha = 1.0, precision = \"f32\", transB = 1} @fc"), std::string::npos) << text;
    EXPECT_NE(text.find("Reshape(%g, %shape) @flat"), std::string::npos) << text;
    // The original is untouched.
    EXPECT_EQ(printGraph(*g), kTyped);
}

TEST(TypedFields, TheGroupComputesItsStructuredBody) {
    auto g = parseOk(kTyped);
    ASSERT_TRUE(g);
    Tensor x = Tensor::fromVector<float>({2, 4}, {1, -2, 3, 4, 0.5f, 2, -1, 8});
    Tensor w = Tensor::fromVector<float>({2, 4}, {2, 2, 2, 2, 1, 1, 1, 1});
    Tensor b = Tensor::fromVector<float>({3, 4}, {0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0});
    KernelContext ctx;
    auto out = interpret(*g, std::vector<Tensor>{x, w, b}, ctx);
    ASSERT_TRUE(out.ok()) << out.error().message;
    // clip(x * w, 0, 6) + w
    EXPECT_EQ((*out)[1].toDoubles(), (std::vector<double>{4, 2, 8, 8, 1.5, 3, 1, 7}));
}

TEST(FusedBody, TextRoundTripsAndErrorsSayWhy) {
    const std::vector<std::string> lines = {"LeakyRelu(i0) alpha=0.20000000000000001", "Clip(t0) max=0.5 min=-0.5",
                                            "Add(t1,i1)", "Sub(i1,-)"};
    Expected<FusedBody> body = parseBody(lines);
    ASSERT_TRUE(body.ok()) << body.error().message;
    EXPECT_EQ(bodyText(*body), lines);
    EXPECT_EQ(body->steps[3].operands[1].kind, BodyOperand::Kind::Omitted);
    EXPECT_TRUE(sameBody(&*body, &*body));
    FusedBody other = *body;
    other.steps[0].attrs[0].second = 0.25;
    EXPECT_FALSE(sameBody(&*body, &other));
    EXPECT_FALSE(sameBody(&*body, nullptr));

    auto err = [](std::vector<std::string> l) {
        Expected<FusedBody> b = parseBody(l);
        return b.ok() ? std::string("parsed") : b.error().message;
    };
    EXPECT_EQ(err({"MatMul(i0,i1)"}), "body step 0 'MatMul(i0,i1)': not an op a group can hold");
    EXPECT_EQ(err({"Conv(i0,i1)"}), "parsed") << "a pooled prologue's step (fold-squeeze-excite)";
    EXPECT_EQ(err({"Relu(i0)", "Neg(t1)"}),
              "body step 1 refers to 't1', which is neither a group input nor an earlier step");
    EXPECT_EQ(err({"Relu(i0) alpha=x"}), "body step 0 'Relu(i0) alpha=x': attribute value 'x' is not a number");
    EXPECT_EQ(err({"Relu"}), "body step 0 'Relu': expected Op(args)");

    // Whether an input exists is the node's to say.
    Expected<FusedBody> wide = parseBody({"Add(i0,i2)"});
    ASSERT_TRUE(wide.ok());
    EXPECT_TRUE(checkBody(*wide, 3).ok());
    Status narrow = checkBody(*wide, 2);
    ASSERT_FALSE(narrow.ok());
    EXPECT_EQ(narrow.error().message,
              "body step 0 refers to 'i2', which is neither a group input nor an earlier step");
    EXPECT_FALSE(checkBody(FusedBody{}, 1).ok());
}

TEST(TypedFields, ParserRejectsValuesNoFieldCanHold) {
    const std::string head = "graph @t(%x: f32[4]) -> (%y: f32[4]) {\n  %y: f32[4] = Relu(%x) {";
    const std::string tail = "} @r\n  return %y\n}\n";
    EXPECT_NE(parseError(head + "precision = \"bf16\"" + tail)
                  .find("precision must be \"f32\", \"f16\" or \"f16-acc-f32\" (got \"bf16\")"),
              std::string::npos);
    EXPECT_NE(parseError(head + "precision = 16" + tail).find("precision must be"), std::string::npos);
    EXPECT_NE(parseError(head + "view = 2" + tail).find("view marks a view and must be 1"), std::string::npos);
    EXPECT_NE(parseError(head + "precision = \"f16\", precision = \"f32\"" + tail).find("given twice"),
              std::string::npos);
    const std::string group = "graph @t(%x: f32[4]) -> (%y: f32[4]) {\n"
                              "  %y: f32[4] = sextant.ElementwiseGroup(%x) {body = [\"Gemm(i0)\"]} @g\n"
                              "  return %y\n}\n";
    EXPECT_NE(parseError(group).find("body step 0 'Gemm(i0)': not an op a group can hold"),
              std::string::npos)
        << parseError(group);
}

TEST(TypedFields, VerifierChecksWhereTheyMayBe) {
    auto g = parseOk("graph @t(%x: f32[4]) -> (%y: f32[4]) {\n  %y: f32[4] = Relu(%x) @r\n  return %y\n}\n");
    ASSERT_TRUE(g);
    Node* r = g->findNode("r");
    r->setAttr("precision", std::string("f16")); // the old way: would print twice
    Status st = verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("attribute 'precision' must be set as the node's field"), std::string::npos)
        << st.error().message;
    r->mutableAttrs().clear();
    r->setView(true);
    st = verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("is marked a view"), std::string::npos) << st.error().message;
    r->setView(false);
    r->setBody(std::make_shared<const FusedBody>(*parseBody({"Relu(i0)"})));
    st = verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("not a sextant.ElementwiseGroup"), std::string::npos) << st.error().message;
    r->setBody(nullptr);
    EXPECT_TRUE(verifyGraph(*g).ok());
}
