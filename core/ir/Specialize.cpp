#include "Specialize.h"
#include "core/ir/DimsText.h"

#include "Interpreter.h"
#include "OpRegistry.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <variant>

namespace sextant::ir {

namespace {

/// Shape arithmetic results larger than this stay computed at run time (they are data, not shape).
constexpr int64_t kMaxFoldedElements = 4096;
/// A specialised input may not hold more elements than a kernel could allocate.
constexpr int64_t kMaxInputElements = int64_t{1} << 31;

std::string joinInputNames(const Graph& g) {
    std::string s;
    for (const Value* v : g.inputs())
        s += (s.empty() ? "'" : ", '") + v->name() + "'";
    return s.empty() ? "none" : s;
}

bool hasSubgraph(const Node& n) {
    for (const auto& [name, attr] : n.attrs())
        if (std::holds_alternative<std::shared_ptr<const Graph>>(attr))
            return true;
    return false;
}

/// Infers `n`'s output types and stores them (as Graph::inferTypes does for one node).
Status inferNode(Node& n) {
    auto types = n.info().infer(n);
    if (!types.ok()) {
        Error e = types.takeError();
        if (e.subject.empty())
            e.subject = n.name();
        e.message = "node '" + n.name() + "' (" + qualifiedOpName(n.kind()) + "): " + e.message;
        return e;
    }
    if (types->size() < n.numOutputs())
        return makeError(ErrorKind::Verify,
                         "shape inference of node '" + n.name() + "' gave too few outputs", n.name());
    for (size_t i = 0; i < n.numOutputs(); ++i) {
        TensorType t = (*types)[i];
        if (t.layout == LayoutKind::Any)
            t.layout = n.output(i)->type().layout;
        n.output(i)->setType(std::move(t));
    }
    return {};
}

/// Evaluates `n` at compile time when it is shape arithmetic that specialisation made computable:
/// Shape/Size of a static tensor, or a node with small outputs whose inputs are all constants and
/// which either was fed by a value this specialisation folded or computes integers only (the
/// Cast(const) operands exporters put next to a Shape in a Concat). Returns no values when `n`
/// must stay.
Expected<std::vector<Tensor>> tryEvaluate(const Node& n, const std::set<const Value*>& derived) {
    std::vector<Tensor> none;
    for (const Value* out : n.outputs())
        if (out->isGraphOutput())
            return none;
    if (n.kind() == OpKind::Shape || n.kind() == OpKind::Size) {
        std::optional<Tensor> value = staticShapeValue(n);
        if (!value)
            return none;
        return std::vector<Tensor>{std::move(*value)};
    }
    if (n.numInputs() == 0 || hasSubgraph(n))
        return none;
    bool fedByShape = false;
    for (const Value* in : n.inputs()) {
        if (in && !in->isConstant())
            return none;
        fedByShape = fedByShape || (in && derived.count(in));
    }
    bool integerOnly = true;
    for (const Value* out : n.outputs()) {
        if (!out->type().isStatic() || out->type().numel() > kMaxFoldedElements)
            return none;
        integerOnly = integerOnly && !isFloat(out->type().dtype);
    }
    if (!fedByShape && !integerOnly)
        return none;
    KernelContext ctx;
    ctx.compute = DType::F64;
    std::vector<Tensor> inputs;
    for (const Value* in : n.inputs())
        inputs.push_back(in ? *in->constant() : Tensor());
    SX_ASSIGN(std::vector<Tensor> outs, evaluateNode(n, inputs, ctx));
    if (outs.size() < n.numOutputs())
        return makeError(ErrorKind::Verify, "node '" + n.name() + "' computed too few outputs",
                         n.name());
    // Float results come back in f64: give them the dtype the node declares.
    for (size_t i = 0; i < n.numOutputs(); ++i) {
        DType declared = n.output(i)->type().dtype;
        if (isFloat(outs[i].dtype()) && outs[i].dtype() != declared)
            outs[i] = outs[i].castTo(declared);
    }
    outs.resize(n.numOutputs());
    return outs;
}

/// Replaces `n` by constants holding `values`, under the names of its outputs.
Status replaceByConstants(Graph& g, Node& n, std::vector<Tensor> values,
                          std::set<const Value*>& derived) {
    std::vector<std::string> names;
    std::vector<Value*> constants;
    for (size_t i = 0; i < n.numOutputs(); ++i) {
        Value* out = n.output(i);
        names.push_back(out->name());
        SX_ASSIGN(Value * c, g.addConstant(g.uniqueName(out->name() + "__specialized"),
                                           std::move(values[i])));
        g.replaceAllUsesWith(out, c);
        constants.push_back(c);
    }
    SX_TRY(g.eraseNode(&n));
    for (size_t i = 0; i < constants.size(); ++i) {
        SX_TRY(g.renameValue(constants[i], names[i]));
        derived.insert(constants[i]);
    }
    return {};
}

/// Describes where an unresolved value comes from, for error messages.
std::string origin(const Value& v) {
    if (v.isGraphInput())
        return "a graph input: give its shape too";
    if (const Node* p = v.producer())
        return "output of node '" + p->name() + "' (" + qualifiedOpName(p->kind()) + ")";
    return "a constant";
}

std::string dimName(const Dim& d) {
    return d.symbol.empty() || d.symbol == "?" ? std::string("an unnamed dim")
                                               : "dim '" + d.symbol.str() + "'";
}

} // namespace

Expected<std::pair<std::string, std::vector<int64_t>>> parseShapeSpec(std::string_view spec) {
    const std::string text(spec);
    const size_t eq = spec.rfind('=');
    if (eq == std::string_view::npos || eq == 0)
        return makeError(ErrorKind::Parse, "shape '" + text +
                                               "' is not NAME=DIMS (e.g. x=1x3x48x320)");
    std::pair<std::string, std::vector<int64_t>> out;
    out.first = text.substr(0, eq);
    std::string_view dims = spec.substr(eq + 1);
    while (!dims.empty()) {
        const size_t x = dims.find('x');
        std::string_view part = dims.substr(0, x);
        int64_t v = -1;
        auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || v < 0)
            return makeError(ErrorKind::Parse, "shape '" + text + "': dim '" + std::string(part) +
                                                   "' is not a non-negative number");
        out.second.push_back(v);
        if (x == std::string_view::npos)
            break;
        dims = dims.substr(x + 1);
        if (dims.empty())
            return makeError(ErrorKind::Parse, "shape '" + text + "' ends with 'x'");
    }
    return out;
}

