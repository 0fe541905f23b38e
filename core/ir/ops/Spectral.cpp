// DFT (ONNX opsets 17 and 20) and STFT (opset 17), float64/float32 reference kernels on the host.
// A complex tensor is a real one with a trailing dim of 2 (real, imaginary); a trailing dim of 1
// is a real signal. Both ops compute the plain O(n^2) sum in double,
//   y[k] = sum_n x[n] e^(-2 pi i k n / N)     (inverse: e^(+2 pi i k n / N), divided by N)
// with the angle reduced exactly (k n mod N) before the division.
//
// DFT(input [..., 1 or 2][, dft_length][, axis]) -> [..., 2]: along one signal axis, truncated or
//   zero-padded to dft_length (default: the axis' length). Opset 17 has axis as an attribute
//   (default 1), opset 20 as input 2 (a scalar, default -2); either counts the trailing complex
//   dim in the rank, so [-r, -2] and [0, r - 2] are the valid values. The importer records the
//   model's opset as "_opset"; a node without it (made by hand) takes whichever form it has, with
//   the attribute's default. onesided 1 keeps bins 0 .. N / 2 of the forward transform of a real
//   signal; with complex input or with inverse 1 it is refused (ONNX 1.12's reference and later
//   specifications disagree on what it means there).
// STFT(signal [batch, length, 1 or 2], frame_step[, window][, frame_length]) ->
//   [batch, frames, bins, 2]: frames = (length - frame_length) / frame_step + 1 frames, frame f
//   starting at f * frame_step, each multiplied by the window (when given) and transformed;
//   frame_length defaults to the window's length; bins = frame_length / 2 + 1 with onesided 1
//   (the default; real signals only), frame_length with 0.

#include "OpUtil.h"

#include "core/ir/Interpreter.h"

#include <cmath>
#include <numbers>

namespace sextant::ir {

using ops::opError;
using ops::Shape;

namespace {

/// The first `bins` bins of the N = `length` point DFT (or inverse) of the signal re + i im, which
/// is truncated to N values or zero-padded to them; out holds them as 2 * bins doubles (re, im).
void transform(const std::vector<double>& re, const std::vector<double>& im, int64_t length, int64_t bins,
               bool inverse, std::vector<double>& out) {
    const int64_t count = std::min<int64_t>(static_cast<int64_t>(re.size()), length);
    const double sign = inverse ? 1.0 : -1.0;
    out.assign(static_cast<size_t>(2 * bins), 0.0);
    for (int64_t k = 0; k < bins; ++k) {
        double sr = 0, si = 0;
        for (int64_t t = 0; t < count; ++t) {
            const double angle = sign * 2 * std::numbers::pi * static_cast<double>((k * t) % length) /
                                 static_cast<double>(length);
            const double c = std::cos(angle), s = std::sin(angle);
            sr += re[static_cast<size_t>(t)] * c - im[static_cast<size_t>(t)] * s;
            si += re[static_cast<size_t>(t)] * s + im[static_cast<size_t>(t)] * c;
        }
        if (inverse) {
            sr /= static_cast<double>(length);
            si /= static_cast<double>(length);
        }
        out[static_cast<size_t>(2 * k)] = sr;
        out[static_cast<size_t>(2 * k + 1)] = si;
    }
}

/// The single integer of a scalar (or one-element) integer tensor.
Expected<int64_t> scalarInt(const Node& n, const Tensor& t, const char* what) {
    if (!isInteger(t.dtype()) || t.numel() != 1)
        return opError(n, std::string(what) + " must be one integer, got " + t.type().str());
    return static_cast<int64_t>(t.at(0));
}

Status requireIntScalar(const Node& n, size_t i, const char* what) {
    const TensorType* t = ops::inputType(n, i);
    if (!t)
        return {};
    if (t->dtype != DType::I64 && t->dtype != DType::I32)
        return opError(n, std::string(what) + " must be an i64 or i32 scalar, got " + t->str());
    if (t->rank() > 1 || (t->rank() == 1 && t->shape[0].isKnown() && t->shape[0].value != 1))
        return opError(n, std::string(what) + " must hold one value, got " + t->str());
    return {};
}

/// Checks a signal's trailing complex dim.
Status checkComplexDim(const Node& n, const Shape& x, const char* what) {
    if (!x.empty() && x.back().isKnown() && x.back().value != 1 && x.back().value != 2)
        return opError(n, std::string(what) + "'s last dim must be 1 (real) or 2 (complex), got " + ops::shapeStr(x));
    return {};
}

// ---- DFT

/// Whether the node takes axis as input 2 (opset 20) rather than as an attribute (17).
bool axisIsInput(const Node& n) {
    const int64_t opset = n.attrInt("_opset", 0);
    return opset >= 20 || (opset == 0 && !n.hasAttr("axis"));
}

/// The DFT axis normalised into [0, rank - 2]; `given` is input 2's value when it has one.
Expected<int64_t> dftAxis(const Node& n, int64_t rank, std::optional<int64_t> given) {
    const bool input = axisIsInput(n);
    const int64_t axis = input ? given.value_or(-2) : n.attrInt("axis", 1);
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a > rank - 2)
        return opError(n, "dft axis " + std::to_string(axis) + " is outside [-" + std::to_string(rank) + ", -2] and [0, " +
                              std::to_string(rank - 2) + "] for an input of rank " + std::to_string(rank) +
                              " (the last dim holds the complex parts)");
    return a;
}

Status checkOnesided(const Node& n, int64_t parts, const char* what) {
    if (n.attrInt("onesided", 0) == 0)
        return {};
    if (n.attrInt("inverse", 0) != 0)
        return opError(n, std::string(what) + " with onesided 1 and inverse 1 is not supported", ErrorKind::Unsupported);
    if (parts == 2)
        return opError(n, std::string(what) + " with onesided 1 needs a real signal (last dim 1), got a complex one");
    return {};
}

} // namespace

