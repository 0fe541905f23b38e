#include "OnnxImporter.h"
#include "OnnxOpVersions.h"

#include "ExternalData.h"
#include "OnnxTensor.h"
#include "ProtoFile.h"
#include "SizeLimits.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <unordered_set>

namespace sextant::frontend {

namespace {

using onnx::AttributeProto;

std::string normaliseDomain(const std::string& domain) {
    return domain == "ai.onnx" ? std::string() : domain;
}

bool isGraphAttribute(const AttributeProto& a) {
    return a.type() == AttributeProto::GRAPH || (a.type() == AttributeProto::UNDEFINED && a.has_g());
}

/// Appends to `out` (once each, in first-use order) the names `g` reads but does not define:
/// node inputs and graph outputs that are neither its initializers, inputs nor node outputs,
/// including those read by subgraphs nested inside it.
void collectFreeNames(const onnx::GraphProto& g, std::vector<std::string>& out, std::set<std::string>& seen) {
    std::set<std::string> defined;
    for (const onnx::TensorProto& t : g.initializer())
        defined.insert(t.name());
    for (const onnx::ValueInfoProto& v : g.input())
        defined.insert(v.name());
    for (const onnx::NodeProto& n : g.node())
        for (const std::string& o : n.output())
            defined.insert(o);
    auto use = [&](const std::string& name) {
        if (!name.empty() && !defined.count(name) && seen.insert(name).second)
            out.push_back(name);
    };
    for (const onnx::NodeProto& n : g.node()) {
        for (const std::string& in : n.input())
            use(in);
        for (const AttributeProto& a : n.attribute()) {
            std::vector<std::string> inner;
            std::set<std::string> innerSeen;
            if (isGraphAttribute(a))
                collectFreeNames(a.g(), inner, innerSeen);
            for (const onnx::GraphProto& sub : a.graphs())
                collectFreeNames(sub, inner, innerSeen);
            for (const std::string& name : inner)
                use(name);
        }
    }
    for (const onnx::ValueInfoProto& o : g.output())
        use(o.name());
}

/// The outer-scope names a node's subgraphs read, in first-use order over its graph attributes.
std::vector<std::string> capturedNames(const onnx::NodeProto& node) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const AttributeProto& a : node.attribute())
        if (isGraphAttribute(a))
            collectFreeNames(a.g(), out, seen);
    return out;
}

/// Turns one ONNX ModelProto into a Graph. Holds the lookup tables the steps share.
class Importer {
public:
    Importer(onnx::ModelProto& model, std::string path) : m_model(model), m_path(std::move(path)) {}

    /// An importer for a subgraph (an If branch, a Loop or Scan body) of the graph `parent`
    /// imports: `formals` type the inputs the subgraph declares (none for an If branch), and
    /// `captured` are the outer values it reads, which become its graph inputs after those.
    Importer(const Importer& parent, onnx::GraphProto& graph, std::string name,
             std::vector<ir::TensorType> formals, std::vector<std::pair<std::string, ir::TensorType>> captured)
        : m_model(parent.m_model), m_path(parent.m_path), m_opsets(parent.m_opsets), m_subgraph(&graph),
          m_subgraphName(std::move(name)), m_formals(std::move(formals)), m_captured(std::move(captured)) {}

    Expected<std::unique_ptr<ir::Graph>> run();

private:
    Status readOpsets();
    Status addInitializers();
    Status addInputs();
    /// Names, sorts and adds the nodes, then the outputs, and verifies: what a graph and a
    /// subgraph do alike once their inputs are in.
    Expected<std::unique_ptr<ir::Graph>> addNodesAndFinish();
    Status nameNodes();
    Expected<std::vector<int>> sortNodes();
    Status addNode(int index);
    /// The graph attributes (If branches) of one node, by attribute name, in file order.
    using Branches = std::vector<std::pair<std::string, onnx::GraphProto*>>;
    Expected<ir::OpKind> findKind(const onnx::NodeProto& node, const std::string& domain,
                                  const std::string& name) const;
    Status checkArity(int index, const ir::OpInfo& info, int numIn, int numOut) const;
    Expected<std::vector<ir::Value*>> nodeInputs(int index, const ir::OpInfo& info,
                                                 int numIn) const;
    std::vector<std::string> nodeOutputNames(int index, int numOut) const;
    Status convertAttributes(int index, ir::OpKind kind, ir::AttributeMap& attrs,
                             Branches& branches);
    Status addCapturedInputs(int index, std::vector<ir::Value*>& inputs) const;
    Status addConstantNode(onnx::NodeProto& node, const std::string& name);
    Status addUpsample(int index);
    Expected<ir::Attribute> convertAttribute(AttributeProto& attr, const std::string& nodeName);
    Expected<ir::TensorType> convertType(const onnx::ValueInfoProto& info, const char* role);
    /// The types the model declares for every output of `n` (graph outputs or value_info), or
    /// nullopt when one is missing or unusable; the fallback when inference needs run-time values.
    std::optional<std::vector<ir::TensorType>> declaredTypes(const ir::Node& n);
    Status addOutputs();
    Expected<ir::TensorType> mergeDeclared(const onnx::ValueInfoProto& info, const ir::TensorType& computed,
                                           const std::string& what);
    Status verifyAndInfer();
    Status importBranches(ir::Node* n);

    int64_t opsetOf(const std::string& domain) const {
        auto it = m_opsets.find(normaliseDomain(domain));
        return it == m_opsets.end() ? 0 : it->second;
    }
    std::string qualifiedType(const onnx::NodeProto& node) const {
        std::string d = normaliseDomain(node.domain());
        return d.empty() ? node.op_type() : d + "." + node.op_type();
    }
    std::string nodeError(int index) const {
        return "node '" + m_nodeNames[index] + "' (" + qualifiedType(m_onnx->node(index)) + ")";
    }