std::string formatShapeSpec(const std::vector<int64_t>& dims) {
    std::string s;
    for (size_t i = 0; i < dims.size(); ++i)
        s += (i ? "x" : "") + std::to_string(dims[i]);
    return s;
}

Expected<InputShapes> parseShapeList(std::string_view text) {
    InputShapes shapes;
    size_t at = 0;
    while (at < text.size()) {
        if (std::isspace(static_cast<unsigned char>(text[at]))) {
            ++at;
            continue;
        }
        size_t end = at;
        while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end])))
            ++end;
        SX_ASSIGN(auto spec, parseShapeSpec(text.substr(at, end - at)));
        if (!shapes.emplace(spec.first, std::move(spec.second)).second)
            return makeError(ErrorKind::Parse, "input '" + spec.first + "' is given two shapes");
        at = end;
    }
    return shapes;
}

std::string formatShapeList(const InputShapes& shapes) {
    std::string out;
    for (const auto& [name, dims] : shapes)
        out += (out.empty() ? "" : " ") + name + "=" + formatShapeSpec(dims);
    return out;
}

namespace {

/// The symbols a model's dims are named by, bound to extents, and the input that bound each.
struct SymbolBindings {
    std::map<std::string, int64_t> bound;         // symbol -> extent
    std::map<std::string, std::string> boundBy;   // symbol -> input that bound it
};

/// Checks the requested shape `dims` of graph input `name` (rank, range, the model's fixed dims,
/// symbols bound consistently) and binds the symbols it fixes.
Status bindInputShape(const Graph& graph, const std::string& name, const std::vector<int64_t>& dims,
                      SymbolBindings& symbols) {
    std::map<std::string, int64_t>& bound = symbols.bound;
    std::map<std::string, std::string>& boundBy = symbols.boundBy;
    const Value* in = graph.findValue(name);
    if (!in || !in->isGraphInput())
        return makeError(ErrorKind::Invalid, "cannot specialise '" + name +
                                                 "': the graph has no input of that name "
                                                 "(inputs: " + joinInputNames(graph) + ")");
    const TensorType& t = in->type();
    if (dims.size() != t.rank())
        return makeError(ErrorKind::Invalid,
                         "input '" + name + "' has rank " + std::to_string(t.rank()) + " (" +
                             t.str() + ") but the shape " + dimsText(dims) + " has rank " +
                             std::to_string(dims.size()));
    int64_t total = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
        const int64_t d = dims[i];
        if (d < 0)
            return makeError(ErrorKind::Invalid, "input '" + name + "': dim " +
                                                     std::to_string(i) + " is negative");
        if (d != 0 && total > kMaxInputElements / d)
            return makeError(ErrorKind::Invalid, "input '" + name + "': shape " +
                                                     dimsText(dims) + " is too large");
        total *= d;
        const Dim& decl = t.shape[i];
        if (decl.isKnown()) {
            if (decl.value != d)
                return makeError(ErrorKind::Invalid,
                                 "input '" + name + "' dim " + std::to_string(i) +
                                     " is fixed to " + std::to_string(decl.value) +
                                     " by the model (" + t.str() + ") but the shape " +
                                     dimsText(dims) + " gives " + std::to_string(d));
            continue;
        }
        if (decl.symbol.empty() || decl.symbol == "?")
            continue; // an unnamed unknown dim binds nothing
        auto [it, inserted] = bound.emplace(decl.symbol, d);
        if (!inserted && it->second != d)
            return makeError(ErrorKind::Invalid,
                             "dim '" + decl.symbol.str() + "' is " + std::to_string(it->second) +
                                 " in input '" + boundBy[decl.symbol] + "' but " +
                                 std::to_string(d) + " in input '" + name + "'");
        boundBy.emplace(decl.symbol, name);
    }
    return {};
}