Status verifyDFT(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "inverse", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "onesided", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "_opset", 1, 1000));
    SX_TRY(ops::checkIntAttr(n, "axis", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
    const int64_t opset = n.attrInt("_opset", 0);
    if (opset >= 20 && n.hasAttr("axis"))
        return opError(n, "dft takes axis as input 2 from opset 20 on, not as an attribute (opset " +
                              std::to_string(opset) + ")");
    if (!axisIsInput(n) && n.input(2))
        return opError(n, "dft at opset 17 takes axis as an attribute; it has no input 2");
    SX_TRY(ops::requireFloatInput(n, 0, "dft input"));
    SX_TRY(requireIntScalar(n, 1, "dft dft_length"));
    return requireIntScalar(n, 2, "dft axis");
}

Expected<std::vector<TensorType>> inferDFT(const Node& n) {
    SX_TRY(verifyDFT(n));
    const TensorType& x = *ops::inputType(n, 0);
    if (x.rank() < 2)
        return opError(n, "dft input must be [..., signal, 1 or 2], got " + x.str());
    SX_TRY(checkComplexDim(n, x.shape, "dft input"));
    std::optional<int64_t> axisValue;
    bool axisKnown = true;
    if (n.input(2)) {
        std::optional<Tensor> a = knownValue(n.input(2));
        axisKnown = a.has_value();
        if (a) {
            SX_ASSIGN(int64_t v, scalarInt(n, *a, "dft axis"));
            axisValue = v;
        }
    }
    const int64_t rank = static_cast<int64_t>(x.rank());
    TensorType y = x;
    y.shape.back() = Dim::known(2);
    if (!axisKnown) { // the transformed axis is not known: neither is any signal dim's length
        for (int64_t d = 0; d + 1 < rank; ++d)
            y.shape[static_cast<size_t>(d)] = d == 0 ? x.shape[0] : ops::unknownDim();
        return std::vector<TensorType>{y};
    }
    SX_ASSIGN(int64_t axis, dftAxis(n, rank, axisValue));
    if (x.shape.back().isKnown())
        SX_TRY(checkOnesided(n, x.shape.back().value, "dft"));
    Dim length = x.shape[static_cast<size_t>(axis)];
    if (n.input(1)) {
        length = ops::unknownDim();
        if (std::optional<Tensor> l = knownValue(n.input(1))) {
            SX_ASSIGN(int64_t v, scalarInt(n, *l, "dft dft_length"));
            if (v < 1)
                return opError(n, "dft dft_length must be >= 1, got " + std::to_string(v));
            length = Dim::known(v);
        }
    }
    if (length.isKnown() && n.attrInt("onesided", 0) != 0)
        length = Dim::known(length.value / 2 + 1);
    else if (n.attrInt("onesided", 0) != 0)
        length = ops::unknownDim();
    y.shape[static_cast<size_t>(axis)] = length;
    return std::vector<TensorType>{y};
}

Expected<std::vector<Tensor>> runDFT(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const int64_t rank = static_cast<int64_t>(x.rank());
    if (rank < 2 || (x.shape().back() != 1 && x.shape().back() != 2))
        return opError(n, "dft input must be [..., signal, 1 or 2], got " + x.type().str());
    std::optional<int64_t> axisValue;
    if (inputs.size() > 2 && n.input(2)) {
        SX_ASSIGN(int64_t v, scalarInt(n, inputs[2], "dft axis"));
        axisValue = v;
    }
    SX_ASSIGN(int64_t axis, dftAxis(n, rank, axisValue));
    const int64_t parts = x.shape().back();
    SX_TRY(checkOnesided(n, parts, "dft"));
    const int64_t in = x.shape()[static_cast<size_t>(axis)];
    int64_t length = in;
    if (inputs.size() > 1 && n.input(1)) {
        SX_ASSIGN(length, scalarInt(n, inputs[1], "dft dft_length"));
        if (length < 1)
            return opError(n, "dft dft_length must be >= 1, got " + std::to_string(length));
    }
    const bool inverse = n.attrInt("inverse", 0) != 0;
    const int64_t bins = n.attrInt("onesided", 0) != 0 ? length / 2 + 1 : length;
    std::vector<int64_t> dims = x.shape();
    dims[static_cast<size_t>(axis)] = bins;
    dims.back() = 2;
    SX_TRY(ops::checkAllocation(n, dims));
    Tensor y(x.dtype(), dims);
    // Elements along the axis are `inner` complex values apart; outer x inner independent signals.
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= x.shape()[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d + 1 < rank; ++d)
        inner *= x.shape()[static_cast<size_t>(d)];
    const int64_t count = std::min(in, length);
    std::vector<double> re(static_cast<size_t>(count)), im(static_cast<size_t>(count)), out;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            for (int64_t t = 0; t < count; ++t) {
                const int64_t at = ((o * in + t) * inner + i) * parts;
                re[static_cast<size_t>(t)] = x.at(at);
                im[static_cast<size_t>(t)] = parts == 2 ? x.at(at + 1) : 0.0;
            }
            transform(re, im, length, bins, inverse, out);
            for (int64_t k = 0; k < bins; ++k) {
                const int64_t at = ((o * bins + k) * inner + i) * 2;
                y.set(at, out[static_cast<size_t>(2 * k)]);
                y.set(at + 1, out[static_cast<size_t>(2 * k + 1)]);
            }
        }
    return std::vector<Tensor>{std::move(y)};
}