    onnx::ModelProto& m_model;
    onnx::GraphProto* m_onnx = nullptr;
    std::string m_path;
    std::unique_ptr<ir::Graph> m_graph;
    std::map<std::string, int64_t> m_opsets;      ///< domain ("" = ai.onnx) → version
    std::set<std::string> m_initializerNames;
    std::vector<std::string> m_nodeNames;         ///< unique name per ONNX node, by file index
    std::set<std::string> m_onnxValueNames;       ///< every value name the file mentions
    onnx::GraphProto* m_subgraph = nullptr;       ///< set when importing a subgraph
    std::string m_subgraphName;
    std::vector<ir::TensorType> m_formals;        ///< types of a subgraph's declared inputs
    std::vector<std::pair<std::string, ir::TensorType>> m_captured;
    /// Graph attributes of If, Loop and Scan nodes, imported once the node's inputs have types.
    std::map<std::string, std::vector<std::pair<std::string, onnx::GraphProto*>>> m_pendingBranches;
};

Expected<std::unique_ptr<ir::Graph>> Importer::run() {
    if (m_subgraph) {
        m_onnx = m_subgraph;
        m_graph = std::make_unique<ir::Graph>(m_subgraphName);
        if (m_onnx->input_size() != static_cast<int>(m_formals.size()))
            return makeError(ErrorKind::Invalid,
                             "subgraph '" + m_subgraphName + "' declares " + std::to_string(m_onnx->input_size()) +
                                 " inputs; " + (m_formals.empty() ? std::string("If branches take none")
                                                                 : "its node binds " + std::to_string(m_formals.size())),
                             m_subgraphName);
        if (m_onnx->sparse_initializer_size() > 0)
            return makeError(ErrorKind::Unsupported,
                             "subgraph '" + m_subgraphName + "' has a sparse initializer, which is not supported",
                             m_subgraphName);
        SX_TRY(addInitializers());
        for (int i = 0; i < m_onnx->input_size(); ++i) {
            const std::string& name = m_onnx->input(i).name();
            if (name.empty())
                return makeError(ErrorKind::Invalid, "subgraph '" + m_subgraphName + "' has an unnamed input",
                                 m_subgraphName);
            SX_TRY(m_graph->addInput(name, m_formals[static_cast<size_t>(i)]));
        }
        for (const auto& [name, type] : m_captured)
            SX_TRY(m_graph->addInput(name, type));
        return addNodesAndFinish();
    }
    if (!m_model.has_graph())
        return makeError(ErrorKind::Parse, "model '" + m_path + "' has no graph");
    m_onnx = m_model.mutable_graph();
    std::string graphName = m_onnx->name();
    if (graphName.empty())
        graphName = std::filesystem::path(m_path).stem().string();
    m_graph = std::make_unique<ir::Graph>(graphName.empty() ? "main" : graphName);

    SX_TRY(readOpsets());
    if (m_onnx->sparse_initializer_size() > 0)
        return makeError(ErrorKind::Unsupported,
                         "model '" + m_path + "' has sparse initializer '" +
                             m_onnx->sparse_initializer(0).values().name() +
                             "', which is not supported");
    SX_TRY(addInitializers());
    SX_TRY(addInputs());
    return addNodesAndFinish();
}

Expected<std::unique_ptr<ir::Graph>> Importer::addNodesAndFinish() {
    SX_TRY(nameNodes());
    SX_ASSIGN(std::vector<int> order, sortNodes());
    for (int index : order)
        SX_TRY(addNode(index));
    SX_TRY(addOutputs());
    SX_TRY(m_graph->topoSort());
    SX_TRY(verifyAndInfer());
    for (int i = 0; i < m_onnx->output_size(); ++i) // outputs no node computes (inputs, constants)
        SX_TRY(mergeDeclared(m_onnx->output(i), m_graph->outputs()[static_cast<size_t>(i)]->type(), "output"));
    return std::move(m_graph);
}

Status Importer::readOpsets() {
    for (const onnx::OperatorSetIdProto& op : m_model.opset_import())
        m_opsets[normaliseDomain(op.domain())] = op.version();
    // IR version 1–2 models predate opset_import and mean opset 1, which is below our range.
    int64_t opset = opsetOf("");
    if (opset == 0 && m_onnx->node_size() > 0)
        return makeError(ErrorKind::Unsupported,
                         "model '" + m_path + "' does not import the ai.onnx opset");
    if (opset != 0 && (opset < kMinOnnxOpset || opset > kMaxOnnxOpset))
        return makeError(ErrorKind::Unsupported,
                         "model '" + m_path + "' uses ai.onnx opset " + std::to_string(opset) +
                             "; supported opsets are " + std::to_string(kMinOnnxOpset) + " to " +
                             std::to_string(kMaxOnnxOpset));
    return {};
}

Status Importer::addInitializers() {
    for (int i = 0; i < m_onnx->initializer_size(); ++i) {
        onnx::TensorProto& proto = *m_onnx->mutable_initializer(i);
        const std::string name = proto.name();
        if (name.empty())
            return makeError(ErrorKind::Invalid,
                             "initializer #" + std::to_string(i) + " of model '" + m_path +
                                 "' has no name");
        if (!m_initializerNames.insert(name).second)
            return makeError(ErrorKind::Invalid, "initializer '" + name + "' is defined twice",
                             name);
        SX_ASSIGN(ir::Tensor data, tensorFromProto(proto, "initializer '" + name + "'"));
        SX_TRY(m_graph->addConstant(name, std::move(data)));
    }
    return {};
}

Expected<ir::TensorType> Importer::convertType(const onnx::ValueInfoProto& info, const char* role) {
    const std::string what = std::string(role) + " '" + info.name() + "'";
    if (!info.has_type() || !info.type().has_tensor_type())
        return makeError(ErrorKind::Unsupported, what + " is not a tensor (or has no type)",
                         info.name());
    const onnx::TypeProto_Tensor& tt = info.type().tensor_type();
    std::optional<ir::DType> dtype = dtypeFromOnnx(tt.elem_type());
    if (!dtype)
        return makeError(ErrorKind::Unsupported,
                         what + " has element type " + onnxTypeName(tt.elem_type()) +
                             ", which is not supported",
                         info.name());
    if (!tt.has_shape())
        return makeError(ErrorKind::Unsupported,
                         what + " has no shape (unknown rank), which is not supported",
                         info.name());
    ir::TensorType type;
    type.dtype = *dtype;
    for (const onnx::TensorShapeProto_Dimension& d : tt.shape().dim()) {
        if (d.has_dim_value()) {
            if (d.dim_value() < 0)
                return makeError(ErrorKind::Invalid,
                                 what + " has a negative dimension " +
                                     std::to_string(d.dim_value()),
                                 info.name());
            type.shape.push_back(ir::Dim::known(d.dim_value()));
        } else if (d.has_dim_param() && !d.dim_param().empty()) {
            type.shape.push_back(ir::Dim::symbolic(d.dim_param()));
        } else {
            type.shape.push_back(ir::Dim::symbolic("?"));
        }
    }
    return type;
}

