// DFT and STFT (ops/Spectral.cpp) against numpy.fft: np.fft.fft(x, n=dft_length, axis=a) (its
// first n // 2 + 1 bins when onesided), np.fft.ifft for inverse, and for STFT np.fft.fft of the
// stacked frames s[f * step : f * step + frame_length] * window. Complex values are (real, imag)
// pairs in the last dim. ONNX's node tests for both ops run in tests/conformance.

#include "TestUtil.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor signal6() { return f64({1, 6, 1}, {1.0, -2.0, 0.5, 3.0, 0.25, -1.0}); }

} // namespace

TEST(DFT, RealForwardAtOpset17) {
    auto y = runOne(OpKind::DFT, {signal6()}, {{"_opset", int64_t{17}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 6, 2},
                 {1.75, 0.0, -3.8749999999999996, 0.6495190528383288, 5.125, 1.0825317547305482, 1.7499999999999998,
                  0.0, 5.125, -1.0825317547305482, -3.875, -0.6495190528383288},
                 1e-12);
    // Onesided, truncated to dft_length 4: bins 0..2 of np.fft.fft(x, n=4).
    auto z = runOne(OpKind::DFT, {signal6(), i64({}, {4})}, {{"_opset", int64_t{17}}, {"onesided", int64_t{1}}});
    ASSERT_EQ(z.size(), 1u);
    expectValues(z[0], {1, 3, 2}, {2.5, 0.0, 0.5, 5.0, 0.5, 0.0}, 1e-12);
}

TEST(DFT, ComplexInverseZeroPadded) {
    // np.fft.ifft([1 + 0.5j, -1 + 2j, -0.5j], n=5), axis 1 (the attribute's default at opset 17).
    auto y = runOne(OpKind::DFT, {f64({1, 3, 2}, {1.0, 0.5, -1.0, 2.0, 0.0, -0.5}), i64({}, {5})},
                    {{"_opset", int64_t{17}}, {"inverse", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 5, 2},
                 {0.0, 0.4, -0.18344748016380363, 0.11429719392844302, 0.03158364632848487, -0.3720655476459684,
                  0.6920231514214942, -0.1369514467289791, 0.45984068241382464, 0.4947198004465045},
                 1e-12);
}

TEST(DFT, AxisAttributeAtOpset17AndAxisInputAtOpset20) {
    // x = np.arange(6).reshape(1, 2, 3) * 0.5 - 1 as [1, 2, 3, 1].
    const Tensor x = f64({1, 2, 3, 1}, {-1.0, -0.5, 0.0, 0.5, 1.0, 1.5});
    const std::vector<double> alongFirst{-0.5, 0.0, 0.5, 0.0, 1.5, 0.0, -1.5, 0.0, -1.5, 0.0, -1.5, 0.0};
    const std::vector<double> alongLast{-1.5, 0.0, -0.75, 0.4330127018922193, -0.75, -0.4330127018922193,
                                        3.0,  0.0, -0.75, 0.4330127018922193, -0.75, -0.4330127018922193};
    auto a17 = runOne(OpKind::DFT, {x}, {{"_opset", int64_t{17}}, {"axis", int64_t{2}}});
    ASSERT_EQ(a17.size(), 1u);
    expectValues(a17[0], {1, 2, 3, 2}, alongLast, 1e-12);
    // Opset 20: axis is input 2, default -2 (the last signal dim).
    auto d20 = runOne(OpKind::DFT, {x}, {{"_opset", int64_t{20}}});
    ASSERT_EQ(d20.size(), 1u);
    expectValues(d20[0], {1, 2, 3, 2}, alongLast, 1e-12);
    auto a20 = runOne(OpKind::DFT, {x, Tensor(), i64({}, {-3})}, {{"_opset", int64_t{20}}});
    ASSERT_EQ(a20.size(), 1u);
    expectValues(a20[0], {1, 2, 3, 2}, alongFirst, 1e-12);
}

TEST(DFT, RejectsBadAxisAndOnesidedComplex) {
    std::string why = failure(OpKind::DFT, {signal6()}, {{"_opset", int64_t{17}}, {"axis", int64_t{2}}});
    EXPECT_NE(why.find("dft axis 2 is outside [-3, -2] and [0, 1] for an input of rank 3"), std::string::npos) << why;
    why = failure(OpKind::DFT, {signal6(), Tensor(), i64({}, {-1})}, {{"_opset", int64_t{20}}});
    EXPECT_NE(why.find("dft axis -1 is outside"), std::string::npos) << why;
    why = failure(OpKind::DFT, {f64({1, 3, 2}, {1, 0, 1, 0, 1, 0})}, {{"onesided", int64_t{1}}});
    EXPECT_NE(why.find("onesided 1 needs a real signal"), std::string::npos) << why;
    why = failure(OpKind::DFT, {signal6()}, {{"_opset", int64_t{20}}, {"axis", int64_t{1}}});
    EXPECT_NE(why.find("dft takes axis as input 2 from opset 20 on"), std::string::npos) << why;
    why = failure(OpKind::DFT, {signal6()}, {{"onesided", int64_t{1}}, {"inverse", int64_t{1}}});
    EXPECT_NE(why.find("onesided 1 and inverse 1 is not supported"), std::string::npos) << why;
    why = failure(OpKind::DFT, {f64({1, 6, 3}, std::vector<double>(18, 0.0))});
    EXPECT_NE(why.find("last dim must be 1 (real) or 2 (complex)"), std::string::npos) << why;
}

namespace {

Tensor signal8() { return f64({1, 8, 1}, {0.5, 1.0, -1.0, 2.0, 0.0, 1.5, -0.5, 0.25}); }

} // namespace

TEST(STFT, OnesidedWithAWindow) {
    // frame_step 3, window [0.5, 1, 1, 0.5]: frames (8 - 4) // 3 + 1 = 2, bins 4 // 2 + 1 = 3.
    auto y = runOne(OpKind::STFT, {signal8(), i64({}, {3}), f64({4}, {0.5, 1.0, 1.0, 0.5})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 3, 2}, {1.25, 0.0, 1.25, 0.0, -2.75, 0.0, 2.25, 0.0, -0.5, -0.25, 2.75, 0.0}, 1e-12);
}

TEST(STFT, FullSpectrumFromAFrameLength) {
    // frame_step 2, frame_length 3, no window, onesided 0: 3 frames of 3 bins.
    auto y = runOne(OpKind::STFT, {signal8(), i64({}, {2}), Tensor(), i64({}, {3})}, {{"onesided", int64_t{0}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 3, 3, 2},
                 {0.5, 0.0, 0.5, -1.7320508075688772, 0.5, 1.7320508075688772, 1.0, 0.0, -2.0, -1.7320508075688772,
                  -2.0, 1.7320508075688772, 1.0, 0.0, -0.5, -1.7320508075688772, -0.5, 1.7320508075688772},
                 1e-12);
}

TEST(STFT, RejectsMismatchedWindowAndLongFrames) {
    std::string why = failure(OpKind::STFT, {signal8(), i64({}, {2}), f64({4}, {1, 1, 1, 1}), i64({}, {3})});
    EXPECT_NE(why.find("stft window has 4 entries, frame_length is 3"), std::string::npos) << why;
    why = failure(OpKind::STFT, {signal8(), i64({}, {2}), Tensor(), i64({}, {9})});
    EXPECT_NE(why.find("stft frame_length 9 exceeds the signal's length 8"), std::string::npos) << why;
    why = failure(OpKind::STFT, {signal8(), i64({}, {0}), Tensor(), i64({}, {4})});
    EXPECT_NE(why.find("stft frame_step must be >= 1, got 0"), std::string::npos) << why;
    why = failure(OpKind::STFT, {signal8(), i64({}, {2})});
    EXPECT_NE(why.find("stft needs a window or a frame_length"), std::string::npos) << why;
}
