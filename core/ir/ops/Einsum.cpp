// Einsum (ONNX opset 12): the Einstein summation an `equation` such as "ij,jk->ik" names, over any
// number of operands. Subscripts are the letters a-z and A-Z; a letter repeated within one operand
// takes that operand's diagonal; "..." stands for broadcast leading (or middle) dims, aligned from
// the right as numpy broadcasts them. Explicit mode ("->" present) gives the output's subscripts;
// implicit mode makes them the broadcast dims followed by the letters that occur exactly once, in
// ASCII order (upper case before lower case, as numpy). Every other letter is summed over.
//
// The kernel contracts the operands pairwise from left to right: each step walks the union of two
// operands' letters once and sums out the letters that neither the later operands nor the output
// name, so a chain of products costs what its pairwise products cost rather than the product of
// every extent. Each step's walk and result are bounded (ops::checkAllocation and a work limit).

#include "OpUtil.h"

#include <algorithm>
#include <array>
#include <type_traits>

namespace sextant::ir {

using ops::opError;

namespace {

constexpr int kLetters = 52;     ///< a-z are 0..25, A-Z 26..51; broadcast dims follow
constexpr int kEllipsis = -1;    ///< marks "..." inside a term
/// Most index steps one contraction may take (about a second of work).
constexpr int64_t kMaxEinsumSteps = int64_t{1} << 31;

int labelOf(char c) { return c >= 'a' && c <= 'z' ? c - 'a' : c - 'A' + 26; }
char letterOf(int l) { return l < 26 ? static_cast<char>('a' + l) : static_cast<char>('A' + l - 26); }
/// ASCII order of a letter label (upper case first).
int asciiRank(int l) { return l < 26 ? l + 26 : l - 26; }

/// One operand's (or the output's) subscripts: letter labels and at most one kEllipsis.
using Term = std::vector<int>;

struct Equation {
    std::vector<Term> inputs;
    Term output;
    bool explicitOutput = false;
};

/// Parses `eq` for `operands` inputs; spaces are ignored.
Expected<Equation> parseEquation(const Node& n, const std::string& eq, size_t operands) {
    Equation e;
    e.inputs.emplace_back();
    Term* cur = &e.inputs.back();
    const std::string where = "einsum equation '" + eq + "'";
    for (size_t i = 0; i < eq.size(); ++i) {
        const char c = eq[i];
        if (c == ' ')
            continue;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            cur->push_back(labelOf(c));
        } else if (c == '.') {
            if (eq.compare(i, 3, "...") != 0)
                return opError(n, where + " has a '.' at position " + std::to_string(i) +
                                      " that does not start an ellipsis '...'");
            if (std::count(cur->begin(), cur->end(), kEllipsis) != 0)
                return opError(n, where + " has a second ellipsis in one term");
            cur->push_back(kEllipsis);
            i += 2;
        } else if (c == ',') {
            if (e.explicitOutput)
                return opError(n, where + " has a ',' in its output");
            e.inputs.emplace_back();
            cur = &e.inputs.back();
        } else if (c == '-') {
            if (i + 1 >= eq.size() || eq[i + 1] != '>')
                return opError(n, where + " has a '-' not followed by '>'");
            if (e.explicitOutput)
                return opError(n, where + " has a second '->'");
            e.explicitOutput = true;
            cur = &e.output;
            ++i;
        } else {
            return opError(n, where + " has a bad character '" + std::string(1, c) + "' at position " +
                                  std::to_string(i) + " (subscripts are letters a-z, A-Z and '...')");
        }
    }
    if (e.inputs.size() != operands)
        return opError(n, where + " names " + std::to_string(e.inputs.size()) + " operand(s), the node has " +
                              std::to_string(operands) + " input(s)");
    if (e.explicitOutput) {
        std::array<bool, kLetters> seen{}, inInputs{};
        for (const Term& t : e.inputs)
            for (int l : t)
                if (l != kEllipsis)
                    inInputs[static_cast<size_t>(l)] = true;
        for (int l : e.output) {
            if (l == kEllipsis)
                continue;
            if (seen[static_cast<size_t>(l)])
                return opError(n, where + " names output subscript '" + std::string(1, letterOf(l)) + "' twice");
            if (!inInputs[static_cast<size_t>(l)])
                return opError(n, where + " has output subscript '" + std::string(1, letterOf(l)) +
                                      "', which no operand has");
            seen[static_cast<size_t>(l)] = true;
        }
    } else {
        std::array<int, kLetters> count{};
        bool ellipsis = false;
        for (const Term& t : e.inputs)
            for (int l : t) {
                if (l == kEllipsis)
                    ellipsis = true;
                else
                    ++count[static_cast<size_t>(l)];
            }
        if (ellipsis)
            e.output.push_back(kEllipsis);
        std::vector<int> once;
        for (int l = 0; l < kLetters; ++l)
            if (count[static_cast<size_t>(l)] == 1)
                once.push_back(l);
        std::sort(once.begin(), once.end(), [](int a, int b) { return asciiRank(a) < asciiRank(b); });
        e.output.insert(e.output.end(), once.begin(), once.end());
    }
    return e;
}

/// An equation resolved against its operands' ranks: each operand's and the output's labels with
/// "..." expanded into broadcast labels kLetters + k (k-th of `broadcastRank` dims, right-aligned).
struct Resolved {
    std::vector<std::vector<int>> inputs;
    std::vector<int> output;
    int64_t broadcastRank = 0;
};

Expected<Resolved> resolve(const Node& n, const Equation& e, const std::vector<size_t>& ranks) {
    Resolved r;
    std::vector<int64_t> ellipsisRanks(ranks.size(), 0);
    for (size_t i = 0; i < e.inputs.size(); ++i) {
        const Term& t = e.inputs[i];
        const bool hasEllipsis = std::count(t.begin(), t.end(), kEllipsis) != 0;
        const auto letters = static_cast<int64_t>(t.size()) - (hasEllipsis ? 1 : 0);
        const auto rank = static_cast<int64_t>(ranks[i]);
        if (hasEllipsis ? letters > rank : letters != rank)
            return opError(n, "einsum operand " + std::to_string(i) + " has " + std::to_string(letters) +
                                  " subscript(s)" + (hasEllipsis ? " and '...'" : "") + ", its input has rank " +
                                  std::to_string(rank));
        ellipsisRanks[i] = rank - letters;
        r.broadcastRank = std::max(r.broadcastRank, ellipsisRanks[i]);
    }
    for (size_t i = 0; i < e.inputs.size(); ++i) {
        std::vector<int> labels;
        for (int l : e.inputs[i]) {
            if (l != kEllipsis) {
                labels.push_back(l);
                continue;
            }
            for (int64_t k = r.broadcastRank - ellipsisRanks[i]; k < r.broadcastRank; ++k)
                labels.push_back(kLetters + static_cast<int>(k));
        }
        r.inputs.push_back(std::move(labels));
    }
    const bool outEllipsis = std::count(e.output.begin(), e.output.end(), kEllipsis) != 0;
    if (!outEllipsis && r.broadcastRank > 0)
        return opError(n, "einsum equation '" + n.attrString("equation", "") +
                              "' has broadcast dims under '...' but no '...' in its output");
    for (int l : e.output) {
        if (l != kEllipsis) {
            r.output.push_back(l);
            continue;
        }
        for (int64_t k = 0; k < r.broadcastRank; ++k)
            r.output.push_back(kLetters + static_cast<int>(k));
    }
    return r;
}

std::string labelName(int l) {
    return l < kLetters ? "subscript '" + std::string(1, letterOf(l)) + "'"
                        : "broadcast dim " + std::to_string(l - kLetters) + " of '...'";
}

/// The extent of every label from the operands' shapes (-1 where unknown, -2 where no operand has
/// it); a letter's known extents must agree exactly, a broadcast dim's by numpy's rule (1 stretches).
Expected<std::vector<int64_t>> labelExtents(const Node& n, const Resolved& r,
                                            const std::vector<std::vector<int64_t>>& shapes) {
    const size_t numLabels = static_cast<size_t>(kLetters + r.broadcastRank);
    std::vector<int64_t> known(numLabels, -1); // the extent seen (for broadcast dims: the one > 1)
    std::vector<size_t> knownIn(numLabels, 0);
    std::vector<bool> seen(numLabels, false), unknown(numLabels, false), one(numLabels, false);
    for (size_t i = 0; i < r.inputs.size(); ++i)
        for (size_t d = 0; d < r.inputs[i].size(); ++d) {
            const auto l = static_cast<size_t>(r.inputs[i][d]);
            const int64_t v = shapes[i][d];
            seen[l] = true;
            if (v < 0) {
                unknown[l] = true;
                continue;
            }
            if (l >= kLetters && v == 1) {
                one[l] = true;
                continue;
            }
            if (known[l] >= 0 && known[l] != v)
                return opError(n, "einsum " + labelName(static_cast<int>(l)) + " has extent " +
                                      std::to_string(known[l]) + " in operand " + std::to_string(knownIn[l]) +
                                      " and " + std::to_string(v) + " in operand " + std::to_string(i));
            if (known[l] < 0) {
                known[l] = v;
                knownIn[l] = i;
            }
        }
    std::vector<int64_t> ext(numLabels, -2);
    for (size_t l = 0; l < numLabels; ++l)
        if (seen[l])
            ext[l] = known[l] >= 0 ? known[l] : unknown[l] ? -1 : one[l] ? 1 : -1;
    return ext;
}

Expected<Resolved> resolvedOf(const Node& n, const std::vector<size_t>& ranks) {
    SX_ASSIGN(Equation e, parseEquation(n, n.attrString("equation", ""), n.numInputs()));
    return resolve(n, e, ranks);
}

/// A dense tensor over distinct labels (row-major in `labels` order).
template <typename A> struct Labelled {
    std::vector<int> labels;
    std::vector<A> data;
};

/// Element strides of an operand with (possibly repeated) `labels` and `shape`, per label id:
/// a repeated label's strides add up (its diagonal); a broadcast dim of extent 1 steps by 0.
std::vector<int64_t> labelStrides(const std::vector<int>& labels, const std::vector<int64_t>& shape,
                                  size_t numLabels) {
    std::vector<int64_t> s(numLabels, 0);
    int64_t stride = 1;
    for (size_t d = labels.size(); d-- > 0;) {
        if (shape[d] != 1)
            s[static_cast<size_t>(labels[d])] += stride;
        stride *= shape[d];
    }
    return s;
}

/// result[keep] = sum over the other labels of a * b (b may be absent), walking the union of the
/// labels of a and b once.
template <typename A>
Expected<Labelled<A>> contract(const Node& n, const A* a, const std::vector<int64_t>& strideA, const A* b,
                               const std::vector<int64_t>& strideB, const std::vector<int>& walk,
                               const std::vector<int>& keep, const std::vector<int64_t>& ext) {
    std::vector<int64_t> walkExt, keepExt;
    for (int l : walk)
        walkExt.push_back(ext[static_cast<size_t>(l)]);
    for (int l : keep)
        keepExt.push_back(ext[static_cast<size_t>(l)]);
    SX_TRY(ops::checkAllocation(n, keepExt));
    double steps = 1;
    for (int64_t e : walkExt)
        steps *= static_cast<double>(e);
    if (steps > static_cast<double>(kMaxEinsumSteps))
        return opError(n, "einsum contraction over " + std::to_string(walk.size()) + " subscripts takes " +
                              std::to_string(static_cast<int64_t>(steps)) + " steps, more than the limit " +
                              std::to_string(kMaxEinsumSteps),
                       ErrorKind::Unsupported);
    Labelled<A> out;
    out.labels = keep;
    out.data.assign(static_cast<size_t>(product(keepExt)), A{});
    if (steps == 0)
        return out;
    // Output strides per label.
    std::vector<int64_t> strideO(ext.size(), 0);
    int64_t s = 1;
    for (size_t d = keep.size(); d-- > 0;) {
        strideO[static_cast<size_t>(keep[d])] = s;
        s *= keepExt[d];
    }
    const size_t r = walk.size();
    std::vector<int64_t> wa(r), wb(r), wo(r), idx(r, 0);
    for (size_t d = 0; d < r; ++d) {
        const auto l = static_cast<size_t>(walk[d]);
        wa[d] = strideA[l];
        wb[d] = b ? strideB[l] : 0;
        wo[d] = strideO[l];
    }
    int64_t offA = 0, offB = 0, offO = 0;
    const auto total = static_cast<int64_t>(steps);
    for (int64_t k = 0; k < total; ++k) {
        out.data[static_cast<size_t>(offO)] += b ? a[offA] * b[offB] : a[offA];
        for (size_t d = r; d-- > 0;) {
            ++idx[d];
            offA += wa[d];
            offB += wb[d];
            offO += wo[d];
            if (idx[d] < walkExt[d])
                break;
            offA -= wa[d] * walkExt[d];
            offB -= wb[d] * walkExt[d];
            offO -= wo[d] * walkExt[d];
            idx[d] = 0;
        }
    }
    return out;
}

template <typename T>
Expected<std::vector<Tensor>> runEinsumT(const Node& n, std::span<const Tensor> inputs, const Resolved& r,
                                         const std::vector<int64_t>& ext) {
    // Floats accumulate in double, integers in their own width (wrapping like the ONNX backends).
    using A = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    const size_t numLabels = ext.size();
    // needed[i][l]: label l is named by the output or an operand after i.
    const size_t m = inputs.size();
    std::vector<std::vector<bool>> laterUse(m, std::vector<bool>(numLabels, false));
    std::vector<bool> use(numLabels, false);
    for (int l : r.output)
        use[static_cast<size_t>(l)] = true;
    for (size_t i = m; i-- > 0;) {
        laterUse[i] = use;
        for (int l : r.inputs[i])
            use[static_cast<size_t>(l)] = true;
    }
    auto asAcc = [](const Tensor& t) {
        std::vector<A> v(static_cast<size_t>(t.numel()));
        const T* p = t.data<T>();
        for (size_t k = 0; k < v.size(); ++k)
            v[k] = static_cast<A>(p[k]);
        return v;
    };
    auto distinct = [](std::vector<int> labels) {
        std::vector<int> d;
        for (int l : labels)
            if (std::find(d.begin(), d.end(), l) == d.end())
                d.push_back(l);
        return d;
    };
    auto keepFor = [&](size_t i, const std::vector<int>& walk) {
        if (i + 1 == m)
            return r.output;
        std::vector<int> keep;
        for (int l : walk)
            if (laterUse[i][static_cast<size_t>(l)])
                keep.push_back(l);
        return keep;
    };
    // Step 0: operand 0 alone (diagonals taken, its private labels summed).
    std::vector<A> a0 = asAcc(inputs[0]);
    std::vector<int> walk = distinct(r.inputs[0]);
    SX_ASSIGN(Labelled<A> cur,
              contract<A>(n, a0.data(), labelStrides(r.inputs[0], inputs[0].shape(), numLabels), nullptr, {},
                          walk, keepFor(0, walk), ext));
    for (size_t i = 1; i < m; ++i) {
        std::vector<int64_t> curShape;
        for (int l : cur.labels)
            curShape.push_back(ext[static_cast<size_t>(l)]);
        std::vector<int> both = cur.labels;
        both.insert(both.end(), r.inputs[i].begin(), r.inputs[i].end());
        walk = distinct(both);
        std::vector<A> b = asAcc(inputs[i]);
        SX_ASSIGN(Labelled<A> next,
                  contract<A>(n, cur.data.data(), labelStrides(cur.labels, curShape, numLabels), b.data(),
                              labelStrides(r.inputs[i], inputs[i].shape(), numLabels), walk, keepFor(i, walk), ext));
        cur = std::move(next);
    }
    std::vector<int64_t> outShape;
    for (int l : r.output)
        outShape.push_back(ext[static_cast<size_t>(l)]);
    Tensor y(dtypeOf<T>(), outShape);
    T* py = y.mutableData<T>();
    for (size_t k = 0; k < cur.data.size(); ++k)
        py[k] = static_cast<T>(cur.data[k]);
    return std::vector<Tensor>{std::move(y)};
}

} // namespace

