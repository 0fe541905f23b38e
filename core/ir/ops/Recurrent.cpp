// The helpers RNN, GRU and LSTM share (Recurrent.h).

#include "Recurrent.h"

#include <cctype>

namespace sextant::ir::rnn {

using ops::opError;

namespace {

std::string lower(std::string s) {
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

struct ActivationName {
    const char* name; ///< lower case
    Activation::Kind kind;
    bool hasAlpha, hasBeta;
    double alpha, beta; ///< the ONNX op's defaults
};

const ActivationName kActivations[] = {
    {"relu", Activation::Kind::Relu, false, false, 0.0, 0.0},
    {"tanh", Activation::Kind::Tanh, false, false, 0.0, 0.0},
    {"sigmoid", Activation::Kind::Sigmoid, false, false, 0.0, 0.0},
    {"affine", Activation::Kind::Affine, true, true, 1.0, 0.0},
    {"leakyrelu", Activation::Kind::LeakyRelu, true, false, 0.01, 0.0},
    {"thresholdedrelu", Activation::Kind::ThresholdedRelu, true, false, 1.0, 0.0},
    {"scaledtanh", Activation::Kind::ScaledTanh, true, true, 1.0, 1.0},
    {"hardsigmoid", Activation::Kind::HardSigmoid, true, true, 0.2, 0.5},
    {"elu", Activation::Kind::Elu, true, false, 1.0, 0.0},
    {"softsign", Activation::Kind::Softsign, false, false, 0.0, 0.0},
    {"softplus", Activation::Kind::Softplus, false, false, 0.0, 0.0},
};

/// Float list attribute `name` (absent: empty).
Expected<std::vector<double>> floatList(const Node& n, const char* name) {
    const Attribute* a = n.attr(name);
    if (!a)
        return std::vector<double>{};
    if (auto* v = std::get_if<std::vector<double>>(a))
        return *v;
    if (auto* v = std::get_if<double>(a))
        return std::vector<double>{*v};
    return opError(n, std::string("attribute '") + name + "' must be a list of floats");
}

} // namespace

int64_t numDirections(const Node& n) { return n.attrString("direction", "forward") == "bidirectional" ? 2 : 1; }

bool reverseOnly(const Node& n) { return n.attrString("direction", "forward") == "reverse"; }

bool batchMajor(const Node& n) { return n.attrInt("layout", 0) == 1; }

Dim hiddenDim(const Node& n) {
    if (n.hasAttr("hidden_size"))
        return Dim::known(n.attrInt("hidden_size", 0));
    const TensorType* r = ops::inputType(n, 2);
    if (r && r->rank() == 3)
        return r->shape[2];
    return ops::unknownDim();
}

Dim timesDim(int64_t k, const Dim& d) { return d.isKnown() ? Dim::known(k * d.value) : ops::unknownDim(); }

Status checkDim(const Node& n, size_t i, size_t d, const Dim& want, const char* what) {
    const TensorType* t = ops::inputType(n, i);
    if (!t || d >= t->rank() || !want.isKnown() || !t->shape[d].isKnown())
        return {};
    if (t->shape[d].value != want.value)
        return opError(n, std::string(what) + " has shape " + t->str() + ", dim " + std::to_string(d) +
                              " should be " + std::to_string(want.value));
    return {};
}

Status checkShape(const Node& n, std::span<const Tensor> in, size_t i, const std::vector<int64_t>& want,
                  const char* what) {
    if (!n.input(i) || i >= in.size())
        return {};
    if (in[i].shape() != want)
        return opError(n, std::string(what) + " has shape " + in[i].type().str() + ", expected " +
                              TensorType::of(in[i].dtype(), want).str());
    return {};
}

Status verifyCommonAttrs(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "direction", {"forward", "reverse", "bidirectional"}));
    SX_TRY(ops::checkIntAttr(n, "hidden_size", 1, std::numeric_limits<int32_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "layout", 0, 1));
    SX_TRY(ops::checkFloatAttr(n, "clip"));
    if (n.hasAttr("clip") && !(n.attrFloat("clip", 0.0) > 0.0))
        return opError(n, "clip must be positive");
    return {};
}

