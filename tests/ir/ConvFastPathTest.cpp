// The Conv kernel has two paths: a direct loop for depthwise / channel-multiplier convolutions (one
// input channel per group) and im2col + GEMM for the rest. Both must agree with a plain
// definition-of-convolution loop over strides, asymmetric pads, dilations and kernel sizes.

#include "TestUtil.h"

#include <cmath>
#include <cstring>
#include <string>

namespace sextant::ir::test {
namespace {

struct ConvCase {
    int64_t c, m, group, h, w, kh, kw;
    std::vector<int64_t> strides, dilations, pads; // pads: top, left, bottom, right
};

std::string describe(const ConvCase& k) {
    return "C" + std::to_string(k.c) + " M" + std::to_string(k.m) + " g" + std::to_string(k.group) + " " +
           std::to_string(k.h) + "x" + std::to_string(k.w) + " k" + std::to_string(k.kh) + "x" +
           std::to_string(k.kw) + " s" + std::to_string(k.strides[0]) + "," + std::to_string(k.strides[1]) +
           " d" + std::to_string(k.dilations[0]) + "," + std::to_string(k.dilations[1]);
}

/// Deterministic values that are not all alike, so a misplaced tap changes the sum.
std::vector<double> pattern(int64_t n, double scale, int seed) {
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        v[static_cast<size_t>(i)] = scale * std::sin(0.37 * static_cast<double>(i) + seed);
    return v;
}

/// Convolution straight from its definition (ONNX Conv, NCHW, N = 1).
std::vector<double> naiveConv(const ConvCase& k, const std::vector<double>& x, const std::vector<double>& w,
                              const std::vector<double>& b, int64_t oh, int64_t ow) {
    const int64_t cg = k.c / k.group, mg = k.m / k.group;
    std::vector<double> y(static_cast<size_t>(k.m * oh * ow), 0.0);
    for (int64_t mo = 0; mo < k.m; ++mo) {
        const int64_t gi = mo / mg;
        for (int64_t oy = 0; oy < oh; ++oy)
            for (int64_t ox = 0; ox < ow; ++ox) {
                double s = b[static_cast<size_t>(mo)];
                for (int64_t ci = 0; ci < cg; ++ci)
                    for (int64_t ky = 0; ky < k.kh; ++ky)
                        for (int64_t kx = 0; kx < k.kw; ++kx) {
                            const int64_t iy = oy * k.strides[0] - k.pads[0] + ky * k.dilations[0];
                            const int64_t ix = ox * k.strides[1] - k.pads[1] + kx * k.dilations[1];
                            if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w)
                                continue;
                            s += x[static_cast<size_t>(((gi * cg + ci) * k.h + iy) * k.w + ix)] *
                                 w[static_cast<size_t>(((mo * cg + ci) * k.kh + ky) * k.kw + kx)];
                        }
                y[static_cast<size_t>((mo * oh + oy) * ow + ox)] = s;
            }
    }
    return y;
}

void checkCase(const ConvCase& k, DType compute, double tol) {
    SCOPED_TRACE(describe(k));
    const int64_t cg = k.c / k.group;
    const int64_t oh = (k.h + k.pads[0] + k.pads[2] - ((k.kh - 1) * k.dilations[0] + 1)) / k.strides[0] + 1;
    const int64_t ow = (k.w + k.pads[1] + k.pads[3] - ((k.kw - 1) * k.dilations[1] + 1)) / k.strides[1] + 1;
    const std::vector<double> xv = pattern(k.c * k.h * k.w, 1.0, 1);
    const std::vector<double> wv = pattern(k.m * cg * k.kh * k.kw, 0.5, 2);
    const std::vector<double> bv = pattern(k.m, 0.25, 3);
    const std::vector<double> want = naiveConv(k, xv, wv, bv, oh, ow);
    auto y = runOne(OpKind::Conv,
                    {f64({1, k.c, k.h, k.w}, xv), f64({k.m, cg, k.kh, k.kw}, wv), f64({k.m}, bv)},
                    {{"group", k.group},
                     {"strides", k.strides},
                     {"dilations", k.dilations},
                     {"pads", k.pads}},
                    1, compute);
    ASSERT_EQ(y.size(), 1u);
    ASSERT_EQ(y[0].shape(), (std::vector<int64_t>{1, k.m, oh, ow}));
    const Tensor got = y[0].castTo(DType::F64);
    for (int64_t i = 0; i < got.numel(); ++i)
        ASSERT_NEAR(got.data<double>()[i], want[static_cast<size_t>(i)], tol) << "element " << i;
}

const std::vector<ConvCase> kCases = {
    // depthwise, the MobileNet / PP-OCR shapes
    {4, 4, 4, 9, 11, 3, 3, {1, 1}, {1, 1}, {1, 1, 1, 1}},
    {4, 4, 4, 9, 11, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}},
    {3, 3, 3, 12, 7, 5, 5, {1, 1}, {1, 1}, {2, 2, 2, 2}},
    {3, 3, 3, 12, 7, 5, 5, {2, 2}, {1, 1}, {1, 2, 2, 1}},
    // asymmetric pads, mixed strides, dilation, no padding, 1x1 taps, a kernel wider than the input
    {2, 2, 2, 8, 8, 3, 3, {1, 2}, {1, 1}, {0, 1, 2, 0}},
    {2, 2, 2, 10, 9, 3, 3, {1, 1}, {2, 3}, {2, 3, 2, 3}},
    {2, 2, 2, 6, 6, 3, 3, {1, 1}, {1, 1}, {0, 0, 0, 0}},
    {5, 5, 5, 4, 6, 1, 1, {2, 1}, {1, 1}, {0, 0, 0, 0}},
    {2, 2, 2, 3, 4, 5, 7, {1, 1}, {1, 1}, {2, 3, 2, 3}},
    // channel multiplier 2 (one input channel per group, two filters each)
    {3, 6, 3, 7, 8, 3, 3, {2, 1}, {1, 1}, {1, 1, 0, 1}},
    // the im2col + GEMM path: grouped and dense
    {4, 6, 2, 7, 9, 3, 3, {2, 1}, {1, 2}, {1, 2, 0, 1}},
    {3, 5, 1, 8, 6, 3, 2, {1, 2}, {1, 1}, {1, 0, 1, 1}},
};