Status verifyEinsum(const Node& n) {
    if (!n.hasAttr("equation"))
        return opError(n, "einsum needs its equation attribute");
    SX_TRY(parseEquation(n, n.attrString("equation", ""), n.numInputs()));
    for (size_t i = 0; i < n.numInputs(); ++i) {
        const TensorType* t = ops::inputType(n, i);
        if (!t)
            return opError(n, "einsum input " + std::to_string(i) + " is omitted");
        if (t->dtype != ops::inputType(n, 0)->dtype)
            return opError(n, "einsum inputs must share one dtype, input 0 is " + ops::inputType(n, 0)->str() +
                                  " and input " + std::to_string(i) + " is " + t->str());
    }
    return {};
}

Expected<std::vector<TensorType>> inferEinsum(const Node& n) {
    SX_TRY(verifyEinsum(n));
    std::vector<size_t> ranks;
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < n.numInputs(); ++i) {
        const TensorType* t = ops::inputType(n, i);
        ranks.push_back(t->rank());
        std::vector<int64_t> s;
        for (const Dim& d : t->shape)
            s.push_back(d.isKnown() ? d.value : -1);
        shapes.push_back(std::move(s));
    }
    SX_ASSIGN(Resolved r, resolvedOf(n, ranks));
    SX_ASSIGN(std::vector<int64_t> ext, labelExtents(n, r, shapes));
    TensorType out{ops::inputType(n, 0)->dtype, {}};
    for (int l : r.output) {
        const int64_t e = ext[static_cast<size_t>(l)];
        out.shape.push_back(e >= 0 ? Dim::known(e) : ops::unknownDim());
    }
    return std::vector<TensorType>{out};
}

Expected<std::vector<Tensor>> runEinsum(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    std::vector<size_t> ranks;
    std::vector<std::vector<int64_t>> shapes;
    for (const Tensor& t : inputs) {
        if (t.dtype() != inputs[0].dtype())
            return opError(n, "einsum inputs must share one dtype, got " + inputs[0].type().str() + " and " +
                                  t.type().str());
        ranks.push_back(t.rank());
        shapes.push_back(t.shape());
    }
    SX_ASSIGN(Resolved r, resolvedOf(n, ranks));
    SX_ASSIGN(std::vector<int64_t> ext, labelExtents(n, r, shapes));
    for (int64_t& e : ext)
        if (e < 0)
            e = 1; // a label no operand has (cannot happen for a valid equation) walks once
    return ops::dispatchNumeric(n, inputs[0].dtype(),
                                [&](auto t) { return runEinsumT<decltype(t)>(n, inputs, r, ext); });
}

} // namespace sextant::ir
