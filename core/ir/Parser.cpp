#include "Parser.h"

#include "Printer.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace sextant::ir {

namespace {

bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }

/// The values an integer type narrower than 64 bits holds.
template <typename T> std::pair<int64_t, int64_t> rangeOf() {
    return {static_cast<int64_t>(std::numeric_limits<T>::min()), static_cast<int64_t>(std::numeric_limits<T>::max())};
}
std::pair<int64_t, int64_t> integerRange(DType t) {
    switch (t) {
    case DType::I32: return rangeOf<int32_t>();
    case DType::I16: return rangeOf<int16_t>();
    case DType::U16: return rangeOf<uint16_t>();
    case DType::U32: return rangeOf<uint32_t>();
    case DType::I8: return rangeOf<int8_t>();
    case DType::I4: return {-8, 7};
    case DType::U4: return {0, 15};
    default: return rangeOf<uint8_t>();
    }
}

std::optional<LayoutKind> parseLayout(std::string_view s) {
    for (LayoutKind l : {LayoutKind::NCHW, LayoutKind::NHWC, LayoutKind::NC1HWC0})
        if (layoutName(l) == s)
            return l;
    return std::nullopt;
}

class TextParser {
public:
    TextParser(std::string_view text, const std::map<std::string, Tensor>* weights)
        : m_text(text), m_weights(weights) {}

    Expected<std::unique_ptr<Graph>> parse() {
        SX_ASSIGN(std::unique_ptr<Graph> graph, parseGraphText());
        skipSpace();
        if (!atEnd())
            return error("expected end of text after the graph");
        return graph;
    }

private:
    /// "graph @name(...) -> (...) { ... return ... }": the top-level graph or a subgraph
    /// attribute. A subgraph sees only its own values (isolated from above).
    Expected<std::unique_ptr<Graph>> parseGraphText() {
        if (++m_depth > kMaxDepth)
            return error("subgraphs nested more than " + std::to_string(kMaxDepth) + " deep");
        std::unique_ptr<Graph> outer = std::move(m_graph);
        auto g = parseGraphBody();
        m_graph = std::move(outer);
        --m_depth;
        return g;
    }

    Expected<std::unique_ptr<Graph>> parseGraphBody() {
        SX_TRY(expectWord("graph"));
        SX_TRY(expect('@'));
        SX_ASSIGN(std::string name, parseName("a graph name"));
        m_graph = std::make_unique<Graph>(name);
        SX_TRY(expect('('));
        if (!consume(')')) {
            do {
                size_t at = position();
                SX_TRY(expect('%'));
                SX_ASSIGN(std::string in, parseName("an input name"));
                SX_TRY(expect(':'));
                SX_ASSIGN(TensorType type, parseType());
                if (!m_graph->addInput(in, type).ok())
                    return errorAt(at, "duplicate value name '" + in + "'");
            } while (consume(','));
            SX_TRY(expect(')'));
        }
        SX_TRY(expectText("->"));
        SX_TRY(expect('('));
        std::vector<std::pair<std::string, TensorType>> outputs;
        std::vector<size_t> outputPos;
        if (!consume(')')) {
            do {
                outputPos.push_back(position());
                SX_TRY(expect('%'));
                SX_ASSIGN(std::string out, parseName("an output name"));
                SX_TRY(expect(':'));
                SX_ASSIGN(TensorType type, parseType());
                outputs.emplace_back(out, type);
            } while (consume(','));
            SX_TRY(expect(')'));
        }
        SX_TRY(expect('{'));
        while (true) {
            skipSpace();
            if (lookingAtWord("return"))
                break;
            if (atEnd())
                return error("expected a statement or 'return'");
            SX_TRY(parseStatement());
        }
        SX_TRY(expectWord("return"));
        std::vector<Value*> results;
        skipSpace();
        if (peekChar() != '}') {
            do {
                size_t at = position();
                SX_ASSIGN(Value* v, parseValueRef(false));
                if (results.size() >= outputs.size() || outputs[results.size()].first != v->name())
                    return errorAt(at, "return value '" + v->name() +
                                           "' does not match the outputs in the graph header");
                results.push_back(v);
            } while (consume(','));
        }
        if (results.size() != outputs.size())
            return error("return lists " + std::to_string(results.size()) +
                         " values but the graph header declares " + std::to_string(outputs.size()));
        for (size_t i = 0; i < results.size(); ++i)
            if (!(results[i]->type() == outputs[i].second))
                return errorAt(outputPos[i], "output '" + outputs[i].first + "' is declared " +
                                                 printType(outputs[i].second) + " but defined as " +
                                                 printType(results[i]->type()));
        SX_TRY(expect('}'));
        m_graph->setOutputs(std::move(results));
        return std::move(m_graph);
    }

