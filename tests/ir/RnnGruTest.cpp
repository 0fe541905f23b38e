// RNN and GRU (opsets 7, 14, 22) against values computed independently: a numpy implementation
// of the ONNX operator spec's formulas (written for this test; it agrees with the GRU_Helper and
// RNN_Helper of ONNX 1.12's node test cases to 2e-16), printed here as literals. Inputs are
// uniform in [-1, 1], rounded to two decimals; X is [seq 3, batch 2, input 2], hidden size 3.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

const std::vector<double> kX = {
    -0.85, 0.56, -0.12, 0.45, 0.96, 0.08, 0.0, -0.86, -0.46, -0.0, 0.36, 0.61};
const std::vector<double> kW1 = {
    -0.24, -0.87, -0.42, 0.82, -0.57, -0.1, 0.86, -0.95, 0.2, 0.9, -0.54, 0.1, 0.82, -0.73,
    0.05, 0.5, 0.34, -0.06};
const std::vector<double> kR1 = {
    -0.59, -0.02, -0.26, -0.05, -0.27, 0.68, 0.54, -0.37, 0.15, -0.45, -0.09, -0.29, 0.31,
    -0.26, -0.08, 0.44, -0.17, 0.81, -0.64, 0.48, -0.16, -0.15, 0.27, 0.05, -0.17, -1.0, -0.82};
const std::vector<double> kB1 = {
    0.42, 0.05, 0.39, 0.91, 0.37, -0.89, -0.38, 0.19, -0.53, 0.93, 0.89, 0.7, -0.06, 0.68,
    -0.74, -0.38, -0.07, 0.48};
const std::vector<double> kW2 = {
    -0.03, -0.73, -0.31, -0.35, -0.4, -0.67, -0.17, -0.1, 0.55, 0.59, 0.04, -0.08, 0.56, 0.77,
    0.35, 0.6, 0.88, -0.92, 0.75, -0.45, -0.05, 0.59, 0.43, -0.71, 0.32, -0.86, -0.29, 0.63,
    -0.14, 0.2, 0.46, 0.64, 0.52, -0.99, -0.16, -0.07};
const std::vector<double> kR2 = {
    -0.89, 0.08, 0.22, 0.66, 0.88, -0.74, -0.54, 0.32, -0.74, -0.55, 0.15, -0.66, 0.56, 0.71,
    -0.93, 0.07, 0.59, 0.95, -0.45, -0.66, 0.75, 0.82, -0.6, -0.12, 0.44, 0.69, -0.66, 0.33,
    0.62, 0.1, -0.67, -0.93, -0.44, 0.62, -0.91, -0.98, -0.28, -0.87, -0.7, -0.95, 0.05, 0.39,
    -0.15, -0.73, -0.34, 0.18, 0.88, 0.99, -0.52, -0.98, 0.66, 0.85, -0.08, 0.54};
const std::vector<double> kB2 = {
    0.73, 0.22, 0.75, -0.95, -0.46, -0.45, -0.76, 0.82, -0.94, 0.35, -0.86, -0.28, -0.16, -0.64,
    0.04, 0.07, -0.37, 0.47, -0.68, -0.61, -0.29, -0.24, -0.59, 0.84, 0.66, -0.79, -0.26, -0.53,
    -0.1, -0.45, 0.0, 0.85, -0.23, 0.3, 0.19, 0.5};
const std::vector<double> kH0One = {
    -0.88, 0.49, 0.89, 0.21, -0.42, 0.34};
const std::vector<double> kH0Two = {
    0.42, 0.31, -0.71, 0.95, 0.91, -0.15, 0.19, -0.92, 0.98, 0.64, 0.27, 0.52};
const std::vector<double> kXBatchMajor = {
    -0.85, 0.56, 0.96, 0.08, -0.46, -0.0, -0.12, 0.45, 0.0, -0.86, 0.36, 0.61};
const std::vector<double> kH0TwoBatchMajor = {
    0.42, 0.31, -0.71, 0.19, -0.92, 0.98, 0.95, 0.91, -0.15, 0.64, 0.27, 0.52};