Status Importer::addInputs() {
    for (const onnx::ValueInfoProto& info : m_onnx->input()) {
        // Before IR version 4 every initializer was also listed as an input; it is a constant.
        if (m_initializerNames.count(info.name()))
            continue;
        if (info.name().empty())
            return makeError(ErrorKind::Invalid, "model '" + m_path + "' has an unnamed input");
        SX_ASSIGN(ir::TensorType type, convertType(info, "input"));
        SX_TRY(m_graph->addInput(info.name(), std::move(type)));
    }
    return {};
}

Status Importer::nameNodes() {
    for (const onnx::TensorProto& t : m_onnx->initializer())
        m_onnxValueNames.insert(t.name());
    for (const onnx::ValueInfoProto& v : m_onnx->input())
        m_onnxValueNames.insert(v.name());
    for (const onnx::NodeProto& n : m_onnx->node())
        for (const std::string& o : n.output())
            m_onnxValueNames.insert(o);

    // Names are given in file order so they do not depend on how the list gets sorted.
    std::set<std::string> taken;
    m_nodeNames.reserve(m_onnx->node_size());
    for (int i = 0; i < m_onnx->node_size(); ++i) {
        const onnx::NodeProto& n = m_onnx->node(i);
        std::string base = n.name().empty() ? n.op_type() + "_" + std::to_string(i) : n.name();
        std::string name = base;
        for (int k = 1; taken.count(name); ++k)
            name = base + "_" + std::to_string(k);
        taken.insert(name);
        m_nodeNames.push_back(name);
    }
    return {};
}

Expected<std::vector<int>> Importer::sortNodes() {
    const int count = m_onnx->node_size();
    std::map<std::string, int> producer;
    for (int i = 0; i < count; ++i)
        for (const std::string& o : m_onnx->node(i).output()) {
            if (o.empty())
                continue;
            if (m_graph->findValue(o))
                return makeError(ErrorKind::Invalid,
                                 nodeError(i) + " redefines '" + o +
                                     "', which is a graph input or initializer",
                                 m_nodeNames[i]);
            auto [it, fresh] = producer.emplace(o, i);
            if (!fresh)
                return makeError(ErrorKind::Invalid,
                                 "value '" + o + "' is produced by both node '" +
                                     m_nodeNames[it->second] + "' and node '" + m_nodeNames[i] +
                                     "'",
                                 m_nodeNames[i]);
        }

    // Kahn's algorithm; among ready nodes the earliest in the file goes first, so a sorted file
    // keeps its order exactly.
    std::vector<int> pending(count, 0);
    std::vector<std::vector<int>> dependents(count);
    for (int i = 0; i < count; ++i) {
        std::vector<std::string> reads(m_onnx->node(i).input().begin(), m_onnx->node(i).input().end());
        for (std::string& name : capturedNames(m_onnx->node(i)))
            reads.push_back(std::move(name));
        for (const std::string& in : reads) {
            if (in.empty() || m_graph->findValue(in))
                continue;
            auto it = producer.find(in);
            if (it == producer.end())
                return makeError(ErrorKind::Invalid,
                                 nodeError(i) + " uses undefined value '" + in + "'",
                                 m_nodeNames[i]);
            ++pending[i];
            dependents[it->second].push_back(i);
        }
    }
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    for (int i = 0; i < count; ++i)
        if (pending[i] == 0)
            ready.push(i);
    std::vector<int> order;
    order.reserve(count);
    while (!ready.empty()) {
        int i = ready.top();
        ready.pop();
        order.push_back(i);
        for (int d : dependents[i])
            if (--pending[d] == 0)
                ready.push(d);
    }
    if (static_cast<int>(order.size()) != count) {
        for (int i = 0; i < count; ++i)
            if (pending[i] > 0)
                return makeError(ErrorKind::Invalid,
                                 "model '" + m_path + "' has a cycle through " + nodeError(i),
                                 m_nodeNames[i]);
    }
    return order;
}

Expected<ir::Attribute> Importer::convertAttribute(AttributeProto& attr,
                                                   const std::string& nodeName) {
    const std::string what = "attribute '" + attr.name() + "' of node '" + nodeName + "'";
    if (!attr.ref_attr_name().empty())
        return makeError(ErrorKind::Unsupported,
                         what + " refers to a function attribute, which is not supported",
                         nodeName);
    AttributeProto::AttributeType type = attr.type();
    if (type == AttributeProto::UNDEFINED) {
        // Models older than IR version 2 leave the type out; infer it from the field that is set.
        if (attr.has_f()) type = AttributeProto::FLOAT;
        else if (attr.has_i()) type = AttributeProto::INT;
        else if (attr.has_s()) type = AttributeProto::STRING;
        else if (attr.has_t()) type = AttributeProto::TENSOR;
        else if (attr.has_g()) type = AttributeProto::GRAPH;
        else if (attr.floats_size() > 0) type = AttributeProto::FLOATS;
        else if (attr.ints_size() > 0) type = AttributeProto::INTS;
        else if (attr.strings_size() > 0) type = AttributeProto::STRINGS;
        else
            return makeError(ErrorKind::Invalid, what + " has no type and no value", nodeName);
    }
    switch (type) {
    case AttributeProto::INT: return ir::Attribute(static_cast<int64_t>(attr.i()));
    case AttributeProto::FLOAT: return ir::Attribute(static_cast<double>(attr.f()));
    case AttributeProto::STRING: return ir::Attribute(attr.s());
    case AttributeProto::INTS:
        return ir::Attribute(std::vector<int64_t>(attr.ints().begin(), attr.ints().end()));
    case AttributeProto::FLOATS:
        return ir::Attribute(std::vector<double>(attr.floats().begin(), attr.floats().end()));
    case AttributeProto::STRINGS:
        return ir::Attribute(std::vector<std::string>(attr.strings().begin(), attr.strings().end()));
    case AttributeProto::TENSOR: {
        SX_ASSIGN(ir::Tensor t, tensorFromProto(*attr.mutable_t(), what));
        return ir::Attribute(std::move(t));
    }
    default:
        return makeError(ErrorKind::Unsupported,
                         what + " has type " + AttributeProto::AttributeType_Name(type) +
                             ", which is not supported yet",
                         nodeName);
    }
}

