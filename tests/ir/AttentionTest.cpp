// ONNX's Attention (ops/AttentionOps.cpp) against numpy, written from the operator's description:
// 3-D inputs reshaped to [batch, heads, sequence, head_size], past_key / past_value concatenated
// before K and V, kv heads repeated (np.repeat, axis 1) for grouped queries, scores
// (Q @ K^T) * scale (default 1 / sqrt(head_size)), softcap * tanh(scores / softcap) when softcap > 0,
// plus the mask (bool: 0 or -inf; a float mask shorter than the total sequence padded with -inf)
// and the causal -inf above diagonal i + past, softmax over the keys, then @ V.
// Inputs are sin(np.arange(n) * a + b) reshaped.

#include "TestUtil.h"

#include <cmath>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor sines(std::vector<int64_t> shape, double a, double b) {
    std::vector<double> v;
    for (int64_t i = 0; i < product(shape); ++i)
        v.push_back(std::sin(static_cast<double>(i) * a + b));
    return f64(std::move(shape), v);
}

Tensor boolean(std::vector<int64_t> shape, std::vector<uint8_t> v) {
    Tensor t(DType::Bool, shape);
    for (size_t i = 0; i < v.size(); ++i)
        t.set(static_cast<int64_t>(i), v[i]);
    return t;
}

std::vector<Tensor> qkv4() {
    return {sines({1, 2, 3, 4}, 0.7, 0.1), sines({1, 2, 3, 4}, 1.3, 0.4), sines({1, 2, 3, 2}, 0.9, -0.3)};
}

} // namespace

TEST(OnnxAttention, FourDimensionalWithItsScores) {
    auto y = runOne(OpKind::OnnxAttention, qkv4(), {}, 4);
    ASSERT_EQ(y.size(), 4u);
    expectValues(y[0], {1, 2, 3, 2},
                 {0.2765045480593117, 0.09164562969908117, 0.05050933900164249, 0.2927093468199812, 0.22172939176710219,
                  -0.15165445930837293, 0.45213116908003, 0.1953699136815183, -0.3792709783362339, 0.03685574827833401,
                  0.4475101971959251, 0.1407207664279463},
                 1e-12);
    // present_key and present_value are K and V without a past; output 3 the scaled Q K^T (mode 0).
    expectValues(y[1], {1, 2, 3, 4}, qkv4()[1].toDoubles(), 0);
    expectValues(y[2], {1, 2, 3, 2}, qkv4()[2].toDoubles(), 0);
    expectValues(y[3], {1, 2, 3, 3},
                 {0.07515169545585812, 0.6147701931626697, 0.5009084735746697, 0.2017902688249605, -0.598401299316476,
                  -0.7625122385401125, -0.4554142942886823, 0.5128839526396034, 0.9360036587968568, -0.5701840304089756,
                  0.4670534300802002, 1.0078286671701726, 0.7102975790383189, -0.2853840115450164, -0.977711913301157,
                  -0.7683324645765567, 0.07073695261451274, 0.8346153477303236},
                 1e-12);
}

TEST(OnnxAttention, CausalWithAScaleAndTheSoftmaxAsOutput3) {
    auto y = runOne(OpKind::OnnxAttention, qkv4(),
                    {{"is_causal", int64_t{1}}, {"scale", 0.5}, {"qk_matmul_output_mode", int64_t{3}}}, 4);
    ASSERT_EQ(y.size(), 4u);
    expectValues(y[0], {1, 2, 3, 2},
                 {-0.2955202066613396, 0.5646424733950354, 0.10529451592653259, 0.5989951795558927, 0.22172939176710219,
                  -0.15165445930837293, -0.925814682327732, -0.2794154981989259, -0.5199798911786007,
                  0.06536670371587489, 0.4475101971959251, 0.1407207664279463},
                 1e-12);
    expectValues(y[3], {1, 2, 3, 3},
                 {1.0, 0.0, 0.0, 0.690015457919214, 0.309984542080786, 0.0, 0.13065053594712256, 0.34406284892389155,
                  0.5252866151289859, 1.0, 0.0, 0.0, 0.7302086810943824, 0.26979131890561764, 0.0, 0.12074572098096563,
                  0.2794312457252981, 0.5998230332937362},
                 1e-12);
}

TEST(OnnxAttention, ThreeDimensionalGroupedQueriesBoolMaskAndSoftcap) {
    // q_num_heads 4 over kv_num_heads 2 (head size 2), mask [[1, 0, 1], [1, 1, 1]], softcap 0.5.
    auto y = runOne(OpKind::OnnxAttention,
                    {sines({1, 2, 8}, 0.5, 0.2), sines({1, 3, 4}, 0.8, -0.1), sines({1, 3, 4}, 1.1, 0.5),
                     boolean({2, 3}, {1, 0, 1, 1, 1, 1})},
                    {{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}, {"softcap", 0.5}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 8},
                 {0.29851986855652907, 0.06826674331895298, 0.2961012851363214, 0.05581581610668251,
                  -0.22277646525204345, -0.28974152433056327, -0.23112747081752205, -0.2856040647964268,
                  -0.3470048374021892, -0.08538741623633629, -0.2570820384652148, -0.05266273849579069,
                  0.042768924717672, 0.04594131310345562, -0.07137631228990594, -0.09372218448868802},
                 1e-12);
}

