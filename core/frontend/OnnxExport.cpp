#include "OnnxExport.h"

#include "OnnxOpVersions.h"
#include "OnnxTensor.h"

#include "core/ir/FusedBody.h"
#include "core/ir/Precision.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <set>
#include <unistd.h>
#include <unordered_map>
#include <utility>

namespace sextant::frontend {

using ir::OpKind;

Expected<std::map<std::string, int64_t>> modelOpsetImports(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return makeError(ErrorKind::Io, "cannot open model '" + path + "': " + std::strerror(errno));
    std::map<std::string, int64_t> opsets;
    bool ok = true;
    {
        google::protobuf::io::FileInputStream raw(fd);
        google::protobuf::io::CodedInputStream in(&raw);
        in.SetTotalBytesLimit(std::numeric_limits<int>::max());
        using Wire = google::protobuf::internal::WireFormatLite;
        // ModelProto field 8 is opset_import; everything else (the graph above all) is skipped.
        while (const uint32_t tag = in.ReadTag()) {
            if (Wire::GetTagFieldNumber(tag) == 8 && Wire::GetTagWireType(tag) == Wire::WIRETYPE_LENGTH_DELIMITED) {
                uint32_t length = 0;
                onnx::OperatorSetIdProto op;
                if (!in.ReadVarint32(&length)) {
                    ok = false;
                    break;
                }
                const auto limit = in.PushLimit(static_cast<int>(length));
                if (!op.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
                    ok = false;
                    break;
                }
                in.PopLimit(limit);
                std::string domain = op.domain() == "ai.onnx" ? std::string() : op.domain();
                opsets[domain] = op.version();
            } else if (!Wire::SkipField(&in, tag)) {
                ok = false;
                break;
            }
        }
        ok = ok && in.ConsumedEntireMessage();
    }
    ::close(fd);
    if (!ok)
        return makeError(ErrorKind::Parse, "cannot read the opset imports of model '" + path + "': truncated or not a protobuf");
    return opsets;
}

namespace {

/// The lowest IR version that may carry `opset` (ONNX's versioning table), never below 4 (from
/// which initializers need not be graph inputs).
int64_t irVersionFor(int64_t opset) {
    // {first opset, IR version}, newest first.
    static constexpr std::pair<int64_t, int64_t> kTable[] = {{23, 11}, {21, 10}, {19, 9}, {15, 8},
                                                             {12, 7},  {11, 6},  {10, 5}};
    for (const auto& [first, ir] : kTable)
        if (opset >= first)
            return ir;
    return 4;
}

void setType(onnx::ValueInfoProto& info, const ir::TensorType& t) {
    onnx::TypeProto_Tensor* tensor = info.mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(dtypeToOnnx(t.dtype));
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    for (const ir::Dim& d : t.shape) {
        onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
        if (d.isKnown())
            dim->set_dim_value(d.value);
        else if (!d.symbol.empty() && d.symbol.str() != "?")
            dim->set_dim_param(d.symbol.str());
    }
    if (t.layout != ir::LayoutKind::Any)
        info.set_doc_string("layout: " + std::string(ir::layoutName(t.layout)));
}

/// Attributes Sextant keeps on standard ops for itself; neither form writes them.
bool internalAttribute(const std::string& name) {
    return name == "_opset" || name == "num_captured";
}

/// Attributes of Sextant's on standard ops that the as-is form shows and the standard form
/// leaves out: the layout pass's mark (a string; LSTM's own "layout" is an int) and the
/// accuracy-trading Softmax's.
bool sextantOnlyAttribute(const std::string& name, const ir::Attribute& value) {
    return (name == "layout" && std::holds_alternative<std::string>(value)) || name == "fast_softmax";
}

/// One graph being written: its proto, the names in use (new values get fresh ones), and what
/// each IR value is called in the file.
struct GraphOut {
    onnx::GraphProto* proto = nullptr;
    std::set<std::string>* used = nullptr;
    std::unordered_map<const ir::Value*, std::string> names;
    /// The f16-rounded copy of a value (npuF16), made once and shared by its readers.
    std::unordered_map<const ir::Value*, std::string> rounded;
};

/// Writes a non-graph attribute; false for a graph (the caller writes those).
bool attributeToProto(const std::string& name, const ir::Attribute& value, onnx::AttributeProto& a) {
    a.set_name(name);
    using AP = onnx::AttributeProto;
    if (const auto* i = std::get_if<int64_t>(&value)) {
        a.set_type(AP::INT);
        a.set_i(*i);
    } else if (const auto* f = std::get_if<double>(&value)) {
        a.set_type(AP::FLOAT);
        a.set_f(static_cast<float>(*f));
    } else if (const auto* s = std::get_if<std::string>(&value)) {
        a.set_type(AP::STRING);
        a.set_s(*s);
    } else if (const auto* is = std::get_if<std::vector<int64_t>>(&value)) {
        a.set_type(AP::INTS);
        for (int64_t x : *is)
            a.add_ints(x);
    } else if (const auto* fs = std::get_if<std::vector<double>>(&value)) {
        a.set_type(AP::FLOATS);
        for (double x : *fs)
            a.add_floats(static_cast<float>(x));
    } else if (const auto* ss = std::get_if<std::vector<std::string>>(&value)) {
        a.set_type(AP::STRINGS);
        for (const std::string& x : *ss)
            a.add_strings(x);
    } else if (const auto* t = std::get_if<ir::Tensor>(&value)) {
        a.set_type(AP::TENSOR);
        tensorToProto(*t, "", *a.mutable_t());
    } else {
        return false;
    }
    return true;
}

void setFloat(onnx::NodeProto& p, const std::string& name, double v) {
    onnx::AttributeProto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
}

void setInt(onnx::NodeProto& p, const std::string& name, int64_t v) {
    onnx::AttributeProto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
}

void setInts(onnx::NodeProto& p, const std::string& name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = p.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
        a->add_ints(x);
}

/// If/Loop/Scan: the IR lists the outer values a body reads as the node's last inputs and the
/// body's last inputs; ONNX reads them from the enclosing scope by name.
size_t capturedCount(const ir::Node& n) {
    if (n.kind() == OpKind::Loop || n.kind() == OpKind::Scan)
        return static_cast<size_t>(n.attrInt("num_captured", 0));
    if (n.kind() == OpKind::If)
        return n.numInputs() - 1;
    return 0;
}

class Exporter {
public:
    explicit Exporter(const OnnxExportOptions& o) : m_o(o) {
        auto it = o.opsets.find("");
        m_opset = it == o.opsets.end() ? 0 : it->second;
    }