/// Gives the inputs their types: the requested dims, or the bound symbols' extents.
void retypeInputs(Graph& graph, const InputShapes& shapes, const std::map<std::string, int64_t>& bound) {
    for (Value* in : graph.inputs()) {
        TensorType t = in->type();
        auto req = shapes.find(in->name());
        for (size_t i = 0; i < t.rank(); ++i) {
            if (req != shapes.end()) {
                t.shape[i] = Dim::known(req->second[i]);
                continue;
            }
            auto b = bound.find(t.shape[i].symbol);
            if (!t.shape[i].isKnown() && b != bound.end())
                t.shape[i] = Dim::known(b->second);
        }
        in->setType(std::move(t));
    }
}

/// Re-infers in node order, folding the shape arithmetic that became computable; the names of
/// the folded nodes go to `folded` when given.
Status reinferAndFold(Graph& graph, std::vector<std::string>* folded) {
    std::set<const Value*> derived; // constants this specialisation created
    for (Node* n : graph.nodes()) {
        SX_TRY(inferNode(*n));
        SX_ASSIGN(std::vector<Tensor> values, tryEvaluate(*n, derived));
        if (values.empty())
            continue;
        const std::string name = n->name();
        SX_TRY(replaceByConstants(graph, *n, std::move(values), derived));
        if (folded)
            folded->push_back(name);
    }
    return {};
}

/// Every dim must now be known: inputs first, then node outputs in node order.
Status checkAllDimsKnown(const Graph& graph) {
    for (const Value* in : graph.inputs())
        for (const Dim& d : in->type().shape)
            if (!d.isKnown())
                return makeError(ErrorKind::Invalid, "cannot resolve " + dimName(d) +
                                                         " of tensor '" + in->name() + "' (" +
                                                         origin(*in) + ")");
    for (const Node* n : graph.nodes())
        for (const Value* out : n->outputs())
            for (const Dim& d : out->type().shape)
                if (!d.isKnown())
                    return makeError(ErrorKind::Invalid,
                                     "cannot resolve " + dimName(d) + " of tensor '" + out->name() +
                                         "' (" + origin(*out) + ") after specialising the inputs",
                                     n->name());
    return {};
}

} // namespace

Status specializeInputs(Graph& graph, const InputShapes& shapes, std::vector<std::string>* folded) {
    // Check every request and bind the symbols it fixes, then retype, re-infer and check.
    SymbolBindings symbols;
    for (const auto& [name, dims] : shapes)
        SX_TRY(bindInputShape(graph, name, dims, symbols));
    retypeInputs(graph, shapes, symbols.bound);
    SX_TRY(reinferAndFold(graph, folded));
    return checkAllDimsKnown(graph);
}

std::vector<const Value*> symbolicInputs(const Graph& graph) {
    std::vector<const Value*> out;
    for (const Value* in : graph.inputs())
        if (!in->type().isStatic())
            out.push_back(in);
    return out;
}

Status requireStaticInputs(const Graph& graph) {
    std::vector<const Value*> symbolic = symbolicInputs(graph);
    if (symbolic.empty())
        return {};
    const Value* in = symbolic.front();
    std::string example;
    for (size_t i = 0; i < in->type().rank(); ++i) {
        const Dim& d = in->type().shape[i];
        example += (i ? "x" : "") + (d.isKnown() ? std::to_string(d.value) : std::string("N"));
    }
    std::string more;
    if (symbolic.size() > 1)
        more = " (and likewise for " + std::to_string(symbolic.size() - 1) + " more input" +
               (symbolic.size() > 2 ? "s" : "") + ")";
    return makeError(ErrorKind::Invalid, "input '" + in->name() + "' has symbolic dims " +
                                             in->type().str() +
                                             ": give it a concrete shape with --shape " +
                                             in->name() + "=" + example +
                                             " (N: a number per symbolic dim)" + more);
}

} // namespace sextant::ir
