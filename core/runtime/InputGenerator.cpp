#include "InputGenerator.h"

#include <string>

namespace sextant::runtime {

namespace {

/// xorshift64*: small, fast and identical on every platform.
class Stream {
public:
    explicit Stream(uint64_t seed) : m_s(seed ? seed : 0x9e3779b97f4a7c15ull) {}
    uint64_t next() {
        m_s ^= m_s >> 12;
        m_s ^= m_s << 25;
        m_s ^= m_s >> 27;
        return m_s * 0x2545f4914f6cdd1dull;
    }
    /// Uniform in [0, 1) with 53 random bits.
    double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

private:
    uint64_t m_s;
};

} // namespace

Expected<std::vector<ir::Tensor>> generateInputs(const ir::Graph& graph, uint64_t seed) {
    std::vector<ir::Tensor> out;
    const auto& inputs = graph.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
        const ir::TensorType& type = inputs[i]->type();
        if (!type.isStatic())
            return makeError(ErrorKind::Unsupported,
                             "input '" + inputs[i]->name() + "' has a non-static shape " +
                                 type.str() + "; give its values with --inputs",
                             inputs[i]->name());
        Stream rng(seed * 0x100000001b3ull + i + 1);
        ir::Tensor t(type.dtype, type.dims());
        for (int64_t k = 0; k < t.numel(); ++k) {
            if (ir::isFloat(type.dtype))
                t.set(k, rng.unit() * 2.0 - 1.0);
            else if (type.dtype == ir::DType::Bool)
                t.set(k, static_cast<double>(k % 2));
            else
                t.set(k, static_cast<double>(rng.next() % 10));
        }
        out.push_back(std::move(t));
    }
    return out;
}

} // namespace sextant::runtime
