// If with subgraphs (kernel, type inference, printer/parser round trip, verifier) and LSTM against
// hand-computed values.

#include "TestUtil.h"

#include "core/ir/Parser.h"
#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

#include <cmath>
#include <random>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

/// then: x -> Neg(x) [rank kept]; else: x -> Squeeze(x, axes [0]) when `squeezeElse`, else x itself.
std::shared_ptr<const Graph> branch(const std::string& name, const TensorType& xType, bool negate, bool squeeze) {
    auto g = std::make_unique<Graph>(name);
    Value* x = g->addInput("x", xType).value();
    if (negate) {
        Node* n = g->addNode(OpKind::Neg, name + "_neg", {x}, {name + "_y"}).value();
        g->setOutputs({n->output()});
    } else if (squeeze) {
        Value* axes = g->addConstant(name + "_axes", i64({1}, {0})).value();
        Node* n = g->addNode(OpKind::Squeeze, name + "_sq", {x, axes}, {name + "_y"}).value();
        g->setOutputs({n->output()});
    } else {
        g->setOutputs({x}); // a captured value returned directly
    }
    EXPECT_TRUE(g->inferTypes().ok());
    return std::shared_ptr<const Graph>(std::move(g));
}

/// main(c: bool[], x: f64[xType]) -> If(c, x) with the branches above.
std::unique_ptr<Graph> ifGraph(const TensorType& xType, bool squeezeElse) {
    auto g = std::make_unique<Graph>("main");
    Value* c = g->addInput("c", TensorType::of(DType::Bool, {})).value();
    Value* x = g->addInput("x", xType).value();
    AttributeMap attrs{{"then_branch", branch("then", xType, true, false)},
                       {"else_branch", branch("else", xType, false, squeezeElse)}};
    Node* n = g->addNode(OpKind::If, "if0", {c, x}, {"y"}, attrs).value();
    g->setOutputs({n->output()});
    return g;
}

Tensor boolScalar(bool b) {
    Tensor t(DType::Bool, {});
    t.set(0, b ? 1.0 : 0.0);
    return t;
}

std::vector<Tensor> run(const Graph& g, std::vector<Tensor> feeds, DType compute = DType::F64) {
    KernelContext ctx;
    ctx.compute = compute;
    auto r = interpret(g, feeds, ctx);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(r).value() : std::vector<Tensor>{};
}

} // namespace

TEST(IfOp, RunsTheBranchTheConditionPicks) {
    auto g = ifGraph(TensorType::of(DType::F64, {2}), false);
    ASSERT_TRUE(g->inferTypes().ok());
    ASSERT_TRUE(verifyGraph(*g).ok());
    auto yes = run(*g, {boolScalar(true), f64({2}, {1.5, -2})});
    ASSERT_EQ(yes.size(), 1u);
    expectValues(yes[0], {2}, {-1.5, 2});
    auto no = run(*g, {boolScalar(false), f64({2}, {1.5, -2})});
    ASSERT_EQ(no.size(), 1u);
    expectValues(no[0], {2}, {1.5, -2});
}

