// LSTM with ONNX opset 14 semantics, layout 0 (time-major): inputs X [seq, batch, in],
// W [dirs, 4H, in], R [dirs, 4H, H], optional B [dirs, 8H] (Wb then Rb), sequence_lens [batch],
// initial_h / initial_c [dirs, batch, H] and peepholes P [dirs, 3H]; outputs Y [seq, dirs, batch, H],
// Y_h and Y_c [dirs, batch, H]. Gate blocks in W, R and B are ordered i, o, f, c; peepholes i, o, f.
// Directions: forward, reverse, bidirectional (forward is direction 0). Supported: the default
// activations (Sigmoid, Tanh, Tanh), clip, input_forget; layout 1 (batch-major: X [batch, seq, in],
// initial and final states [batch, dirs, H], Y [batch, seq, dirs, H]) runs as layout 0 between
// transposes. Other activations are rejected with an error naming them. Steps at or past a batch entry's sequence length leave its
// state unchanged and its Y rows zero.

#include "Recurrent.h"

#include <algorithm>

namespace sextant::ir {

using ops::opError;

namespace {

using rnn::sigmoid;

/// The extents one LSTM evaluation runs over (time-major).
struct LstmSizes : rnn::Sizes {
    int64_t g4; ///< the four gates, 4 * hidden
};

LstmSizes lstmSizes(const Node& n, std::span<const Tensor> in) {
    LstmSizes s{rnn::sizesOf(n, in), 0};
    s.g4 = 4 * s.hidden;
    return s;
}

/// The inputs given have the shapes the sizes imply, and Y and the input projections fit in
/// memory.
Status checkLstmInputs(const Node& n, std::span<const Tensor> in, const LstmSizes& s) {
    SX_TRY(rnn::checkShape(n, in, 1, {s.dirs, s.g4, s.inSize}, "W"));
    SX_TRY(rnn::checkShape(n, in, 2, {s.dirs, s.g4, s.hidden}, "R"));
    SX_TRY(rnn::checkShape(n, in, 3, {s.dirs, 2 * s.g4}, "B"));
    SX_TRY(rnn::checkShape(n, in, 4, {s.batch}, "sequence_lens"));
    SX_TRY(rnn::checkShape(n, in, 5, {s.dirs, s.batch, s.hidden}, "initial_h"));
    SX_TRY(rnn::checkShape(n, in, 6, {s.dirs, s.batch, s.hidden}, "initial_c"));
    SX_TRY(rnn::checkShape(n, in, 7, {s.dirs, 3 * s.hidden}, "P"));
    SX_TRY(ops::checkAllocation(n, {s.seq, s.dirs, s.batch, s.hidden}));
    SX_TRY(ops::checkAllocation(n, {s.seq, s.batch, s.g4}));
    return {};
}

/// One evaluation of a checked LSTM: the outputs, the step buffers and the direction loop.
template <typename T> class LstmRun {
public:
    LstmRun(const Node& n, std::span<const Tensor> in, const LstmSizes& s, std::vector<int64_t> lens)
        : m_n(n), m_in(in), m_s(s), m_lens(std::move(lens)),
          m_reverseOnly(rnn::reverseOnly(n)),
          m_inputForget(n.attrInt("input_forget", 0) != 0), m_clipped(n.hasAttr("clip")),
          m_clip(static_cast<T>(n.attrFloat("clip", 0.0))),
          m_y(dtypeOf<T>(), {s.seq, s.dirs, s.batch, s.hidden}), m_yh(dtypeOf<T>(), {s.dirs, s.batch, s.hidden}),
          m_yc(dtypeOf<T>(), {s.dirs, s.batch, s.hidden}), m_xw(static_cast<size_t>(s.seq * s.batch * s.g4)),
          m_gates(static_cast<size_t>(s.batch * s.g4)), m_h(static_cast<size_t>(s.batch * s.hidden)),
          m_c(m_h.size()), m_bias(static_cast<size_t>(s.g4)) {}

    std::vector<Tensor> run() {
        for (int64_t d = 0; d < m_s.dirs; ++d)
            runDirection(d);
        return {std::move(m_y), std::move(m_yh), std::move(m_yc)};
    }

private:
    T act(T v) const { return m_clipped ? std::clamp(v, -m_clip, m_clip) : v; }

    void runDirection(int64_t d) {
        const int64_t seq = m_s.seq, batch = m_s.batch, inSize = m_s.inSize, hidden = m_s.hidden, g4 = m_s.g4;
        const bool reverse = m_reverseOnly || d == 1;
        const T* w = m_in[1].data<T>() + d * g4 * inSize;
        const T* r = m_in[2].data<T>() + d * g4 * hidden;
        loadBiasAndStates(d);
        const T* p = m_n.input(7) ? m_in[7].data<T>() + d * 3 * hidden : nullptr;
        // Input projections of every step at once: [seq*batch, in] x W^T -> [seq*batch, 4H].
        if (seq * batch > 0)
            ops::gemm(false, true, seq * batch, g4, inSize, T(1), m_in[0].data<T>(), inSize, w, inSize, T(0),
                      m_xw.data(), g4);
        for (int64_t step = 0; step < seq; ++step) {
            startGates(step, reverse);
            if (batch > 0)
                ops::gemm(false, true, batch, g4, hidden, T(1), m_h.data(), hidden, r, hidden, T(1), m_gates.data(), g4);
            updateStates(step, d, reverse, p);
        }
        std::copy(m_h.begin(), m_h.end(), m_yh.mutableData<T>() + d * batch * hidden);
        std::copy(m_c.begin(), m_c.end(), m_yc.mutableData<T>() + d * batch * hidden);
    }

    /// Direction `d`'s bias (Wb + Rb) and initial states.
    void loadBiasAndStates(int64_t d) {
        const int64_t batch = m_s.batch, hidden = m_s.hidden, g4 = m_s.g4;
        for (int64_t j = 0; j < g4; ++j)
            m_bias[static_cast<size_t>(j)] =
                m_n.input(3) ? m_in[3].data<T>()[d * 2 * g4 + j] + m_in[3].data<T>()[d * 2 * g4 + g4 + j] : T(0);
        for (size_t k = 0; k < m_h.size(); ++k) {
            m_h[k] = m_n.input(5) ? m_in[5].data<T>()[d * batch * hidden + static_cast<int64_t>(k)] : T(0);
            m_c[k] = m_n.input(6) ? m_in[6].data<T>()[d * batch * hidden + static_cast<int64_t>(k)] : T(0);
        }
    }

    /// The gates of one step before the recurrent term: input projection plus bias (zero for a
    /// batch entry whose sequence has ended).
    void startGates(int64_t step, bool reverse) {
        const int64_t batch = m_s.batch, g4 = m_s.g4;
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t len = m_lens[static_cast<size_t>(b)];
            const int64_t t = reverse ? len - 1 - step : step;
            T* g = m_gates.data() + b * g4;
            if (step >= len) {
                std::fill(g, g + g4, T(0));
                continue;
            }
            const T* src = m_xw.data() + (t * batch + b) * g4;
            for (int64_t j = 0; j < g4; ++j)
                g[j] = src[j] + m_bias[static_cast<size_t>(j)];
        }
    }

