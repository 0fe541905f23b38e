// RNN and GRU (ONNX opsets 7, 14, 22), float64/float32 reference kernels on the host.
// Inputs X [seq, batch, in], W [dirs, G*H, in], R [dirs, G*H, H], optional B [dirs, 2*G*H] (Wb then
// Rb), sequence_lens [batch] and initial_h [dirs, batch, H]; outputs Y [seq, dirs, batch, H] and
// Y_h [dirs, batch, H]. G is 1 for RNN and 3 for GRU, whose gate blocks are ordered z, r, h.
//   RNN: H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb)                                  (f: Tanh)
//   GRU: z = f(X_t Wz^T + H_{t-1} Rz^T + Wbz + Rbz), r likewise with Wr, Rr       (f: Sigmoid)
//        linear_before_reset 0: h = g(X_t Wh^T + (r . H_{t-1}) Rh^T + Rbh + Wbh)  (g: Tanh)
//        linear_before_reset 1: h = g(X_t Wh^T + r . (H_{t-1} Rh^T + Rbh) + Wbh)
//        H_t = (1 - z) . h + z . H_{t-1}
// clip bounds every activation's input to [-clip, clip]. Directions forward, reverse and
// bidirectional (forward is direction 0, its activations first); layout 1 (batch-major X
// [batch, seq, in], initial_h and Y_h [batch, dirs, H], Y [batch, seq, dirs, H]) runs as layout 0
// between transposes. A batch entry's steps at or past its sequence length leave its state
// unchanged and its Y rows zero; the reverse direction starts at its last step.

#include "Recurrent.h"

#include <algorithm>

