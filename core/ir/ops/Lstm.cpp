// LSTM with ONNX opset 14 semantics, layout 0 (time-major): inputs X [seq, batch, in],
// W [dirs, 4H, in], R [dirs, 4H, H], optional B [dirs, 8H] (Wb then Rb), sequence_lens [batch],
// initial_h / initial_c [dirs, batch, H] and peepholes P [dirs, 3H]; outputs Y [seq, dirs, batch, H],
// Y_h and Y_c [dirs, batch, H]. Gate blocks in W, R and B are ordered i, o, f, c; peepholes i, o, f.
// Directions: forward, reverse, bidirectional (forward is direction 0). Supported: the default
// activations (Sigmoid, Tanh, Tanh), clip, input_forget; layout 1 (batch-major: X [batch, seq, in],
// initial and final states [batch, dirs, H], Y [batch, seq, dirs, H]) runs as layout 0 between
// transposes. Other activations are rejected with an error naming them. Steps at or past a batch entry's sequence length leave its
// state unchanged and its Y rows zero.

#include "OpUtil.h"

#include <algorithm>
#include <cctype>

namespace sextant::ir {

using ops::opError;

namespace {

int64_t numDirections(const Node& n) { return n.attrString("direction", "forward") == "bidirectional" ? 2 : 1; }

std::string lower(std::string s) {
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

/// Checks a known dim of input `i` against an expected extent (when both are known).
Status checkDim(const Node& n, size_t i, size_t d, const Dim& want, const char* what) {
    const TensorType* t = ops::inputType(n, i);
    if (!t || d >= t->rank() || !want.isKnown() || !t->shape[d].isKnown())
        return {};
    if (t->shape[d].value != want.value)
        return opError(n, std::string(what) + " has shape " + t->str() + ", dim " + std::to_string(d) +
                              " should be " + std::to_string(want.value));
    return {};
}

/// The hidden size: the attribute, else R's last dim.
Dim hiddenDim(const Node& n) {
    if (n.hasAttr("hidden_size"))
        return Dim::known(n.attrInt("hidden_size", 0));
    const TensorType* r = ops::inputType(n, 2);
    if (r && r->rank() == 3)
        return r->shape[2];
    return ops::unknownDim();
}

/// Batch-major layout (layout = 1).
bool batchMajor(const Node& n) { return n.attrInt("layout", 0) == 1; }

/// `t` with its dims permuted: result dim i is input dim perm[i].
Tensor permuted(const Tensor& t, const std::vector<size_t>& perm) {
    const std::vector<int64_t>& in = t.shape();
    std::vector<int64_t> out(perm.size()), inStride(in.size(), 1);
    for (size_t i = in.size(); i-- > 1;)
        inStride[i - 1] = inStride[i] * in[i];
    for (size_t i = 0; i < perm.size(); ++i)
        out[i] = in[perm[i]];
    Tensor r(t.dtype(), out);
    std::vector<int64_t> idx(out.size(), 0);
    for (int64_t k = 0; k < r.numel(); ++k) {
        int64_t src = 0;
        for (size_t i = 0; i < out.size(); ++i)
            src += idx[i] * inStride[perm[i]];
        r.set(k, t.at(src));
        for (size_t i = out.size(); i-- > 0;) {
            if (++idx[i] < out[i])
                break;
            idx[i] = 0;
        }
    }
    return r;
}

template <typename T> T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

/// The extents one LSTM evaluation runs over (time-major).
struct LstmSizes {
    int64_t seq, batch, inSize, dirs, hidden, g4; ///< g4: the four gates, 4 * hidden
};

LstmSizes lstmSizes(const Node& n, std::span<const Tensor> in) {
    const Tensor& x = in[0];
    LstmSizes s;
    s.seq = x.shape()[0];
    s.batch = x.shape()[1];
    s.inSize = x.shape()[2];
    s.dirs = numDirections(n);
    s.hidden = n.hasAttr("hidden_size") ? n.attrInt("hidden_size", 0) : in[2].shape()[2];
    s.g4 = 4 * s.hidden;
    return s;
}

/// The inputs given have the shapes the sizes imply, and Y and the input projections fit in
/// memory.
Status checkLstmInputs(const Node& n, std::span<const Tensor> in, const LstmSizes& s) {
    auto expectShape = [&](size_t i, std::vector<int64_t> want, const char* what) -> Status {
        if (!n.input(i))
            return {};
        if (in[i].shape() != want)
            return opError(n, std::string(what) + " has shape " + in[i].type().str() + ", expected " +
                                  TensorType::of(in[i].dtype(), want).str());
        return {};
    };
    SX_TRY(expectShape(1, {s.dirs, s.g4, s.inSize}, "W"));
    SX_TRY(expectShape(2, {s.dirs, s.g4, s.hidden}, "R"));
    SX_TRY(expectShape(3, {s.dirs, 2 * s.g4}, "B"));
    SX_TRY(expectShape(4, {s.batch}, "sequence_lens"));
    SX_TRY(expectShape(5, {s.dirs, s.batch, s.hidden}, "initial_h"));
    SX_TRY(expectShape(6, {s.dirs, s.batch, s.hidden}, "initial_c"));
    SX_TRY(expectShape(7, {s.dirs, 3 * s.hidden}, "P"));
    SX_TRY(ops::checkAllocation(n, {s.seq, s.dirs, s.batch, s.hidden}));
    SX_TRY(ops::checkAllocation(n, {s.seq, s.batch, s.g4}));
    return {};
}

/// Each batch entry's sequence length: sequence_lens (each in 0..seq) when given, else seq.
Expected<std::vector<int64_t>> sequenceLengths(const Node& n, std::span<const Tensor> in,
                                               const LstmSizes& s) {
    const int64_t seq = s.seq, batch = s.batch;
    std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
    if (n.input(4))
        for (int64_t b = 0; b < batch; ++b) {
            const double l = in[4].at(b);
            if (l < 0 || l > static_cast<double>(seq))
                return opError(n, "sequence_lens[" + std::to_string(b) + "] = " + std::to_string(static_cast<int64_t>(l)) +
                                      " is outside 0.." + std::to_string(seq));
            lens[static_cast<size_t>(b)] = static_cast<int64_t>(l);
        }
    return lens;
}

/// One evaluation of a checked LSTM: the outputs, the step buffers and the direction loop.
template <typename T> class LstmRun {
public:
    LstmRun(const Node& n, std::span<const Tensor> in, const LstmSizes& s, std::vector<int64_t> lens)
        : m_n(n), m_in(in), m_s(s), m_lens(std::move(lens)),
          m_reverseOnly(n.attrString("direction", "forward") == "reverse"),
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
    SX_ASSIGN(std::vector<int64_t> lens, sequenceLengths(n, in, s));
    return LstmRun<T>(n, in, s, std::move(lens)).run();
}

} // namespace

// ---- LSTM

Status verifyLSTM(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "direction", {"forward", "reverse", "bidirectional"}));
    SX_TRY(ops::checkIntAttr(n, "hidden_size", 1, std::numeric_limits<int32_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "input_forget", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "layout", 0, 1));
    SX_TRY(ops::checkFloatAttr(n, "clip"));
    if (n.hasAttr("clip") && !(n.attrFloat("clip", 0.0) > 0.0))
        return opError(n, "clip must be positive");
    const int64_t dirs = numDirections(n);
    if (const Attribute* a = n.attr("activations")) {
        auto* names = std::get_if<std::vector<std::string>>(a);
        if (!names)
            return opError(n, "attribute 'activations' must be a list of strings");
        const char* const dflt[3] = {"sigmoid", "tanh", "tanh"};
        bool isDefault = static_cast<int64_t>(names->size()) == 3 * dirs;
        for (size_t i = 0; isDefault && i < names->size(); ++i)
            isDefault = lower((*names)[i]) == dflt[i % 3];
        if (!isDefault) {
            std::string list;
            for (const std::string& s : *names)
                list += (list.empty() ? "" : ", ") + s;
            return opError(n, "activations [" + list + "] are not supported (only Sigmoid, Tanh, Tanh)",
                           ErrorKind::Unsupported);
        }
    }
    for (size_t i : {0u, 1u, 2u, 3u, 5u, 6u, 7u})
        if (i < n.numInputs())
            SX_TRY(ops::requireFloatInput(n, i, i == 0 ? "X" : "LSTM weights and states"));
    if (const TensorType* s = ops::inputType(n, 4); s && !isInteger(s->dtype))
        return opError(n, "sequence_lens must be an integer tensor, got " + s->str());
    const size_t ranks[8] = {3, 3, 3, 2, 1, 3, 3, 2};
    const char* names[8] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
    for (size_t i = 0; i < n.numInputs() && i < 8; ++i)
        if (const TensorType* t = ops::inputType(n, i); t && t->rank() != ranks[i])
            return opError(n, std::string(names[i]) + " must have rank " + std::to_string(ranks[i]) + ", got " +
                                  t->str());
    const Dim d = Dim::known(dirs);
    const Dim hid = hiddenDim(n);
    const Dim g4 = hid.isKnown() ? Dim::known(4 * hid.value) : ops::unknownDim();
    const TensorType* x = ops::inputType(n, 0);
    const size_t batchAxis = batchMajor(n) ? 0 : 1; // of X; the states' batch axis is the other
    const Dim batch = x ? x->shape[batchAxis] : ops::unknownDim();
    const Dim inSize = x ? x->shape[2] : ops::unknownDim();
    SX_TRY(checkDim(n, 1, 0, d, "W"));
    SX_TRY(checkDim(n, 1, 1, g4, "W"));
    SX_TRY(checkDim(n, 1, 2, inSize, "W"));
    SX_TRY(checkDim(n, 2, 0, d, "R"));
    SX_TRY(checkDim(n, 2, 1, g4, "R"));
    SX_TRY(checkDim(n, 2, 2, hid, "R"));
    SX_TRY(checkDim(n, 3, 0, d, "B"));
    SX_TRY(checkDim(n, 3, 1, hid.isKnown() ? Dim::known(8 * hid.value) : ops::unknownDim(), "B"));
    SX_TRY(checkDim(n, 4, 0, batch, "sequence_lens"));
    for (size_t i : {5u, 6u}) {
        SX_TRY(checkDim(n, i, 1 - batchAxis, d, names[i]));
        SX_TRY(checkDim(n, i, batchAxis, batch, names[i]));
        SX_TRY(checkDim(n, i, 2, hid, names[i]));
    }
    SX_TRY(checkDim(n, 7, 0, d, "P"));
    SX_TRY(checkDim(n, 7, 1, hid.isKnown() ? Dim::known(3 * hid.value) : ops::unknownDim(), "P"));
    return {};
}