Status Importer::addConstantNode(onnx::NodeProto& node, const std::string& name) {
    if (node.output_size() != 1 || node.output(0).empty())
        return makeError(ErrorKind::Invalid,
                         "Constant node '" + name + "' must have exactly one output", name);
    if (node.attribute_size() != 1)
        return makeError(ErrorKind::Invalid,
                         "Constant node '" + name + "' must have exactly one value attribute",
                         name);
    AttributeProto& attr = *node.mutable_attribute(0);
    const std::string what = "value of Constant node '" + name + "'";
    ir::Tensor value;
    if (attr.name() == "value") {
        SX_ASSIGN(value, tensorFromProto(*attr.mutable_t(), what));
    } else if (attr.name() == "value_float") {
        value = ir::Tensor::scalar(attr.f(), ir::DType::F32);
    } else if (attr.name() == "value_int") {
        value = ir::Tensor(ir::DType::I64, {});
        value.mutableData<int64_t>()[0] = attr.i();
    } else if (attr.name() == "value_floats") {
        value = ir::Tensor::fromVector<float>({attr.floats_size()},
                                              {attr.floats().begin(), attr.floats().end()});
    } else if (attr.name() == "value_ints") {
        value = ir::Tensor::fromVector<int64_t>({attr.ints_size()},
                                                {attr.ints().begin(), attr.ints().end()});
    } else {
        return makeError(ErrorKind::Unsupported,
                         "Constant node '" + name + "' has attribute '" + attr.name() +
                             "', which is not supported",
                         name);
    }
    SX_TRY(m_graph->addConstant(node.output(0), std::move(value)));
    return {};
}

Status Importer::addNode(int index) {
    onnx::NodeProto& node = *m_onnx->mutable_node(index);
    const std::string& name = m_nodeNames[index];
    const std::string domain = normaliseDomain(node.domain());
    if (domain.empty() && node.op_type() == "Constant")
        return addConstantNode(node, name);
    if (domain.empty() && node.op_type() == "Upsample")
        return addUpsample(index);
    SX_ASSIGN(const ir::OpKind kind, findKind(node, domain, name));
    const ir::OpInfo& info = ir::opInfo(kind);

    // Trailing empty names are omitted optional inputs/outputs; interior ones stay as gaps.
    int numIn = node.input_size();
    while (numIn > 0 && node.input(numIn - 1).empty())
        --numIn;
    int numOut = node.output_size();
    while (numOut > 0 && node.output(numOut - 1).empty())
        --numOut;
    SX_TRY(checkArity(index, info, numIn, numOut));
    SX_ASSIGN(std::vector<ir::Value*> inputs, nodeInputs(index, info, numIn));
    const std::vector<std::string> outputs = nodeOutputNames(index, numOut);

    ir::AttributeMap attrs;
    Branches branches;
    SX_TRY(convertAttributes(index, kind, attrs, branches));
    // Softmax, LogSoftmax and Hardmax changed meaning at opset 13 (axis default and 2-D
    // coercion); GridSample renamed its modes and took N-D input at 20; GroupNormalization's
    // scale and bias became per channel at 21; DFT's axis became an input (with another default)
    // at 20; Attention has versions 23, 24 and 25; RoiAlign's coordinate transformation
    // defaults to half_pixel from 16: the kernel needs it.
    if (kind == ir::OpKind::Softmax || kind == ir::OpKind::LogSoftmax ||
        kind == ir::OpKind::Hardmax || kind == ir::OpKind::GridSample ||
        kind == ir::OpKind::GroupNormalization || kind == ir::OpKind::DFT ||
        kind == ir::OpKind::OnnxAttention || kind == ir::OpKind::Scan || kind == ir::OpKind::RoiAlign)
        attrs["_opset"] = opsetOf(domain);

    // A Loop's or Scan's captured values follow its ONNX inputs, gaps included: a Loop's body
    // declares the iteration number and the condition whether or not M and cond are given.
    if (kind == ir::OpKind::Loop || kind == ir::OpKind::Scan) {
        size_t declared = static_cast<size_t>(node.input_size());
        if (kind == ir::OpKind::Loop)
            for (const auto& [attrName, proto] : branches)
                declared = std::max(declared, static_cast<size_t>(proto->input_size()));
        inputs.resize(std::max(inputs.size(), declared), nullptr);
        const size_t before = inputs.size();
        SX_TRY(addCapturedInputs(index, inputs));
        attrs["num_captured"] = static_cast<int64_t>(inputs.size() - before);
    } else {
        SX_TRY(addCapturedInputs(index, inputs));
    }
    if (!branches.empty())
        m_pendingBranches[name] = std::move(branches);

    // A sextant.ElementwiseGroup (an export of Sextant's own, docs/onnx-export.md) lists its
    // steps as the string attribute "body", in the IR text's form.
    std::shared_ptr<const ir::FusedBody> body;
    if (kind == ir::OpKind::ElementwiseGroup) {
        auto it = attrs.find("body");
        const auto* lines = it == attrs.end() ? nullptr : std::get_if<std::vector<std::string>>(&it->second);
        if (!lines)
            return makeError(ErrorKind::Invalid, nodeError(index) + " has no string list attribute 'body' (its steps)",
                             name);
        Expected<ir::FusedBody> parsed = ir::parseBody(*lines);
        if (!parsed.ok())
            return makeError(ErrorKind::Invalid, nodeError(index) + ": " + parsed.error().message, name);
        body = std::make_shared<const ir::FusedBody>(std::move(parsed).value());
        attrs.erase(it);
    }
    SX_ASSIGN(ir::Node * n, m_graph->addNode(kind, name, std::move(inputs), outputs,
                                             std::move(attrs)));
    if (body)
        n->setBody(std::move(body));
    n->mutableProvenance().origins = {name};
    n->mutableProvenance().createdBy = "import";
    return {};
}