// ---- STFT

namespace {

/// frame_length from input 3 or, without it, the window's length; checked against each other.
Expected<int64_t> frameLength(const Node& n, const Tensor* window, const Tensor* lengthInput) {
    if (!window && !lengthInput)
        return opError(n, "stft needs a window or a frame_length");
    int64_t length = window ? window->numel() : 0;
    if (lengthInput) {
        SX_ASSIGN(length, scalarInt(n, *lengthInput, "stft frame_length"));
        if (window && window->numel() != length)
            return opError(n, "stft window has " + std::to_string(window->numel()) + " entries, frame_length is " +
                                  std::to_string(length));
    }
    if (length < 1)
        return opError(n, "stft frame_length must be >= 1, got " + std::to_string(length));
    return length;
}

} // namespace

Status verifySTFT(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "onesided", 0, 1));
    SX_TRY(ops::requireFloatInput(n, 0, "stft signal"));
    SX_TRY(requireIntScalar(n, 1, "stft frame_step"));
    if (!ops::inputType(n, 1))
        return opError(n, "stft needs frame_step (input 1)");
    SX_TRY(ops::requireFloatInput(n, 2, "stft window"));
    if (const TensorType* w = ops::inputType(n, 2); w && w->rank() != 1)
        return opError(n, "stft window must be 1-D, got " + w->str());
    SX_TRY(requireIntScalar(n, 3, "stft frame_length"));
    if (!ops::inputType(n, 2) && !ops::inputType(n, 3))
        return opError(n, "stft needs a window or a frame_length");
    return {};
}

