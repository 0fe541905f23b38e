// fuse-qdq-conv: onnxruntime's QDQ pattern around a convolution becomes one sextant.Int8Conv
// whose weights stay int8, the numbers stay within a step of the float QDQ graph's, and a
// pattern the int8 cube cannot take is rejected with its reason (and computes as before).

#include "PassTestUtil.h"

#include "core/passes/GreyOps.h"
#include "core/passes/PassManager.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

constexpr const char* kRule = "fuse-qdq-conv";

ir::Tensor f32Scalar(float v) { return ir::Tensor::fromVector<float>({}, {v}); }

/// x -> Q -> DQ -> Conv(DQ(int8 w), DQ(int32 b)) -> Relu -> Q -> DQ, all float32, as
/// onnxruntime's quantizer writes it: uint8 activations (zero points 120 and 0), int8 weights
/// with one scale per output channel on `weightAxis`, an int32 bias at x_scale * w_scale.
std::unique_ptr<ir::Graph> qdqConv(int64_t weightAxis = 0) {
    Builder b;
    const int64_t co = 8, ci = 6;
    ir::Value* x = b.g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, ci, 7, 7})).value();
    const float sx = 0.02f, sy = 0.05f;
    ir::Value* xs = b.constant("x_scale", f32Scalar(sx));
    ir::Value* xz = b.constant("x_zp", ir::Tensor::fromVector<uint8_t>({}, {120}));
    ir::Value* q = b.node(OpKind::QuantizeLinear, "q_x", {x, xs, xz});
    ir::Value* dq = b.node(OpKind::DequantizeLinear, "dq_x", {q, xs, xz});
    std::vector<int8_t> wq(static_cast<size_t>(co * ci * 9));
    const std::vector<double> r = randomValues(wq.size(), 3);
    for (size_t i = 0; i < wq.size(); ++i)
        wq[i] = static_cast<int8_t>(std::lround(r[i] * 127));
    const int64_t perAxis = weightAxis == 0 ? co : ci;
    std::vector<float> ws(static_cast<size_t>(perAxis));
    for (size_t i = 0; i < ws.size(); ++i)
        ws[i] = 0.004f + 0.001f * static_cast<float>(i);
    ir::Value* w = b.constant("w_q", ir::Tensor::fromVector<int8_t>({co, ci, 3, 3}, wq));
    ir::Value* wsv = b.constant("w_scale", ir::Tensor::fromVector<float>({perAxis}, ws));
    ir::Value* wz = b.constant("w_zp", ir::Tensor::fromVector<int8_t>({perAxis}, std::vector<int8_t>(ws.size(), 0)));
    ir::Value* dqw = b.node(OpKind::DequantizeLinear, "dq_w", {w, wsv, wz}, {{"axis", weightAxis}});
    std::vector<int32_t> bias(static_cast<size_t>(co));
    std::vector<float> bs(static_cast<size_t>(co));
    for (int64_t c = 0; c < co; ++c) {
        bias[static_cast<size_t>(c)] = static_cast<int32_t>(c * 97 - 300);
        bs[static_cast<size_t>(c)] = sx * ws[static_cast<size_t>(weightAxis == 0 ? c : 0)];
    }
    ir::Value* dqb = b.node(OpKind::DequantizeLinear, "dq_b",
                            {b.constant("b_q", ir::Tensor::fromVector<int32_t>({co}, bias)),
                             b.constant("b_scale", ir::Tensor::fromVector<float>({co}, bs))},
                            {{"axis", int64_t{0}}});
    ir::Value* conv = b.node(OpKind::Conv, "conv", {dq, dqw, dqb},
                             {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Value* relu = b.node(OpKind::Relu, "relu", {conv});
    ir::Value* ys = b.constant("y_scale", f32Scalar(sy));
    ir::Value* yz = b.constant("y_zp", ir::Tensor::fromVector<uint8_t>({}, {0}));
    ir::Value* qy = b.node(OpKind::QuantizeLinear, "q_y", {relu, ys, yz});
    ir::Value* out = b.node(OpKind::DequantizeLinear, "dq_y", {qy, ys, yz});
    return b.finish({out});
}

/// Runs `g` in float32 on deterministic random inputs in [-1, 3).
std::vector<ir::Tensor> run32(const ir::Graph& g) {
    std::vector<ir::Tensor> inputs;
    unsigned seed = 5;
    for (const ir::Value* in : g.inputs()) {
        std::vector<double> v = randomValues(static_cast<size_t>(in->type().numel()), seed++, -1.0, 3.0);
        if (in->type().dtype == ir::DType::U8) { // an int8 feature map: 0..255
            std::vector<uint8_t> u;
            for (double d : v)
                u.push_back(static_cast<uint8_t>(std::lround((d + 1.0) / 4.0 * 255.0)));
            inputs.push_back(ir::Tensor::fromVector<uint8_t>(in->type().dims(), u));
            continue;
        }
        std::vector<float> f(v.begin(), v.end());
        inputs.push_back(ir::Tensor::fromVector<float>(in->type().dims(), f));
    }
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F32;
    auto out = ir::interpret(g, inputs, ctx);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? *out : std::vector<ir::Tensor>{};
}

/// Every element within one step of 0.05 (the output's scale): a float sum rounded otherwise
/// may requantise one step away.
void expectWithinAStep(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
        ASSERT_EQ(a[k].shape(), b[k].shape());
        for (int64_t i = 0; i < a[k].numel(); ++i)
            ASSERT_NEAR(a[k].at(i), b[k].at(i), 0.05 * 1.0001) << "output " << k << " element " << i;
    }
}

