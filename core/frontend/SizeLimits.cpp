#include "SizeLimits.h"

#include "core/ir/OpRegistry.h"

#include <limits>
#include <variant>

namespace sextant::frontend {

int64_t knownByteSize(const ir::TensorType& type) {
    int64_t bytes = static_cast<int64_t>(ir::dtypeSize(type.dtype));
    bool overflow = false;
    for (const ir::Dim& d : type.shape) {
        if (!d.isKnown())
            continue;
        if (d.value == 0)
            return 0;
        if (bytes > std::numeric_limits<int64_t>::max() / d.value)
            overflow = true; // keep looking: a later 0 still makes the tensor empty
        else
            bytes *= d.value;
    }
    return overflow ? -1 : bytes;
}

namespace {

/// Fails for one value over the limit; TensorType::str() prints the dims without multiplying them.
Status checkValue(const ir::Value& v, const char* role) {
    int64_t bytes = knownByteSize(v.type());
    if (bytes >= 0 && bytes <= kMaxTensorBytes)
        return {};
    const std::string size =
        bytes < 0 ? std::string("more than 2^63 bytes") : std::to_string(bytes) + " bytes";
    return makeError(ErrorKind::Unsupported,
                     std::string(role) + " '" + v.name() + "' has type " + v.type().str() + " (" +
                         size + "); tensors over " + std::to_string(kMaxTensorBytes) +
                         " bytes (4 GiB) are not supported",
                     v.name());
}

} // namespace

Status checkTensorSizes(const ir::Graph& graph) {
    for (const ir::Value* v : graph.inputs())
        SX_TRY(checkValue(*v, "input"));
    for (const ir::Node* n : graph.nodes()) {
        auto describe = [&](Error e, const std::string& where) {
            e.message = "node '" + n->name() + "' (" + ir::qualifiedOpName(n->kind()) + ")" + where +
                        ": " + e.message;
            e.subject = n->name(); // the outermost node: what a GUI can select
            return e;
        };
        for (size_t i = 0; i < n->numOutputs(); ++i)
            if (Status s = checkValue(*n->output(i), "value"); !s.ok())
                return describe(s.takeError(), "");
        // Subgraphs (If branches): their inputs and values are tensors too. attrs() is a std::map,
        // so the first error reported does not depend on pointers.
        for (const auto& [name, attr] : n->attrs()) {
            const auto* sub = std::get_if<std::shared_ptr<const ir::Graph>>(&attr);
            if (!sub || !*sub)
                continue;
            if (Status s = checkTensorSizes(**sub); !s.ok())
                return describe(s.takeError(), ", subgraph '" + name + "'");
        }
    }
    return {};
}

} // namespace sextant::frontend