const std::vector<double> kRnnW1 = {
    -0.62, -0.38, -0.51, 0.19, -0.82, 0.79};
const std::vector<double> kRnnR1 = {
    -0.08, -0.11, -0.79, 0.37, 0.63, 0.26, -0.52, 0.57, -0.71};
const std::vector<double> kRnnB1 = {
    0.65, 0.16, -0.42, 0.03, 0.26, -0.48};
const std::vector<double> kRnnW2 = {
    0.69, -0.16, 0.78, 0.67, -0.8, 0.29, -0.38, 0.51, 0.09, -0.08, 0.79, -0.89};
const std::vector<double> kRnnR2 = {
    0.11, -0.34, -0.93, 0.51, 0.12, 0.79, 0.2, -0.33, 0.97, -0.77, -0.89, 0.47, -0.26, -0.28,
    0.75, -0.35, 0.78, 0.29};
const std::vector<double> kRnnB2 = {
    -0.34, -0.88, -0.51, 0.94, -0.19, -0.68, -0.4, 0.8, -0.67, 0.56, -0.73, 0.92};
const std::vector<double> kGruLbr0Y = {
    -0.24403377369945617, 0.05051403014404784, -0.06401437494515926, -0.22519542005048718,
    0.06673353791873081, -0.028990609933077838, -0.16029018801892414, 0.12107452087703406,
    0.0703971836752274, -0.20259353592057058, -0.08191181485895088, -0.02107380481429354,
    -0.26946196332546024, 0.12437051043513088, -0.008440852841361562, -0.34886197780708667,
    0.024447588386292032, 0.02729133308349619};
const std::vector<double> kGruLbr0Yh = {
    -0.26946196332546024, 0.12437051043513088, -0.008440852841361562, -0.34886197780708667,
    0.024447588386292032, 0.02729133308349619};
const std::vector<double> kGruLbr1Y = {
    -0.8797126670882184, 0.4942530134065622, 0.441301020039355, -0.11949195916189004,
    -0.31746508040657345, 0.19333968029354495, -0.6027190532545362, 0.46733937329622477,
    0.09817917661882457, -0.1240253421956493, -0.3122013878654195, 0.07341462384432917,
    -0.594891338871882, 0.4157446170752335, -0.10582156935612025, -0.29785145858056805,
    -0.1782807602158456, -0.04080127793636287};
const std::vector<double> kGruLbr1Yh = {
    -0.594891338871882, 0.4157446170752335, -0.10582156935612025, -0.29785145858056805,
    -0.1782807602158456, -0.04080127793636287};
const std::vector<double> kGruBidiY = {
    -0.12184961968303126, 0.37791053015788567, -0.7658211608529754, 0.09271399294192706,
    0.7713849044460328, -0.29033688145043723, 0.8639853637935413, -0.6777803168985497,
    0.5778565266672122, 0.8534920424871504, -0.5861709317093259, 0.4583716833471135,
    -0.19022794617198624, 0.49650163603386654, -0.3612660108034217, 0.0, 0.0, 0.0,
    0.839505861967029, 0.008264872781434132, 0.5991246793392015, 0.0, 0.0, 0.0,
    -0.33089360337105667, 0.3327877266535217, -0.41907635998291504, 0.0, 0.0, 0.0,
    0.6744662659004593, -0.27581514391175876, 0.7578505425530024, 0.0, 0.0, 0.0};
const std::vector<double> kGruBidiYh = {
    -0.33089360337105667, 0.3327877266535217, -0.41907635998291504, 0.09271399294192706,
    0.7713849044460328, -0.29033688145043723, 0.8639853637935413, -0.6777803168985497,
    0.5778565266672122, 0.8534920424871504, -0.5861709317093259, 0.4583716833471135};