const ir::Node* onlyNodeOf(const ir::Graph& g, OpKind kind) {
    const ir::Node* found = nullptr;
    for (const ir::Node* n : g.nodes())
        if (n->kind() == kind) {
            EXPECT_EQ(found, nullptr) << "more than one " << ir::qualifiedOpName(kind);
            found = n;
        }
    return found;
}

} // namespace

TEST(FuseQdqConv, TheQdqConvolutionBecomesOneInt8ConvWithInt8Weights) {
    auto g = qdqConv();
    PipelineResult res = pipeline(*g);
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(stats(res, kRule).applied, 1);
    const ir::Node* conv = onlyNodeOf(*res.graph, OpKind::Int8Conv);
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->name(), "conv");
    EXPECT_EQ(conv->attrString("activation", "?"), "Relu");
    EXPECT_EQ(conv->input(0)->type().dtype, ir::DType::U8) << "it reads the QuantizeLinear's integers";
    ASSERT_TRUE(conv->input(1)->isConstant());
    EXPECT_EQ(conv->input(1)->constant()->dtype(), ir::DType::I8) << "the weights stay int8 in DRAM";
    ASSERT_TRUE(conv->input(2) && conv->input(2)->isConstant());
    EXPECT_EQ(conv->input(2)->constant()->dtype(), ir::DType::I32);
    EXPECT_EQ(conv->output(0)->type().dtype, ir::DType::U8);
    EXPECT_EQ(countKind(*res.graph, OpKind::Conv) + countKind(*res.graph, OpKind::FusedConv), 0);
    EXPECT_EQ(countKind(*res.graph, OpKind::QuantizeLinear), 1) << "only the model input's";
    EXPECT_EQ(countKind(*res.graph, OpKind::DequantizeLinear), 1) << "only the model output's";
    EXPECT_EQ(countGreyOps(*g).quantization, 6) << "x's, the weight's, the bias's and the output's Q/DQ";
    EXPECT_EQ(countGreyOps(*res.graph).quantization, 2) << "what is left unfused is counted with the grey ops";

    // Within one output step (0.05) of the float QDQ graph: the int32 sum is exact where the
    // float graph rounds, and both requantise to the same grid.
    const std::vector<ir::Tensor> want = run32(*g), got = run32(*res.graph);
    ASSERT_EQ(want.size(), 1u);
    expectWithinAStep(want, got);
    int64_t off = 0, positive = 0;
    for (int64_t i = 0; i < want[0].numel(); ++i) {
        off += got[0].at(i) != want[0].at(i);
        positive += want[0].at(i) > 0;
    }
    ASSERT_GT(positive, want[0].numel() / 4) << "the test's numbers leave something for Relu to pass";
    EXPECT_LT(off, want[0].numel() / 20) << "most elements are the same step";
}

