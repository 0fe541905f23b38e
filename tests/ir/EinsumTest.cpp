// Einsum (ops/Einsum.cpp) against numpy.einsum's values for the same equations and inputs
// (inputs arange(n) * 0.37 - 1.1 reshaped, values pasted as literals), plus malformed equations.
// ONNX's own node tests for Einsum run in tests/conformance.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

/// arange(product(shape)) * scale + shift, as numpy's test inputs.
Tensor ramp(std::vector<int64_t> shape, double scale = 0.37, double shift = -1.1) {
    std::vector<double> v(static_cast<size_t>(product(shape)));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<double>(i) * scale + shift;
    return f64(std::move(shape), v);
}

AttributeMap eq(const std::string& e) { return {{"equation", e}}; }

std::string failure(const std::vector<Tensor>& ins, AttributeMap attrs) {
    return test::failure(OpKind::Einsum, ins, std::move(attrs));
}

} // namespace

TEST(Einsum, MatrixProductExplicitAndImplicit) {
    const std::vector<double> want = {1.3360000000000003, 0.5257000000000003, 0.13720000000000016, 0.559};
    auto y = runOne(OpKind::Einsum, {ramp({2, 3}), ramp({3, 2})}, eq("ij,jk->ik"));
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 2}, want);
    auto z = runOne(OpKind::Einsum, {ramp({2, 3}), ramp({3, 2})}, eq("ij, jk")); // implicit: ik
    ASSERT_EQ(z.size(), 1u);
    expectValues(z[0], {2, 2}, want);
}

TEST(Einsum, ImplicitOutputSortsUpperCaseFirst) {
    // numpy: 'bA' means 'bA->Ab', a transpose.
    auto y = runOne(OpKind::Einsum, {ramp({2, 3})}, eq("bA"));
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {3, 2},
                 {-1.1, 0.009999999999999787, -0.7300000000000001, 0.3799999999999999, -0.3600000000000001, 0.75});
}

TEST(Einsum, RepeatedSubscriptTakesTheDiagonal) {
    auto d = runOne(OpKind::Einsum, {ramp({3, 3})}, eq("ii->i"));
    ASSERT_EQ(d.size(), 1u);
    expectValues(d[0], {3}, {-1.1, 0.3799999999999999, 1.8599999999999999});
    auto t = runOne(OpKind::Einsum, {ramp({3, 3})}, eq("ii")); // implicit: the trace
    ASSERT_EQ(t.size(), 1u);
    expectValues(t[0], {}, {1.1399999999999997});
    auto b = runOne(OpKind::Einsum, {ramp({2, 3, 3})}, eq("bii->b"));
    ASSERT_EQ(b.size(), 1u);
    expectValues(b[0], {2}, {1.1399999999999997, 11.129999999999999});
}

TEST(Einsum, EllipsisBroadcastsTheLeadingDims) {
    // [2,1,2,3] x [3,3,2]: the '...' dims [2,1] and [3] broadcast to [2,3].
    auto y = runOne(OpKind::Einsum, {ramp({2, 1, 2, 3}), ramp({3, 3, 2}, 0.37 * 0.5, -1.1 * 0.5 + 0.25)},
                    eq("...ij,...jk->...ik"));
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 3, 2, 2},
                 {0.12050000000000008, -0.28464999999999996, 0.3536, 0.5645, -2.3104, -2.7155500000000004,
                  1.6189999999999998, 1.8298999999999996, -4.7413, -5.14645, 2.8843999999999994, 3.095299999999999,
                  0.5866999999999998, 1.4136499999999996, 0.8197999999999999, 2.2628, 5.548399999999999,
                  6.375349999999999, 9.4778, 10.9208, 10.510099999999998, 11.337049999999998, 18.1358, 19.5788},
                 1e-12);
    // Implicit mode puts the '...' dims first: '...ji' means '...ji->...ij'.
    auto z = runOne(OpKind::Einsum, {ramp({2, 2, 3})}, eq("...ji"));
    ASSERT_EQ(z.size(), 1u);
    expectValues(z[0], {2, 3, 2},
                 {-1.1, 0.009999999999999787, -0.7300000000000001, 0.3799999999999999, -0.3600000000000001, 0.75,
                  1.1199999999999997, 2.23, 1.4899999999999998, 2.6, 1.8599999999999999, 2.97});
}