Status verifyInputTypes(const Node& n, std::span<const size_t> floats, std::span<const size_t> ranks,
                        std::span<const char* const> names) {
    for (size_t i : floats)
        if (i < n.numInputs())
            SX_TRY(ops::requireFloatInput(n, i, i == 0 ? "X" : names[i]));
    if (const TensorType* s = ops::inputType(n, 4); s && !isInteger(s->dtype))
        return opError(n, "sequence_lens must be an integer tensor, got " + s->str());
    for (size_t i = 0; i < n.numInputs() && i < ranks.size(); ++i)
        if (const TensorType* t = ops::inputType(n, i); t && t->rank() != ranks[i])
            return opError(n, std::string(names[i]) + " must have rank " + std::to_string(ranks[i]) + ", got " +
                                  t->str());
    return {};
}

Status verifyCommonShapes(const Node& n, int64_t gates, std::span<const size_t> stateInputs,
                          std::span<const char* const> names) {
    const Dim d = Dim::known(numDirections(n));
    const Dim hid = hiddenDim(n);
    const Dim g = timesDim(gates, hid);
    const TensorType* x = ops::inputType(n, 0);
    const size_t batchAxis = batchMajor(n) ? 0 : 1; // of X; the states' batch axis is the other
    const Dim batch = x && x->rank() == 3 ? x->shape[batchAxis] : ops::unknownDim();
    const Dim inSize = x && x->rank() == 3 ? x->shape[2] : ops::unknownDim();
    SX_TRY(checkDim(n, 1, 0, d, "W"));
    SX_TRY(checkDim(n, 1, 1, g, "W"));
    SX_TRY(checkDim(n, 1, 2, inSize, "W"));
    SX_TRY(checkDim(n, 2, 0, d, "R"));
    SX_TRY(checkDim(n, 2, 1, g, "R"));
    SX_TRY(checkDim(n, 2, 2, hid, "R"));
    SX_TRY(checkDim(n, 3, 0, d, "B"));
    SX_TRY(checkDim(n, 3, 1, timesDim(2 * gates, hid), "B"));
    SX_TRY(checkDim(n, 4, 0, batch, "sequence_lens"));
    for (size_t i : stateInputs) {
        SX_TRY(checkDim(n, i, 1 - batchAxis, d, names[i]));
        SX_TRY(checkDim(n, i, batchAxis, batch, names[i]));
        SX_TRY(checkDim(n, i, 2, hid, names[i]));
    }
    return {};
}

Expected<std::vector<TensorType>> inferOutputs(const Node& n, int states) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x || x->rank() != 3)
        return opError(n, "X must have rank 3 [seq, batch, input]");
    const Dim d = Dim::known(numDirections(n));
    const Dim hid = hiddenDim(n);
    std::vector<TensorType> out;
    if (batchMajor(n)) {
        out.push_back(TensorType{x->dtype, {x->shape[0], x->shape[1], d, hid}});
        out.insert(out.end(), static_cast<size_t>(states), TensorType{x->dtype, {x->shape[0], d, hid}});
    } else {
        out.push_back(TensorType{x->dtype, {x->shape[0], d, x->shape[1], hid}});
        out.insert(out.end(), static_cast<size_t>(states), TensorType{x->dtype, {d, x->shape[1], hid}});
    }
    return out;
}

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

Sizes sizesOf(const Node& n, std::span<const Tensor> in) {
    const Tensor& x = in[0];
    Sizes s;
    s.seq = x.shape()[0];
    s.batch = x.shape()[1];
    s.inSize = x.shape()[2];
    s.dirs = numDirections(n);
    s.hidden = n.hasAttr("hidden_size") ? n.attrInt("hidden_size", 0) : in[2].shape()[2];
    return s;
}

Expected<std::vector<int64_t>> sequenceLengths(const Node& n, std::span<const Tensor> in, const Sizes& s) {
    const int64_t seq = s.seq, batch = s.batch;
    std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
    if (n.input(4))
        for (int64_t b = 0; b < batch; ++b) {
            const double l = in[4].at(b);
            if (l < 0 || l > static_cast<double>(seq))
                return opError(n, "sequence_lens[" + std::to_string(b) + "] = " +
                                      std::to_string(static_cast<int64_t>(l)) + " is outside 0.." +
                                      std::to_string(seq));
            lens[static_cast<size_t>(b)] = static_cast<int64_t>(l);
        }
    return lens;
}