    // ---- position and errors

    size_t position() {
        skipSpace();
        return m_pos;
    }
    bool atEnd() const { return m_pos >= m_text.size(); }
    char peekChar() const { return atEnd() ? '\0' : m_text[m_pos]; }

    Error errorAt(size_t pos, const std::string& what) const {
        int line = 1, col = 1;
        for (size_t i = 0; i < pos && i < m_text.size(); ++i) {
            if (m_text[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        return makeError(ErrorKind::Parse,
                         "line " + std::to_string(line) + ":" + std::to_string(col) + ": " + what);
    }
    Error error(const std::string& what) const { return errorAt(m_pos, what); }

    std::string found() const {
        if (atEnd())
            return "end of text";
        size_t end = m_pos;
        while (end < m_text.size() && end - m_pos < 12 && m_text[end] != '\n')
            ++end;
        return "'" + std::string(m_text.substr(m_pos, end - m_pos)) + "'";
    }

    void skipSpace() {
        while (!atEnd()) {
            char c = m_text[m_pos];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                ++m_pos;
            } else if (c == '/' && m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '/') {
                while (!atEnd() && m_text[m_pos] != '\n')
                    ++m_pos;
            } else {
                break;
            }
        }
    }

    bool consume(char c) {
        skipSpace();
        if (peekChar() != c)
            return false;
        ++m_pos;
        return true;
    }
    Status expect(char c) {
        if (consume(c))
            return {};
        return error(std::string("expected '") + c + "', got " + found());
    }
    Status expectText(std::string_view s) {
        skipSpace();
        if (m_text.substr(m_pos, s.size()) == s) {
            m_pos += s.size();
            return {};
        }
        return error("expected '" + std::string(s) + "', got " + found());
    }
    bool lookingAtWord(std::string_view w) {
        skipSpace();
        if (m_text.substr(m_pos, w.size()) != w)
            return false;
        size_t after = m_pos + w.size();
        return after >= m_text.size() || !isNameChar(m_text[after]);
    }
    bool consumeWord(std::string_view w) {
        if (!lookingAtWord(w))
            return false;
        m_pos += w.size();
        return true;
    }
    Status expectWord(std::string_view w) {
        if (consumeWord(w))
            return {};
        return error("expected '" + std::string(w) + "', got " + found());
    }

    // ---- lexical pieces

    Expected<std::string> parseQuoted() {
        skipSpace();
        if (peekChar() != '"')
            return error("expected a quoted string, got " + found());
        ++m_pos;
        std::string out;
        while (true) {
            if (atEnd() || m_text[m_pos] == '\n')
                return error("unterminated string");
            char c = m_text[m_pos++];
            if (c == '"')
                return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (atEnd())
                return error("unterminated string");
            char e = m_text[m_pos++];
            if (e == 'n') {
                out += '\n';
            } else if (e == 't') {
                out += '\t';
            } else if (e == '"' || e == '\\') {
                out += e;
            } else if (e == 'x') {
                if (m_pos + 2 > m_text.size())
                    return error("bad \\x escape");
                unsigned v = 0;
                auto r = std::from_chars(m_text.data() + m_pos, m_text.data() + m_pos + 2, v, 16);
                if (r.ptr != m_text.data() + m_pos + 2)
                    return error("bad \\x escape");
                out += static_cast<char>(v);
                m_pos += 2;
            } else {
                return errorAt(m_pos - 2, std::string("unknown escape '\\") + e + "'");
            }
        }
    }

    /// A plain [A-Za-z0-9_.]+ name or a quoted one.
    Expected<std::string> parseName(const char* what) {
        skipSpace();
        if (peekChar() == '"')
            return parseQuoted();
        size_t start = m_pos;
        while (!atEnd() && isNameChar(m_text[m_pos]))
            ++m_pos;
        if (m_pos == start)
            return error(std::string("expected ") + what + ", got " + found());
        return std::string(m_text.substr(start, m_pos - start));
    }

    /// A number as printed: optional sign, digits, '.', exponent, or inf / nan.
    Expected<std::string> parseNumberToken() {
        skipSpace();
        size_t start = m_pos;
        if (peekChar() == '-' || peekChar() == '+')
            ++m_pos;
        while (!atEnd()) {
            char c = m_text[m_pos];
            if (isNameChar(c)) {
                ++m_pos;
            } else if ((c == '-' || c == '+') && m_pos > start &&
                       (m_text[m_pos - 1] == 'e' || m_text[m_pos - 1] == 'E')) {
                ++m_pos;
            } else {
                break;
            }
        }
        std::string tok(m_text.substr(start, m_pos - start));
        if (tok.empty() || tok == "-" || tok == "+") {
            m_pos = start;
            return error("expected a number, got " + found());
        }
        return tok;
    }

    static bool looksFloat(const std::string& tok) {
        return tok.find_first_of(".eEin") != std::string::npos;
    }

    template <typename F> Expected<F> toFloat(const std::string& tok, size_t at) {
        std::string_view s = tok;
        bool neg = false;
        if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
            neg = s[0] == '-';
            s.remove_prefix(1);
        }
        F v{};
        if (s == "inf") {
            v = std::numeric_limits<F>::infinity();
        } else if (s == "nan") {
            v = std::numeric_limits<F>::quiet_NaN();
        } else {
            auto r = std::from_chars(s.data(), s.data() + s.size(), v);
            if (r.ec != std::errc() || r.ptr != s.data() + s.size())
                return errorAt(at, "bad number '" + tok + "'");
        }
        return neg ? -v : v;
    }

    Expected<int64_t> toInt(const std::string& tok, size_t at) {
        int64_t v = 0;
        auto r = std::from_chars(tok.data(), tok.data() + tok.size(), v);
        if (r.ec != std::errc() || r.ptr != tok.data() + tok.size())
            return errorAt(at, "expected an integer, got '" + tok + "'");
        return v;
    }

    // ---- types and data

    Expected<Dim> parseDim() {
        skipSpace();
        size_t at = m_pos;
        char c = peekChar();
        if (c == '?') {
            ++m_pos;
            return Dim::symbolic("?");
        }
        if (isDigit(c)) {
            SX_ASSIGN(std::string tok, parseNumberToken());
            SX_ASSIGN(int64_t v, toInt(tok, at));
            return Dim::known(v);
        }
        if (c == '"' || isNameChar(c)) {
            SX_ASSIGN(std::string s, parseName("a dimension"));
            return Dim::symbolic(s);
        }
        return error("expected a dimension (number, symbol or '?'), got " + found());
    }

    Expected<TensorType> parseType() {
        skipSpace();
        size_t at = m_pos;
        SX_ASSIGN(std::string dt, parseName("a dtype"));
        auto dtype = parseDType(dt);
        if (!dtype)
            return errorAt(at, "unknown dtype '" + dt + "'");
        TensorType t;
        t.dtype = *dtype;
        SX_TRY(expect('['));
        if (!consume(']')) {
            do {
                SX_ASSIGN(Dim d, parseDim());
                t.shape.push_back(std::move(d));
            } while (consume(','));
            SX_TRY(expect(']'));
        }
        if (peekChar() == '@') { // no space: a layout, not a node name
            ++m_pos;
            size_t lat = m_pos;
            SX_ASSIGN(std::string l, parseName("a layout"));
            auto layout = parseLayout(l);
            if (!layout)
                return errorAt(lat, "unknown layout '" + l + "'");
            t.layout = *layout;
        }
        return t;
    }

    /// Inline tensor data "[a, b, ...]" for a static type.
    Expected<Tensor> parseData(const TensorType& type, size_t typeAt) {
        if (!type.isStatic())
            return errorAt(typeAt, "constant type " + printType(type) + " must have known dims");
        Tensor t(type.dtype, type.dims());
        SX_TRY(expect('['));
        int64_t i = 0;
        skipSpace();
        if (peekChar() != ']') {
            do {
                skipSpace();
                size_t at = m_pos;
                if (i >= t.numel())
                    return error("too many elements for " + printType(type));
                if (type.dtype == DType::Bool) {
                    if (consumeWord("true"))
                        t.set(i, 1.0);
                    else if (consumeWord("false"))
                        t.set(i, 0.0);
                    else
                        return error("expected 'true' or 'false', got " + found());
                    ++i;
                    continue;
                }
                SX_ASSIGN(std::string tok, parseNumberToken());
                switch (type.dtype) {
                case DType::F64: {
                    SX_ASSIGN(double v, toFloat<double>(tok, at));
                    t.mutableData<double>()[i] = v;
                    break;
                }
                case DType::F32: {
                    SX_ASSIGN(float v, toFloat<float>(tok, at));
                    t.mutableData<float>()[i] = v;
                    break;
                }
                case DType::F16:
                case DType::BF16: {
                    SX_ASSIGN(float v, toFloat<float>(tok, at));
                    t.set(i, v);
                    break;
                }
                case DType::I64: {
                    SX_ASSIGN(int64_t v, toInt(tok, at));
                    t.mutableData<int64_t>()[i] = v;
                    break;
                }
                case DType::U64: {
                    // Parsed as i64: values above 2^63 - 1 do not read back (none in practice).
                    SX_ASSIGN(int64_t v, toInt(tok, at));
                    if (v < 0)
                        return errorAt(at, "value " + tok + " does not fit u64");
                    t.mutableData<uint64_t>()[i] = static_cast<uint64_t>(v);
                    break;
                }
                case DType::I32:
                case DType::I8:
                case DType::U8:
                case DType::I16:
                case DType::U16:
                case DType::U32:
                case DType::I4:
                case DType::U4: {
                    SX_ASSIGN(int64_t v, toInt(tok, at));
                    const auto [lo, hi] = integerRange(type.dtype);
                    if (v < lo || v > hi)
                        return errorAt(at, "value " + tok + " does not fit " +
                                               std::string(dtypeName(type.dtype)));
                    t.set(i, static_cast<double>(v));
                    break;
                }
                case DType::Bool: break;
                }
                ++i;
            } while (consume(','));
        }
        if (i != t.numel())
            return error("expected " + std::to_string(t.numel()) + " elements for " + printType(type) +
                         ", got " + std::to_string(i));
        SX_TRY(expect(']'));
        return t;
    }

    // ---- attributes

    Expected<Attribute> parseAttribute() {
        skipSpace();
        size_t at = m_pos;
        char c = peekChar();
        if (c == '"') {
            SX_ASSIGN(std::string s, parseQuoted());
            return Attribute{s};
        }
        if (consumeWord("floats")) {
            SX_TRY(expect('['));
            SX_TRY(expect(']'));
            return Attribute{std::vector<double>{}};
        }
        if (consumeWord("strings")) {
            SX_TRY(expect('['));
            SX_TRY(expect(']'));
            return Attribute{std::vector<std::string>{}};
        }
        if (consumeWord("tensor")) {
            SX_TRY(expect('<'));
            size_t typeAt = position();
            SX_ASSIGN(TensorType type, parseType());
            SX_TRY(expect('>'));
            SX_ASSIGN(Tensor t, parseData(type, typeAt));
            return Attribute{t};
        }
        if (lookingAtWord("graph")) {
            SX_ASSIGN(std::unique_ptr<Graph> g, parseGraphText());
            return Attribute{std::shared_ptr<const Graph>(std::move(g))};
        }
        if (c == '[') {
            ++m_pos;
            skipSpace();
            if (consume(']'))
                return Attribute{std::vector<int64_t>{}};
            if (peekChar() == '"') {
                std::vector<std::string> v;
                do {
                    SX_ASSIGN(std::string s, parseQuoted());
                    v.push_back(std::move(s));
                } while (consume(','));
                SX_TRY(expect(']'));
                return Attribute{v};
            }
            std::vector<std::pair<std::string, size_t>> toks;
            bool floats = false;
            do {
                size_t tat = position();
                SX_ASSIGN(std::string tok, parseNumberToken());
                floats = floats || looksFloat(tok);
                toks.emplace_back(std::move(tok), tat);
            } while (consume(','));
            SX_TRY(expect(']'));
            if (floats) {
                std::vector<double> v;
                for (auto& [tok, tat] : toks) {
                    SX_ASSIGN(double d, toFloat<double>(tok, tat));
                    v.push_back(d);
                }
                return Attribute{v};
            }
            std::vector<int64_t> v;
            for (auto& [tok, tat] : toks) {
                SX_ASSIGN(int64_t x, toInt(tok, tat));
                v.push_back(x);
            }
            return Attribute{v};
        }
        SX_ASSIGN(std::string tok, parseNumberToken());
        if (looksFloat(tok)) {
            SX_ASSIGN(double d, toFloat<double>(tok, at));
            return Attribute{d};
        }
        SX_ASSIGN(int64_t x, toInt(tok, at));
        return Attribute{x};
    }

    // ---- statements

    Expected<Value*> parseValueRef(bool allowNone) {
        skipSpace();
        size_t at = m_pos;
        if (allowNone && consumeWord("none"))
            return static_cast<Value*>(nullptr);
        if (!consume('%'))
            return error(std::string("expected a value (%name") + (allowNone ? " or none" : "") +
                         "), got " + found());
        SX_ASSIGN(std::string name, parseName("a value name"));
        Value* v = m_graph->findValue(name);
        if (!v)
            return errorAt(at, "value '" + name + "' is used before it is defined");
        return v;
    }

    /// A node's typed fields, read from the attribute syntax the printer writes them in.
    struct NodeFields {
        Precision precision = Precision::Unset;
        bool view = false;
        std::shared_ptr<const FusedBody> body;
        bool given(const std::string& name) const {
            return (name == kPrecisionFieldName && precision != Precision::Unset) ||
                   (name == kViewFieldName && view) || (name == kBodyFieldName && body);
        }
    };

    Status parseStatement() {
        size_t at = position();
        SX_TRY(expect('%'));
        SX_ASSIGN(std::string first, parseName("a value name"));
        if (consume('='))
            return parseConstant(first, at);
        // A node: %a: T, %b: T = Op(...) {...} @name origins=[...] by="..."
        std::vector<std::string> outNames{first};
        std::vector<TensorType> outTypes;
        SX_TRY(parseOutputs(outNames, outTypes));
        SX_TRY(expect('='));
        SX_ASSIGN(OpKind kind, parseOpKind());
        SX_ASSIGN(std::vector<Value*> inputs, parseOperands());
        NodeFields fields;
        SX_ASSIGN(AttributeMap attrs, parseAttributes(kind, fields));
        SX_TRY(expect('@'));
        size_t nameAt = position();
        SX_ASSIGN(std::string nodeName, parseName("a node name"));
        SX_ASSIGN(Provenance prov, parseProvenance());
        auto node = m_graph->addNode(kind, nodeName, std::move(inputs), outNames, std::move(attrs));
        if (!node.ok())
            return errorAt(nameAt, node.error().message);
        for (size_t i = 0; i < outTypes.size(); ++i)
            (*node)->output(i)->setType(outTypes[i]);
        (*node)->mutableProvenance() = std::move(prov);
        if (fields.precision != Precision::Unset)
            (*node)->setPrecision(fields.precision);
        if (fields.view)
            (*node)->setView(true);
        if (fields.body)
            (*node)->setBody(std::move(fields.body));
        return {};
    }

    /// The type of the first output (its name already read), then ", %name: type" for each
    /// further one.
    Status parseOutputs(std::vector<std::string>& outNames, std::vector<TensorType>& outTypes) {
        SX_TRY(expect(':'));
        SX_ASSIGN(TensorType t0, parseType());
        outTypes.push_back(std::move(t0));
        while (consume(',')) {
            SX_TRY(expect('%'));
            SX_ASSIGN(std::string name, parseName("a value name"));
            SX_TRY(expect(':'));
            SX_ASSIGN(TensorType t, parseType());
            outNames.push_back(std::move(name));
            outTypes.push_back(std::move(t));
        }
        return {};
    }

    /// An op name, bare or "domain.Op", that the op table has.
    Expected<OpKind> parseOpKind() {
        size_t opAt = position();
        SX_ASSIGN(std::string opName, parseName("an op name"));
        std::optional<OpKind> kind;
        size_t dot = opName.rfind('.');
        if (dot == std::string::npos)
            kind = findOp("", opName);
        else
            kind = findOp(std::string_view(opName).substr(0, dot),
                          std::string_view(opName).substr(dot + 1));
        if (!kind)
            return errorAt(opAt, "unknown op '" + opName + "'");
        return *kind;
    }

    /// "(%a, none, ...)": the operands, nullptr for an omitted one.
    Expected<std::vector<Value*>> parseOperands() {
        SX_TRY(expect('('));
        std::vector<Value*> inputs;
        if (!consume(')')) {
            do {
                SX_ASSIGN(Value* v, parseValueRef(true));
                inputs.push_back(v);
            } while (consume(','));
            SX_TRY(expect(')'));
        }
        return inputs;
    }

    /// An optional "{name = value, ...}", each name once; the names that are typed fields of a
    /// `kind` node (precision, view, body) go to `fields`, the rest are returned.
    Expected<AttributeMap> parseAttributes(OpKind kind, NodeFields& fields) {
        AttributeMap attrs;
        if (consume('{')) {
            do {
                size_t nameAt = position();
                SX_ASSIGN(std::string name, parseName("an attribute name"));
                SX_TRY(expect('='));
                SX_ASSIGN(Attribute a, parseAttribute());
                if (attrs.count(name) || fields.given(name))
                    return errorAt(nameAt, "attribute '" + name + "' given twice");
                SX_ASSIGN(bool isField, takeField(kind, name, a, nameAt, fields));
                if (!isField)
                    attrs.emplace(std::move(name), std::move(a));
            } while (consume(','));
            SX_TRY(expect('}'));
        }
        return attrs;
    }

    /// An optional origins=["...", ...] and an optional by="...".
    Expected<Provenance> parseProvenance() {
        Provenance prov;
        if (consumeWord("origins")) {
            SX_TRY(expect('='));
            SX_TRY(expect('['));
            if (!consume(']')) {
                do {
                    SX_ASSIGN(std::string o, parseQuoted());
                    prov.origins.push_back(std::move(o));
                } while (consume(','));
                SX_TRY(expect(']'));
            }
        }
        if (consumeWord("by")) {
            SX_TRY(expect('='));
            SX_ASSIGN(prov.createdBy, parseQuoted());
        }
        return prov;
    }


    /// If `name = a` spells one of the node's typed fields (see Printer.h), stores it in `fields`
    /// and returns true; false for an ordinary attribute. `body` is a field only on an
    /// ElementwiseGroup (elsewhere it may be an ordinary attribute).
    Expected<bool> takeField(OpKind kind, const std::string& name, const Attribute& a, size_t at,
                             NodeFields& fields) {
        if (name == kPrecisionFieldName) {
            const auto* text = std::get_if<std::string>(&a);
            const std::optional<Precision> p = text ? parsePrecision(*text) : std::nullopt;
            if (!p)
                return errorAt(at, "precision must be \"f32\", \"f16\" or \"f16-acc-f32\"" +
                                       (text ? " (got \"" + *text + "\")" : std::string()));
            fields.precision = *p;
            return true;
        }
        if (name == kViewFieldName) {
            const auto* v = std::get_if<int64_t>(&a);
            if (!v || *v != 1)
                return errorAt(at, "view marks a view and must be 1");
            fields.view = true;
            return true;
        }
        if (name == kBodyFieldName && kind == OpKind::ElementwiseGroup) {
            const auto* lines = std::get_if<std::vector<std::string>>(&a);
            if (!lines)
                return errorAt(at, "body must be a list of strings");
            Expected<FusedBody> body = parseBody(*lines);
            if (!body.ok())
                return errorAt(at, body.error().message);
            fields.body = std::make_shared<const FusedBody>(std::move(*body));
            return true;
        }
        return false;
    }

    Status parseConstant(const std::string& name, size_t at) {
        SX_TRY(expectWord("const"));
        size_t typeAt = position();
        SX_ASSIGN(TensorType type, parseType());
        Tensor data;
        if (consumeWord("digest")) {
            SX_TRY(expect('('));
            size_t digestAt = position();
            SX_ASSIGN(std::string digest, parseQuoted());
            SX_TRY(expect(')'));
            const Tensor* w = nullptr;
            if (m_weights) {
                auto it = m_weights->find(name);
                if (it != m_weights->end())
                    w = &it->second;
            }
            if (!w)
                return errorAt(at, "constant '" + name +
                                       "' is printed as a digest and no weight of that name was given");
            if (!type.isStatic() || w->dtype() != type.dtype || w->shape() != type.dims())
                return errorAt(typeAt, "weight '" + name + "' is " + printType(w->type()) +
                                           " but the text declares " + printType(type));
            if (w->digest() != digest)
                return errorAt(digestAt, "weight '" + name + "' has digest " + w->digest() +
                                             ", the text expects " + digest);
            data = *w;
        } else {
            SX_ASSIGN(data, parseData(type, typeAt));
        }
        auto v = m_graph->addConstant(name, std::move(data));
        if (!v.ok())
            return errorAt(at, v.error().message);
        (*v)->setType(type);
        return {};
    }

    static constexpr int kMaxDepth = 64;
    std::string_view m_text;
    size_t m_pos = 0;
    int m_depth = 0;
    const std::map<std::string, Tensor>* m_weights;
    std::unique_ptr<Graph> m_graph;
};

} // namespace

Expected<std::unique_ptr<Graph>> parseGraph(std::string_view text,
                                            const std::map<std::string, Tensor>* weights) {
    return TextParser(text, weights).parse();
}

} // namespace sextant::ir