const std::vector<double> kGruBidiYBatchMajor = {
    -0.12184961968303126, 0.37791053015788567, -0.7658211608529754, 0.8639853637935413,
    -0.6777803168985497, 0.5778565266672122, -0.19022794617198624, 0.49650163603386654,
    -0.3612660108034217, 0.839505861967029, 0.008264872781434132, 0.5991246793392015,
    -0.33089360337105667, 0.3327877266535217, -0.41907635998291504, 0.6744662659004593,
    -0.27581514391175876, 0.7578505425530024, 0.09271399294192706, 0.7713849044460328,
    -0.29033688145043723, 0.8534920424871504, -0.5861709317093259, 0.4583716833471135, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
const std::vector<double> kGruBidiYhBatchMajor = {
    -0.33089360337105667, 0.3327877266535217, -0.41907635998291504, 0.8639853637935413,
    -0.6777803168985497, 0.5778565266672122, 0.09271399294192706, 0.7713849044460328,
    -0.29033688145043723, 0.8534920424871504, -0.5861709317093259, 0.4583716833471135};
const std::vector<double> kRnnReluY = {
    0.9942, 0.9599000000000001, 0.23940000000000006, 0.5834, 0.5667, 0.0, 0.0,
    0.9804350000000003, 0.0, 0.897791, 0.8294790000000001, 0.0, 0.8573521500000001,
    1.2722740500000003, 0.03604795000000016, 0.06193403000000006, 1.2070544400000003, 0.0};
const std::vector<double> kRnnReluYh = {
    0.8573521500000001, 1.2722740500000003, 0.03604795000000016, 0.06193403000000006,
    1.2070544400000003, 0.0};
const std::vector<double> kRnnParamsY = {
    -0.007610000000000006, -0.13577999999999998, -0.034760000000000006, 0.44519999999999993,
    -0.08621, -0.09635, 0.57491809108, 0.5027272688200001, 0.27738152110000003, 0.48535465915,
    0.53359863226, 0.48627137698, 1.3272548999999998, -0.031523510000000005,
    -0.19252318000000002, 0.9054888999999999, -0.15056097000000002, -0.14153701999999999,
    0.17771067999999998, 0.45399046000000004, 0.75606178, 0.14580010000000004, 0.45709291,
    0.78403042, 0.6183625897999999, -0.09077761344000002, -0.07328937463, 1.0332239373999998,
    -0.0048582223200000114, -0.12076080093000002, 0.50044, 0.40858000000000005, 0.36598,
    0.50029, 0.41608000000000006, 0.39745};
const std::vector<double> kRnnParamsYh = {
    0.6183625897999999, -0.09077761344000002, -0.07328937463, 1.0332239373999998,
    -0.0048582223200000114, -0.12076080093000002, 0.57491809108, 0.5027272688200001,
    0.27738152110000003, 0.48535465915, 0.53359863226, 0.48627137698};
const std::vector<double> kRnnClipY = {
    0.46211715726000974, 0.46211715726000974, 0.46211715726000974, 0.46211715726000974,
    0.46211715726000974, -0.12586835167699537, 0.05434640038599423, -0.05434640038599415,
    -0.46211715726000974, 0.46211715726000974, 0.4065934972514072, -0.46211715726000974, 0.0,
    0.0, 0.0, 0.22127846789844396, 0.3384137223122229, -0.46211715726000974};
const std::vector<double> kRnnClipYh = {
    0.46211715726000974, 0.46211715726000974, 0.46211715726000974, 0.46211715726000974,
    0.46211715726000974, -0.12586835167699537};

/// The error message of a one-node graph that type inference or the interpreter rejects (empty
/// when it runs).
std::string rnnFailure(OpKind kind, const std::vector<Tensor>& ins, AttributeMap attrs) {
    return test::failure(kind, ins, std::move(attrs), 2);
}

Attribute strings(std::vector<std::string> v) { return Attribute(std::move(v)); }
Attribute floats(std::vector<double> v) { return Attribute(std::move(v)); }

} // namespace

TEST(Gru, DefaultsWithBiasWithoutLinearBeforeReset) {
    auto y = runOne(OpKind::GRU, {f64({3, 2, 2}, kX), f64({1, 9, 2}, kW1), f64({1, 9, 3}, kR1), f64({1, 18}, kB1)},
                    {{"hidden_size", int64_t{3}}}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {3, 1, 2, 3}, kGruLbr0Y);
    expectValues(y[1], {1, 2, 3}, kGruLbr0Yh);
}

