// GridSample (ops/GridSample.cpp) against a numpy transcription of the ONNX formulas (denormalise,
// reflect, the A = -0.75 cubic weights, each neighbour read through the padding; /tmp script, values
// pasted as literals): X = arange * 0.37 - 1.1, a grid with points inside, on and outside the edges.
// ONNX's own node tests (opset 16, from PyTorch's grid_sample) run in tests/conformance.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor ramp(std::vector<int64_t> shape) {
    std::vector<double> v(static_cast<size_t>(product(shape)));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<double>(i) * 0.37 - 1.1;
    return f64(std::move(shape), v);
}

/// [1, 2, 3, 2] grid points (x, y): (-1.2, -1), (0.3, -0.4), (1, 1), (-0.7, 0.9), (1.3, 0.25), (0.05, -1.6).
Tensor grid4() {
    return f64({1, 2, 3, 2}, {-1.2, -1.0, 0.3, -0.4, 1.0, 1.0, -0.7, 0.9, 1.3, 0.25, 0.05, -1.6});
}

AttributeMap attrs(const std::string& mode, const std::string& padding, int64_t alignCorners, int64_t opset = 0) {
    AttributeMap a{{"mode", mode}, {"padding_mode", padding}, {"align_corners", alignCorners}};
    if (opset)
        a["_opset"] = opset;
    return a;
}

void expectSample(const AttributeMap& a, const std::vector<double>& want, double tol = 1e-12) {
    auto y = runOne(OpKind::GridSample, {ramp({1, 2, 3, 4}), grid4()}, a);
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 2, 3}, want, tol);
}

std::string failure(const std::vector<Tensor>& ins, AttributeMap a) {
    return test::failure(OpKind::GridSample, ins, std::move(a));
}

} // namespace

TEST(GridSample, BilinearZerosIsTheDefault) {
    const std::vector<double> want = {-0.055000000000000056, 0.2689999999999997, 0.7425, 1.2330500000000006, 0.0, 0.0,
                                      0.16700000000000012,   4.7090000000000005, 1.8525, 4.119050000000003,  0.0, 0.0};
    expectSample({}, want);
    expectSample(attrs("bilinear", "zeros", 0, 16), want);
    expectSample(attrs("linear", "zeros", 0, 20), want); // opset 20's name for it
}

TEST(GridSample, BilinearBorderAndReflection) {
    expectSample(attrs("bilinear", "border", 0),
                 {-1.1, 0.2689999999999997, 2.97, 1.897, 2.045, -0.508, 3.3399999999999994, 4.7090000000000005, 7.41,
                  6.3370000000000015, 6.484999999999999, 3.932});
    expectSample(attrs("linear", "reflection", 1, 22),
                 {-0.9890000000000001, 0.5094999999999997, 2.97, 1.8784999999999998, 1.6934999999999998, 0.37075,
                  3.450999999999999, 4.9495000000000005, 7.41, 6.3185, 6.133500000000001, 4.8107500000000005});
}

TEST(GridSample, Nearest) {
    expectSample(attrs("nearest", "border", 1),
                 {-1.1, 1.1199999999999997, 2.97, 1.8599999999999999, 1.4899999999999998, -0.3600000000000001,
                  3.3399999999999994, 5.5600000000000005, 7.41, 6.300000000000001, 5.93, 4.08});
    expectSample(attrs("nearest", "zeros", 0),
                 {0.0, -0.3600000000000001, 0.0, 1.8599999999999999, 0.0, 0.0, 0.0, 4.08, 0.0, 6.300000000000001, 0.0,
                  0.0});
    expectSample(attrs("nearest", "reflection", 0, 16),
                 {-1.1, -0.3600000000000001, 2.97, 1.8599999999999999, 1.4899999999999998, -0.3600000000000001,
                  3.3399999999999994, 4.08, 7.41, 6.300000000000001, 5.93, 4.08});
}