TEST(FuseQdqConv, SwitchedOffTheWeightsFoldToFloatAsBefore) {
    auto g = qdqConv();
    PipelineConfig off;
    off.disabled.insert(kRule);
    PipelineResult res = pipeline(*g, off);
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(countKind(*res.graph, OpKind::Int8Conv), 0);
    const ir::Node* conv = onlyNodeOf(*res.graph, OpKind::FusedConv);
    ASSERT_NE(conv, nullptr);
    ASSERT_TRUE(conv->input(1)->isConstant());
    EXPECT_EQ(conv->input(1)->constant()->dtype(), ir::DType::F32);
    expectWithinAStep(run32(*g), run32(*res.graph));

    // At O1 there is no fuse pass: fold-constants folds the weight as it always did.
    PipelineConfig o1;
    o1.optLevel = 1;
    PipelineResult r1 = pipeline(*g, o1);
    ASSERT_TRUE(r1.graph);
    EXPECT_EQ(countKind(*r1.graph, OpKind::DequantizeLinear), 2) << "the activations' only";
}

TEST(FuseQdqConv, APerAxisScaleOnTheInputChannelsIsRejectedWithItsReason) {
    auto g = qdqConv(/*weightAxis=*/1);
    PipelineResult res = pipeline(*g);
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(countKind(*res.graph, OpKind::Int8Conv), 0);
    const RuleStats& s = stats(res, kRule);
    EXPECT_EQ(s.applied, 0);
    bool named = false;
    for (const auto& [why, n] : s.reasons)
        named |= why.find("per-axis scale on axis 1 of a Conv weight") != std::string::npos;
    EXPECT_TRUE(named) << "reasons: " << s.reasons.size();
    expectWithinAStep(run32(*g), run32(*res.graph));
}

// The float ops between DequantizeLinear and QuantizeLinear (a residual Add and its Relu, as the
// QDQ layout leaves them around int8 convolutions) run as one vector kernel that reads and writes
// int8: the Q/DQ steps join the group (the other operand's DequantizeLinear too, when only the
// group reads it), which stays f32, and computes the very same numbers.
TEST(FuseQdqGroups, DequantizeAddReluQuantizeIsOneInt8InInt8OutGroup) {
    // x and y: int8 feature maps (what two int8 convolutions write); the sum requantised, and a
    // float head (Sigmoid) on the dequantized sum.
    Builder b;
    ir::Value* x = b.g->addInput("x", ir::TensorType::of(ir::DType::U8, {1, 8, 5, 5})).value();
    ir::Value* y = b.g->addInput("y", ir::TensorType::of(ir::DType::U8, {1, 8, 5, 5})).value();
    ir::Value* s1 = b.constant("s1", f32Scalar(0.03f));
    ir::Value* z1 = b.constant("z1", ir::Tensor::fromVector<uint8_t>({}, {128}));
    ir::Value* s2 = b.constant("s2", f32Scalar(0.011f));
    ir::Value* z2 = b.constant("z2", ir::Tensor::fromVector<uint8_t>({}, {7}));
    ir::Value* add = b.node(OpKind::Add, "add", {b.node(OpKind::DequantizeLinear, "dqx", {x, s1, z1}),
                                                 b.node(OpKind::DequantizeLinear, "dqy", {y, s1, z1})});
    ir::Value* q = b.node(OpKind::QuantizeLinear, "q", {b.node(OpKind::Relu, "relu", {add}), s2, z2});
    ir::Value* head = b.node(OpKind::Sigmoid, "head", {b.node(OpKind::DequantizeLinear, "dq", {q, s2, z2})});
    auto g = b.finish({q, head});

    PipelineResult res = pipeline(*g);
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(countKind(*res.graph, OpKind::QuantizeLinear) + countKind(*res.graph, OpKind::DequantizeLinear), 0)
        << "every per-tensor Q and DQ is a step of a group, the other operand's DequantizeLinear too";
    bool int8InInt8Out = false;
    for (const ir::Node* n : res.graph->nodes()) {
        if (n->kind() != OpKind::ElementwiseGroup)
            continue;
        if (ir::isFloat(n->output(0)->type().dtype)) {
            EXPECT_EQ(n->precision(), ir::Precision::F32) << n->name() << ": a group with a DQ step stays f32";
        }
        const auto& steps = n->body()->steps;
        const bool twoDequantizeSteps =
            std::count_if(steps.begin(), steps.end(), [](const ir::BodyStep& st) { return st.op == OpKind::DequantizeLinear; }) == 2;
        int8InInt8Out |= twoDequantizeSteps && steps.back().op == OpKind::QuantizeLinear &&
                         n->output(0)->type().dtype == ir::DType::U8;
        if (steps.back().op == OpKind::QuantizeLinear) {
            const auto& origins = n->provenance().origins;
            EXPECT_NE(std::find(origins.begin(), origins.end(), "dqy"), origins.end()) << "the inlined DQ's origin";
        }
    }
    EXPECT_TRUE(int8InInt8Out) << "DQ(x), DQ(y) -> Add -> Relu -> Q as one group reading both int8 maps";
    const std::vector<ir::Tensor> want = run32(*g), got = run32(*res.graph);
    ASSERT_EQ(got.size(), 2u);
    for (size_t k = 0; k < 2; ++k)
        for (int64_t i = 0; i < want[k].numel(); ++i)
            ASSERT_EQ(got[k].at(i), want[k].at(i)) << "output " << k << " element " << i << ": the group computes what the ops did";

    PipelineConfig off;
    off.disabled.insert("fuse-elementwise-chain");
    PipelineResult r2 = pipeline(*g, off);
    ASSERT_TRUE(r2.graph);
    EXPECT_EQ(countKind(*r2.graph, OpKind::QuantizeLinear), 1);
}