TEST(Gru, LinearBeforeResetWithInitialH) {
    auto y = runOne(OpKind::GRU,
                    {f64({3, 2, 2}, kX), f64({1, 9, 2}, kW1), f64({1, 9, 3}, kR1), f64({1, 18}, kB1), Tensor(),
                     f64({1, 2, 3}, kH0One)},
                    {{"linear_before_reset", int64_t{1}}}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {3, 1, 2, 3}, kGruLbr1Y);
    expectValues(y[1], {1, 2, 3}, kGruLbr1Yh);
}

TEST(Gru, BidirectionalWithShortSequenceAndInitialH) {
    // Batch entry 1 runs one step: its Y rows at t = 1, 2 stay zero in both directions, and the
    // reverse direction starts at its t = 0.
    auto y = runOne(OpKind::GRU,
                    {f64({3, 2, 2}, kX), f64({2, 9, 2}, kW2), f64({2, 9, 3}, kR2), f64({2, 18}, kB2),
                     Tensor::fromVector<int32_t>({2}, {3, 1}), f64({2, 2, 3}, kH0Two)},
                    {{"direction", std::string("bidirectional")}, {"hidden_size", int64_t{3}}}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {3, 2, 2, 3}, kGruBidiY);
    expectValues(y[1], {2, 2, 3}, kGruBidiYh);
    const std::vector<double> got = y[0].toDoubles();
    for (int t = 1; t < 3; ++t)
        for (int d = 0; d < 2; ++d)
            for (int j = 0; j < 3; ++j)
                EXPECT_EQ(got[static_cast<size_t>(((t * 2 + d) * 2 + 1) * 3 + j)], 0.0);
}

TEST(Gru, BatchMajorLayoutTransposesXStatesAndOutputs) {
    // The bidirectional case above with layout = 1: X [batch, seq, in], initial_h [batch, dirs, H],
    // Y [batch, seq, dirs, H], Y_h [batch, dirs, H].
    auto y = runOne(OpKind::GRU,
                    {f64({2, 3, 2}, kXBatchMajor), f64({2, 9, 2}, kW2), f64({2, 9, 3}, kR2), f64({2, 18}, kB2),
                     i64({2}, {3, 1}), f64({2, 2, 3}, kH0TwoBatchMajor)},
                    {{"direction", std::string("bidirectional")}, {"layout", int64_t{1}}}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {2, 3, 2, 3}, kGruBidiYBatchMajor);
    expectValues(y[1], {2, 2, 3}, kGruBidiYhBatchMajor);
}

TEST(Gru, Float32InputStaysFloat32) {
    auto f32 = [](std::vector<int64_t> shape, const std::vector<double>& v) {
        return Tensor::fromVector<float>(std::move(shape), std::vector<float>(v.begin(), v.end()));
    };
    auto y = runOne(OpKind::GRU, {f32({3, 2, 2}, kX), f32({1, 9, 2}, kW1), f32({1, 9, 3}, kR1), f32({1, 18}, kB1)},
                    {}, 2, DType::F32);
    ASSERT_EQ(y.size(), 2u);
    EXPECT_EQ(y[0].dtype(), DType::F32);
    expectValues(y[0], {3, 1, 2, 3}, kGruLbr0Y, 1e-6);
    expectValues(y[1], {1, 2, 3}, kGruLbr0Yh, 1e-6);
}

TEST(Rnn, ReluActivation) {
    auto y = runOne(OpKind::RNN, {f64({3, 2, 2}, kX), f64({1, 3, 2}, kRnnW1), f64({1, 3, 3}, kRnnR1), f64({1, 6}, kRnnB1)},
                    {{"activations", strings({"Relu"})}, {"hidden_size", int64_t{3}}}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {3, 1, 2, 3}, kRnnReluY);
    expectValues(y[1], {1, 2, 3}, kRnnReluYh);
}

