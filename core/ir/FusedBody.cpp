#include "FusedBody.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

namespace sextant::ir {

namespace {

bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool sameStep(const BodyStep& a, const BodyStep& b) {
    if (a.op != b.op || a.operands != b.operands || a.attrs.size() != b.attrs.size())
        return false;
    for (size_t i = 0; i < a.attrs.size(); ++i)
        if (a.attrs[i].first != b.attrs[i].first || !sameBits(a.attrs[i].second, b.attrs[i].second))
            return false;
    return true;
}

std::string formatDouble(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
}

std::string dangling(size_t step, const std::string& operand) {
    return "body step " + std::to_string(step) + " refers to '" + operand +
           "', which is neither a group input nor an earlier step";
}

/// Parses `iN` / `tN` / `-` of step `index`.
Expected<BodyOperand> parseOperand(const std::string& a, size_t index) {
    if (a == "-")
        return BodyOperand::omitted();
    char* stop = nullptr;
    const long idx = a.size() > 1 ? std::strtol(a.c_str() + 1, &stop, 10) : -1;
    const bool ok = a.size() > 1 && *stop == '\0' && idx >= 0 && std::isdigit(static_cast<unsigned char>(a[1]));
    if (ok && a[0] == 'i')
        return BodyOperand::input(static_cast<uint32_t>(idx));
    if (ok && a[0] == 't' && static_cast<size_t>(idx) < index)
        return BodyOperand::step(static_cast<uint32_t>(idx));
    return makeError(ErrorKind::Parse, dangling(index, a));
}

/// Parses one entry: `Op(a,b) key=value ...` with float values.
Expected<BodyStep> parseStep(const std::string& text, size_t index) {
    auto bad = [&](const std::string& why) {
        return makeError(ErrorKind::Parse,
                         "body step " + std::to_string(index) + " '" + text + "': " + why);
    };
    const size_t open = text.find('('), close = text.find(')');
    if (open == std::string::npos || close == std::string::npos || close < open)
        return bad("expected Op(args)");
    BodyStep s;
    std::optional<OpKind> kind = findOp("", text.substr(0, open));
    if (!kind || !groupStepOp(*kind))
        return bad("not an op a group can hold");
    s.op = *kind;
    const std::string args = text.substr(open + 1, close - open - 1);
    size_t start = 0;
    while (start <= args.size()) {
        const size_t comma = args.find(',', start);
        const std::string a = args.substr(start, comma == std::string::npos ? comma : comma - start);
        if (a.empty())
            return bad("empty argument");
        SX_ASSIGN(BodyOperand operand, parseOperand(a, index));
        s.operands.push_back(operand);
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    std::map<std::string, double> attrs;
    size_t pos = close + 1;
    while (pos < text.size()) {
        if (text[pos] == ' ') {
            ++pos;
            continue;
        }
        const size_t end = text.find(' ', pos);
        const std::string kv = text.substr(pos, end == std::string::npos ? end : end - pos);
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
            return bad("expected key=value, got '" + kv + "'");
        char* stop = nullptr;
        const std::string value = kv.substr(eq + 1);
        const double d = std::strtod(value.c_str(), &stop);
        if (value.empty() || *stop != '\0')
            return bad("attribute value '" + value + "' is not a number");
        attrs[kv.substr(0, eq)] = d;
        pos = end == std::string::npos ? text.size() : end;
    }
    s.attrs.assign(attrs.begin(), attrs.end());
    return s;
}

} // namespace

bool sameBody(const FusedBody* a, const FusedBody* b) {
    if (a == b)
        return true;
    if (!a || !b || a->steps.size() != b->steps.size())
        return false;
    for (size_t i = 0; i < a->steps.size(); ++i)
        if (!sameStep(a->steps[i], b->steps[i]))
            return false;
    return true;
}

std::string bodyStepText(const BodyStep& step) {
    std::string text = std::string(opInfo(step.op).name) + "(";
    for (size_t a = 0; a < step.operands.size(); ++a) {
        if (a)
            text += ',';
        const BodyOperand& o = step.operands[a];
        switch (o.kind) {
        case BodyOperand::Kind::Omitted: text += '-'; break;
        case BodyOperand::Kind::Input: text += 'i' + std::to_string(o.index); break;
        case BodyOperand::Kind::Step: text += 't' + std::to_string(o.index); break;
        }
    }
    text += ')';
    for (const auto& [key, value] : step.attrs)
        text += " " + key + "=" + formatDouble(value);
    return text;
}

std::vector<std::string> bodyText(const FusedBody& body) {
    std::vector<std::string> lines;
    lines.reserve(body.steps.size());
    for (const BodyStep& s : body.steps)
        lines.push_back(bodyStepText(s));
    return lines;
}

Expected<FusedBody> parseBody(const std::vector<std::string>& lines) {
    FusedBody body;
    body.steps.reserve(lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
        SX_ASSIGN(BodyStep s, parseStep(lines[i], i));
        body.steps.push_back(std::move(s));
    }
    return body;
}

Status checkBody(const FusedBody& body, size_t numInputs) {
    if (body.steps.empty())
        return makeError(ErrorKind::Invalid, "body must list at least one step");
    for (size_t i = 0; i < body.steps.size(); ++i) {
        if (!groupStepOp(body.steps[i].op))
            return makeError(ErrorKind::Invalid, "body step " + std::to_string(i) + " '" +
                                                     bodyStepText(body.steps[i]) + "': not an op a group can hold");
        for (const BodyOperand& o : body.steps[i].operands) {
            const bool bad = o.kind == BodyOperand::Kind::Input ? o.index >= numInputs
                             : o.kind == BodyOperand::Kind::Step ? o.index >= i
                                                                 : false;
            if (bad)
                return makeError(ErrorKind::Invalid,
                                 dangling(i, (o.kind == BodyOperand::Kind::Input ? "i" : "t") +
                                                 std::to_string(o.index)));
        }
    }
    return {};
}

bool pooledInput(const FusedBody& body, uint32_t input) {
    for (const BodyStep& step : body.steps)
        if (opInfo(step.op).fusable == Fusable::Pooled)
            for (const BodyOperand& o : step.operands)
                if (o.kind == BodyOperand::Kind::Input && o.index == input)
                    return true;
    return false;
}

std::vector<char> prologueSteps(const FusedBody& body, const std::vector<int64_t>& stepNumel, int64_t outNumel) {
    std::vector<char> prologue(body.steps.size(), 0);
    for (size_t i = 0; i < body.steps.size() && i < stepNumel.size(); ++i) {
        const BodyStep& step = body.steps[i];
        if (opInfo(step.op).fusable == Fusable::Pooled) {
            prologue[i] = 1;
            continue;
        }
        bool readsPrologue = false;
        for (const BodyOperand& o : step.operands)
            readsPrologue |= o.kind == BodyOperand::Kind::Step && o.index < i && prologue[o.index];
        prologue[i] = readsPrologue && stepNumel[i] < outNumel;
    }
    return prologue;
}

} // namespace sextant::ir