// MaxPool (with padding) and a Reshape between DequantizeLinear and QuantizeLinear of one scale
// and zero point run on the int8 tensor itself, computing the same integers; a QuantizeLinear
// with another scale keeps its DequantizeLinear, and says why.
TEST(QuantizedPassthrough, MaxPoolAndReshapeRunOnTheInt8TensorWhenTheScalesAgree) {
    Builder b;
    ir::Value* x = b.g->addInput("x", ir::TensorType::of(ir::DType::U8, {1, 4, 6, 6})).value();
    ir::Value* s = b.constant("s", f32Scalar(0.05f));
    ir::Value* z = b.constant("z", ir::Tensor::fromVector<uint8_t>({}, {100}));
    ir::Value* s2 = b.constant("s2", f32Scalar(0.07f));
    ir::Value* pool = b.node(OpKind::MaxPool, "pool", {b.node(OpKind::DequantizeLinear, "dq1", {x, s, z})},
                             {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                              {"strides", std::vector<int64_t>{2, 2}}});
    ir::Value* q1 = b.node(OpKind::QuantizeLinear, "q1", {pool, s, z});
    ir::Value* flat = b.node(OpKind::Reshape, "flat", {b.node(OpKind::DequantizeLinear, "dq2", {q1, s, z}),
                                                      b.constant("shape", ir::Tensor::fromVector<int64_t>({2}, {1, -1}))});
    ir::Value* q2 = b.node(OpKind::QuantizeLinear, "q2", {flat, s, z});
    ir::Value* other = b.node(OpKind::QuantizeLinear, "q3",
                              {b.node(OpKind::MaxPool, "pool2", {b.node(OpKind::DequantizeLinear, "dq3", {x, s, z})},
                                      {{"kernel_shape", std::vector<int64_t>{2, 2}}}),
                               s2, z});
    auto g = b.finish({q2, other});

    // sink-dequantize-maxpool would take both MaxPools first (see below): this is the rule alone.
    PipelineConfig alone;
    alone.disabled.insert("sink-dequantize-maxpool");
    PipelineResult res = pipeline(*g, alone);
    ASSERT_TRUE(res.graph);
    const RuleStats& st = stats(res, "quantized-passthrough");
    EXPECT_EQ(st.applied, 2);
    bool named = false;
    for (const auto& [why, n] : st.reasons)
        named |= why.find("differ in scale") != std::string::npos;
    EXPECT_TRUE(named);
    for (const ir::Node* n : res.graph->nodes())
        if (n->kind() == OpKind::MaxPool && n->name() == "pool") {
            EXPECT_EQ(n->input(0)->type().dtype, ir::DType::U8) << "the MaxPool reads the int8 map";
        }
    const std::vector<ir::Tensor> want = run32(*g), got = run32(*res.graph);
    ASSERT_EQ(got.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
        ASSERT_EQ(got[k].dtype(), want[k].dtype());
        for (int64_t i = 0; i < want[k].numel(); ++i)
            ASSERT_EQ(got[k].at(i), want[k].at(i)) << "output " << k << " element " << i;
    }
}