TEST(Einsum, ThreeOperands) {
    auto y = runOne(OpKind::Einsum, {ramp({2, 3}), ramp({3, 2}), ramp({2, 4}, 0.37 * -0.3, -1.1 * -0.3)},
                    eq("ij,jk,kl->il"));
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 4},
                 {0.38095020000000007, 0.17430150000000003, -0.03234719999999999, -0.23899589999999998,
                  -0.018449999999999925, -0.09572819999999997, -0.17300639999999995, -0.25028459999999997},
                 1e-12);
}

TEST(Einsum, FloatAndIntegerInputs) {
    auto f = runOne(OpKind::Einsum, {ramp({2, 3}).castTo(DType::F32), ramp({3, 2}).castTo(DType::F32)},
                    eq("ij,jk->ik"), 1, DType::F32);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].dtype(), DType::F32);
    expectValues(f[0], {2, 2}, {1.3360000000000003, 0.5257000000000003, 0.13720000000000016, 0.559}, 1e-6);
    // Integers are constants in the one-node graph; i,i (inner product) by hand: 1*4 + 2*5 + 3*6.
    auto i = runOne(OpKind::Einsum, {i64({3}, {1, 2, 3}), i64({3}, {4, 5, 6})}, eq("i,i"));
    ASSERT_EQ(i.size(), 1u);
    EXPECT_EQ(i[0].dtype(), DType::I64);
    expectValues(i[0], {}, {32}, 0);
}

TEST(Einsum, RejectsMalformedEquations) {
    std::string e = failure({ramp({2, 3}), ramp({3, 2})}, eq("ij->ij"));
    EXPECT_NE(e.find("names 1 operand(s), the node has 2 input(s)"), std::string::npos) << e;
    e = failure({ramp({2, 3})}, eq("i1->i"));
    EXPECT_NE(e.find("bad character '1'"), std::string::npos) << e;
    e = failure({ramp({2, 3}), ramp({4, 2})}, eq("ij,jk->ik"));
    EXPECT_NE(e.find("subscript 'j' has extent 3 in operand 0 and 4 in operand 1"), std::string::npos) << e;
    e = failure({ramp({2, 3})}, eq("ijk->i"));
    EXPECT_NE(e.find("einsum operand 0 has 3 subscript(s), its input has rank 2"), std::string::npos) << e;
    e = failure({ramp({2, 3})}, eq("ij->ik"));
    EXPECT_NE(e.find("output subscript 'k', which no operand has"), std::string::npos) << e;
    e = failure({ramp({2, 3})}, eq("..i->i"));
    EXPECT_NE(e.find("does not start an ellipsis"), std::string::npos) << e;
    e = failure({ramp({2, 3, 4})}, eq("...i->i"));
    EXPECT_NE(e.find("no '...' in its output"), std::string::npos) << e;
    e = failure({ramp({2, 3})}, {});
    EXPECT_NE(e.find("needs its equation"), std::string::npos) << e;
}

TEST(Einsum, ContractsPairwiseAndBoundsTheWork) {
    // The sum of the outer product of three vectors of 3000 halves, 1500^3: pairwise, each step
    // walks 3000 indices, not the 3000^3 of all three subscripts at once.
    const Tensor half = f64({3000}, std::vector<double>(3000, 0.5));
    auto y = runOne(OpKind::Einsum, {half, half, half}, eq("i,j,k->"));
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {}, {3375000000.0}, 0);
    // One product that would walk 1500^3 index triples is refused up front.
    std::string e = failure({ramp({1500, 1500}), ramp({1500, 1500})}, eq("ij,jk->ik"));
    EXPECT_NE(e.find("einsum contraction over 3 subscripts takes 3375000000 steps, more than the limit"),
              std::string::npos)
        << e;
}