namespace sextant::ir {

using ops::opError;

namespace {

const size_t kFloatInputs[] = {0, 1, 2, 3, 5};
const size_t kRanks[] = {3, 3, 3, 2, 1, 3};
const char* const kNames[] = {"X", "W", "R", "B", "sequence_lens", "initial_h"};
const size_t kStates[] = {5};

const char* const kRnnDefaults[] = {"Tanh"};
const char* const kGruDefaults[] = {"Sigmoid", "Tanh"};

/// What RNN and GRU verify alike: the shared attributes, the activations (`perDirection` of
/// them, `defaults`), the input types and shapes for `gates` gate blocks.
Status verifyRecurrence(const Node& n, int64_t gates, std::span<const char* const> defaults) {
    SX_TRY(rnn::verifyCommonAttrs(n));
    SX_TRY(rnn::readActivations(n, static_cast<int>(defaults.size()), defaults));
    SX_TRY(rnn::verifyInputTypes(n, kFloatInputs, kRanks, kNames));
    SX_TRY(rnn::verifyCommonShapes(n, gates, kStates, kNames));
    return {};
}

/// One evaluation of a checked RNN (gates = 1) or GRU (gates = 3), time-major.
template <typename T> class RecurrenceRun {
public:
    RecurrenceRun(const Node& n, std::span<const Tensor> in, const rnn::Sizes& s, int64_t gates,
                  std::vector<int64_t> lens, std::vector<rnn::Activation> acts)
        : m_n(n), m_in(in), m_s(s), m_gates(gates), m_gh(gates * s.hidden), m_lens(std::move(lens)),
          m_acts(std::move(acts)), m_reverseOnly(rnn::reverseOnly(n)),
          m_linearBeforeReset(n.attrInt("linear_before_reset", 0) != 0), m_clipped(n.hasAttr("clip")),
          m_clip(static_cast<T>(n.attrFloat("clip", 0.0))),
          m_y(dtypeOf<T>(), {s.seq, s.dirs, s.batch, s.hidden}), m_yh(dtypeOf<T>(), {s.dirs, s.batch, s.hidden}),
          m_xw(static_cast<size_t>(s.seq * s.batch * m_gh)), m_rec(static_cast<size_t>(s.batch * m_gh)),
          m_h(static_cast<size_t>(s.batch * s.hidden)), m_rh(m_h.size()), m_wb(static_cast<size_t>(m_gh)),
          m_rb(static_cast<size_t>(m_gh)) {}

    std::vector<Tensor> run() {
        for (int64_t d = 0; d < m_s.dirs; ++d)
            runDirection(d);
        return {std::move(m_y), std::move(m_yh)};
    }

private:
    /// An activation's input, clipped when the node has clip.
    T clip(T v) const { return m_clipped ? std::clamp(v, -m_clip, m_clip) : v; }

    void runDirection(int64_t d) {
        const int64_t seq = m_s.seq, batch = m_s.batch, inSize = m_s.inSize, hidden = m_s.hidden, gh = m_gh;
        const bool reverse = m_reverseOnly || d == 1;
        const T* w = m_in[1].data<T>() + d * gh * inSize;
        const T* r = m_in[2].data<T>() + d * gh * hidden;
        for (int64_t j = 0; j < gh; ++j) {
            m_wb[static_cast<size_t>(j)] = m_n.input(3) ? m_in[3].data<T>()[d * 2 * gh + j] : T(0);
            m_rb[static_cast<size_t>(j)] = m_n.input(3) ? m_in[3].data<T>()[d * 2 * gh + gh + j] : T(0);
        }
        for (size_t k = 0; k < m_h.size(); ++k)
            m_h[k] = m_n.input(5) ? m_in[5].data<T>()[d * batch * hidden + static_cast<int64_t>(k)] : T(0);
        // Input projections of every step at once: [seq*batch, in] x W^T -> [seq*batch, G*H].
        if (seq * batch > 0)
            ops::gemm(false, true, seq * batch, gh, inSize, T(1), m_in[0].data<T>(), inSize, w, inSize, T(0),
                      m_xw.data(), gh);
        const rnn::Activation* acts = m_acts.data() + d * (m_gates == 1 ? 1 : 2);
        for (int64_t step = 0; step < seq; ++step) {
            // Recurrent terms H_{t-1} R^T; GRU's hidden gate without linear_before_reset takes
            // (r . H_{t-1}) Rh^T instead, once r is known.
            const int64_t recCols = m_gates == 3 && !m_linearBeforeReset ? 2 * hidden : gh;
            if (batch > 0)
                ops::gemm(false, true, batch, recCols, hidden, T(1), m_h.data(), hidden, r, hidden, T(0),
                          m_rec.data(), gh);
            if (m_gates == 1)
                rnnStep(step, d, reverse, acts[0]);
            else
                gruStep(step, d, reverse, r, acts[0], acts[1]);
        }
        std::copy(m_h.begin(), m_h.end(), m_yh.mutableData<T>() + d * batch * hidden);
    }

    /// The time index of `step` for batch entry `b`, or -1 when its sequence has ended.
    int64_t timeOf(int64_t step, int64_t b, bool reverse) const {
        const int64_t len = m_lens[static_cast<size_t>(b)];
        if (step >= len)
            return -1;
        return reverse ? len - 1 - step : step;
    }

    T* yRow(int64_t t, int64_t d, int64_t b) {
        return m_y.mutableData<T>() + ((t * m_s.dirs + d) * m_s.batch + b) * m_s.hidden;
    }

    void rnnStep(int64_t step, int64_t d, bool reverse, const rnn::Activation& f) {
        const int64_t batch = m_s.batch, hidden = m_s.hidden;
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t t = timeOf(step, b, reverse);
            if (t < 0)
                continue;
            const T* xw = m_xw.data() + (t * batch + b) * hidden;
            const T* rec = m_rec.data() + b * hidden;
            T* hb = m_h.data() + b * hidden;
            T* yrow = yRow(t, d, b);
            for (int64_t j = 0; j < hidden; ++j) {
                const size_t jj = static_cast<size_t>(j);
                hb[j] = f(clip(xw[j] + rec[j] + m_wb[jj] + m_rb[jj]));
                yrow[j] = hb[j];
            }
        }
    }

    void gruStep(int64_t step, int64_t d, bool reverse, const T* r, const rnn::Activation& f,
                 const rnn::Activation& g) {
        const int64_t batch = m_s.batch, hidden = m_s.hidden, gh = m_gh;
        // Reset gates first (into m_rh as r . H_{t-1} without linear_before_reset, else as r).
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t t = timeOf(step, b, reverse);
            if (t < 0)
                continue;
            const T* xw = m_xw.data() + (t * batch + b) * gh;
            const T* rec = m_rec.data() + b * gh;
            const T* hb = m_h.data() + b * hidden;
            T* rh = m_rh.data() + b * hidden;
            for (int64_t j = 0; j < hidden; ++j) {
                const size_t k = static_cast<size_t>(hidden + j);
                const T rt = f(clip(xw[hidden + j] + rec[hidden + j] + m_wb[k] + m_rb[k]));
                rh[j] = m_linearBeforeReset ? rt : rt * hb[j];
            }
        }
        // (r . H_{t-1}) Rh^T into the hidden gate's columns of m_rec.
        if (!m_linearBeforeReset && batch > 0)
            ops::gemm(false, true, batch, hidden, hidden, T(1), m_rh.data(), hidden, r + 2 * hidden * hidden,
                      hidden, T(0), m_rec.data() + 2 * hidden, gh);
        for (int64_t b = 0; b < batch; ++b) {
            const int64_t t = timeOf(step, b, reverse);
            if (t < 0)
                continue;
            const T* xw = m_xw.data() + (t * batch + b) * gh;
            const T* rec = m_rec.data() + b * gh;
            const T* rh = m_rh.data() + b * hidden;
            T* hb = m_h.data() + b * hidden;
            T* yrow = yRow(t, d, b);
            for (int64_t j = 0; j < hidden; ++j) {
                const size_t z = static_cast<size_t>(j), h = static_cast<size_t>(2 * hidden + j);
                const T zt = f(clip(xw[j] + rec[j] + m_wb[z] + m_rb[z]));
                const T recH = m_linearBeforeReset ? rh[j] * (rec[2 * hidden + j] + m_rb[h])
                                                   : rec[2 * hidden + j] + m_rb[h];
                const T ht = g(clip(xw[2 * hidden + j] + m_wb[h] + recH));
                hb[j] = (T(1) - zt) * ht + zt * hb[j];
                yrow[j] = hb[j];
            }
        }
    }