// DequantizeLinear -> QuantizeLinear of the same scale, zero point and type is the int8 tensor
// itself: the pair goes (cancel-dq-q), the numbers stay; with another scale it requantises and
// stays, saying why.
TEST(CancelDqQ, APairOfTheSameScaleGoesAnotherStays) {
    Builder b;
    ir::Value* x = b.g->addInput("x", ir::TensorType::of(ir::DType::U8, {1, 4, 3, 3})).value();
    ir::Value* s = b.constant("s", f32Scalar(0.05f));
    ir::Value* z = b.constant("z", ir::Tensor::fromVector<uint8_t>({}, {100}));
    ir::Value* s2 = b.constant("s2", f32Scalar(0.08f));
    ir::Value* dq = b.node(OpKind::DequantizeLinear, "dq", {x, s, z});
    ir::Value* same = b.node(OpKind::QuantizeLinear, "same", {dq, s, z});
    ir::Value* out = b.node(OpKind::Sigmoid, "head", {b.node(OpKind::DequantizeLinear, "dq2", {same, s, z})});
    ir::Value* other = b.node(OpKind::QuantizeLinear, "other", {dq, s2, z});
    auto g = b.finish({out, other});
    PipelineResult res = pipeline(*g);
    ASSERT_TRUE(res.graph);
    const RuleStats& st = stats(res, "cancel-dq-q");
    EXPECT_EQ(st.applied, 1);
    bool named = false;
    for (const auto& [why, n] : st.reasons)
        named |= why.find("differ in scale") != std::string::npos;
    EXPECT_TRUE(named);
    const std::vector<ir::Tensor> want = run32(*g), got = run32(*res.graph);
    ASSERT_EQ(got.size(), 2u);
    for (size_t k = 0; k < 2; ++k)
        for (int64_t i = 0; i < want[k].numel(); ++i)
            ASSERT_EQ(got[k].at(i), want[k].at(i)) << "output " << k << " element " << i;
}

namespace {

/// x -> Q -> DQ -> MatMul(DQ(int8 w [K, N])) -> Q -> DQ, or with `gemm` a Gemm with transB (w
/// [N, K]) and an int32 bias, then Clip(0, 6) before the QuantizeLinear; the weight's scales one
/// per entry of `weightAxis`.
std::unique_ptr<ir::Graph> qdqProduct(bool gemm, int64_t weightAxis) {
    Builder b;
    const int64_t k = 24, n = 10;
    const std::vector<int64_t> xdims = gemm ? std::vector<int64_t>{5, k} : std::vector<int64_t>{2, 3, k};
    ir::Value* x = b.g->addInput("x", ir::TensorType::of(ir::DType::F32, xdims)).value();
    const float sx = 0.02f, sy = 0.05f;
    ir::Value* xs = b.constant("x_scale", f32Scalar(sx));
    ir::Value* xz = b.constant("x_zp", ir::Tensor::fromVector<uint8_t>({}, {100}));
    ir::Value* dq = b.node(OpKind::DequantizeLinear, "dq_x", {b.node(OpKind::QuantizeLinear, "q_x", {x, xs, xz}), xs, xz});
    const std::vector<int64_t> wdims = gemm ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
    std::vector<int8_t> wq(static_cast<size_t>(k * n));
    const std::vector<double> r = randomValues(wq.size(), 4);
    for (size_t i = 0; i < wq.size(); ++i)
        wq[i] = static_cast<int8_t>(std::lround(r[i] * 127));
    const int64_t perAxis = wdims[static_cast<size_t>(weightAxis)];
    std::vector<float> ws(static_cast<size_t>(perAxis));
    for (size_t i = 0; i < ws.size(); ++i)
        ws[i] = 0.003f + 0.0005f * static_cast<float>(i);
    ir::Value* dqw = b.node(OpKind::DequantizeLinear, "dq_w",
                            {b.constant("w_q", ir::Tensor::fromVector<int8_t>(wdims, wq)),
                             b.constant("w_scale", ir::Tensor::fromVector<float>({perAxis}, ws)),
                             b.constant("w_zp", ir::Tensor::fromVector<int8_t>({perAxis}, std::vector<int8_t>(ws.size(), 0)))},
                            {{"axis", weightAxis}});
    ir::Value* prod = nullptr;
    ir::Value* toQ = nullptr;
    if (gemm) {
        std::vector<int32_t> bias(static_cast<size_t>(n));
        std::vector<float> bs(static_cast<size_t>(n));
        for (int64_t c = 0; c < n; ++c) {
            bias[static_cast<size_t>(c)] = static_cast<int32_t>(c * 131 - 500);
            bs[static_cast<size_t>(c)] = sx * ws[static_cast<size_t>(weightAxis == 0 ? c : 0)];
        }
        ir::Value* dqb = b.node(OpKind::DequantizeLinear, "dq_b",
                                {b.constant("b_q", ir::Tensor::fromVector<int32_t>({n}, bias)),
                                 b.constant("b_scale", ir::Tensor::fromVector<float>({n}, bs))},
                                {{"axis", int64_t{0}}});
        prod = b.node(OpKind::Gemm, "fc", {dq, dqw, dqb}, {{"transB", int64_t{1}}});
        toQ = b.node(OpKind::Clip, "clip", {prod, b.constant("lo", f32Scalar(0.0f)), b.constant("hi", f32Scalar(6.0f))});
    } else {
        prod = b.node(OpKind::MatMul, "fc", {dq, dqw});
        toQ = prod;
    }
    ir::Value* ys = b.constant("y_scale", f32Scalar(sy));
    ir::Value* yz = b.constant("y_zp", ir::Tensor::fromVector<uint8_t>({}, {128}));
    ir::Value* out = b.node(OpKind::DequantizeLinear, "dq_y", {b.node(OpKind::QuantizeLinear, "q_y", {toQ, ys, yz}), ys, yz});
    return b.finish({out});
}

} // namespace