    /// The cell and hidden states of one step from its gates (peepholes `p` or nullptr); each
    /// new hidden state is also that step's row of Y.
    void updateStates(int64_t step, int64_t d, bool reverse, const T* p) {
        const int64_t dirs = m_s.dirs, batch = m_s.batch, hidden = m_s.hidden, g4 = m_s.g4;
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t len = m_lens[static_cast<size_t>(b)];
            if (step >= len)
                continue;
            const int64_t t = reverse ? len - 1 - step : step;
            const T* g = m_gates.data() + b * g4;
            T* hb = m_h.data() + b * hidden;
            T* cb = m_c.data() + b * hidden;
            T* yrow = m_y.mutableData<T>() + ((t * dirs + d) * batch + b) * hidden;
            for (int64_t j = 0; j < hidden; ++j) {
                const T cPrev = cb[j];
                const T it = sigmoid(act(g[j] + (p ? p[j] * cPrev : T(0))));
                const T ft = m_inputForget ? T(1) - it
                                           : sigmoid(act(g[2 * hidden + j] + (p ? p[2 * hidden + j] * cPrev : T(0))));
                const T ct = std::tanh(act(g[3 * hidden + j]));
                const T cNew = ft * cPrev + it * ct;
                const T ot = sigmoid(act(g[hidden + j] + (p ? p[hidden + j] * cNew : T(0))));
                cb[j] = cNew;
                hb[j] = ot * std::tanh(cNew);
                yrow[j] = hb[j];
            }
        }
    }

