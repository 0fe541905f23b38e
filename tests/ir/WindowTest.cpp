// HannWindow, HammingWindow and BlackmanWindow (ops/Window.cpp) against numpy: np.hanning and
// np.blackman (symmetric; the periodic window of size n is the first n points of the symmetric one
// of n + 1), and the Hamming formula with ONNX's 25/46 and 21/46 written out in numpy (np.hamming
// uses 0.54 and 0.46). ONNX's own node tests for them run in tests/conformance.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

/// The interpreter hands float outputs over in its compute dtype: f32 for the default output_datatype.
std::vector<Tensor> window(OpKind kind, int64_t size, AttributeMap attrs = {}, DType compute = DType::F64) {
    return runOne(kind, {i64({}, {size})}, std::move(attrs), 1, compute);
}

} // namespace

TEST(Window, HannPeriodicAndSymmetric) {
    auto p = window(OpKind::HannWindow, 5, {}, DType::F32);
    ASSERT_EQ(p.size(), 1u);
    EXPECT_EQ(p[0].dtype(), DType::F32); // output_datatype 1 by default
    expectValues(p[0], {5}, {0.0, 0.3454915028125263, 0.9045084971874737, 0.9045084971874737, 0.3454915028125263}, 1e-7);
    auto s = window(OpKind::HannWindow, 5, {{"periodic", int64_t{0}}, {"output_datatype", int64_t{11}}});
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].dtype(), DType::F64);
    expectValues(s[0], {5}, {0.0, 0.5, 1.0, 0.5, 0.0}, 1e-15);
}

TEST(Window, HammingUsesOnnxCoefficients) {
    auto p = window(OpKind::HammingWindow, 6, {{"output_datatype", int64_t{11}}});
    ASSERT_EQ(p.size(), 1u);
    expectValues(p[0], {6},
                 {0.08695652173913043, 0.3152173913043478, 0.7717391304347825, 1.0, 0.7717391304347827,
                  0.3152173913043478},
                 1e-15);
    auto s = window(OpKind::HammingWindow, 6, {{"periodic", int64_t{0}}, {"output_datatype", int64_t{11}}});
    ASSERT_EQ(s.size(), 1u);
    expectValues(s[0], {6},
                 {0.08695652173913043, 0.4024052851766544, 0.9128121061276934, 0.9128121061276935,
                  0.40240528517665447, 0.08695652173913043},
                 1e-15);
}

TEST(Window, Blackman) {
    auto p = window(OpKind::BlackmanWindow, 5, {{"output_datatype", int64_t{11}}});
    ASSERT_EQ(p.size(), 1u);
    expectValues(p[0], {5},
                 {-1.3877787807814457e-17, 0.2007701432625305, 0.8492298567374695, 0.8492298567374695,
                  0.2007701432625305},
                 1e-15);
    auto s = window(OpKind::BlackmanWindow, 5, {{"periodic", int64_t{0}}, {"output_datatype", int64_t{11}}});
    ASSERT_EQ(s.size(), 1u);
    expectValues(s[0], {5}, {-1.3877787807814457e-17, 0.34, 0.9999999999999999, 0.34, -1.3877787807814457e-17},
                 1e-15);
    // An empty window.
    auto e = window(OpKind::BlackmanWindow, 0, {}, DType::F32);
    ASSERT_EQ(e.size(), 1u);
    expectValues(e[0], {0}, {});
}

TEST(Window, RejectsBadSizeAndType) {
    OneNode one = makeOneNode(OpKind::HannWindow, {i64({}, {-3})}, {});
    Status st = one.graph->inferTypes();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("hann window size -3 is out of range"), std::string::npos) << st.error().message;
    OneNode two = makeOneNode(OpKind::HammingWindow, {i64({}, {4})}, {{"output_datatype", int64_t{8}}});
    st = two.graph->inferTypes();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("hamming window output_datatype 8 is not supported"), std::string::npos)
        << st.error().message;
}