TEST(IfOp, ConstantConditionChoosesTheTypeOfBranchesOfDifferentRank) {
    // cond = (Shape(x)[0] == 1): known once x is static, so the output rank is known too.
    auto g = std::make_unique<Graph>("main");
    Value* x = g->addInput("x", TensorType::of(DType::F64, {1, 3})).value();
    Node* shape = g->addNode(OpKind::Shape, "shape", {x}, {"s"}).value();
    Value* idx = g->addConstant("zero", i64({1}, {0})).value();
    Node* gather = g->addNode(OpKind::Gather, "gather", {shape->output(), idx}, {"d0"}).value();
    Value* one = g->addConstant("one", i64({1}, {1})).value();
    Node* eq = g->addNode(OpKind::Equal, "eq", {gather->output(), one}, {"c"}).value();
    const TensorType xType = TensorType::of(DType::F64, {1, 3});
    AttributeMap attrs{{"then_branch", branch("then", xType, false, true)},
                       {"else_branch", branch("else", xType, true, false)}};
    Node* n = g->addNode(OpKind::If, "if0", {eq->output(), x}, {"y"}, attrs).value();
    g->setOutputs({n->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    EXPECT_EQ(n->output()->type().str(), "f64[3]");
    ASSERT_TRUE(verifyGraph(*g).ok());
    auto y = run(*g, {f64({1, 3}, {1, 2, 3})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {3}, {1, 2, 3});
}

TEST(IfOp, SymbolicShapesAreSpecialisedFromTheInputsBeforeRunning) {
    // With x: f64[N,3] the condition is unknown at import and the branches disagree in rank: the
    // type is provisional, and a run re-infers from the concrete shape and takes the right rank.
    auto g = std::make_unique<Graph>("main");
    TensorType xType;
    xType.dtype = DType::F64;
    xType.shape = {Dim::symbolic("N"), Dim::known(3)};
    Value* x = g->addInput("x", xType).value();
    Node* shape = g->addNode(OpKind::Shape, "shape", {x}, {"s"}).value();
    Value* idx = g->addConstant("zero", i64({1}, {0})).value();
    Node* gather = g->addNode(OpKind::Gather, "gather", {shape->output(), idx}, {"d0"}).value();
    Value* one = g->addConstant("one", i64({1}, {1})).value();
    Node* eq = g->addNode(OpKind::Equal, "eq", {gather->output(), one}, {"c"}).value();
    AttributeMap attrs{{"then_branch", branch("then", xType, false, true)},
                       {"else_branch", branch("else", xType, true, false)}};
    Node* n = g->addNode(OpKind::If, "if0", {eq->output(), x}, {"y"}, attrs).value();
    Node* sz = g->addNode(OpKind::Shape, "outShape", {n->output()}, {"ys"}).value();
    g->setOutputs({n->output(), sz->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    ASSERT_TRUE(verifyGraph(*g).ok());
    auto squeezed = run(*g, {f64({1, 3}, {1, 2, 3})});
    ASSERT_EQ(squeezed.size(), 2u);
    expectValues(squeezed[0], {3}, {1, 2, 3});
    expectValues(squeezed[1], {1}, {3});
    auto negated = run(*g, {f64({2, 3}, {1, 2, 3, 4, 5, 6})});
    ASSERT_EQ(negated.size(), 2u);
    expectValues(negated[0], {2, 3}, {-1, -2, -3, -4, -5, -6});
    expectValues(negated[1], {2}, {2, 3});
}

TEST(IfOp, BranchesOfDifferentDimsGiveAnUnknownDim) {
    auto g = std::make_unique<Graph>("main");
    Value* c = g->addInput("c", TensorType::of(DType::Bool, {})).value();
    Value* x = g->addInput("x", TensorType::of(DType::F64, {2, 3})).value();
    auto thenG = std::make_unique<Graph>("then");
    Value* tx = thenG->addInput("x", x->type()).value();
    thenG->setOutputs({tx});
    auto elseG = std::make_unique<Graph>("else");
    Value* ex = elseG->addInput("x", x->type()).value();
    Node* t = elseG->addNode(OpKind::Transpose, "t", {ex}, {"xt"}).value();
    elseG->setOutputs({t->output()});
    ASSERT_TRUE(elseG->inferTypes().ok());
    AttributeMap attrs{{"then_branch", std::shared_ptr<const Graph>(std::move(thenG))},
                       {"else_branch", std::shared_ptr<const Graph>(std::move(elseG))}};
    Node* n = g->addNode(OpKind::If, "if0", {c, x}, {"y"}, attrs).value();
    g->setOutputs({n->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    EXPECT_EQ(n->output()->type().str(), "f64[?,?]");
    auto y = run(*g, {boolScalar(false), f64({2, 3}, {1, 2, 3, 4, 5, 6})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {3, 2}, {1, 4, 2, 5, 3, 6});
}

TEST(IfOp, PrinterAndParserRoundTripNestedSubgraphs) {
    const TensorType xType = TensorType::of(DType::F64, {2});
    // An If whose then_branch itself holds an If (nested two deep).
    auto inner = std::make_unique<Graph>("outer_then");
    Value* ic = inner->addInput("c", TensorType::of(DType::Bool, {})).value();
    Value* ix = inner->addInput("x", xType).value();
    AttributeMap innerAttrs{{"then_branch", branch("then", xType, true, false)},
                            {"else_branch", branch("else", xType, false, false)}};
    Node* innerIf = inner->addNode(OpKind::If, "inner_if", {ic, ix}, {"iy"}, innerAttrs).value();
    inner->setOutputs({innerIf->output()});
    ASSERT_TRUE(inner->inferTypes().ok());
    auto outerElse = std::make_unique<Graph>("outer_else");
    outerElse->addInput("c", TensorType::of(DType::Bool, {})).value();
    Value* ex = outerElse->addInput("x", xType).value();
    Value* k = outerElse->addConstant("k", f64({2}, {10, 20})).value();
    Node* add = outerElse->addNode(OpKind::Add, "add", {ex, k}, {"sum"}).value();
    outerElse->setOutputs({add->output()});
    ASSERT_TRUE(outerElse->inferTypes().ok());

    auto g = std::make_unique<Graph>("main");
    Value* c = g->addInput("c", TensorType::of(DType::Bool, {})).value();
    Value* x = g->addInput("x", xType).value();
    AttributeMap attrs{{"then_branch", std::shared_ptr<const Graph>(std::move(inner))},
                       {"else_branch", std::shared_ptr<const Graph>(std::move(outerElse))}};
    // The condition is captured too: the inner If reads it.
    Node* n = g->addNode(OpKind::If, "if0", {c, c, x}, {"y"}, attrs).value();
    g->setOutputs({n->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    ASSERT_TRUE(verifyGraph(*g).ok());

    const std::string text = printGraph(*g);
    EXPECT_NE(text.find("then_branch = graph @outer_then(%c: bool[], %x: f64[2]) -> (%iy: f64[2]) {\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("\n        }} @inner_if"), std::string::npos) << text;
    auto parsed = parseGraph(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message << "\n" << text;
    EXPECT_EQ(printGraph(**parsed), text);
    ASSERT_TRUE(verifyGraph(**parsed).ok());
    auto a = run(**parsed, {boolScalar(true), f64({2}, {1, 2})});
    ASSERT_EQ(a.size(), 1u);
    expectValues(a[0], {2}, {-1, -2});
    auto b = run(**parsed, {boolScalar(false), f64({2}, {1, 2})});
    ASSERT_EQ(b.size(), 1u);
    expectValues(b[0], {2}, {11, 22});
}

TEST(IfOp, ParserKeepsSubgraphsIsolatedFromAbove) {
    const char* text = "graph @main(%c: bool[], %x: f64[2]) -> (%y: f64[2]) {\n"
                       "  %y: f64[2] = If(%c) {else_branch = graph @e() -> (%x: f64[2]) {\n"
                       "      return %x\n"
                       "    }, then_branch = graph @t() -> (%x: f64[2]) {\n"
                       "      return %x\n"
                       "    }} @if0\n"
                       "  return %y\n"
                       "}\n";
    auto parsed = parseGraph(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.error().message.find("value 'x' is used before it is defined"), std::string::npos)
        << parsed.error().message;
}

TEST(IfOp, VerifierRejectsABranchThatDoesNotMatchTheNode) {
    auto g = ifGraph(TensorType::of(DType::F64, {2}), false);
    ASSERT_TRUE(g->inferTypes().ok());
    Node* n = g->findNode("if0");
    // A branch taking no captured input while the node passes one.
    auto bad = std::make_unique<Graph>("bad");
    Value* k = bad->addConstant("k", f64({2}, {0, 0})).value();
    bad->setOutputs({k});
    n->setAttr("else_branch", std::shared_ptr<const Graph>(std::move(bad)));
    Status st = verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("else_branch 'bad' declares 0 captured inputs but the node passes 1"),
              std::string::npos)
        << st.error().message;
    // A missing branch.
    n->mutableAttrs().erase("else_branch");
    st = verifyGraph(*g);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("needs graph attribute 'else_branch'"), std::string::npos) << st.error().message;
}

TEST(IfOp, ConditionMustHoldOneElement) {
    auto g = ifGraph(TensorType::of(DType::F64, {2}), false);
    // Re-declare the condition as bool[2]: the verifier says so.
    g->inputs()[0]->setType(TensorType::of(DType::Bool, {2}));
    Status st = g->inferTypes();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("condition must hold one element"), std::string::npos) << st.error().message;
}

// ---- LSTM

namespace {

/// A straightforward scalar LSTM (one direction, batch 1 rows at a time) for comparison.
struct ScalarLstm {
    int64_t in, hidden;
    std::vector<double> w, r, b, p; // one direction: [4H, in], [4H, H], [8H], [3H]
    void run(const std::vector<std::vector<double>>& xs, std::vector<double>& h, std::vector<double>& c,
             std::vector<std::vector<double>>& ys) const {
        auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
        for (const auto& x : xs) {
            std::vector<double> gate(static_cast<size_t>(4 * hidden));
            for (int64_t j = 0; j < 4 * hidden; ++j) {
                double s = b.empty() ? 0 : b[j] + b[4 * hidden + j];
                for (int64_t k = 0; k < in; ++k)
                    s += w[j * in + k] * x[k];
                for (int64_t k = 0; k < hidden; ++k)
                    s += r[j * hidden + k] * h[k];
                gate[j] = s;
            }
            std::vector<double> hn(h.size());
            for (int64_t j = 0; j < hidden; ++j) {
                double pi = p.empty() ? 0 : p[j], po = p.empty() ? 0 : p[hidden + j], pf = p.empty() ? 0 : p[2 * hidden + j];
                double i = sig(gate[j] + pi * c[j]);
                double f = sig(gate[2 * hidden + j] + pf * c[j]);
                double cc = std::tanh(gate[3 * hidden + j]);
                c[j] = f * c[j] + i * cc;
                double o = sig(gate[hidden + j] + po * c[j]);
                hn[j] = o * std::tanh(c[j]);
            }
            h = hn;
            ys.push_back(h);
        }
    }
};

std::vector<double> randomValues(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(-0.8, 0.8);
    std::vector<double> v(n);
    for (double& x : v)
        x = dist(rng);
    return v;
}

} // namespace

TEST(LstmKernel, ZeroWeightsHandComputed) {
    // All gates see 0: i = f = o = 0.5, candidate tanh(0) = 0, so c1 = 0.5 * c0 and
    // h1 = 0.5 * tanh(c1). With c0 = 1: c1 = 0.5, h1 = 0.5 * tanh(0.5) = 0.2310585786300049.
    Tensor x = f64({1, 1, 1}, {3.0});
    Tensor w = f64({1, 4, 1}, {0, 0, 0, 0});
    Tensor r = f64({1, 4, 1}, {0, 0, 0, 0});
    Tensor h0 = f64({1, 1, 1}, {0.7});
    Tensor c0 = f64({1, 1, 1}, {1.0});
    auto y = runOne(OpKind::LSTM, {x, w, r, Tensor(), Tensor(), h0, c0}, {{"hidden_size", int64_t{1}}}, 3);
    ASSERT_EQ(y.size(), 3u);
    expectValues(y[0], {1, 1, 1, 1}, {0.2310585786300049});
    expectValues(y[1], {1, 1, 1}, {0.2310585786300049});
    expectValues(y[2], {1, 1, 1}, {0.5});
}

TEST(LstmKernel, ForwardMatchesScalarRecurrenceWithBiasAndPeepholes) {
    const int64_t seq = 3, batch = 2, in = 3, hid = 2;
    ScalarLstm ref{in, hid, randomValues(4 * hid * in, 1), randomValues(4 * hid * hid, 2), randomValues(8 * hid, 3),
                   randomValues(3 * hid, 4)};
    std::vector<double> xv = randomValues(seq * batch * in, 5), h0 = randomValues(batch * hid, 6),
                        c0 = randomValues(batch * hid, 7);
    auto y = runOne(OpKind::LSTM,
                    {f64({seq, batch, in}, xv), f64({1, 4 * hid, in}, ref.w), f64({1, 4 * hid, hid}, ref.r),
                     f64({1, 8 * hid}, ref.b), Tensor(), f64({1, batch, hid}, h0), f64({1, batch, hid}, c0),
                     f64({1, 3 * hid}, ref.p)},
                    {{"hidden_size", hid}}, 3);
    ASSERT_EQ(y.size(), 3u);
    for (int64_t b = 0; b < batch; ++b) {
        std::vector<std::vector<double>> xs, ys;
        for (int64_t t = 0; t < seq; ++t)
            xs.emplace_back(xv.begin() + (t * batch + b) * in, xv.begin() + (t * batch + b + 1) * in);
        std::vector<double> h(h0.begin() + b * hid, h0.begin() + (b + 1) * hid);
        std::vector<double> c(c0.begin() + b * hid, c0.begin() + (b + 1) * hid);
        ref.run(xs, h, c, ys);
        for (int64_t t = 0; t < seq; ++t)
            for (int64_t j = 0; j < hid; ++j)
                EXPECT_NEAR(y[0].at((t * batch + b) * hid + j), ys[t][j], 1e-12) << "t " << t << " b " << b;
        for (int64_t j = 0; j < hid; ++j) {
            EXPECT_NEAR(y[1].at(b * hid + j), h[j], 1e-12);
            EXPECT_NEAR(y[2].at(b * hid + j), c[j], 1e-12);
        }
    }
}

TEST(LstmKernel, ReverseAndBidirectional) {
    const int64_t seq = 4, in = 2, hid = 3;
    ScalarLstm fwd{in, hid, randomValues(4 * hid * in, 11), randomValues(4 * hid * hid, 12), randomValues(8 * hid, 13), {}};
    ScalarLstm bwd{in, hid, randomValues(4 * hid * in, 21), randomValues(4 * hid * hid, 22), randomValues(8 * hid, 23), {}};
    std::vector<double> xv = randomValues(seq * in, 30);
    std::vector<std::vector<double>> xs;
    for (int64_t t = 0; t < seq; ++t)
        xs.emplace_back(xv.begin() + t * in, xv.begin() + (t + 1) * in);
    std::vector<std::vector<double>> reversed(xs.rbegin(), xs.rend());

    // Reverse alone: the recurrence runs from the last step, Y stays indexed by time.
    auto rev = runOne(OpKind::LSTM,
                      {f64({seq, 1, in}, xv), f64({1, 4 * hid, in}, bwd.w), f64({1, 4 * hid, hid}, bwd.r),
                       f64({1, 8 * hid}, bwd.b)},
                      {{"hidden_size", hid}, {"direction", std::string("reverse")}}, 3);
    std::vector<double> h(hid, 0), c(hid, 0);
    std::vector<std::vector<double>> ysB;
    bwd.run(reversed, h, c, ysB);
    ASSERT_EQ(rev.size(), 3u);
    for (int64_t t = 0; t < seq; ++t)
        for (int64_t j = 0; j < hid; ++j)
            EXPECT_NEAR(rev[0].at(t * hid + j), ysB[seq - 1 - t][j], 1e-12) << "t " << t;
    for (int64_t j = 0; j < hid; ++j)
        EXPECT_NEAR(rev[1].at(j), h[j], 1e-12);

    // Bidirectional: direction 0 forward, direction 1 reverse, interleaved in Y [seq, 2, 1, H].
    std::vector<double> w = fwd.w, r = fwd.r, b = fwd.b;
    w.insert(w.end(), bwd.w.begin(), bwd.w.end());
    r.insert(r.end(), bwd.r.begin(), bwd.r.end());
    b.insert(b.end(), bwd.b.begin(), bwd.b.end());
    auto bi = runOne(OpKind::LSTM,
                     {f64({seq, 1, in}, xv), f64({2, 4 * hid, in}, w), f64({2, 4 * hid, hid}, r), f64({2, 8 * hid}, b)},
                     {{"hidden_size", hid}, {"direction", std::string("bidirectional")}}, 3);
    std::vector<double> hf(hid, 0), cf(hid, 0);
    std::vector<std::vector<double>> ysF;
    fwd.run(xs, hf, cf, ysF);
    ASSERT_EQ(bi.size(), 3u);
    ASSERT_EQ(bi[0].shape(), (std::vector<int64_t>{seq, 2, 1, hid}));
    for (int64_t t = 0; t < seq; ++t)
        for (int64_t j = 0; j < hid; ++j) {
            EXPECT_NEAR(bi[0].at((t * 2 + 0) * hid + j), ysF[t][j], 1e-12);
            EXPECT_NEAR(bi[0].at((t * 2 + 1) * hid + j), ysB[seq - 1 - t][j], 1e-12);
        }
    for (int64_t j = 0; j < hid; ++j) {
        EXPECT_NEAR(bi[1].at(j), hf[j], 1e-12);
        EXPECT_NEAR(bi[1].at(hid + j), h[j], 1e-12);
        EXPECT_NEAR(bi[2].at(j), cf[j], 1e-12);
    }
}

TEST(LstmKernel, SequenceLensStopEachBatchEntry) {
    const int64_t seq = 3, batch = 2, in = 1, hid = 1;
    ScalarLstm ref{in, hid, {0.5, -0.3, 0.8, 0.2}, {0.1, 0.4, -0.2, 0.6}, {}, {}};
    std::vector<double> xv = {1, -1, 0.5, 2, -0.5, 3};
    Tensor lens = Tensor::fromVector<int32_t>({batch}, {3, 1});
    auto y = runOne(OpKind::LSTM,
                    {f64({seq, batch, in}, xv), f64({1, 4, 1}, ref.w), f64({1, 4, 1}, ref.r), Tensor(), lens},
                    {{"hidden_size", hid}}, 3);
    ASSERT_EQ(y.size(), 3u);
    // Entry 1 runs one step only: later Y rows are zero and Y_h is its first output.
    std::vector<double> h(1, 0), c(1, 0);
    std::vector<std::vector<double>> ys;
    ref.run({{xv[1]}}, h, c, ys);
    EXPECT_NEAR(y[0].at(1), ys[0][0], 1e-12);
    EXPECT_EQ(y[0].at(3), 0.0);
    EXPECT_EQ(y[0].at(5), 0.0);
    EXPECT_NEAR(y[1].at(1), ys[0][0], 1e-12);
    EXPECT_NEAR(y[2].at(1), c[0], 1e-12);
    // Entry 0 runs all three.
    std::vector<double> h0(1, 0), c0(1, 0);
    std::vector<std::vector<double>> ys0;
    ref.run({{xv[0]}, {xv[2]}, {xv[4]}}, h0, c0, ys0);
    EXPECT_NEAR(y[1].at(0), h0[0], 1e-12);
}

TEST(LstmKernel, Float32MatchesFloat64) {
    const int64_t seq = 5, batch = 1, in = 4, hid = 8;
    std::vector<Tensor> ins = {f64({seq, batch, in}, randomValues(seq * in, 41)),
                               f64({1, 4 * hid, in}, randomValues(4 * hid * in, 42)),
                               f64({1, 4 * hid, hid}, randomValues(4 * hid * hid, 43)),
                               f64({1, 8 * hid}, randomValues(8 * hid, 44))};
    auto a = runOne(OpKind::LSTM, ins, {{"hidden_size", hid}}, 3, DType::F64);
    auto b = runOne(OpKind::LSTM, ins, {{"hidden_size", hid}}, 3, DType::F32);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(b[0].dtype(), DType::F32);
    for (int64_t i = 0; i < a[0].numel(); ++i)
        EXPECT_NEAR(a[0].at(i), b[0].at(i), 1e-5);
}

TEST(LstmKernel, UnsupportedAttributesAreNamed) {
    OneNode one = makeOneNode(OpKind::LSTM,
                              {f64({1, 1, 1}, {1}), f64({1, 4, 1}, {0, 0, 0, 0}), f64({1, 4, 1}, {0, 0, 0, 0})},
                              {{"hidden_size", int64_t{1}},
                               {"activations", std::vector<std::string>{"Relu", "Tanh", "Tanh"}}},
                              3);
    Status st = opInfo(OpKind::LSTM).verify(*one.node);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().kind, ErrorKind::Unsupported);
    EXPECT_NE(st.error().message.find("activations [Relu, Tanh, Tanh] are not supported"), std::string::npos)
        << st.error().message;
    one.node->mutableAttrs().erase("activations");
    // Layout 1 (batch-major) is supported; an out-of-range layout is not.
    one.node->setAttr("layout", int64_t{1});
    EXPECT_TRUE(opInfo(OpKind::LSTM).verify(*one.node).ok());
    one.node->setAttr("layout", int64_t{2});
    EXPECT_FALSE(opInfo(OpKind::LSTM).verify(*one.node).ok());
    // Default activations spelled out are fine.
    one.node->mutableAttrs().erase("layout");
    one.node->setAttr("activations", std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"});
    EXPECT_TRUE(opInfo(OpKind::LSTM).verify(*one.node).ok());
}

TEST(IfOp, ABranchThatCannotBeTypedForTheseShapesLeavesTheTypesToTheOther) {
    // The else branch reshapes x to [4]: fine for f64[?] at import, impossible once x is f64[3].
    // With the condition unknown, the If takes the then-branch's type rather than failing.
    auto g = std::make_unique<Graph>("main");
    TensorType xType;
    xType.dtype = DType::F64;
    xType.shape = {Dim::symbolic("N")};
    Value* c = g->addInput("c", TensorType::of(DType::Bool, {})).value();
    Value* x = g->addInput("x", xType).value();
    auto elseG = std::make_unique<Graph>("else");
    Value* ex = elseG->addInput("x", xType).value();
    Value* shape = elseG->addConstant("four", i64({1}, {4})).value();
    Node* r = elseG->addNode(OpKind::Reshape, "r", {ex, shape}, {"xr"}).value();
    elseG->setOutputs({r->output()});
    ASSERT_TRUE(elseG->inferTypes().ok());
    AttributeMap attrs{{"then_branch", branch("then", xType, true, false)},
                       {"else_branch", std::shared_ptr<const Graph>(std::move(elseG))}};
    Node* n = g->addNode(OpKind::If, "if0", {c, x}, {"y"}, attrs).value();
    g->setOutputs({n->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    x->setType(TensorType::of(DType::F64, {3}));
    Status st = g->inferTypes();
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_EQ(n->output()->type().str(), "f64[3]");
    auto y = run(*g, {boolScalar(true), f64({3}, {1, 2, 3})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {3}, {-1, -2, -3});
    // Taking the broken branch is an error that names it.
    KernelContext ctx;
    auto bad = interpret(*g, std::vector<Tensor>{boolScalar(false), f64({3}, {1, 2, 3})}, ctx);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("else_branch"), std::string::npos) << bad.error().message;
}
