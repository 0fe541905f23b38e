#include "ReferenceExecutor.h"
#include "core/ir/DimsText.h"

#include "core/ir/Interpreter.h"

namespace sextant::runtime {

namespace {

/// Checks one input against its declared type; `bindings` collects symbolic dim extents.
Status checkInput(const ir::Value& declared, const ir::Tensor& given,
                  std::map<std::string, int64_t>& bindings) {
    const ir::TensorType& want = declared.type();
    const std::string got = std::string(ir::dtypeName(given.dtype())) + ir::dimsText(given.shape());
    auto mismatch = [&] {
        return makeError(ErrorKind::Invalid,
                         "input '" + declared.name() + "' expects " + want.str() + ", got " + got,
                         declared.name());
    };
    if (!given.valid())
        return makeError(ErrorKind::Invalid, "input '" + declared.name() + "' has no data",
                         declared.name());
    const bool floatOk = ir::isFloat(want.dtype) && ir::isFloat(given.dtype());
    if (!floatOk && want.dtype != given.dtype())
        return mismatch();
    if (want.rank() != given.rank())
        return mismatch();
    for (size_t i = 0; i < want.rank(); ++i) {
        const ir::Dim& d = want.shape[i];
        const int64_t extent = given.shape()[i];
        if (d.isKnown()) {
            if (d.value != extent)
                return mismatch();
            continue;
        }
        if (d.symbol.empty() || d.symbol == "?")
            continue;
        auto [it, fresh] = bindings.emplace(d.symbol, extent);
        if (!fresh && it->second != extent)
            return makeError(ErrorKind::Invalid,
                             "input '" + declared.name() + "' gives dim '" + d.symbol.str() + "' = " +
                                 std::to_string(extent) + ", but another input gave " +
                                 std::to_string(it->second),
                             declared.name());
    }
    return {};
}

} // namespace

Expected<std::vector<ir::Tensor>> runReference(const ir::Graph& graph,
                                               std::span<const ir::Tensor> inputs,
                                               ir::DType compute,
                                               std::map<std::string, ir::Tensor>* values,
                                               decltype(ir::KernelContext::onNode) onNode) {
    if (compute != ir::DType::F64 && compute != ir::DType::F32)
        return makeError(ErrorKind::Unsupported,
                         "the reference executor computes in f64 or f32, not " +
                             std::string(ir::dtypeName(compute)));
    const auto& declared = graph.inputs();
    if (inputs.size() != declared.size()) {
        std::string names;
        for (const ir::Value* v : declared)
            names += (names.empty() ? "'" : ", '") + v->name() + "'";
        return makeError(ErrorKind::Invalid,
                         "graph '" + graph.name() + "' has " + std::to_string(declared.size()) +
                             " input(s)" + (names.empty() ? "" : " (" + names + ")") + ", got " +
                             std::to_string(inputs.size()));
    }
    std::map<std::string, int64_t> bindings;
    std::vector<ir::Tensor> cast;
    cast.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        SX_TRY(checkInput(*declared[i], inputs[i], bindings));
        cast.push_back(ir::isFloat(inputs[i].dtype()) ? inputs[i].castTo(compute) : inputs[i]);
    }
    ir::KernelContext ctx;
    ctx.compute = compute;
    ctx.onNode = std::move(onNode);
    return ir::interpret(graph, cast, ctx, values);
}

} // namespace sextant::runtime