TEST(FuseQdqMatMul, TheQdqMatMulBecomesOneInt8GemmWithInt8Weights) {
    auto g = qdqProduct(/*gemm=*/false, /*weightAxis=*/1);
    PipelineResult res = pipeline(*g);
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(stats(res, "fuse-qdq-matmul").applied, 1);
    const ir::Node* mm = onlyNodeOf(*res.graph, OpKind::Int8Gemm);
    ASSERT_NE(mm, nullptr);
    EXPECT_EQ(mm->input(0)->type().dtype, ir::DType::U8);
    EXPECT_EQ(mm->input(0)->type().dims(), (std::vector<int64_t>{2, 3, 24})) << "a batched A stays batched";
    ASSERT_TRUE(mm->input(1)->isConstant());
    EXPECT_EQ(mm->input(1)->constant()->dtype(), ir::DType::I8) << "the weights stay int8 in DRAM";
    EXPECT_EQ(mm->input(1)->constant()->shape(), (std::vector<int64_t>{24, 10}));
    EXPECT_EQ(countKind(*res.graph, OpKind::MatMul) + countKind(*res.graph, OpKind::FusedGemm), 0);
    expectWithinAStep(run32(*g), run32(*res.graph));
}

TEST(FuseQdqMatMul, AGemmWithTransBBiasAndClipTakesAllOfItInItsEpilogue) {
    auto g = qdqProduct(/*gemm=*/true, /*weightAxis=*/0);
    PipelineResult res = pipeline(*g);
    ASSERT_TRUE(res.graph);
    const ir::Node* mm = onlyNodeOf(*res.graph, OpKind::Int8Gemm);
    ASSERT_NE(mm, nullptr);
    EXPECT_EQ(mm->attrString("activation", "?"), "Clip");
    ASSERT_TRUE(mm->input(1)->isConstant());
    EXPECT_EQ(mm->input(1)->constant()->shape(), (std::vector<int64_t>{24, 10})) << "transB applied at compile time";
    ASSERT_TRUE(mm->input(2) && mm->input(2)->isConstant());
    EXPECT_EQ(mm->input(2)->constant()->dtype(), ir::DType::I32);
    EXPECT_EQ(countKind(*res.graph, OpKind::Clip) + countKind(*res.graph, OpKind::Gemm), 0);
    const std::vector<ir::Tensor> want = run32(*g), got = run32(*res.graph);
    expectWithinAStep(want, got);
    int64_t clipped = 0;
    for (int64_t i = 0; i < want[0].numel(); ++i)
        clipped += want[0].at(i) == 0.0;
    EXPECT_GT(clipped, 0) << "the test's numbers leave something for Clip to clamp";
}

