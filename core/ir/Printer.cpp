#include "Printer.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace sextant::ir {

namespace {

bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
}

bool isPlainName(std::string_view s) {
    if (s.empty())
        return false;
    for (char c : s)
        if (!isNameChar(c))
            return false;
    return true;
}

void appendQuoted(std::string& out, std::string_view s) {
    out += '"';
    for (char c : s) {
        unsigned char u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    out += '"';
}

void appendName(std::string& out, std::string_view s) {
    if (isPlainName(s))
        out += s;
    else
        appendQuoted(out, s);
}

void appendValueRef(std::string& out, const Value* v) {
    if (!v) {
        out += "none";
        return;
    }
    out += '%';
    appendName(out, v->name());
}

/// Shortest text that reads back to the same value, always recognisable as a float.
template <typename F> void appendFloat(std::string& out, F v) {
    if (std::isnan(v)) {
        out += "nan";
        return;
    }
    if (std::isinf(v)) {
        out += v < 0 ? "-inf" : "inf";
        return;
    }
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".eE") == std::string::npos)
        s += ".0";
    out += s;
}

void appendDim(std::string& out, const Dim& d) {
    if (d.isKnown()) {
        out += std::to_string(d.value);
        return;
    }
    const std::string& s = d.symbol;
    if (s.empty() || s == "?") {
        out += '?';
        return;
    }
    bool plain = isPlainName(s) && !(s[0] >= '0' && s[0] <= '9');
    if (plain)
        out += s;
    else
        appendQuoted(out, s);
}

/// Element i of a tensor in the inline data syntax.
void appendElement(std::string& out, const Tensor& t, int64_t i) {
    switch (t.dtype()) {
    case DType::F64: appendFloat(out, t.data<double>()[i]); return;
    case DType::F32: appendFloat(out, t.data<float>()[i]); return;
    case DType::F16:
    case DType::BF16: appendFloat(out, static_cast<float>(t.at(i))); return;
    case DType::I64: out += std::to_string(t.data<int64_t>()[i]); return;
    case DType::I32: out += std::to_string(t.data<int32_t>()[i]); return;
    case DType::I8: out += std::to_string(t.data<int8_t>()[i]); return;
    case DType::U8: out += std::to_string(t.data<uint8_t>()[i]); return;
    case DType::I16: out += std::to_string(t.data<int16_t>()[i]); return;
    case DType::U16: out += std::to_string(t.data<uint16_t>()[i]); return;
    case DType::U32: out += std::to_string(t.data<uint32_t>()[i]); return;
    case DType::U64: out += std::to_string(t.data<uint64_t>()[i]); return;
    case DType::I4: out += std::to_string(t.data<int8_t>()[i]); return;
    case DType::U4: out += std::to_string(t.data<uint8_t>()[i]); return;
    case DType::Bool: out += t.data<uint8_t>()[i] ? "true" : "false"; return;
    }
}

void appendData(std::string& out, const Tensor& t) {
    out += '[';
    for (int64_t i = 0; i < t.numel(); ++i) {
        if (i)
            out += ", ";
        appendElement(out, t, i);
    }
    out += ']';
}

void appendGraph(std::string& out, const Graph& graph, const std::string& indent);

/// `indent` is the indentation of the line the attribute sits on (a subgraph's body goes deeper).
void appendAttribute(std::string& out, const Attribute& a, const std::string& indent) {
    if (auto* i = std::get_if<int64_t>(&a)) {
        out += std::to_string(*i);
    } else if (auto* d = std::get_if<double>(&a)) {
        appendFloat(out, *d);
    } else if (auto* s = std::get_if<std::string>(&a)) {
        appendQuoted(out, *s);
    } else if (auto* is = std::get_if<std::vector<int64_t>>(&a)) {
        out += '[';
        for (size_t k = 0; k < is->size(); ++k)
            out += (k ? ", " : "") + std::to_string((*is)[k]);
        out += ']';
    } else if (auto* ds = std::get_if<std::vector<double>>(&a)) {
        out += ds->empty() ? "floats[" : "[";
        for (size_t k = 0; k < ds->size(); ++k) {
            if (k)
                out += ", ";
            appendFloat(out, (*ds)[k]);
        }
        out += ']';
    } else if (auto* ss = std::get_if<std::vector<std::string>>(&a)) {
        out += ss->empty() ? "strings[" : "[";
        for (size_t k = 0; k < ss->size(); ++k) {
            if (k)
                out += ", ";
            appendQuoted(out, (*ss)[k]);
        }
        out += ']';
    } else if (auto* t = std::get_if<Tensor>(&a)) {
        out += "tensor<" + printType(t->type()) + ">";
        appendData(out, *t);
    } else if (auto* g = std::get_if<std::shared_ptr<const Graph>>(&a)) {
        if (*g)
            appendGraph(out, **g, indent + "  ");
        else
            out += "graph none";
    }
}