/// Upsample-7 (scales as an attribute) and Upsample-9 (scales as input 1) as the Resize-10 that
/// replaced it: Resize(X, scales) with the same mode, which the Resize kernel computes with
/// opset 10's asymmetric coordinates and nearest rounding down, as Upsample did.
Status Importer::addUpsample(int index) {
    const onnx::NodeProto& node = m_onnx->node(index);
    const std::string& name = m_nodeNames[index];
    const int64_t opset = opsetOf("");
    if (opset >= 10)
        return makeError(ErrorKind::Invalid,
                         "op 'Upsample' at node '" + name + "' is deprecated at opset " + std::to_string(opset) +
                             " (ONNX replaced it by Resize at opset 10)",
                         name);
    int numIn = node.input_size();
    while (numIn > 0 && node.input(numIn - 1).empty())
        --numIn;
    const int wantIn = opset >= 9 ? 2 : 1;
    if (numIn != wantIn || node.input(0).empty() || (wantIn == 2 && node.input(1).empty()))
        return makeError(ErrorKind::Invalid,
                         nodeError(index) + " has " + std::to_string(numIn) + " inputs, expected " +
                             std::to_string(wantIn) + " at opset " + std::to_string(opset),
                         name);
    if (node.output_size() != 1 || node.output(0).empty())
        return makeError(ErrorKind::Invalid, nodeError(index) + " must have one output", name);
    std::string mode = "nearest";
    std::vector<float> scales;
    bool haveScales = false;
    for (const AttributeProto& a : node.attribute()) {
        if (a.name() == "mode") {
            if (a.type() != AttributeProto::STRING && !a.has_s())
                return makeError(ErrorKind::Invalid, nodeError(index) + ": attribute 'mode' must be a string", name);
            mode = a.s();
        } else if (a.name() == "scales" && opset < 9) {
            scales.assign(a.floats().begin(), a.floats().end());
            haveScales = true;
        } else {
            return makeError(ErrorKind::Invalid,
                             nodeError(index) + " has attribute '" + a.name() + "', which Upsample-" +
                                 std::to_string(opset < 9 ? 7 : 9) + " does not take",
                             name);
        }
    }
    if (mode != "nearest" && mode != "linear")
        return makeError(ErrorKind::Invalid,
                         nodeError(index) + ": mode '" + mode + "' is not 'nearest' or 'linear'", name);
    std::vector<ir::Value*> inputs{m_graph->findValue(node.input(0))};
    if (opset < 9) {
        if (!haveScales || scales.empty())
            return makeError(ErrorKind::Invalid, nodeError(index) + " lacks attribute 'scales'", name);
        std::string scalesName = name + "_scales";
        for (int k = 1; m_onnxValueNames.count(scalesName) || m_graph->findValue(scalesName); ++k)
            scalesName = name + "_scales_" + std::to_string(k);
        const int64_t count = static_cast<int64_t>(scales.size());
        SX_ASSIGN(ir::Value * sv, m_graph->addConstant(scalesName, ir::Tensor::fromVector<float>({count}, scales)));
        inputs.push_back(sv);
    } else {
        inputs.push_back(m_graph->findValue(node.input(1)));
    }
    for (size_t i = 0; i < inputs.size(); ++i)
        if (!inputs[i])
            return makeError(ErrorKind::Invalid,
                             nodeError(index) + " reads '" + node.input(static_cast<int>(i)) + "', which is not defined",
                             name);
    ir::AttributeMap attrs;
    attrs["mode"] = mode;
    SX_ASSIGN(ir::Node * n, m_graph->addNode(ir::OpKind::Resize, name, std::move(inputs), {node.output(0)},
                                             std::move(attrs)));
    n->mutableProvenance().origins = {name};
    n->mutableProvenance().createdBy = "import";
    return {};
}

/// The op a node names, or an error naming the opset when the op table does not have it.
Expected<ir::OpKind> Importer::findKind(const onnx::NodeProto& node, const std::string& domain,
                                        const std::string& name) const {
    std::optional<ir::OpKind> kind = ir::findOp(domain, node.op_type());
    if (!kind) {
        int64_t opset = opsetOf(domain);
        return makeError(ErrorKind::Unsupported,
                         "unsupported op '" + qualifiedType(node) + "' (opset " +
                             (opset ? std::to_string(opset) : std::string("?")) +
                             ") at node '" + name + "'",
                         name);
    }
    // An ai.onnx op the model's opset does not have yet (HardSwish in an opset 13 model) is not
    // that op: ONNX would reject the model, and so do we.
    if (normaliseDomain(domain).empty()) {
        const int64_t opset = opsetOf(domain);
        std::span<const int> history = onnxOpHistory(node.op_type());
        if (!history.empty() && !onnxOpVersion(node.op_type(), opset))
            return makeError(ErrorKind::Invalid,
                             "op '" + node.op_type() + "' at node '" + name + "' does not exist at opset " +
                                 std::to_string(opset) + ": ONNX added it at opset " +
                                 std::to_string(history.front()),
                             name);
        // A version of an op in the table that its kernel does not implement (Attention-24).
        const std::optional<int> version = onnxOpVersion(node.op_type(), opset);
        std::span<const int> missing = unimplementedOpVersions(node.op_type());
        if (version && std::find(missing.begin(), missing.end(), *version) != missing.end()) {
            std::string have;
            for (int v : history)
                if (std::find(missing.begin(), missing.end(), v) == missing.end())
                    have += (have.empty() ? "" : ", ") + node.op_type() + "-" + std::to_string(v);
            return makeError(ErrorKind::Unsupported,
                             "op '" + node.op_type() + "' at node '" + name + "' is " + node.op_type() + "-" +
                                 std::to_string(*version) + " at opset " + std::to_string(opset) +
                                 ", which Sextant does not implement (it has " + have + ")",
                             name);
        }
    }
    return *kind;
}

