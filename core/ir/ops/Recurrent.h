#pragma once

// What the recurrent ops (RNN, GRU, LSTM in ops/Rnn.cpp and ops/Lstm.cpp) share: their direction,
// hidden size and layout attributes, shape checks, the batch-major transposes, sequence lengths
// and the ONNX recurrent activation functions. Internal to sextant_ir.

#include "OpUtil.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace sextant::ir::rnn {

/// 2 for direction = "bidirectional", else 1.
int64_t numDirections(const Node& n);
/// direction = "reverse" (bidirectional runs direction 1 reversed as well).
bool reverseOnly(const Node& n);
/// Batch-major layout (layout = 1, opset 14+).
bool batchMajor(const Node& n);
/// The hidden size: the attribute, else R's last dim.
Dim hiddenDim(const Node& n);
/// `k * d` when `d` is known, else an unknown dim.
Dim timesDim(int64_t k, const Dim& d);

/// Checks a known dim of input `i` against an expected extent (when both are known).
Status checkDim(const Node& n, size_t i, size_t d, const Dim& want, const char* what);
/// Checks that input `i`, when given, has exactly the shape `want`.
Status checkShape(const Node& n, std::span<const Tensor> in, size_t i, const std::vector<int64_t>& want,
                  const char* what);

/// The attributes every recurrent op has: direction, hidden_size, layout, clip (positive).
Status verifyCommonAttrs(const Node& n);
/// The type checks every recurrent op shares: `floats` are the float inputs (X, weights, states),
/// input 4 (sequence_lens) is an integer tensor, and each input given has the rank in `ranks`.
Status verifyInputTypes(const Node& n, std::span<const size_t> floats, std::span<const size_t> ranks,
                        std::span<const char* const> names);
/// Checks X, W, R, B, sequence_lens and the initial states `stateInputs` against each other
/// (`gates` blocks of hidden size in W, R and B; both layouts).
Status verifyCommonShapes(const Node& n, int64_t gates, std::span<const size_t> stateInputs,
                          std::span<const char* const> names);
/// Output types: Y, then `states` final states (Y_h, and Y_c for LSTM) in the node's layout.
Expected<std::vector<TensorType>> inferOutputs(const Node& n, int states);

/// `t` with its dims permuted: result dim i is input dim perm[i].
Tensor permuted(const Tensor& t, const std::vector<size_t>& perm);

/// The extents one evaluation runs over (time-major).
struct Sizes {
    int64_t seq, batch, inSize, dirs, hidden;
};
Sizes sizesOf(const Node& n, std::span<const Tensor> in);

/// Each batch entry's sequence length: sequence_lens (each in 0..seq) when given, else seq.
Expected<std::vector<int64_t>> sequenceLengths(const Node& n, std::span<const Tensor> in, const Sizes& s);

/// Runs a recurrent op's time-major kernel `forward(inputs)` in the node's layout: checks the
/// dtypes of the float inputs `floats` against X's, and for layout 1 transposes X and the initial
/// states `stateInputs` to time-major before and Y and the final states back after.
Expected<std::vector<Tensor>> runInLayout(
    const Node& n, std::span<const Tensor> inputs, size_t numInputs, std::span<const size_t> floats,
    std::span<const size_t> stateInputs,
    const std::function<Expected<std::vector<Tensor>>(std::span<const Tensor>)>& forward);

template <typename T> T sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }

/// One of the activation functions ONNX's RNN, GRU and LSTM take (attribute "activations"), with
/// its alpha and beta.
struct Activation {
    enum class Kind {
        Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus
    };
    Kind kind = Kind::Tanh;
    double alpha = 0.0, beta = 0.0;

    template <typename T> T operator()(T x) const {
        const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
        switch (kind) {
        case Kind::Relu: return x > T(0) ? x : T(0);
        case Kind::Tanh: return std::tanh(x);
        case Kind::Sigmoid: return sigmoid(x);
        case Kind::Affine: return a * x + b;
        case Kind::LeakyRelu: return x >= T(0) ? x : a * x;
        case Kind::ThresholdedRelu: return x >= a ? x : T(0);
        case Kind::ScaledTanh: return a * std::tanh(b * x);
        case Kind::HardSigmoid: return std::min(std::max(a * x + b, T(0)), T(1));
        case Kind::Elu: return x >= T(0) ? x : a * (std::exp(x) - T(1));
        case Kind::Softsign: return x / (T(1) + std::abs(x));
        case Kind::Softplus: return std::log1p(std::exp(x));
        }
        return x;
    }
};

/// The node's activations, `perDirection` for each direction (RNN 1, GRU 2, LSTM 3), in
/// direction order; `defaults` names those of one direction (used when the attribute is absent;
/// when given, it must hold perDirection x directions names). activation_alpha and activation_beta are consumed in
/// list order by the activations that take the parameter (alpha: Affine, LeakyRelu,
/// ThresholdedRelu, ScaledTanh, HardSigmoid, Elu; beta: Affine, ScaledTanh, HardSigmoid); the
/// ones the lists run out before get the defaults of the ONNX op of that name (LeakyRelu 0.01,
/// HardSigmoid 0.2 and 0.5, ThresholdedRelu, Elu, Affine and ScaledTanh alpha 1, Affine beta 0,
/// ScaledTanh beta 1). Names are matched ignoring case; an unknown name is an error naming it.
Expected<std::vector<Activation>> readActivations(const Node& n, int perDirection,
                                                  std::span<const char* const> defaults);

} // namespace sextant::ir::rnn