Expected<std::vector<TensorType>> inferSTFT(const Node& n) {
    SX_TRY(verifySTFT(n));
    const TensorType& x = *ops::inputType(n, 0);
    if (x.rank() != 3)
        return opError(n, "stft signal must be [batch, length, 1 or 2], got " + x.str());
    SX_TRY(checkComplexDim(n, x.shape, "stft signal"));
    const bool onesided = n.attrInt("onesided", 1) != 0;
    if (onesided && x.shape[2].isKnown() && x.shape[2].value == 2)
        return opError(n, "stft with onesided 1 needs a real signal (last dim 1), got a complex one");
    Shape out{x.shape[0], ops::unknownDim(), ops::unknownDim(), Dim::known(2)};
    std::optional<int64_t> length;
    if (const TensorType* w = ops::inputType(n, 2); w && w->shape[0].isKnown())
        length = w->shape[0].value;
    if (n.input(3)) {
        length.reset();
        if (std::optional<Tensor> l = knownValue(n.input(3))) {
            SX_ASSIGN(int64_t v, scalarInt(n, *l, "stft frame_length"));
            length = v;
        }
    }
    std::optional<Tensor> step = knownValue(n.input(1));
    if (length && *length >= 1) {
        out[2] = Dim::known(onesided ? *length / 2 + 1 : *length);
        if (step && x.shape[1].isKnown()) {
            SX_ASSIGN(int64_t s, scalarInt(n, *step, "stft frame_step"));
            if (s < 1)
                return opError(n, "stft frame_step must be >= 1, got " + std::to_string(s));
            if (x.shape[1].value < *length)
                return opError(n, "stft frame_length " + std::to_string(*length) + " exceeds the signal's length " +
                                      std::to_string(x.shape[1].value));
            out[1] = Dim::known((x.shape[1].value - *length) / s + 1);
        }
    }
    return std::vector<TensorType>{TensorType{x.dtype, out}};
}

Expected<std::vector<Tensor>> runSTFT(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() != 3 || (x.shape()[2] != 1 && x.shape()[2] != 2))
        return opError(n, "stft signal must be [batch, length, 1 or 2], got " + x.type().str());
    const int64_t parts = x.shape()[2];
    const bool onesided = n.attrInt("onesided", 1) != 0;
    if (onesided && parts == 2)
        return opError(n, "stft with onesided 1 needs a real signal (last dim 1), got a complex one");
    SX_ASSIGN(int64_t step, scalarInt(n, inputs[1], "stft frame_step"));
    if (step < 1)
        return opError(n, "stft frame_step must be >= 1, got " + std::to_string(step));
    const Tensor* window = inputs.size() > 2 && n.input(2) ? &inputs[2] : nullptr;
    const Tensor* lengthInput = inputs.size() > 3 && n.input(3) ? &inputs[3] : nullptr;
    SX_ASSIGN(int64_t length, frameLength(n, window, lengthInput));
    const int64_t batch = x.shape()[0], signal = x.shape()[1];
    if (signal < length)
        return opError(n, "stft frame_length " + std::to_string(length) + " exceeds the signal's length " +
                              std::to_string(signal));
    const int64_t frames = (signal - length) / step + 1, bins = onesided ? length / 2 + 1 : length;
    const std::vector<int64_t> dims{batch, frames, bins, 2};
    SX_TRY(ops::checkAllocation(n, dims));
    Tensor y(x.dtype(), dims);
    std::vector<double> re(static_cast<size_t>(length)), im(static_cast<size_t>(length)), out;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t f = 0; f < frames; ++f) {
            for (int64_t t = 0; t < length; ++t) {
                const int64_t at = (b * signal + f * step + t) * parts;
                const double w = window ? window->at(t) : 1.0;
                re[static_cast<size_t>(t)] = x.at(at) * w;
                im[static_cast<size_t>(t)] = parts == 2 ? x.at(at + 1) * w : 0.0;
            }
            transform(re, im, length, bins, false, out);
            for (int64_t k = 0; k < 2 * bins; ++k)
                y.set((b * frames + f) * bins * 2 + k, out[static_cast<size_t>(k)]);
        }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