/// "2", "1 to 3" or "1 or more" (hi < 0: no upper bound).
std::string countRange(int lo, int hi) {
    return hi < 0 ? std::to_string(lo) + " or more"
                  : lo == hi ? std::to_string(lo)
                             : std::to_string(lo) + " to " + std::to_string(hi);
}

/// The node's input and output counts (trailing omitted ones not counted) are ones its op takes.
Status Importer::checkArity(int index, const ir::OpInfo& info, int numIn, int numOut) const {
    const std::string& name = m_nodeNames[index];
    if (numIn < info.minInputs || (info.maxInputs >= 0 && numIn > info.maxInputs))
        return makeError(ErrorKind::Invalid,
                         nodeError(index) + " has " + std::to_string(numIn) +
                             " inputs, expected " + countRange(info.minInputs, info.maxInputs),
                         name);
    if (numOut < info.minOutputs || numOut > info.maxOutputs)
        return makeError(ErrorKind::Invalid,
                         nodeError(index) + " has " + std::to_string(numOut) +
                             " outputs, expected " + countRange(info.minOutputs, info.maxOutputs),
                         name);
    return {};
}

/// The values of the node's first `numIn` inputs (nullptr for an omitted optional one).
Expected<std::vector<ir::Value*>> Importer::nodeInputs(int index, const ir::OpInfo& info,
                                                       int numIn) const {
    const onnx::NodeProto& node = m_onnx->node(index);
    const std::string& name = m_nodeNames[index];
    std::vector<ir::Value*> inputs;
    for (int i = 0; i < numIn; ++i) {
        const std::string& in = node.input(i);
        // An empty name marks an omitted optional input; the op's required ones cannot be omitted
        // (every shape inference relies on them).
        if (in.empty() && i < info.minInputs)
            return makeError(ErrorKind::Invalid,
                             nodeError(index) + " leaves required input " + std::to_string(i) +
                                 " empty",
                             name);
        inputs.push_back(in.empty() ? nullptr : m_graph->findValue(in));
    }
    return inputs;
}

/// The names of the node's first `numOut` outputs, a fresh one for each omitted output.
std::vector<std::string> Importer::nodeOutputNames(int index, int numOut) const {
    const onnx::NodeProto& node = m_onnx->node(index);
    const std::string& name = m_nodeNames[index];
    std::vector<std::string> outputs;
    for (int i = 0; i < numOut; ++i) {
        std::string out = node.output(i);
        if (out.empty()) {
            // An unused optional output in the middle still needs a value; give it a fresh name.
            std::string base = name + "_unused" + std::to_string(i);
            out = base;
            for (int k = 1; m_onnxValueNames.count(out) || m_graph->findValue(out); ++k)
                out = base + "_" + std::to_string(k);
        }
        outputs.push_back(std::move(out));
    }
    return outputs;
}

/// Converts the node's attributes into `attrs`; its graph attributes (If's branches only) go
/// to `branches`, imported later.
Status Importer::convertAttributes(int index, ir::OpKind kind, ir::AttributeMap& attrs,
                                   Branches& branches) {
    onnx::NodeProto& node = *m_onnx->mutable_node(index);
    const std::string& name = m_nodeNames[index];
    for (AttributeProto& a : *node.mutable_attribute()) {
        if (a.name().empty())
            return makeError(ErrorKind::Invalid, nodeError(index) + " has an unnamed attribute",
                             name);
        if (isGraphAttribute(a)) {
            const bool loop = kind == ir::OpKind::Loop || kind == ir::OpKind::Scan;
            if (kind != ir::OpKind::If && !loop)
                return makeError(ErrorKind::Unsupported,
                                 nodeError(index) + " has graph attribute '" + a.name() +
                                     "'; subgraphs are supported on If, Loop and Scan only",
                                 name);
            if (loop ? a.name() != "body" : a.name() != "then_branch" && a.name() != "else_branch")
                return makeError(ErrorKind::Invalid,
                                 nodeError(index) + " has unknown graph attribute '" + a.name() + "'", name);
            for (const auto& [other, proto] : branches)
                if (other == a.name())
                    return makeError(ErrorKind::Invalid,
                                     nodeError(index) + " has attribute '" + a.name() + "' twice", name);
            branches.emplace_back(a.name(), a.mutable_g());
            continue;
        }
        if (a.name() == "num_captured" || a.name() == "_opset")
            return makeError(ErrorKind::Invalid, nodeError(index) + " has attribute '" + a.name() +
                                                     "', a name Sextant keeps for its own use", name);
        SX_ASSIGN(ir::Attribute value, convertAttribute(a, name));
        if (!attrs.emplace(a.name(), std::move(value)).second)
            return makeError(ErrorKind::Invalid,
                             nodeError(index) + " has attribute '" + a.name() + "' twice", name);
    }
    return {};
}

/// Subgraphs are isolated from above: the outer values they read become explicit inputs.
Status Importer::addCapturedInputs(int index, std::vector<ir::Value*>& inputs) const {
    for (const std::string& captured : capturedNames(m_onnx->node(index))) {
        ir::Value* v = m_graph->findValue(captured);
        if (!v)
            return makeError(ErrorKind::Invalid,
                             nodeError(index) + " has a subgraph that uses undefined value '" + captured + "'",
                             m_nodeNames[index]);
        inputs.push_back(v);
    }
    return {};
}