TEST(GridSample, Bicubic) {
    expectSample(attrs("bicubic", "zeros", 0, 16),
                 {-0.05772625000000062, 0.1305534199999995, 0.8292187500000001, 1.5087964957812527,
                  -0.14468793090820226, 0.05582303999999958, 0.124313750000002, 5.083280179999999, 1.9392187500000002,
                  4.650480763906258, -0.43219798461913805, -0.4236969599999969});
    expectSample(attrs("bicubic", "reflection", 0),
                 {-1.4024750000000015, 0.16049750000000002, 3.3168750000000005, 2.1403675000000035, 2.1580754687500003,
                  -0.0492000000000026, 3.0375250000000027, 4.600497500000004, 7.756875, 6.580367500000011,
                  6.598075468750003, 4.390799999999996});
    expectSample(attrs("cubic", "border", 1, 20),
                 {-1.1, 0.35951125, 2.97, 1.8819340624999985, 1.98140625, -0.52403140625, 3.3399999999999994,
                  4.799511249999995, 7.41, 6.321934062500001, 6.4214062499999995, 3.915968593750001});
}

TEST(GridSample, Float32) {
    auto y = runOne(OpKind::GridSample, {ramp({1, 2, 3, 4}).castTo(DType::F32), grid4().castTo(DType::F32)},
                    attrs("bilinear", "border", 0), 1, DType::F32);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::F32);
    expectValues(y[0], {1, 2, 2, 3},
                 {-1.1, 0.2689999999999997, 2.97, 1.897, 2.045, -0.508, 3.3399999999999994, 4.7090000000000005, 7.41,
                  6.3370000000000015, 6.484999999999999, 3.932},
                 1e-5);
}

TEST(GridSample, VolumetricSinceOpset20) {
    // X [1, 1, 2, 3, 4], grid [1, 1, 2, 2, 3] of (x, y, z) points.
    Tensor grid = f64({1, 1, 2, 2, 3}, {-0.5, 0.2, 0.9, 0.8, -1.0, -0.3, 0.1, 0.6, -0.2, 1.1, 0.0, 0.4});
    auto y = runOne(OpKind::GridSample, {ramp({1, 1, 2, 3, 4}), grid}, attrs("linear", "zeros", 0, 20));
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 1, 2, 2}, {3.2694000000000005, 0.40409999999999974, 3.673000000000001, 1.6457999999999986});
    auto z = runOne(OpKind::GridSample, {ramp({1, 1, 2, 3, 4}), grid}, attrs("nearest", "border", 1, 22));
    ASSERT_EQ(z.size(), 1u);
    expectValues(z[0], {1, 1, 1, 2, 2}, {5.1899999999999995, 0.009999999999999787, 2.6, 5.93});
}

TEST(GridSample, RejectsWhatTheOpsetDoesNotHave) {
    Tensor grid5 = f64({1, 1, 1, 1, 3}, {0, 0, 0});
    std::string e = failure({ramp({1, 1, 2, 3, 4}), grid5}, attrs("bilinear", "zeros", 0, 16));
    EXPECT_NE(e.find("grid sample at opset 16 takes 4-D input only, got rank 5"), std::string::npos) << e;
    e = failure({ramp({1, 2, 3, 4}), grid4()}, attrs("linear", "zeros", 0, 16));
    EXPECT_NE(e.find("grid sample mode 'linear' is not one of bilinear, nearest, bicubic (opset 16)"),
              std::string::npos)
        << e;
    e = failure({ramp({1, 2, 3, 4}), grid4()}, attrs("bicubic", "zeros", 0, 20));
    EXPECT_NE(e.find("is not one of linear, nearest, cubic (opset 20)"), std::string::npos) << e;
    e = failure({ramp({1, 2, 3, 4}), grid4()}, attrs("bilinear", "mirror", 0));
    EXPECT_NE(e.find("padding_mode 'mirror'"), std::string::npos) << e;
    e = failure({ramp({1, 2, 3, 4}), f64({1, 2, 3, 3}, std::vector<double>(18, 0.0))}, {});
    EXPECT_NE(e.find("grid's last dim must be 2"), std::string::npos) << e;
}