TEST(ConvFastPath, DepthwiseAndGemmPathsMatchTheDefinitionInF64) {
    for (const ConvCase& k : kCases)
        checkCase(k, DType::F64, 1e-12);
}

TEST(ConvFastPath, DepthwiseAndGemmPathsMatchTheDefinitionInF32) {
    for (const ConvCase& k : kCases)
        checkCase(k, DType::F32, 1e-5);
}

TEST(ConvFastPath, RepeatedRunsAreBitIdentical) {
    const ConvCase k{6, 6, 6, 15, 13, 3, 3, {2, 2}, {1, 1}, {1, 1, 1, 1}};
    const std::vector<double> xv = pattern(k.c * k.h * k.w, 1.0, 4);
    const std::vector<double> wv = pattern(k.m * k.kh * k.kw, 0.5, 5);
    const std::vector<Tensor> ins{f64({1, k.c, k.h, k.w}, xv), f64({k.m, 1, k.kh, k.kw}, wv)};
    const AttributeMap attrs{{"group", k.group}, {"strides", k.strides}, {"pads", k.pads}};
    auto a = runOne(OpKind::Conv, ins, attrs, 1, DType::F32);
    auto b = runOne(OpKind::Conv, ins, attrs, 1, DType::F32);
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    ASSERT_EQ(a[0].byteSize(), b[0].byteSize());
    EXPECT_EQ(std::memcmp(a[0].bytes(), b[0].bytes(), a[0].byteSize()), 0);
}


TEST(ConvFastPath, ConvTransposeMatchesTheDefinition) {
    // X [1, C, H, W], W [C, M, kh, kw]: every input element scatters into the output.
    struct Case {
        int64_t c, m, h, w, kh, kw;
        std::vector<int64_t> strides, dilations, pads;
    };
    const std::vector<Case> cases = {
        {3, 2, 4, 5, 2, 2, {2, 2}, {1, 1}, {0, 0, 0, 0}},
        {2, 3, 5, 4, 3, 3, {2, 1}, {1, 2}, {1, 0, 1, 2}},
        {2, 2, 3, 6, 4, 3, {3, 2}, {1, 1}, {2, 1, 1, 1}},
    };
    for (const Case& k : cases) {
        SCOPED_TRACE("C" + std::to_string(k.c) + " M" + std::to_string(k.m) + " k" + std::to_string(k.kh) +
                     "x" + std::to_string(k.kw) + " s" + std::to_string(k.strides[0]) + "," +
                     std::to_string(k.strides[1]));
        const int64_t oh = k.strides[0] * (k.h - 1) + (k.kh - 1) * k.dilations[0] + 1 - k.pads[0] - k.pads[2];
        const int64_t ow = k.strides[1] * (k.w - 1) + (k.kw - 1) * k.dilations[1] + 1 - k.pads[1] - k.pads[3];
        const std::vector<double> xv = pattern(k.c * k.h * k.w, 1.0, 6);
        const std::vector<double> wv = pattern(k.c * k.m * k.kh * k.kw, 0.5, 7);
        std::vector<double> want(static_cast<size_t>(k.m * oh * ow), 0.0);
        for (int64_t ci = 0; ci < k.c; ++ci)
            for (int64_t iy = 0; iy < k.h; ++iy)
                for (int64_t ix = 0; ix < k.w; ++ix)
                    for (int64_t mo = 0; mo < k.m; ++mo)
                        for (int64_t ky = 0; ky < k.kh; ++ky)
                            for (int64_t kx = 0; kx < k.kw; ++kx) {
                                const int64_t oy = iy * k.strides[0] - k.pads[0] + ky * k.dilations[0];
                                const int64_t ox = ix * k.strides[1] - k.pads[1] + kx * k.dilations[1];
                                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow)
                                    continue;
                                want[static_cast<size_t>((mo * oh + oy) * ow + ox)] +=
                                    xv[static_cast<size_t>((ci * k.h + iy) * k.w + ix)] *
                                    wv[static_cast<size_t>(((ci * k.m + mo) * k.kh + ky) * k.kw + kx)];
                            }
        auto y = runOne(OpKind::ConvTranspose, {f64({1, k.c, k.h, k.w}, xv), f64({k.c, k.m, k.kh, k.kw}, wv)},
                        {{"strides", k.strides}, {"dilations", k.dilations}, {"pads", k.pads}});
        ASSERT_EQ(y.size(), 1u);
        ASSERT_EQ(y[0].shape(), (std::vector<int64_t>{1, k.m, oh, ow}));
        for (int64_t i = 0; i < y[0].numel(); ++i)
            ASSERT_NEAR(y[0].data<double>()[i], want[static_cast<size_t>(i)], 1e-12) << "element " << i;
    }
}

} // namespace
} // namespace sextant::ir::test