Status Importer::verifyAndInfer() {
    // What the model declares for its values: each computed type is checked against it and
    // refined by it (mergeDeclared).
    std::unordered_map<std::string, std::pair<const onnx::ValueInfoProto*, const char*>> declarations;
    for (const onnx::ValueInfoProto& info : m_onnx->value_info())
        declarations.emplace(info.name(), std::make_pair(&info, "value"));
    for (const onnx::ValueInfoProto& info : m_onnx->output())
        declarations[info.name()] = std::make_pair(&info, "output");
    // Node by node in topological order: a node's verifier may look at its input types, which
    // are only known once its producers have been inferred.
    for (ir::Node* n : m_graph->nodes()) {
        auto describe = [&](Error e) {
            e.message = "node '" + n->name() + "' (" + ir::qualifiedOpName(n->kind()) + "): " +
                        e.message;
            e.subject = n->name();
            return e;
        };
        SX_TRY(importBranches(n));
        Status verified = n->info().verify(*n);
        if (!verified.ok())
            return describe(verified.takeError());
        auto types = n->info().infer(*n);
        if (!types.ok()) {
            // Inference cannot tell some types without the values (a Reshape to a shape computed
            // at run time): the model's own declarations (graph outputs, value_info) stand in when
            // they cover every output. The interpreter still checks each value against its type.
            Error e = types.takeError();
            if (e.kind != ErrorKind::Unsupported)
                return describe(std::move(e));
            auto declared = declaredTypes(*n);
            if (!declared)
                return describe(std::move(e));
            types = std::move(*declared);
        }
        if (types->size() < n->numOutputs())
            return makeError(ErrorKind::Verify,
                             "shape inference of node '" + n->name() + "' gave too few outputs",
                             n->name());
        for (size_t i = 0; i < n->numOutputs(); ++i) {
            ir::TensorType t = (*types)[i];
            if (auto d = declarations.find(n->output(i)->name()); d != declarations.end()) {
                Expected<ir::TensorType> merged = mergeDeclared(*d->second.first, t, d->second.second);
                if (!merged.ok())
                    return describe(merged.takeError());
                t = std::move(*merged);
            }
            n->output(i)->setType(std::move(t));
        }
    }
    return {};
}

std::optional<std::vector<ir::TensorType>> Importer::declaredTypes(const ir::Node& n) {
    std::vector<ir::TensorType> types;
    for (const ir::Value* o : n.outputs()) {
        const onnx::ValueInfoProto* found = nullptr;
        for (const auto* list : {&m_onnx->output(), &m_onnx->value_info()})
            for (const onnx::ValueInfoProto& info : *list)
                if (!found && info.name() == o->name())
                    found = &info;
        if (!found)
            return std::nullopt;
        auto t = convertType(*found, "output");
        if (!t.ok())
            return std::nullopt;
        types.push_back(std::move(t).value());
    }
    return types;
}