    Expected<std::string> run(const ir::Graph& graph);

private:
    bool standard() const { return m_o.form == OnnxExportForm::Standard; }
    Status writeGraph(const ir::Graph& g, GraphOut& out, size_t capturedInputs,
                      const std::vector<std::string>& capturedNames);
    Status writeNode(const ir::Node& n, GraphOut& out);
    Status writeStandardNode(const ir::Node& n, GraphOut& out, const std::vector<std::string>& ins,
                             const std::vector<std::string>& outs, const std::string& doc);
    Status convertAttribute(const std::string& name, const ir::Attribute& value, const ir::Node& n,
                            onnx::AttributeProto& out);
    Status addSubgraphAttributes(const ir::Node& n, GraphOut& out, onnx::NodeProto& proto);

    // Building blocks of the standard form.
    std::string fresh(GraphOut& out, const std::string& base) const;
    onnx::NodeProto& node(GraphOut& out, const std::string& op, const std::string& name,
                          std::vector<std::string> ins, std::vector<std::string> outs, const std::string& doc);
    std::string constant(GraphOut& out, const std::string& base, ir::Tensor t);
    /// `value` rounded to f16 and back to f32 by a Cast pair; the rounded value's name.
    std::string roundToF16(GraphOut& out, const std::string& value, const std::string& into = std::string());
    std::string scalar(GraphOut& out, const std::string& base, double v, ir::DType dtype) {
        return constant(out, base, ir::Tensor::scalar(v, dtype));
    }
    /// Writes op `kind` (an ai.onnx op) as itself or, when the opset lacks it, as the ops it is
    /// made of.
    Status standardOp(OpKind kind, const std::string& name, const std::vector<std::string>& ins,
                      const std::vector<std::string>& outs, const ir::AttributeMap& attrs, ir::DType dtype,
                      size_t rank, GraphOut& out, const std::string& doc);
    Status activation(const ir::Node& n, const std::string& in, const std::string& result, ir::DType dtype,
                      GraphOut& out, const std::string& doc);
    Status fusedConv(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                     GraphOut& out, const std::string& doc);
    Status fusedGemm(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                     GraphOut& out, const std::string& doc);
    Status attention(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                     GraphOut& out, const std::string& doc);
    Status group(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result, GraphOut& out,
                 const std::string& doc);
    Status upsample(const ir::Node& n, GraphOut& out, const std::vector<std::string>& ins,
                    const std::vector<std::string>& outs, const std::string& doc);
    Status int8Product(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                       GraphOut& out, const std::string& doc);

    Status unsupported(const ir::Node& n, const std::string& why) const {
        return makeError(ErrorKind::Unsupported,
                         "cannot export node '" + n.name() + "' (" + ir::qualifiedOpName(n.kind()) +
                             ") as standard ONNX at opset " + std::to_string(m_opset) + ": " + why,
                         n.name());
    }

