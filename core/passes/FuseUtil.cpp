#include "FuseUtil.h"

#include <cmath>
#include <limits>

namespace sextant::passes::fuse {

using ir::OpKind;

std::string usersReason(const std::string& what, const ir::Value* v) {
    return what + " output has " + std::to_string(useCount(v)) + " users";
}

Match soleUserOfKind(const ir::Value* v, std::initializer_list<OpKind> kinds,
                     const std::string& what, ir::Node*& user) {
    user = nullptr;
    if (!v)
        return Match::none();
    ir::Node* found = nullptr;
    for (ir::Node* u : v->users())
        for (OpKind k : kinds)
            if (u->kind() == k && !found)
                found = u;
    if (!found)
        return Match::none();
    if (useCount(v) != 1)
        return Match::rejected(usersReason(what, v));
    user = found;
    return Match::matched();
}

bool hasInputs(const ir::Node& n, size_t count) {
    if (n.numInputs() < count)
        return false;
    for (size_t i = 0; i < count; ++i)
        if (!n.input(i))
            return false;
    return true;
}

ir::Value* otherOperand(const ir::Node& node, const ir::Value* v) {
    if (node.numInputs() != 2)
        return nullptr;
    if (node.input(0) == v && node.input(1) != v)
        return node.input(1);
    if (node.input(1) == v && node.input(0) != v)
        return node.input(0);
    return nullptr;
}

std::optional<double> scalarConstant(const ir::Value* v) {
    const ir::Tensor* t = constantOf(v);
    if (!t || t->numel() == 0 || !ir::isFloat(t->dtype()))
        return std::nullopt;
    const double first = t->at(0);
    for (int64_t i = 1; i < t->numel(); ++i)
        if (t->at(i) != first)
            return std::nullopt;
    return first;
}

bool nearlyEqual(double a, double b, double tol) {
    return std::abs(a - b) <= tol * std::max(std::abs(a), std::abs(b));
}

std::optional<std::pair<double, double>> clipBounds(const ir::Node& clip, std::string& why) {
    // Absent bounds are the largest finite doubles: the same clamp, and printable IR.
    double lo = std::numeric_limits<double>::lowest();
    double hi = std::numeric_limits<double>::max();
    lo = clip.attrFloat("min", lo);
    hi = clip.attrFloat("max", hi);
    for (size_t i = 1; i < 3 && i < clip.numInputs(); ++i) {
        const ir::Value* b = clip.input(i);
        if (!b)
            continue;
        std::optional<double> c = scalarConstant(b);
        if (!c) {
            why = "clip bound '" + b->name() + "' is not a constant scalar";
            return std::nullopt;
        }
        (i == 1 ? lo : hi) = *c;
    }
    return std::make_pair(lo, hi);
}

std::initializer_list<OpKind> activationKinds() {
    static const std::initializer_list<OpKind> kinds = {OpKind::Relu,        OpKind::LeakyRelu,
                                                        OpKind::Clip,        OpKind::Sigmoid,
                                                        OpKind::HardSigmoid, OpKind::HardSwish};
    return kinds;
}

std::optional<ActivationSpec> activationOf(const ir::Node& n, std::string& why) {
    switch (n.kind()) {
    case OpKind::Relu: return ActivationSpec{"Relu", {}};
    case OpKind::Sigmoid: return ActivationSpec{"Sigmoid", {}};
    case OpKind::HardSwish: return ActivationSpec{"HardSwish", {}};
    case OpKind::LeakyRelu: return ActivationSpec{"LeakyRelu", {n.attrFloat("alpha", 0.01)}};
    case OpKind::HardSigmoid:
        return ActivationSpec{"HardSigmoid",
                              {n.attrFloat("alpha", 0.2), n.attrFloat("beta", 0.5)}};
    case OpKind::Clip: {
        auto b = clipBounds(n, why);
        if (!b)
            return std::nullopt;
        return ActivationSpec{"Clip", {b->first, b->second}};
    }
    default: return std::nullopt;
    }
}

void setActivation(ir::AttributeMap& attrs, const ActivationSpec& act) {
    attrs["activation"] = act.name;
    if (act.params.empty())
        attrs.erase("activation_params");
    else
        attrs["activation_params"] = act.params;
}

ActivationSpec activationAttrs(const ir::Node& fused) {
    return ActivationSpec{fused.attrString("activation", ""), fused.attrFloats("activation_params", {})};
}

std::optional<std::pair<OpKind, std::vector<std::pair<std::string, double>>>> activationOp(const ActivationSpec& act) {
    const std::vector<double>& p = act.params;
    if (act.name == "Relu")
        return std::pair{OpKind::Relu, std::vector<std::pair<std::string, double>>{}};
    if (act.name == "Sigmoid")
        return std::pair{OpKind::Sigmoid, std::vector<std::pair<std::string, double>>{}};
    if (act.name == "HardSwish")
        return std::pair{OpKind::HardSwish, std::vector<std::pair<std::string, double>>{}};
    if (act.name == "LeakyRelu")
        return std::pair{OpKind::LeakyRelu,
                         p.empty() ? std::vector<std::pair<std::string, double>>{}
                                   : std::vector<std::pair<std::string, double>>{{"alpha", p[0]}}};
    if (act.name == "HardSigmoid" || act.name == "Clip") {
        const bool clip = act.name == "Clip";
        // Sorted by name: alpha < beta, max < min.
        std::vector<std::pair<std::string, double>> attrs;
        if (p.size() > 1)
            attrs.emplace_back(clip ? "max" : "beta", p[1]);
        if (!p.empty())
            attrs.emplace(clip ? attrs.end() : attrs.begin(), clip ? "min" : "alpha", p[0]);
        return std::pair{clip ? OpKind::Clip : OpKind::HardSigmoid, std::move(attrs)};
    }
    return std::nullopt;
}

Match planActivation(ir::Node& user, BiasActPlan& p) {
    std::string why;
    auto spec = activationOf(user, why);
    if (!spec)
        return why.empty() ? Match::none() : Match::rejected(why);
    p.act = &user;
    p.spec = *spec;
    return Match::matched();
}

void planActivationAfterAdd(BiasActPlan& p) {
    if (ir::Node* next = singleUser(p.add->output(0))) {
        std::string ignored;
        if (auto spec = activationOf(*next, ignored)) {
            p.act = next;
            p.spec = *spec;
        }
    }
}

/// See FuseUtil.h.
std::string bnFoldReason(const ir::Node& bn, int64_t channels) {
    if (bn.attrInt("training_mode", 0) != 0)
        return "batchnorm '" + bn.name() + "' is in training mode";
    if (bn.attrInt("spatial", 1) == 0)
        return "batchnorm '" + bn.name() + "' has spatial=0";
    for (size_t i = 1; i <= 4; ++i) {
        const ir::Value* p = bn.input(i);
        if (!p)
            return "batchnorm '" + bn.name() + "' lacks input " + std::to_string(i);
        const ir::Tensor* t = constantOf(p);
        if (!t)
            return "batchnorm parameter '" + p->name() + "' is not a constant";
        if (t->numel() != channels)
            return "batchnorm parameter '" + p->name() + "' has " + std::to_string(t->numel()) +
                   " elements for " + std::to_string(channels) + " channels";
    }
    return {};
}

} // namespace sextant::passes::fuse