TEST(FuseQdqMatMul, APerAxisScaleAlongKIsRejectedAndTheWeightFoldsToFloat) {
    auto g = qdqProduct(/*gemm=*/false, /*weightAxis=*/0);
    PipelineResult res = pipeline(*g);
    ASSERT_TRUE(res.graph);
    EXPECT_EQ(countKind(*res.graph, OpKind::Int8Gemm), 0);
    bool named = false;
    for (const auto& [why, n] : stats(res, "fuse-qdq-matmul").reasons)
        named |= why.find("per-axis scale on axis 0 of a MatMul weight") != std::string::npos;
    EXPECT_TRUE(named);
    EXPECT_EQ(stats(res, "fold-weight-dequantize").applied, 1);
    expectWithinAStep(run32(*g), run32(*res.graph));
}

// A MaxPool of dequantized values runs on the int8 map and its smaller result is dequantized
// (sink-dequantize-maxpool): exact, whatever reads the result (here a float Sigmoid) and with
// any scale after it; a second reader of the dequantized map keeps it where it is.
TEST(SinkDequantizeMaxPool, TheMaxPoolReadsInt8AndOnlyItsResultIsDequantized) {
    Builder b;
    ir::Value* x = b.g->addInput("x", ir::TensorType::of(ir::DType::U8, {1, 4, 8, 8})).value();
    ir::Value* s = b.constant("s", f32Scalar(0.05f));
    ir::Value* z = b.constant("z", ir::Tensor::fromVector<uint8_t>({}, {100}));
    ir::AttributeMap window{{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                            {"strides", std::vector<int64_t>{2, 2}}};
    ir::Value* pooled = b.node(OpKind::MaxPool, "pool", {b.node(OpKind::DequantizeLinear, "dq", {x, s, z})}, window);
    ir::Value* head = b.node(OpKind::Sigmoid, "head", {pooled});
    // A map dequantized for two readers (another zero point, so cse keeps it apart): the
    // MaxPool may not move it.
    ir::Value* shared =
        b.node(OpKind::DequantizeLinear, "dq_shared", {x, s, b.constant("z2", ir::Tensor::fromVector<uint8_t>({}, {90}))});
    ir::Value* pool2 = b.node(OpKind::MaxPool, "pool2", {shared}, window);
    ir::Value* pool3 = b.node(OpKind::MaxPool, "pool3", {shared},
                              {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    ir::Value* sum = b.node(OpKind::Add, "sum", {pool2, pool3});
    auto g = b.finish({head, sum});

    PipelineResult res = pipeline(*g);
    ASSERT_TRUE(res.graph);
    const RuleStats& st = stats(res, "sink-dequantize-maxpool");
    EXPECT_EQ(st.applied, 1);
    bool named = false;
    for (const auto& [why, n] : st.reasons)
        named |= why.find("dq_shared") != std::string::npos;
    EXPECT_TRUE(named) << "the shared map's rejection names it";
    const ir::Node* pool = res.graph->findNode("pool");
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(pool->input(0)->type().dtype, ir::DType::U8) << "the MaxPool reads the int8 map";
    EXPECT_EQ(pool->output(0)->type().dtype, ir::DType::U8);
    ASSERT_EQ(pool->output(0)->users().size(), 1u);
    const OpKind reader = pool->output(0)->users()[0]->kind();
    EXPECT_TRUE(reader == OpKind::DequantizeLinear || reader == OpKind::ElementwiseGroup)
        << "the dequantization follows the pooling (alone, or a step of the Sigmoid's group)";
    const std::vector<ir::Tensor> want = run32(*g), got = run32(*res.graph);
    ASSERT_EQ(got.size(), 2u);
    for (size_t k = 0; k < 2; ++k)
        for (int64_t i = 0; i < want[k].numel(); ++i)
            ASSERT_EQ(got[k].at(i), want[k].at(i)) << "output " << k << " element " << i;
}
