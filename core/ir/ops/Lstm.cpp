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

template <typename T>
Expected<std::vector<Tensor>> lstmForward(const Node& n, std::span<const Tensor> in) {
    const Tensor& x = in[0];
    const int64_t seq = x.shape()[0], batch = x.shape()[1], inSize = x.shape()[2];
    const int64_t dirs = numDirections(n);
    const int64_t hidden = n.hasAttr("hidden_size") ? n.attrInt("hidden_size", 0) : in[2].shape()[2];
    const int64_t g4 = 4 * hidden;
    auto expectShape = [&](size_t i, std::vector<int64_t> want, const char* what) -> Status {
        if (!n.input(i))
            return {};
        if (in[i].shape() != want)
            return opError(n, std::string(what) + " has shape " + in[i].type().str() + ", expected " +
                                  TensorType::of(in[i].dtype(), want).str());
        return {};
    };
    SX_TRY(expectShape(1, {dirs, g4, inSize}, "W"));
    SX_TRY(expectShape(2, {dirs, g4, hidden}, "R"));
    SX_TRY(expectShape(3, {dirs, 2 * g4}, "B"));
    SX_TRY(expectShape(4, {batch}, "sequence_lens"));
    SX_TRY(expectShape(5, {dirs, batch, hidden}, "initial_h"));
    SX_TRY(expectShape(6, {dirs, batch, hidden}, "initial_c"));
    SX_TRY(expectShape(7, {dirs, 3 * hidden}, "P"));
    SX_TRY(ops::checkAllocation(n, {seq, dirs, batch, hidden}));
    SX_TRY(ops::checkAllocation(n, {seq, batch, g4}));

    std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
    if (n.input(4))
        for (int64_t b = 0; b < batch; ++b) {
            const double l = in[4].at(b);
            if (l < 0 || l > static_cast<double>(seq))
                return opError(n, "sequence_lens[" + std::to_string(b) + "] = " + std::to_string(static_cast<int64_t>(l)) +
                                      " is outside 0.." + std::to_string(seq));
            lens[static_cast<size_t>(b)] = static_cast<int64_t>(l);
        }
    const std::string direction = n.attrString("direction", "forward");
    const bool inputForget = n.attrInt("input_forget", 0) != 0;
    const bool clipped = n.hasAttr("clip");
    const T clip = static_cast<T>(n.attrFloat("clip", 0.0));
    auto act = [&](T v) { return clipped ? std::clamp(v, -clip, clip) : v; };

    Tensor y(dtypeOf<T>(), {seq, dirs, batch, hidden});
    Tensor yh(dtypeOf<T>(), {dirs, batch, hidden});
    Tensor yc(dtypeOf<T>(), {dirs, batch, hidden});
    const T* xd = x.data<T>();
    std::vector<T> xw(static_cast<size_t>(seq * batch * g4));
    std::vector<T> gates(static_cast<size_t>(batch * g4));
    std::vector<T> h(static_cast<size_t>(batch * hidden)), c(h.size());
    std::vector<T> bias(static_cast<size_t>(g4));
    for (int64_t d = 0; d < dirs; ++d) {
        const bool reverse = direction == "reverse" || d == 1;
        const T* w = in[1].data<T>() + d * g4 * inSize;
        const T* r = in[2].data<T>() + d * g4 * hidden;
        for (int64_t j = 0; j < g4; ++j)
            bias[static_cast<size_t>(j)] =
                n.input(3) ? in[3].data<T>()[d * 2 * g4 + j] + in[3].data<T>()[d * 2 * g4 + g4 + j] : T(0);
        const T* p = n.input(7) ? in[7].data<T>() + d * 3 * hidden : nullptr;
        for (size_t k = 0; k < h.size(); ++k) {
            h[k] = n.input(5) ? in[5].data<T>()[d * batch * hidden + static_cast<int64_t>(k)] : T(0);
            c[k] = n.input(6) ? in[6].data<T>()[d * batch * hidden + static_cast<int64_t>(k)] : T(0);
        }
        // Input projections of every step at once: [seq*batch, in] x W^T -> [seq*batch, 4H].
        if (seq * batch > 0)
            ops::gemm(false, true, seq * batch, g4, inSize, T(1), xd, inSize, w, inSize, T(0), xw.data(), g4);
        for (int64_t step = 0; step < seq; ++step) {
            for (int64_t b = 0; b < batch; ++b) {
                const int64_t len = lens[static_cast<size_t>(b)];
                const int64_t t = reverse ? len - 1 - step : step;
                T* g = gates.data() + b * g4;
                if (step >= len) {
                    std::fill(g, g + g4, T(0));
                    continue;
                }
                const T* src = xw.data() + (t * batch + b) * g4;
                for (int64_t j = 0; j < g4; ++j)
                    g[j] = src[j] + bias[static_cast<size_t>(j)];
            }
            if (batch > 0)
                ops::gemm(false, true, batch, g4, hidden, T(1), h.data(), hidden, r, hidden, T(1), gates.data(), g4);
            for (int64_t b = 0; b < batch; ++b) {
                const int64_t len = lens[static_cast<size_t>(b)];
                if (step >= len)
                    continue;
                const int64_t t = reverse ? len - 1 - step : step;
                const T* g = gates.data() + b * g4;
                T* hb = h.data() + b * hidden;
                T* cb = c.data() + b * hidden;
                T* yrow = y.mutableData<T>() + ((t * dirs + d) * batch + b) * hidden;
                for (int64_t j = 0; j < hidden; ++j) {
                    const T cPrev = cb[j];
                    const T it = sigmoid(act(g[j] + (p ? p[j] * cPrev : T(0))));
                    const T ft = inputForget ? T(1) - it
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
        std::copy(h.begin(), h.end(), yh.mutableData<T>() + d * batch * hidden);
        std::copy(c.begin(), c.end(), yc.mutableData<T>() + d * batch * hidden);
    }
    return std::vector<Tensor>{std::move(y), std::move(yh), std::move(yc)};
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
