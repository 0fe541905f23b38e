#include "Compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace sextant::runtime {

namespace {

std::string typeText(const ir::Tensor& t) {
    std::string s = std::string(ir::dtypeName(t.dtype())) + "[";
    for (size_t i = 0; i < t.shape().size(); ++i)
        s += (i ? "," : "") + std::to_string(t.shape()[i]);
    return s + "]";
}

/// Index of the largest element; NaNs are skipped, ties keep the first.
int64_t argmax(const std::vector<double>& v) {
    int64_t best = -1;
    for (size_t i = 0; i < v.size(); ++i)
        if (!std::isnan(v[i]) && (best < 0 || v[i] > v[static_cast<size_t>(best)]))
            best = static_cast<int64_t>(i);
    return best;
}

} // namespace

TensorComparison compareTensors(const std::string& name, const ir::Tensor& got,
                                const ir::Tensor& expected, double atol, double rtol) {
    TensorComparison c;
    c.name = name;
    if (!got.valid() || !expected.valid()) {
        c.problem = got.valid() ? "expected tensor has no data" : "computed tensor has no data";
        return c;
    }
    if (got.shape() != expected.shape()) {
        c.problem = "shape " + typeText(got) + " differs from expected " + typeText(expected);
        return c;
    }
    const std::vector<double> g = got.toDoubles();
    const std::vector<double> e = expected.toDoubles();
    c.argmaxGot = argmax(g);
    c.argmaxExpected = argmax(e);

    double sumAbs = 0, sumSq = 0, dot = 0, normG = 0, normE = 0;
    int64_t finite = 0;
    for (size_t i = 0; i < g.size(); ++i) {
        const double a = g[i], b = e[i];
        if (std::isfinite(b)) {
            c.expectedMaxAbs = std::max(c.expectedMaxAbs, std::fabs(b));
            c.gotNonFinite = c.gotNonFinite || !std::isfinite(a);
        }
        bool ok;
        if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
            // Non-finite values match only themselves and stay out of the statistics.
            ok = (std::isnan(a) && std::isnan(b)) || a == b;
            if (!ok) {
                c.maxAbs = INFINITY;
                c.maxRel = INFINITY;
            }
        } else {
            const double d = std::fabs(a - b);
            ok = d <= atol + rtol * std::fabs(b);
            c.maxAbs = std::max(c.maxAbs, d);
            c.maxRel = std::max(c.maxRel, d / std::max(std::fabs(b), kRelFloor));
            sumAbs += d;
            sumSq += d * d;
            dot += a * b;
            normG += a * a;
            normE += b * b;
            ++finite;
        }
        if (!ok) {
            if (c.firstMismatch < 0)
                c.firstMismatch = static_cast<int64_t>(i);
            ++c.mismatches;
        }
    }
    if (finite > 0) {
        c.meanAbs = sumAbs / static_cast<double>(finite);
        c.rmse = std::sqrt(sumSq / static_cast<double>(finite));
    }
    if (finite == 0 && c.mismatches > 0)
        c.cosine = 0.0; // nothing finite to compare, and what is not finite differs
    else if (normG == 0 && normE == 0)
        c.cosine = 1.0;
    else if (normG == 0 || normE == 0)
        c.cosine = 0.0;
    else
        c.cosine = dot / (std::sqrt(normG) * std::sqrt(normE));
    c.pass = c.mismatches == 0;
    return c;
}

bool isProbabilityLike(const ir::Value& output) {
    const ir::Value* v = &output;
    while (const ir::Node* p = v->producer()) {
        switch (p->info().compare) {
        case ir::CompareClass::Probability: return true;
        case ir::CompareClass::Scaled: return false;
        case ir::CompareClass::Transparent:
            if (!p->input(0))
                return false;
            v = p->input(0);
            continue;
        }
        return false;
    }
    return false;
}

double outputAtol(const ir::Value& output, const ir::Tensor& expected, double base) {
    if (isProbabilityLike(output) || !expected.valid())
        return base;
    double maxAbs = 0;
    for (double x : expected.toDoubles())
        if (std::isfinite(x))
            maxAbs = std::max(maxAbs, std::fabs(x));
    return base * maxAbs;
}

std::string formatComparison(const TensorComparison& c) {
    if (!c.problem.empty())
        return "output '" + c.name + "': FAIL (" + c.problem + ")";
    char buf[256];
    std::snprintf(buf, sizeof buf, "max_abs %.1e max_rel %.1e cosine %.6f argmax %lld/%lld",
                  c.maxAbs, c.maxRel, c.cosine, static_cast<long long>(c.argmaxGot),
                  static_cast<long long>(c.argmaxExpected));
    std::string line = "output '" + c.name + "': " + buf;
    if (c.pass)
        return line + " PASS";
    return line + " FAIL (" + std::to_string(c.mismatches) + " element" +
           (c.mismatches == 1 ? "" : "s") + " out of tolerance, first at index " +
           std::to_string(c.firstMismatch) + ")";
}

std::vector<size_t> lowestCosineFirst(const ValueDrift& drift) {
    std::vector<size_t> order(drift.values.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    // A NaN cosine (an overflow) is the worst there is; one not compared goes last.
    auto key = [&](size_t i) {
        const TensorComparison& c = drift.values[i];
        return !c.problem.empty() ? 3.0 : std::isnan(c.cosine) ? -2.0 : c.cosine;
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
    return order;
}

ValueDrift compareValues(const ir::Graph& graph, const std::map<std::string, ir::Tensor>& got,
                         const std::map<std::string, ir::Tensor>& expected, double atol,
                         double rtol, AtolScale scale) {
    ValueDrift drift;
    auto visit = [&](const ir::Value* v) {
        auto g = got.find(v->name());
        if (g == got.end())
            return;
        auto e = expected.find(v->name());
        if (e == expected.end() || e->second.numel() != g->second.numel()) {
            ++drift.unmatched;
            return;
        }
        const ir::Tensor& shaped =
            g->second.shape() == e->second.shape() ? g->second : g->second.reshaped(e->second.shape());
        const double a = scale == AtolScale::LikeOutputs ? outputAtol(*v, e->second, atol) : atol;
        drift.values.push_back(compareTensors(v->name(), shaped, e->second, a, rtol));
        drift.nodes.push_back(v->producer() ? v->producer()->name() : std::string());
        if (drift.firstFailing < 0 && !drift.values.back().pass) {
            drift.firstFailing = static_cast<int>(drift.values.size()) - 1;
            drift.firstFailingNode = drift.nodes.back();
        }
    };
    for (const ir::Value* in : graph.inputs())
        visit(in);
    for (const ir::Node* n : graph.nodes())
        for (const ir::Value* out : n->outputs())
            visit(out);
    return drift;
}

std::string f16OverflowNote(const ValueDrift& drift) {
    for (size_t i = 0; i < drift.values.size(); ++i) {
        const TensorComparison& c = drift.values[i];
        if (!c.gotNonFinite || c.expectedMaxAbs <= kF16Max)
            continue;
        char magnitude[32];
        std::snprintf(magnitude, sizeof magnitude, "%.2g", c.expectedMaxAbs);
        const std::string node = i < drift.nodes.size() && !drift.nodes[i].empty()
                                     ? " (node '" + drift.nodes[i] + "')"
                                     : std::string();
        return "f16 overflows first at '" + c.name + "'" + node + ": the float64 reference reaches " + magnitude +
               " there and the computed value holds an infinity or NaN (the largest f16 is 65504)";
    }
    return {};
}

} // namespace sextant::runtime