    const OnnxExportOptions& m_o;
    int64_t m_opset = 0;
    std::set<std::string> m_used;
    /// Node names in use: every IR node's, and those decompositions made.
    std::set<std::string> m_usedNodeNames;
    /// The IR node being written: the first node of its decomposition that names it keeps it.
    std::string m_keepName;
    bool m_usesSextantDomain = false;
};

std::string nodeDoc(const ir::Node& n) {
    std::string doc;
    auto line = [&](const std::string& s) { doc += (doc.empty() ? "" : "\n") + s; };
    if (n.precision() != ir::Precision::Unset)
        line("precision: " + std::string(ir::precisionName(n.precision())));
    if (n.isView())
        line("view: 1");
    const ir::Provenance& p = n.provenance();
    if (!p.createdBy.empty())
        line("created by: " + p.createdBy);
    if (!p.origins.empty()) {
        std::string o;
        for (const std::string& s : p.origins)
            o += (o.empty() ? "" : ", ") + s;
        line("origins: " + o);
    }
    return doc;
}

Status Exporter::addSubgraphAttributes(const ir::Node& n, GraphOut& out, onnx::NodeProto& proto) {
    const size_t captured = capturedCount(n);
    std::vector<std::string> outerNames;
    for (size_t i = n.numInputs() - captured; i < n.numInputs(); ++i)
        outerNames.push_back(n.input(i) ? out.names.at(n.input(i)) : std::string());
    for (const auto& [name, value] : n.attrs()) {
        const auto* g = std::get_if<std::shared_ptr<const ir::Graph>>(&value);
        if (!g || !*g)
            continue;
        onnx::AttributeProto* a = proto.add_attribute();
        a->set_name(name);
        a->set_type(onnx::AttributeProto::GRAPH);
        GraphOut sub;
        sub.proto = a->mutable_g();
        sub.used = out.used;
        sub.proto->set_name((*g)->name());
        SX_TRY(writeGraph(**g, sub, captured, outerNames));
    }
    return {};
}

Status Exporter::convertAttribute(const std::string& name, const ir::Attribute& value, const ir::Node& n,
                                  onnx::AttributeProto& a) {
    if (!attributeToProto(name, value, a))
        return makeError(ErrorKind::Verify, "node '" + n.name() + "': graph attribute '" + name + "' out of place",
                         n.name());
    return {};
}

std::string Exporter::fresh(GraphOut& out, const std::string& base) const {
    std::string name = base;
    for (int i = 1; out.used->count(name); ++i)
        name = base + "_" + std::to_string(i);
    out.used->insert(name);
    return name;
}

onnx::NodeProto& Exporter::node(GraphOut& out, const std::string& op, const std::string& name,
                                std::vector<std::string> ins, std::vector<std::string> outs, const std::string& doc) {
    onnx::NodeProto& p = *out.proto->add_node();
    if (name == m_keepName) { // the IR node's own name, for the node that computes its result
        p.set_name(name);
        m_keepName.clear();
    } else {
        std::string unique = name;
        for (int i = 1; m_usedNodeNames.count(unique); ++i)
            unique = name + "_" + std::to_string(i);
        m_usedNodeNames.insert(unique);
        p.set_name(unique);
    }
    p.set_op_type(op);
    while (!ins.empty() && ins.back().empty())
        ins.pop_back();
    for (const std::string& s : ins)
        p.add_input(s);
    for (const std::string& s : outs)
        p.add_output(s);
    if (!doc.empty())
        p.set_doc_string(doc);
    return p;
}

std::string Exporter::roundToF16(GraphOut& out, const std::string& value, const std::string& into) {
    const std::string half = fresh(out, value + ".f16");
    const std::string rounded = into.empty() ? fresh(out, value + ".rounded") : into;
    setInt(node(out, "Cast", value + ".to_f16", {value}, {half}, "npu precision"), "to", dtypeToOnnx(ir::DType::F16));
    setInt(node(out, "Cast", value + ".from_f16", {half}, {rounded}, "npu precision"), "to",
           dtypeToOnnx(ir::DType::F32));
    return rounded;
}

std::string Exporter::constant(GraphOut& out, const std::string& base, ir::Tensor t) {
    const std::string name = fresh(out, base);
    tensorToProto(t, name, *out.proto->add_initializer());
    return name;
}


Status Exporter::writeGraph(const ir::Graph& g, GraphOut& out, size_t capturedInputs,
                            const std::vector<std::string>& capturedNames) {
    onnx::GraphProto& proto = *out.proto;
    const size_t formals = g.inputs().size() - std::min(capturedInputs, g.inputs().size());
    for (size_t i = 0; i < g.inputs().size(); ++i) {
        const ir::Value* v = g.inputs()[i];
        if (i >= formals) { // read from the enclosing graph under its name there
            out.names[v] = capturedNames[i - formals];
            continue;
        }
        out.names[v] = v->name();
        out.used->insert(v->name());
        setType(*proto.add_input(), v->type());
        proto.mutable_input(proto.input_size() - 1)->set_name(v->name());
    }
    for (const ir::Value* c : g.constants()) {
        out.names[c] = c->name();
        out.used->insert(c->name());
        tensorToProto(*c->constant(), c->name(), *proto.add_initializer());
    }
    const std::vector<ir::Node*>& nodes = g.nodeOrder();
    for (const ir::Node* n : nodes)
        for (const ir::Value* v : n->outputs()) {
            out.names[v] = v->name();
            out.used->insert(v->name());
        }
    for (const ir::Node* n : nodes)
        m_usedNodeNames.insert(n->name());
    for (const ir::Node* n : nodes)
        SX_TRY(writeNode(*n, out));
    for (const ir::Value* v : g.outputs()) {
        onnx::ValueInfoProto& info = *proto.add_output();
        info.set_name(out.names.at(v));
        setType(info, v->type());
    }
    for (const ir::Node* n : nodes)
        for (const ir::Value* v : n->outputs()) {
            if (v->isGraphOutput())
                continue;
            onnx::ValueInfoProto& info = *proto.add_value_info();
            info.set_name(out.names.at(v));
            setType(info, v->type());
        }
    return {};
}

Status Exporter::writeNode(const ir::Node& n, GraphOut& out) {
    std::vector<std::string> ins, outs;
    const size_t captured = capturedCount(n);
    for (size_t i = 0; i < n.numInputs() - captured; ++i)
        ins.push_back(n.input(i) ? out.names.at(n.input(i)) : std::string());
    for (const ir::Value* v : n.outputs())
        outs.push_back(out.names.at(v));
    const std::string doc = nodeDoc(n);
    // Below opset 10 a Resize is an Upsample the importer read (ONNX has no Resize there): both
    // forms write it back as one.
    if (n.kind() == OpKind::Resize && m_opset < 10)
        return upsample(n, out, ins, outs, doc);
    if (standard()) {
        m_keepName = n.name();
        return writeStandardNode(n, out, ins, outs, doc);
    }

    const ir::OpInfo& info = n.info();
    m_keepName = n.name();
    onnx::NodeProto& p = node(out, std::string(info.name), n.name(), std::move(ins), outs, doc);
    if (!info.domain.empty()) {
        p.set_domain(std::string(info.domain));
        m_usesSextantDomain = true;
    }
    for (const auto& [name, value] : n.attrs()) {
        if (internalAttribute(name) || std::holds_alternative<std::shared_ptr<const ir::Graph>>(value))
            continue;
        SX_TRY(convertAttribute(name, value, n, *p.add_attribute()));
    }
    if (const ir::FusedBody* body = n.body()) {
        onnx::AttributeProto* a = p.add_attribute();
        a->set_name("body");
        a->set_type(onnx::AttributeProto::STRINGS);
        for (const std::string& s : ir::bodyText(*body))
            a->add_strings(s);
    }
    return addSubgraphAttributes(n, out, p);
}

/// Whether the NPU reads operand `i` of `n` rounded to f16 (backend::readsInF16, the simulator's
/// rule): every operand of an f16 vector op; a cube op's data and weights (and FusedConv's
/// residual and input prologue's scale and shift), not its bias, which joins the f32 accumulator.
bool readsInF16(const ir::Node& n, size_t i) {
    if (n.precision() == ir::Precision::F16)
        return true;
    return n.precision() == ir::Precision::F16AccF32 && (i < 2 || (i >= 3 && i <= 5 && n.kind() == OpKind::FusedConv));
}

/// The dtype a node computes in: its first float input's, else its first output's.
ir::DType computeType(const ir::Node& n) {
    for (const ir::Value* v : n.inputs())
        if (v && ir::isFloat(v->type().dtype))
            return v->type().dtype;
    return n.output(0)->type().dtype;
}

Status Exporter::writeStandardNode(const ir::Node& n, GraphOut& out, const std::vector<std::string>& rawIns,
                                   const std::vector<std::string>& outs, const std::string& doc) {
    // npuF16: the float tensors an f16 node reads, rounded to f16 and back (one copy per value).
    std::vector<std::string> ins = rawIns;
    const bool f16 = m_o.npuF16 && (n.precision() == ir::Precision::F16 || n.precision() == ir::Precision::F16AccF32);
    if (f16)
        for (size_t i = 0; i < ins.size(); ++i) {
            const ir::Value* v = n.input(i);
            if (!v || v->type().dtype != ir::DType::F32 || !readsInF16(n, i))
                continue;
            auto [it, added] = out.rounded.try_emplace(v);
            if (added)
                it->second = roundToF16(out, ins[i]);
            ins[i] = it->second;
        }
    // A vector node in f16 also writes its float results in f16: each is computed under another
    // name and rounded into its own.
    std::vector<std::string> computed = outs;
    std::vector<size_t> rounded;
    if (f16 && n.precision() == ir::Precision::F16)
        for (size_t i = 0; i < outs.size(); ++i)
            if (n.output(i)->type().dtype == ir::DType::F32 && !outs[i].empty()) {
                computed[i] = fresh(out, outs[i] + ".unrounded");
                rounded.push_back(i);
            }
    const std::string result = computed[0];

    Status s;
    switch (n.kind()) {
    case OpKind::FusedConv:
    case OpKind::FusedConvTranspose: s = fusedConv(n, ins, result, out, doc); break;
    case OpKind::FusedGemm: s = fusedGemm(n, ins, result, out, doc); break;
    case OpKind::Attention: s = attention(n, ins, result, out, doc); break;
    case OpKind::ElementwiseGroup: s = group(n, ins, result, out, doc); break;
    case OpKind::Int8Conv:
    case OpKind::Int8Gemm: s = int8Product(n, ins, result, out, doc); break;
    case OpKind::TransData:
        // The IR's tensors are logical: a conversion between NCHW and NC1HWC0 moves bytes, not
        // values; one from or to NHWC (a Transpose the layout pass absorbed) permutes the dims.
        if (n.attrString("src_format", "") == "NHWC")
            setInts(node(out, "Transpose", n.name(), {ins[0]}, {result}, doc), "perm", {0, 3, 1, 2});
        else if (n.attrString("dst_format", "") == "NHWC")
            setInts(node(out, "Transpose", n.name(), {ins[0]}, {result}, doc), "perm", {0, 2, 3, 1});
        else
            node(out, "Identity", n.name(), {ins[0]}, {result}, doc);
        break;
    default: {
        if (!n.info().domain.empty())
            return unsupported(n, "the exporter has no decomposition for this op");
        const std::vector<std::string>& o = computed;
        ir::AttributeMap attrs;
        for (const auto& [name, value] : n.attrs())
            if (!internalAttribute(name) && !sextantOnlyAttribute(name, value) &&
                !std::holds_alternative<std::shared_ptr<const ir::Graph>>(value))
                attrs.emplace(name, value);
        if (capturedCount(n) > 0 || n.kind() == OpKind::Loop || n.kind() == OpKind::Scan) {
            if (!onnxOpVersion(n.info().name, m_opset))
                return unsupported(n, "the op does not exist at this opset");
            onnx::NodeProto& p = node(out, std::string(n.info().name), n.name(), ins, o, doc);
            for (const auto& [name, value] : attrs)
                SX_TRY(convertAttribute(name, value, n, *p.add_attribute()));
            s = addSubgraphAttributes(n, out, p);
            break;
        }
        s = standardOp(n.kind(), n.name(), ins, o, attrs, computeType(n), n.input(0) ? n.input(0)->type().rank() : 0,
                       out, doc);
        if (!s.ok() && s.error().subject.empty())
            return unsupported(n, s.error().message);
        break;
    }
    }
    SX_TRY(std::move(s));
    for (size_t i : rounded)
        roundToF16(out, computed[i], outs[i]);
    return {};
}

Status Exporter::standardOp(OpKind kind, const std::string& name, const std::vector<std::string>& ins,
                            const std::vector<std::string>& outs, const ir::AttributeMap& attrs, ir::DType dtype,
                            size_t rankOfInput, GraphOut& out, const std::string& doc) {
    const std::string op(ir::opInfo(kind).name);
    if (onnxOpVersion(op, m_opset)) {
        onnx::NodeProto& p = node(out, op, name, ins, outs, doc);
        for (const auto& [key, value] : attrs)
            if (!attributeToProto(key, value, *p.add_attribute()))
                return makeError(ErrorKind::Verify, "graph attribute '" + key + "' out of place");
        return {};
    }
    auto attrFloat = [&](const char* key, double dflt) {
        auto it = attrs.find(key);
        if (it == attrs.end())
            return dflt;
        if (const auto* d = std::get_if<double>(&it->second))
            return *d;
        if (const auto* i = std::get_if<int64_t>(&it->second))
            return static_cast<double>(*i);
        return dflt;
    };
    switch (kind) {
    case OpKind::HardSwish: { // x * HardSigmoid(x; 1/6, 0.5), HardSwish's definition
        const std::string gate = fresh(out, name + ".gate");
        onnx::NodeProto& hs = node(out, "HardSigmoid", name + ".hardsigmoid", {ins[0]}, {gate}, doc);
        setFloat(hs, "alpha", 1.0 / 6.0);
        setFloat(hs, "beta", 0.5);
        node(out, "Mul", name, {ins[0], gate}, {outs[0]}, doc);
        return {};
    }
    case OpKind::LayerNormalization: {
        if (outs.size() > 1)
            return makeError(ErrorKind::Unsupported, "its mean and inverse deviation outputs have no older form");
        const auto rank = static_cast<int64_t>(rankOfInput);
        int64_t axis = static_cast<int64_t>(attrFloat("axis", -1));
        if (axis < 0)
            axis += rank;
        if (rank < 0 || axis < 0 || axis >= rank)
            return makeError(ErrorKind::Unsupported, "its axis is outside the input's rank");
        std::vector<int64_t> axes;
        for (int64_t a = axis; a < rank; ++a)
            axes.push_back(a);
        auto reduceMean = [&](const std::string& in, const std::string& tag) {
            const std::string r = fresh(out, name + "." + tag);
            onnx::NodeProto& p = node(out, "ReduceMean", name + "." + tag, {in}, {r}, doc);
            setInts(p, "axes", axes);
            setInt(p, "keepdims", 1);
            return r;
        };
        const std::string mean = reduceMean(ins[0], "mean");
        const std::string centred = fresh(out, name + ".centred");
        node(out, "Sub", name + ".centre", {ins[0], mean}, {centred}, doc);
        const std::string square = fresh(out, name + ".square");
        node(out, "Mul", name + ".square", {centred, centred}, {square}, doc);
        const std::string var = reduceMean(square, "variance");
        const std::string eps = scalar(out, name + ".epsilon", attrFloat("epsilon", 1e-5), dtype);
        const std::string varEps = fresh(out, name + ".variance_eps");
        node(out, "Add", name + ".add_epsilon", {var, eps}, {varEps}, doc);
        const std::string dev = fresh(out, name + ".deviation");
        node(out, "Sqrt", name + ".sqrt", {varEps}, {dev}, doc);
        const std::string normed = fresh(out, name + ".normalised");
        node(out, "Div", name + ".normalise", {centred, dev}, {normed}, doc);
        const bool bias = ins.size() > 2 && !ins[2].empty();
        const std::string scaled = bias ? fresh(out, name + ".scaled") : outs[0];
        node(out, "Mul", name + ".scale", {normed, ins[1]}, {scaled}, doc);
        if (bias)
            node(out, "Add", name + ".shift", {scaled, ins[2]}, {outs[0]}, doc);
        return {};
    }
    default:
        return makeError(ErrorKind::Unsupported, "op '" + op + "' does not exist at opset " + std::to_string(m_opset) +
                                                     " and has no older form here");
    }
}

Status Exporter::activation(const ir::Node& n, const std::string& in, const std::string& result, ir::DType dtype,
                            GraphOut& out, const std::string& doc) {
    const std::string act = n.attrString("activation", "");
    const std::vector<double> params = n.attrFloats("activation_params");
    auto param = [&](size_t i, double dflt) { return i < params.size() ? params[i] : dflt; };
    const ir::Attribute* post = n.attr("post_affine");
    const std::string actOut = post ? fresh(out, n.name() + ".activated") : result;
    const std::string base = n.name() + "." + (act.empty() ? std::string("act") : act);
    if (act == "Relu" || act == "Sigmoid") {
        node(out, act, base, {in}, {actOut}, doc);
    } else if (act == "LeakyRelu") {
        setFloat(node(out, act, base, {in}, {actOut}, doc), "alpha", param(0, 0.01));
    } else if (act == "HardSigmoid") {
        onnx::NodeProto& p = node(out, act, base, {in}, {actOut}, doc);
        setFloat(p, "alpha", param(0, 0.2));
        setFloat(p, "beta", param(1, 0.5));
    } else if (act == "HardSwish") {
        SX_TRY(standardOp(OpKind::HardSwish, base, {in}, {actOut}, {}, dtype, n.output(0)->type().rank(), out, doc));
    } else if (act == "Clip") {
        const double lo = param(0, -std::numeric_limits<double>::infinity());
        const double hi = param(1, std::numeric_limits<double>::infinity());
        if (m_opset < 11) { // min and max are attributes before opset 11
            onnx::NodeProto& p = node(out, "Clip", base, {in}, {actOut}, doc);
            const double big = std::numeric_limits<float>::max();
            setFloat(p, "min", std::max(lo, -big));
            setFloat(p, "max", std::min(hi, big));
        } else {
            node(out, "Clip", base,
                 {in, std::isinf(lo) ? std::string() : scalar(out, n.name() + ".min", lo, dtype),
                  std::isinf(hi) ? std::string() : scalar(out, n.name() + ".max", hi, dtype)},
                 {actOut}, doc);
        }
    } else {
        return unsupported(n, "no standard form for activation '" + act + "'");
    }
    if (post) {
        const auto& sb = std::get<std::vector<double>>(*post);
        const std::string scaled = fresh(out, n.name() + ".post_scaled");
        node(out, "Mul", n.name() + ".post_scale", {actOut, scalar(out, n.name() + ".post_scale", sb[0], dtype)},
             {scaled}, doc);
        node(out, "Add", n.name() + ".post_shift", {scaled, scalar(out, n.name() + ".post_shift", sb[1], dtype)},
             {result}, doc);
    }
    return {};
}

/// [Input prologue +] Conv (or ConvTranspose) [+ residual] + activation [+ post affine].
Status Exporter::fusedConv(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                           GraphOut& out, const std::string& doc) {
    const bool act = !n.attrString("activation", "").empty();
    const bool residual = ins.size() > 3 && !ins[3].empty();
    const ir::DType dtype = n.output(0)->type().dtype;
    std::vector<std::string> convIns(ins.begin(), ins.begin() + std::min<size_t>(ins.size(), 3));
    if (ir::hasInputPrologue(n) && ins.size() > 5) {
        // The input prologue: x * scale + shift [then Relu], rounded to f16 where the cube reads
        // its data so (the result of the f16 group it replaced was).
        const std::string scaled = fresh(out, n.name() + ".prologue_scaled");
        node(out, "Mul", n.name() + ".prologue_scale", {ins[0], ins[4]}, {scaled}, doc);
        const bool relu = n.attrString("prologue_activation", "") == "Relu";
        std::string data = fresh(out, n.name() + ".prologue_shifted");
        node(out, "Add", n.name() + ".prologue_shift", {scaled, ins[5]}, {data}, doc);
        if (relu) {
            const std::string activated = fresh(out, n.name() + ".prologue");
            node(out, "Relu", n.name() + ".prologue_relu", {data}, {activated}, doc);
            data = activated;
        }
        if (m_o.npuF16 && readsInF16(n, 0) && n.input(0)->type().dtype == ir::DType::F32)
            data = roundToF16(out, data);
        convIns[0] = data;
    }
    std::string conv = residual || act ? fresh(out, n.name() + ".conv") : result;
    onnx::NodeProto& p = node(out, n.kind() == OpKind::FusedConv ? "Conv" : "ConvTranspose", n.name(), convIns,
                              {conv}, doc);
    for (const auto& [name, value] : n.attrs())
        if (name != "activation" && name != "activation_params" && name != "post_affine" &&
            name != "prologue_activation" && !internalAttribute(name) &&
            !sextantOnlyAttribute(name, value))
            SX_TRY(convertAttribute(name, value, n, *p.add_attribute()));
    if (residual) {
        std::string r = ins[3];
        const ir::TensorType& rt = n.input(3)->type();
        const ir::TensorType& yt = n.output(0)->type();
        if (rt.isStatic() && yt.isStatic() && rt.rank() >= 2 && rt.dims()[1] < yt.dims()[1]) {
            // A residual with fewer channels (fold-zero-channel-pad) is added to the first ones:
            // in standard ops, padded back with zero channels.
            std::vector<int64_t> zeroDims = rt.dims();
            zeroDims[1] = yt.dims()[1] - rt.dims()[1];
            const std::string zeros = constant(out, n.name() + ".residual_zeros", ir::Tensor(rt.dtype, zeroDims));
            const std::string padded = fresh(out, n.name() + ".residual_padded");
            setInt(node(out, "Concat", n.name() + ".pad_residual", {r, zeros}, {padded}, doc), "axis", 1);
            r = padded;
        }
        const std::string sum = act ? fresh(out, n.name() + ".residual") : result;
        node(out, "Add", n.name() + ".add_residual", {conv, r}, {sum}, doc);
        conv = sum;
    }
    if (act)
        SX_TRY(activation(n, conv, result, dtype, out, doc));
    return {};
}

/// Gemm (or, for an A of rank above 2, MatMul with alpha and beta * C) + activation.
Status Exporter::fusedGemm(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                           GraphOut& out, const std::string& doc) {
    const bool act = !n.attrString("activation", "").empty();
    const ir::DType dtype = n.output(0)->type().dtype;
    const std::string product = act ? fresh(out, n.name() + ".gemm") : result;
    const double alpha = n.attrFloat("alpha", 1.0), beta = n.attrFloat("beta", 1.0);
    const bool transA = n.attrInt("transA", 0) != 0, transB = n.attrInt("transB", 0) != 0;
    const bool bias = ins.size() > 2 && !ins[2].empty();
    if (n.input(0)->type().rank() == 2) {
        onnx::NodeProto& p = node(out, "Gemm", n.name(), ins, {product}, doc);
        setFloat(p, "alpha", alpha);
        setFloat(p, "beta", beta);
        setInt(p, "transA", transA);
        setInt(p, "transB", transB);
    } else {
        if (transA)
            return unsupported(n, "transA with an A of rank above 2");
        std::string b = ins[1];
        if (transB) {
            b = fresh(out, n.name() + ".b_transposed");
            setInts(node(out, "Transpose", n.name() + ".transpose_b", {ins[1]}, {b}, doc), "perm", {1, 0});
        }
        std::string acc = alpha != 1.0 || bias ? fresh(out, n.name() + ".matmul") : product;
        node(out, "MatMul", n.name(), {ins[0], b}, {acc}, doc);
        if (alpha != 1.0) {
            const std::string scaled = bias ? fresh(out, n.name() + ".alpha_scaled") : product;
            node(out, "Mul", n.name() + ".alpha", {acc, scalar(out, n.name() + ".alpha", alpha, dtype)}, {scaled}, doc);
            acc = scaled;
        }
        if (bias) {
            std::string c = ins[2];
            if (beta != 1.0) {
                c = fresh(out, n.name() + ".beta_scaled");
                node(out, "Mul", n.name() + ".beta", {ins[2], scalar(out, n.name() + ".beta", beta, dtype)}, {c}, doc);
            }
            node(out, "Add", n.name() + ".add_bias", {acc, c}, {product}, doc);
        }
    }
    if (act)
        SX_TRY(activation(n, product, result, dtype, out, doc));
    return {};
}

/// softmax(scale * Q x K^T) x V.
Status Exporter::attention(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                           GraphOut& out, const std::string& doc) {
    const ir::DType dtype = n.output(0)->type().dtype;
    std::string k = ins[1];
    if (n.attrInt("transB", 1) != 0) {
        const size_t rank = n.input(1)->type().rank();
        if (rank < 2)
            return unsupported(n, "K has rank below 2");
        std::vector<int64_t> perm;
        for (size_t i = 0; i < rank; ++i)
            perm.push_back(static_cast<int64_t>(i));
        std::swap(perm[rank - 1], perm[rank - 2]);
        k = fresh(out, n.name() + ".k_transposed");
        setInts(node(out, "Transpose", n.name() + ".transpose_k", {ins[1]}, {k}, doc), "perm", perm);
    }
    const std::string scores = fresh(out, n.name() + ".scores");
    node(out, "MatMul", n.name() + ".qk", {ins[0], k}, {scores}, doc);
    const std::string scaled = fresh(out, n.name() + ".scaled");
    node(out, "Mul", n.name() + ".scale",
         {scores, scalar(out, n.name() + ".scale", n.attrFloat("scale", 1.0), dtype)}, {scaled}, doc);
    const std::string probs = fresh(out, n.name() + ".probs");
    // The last axis: opset 13's Softmax and the older 2-D coercion agree there.
    setInt(node(out, "Softmax", n.name() + ".softmax", {scaled}, {probs}, doc), "axis", -1);
    node(out, "MatMul", n.name(), {probs, ins[2]}, {result}, doc);
    return {};
}

/// The steps of an ElementwiseGroup, one node each.
Status Exporter::group(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                       GraphOut& out, const std::string& doc) {
    const ir::FusedBody* body = n.body();
    if (!body || body->steps.empty())
        return unsupported(n, "the group has no body");
    std::vector<std::string> steps;
    const ir::DType dtype = computeType(n);
    for (size_t i = 0; i < body->steps.size(); ++i) {
        const ir::BodyStep& s = body->steps[i];
        std::vector<std::string> args;
        for (const ir::BodyOperand& o : s.operands) {
            switch (o.kind) {
            case ir::BodyOperand::Kind::Omitted: args.emplace_back(); break;
            case ir::BodyOperand::Kind::Input:
                if (o.index >= ins.size())
                    return unsupported(n, "a step reads a group input it does not have");
                args.push_back(ins[o.index]);
                break;
            case ir::BodyOperand::Kind::Step: args.push_back(steps.at(o.index)); break;
            }
        }
        const bool last = i + 1 == body->steps.size();
        const std::string stepOut = last ? result : fresh(out, n.name() + ".t" + std::to_string(i));
        ir::AttributeMap attrs;
        for (const auto& [key, value] : s.attrs)
            attrs.emplace(key, value);
        Status st = standardOp(s.op, n.name() + (last ? std::string() : ".s" + std::to_string(i)), args, {stepOut},
                               attrs, dtype, n.output(0)->type().rank(), out, doc + (doc.empty() ? "" : "\n") + "group step " + std::to_string(i));
        if (!st.ok())
            return unsupported(n, "step " + std::to_string(i) + ": " + st.error().message);
        steps.push_back(stepOut);
    }
    return {};
}

/// Upsample-9 reads the scales as input 1, Upsample-7 as the attribute "scales" (then the
/// importer made them a constant).
Status Exporter::upsample(const ir::Node& n, GraphOut& out, const std::vector<std::string>& ins,
                          const std::vector<std::string>& outs, const std::string& doc) {
    m_keepName = n.name();
    if (ins.size() != 2 || ins[1].empty())
        return unsupported(n, "a Resize below opset 10 must be Upsample's (X, scales)");
    const std::string mode = n.attrString("mode", "nearest");
    if (m_opset >= 9) {
        attributeToProto("mode", mode, *node(out, "Upsample", n.name(), ins, outs, doc).add_attribute());
        return {};
    }
    const ir::Tensor* scales = n.input(1)->constant();
    if (!scales)
        return unsupported(n, "Upsample-7 takes its scales as an attribute, and these are computed");
    onnx::NodeProto& p = node(out, "Upsample", n.name(), {ins[0]}, outs, doc);
    attributeToProto("mode", mode, *p.add_attribute());
    onnx::AttributeProto& a = *p.add_attribute();
    a.set_name("scales");
    a.set_type(onnx::AttributeProto::FLOATS);
    for (double v : scales->toDoubles())
        a.add_floats(static_cast<float>(v));
    return {};
}

/// Int8Conv as QLinearConv, Int8Gemm as QLinearMatMul (or, with a bias, MatMulInteger, the bias,
/// the scales and QuantizeLinear), then the activation's clamp on the int8 result.
Status Exporter::int8Product(const ir::Node& n, const std::vector<std::string>& ins, const std::string& result,
                             GraphOut& out, const std::string& doc) {
    if (m_opset < 10)
        return unsupported(n, "the quantized ops need opset 10");
    const ir::DType xType = n.input(0)->type().dtype, wType = n.input(1)->type().dtype;
    const ir::DType yType = n.output(0)->type().dtype;
    const std::string act = n.attrString("activation", "");
    const bool clamp = !act.empty();
    if (clamp && m_opset < 12)
        return unsupported(n, "clamping an int8 result (the fused " + act + ") needs Clip of opset 12");
    const std::string product = clamp ? fresh(out, n.name() + ".unclamped") : result;
    const double xScale = n.attrFloat("x_scale", 1.0), yScale = n.attrFloat("y_scale", 1.0);
    const int64_t xZero = n.attrInt("x_zero_point", 0), yZero = n.attrInt("y_zero_point", 0);
    const std::vector<double> ws = n.attrFloats("w_scale");
    const std::vector<int64_t> wz = n.attrInts("w_zero_point", {0});
    auto vectorOf = [&](const std::string& base, const std::vector<double>& v, ir::DType dt) {
        if (v.size() == 1)
            return scalar(out, base, v[0], dt);
        ir::Tensor t(dt, {static_cast<int64_t>(v.size())});
        for (size_t i = 0; i < v.size(); ++i)
            t.set(static_cast<int64_t>(i), v[i]);
        return constant(out, base, std::move(t));
    };
    std::vector<double> wzd(wz.begin(), wz.end());
    const std::string xs = scalar(out, n.name() + ".x_scale", xScale, ir::DType::F32);
    const std::string xz = scalar(out, n.name() + ".x_zero_point", static_cast<double>(xZero), xType);
    const std::string wsName = vectorOf(n.name() + ".w_scale", ws, ir::DType::F32);
    const std::string wzName = vectorOf(n.name() + ".w_zero_point", wzd, wType);
    const std::string ys = scalar(out, n.name() + ".y_scale", yScale, ir::DType::F32);
    const std::string yz = scalar(out, n.name() + ".y_zero_point", static_cast<double>(yZero), yType);
    const bool bias = ins.size() > 2 && !ins[2].empty();
    if (n.kind() == OpKind::Int8Conv) {
        onnx::NodeProto& p = node(out, "QLinearConv", n.name(),
                                  {ins[0], xs, xz, ins[1], wsName, wzName, ys, yz, bias ? ins[2] : std::string()},
                                  {product}, doc);
        for (const auto& [name, value] : n.attrs())
            if (name == "auto_pad" || name == "dilations" || name == "group" || name == "kernel_shape" ||
                name == "pads" || name == "strides")
                SX_TRY(convertAttribute(name, value, n, *p.add_attribute()));
    } else if (!bias) {
        node(out, "QLinearMatMul", n.name(), {ins[0], xs, xz, ins[1], wsName, wzName, ys, yz}, {product}, doc);
    } else {
        const std::string acc = fresh(out, n.name() + ".acc");
        node(out, "MatMulInteger", n.name(), {ins[0], ins[1], xz, wzName}, {acc}, doc);
        const std::string biased = fresh(out, n.name() + ".biased");
        node(out, "Add", n.name() + ".add_bias", {acc, ins[2]}, {biased}, doc);
        const std::string real = fresh(out, n.name() + ".real");
        setInt(node(out, "Cast", n.name() + ".to_float", {biased}, {real}, doc), "to", dtypeToOnnx(ir::DType::F32));
        std::vector<double> scales;
        for (double w : ws)
            scales.push_back(static_cast<double>(static_cast<float>(xScale) * static_cast<float>(w)));
        const std::string scaled = fresh(out, n.name() + ".scaled");
        node(out, "Mul", n.name() + ".scale", {real, vectorOf(n.name() + ".acc_scale", scales, ir::DType::F32)},
             {scaled}, doc);
        node(out, "QuantizeLinear", n.name() + ".requantise", {scaled, ys, yz}, {product}, doc);
    }
    if (clamp) {
        // The int8 epilogue's bounds (int8Params in ops/Quantize.cpp): Relu from the zero point,
        // Clip from its bounds quantized.
        const double lo = yType == ir::DType::I8 ? -128 : 0, hi = yType == ir::DType::I8 ? 127 : 255;
        double qlo = lo, qhi = hi;
        if (act == "Relu") {
            qlo = static_cast<double>(yZero);
        } else if (act == "Clip") {
            const std::vector<double> b = n.attrFloats("activation_params");
            if (b.size() != 2)
                return unsupported(n, "Clip without its two bounds");
            auto q = [&](double v) {
                const double r = std::nearbyint(static_cast<float>(v) / static_cast<float>(yScale)) + yZero;
                return std::clamp(r, lo, hi);
            };
            qlo = q(b[0]);
            qhi = q(b[1]);
        } else {
            return unsupported(n, "no int8 clamp for activation '" + act + "'");
        }
        node(out, "Clip", n.name() + ".clamp",
             {product, scalar(out, n.name() + ".lo", qlo, yType), scalar(out, n.name() + ".hi", qhi, yType)}, {result},
             doc);
    }
    return {};
}

Expected<std::string> Exporter::run(const ir::Graph& graph) {
    if (m_opset == 0)
        return makeError(ErrorKind::Invalid, "the model's ai.onnx opset is not known, so its nodes' forms are not");
    onnx::ModelProto model;
    GraphOut top;
    top.proto = model.mutable_graph();
    top.used = &m_used;
    top.proto->set_name(graph.name());
    SX_TRY(writeGraph(graph, top, 0, {}));

    model.set_ir_version(irVersionFor(m_opset));
    model.set_producer_name("sextant");
    model.set_producer_version(SEXTANT_VERSION_STRING);
    onnx::OperatorSetIdProto* onnxOpset = model.add_opset_import();
    onnxOpset->set_domain("");
    onnxOpset->set_version(m_opset);
    if (m_usesSextantDomain) {
        onnx::OperatorSetIdProto* own = model.add_opset_import();
        own->set_domain("sextant");
        own->set_version(1);
    }
    auto meta = [&](const std::string& key, const std::string& value) {
        onnx::StringStringEntryProto* e = model.add_metadata_props();
        e->set_key(key);
        e->set_value(value);
    };
    meta("sextant.export_version", std::to_string(kOnnxExportVersion));
    meta("sextant.form", standard() ? (m_o.npuF16 ? "standard, npu f16" : "standard") : "as is");
    if (!m_o.snapshot.empty())
        meta("sextant.snapshot", m_o.snapshot);
    if (!m_o.source.empty())
        meta("sextant.source", m_o.source);

    const size_t bytes = model.ByteSizeLong();
    if (bytes >= static_cast<size_t>(std::numeric_limits<int>::max()))
        return makeError(ErrorKind::Unsupported, "the exported model would be " + std::to_string(bytes) +
                                                     " bytes; protobuf files must be under 2 GiB");
    std::string data;
    data.reserve(bytes);
    {
        google::protobuf::io::StringOutputStream stream(&data);
        google::protobuf::io::CodedOutputStream coded(&stream);
        coded.SetSerializationDeterministic(true);
        if (!model.SerializeToCodedStream(&coded))
            return makeError(ErrorKind::Verify, "the exported model did not serialize");
    }
    return data;
}

} // namespace

Expected<std::string> exportOnnx(const ir::Graph& graph, const OnnxExportOptions& options) {
    Exporter e(options);
    return e.run(graph);
}

} // namespace sextant::frontend
