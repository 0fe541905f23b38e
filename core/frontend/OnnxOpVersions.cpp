#include "OnnxOpVersions.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace sextant::frontend {

namespace {

struct History {
    std::string_view op;
    std::vector<int> versions;
};

const std::vector<History>& histories() {
    static const std::vector<History> table = [] {
        std::vector<History> t = {
#include "OnnxOpVersions.inc"
        };
        std::sort(t.begin(), t.end(), [](const History& a, const History& b) { return a.op < b.op; });
        return t;
    }();
    return table;
}

} // namespace

std::span<const int> onnxOpHistory(std::string_view op) {
    const std::vector<History>& t = histories();
    auto it = std::lower_bound(t.begin(), t.end(), op, [](const History& h, std::string_view name) { return h.op < name; });
    if (it == t.end() || it->op != op)
        return {};
    return it->versions;
}

std::optional<int> onnxOpVersion(std::string_view op, int64_t opset) {
    std::optional<int> version;
    for (int v : onnxOpHistory(op))
        if (v <= opset)
            version = v;
    return version;
}

std::span<const int> unimplementedOpVersions(std::string_view op) {
    // docs/onnx-versions.md says why each is refused.
    static const std::vector<int> attention{24, 25};
    if (op == "Attention")
        return attention;
    return {};
}

} // namespace sextant::frontend