Expected<std::vector<TensorType>> inferLSTM(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x || x->rank() != 3)
        return opError(n, "X must have rank 3 [seq, batch, input]");
    const Dim d = Dim::known(numDirections(n));
    const Dim hid = hiddenDim(n);
    if (batchMajor(n)) {
        TensorType y{x->dtype, {x->shape[0], x->shape[1], d, hid}};
        TensorType state{x->dtype, {x->shape[0], d, hid}};
        return std::vector<TensorType>{y, state, state};
    }
    TensorType y{x->dtype, {x->shape[0], d, x->shape[1], hid}};
    TensorType state{x->dtype, {d, x->shape[1], hid}};
    return std::vector<TensorType>{y, state, state};
}

Expected<std::vector<Tensor>> runLSTM(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_TRY(verifyLSTM(n));
    const Tensor& x = inputs[0];
    if (x.rank() != 3)
        return opError(n, "X must have rank 3 [seq, batch, input], got " + x.type().str());
    for (size_t i : {1u, 2u, 3u, 5u, 6u, 7u})
        if (i < inputs.size() && n.input(i) && inputs[i].dtype() != x.dtype())
            return opError(n, "input " + std::to_string(i) + " is " + std::string(dtypeName(inputs[i].dtype())) +
                                  " but X is " + std::string(dtypeName(x.dtype())));
    std::vector<Tensor> in(inputs.begin(), inputs.end());
    in.resize(8);
    if (!batchMajor(n))
        return ops::dispatchFloat(n, x.dtype(), [&](auto tag) { return lstmForward<decltype(tag)>(n, in); });
    // Batch-major: swap X and the initial states to time-major, run, swap the results back.
    for (size_t i : {0u, 5u, 6u})
        if (n.input(i) && in[i].valid()) {
            if (in[i].rank() != 3)
                return opError(n, "input " + std::to_string(i) + " must have rank 3, got " + in[i].type().str());
            in[i] = permuted(in[i], {1, 0, 2});
        }
    SX_ASSIGN(std::vector<Tensor> out,
              ops::dispatchFloat(n, x.dtype(), [&](auto tag) { return lstmForward<decltype(tag)>(n, in); }));
    out[0] = permuted(out[0], {2, 0, 1, 3});
    out[1] = permuted(out[1], {1, 0, 2});
    out[2] = permuted(out[2], {1, 0, 2});
    return out;
}

} // namespace sextant::ir