    const Node& m_n;
    std::span<const Tensor> m_in;
    const LstmSizes m_s;
    const std::vector<int64_t> m_lens;
    const bool m_reverseOnly; ///< direction = "reverse" (bidirectional: direction 1 only)
    const bool m_inputForget;
    const bool m_clipped;
    const T m_clip;
    Tensor m_y, m_yh, m_yc;
    std::vector<T> m_xw;    ///< input projections of every step [seq, batch, 4H]
    std::vector<T> m_gates; ///< one step's gates [batch, 4H]
    std::vector<T> m_h, m_c; ///< hidden and cell states [batch, H]
    std::vector<T> m_bias;  ///< Wb + Rb of the current direction [4H]
};

template <typename T>
Expected<std::vector<Tensor>> lstmForward(const Node& n, std::span<const Tensor> in) {
    const LstmSizes s = lstmSizes(n, in);
    SX_TRY(checkLstmInputs(n, in, s));
    SX_ASSIGN(std::vector<int64_t> lens, rnn::sequenceLengths(n, in, s));
    return LstmRun<T>(n, in, s, std::move(lens)).run();
}

} // namespace

// ---- LSTM

Status verifyLSTM(const Node& n) {
    SX_TRY(rnn::verifyCommonAttrs(n));
    SX_TRY(ops::checkIntAttr(n, "input_forget", 0, 1));
    static const char* const kDefaults[3] = {"Sigmoid", "Tanh", "Tanh"};
    SX_ASSIGN(std::vector<rnn::Activation> acts, rnn::readActivations(n, 3, kDefaults));
    using K = rnn::Activation::Kind;
    for (size_t i = 0; i < acts.size(); ++i)
        if (acts[i].kind != (i % 3 == 0 ? K::Sigmoid : K::Tanh)) {
            std::string list;
            if (auto* names = std::get_if<std::vector<std::string>>(n.attr("activations")))
                for (const std::string& s : *names)
                    list += (list.empty() ? "" : ", ") + s;
            return opError(n, "activations [" + list + "] are not supported (only Sigmoid, Tanh, Tanh)",
                           ErrorKind::Unsupported);
        }
    static const size_t kFloats[] = {0, 1, 2, 3, 5, 6, 7};
    static const size_t kRanks[] = {3, 3, 3, 2, 1, 3, 3, 2};
    static const char* const kNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
    SX_TRY(rnn::verifyInputTypes(n, kFloats, kRanks, kNames));
    static const size_t kStates[] = {5, 6};
    SX_TRY(rnn::verifyCommonShapes(n, 4, kStates, kNames));
    const Dim hid = rnn::hiddenDim(n);
    SX_TRY(rnn::checkDim(n, 7, 0, Dim::known(rnn::numDirections(n)), "P"));
    SX_TRY(rnn::checkDim(n, 7, 1, rnn::timesDim(3, hid), "P"));
    return {};
}

Expected<std::vector<TensorType>> inferLSTM(const Node& n) { return rnn::inferOutputs(n, 2); }

Expected<std::vector<Tensor>> runLSTM(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_TRY(verifyLSTM(n));
    static const size_t kFloats[] = {1, 2, 3, 5, 6, 7};
    static const size_t kStates[] = {5, 6};
    return rnn::runInLayout(n, inputs, 8, kFloats, kStates, [&](std::span<const Tensor> in) {
        return ops::dispatchFloat(n, in[0].dtype(), [&](auto tag) { return lstmForward<decltype(tag)>(n, in); });
    });
}

} // namespace sextant::ir