Expected<std::vector<Tensor>> runInLayout(
    const Node& n, std::span<const Tensor> inputs, size_t numInputs, std::span<const size_t> floats,
    std::span<const size_t> stateInputs,
    const std::function<Expected<std::vector<Tensor>>(std::span<const Tensor>)>& forward) {
    const Tensor& x = inputs[0];
    if (x.rank() != 3)
        return opError(n, "X must have rank 3 [seq, batch, input], got " + x.type().str());
    for (size_t i : floats)
        if (i > 0 && i < inputs.size() && n.input(i) && inputs[i].dtype() != x.dtype())
            return opError(n, "input " + std::to_string(i) + " is " + std::string(dtypeName(inputs[i].dtype())) +
                                  " but X is " + std::string(dtypeName(x.dtype())));
    std::vector<Tensor> in(inputs.begin(), inputs.end());
    in.resize(numInputs);
    if (!batchMajor(n))
        return forward(in);
    // Batch-major: swap X and the initial states to time-major, run, swap the results back.
    std::vector<size_t> swapped{0};
    swapped.insert(swapped.end(), stateInputs.begin(), stateInputs.end());
    for (size_t i : swapped)
        if (n.input(i) && in[i].valid()) {
            if (in[i].rank() != 3)
                return opError(n, "input " + std::to_string(i) + " must have rank 3, got " + in[i].type().str());
            in[i] = permuted(in[i], {1, 0, 2});
        }
    SX_ASSIGN(std::vector<Tensor> out, forward(in));
    out[0] = permuted(out[0], {2, 0, 1, 3});
    for (size_t k = 1; k < out.size(); ++k)
        out[k] = permuted(out[k], {1, 0, 2});
    return out;
}

Expected<std::vector<Activation>> readActivations(const Node& n, int perDirection,
                                                  std::span<const char* const> defaults) {
    const int64_t dirs = numDirections(n);
    std::vector<std::string> names;
    if (const Attribute* a = n.attr("activations")) {
        auto* list = std::get_if<std::vector<std::string>>(a);
        if (!list)
            return opError(n, "attribute 'activations' must be a list of strings");
        if (static_cast<int64_t>(list->size()) != perDirection * dirs)
            return opError(n, "activations has " + std::to_string(list->size()) + " names, expected " +
                                  std::to_string(perDirection * dirs) + " (" + std::to_string(perDirection) +
                                  " per direction)");
        names = *list;
    } else {
        for (int64_t d = 0; d < dirs; ++d)
            names.insert(names.end(), defaults.begin(), defaults.end());
    }
    SX_ASSIGN(std::vector<double> alphas, floatList(n, "activation_alpha"));
    SX_ASSIGN(std::vector<double> betas, floatList(n, "activation_beta"));
    size_t nextAlpha = 0, nextBeta = 0;
    std::vector<Activation> acts;
    for (const std::string& name : names) {
        const std::string key = lower(name);
        const ActivationName* found = nullptr;
        for (const ActivationName& c : kActivations)
            if (key == c.name)
                found = &c;
        if (!found)
            return opError(n, "activation '" + name + "' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                                                      "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
                           ErrorKind::Unsupported);
        Activation act{found->kind, found->alpha, found->beta};
        if (found->hasAlpha && nextAlpha < alphas.size())
            act.alpha = alphas[nextAlpha++];
        if (found->hasBeta && nextBeta < betas.size())
            act.beta = betas[nextBeta++];
        acts.push_back(act);
    }
    if (nextAlpha < alphas.size() || nextBeta < betas.size())
        return opError(n, "activation_alpha has " + std::to_string(alphas.size()) + " and activation_beta " +
                              std::to_string(betas.size()) + " values, but the activations take " +
                              std::to_string(nextAlpha) + " and " + std::to_string(nextBeta));
    return acts;
}

} // namespace sextant::ir::rnn