TEST(Rnn, BidirectionalActivationsTakeAlphaAndBetaInOrder) {
    // LeakyRelu (alpha 0.1) forward, HardSigmoid (alpha 0.3, beta 0.4) reverse: LeakyRelu takes
    // the first alpha, HardSigmoid the second alpha and the first beta.
    auto y = runOne(OpKind::RNN, {f64({3, 2, 2}, kX), f64({2, 3, 2}, kRnnW2), f64({2, 3, 3}, kRnnR2), f64({2, 6}, kRnnB2)},
                    {{"activations", strings({"LeakyRelu", "hardsigmoid"})},
                     {"activation_alpha", floats({0.1, 0.3})},
                     {"activation_beta", floats({0.4})},
                     {"direction", std::string("bidirectional")}},
                    2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {3, 2, 2, 3}, kRnnParamsY);
    expectValues(y[1], {2, 2, 3}, kRnnParamsYh);
}

TEST(Rnn, ReverseWithClipAndSequenceLengths) {
    // Default Tanh with clip 0.5 (an input past it gives tanh(0.5) = 0.46211715726000974).
    auto y = runOne(OpKind::RNN,
                    {f64({3, 2, 2}, kX), f64({1, 3, 2}, kRnnW1), f64({1, 3, 3}, kRnnR1), f64({1, 6}, kRnnB1),
                     i64({2}, {2, 3})},
                    {{"direction", std::string("reverse")}, {"clip", 0.5}}, 2);
    ASSERT_EQ(y.size(), 2u);
    expectValues(y[0], {3, 1, 2, 3}, kRnnClipY);
    expectValues(y[1], {1, 2, 3}, kRnnClipYh);
}

TEST(RnnGru, BadAttributesAndShapesAreRejected) {
    const Tensor x = f64({3, 2, 2}, kX);
    const Tensor w = f64({1, 9, 2}, kW1), r = f64({1, 9, 3}, kR1);
    const std::string lbr = rnnFailure(OpKind::GRU, {x, w, r}, {{"linear_before_reset", int64_t{2}}});
    EXPECT_NE(lbr.find("linear_before_reset"), std::string::npos) << lbr;
    // W with 2H rows where GRU needs 3H.
    const std::string wShape =
        rnnFailure(OpKind::GRU, {x, f64({1, 6, 2}, std::vector<double>(12, 0.1)), r}, {{"hidden_size", int64_t{3}}});
    EXPECT_NE(wShape.find("W has shape"), std::string::npos) << wShape;
    const Tensor rw = f64({1, 3, 2}, kRnnW1), rr = f64({1, 3, 3}, kRnnR1);
    const std::string unknown = rnnFailure(OpKind::RNN, {x, rw, rr}, {{"activations", strings({"Swish"})}});
    EXPECT_NE(unknown.find("activation 'Swish' is not one of"), std::string::npos) << unknown;
    const std::string count = rnnFailure(OpKind::RNN, {x, f64({2, 3, 2}, kRnnW2), f64({2, 3, 3}, kRnnR2)},
                                      {{"direction", std::string("bidirectional")}, {"activations", strings({"Tanh"})}});
    EXPECT_NE(count.find("activations has 1 names, expected 2"), std::string::npos) << count;
    const std::string dir = rnnFailure(OpKind::RNN, {x, rw, rr}, {{"direction", std::string("sideways")}});
    EXPECT_NE(dir.find("direction"), std::string::npos) << dir;
    const std::string lens = rnnFailure(OpKind::RNN, {x, rw, rr, Tensor(), i64({2}, {4, 1})}, {});
    EXPECT_NE(lens.find("sequence_lens[0] = 4 is outside 0..3"), std::string::npos) << lens;
}

TEST(RnnGru, RowsTellTheCompilerTheyRunOnTheHost) {
    for (OpKind k : {OpKind::RNN, OpKind::GRU}) {
        const OpInfo& op = opInfo(k);
        EXPECT_EQ(op.cost, CostClass::Host);
        EXPECT_EQ(op.work, WorkModel::Host);
        EXPECT_EQ(op.maxInputs, 6);
        EXPECT_EQ(op.maxOutputs, 2);
    }
    EXPECT_EQ(findOp("", "RNN"), OpKind::RNN);
    EXPECT_EQ(findOp("", "GRU"), OpKind::GRU);
}