std::string printNodeAt(const Node& node, const std::string& indent);

/// "graph @name(inputs) -> (outputs) {", one statement per line at `indent` + 2 spaces, and the
/// closing brace at `indent` (no newline after it).
void appendGraph(std::string& out, const Graph& graph, const std::string& indent) {
    out += "graph @";
    appendName(out, graph.name());
    out += '(';
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
        if (i)
            out += ", ";
        appendValueRef(out, graph.inputs()[i]);
        out += ": " + printType(graph.inputs()[i]->type());
    }
    out += ") -> (";
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
        if (i)
            out += ", ";
        appendValueRef(out, graph.outputs()[i]);
        out += ": " + printType(graph.outputs()[i]->type());
    }
    out += ") {\n";
    const std::string inner = indent + "  ";
    for (const Value* c : graph.constants()) {
        out += inner;
        appendValueRef(out, c);
        const Tensor& t = *c->constant();
        out += " = const " + printType(c->type()) + " ";
        if (t.numel() > kInlineConstantLimit) {
            out += "digest(\"" + t.digest() + "\")";
        } else {
            appendData(out, t);
        }
        out += '\n';
    }
    for (const Node* n : graph.nodeOrder())
        out += inner + printNodeAt(*n, inner) + "\n";
    out += inner + "return";
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
        out += i ? ", " : " ";
        appendValueRef(out, graph.outputs()[i]);
    }
    out += "\n" + indent + "}";
}

} // namespace

std::string printType(const TensorType& type) {
    std::string out(dtypeName(type.dtype));
    out += '[';
    for (size_t i = 0; i < type.shape.size(); ++i) {
        if (i)
            out += ',';
        appendDim(out, type.shape[i]);
    }
    out += ']';
    if (type.layout != LayoutKind::Any) {
        out += '@';
        out += layoutName(type.layout);
    }
    return out;
}

std::string printNode(const Node& node) { return printNodeAt(node, "  "); }

std::vector<std::pair<std::string_view, Attribute>> fieldAttributes(const Node& node) {
    std::vector<std::pair<std::string_view, Attribute>> fields;
    // In name order: body < precision < view.
    if (const FusedBody* body = node.body())
        fields.emplace_back(kBodyFieldName, bodyText(*body));
    if (node.precision() != Precision::Unset)
        fields.emplace_back(kPrecisionFieldName, std::string(precisionName(node.precision())));
    if (node.isView())
        fields.emplace_back(kViewFieldName, int64_t{1});
    return fields;
}

namespace {

std::string printNodeAt(const Node& node, const std::string& indent) {
    std::string out;
    for (size_t i = 0; i < node.numOutputs(); ++i) {
        if (i)
            out += ", ";
        appendValueRef(out, node.output(i));
        out += ": " + printType(node.output(i)->type());
    }
    out += " = " + qualifiedOpName(node.kind()) + "(";
    for (size_t i = 0; i < node.numInputs(); ++i) {
        if (i)
            out += ", ";
        appendValueRef(out, node.input(i));
    }
    out += ')';
    bool first = true;
    forEachPrintedAttribute(node, [&](std::string_view name, const Attribute& value) {
        out += first ? " {" : ", ";
        first = false;
        appendName(out, name);
        out += " = ";
        appendAttribute(out, value, indent);
    });
    if (!first)
        out += '}';
    out += " @";
    appendName(out, node.name());
    const Provenance& p = node.provenance();
    if (!p.origins.empty()) {
        out += " origins=[";
        for (size_t i = 0; i < p.origins.size(); ++i) {
            if (i)
                out += ", ";
            appendQuoted(out, p.origins[i]);
        }
        out += ']';
    }
    if (!p.createdBy.empty()) {
        out += " by=";
        appendQuoted(out, p.createdBy);
    }
    return out;
}

} // namespace

std::string printGraph(const Graph& graph) {
    std::string out;
    appendGraph(out, graph, "");
    return out + "\n";
}

} // namespace sextant::ir