namespace {

/// The rank a subgraph declares for an input (0 when it declares no shape).
size_t declaredRank(const onnx::ValueInfoProto& info) {
    if (!info.has_type() || !info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
        return 0;
    return static_cast<size_t>(info.type().tensor_type().shape().dim_size());
}

/// Where two types of one carried value disagree, the dims that differ become unknown.
bool widenInto(ir::TensorType& formal, const ir::TensorType& seen) {
    if (formal.rank() != seen.rank() || formal.dtype != seen.dtype)
        return false;
    bool changed = false;
    for (size_t d = 0; d < formal.rank(); ++d)
        if (!(formal.shape[d] == seen.shape[d]) && formal.shape[d].isKnown()) {
            formal.shape[d] = ir::Dim::symbolic("?");
            changed = true;
        }
    return changed;
}

} // namespace

Status Importer::importBranches(ir::Node* n) {
    auto it = m_pendingBranches.find(n->name());
    if (it == m_pendingBranches.end())
        return {};
    const bool loop = n->kind() == ir::OpKind::Loop, scan = n->kind() == ir::OpKind::Scan;
    const size_t numCaptured = loop || scan ? static_cast<size_t>(n->attrInt("num_captured", 0)) : n->numInputs() - 1;
    // The captured values are the node's last inputs, now typed.
    std::vector<std::pair<std::string, ir::TensorType>> captured;
    for (size_t i = n->numInputs() - numCaptured; i < n->numInputs(); ++i)
        captured.emplace_back(n->input(i)->name(), n->input(i)->type());
    for (auto& [attrName, proto] : it->second) {
        std::string graphName = proto->name().empty() ? n->name() + "." + attrName : proto->name();
        // The declared inputs of a Loop body (iteration number, condition, carried values) and a
        // Scan body (states, one slice of each scan input), typed from the node's inputs.
        std::vector<ir::TensorType> formals;
        size_t firstCarried = 0, numCarried = 0;
        if (loop || scan) {
            const size_t declared = static_cast<size_t>(proto->input_size());
            const size_t onnxInputs = n->numInputs() - numCaptured;
            const bool opset8 = scan && n->attrInt("_opset", 9) < 9;
            const size_t first = opset8 ? 1 : 0;
            if (declared + first != onnxInputs)
                return makeError(ErrorKind::Invalid,
                                 "node '" + n->name() + "' (" + ir::qualifiedOpName(n->kind()) + "): body '" + graphName +
                                     "' declares " + std::to_string(declared) + " inputs for " +
                                     std::to_string(onnxInputs - first) + " node inputs",
                                 n->name());
            const int64_t numScan = scan ? n->attrInt("num_scan_inputs", 0) : 0;
            if (scan && (numScan < 1 || static_cast<size_t>(numScan) > declared))
                return makeError(ErrorKind::Invalid,
                                 "node '" + n->name() + "' (Scan): num_scan_inputs " + std::to_string(numScan) +
                                     " is not between 1 and its " + std::to_string(declared) + " inputs",
                                 n->name());
            const std::vector<int64_t> axes =
                scan && !opset8 ? n->attrInts("scan_input_axes", std::vector<int64_t>(static_cast<size_t>(numScan), 0))
                                : std::vector<int64_t>(static_cast<size_t>(numScan), 0);
            for (size_t j = 0; j < declared; ++j) {
                const ir::Value* in = n->input(first + j);
                if (loop && j < 2) {
                    ir::TensorType t;
                    t.dtype = j == 0 ? ir::DType::I64 : ir::DType::Bool;
                    if (declaredRank(proto->input(static_cast<int>(j))) == 1)
                        t.shape.push_back(ir::Dim::known(1));
                    formals.push_back(std::move(t));
                    continue;
                }
                if (!in)
                    return makeError(ErrorKind::Invalid,
                                     "node '" + n->name() + "' (" + ir::qualifiedOpName(n->kind()) + "): input " +
                                         std::to_string(first + j) + " is missing",
                                     n->name());
                ir::TensorType t = in->type();
                if (opset8 && t.rank() > 0)
                    t.shape.erase(t.shape.begin()); // the batch dim
                const size_t states = scan ? declared - static_cast<size_t>(numScan) : declared;
                if (scan && j >= states) {
                    int64_t axis = axes.size() == static_cast<size_t>(numScan) ? axes[j - states] : 0;
                    const int64_t rank = static_cast<int64_t>(t.rank());
                    if (axis < 0)
                        axis += rank;
                    if (axis < 0 || axis >= rank)
                        return makeError(ErrorKind::Invalid,
                                         "node '" + n->name() + "' (Scan): scan input '" + in->name() + "' " +
                                             in->type().str() + " has no axis " + std::to_string(axis),
                                         n->name());
                    t.shape.erase(t.shape.begin() + axis);
                }
                formals.push_back(std::move(t));
            }
            firstCarried = loop ? 2 : 0;
            numCarried = loop ? declared - 2 : declared - static_cast<size_t>(numScan);
        }
        // A carried value whose dims change from one iteration to the next: those dims become
        // unknown and the body is imported again (each round only forgets dims, so this ends).
        // Importing takes the tensors' bytes out of the proto it reads: later rounds read a copy.
        onnx::GraphProto pristine;
        if (numCarried > 0)
            pristine = *proto;
        std::unique_ptr<ir::Graph> body;
        for (int round = 0;; ++round) {
            onnx::GraphProto again;
            if (round > 0)
                again = pristine;
            Importer sub(*this, round > 0 ? again : *proto, graphName, formals, captured);
            auto g = sub.run();
            if (!g.ok()) {
                Error e = g.takeError();
                e.message = "in " + attrName + " of node '" + n->name() + "': " + e.message;
                return e;
            }
            body = std::move(g).value();
            bool changed = false;
            const size_t outFirst = loop ? 1 : 0;
            for (size_t c = 0; c < numCarried && outFirst + c < body->outputs().size(); ++c)
                changed = widenInto(formals[firstCarried + c], body->outputs()[outFirst + c]->type()) || changed;
            if (!changed || round >= 8)
                break;
        }
        n->setAttr(attrName, std::shared_ptr<const ir::Graph>(std::move(body)));
    }
    m_pendingBranches.erase(it);
    return {};
}

/// A declared type (graph output or value_info) must not contradict the computed one: the same
/// element type and, where both give a rank and a dim, the same. Symbolic dims on either side
/// agree with anything, and so does a declared 0 (older exporters wrote 0 for "unknown"); a
/// declaration without a type or shape is not checked. Where inference could not tell a dim (an
/// unnamed unknown: a Resize to sizes computed at run time) and the model declares it, the
/// declaration refines the computed type; later passes compute it again once the sizes fold.
Expected<ir::TensorType> Importer::mergeDeclared(const onnx::ValueInfoProto& info, const ir::TensorType& computed,
                                                 const std::string& what) {
    auto declared = convertType(info, "output");
    if (!declared.ok())
        return computed;
    const std::string contradiction = what + " '" + info.name() + "' is declared " + declared->str() +
                                      " but computes " + computed.str();
    if (declared->dtype != computed.dtype)
        return makeError(ErrorKind::Invalid, contradiction, info.name());
    const bool ranked = !(info.type().tensor_type().shape().dim_size() == 0 && computed.shape.size() != 0);
    if (!ranked || !info.type().tensor_type().has_shape())
        return computed;
    if (declared->shape.size() != computed.shape.size())
        return makeError(ErrorKind::Invalid, contradiction, info.name());
    ir::TensorType merged = computed;
    for (size_t i = 0; i < computed.shape.size(); ++i) {
        const ir::Dim& d = declared->shape[i];
        const ir::Dim& c = computed.shape[i];
        const bool declaredKnown = d.isKnown() && d.value != 0;
        if (declaredKnown && c.isKnown() && d.value != c.value)
            return makeError(ErrorKind::Invalid, contradiction, info.name());
        if (declaredKnown && !c.isKnown() && c.symbol == "?")
            merged.shape[i] = d;
    }
    return merged;
}

Status Importer::addOutputs() {
    std::vector<ir::Value*> outputs;
    std::unordered_set<std::string> seen;
    for (const onnx::ValueInfoProto& info : m_onnx->output()) {
        ir::Value* v = m_graph->findValue(info.name());
        if (!v)
            return makeError(ErrorKind::Invalid,
                             "model '" + m_path + "' has output '" + info.name() +
                                 "', which no node computes",
                             info.name());
        if (!seen.insert(info.name()).second)
            return makeError(ErrorKind::Invalid,
                             "model '" + m_path + "' lists output '" + info.name() + "' twice", info.name());
        outputs.push_back(v);
    }
    if (outputs.empty())
        return makeError(ErrorKind::Invalid, "model '" + m_path + "' has no outputs");
    m_graph->setOutputs(std::move(outputs));
    return {};
}

} // namespace

Expected<std::unique_ptr<ir::Graph>> importOnnx(const std::string& path) {
    onnx::ModelProto model;
    SX_TRY(parseProtoFile(path, "model", model));
    SX_TRY(loadExternalData(model, path));
    SX_ASSIGN(std::unique_ptr<ir::Graph> graph, Importer(model, path).run());
    SX_TRY(checkTensorSizes(*graph));
    return graph;
}

std::optional<ir::OpKind> importedAs(const std::string& domain, const std::string& opType) {
    if ((domain.empty() || domain == "ai.onnx") && opType == "Upsample")
        return ir::OpKind::Resize;
    return std::nullopt;
}

} // namespace sextant::frontend