TEST(OnnxAttention, PastKeyAndValueWithFloatMasks) {
    const Tensor q = sines({1, 1, 1, 2}, 0.3, 0.0), k = sines({1, 1, 1, 2}, 0.6, 1.0), v = sines({1, 1, 1, 2}, 0.2, 0.7);
    const Tensor pk = sines({1, 1, 2, 2}, 0.45, 0.3), pv = sines({1, 1, 2, 2}, 0.35, -0.2);
    auto y = runOne(OpKind::OnnxAttention, {q, k, v, f64({1, 3}, {0.0, -1.0, 0.5}), pk, pv}, {}, 3);
    ASSERT_EQ(y.size(), 3u);
    expectValues(y[0], {1, 1, 1, 2}, {0.35652655842035136, 0.5784140694892157}, 1e-12);
    expectValues(y[1], {1, 1, 3, 2},
                 {0.2955202066613396, 0.6816387600233341, 0.9320390859672263, 0.9968650284539188, 0.8414709848078965,
                  0.9995736030415054},
                 1e-15);
    expectValues(y[2], {1, 1, 3, 2},
                 {-0.19866933079506124, 0.1494381324735992, 0.4794255386042029, 0.7512804051402927, 0.644217687237691,
                  0.7833269096274834},
                 1e-15);
    // A mask shorter than the total sequence masks the keys past its end.
    auto z = runOne(OpKind::OnnxAttention, {q, k, v, f64({1, 2}, {0.0, -1.0}), pk, pv});
    ASSERT_EQ(z.size(), 1u);
    expectValues(z[0], {1, 1, 1, 2}, {-0.0073870467656958205, 0.31921048990656076}, 1e-12);
}

TEST(OnnxAttention, MultiQueryCausalAfterAPastWithA4DBoolMask) {
    // q heads 2 over one kv head, past 1 + kv 2 keys, 2 queries: query i sees keys j <= i + 1, and
    // the mask [1, 1, 2, 3] also hides key 0 from query 1.
    auto y = runOne(OpKind::OnnxAttention,
                    {sines({1, 2, 2, 2}, 0.4, 0.9), sines({1, 1, 2, 2}, 0.75, -0.6), sines({1, 1, 2, 3}, 0.55, 0.25),
                     boolean({1, 1, 2, 3}, {1, 1, 1, 0, 1, 1}), sines({1, 1, 1, 2}, 0.2, 0.1), sines({1, 1, 1, 3}, 0.15, -0.4)},
                    {{"is_causal", int64_t{1}}, {"qk_matmul_output_mode", int64_t{3}}}, 4);
    ASSERT_EQ(y.size(), 4u);
    expectValues(y[0], {1, 2, 2, 3},
                 {-0.14412153994428642, 0.12421078283408273, 0.31445897997946, 0.8148445072536201, 0.6527350700933269,
                  0.29810080007196305, -0.11933329789441492, 0.16176396774070817, 0.356324915890599, 0.5165672108913991,
                  0.6867033570657792, 0.654295691666924},
                 1e-12);
    expectValues(y[3], {1, 2, 2, 3},
                 {0.614811224791834, 0.38518877520816597, 0.0, 0.0, 0.188090297092577, 0.811909702907423,
                  0.5758863284918377, 0.42411367150816226, 0.0, 0.0, 0.6148737406223571, 0.3851262593776429},
                 1e-12);
}

TEST(OnnxAttention, RefusesWhatItDoesNotImplementAndBadShapes) {
    std::string why = failure(OpKind::OnnxAttention, qkv4(), {{"_opset", int64_t{24}}});
    EXPECT_NE(why.find("Attention-24 (opset 24) is not supported; Sextant implements Attention-23"), std::string::npos) << why;
    why = failure(OpKind::OnnxAttention, qkv4(), {{"qk_matmul_output_mode", int64_t{2}}}, 4);
    EXPECT_NE(why.find("qk_matmul_output_mode 2 (the scores after softcap) is not supported"), std::string::npos) << why;
    why = failure(OpKind::OnnxAttention, qkv4(), {{"softcap", 1.0}}, 4);
    EXPECT_NE(why.find("qk_matmul_output_mode 0 with softcap is not supported"), std::string::npos) << why;
    why = failure(OpKind::OnnxAttention, {sines({1, 2, 8}, 1, 0), sines({1, 3, 4}, 1, 0), sines({1, 3, 4}, 1, 0)});
    EXPECT_NE(why.find("3-D Q, K and V needs attributes q_num_heads and kv_num_heads"), std::string::npos) << why;
    why = failure(OpKind::OnnxAttention, {sines({1, 3, 3, 4}, 1, 0), sines({1, 2, 3, 4}, 1, 0), sines({1, 2, 3, 2}, 1, 0)});
    EXPECT_NE(why.find("attention q heads 3 are not a multiple of kv heads 2"), std::string::npos) << why;
    why = failure(OpKind::OnnxAttention, {sines({1, 2, 3, 4}, 1, 0), sines({1, 2, 3, 4}, 1, 0), sines({1, 2, 3, 2}, 1, 0),
                                          f64({2, 4}, std::vector<double>(8, 0.0))});
    EXPECT_NE(why.find("attn_mask [2,4] does not broadcast to [batch, q_heads, q_sequence, total_sequence] = [1,2,3,3]"),
              std::string::npos) << why;
}