    const Node& m_n;
    std::span<const Tensor> m_in;
    const rnn::Sizes m_s;
    const int64_t m_gates; ///< 1 (RNN) or 3 (GRU)
    const int64_t m_gh;    ///< gates * hidden
    const std::vector<int64_t> m_lens;
    const std::vector<rnn::Activation> m_acts;
    const bool m_reverseOnly; ///< direction = "reverse" (bidirectional: direction 1 only)
    const bool m_linearBeforeReset;
    const bool m_clipped;
    const T m_clip;
    Tensor m_y, m_yh;
    std::vector<T> m_xw;     ///< input projections of every step [seq, batch, G*H]
    std::vector<T> m_rec;    ///< one step's recurrent terms [batch, G*H]
    std::vector<T> m_h;      ///< hidden state [batch, H]
    std::vector<T> m_rh;     ///< GRU: r . H_{t-1} (or r with linear_before_reset) [batch, H]
    std::vector<T> m_wb, m_rb; ///< Wb and Rb of the current direction [G*H]
};

template <typename T>
Expected<std::vector<Tensor>> recurrenceForward(const Node& n, std::span<const Tensor> in, int64_t gates,
                                                std::span<const char* const> defaults) {
    const rnn::Sizes s = rnn::sizesOf(n, in);
    const int64_t gh = gates * s.hidden;
    SX_TRY(rnn::checkShape(n, in, 1, {s.dirs, gh, s.inSize}, "W"));
    SX_TRY(rnn::checkShape(n, in, 2, {s.dirs, gh, s.hidden}, "R"));
    SX_TRY(rnn::checkShape(n, in, 3, {s.dirs, 2 * gh}, "B"));
    SX_TRY(rnn::checkShape(n, in, 4, {s.batch}, "sequence_lens"));
    SX_TRY(rnn::checkShape(n, in, 5, {s.dirs, s.batch, s.hidden}, "initial_h"));
    SX_TRY(ops::checkAllocation(n, {s.seq, s.dirs, s.batch, s.hidden}));
    SX_TRY(ops::checkAllocation(n, {s.seq, s.batch, gh}));
    SX_ASSIGN(std::vector<int64_t> lens, rnn::sequenceLengths(n, in, s));
    SX_ASSIGN(std::vector<rnn::Activation> acts,
              rnn::readActivations(n, static_cast<int>(defaults.size()), defaults));
    return RecurrenceRun<T>(n, in, s, gates, std::move(lens), std::move(acts)).run();
}

/// Runs a verified RNN or GRU in the node's layout.
Expected<std::vector<Tensor>> runRecurrence(const Node& n, std::span<const Tensor> inputs, int64_t gates,
                                            std::span<const char* const> defaults) {
    return rnn::runInLayout(n, inputs, 6, kFloatInputs, kStates, [&](std::span<const Tensor> in) {
        return ops::dispatchFloat(n, in[0].dtype(), [&](auto tag) {
            return recurrenceForward<decltype(tag)>(n, in, gates, defaults);
        });
    });
}

} // namespace

// ---- RNN

Status verifyRNN(const Node& n) { return verifyRecurrence(n, 1, kRnnDefaults); }

Expected<std::vector<TensorType>> inferRNN(const Node& n) { return rnn::inferOutputs(n, 1); }

Expected<std::vector<Tensor>> runRNN(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_TRY(verifyRNN(n));
    return runRecurrence(n, inputs, 1, kRnnDefaults);
}

// ---- GRU

Status verifyGRU(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "linear_before_reset", 0, 1));
    return verifyRecurrence(n, 3, kGruDefaults);
}

Expected<std::vector<TensorType>> inferGRU(const Node& n) { return rnn::inferOutputs(n, 1); }

Expected<std::vector<Tensor>> runGRU(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_TRY(verifyGRU(n));
    return runRecurrence(n, inputs, 3, kGruDefaults);
}

} // namespace sextant::ir
