#include "Graph.h"

#include <algorithm>
#include <atomic>
#include <queue>
#include <unordered_set>

namespace sextant::ir {

// ---- Value

void Value::setType(TensorType t) {
    // Shape inference sets every type again; only a real change is a change of the producer.
    if (t == m_type)
        return;
    m_type = std::move(t);
    restamp();
    if (m_producer)
        ++m_producer->m_version;
}

namespace {
std::atomic<uint64_t> g_nextValueStamp{1};
} // namespace

void Value::restamp() {
    m_stamp = g_nextValueStamp.fetch_add(1, std::memory_order_relaxed);
}

// ---- Node attribute helpers

const Attribute* Node::attr(const std::string& n) const {
    if (!m_attrs)
        return nullptr;
    auto it = m_attrs->find(n);
    return it == m_attrs->end() ? nullptr : &it->second;
}

const AttributeMap& Node::emptyAttrs() {
    static const AttributeMap kEmpty;
    return kEmpty;
}

AttributeMap& Node::ownAttrs() {
    // Shared with a clone or a snapshot (or not made yet): copy before changing. Only the thread
    // changing this node can make a new reference to the map, so a use count of one stays one.
    if (!m_attrs || m_sharedAttrs.use_count() != 1) {
        auto copy = m_attrs ? std::make_shared<AttributeMap>(*m_attrs) : std::make_shared<AttributeMap>();
        m_attrs = copy.get();
        m_sharedAttrs = std::move(copy);
    }
    return *m_attrs;
}

void Node::setSharedAttrs(std::shared_ptr<const AttributeMap> a) {
    // The map is only ever changed through m_attrs after ownAttrs() made sure nobody else holds
    // it; every map stored here was made as a mutable AttributeMap (by ownAttrs or addNode).
    m_attrs = a ? const_cast<AttributeMap*>(a.get()) : nullptr;
    m_sharedAttrs = std::move(a);
}

int64_t Node::attrInt(const std::string& n, int64_t dflt) const {
    const Attribute* a = attr(n);
    if (!a)
        return dflt;
    if (auto* i = std::get_if<int64_t>(a))
        return *i;
    if (auto* d = std::get_if<double>(a))
        return static_cast<int64_t>(*d);
    return dflt;
}

double Node::attrFloat(const std::string& n, double dflt) const {
    const Attribute* a = attr(n);
    if (!a)
        return dflt;
    if (auto* d = std::get_if<double>(a))
        return *d;
    if (auto* i = std::get_if<int64_t>(a))
        return static_cast<double>(*i);
    return dflt;
}

std::string Node::attrString(const std::string& n, const std::string& dflt) const {
    const Attribute* a = attr(n);
    if (auto* s = a ? std::get_if<std::string>(a) : nullptr)
        return *s;
    return dflt;
}

std::vector<int64_t> Node::attrInts(const std::string& n, std::vector<int64_t> dflt) const {
    const Attribute* a = attr(n);
    if (auto* v = a ? std::get_if<std::vector<int64_t>>(a) : nullptr)
        return *v;
    return dflt;
}

std::vector<double> Node::attrFloats(const std::string& n, std::vector<double> dflt) const {
    const Attribute* a = attr(n);
    if (auto* v = a ? std::get_if<std::vector<double>>(a) : nullptr)
        return *v;
    return dflt;
}

const Graph* Node::attrGraph(const std::string& n) const {
    const Attribute* a = attr(n);
    if (auto* g = a ? std::get_if<std::shared_ptr<const Graph>>(a) : nullptr)
        return g->get();
    return nullptr;
}

// ---- Graph

namespace {
std::atomic<uint64_t> g_nextNodeUid{1};

template <typename T> std::unique_ptr<T, PoolDelete> makePooled(std::pmr::memory_resource* pool) {
    void* p = pool->allocate(sizeof(T), alignof(T));
    return std::unique_ptr<T, PoolDelete>(new (p) T(), PoolDelete{pool});
}
} // namespace

Graph::Graph(std::string name)
    : m_name(std::move(name)), m_pool(std::make_unique<std::pmr::unsynchronized_pool_resource>()),
      m_nodes(m_pool.get()) {}

Graph::~Graph() {
    PoolDelete free{m_pool.get()};
    for (Value* v : m_valueSlots)
        if (v)
            free(v);
}

Value* Graph::newValue(const std::string& name) {
    Value* v = makePooled<Value>(m_pool.get()).release();
    v->m_name = name;
    v->restamp();
    v->m_id = m_nextValueId++;
    v->m_slot = static_cast<uint32_t>(m_valueSlots.size());
    m_valueSlots.push_back(v);
    ++m_numValues;
    m_valueIndex.insert(v);
    return v;
}

void Graph::destroyValue(Value* v) {
    m_valueIndex.erase(v->m_name);
    m_valueSlots[v->m_slot] = nullptr;
    --m_numValues;
    if (v->m_isConstant)
        --m_numConstants;
    PoolDelete{m_pool.get()}(v);
    // Compact once the holes outnumber the values (and are more than a few): walks stay
    // proportional to the live values, and each value moves O(1) times on average.
    const size_t holes = m_valueSlots.size() - m_numValues;
    if (holes > 64 && holes > m_numValues) {
        size_t next = 0;
        for (Value* live : m_valueSlots)
            if (live) {
                live->m_slot = static_cast<uint32_t>(next);
                m_valueSlots[next++] = live;
            }
        m_valueSlots.resize(next);
    }
}

Expected<Value*> Graph::addInput(const std::string& name, TensorType type) {
    if (m_valueIndex.contains(name))
        return makeError(ErrorKind::Invalid, "duplicate value name '" + name + "'", name);
    Value* v = newValue(name);
    v->m_type = std::move(type);
    v->m_isInput = true;
    m_inputs.push_back(v);
    return v;
}

Expected<Value*> Graph::addConstant(const std::string& name, Tensor data) {
    if (m_valueIndex.contains(name))
        return makeError(ErrorKind::Invalid, "duplicate value name '" + name + "'", name);
    Value* v = newValue(name);
    v->m_type = data.type();
    v->m_constant = std::move(data);
    v->m_isConstant = true;
    ++m_numConstants;
    queueForCleanup(v);
    return v;
}

Expected<Node*> Graph::addNode(OpKind kind, const std::string& name, std::vector<Value*> inputs,
                               const std::vector<std::string>& outputNames, AttributeMap attrs,
                               Node* before) {
    if (m_nodeIndex.contains(name))
        return makeError(ErrorKind::Invalid, "duplicate node name '" + name + "'", name);
    for (const std::string& o : outputNames)
        if (m_valueIndex.contains(o))
            return makeError(ErrorKind::Invalid,
                             "value '" + o + "' is produced twice (again by node '" + name + "')",
                             name);
    auto node = makePooled<Node>(m_pool.get());
    Node* n = node.get();
    n->m_name = name;
    n->m_uid = g_nextNodeUid.fetch_add(1, std::memory_order_relaxed);
    n->m_kind = kind;
    if (!attrs.empty())
        n->setSharedAttrs(std::make_shared<AttributeMap>(std::move(attrs)));
    n->m_graph = this;
    n->m_inputs = std::move(inputs);
    for (Value* in : n->m_inputs)
        if (in)
            in->m_users.push_back(n);
    for (size_t i = 0; i < outputNames.size(); ++i) {
        Value* v = newValue(outputNames[i]);
        v->m_producer = n;
        v->m_producerOutput = static_cast<int>(i);
        n->m_outputs.push_back(v);
    }
    auto pos = before ? before->m_pos : m_nodes.end();
    n->m_pos = m_nodes.insert(pos, std::move(node));
    m_orderValid.store(false, std::memory_order_relaxed);
    m_nodeIndex.insert(n);
    ++m_structureVersion;
    return n;
}

void Graph::setOutputs(std::vector<Value*> outputs) {
    for (Value* v : m_outputs) {
        v->m_isOutput = false;
        queueForCleanup(v);
    }
    m_outputs = std::move(outputs);
    for (Value* v : m_outputs)
        v->m_isOutput = true;
}

std::vector<Value*> Graph::constants() const {
    std::vector<Value*> out;
    out.reserve(m_numConstants);
    for (Value* v : m_valueSlots)
        if (v && v->m_isConstant)
            out.push_back(v);
    return out;
}

std::vector<Node*> Graph::nodes() const {
    return nodeOrder();
}

const std::vector<Node*>& Graph::nodeOrder() const {
    if (!m_orderValid.load(std::memory_order_acquire)) {
        std::lock_guard<std::mutex> lock(m_orderMutex);
        if (!m_orderValid.load(std::memory_order_relaxed)) {
            m_order.clear();
            m_order.reserve(m_nodes.size());
            for (const auto& n : m_nodes)
                m_order.push_back(n.get());
            m_orderValid.store(true, std::memory_order_release);
        }
    }
    return m_order;
}

std::vector<Value*> Graph::values() const {
    std::vector<Value*> out;
    out.reserve(m_numValues);
    for (Value* v : m_valueSlots)
        if (v)
            out.push_back(v);
    return out;
}

Value* Graph::findValue(const std::string& name) const {
    return m_valueIndex.find(name);
}

Node* Graph::findNode(const std::string& name) const {
    return m_nodeIndex.find(name);
}

std::string Graph::uniqueName(const std::string& base) const {
    auto taken = [this](const std::string& s) {
        return m_valueIndex.contains(s) || m_nodeIndex.contains(s);
    };
    if (!taken(base))
        return base;
    for (int i = 1;; ++i) {
        std::string s = base + "_" + std::to_string(i);
        if (!taken(s))
            return s;
    }
}

void Graph::dropUse(Value* v, Node* user) {
    auto it = std::find(v->m_users.begin(), v->m_users.end(), user);
    if (it != v->m_users.end())
        v->m_users.erase(it);
    if (v->m_users.empty())
        queueForCleanup(v);
}

void Graph::queueForCleanup(Value* v) {
    if (!v->isConstant() || v->m_queuedForCleanup)
        return;
    v->m_queuedForCleanup = true;
    m_cleanupCandidates.push_back(v);
}

void Graph::setInput(Node* node, size_t index, Value* v) {
    ++node->m_version;
    if (index >= node->m_inputs.size())
        node->m_inputs.resize(index + 1, nullptr);
    if (Value* old = node->m_inputs[index])
        dropUse(old, node);
    node->m_inputs[index] = v;
    if (v)
        v->m_users.push_back(node);
}

void Graph::replaceAllUsesWith(Value* from, Value* to) {
    if (from == to)
        return;
    std::vector<Node*> users(from->m_users.begin(), from->m_users.end()); // the loop changes m_users
    for (Node* u : users)
        for (size_t i = 0; i < u->m_inputs.size(); ++i)
            if (u->m_inputs[i] == from) {
                u->m_inputs[i] = to;
                to->m_users.push_back(u);
                ++u->m_version;
            }
    from->m_users.clear();
    queueForCleanup(from);
    for (Value*& o : m_outputs)
        if (o == from) {
            o = to;
            to->m_isOutput = true;
        }
    if (std::find(m_outputs.begin(), m_outputs.end(), from) == m_outputs.end())
        from->m_isOutput = false;
}

Status Graph::eraseNode(Node* node) {
    for (Value* o : node->m_outputs)
        if (!o->m_users.empty() || o->m_isOutput)
            return makeError(ErrorKind::Verify,
                             "cannot erase node '" + node->m_name + "': its output '" + o->m_name +
                                 "' is still used",
                             node->m_name);
    for (Value* in : node->m_inputs)
        if (in)
            dropUse(in, node);
    for (Value* o : node->m_outputs)
        destroyValue(o);
    m_nodeIndex.erase(node->m_name);
    if (m_eraseLog)
        m_eraseLog->push_back({node, node->m_name, node->m_scratch});
    m_nodes.erase(node->m_pos);
    m_orderValid.store(false, std::memory_order_relaxed);
    ++m_structureVersion;
    return {};
}

void Graph::removeUnusedConstants() {
    // Only constants queued since the last call can have become unused (a constant is queued
    // when it is created, loses a use, or stops being a graph output). Which ones are removed does
    // not depend on the queue's order, and removal keeps the order of the other values.
    std::vector<Value*> candidates;
    candidates.swap(m_cleanupCandidates);
    for (Value* v : candidates) {
        v->m_queuedForCleanup = false;
        if (v->isConstant() && v->m_users.empty() && !v->m_isOutput)
            destroyValue(v);
    }
}

Status Graph::renameValue(Value* v, const std::string& newName) {
    if (v->m_name == newName)
        return {};
    if (m_valueIndex.contains(newName))
        return makeError(ErrorKind::Invalid, "duplicate value name '" + newName + "'", newName);
    m_valueIndex.erase(v->m_name);
    v->m_name = newName;
    v->restamp();
    m_valueIndex.insert(v);
    // The name shows in the producer's printout and in every user's.
    if (v->m_producer)
        ++v->m_producer->m_version;
    for (Node* u : v->m_users)
        ++u->m_version;
    return {};
}

Status Graph::renameNode(Node* n, const std::string& newName) {
    if (n->m_name == newName)
        return {};
    if (m_nodeIndex.contains(newName))
        return makeError(ErrorKind::Invalid, "duplicate node name '" + newName + "'", newName);
    m_nodeIndex.erase(n->m_name);
    n->m_name = newName;
    ++n->m_version;
    m_nodeIndex.insert(n);
    ++m_structureVersion;
    return {};
}

Status Graph::topoSort() {
    // Kahn's algorithm; among ready nodes, the one earliest in the current order goes first,
    // so an already-sorted graph keeps its order exactly.
    std::vector<Node*> order = nodes();
    std::unordered_map<const Node*, size_t> rank;
    for (size_t i = 0; i < order.size(); ++i)
        rank[order[i]] = i;
    std::vector<size_t> pending(order.size(), 0);
    for (size_t i = 0; i < order.size(); ++i)
        for (Value* in : order[i]->m_inputs)
            if (in && in->m_producer && rank.count(in->m_producer))
                ++pending[i];
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < order.size(); ++i)
        if (pending[i] == 0)
            ready.push(i);
    std::vector<size_t> sorted;
    sorted.reserve(order.size());
    while (!ready.empty()) {
        size_t i = ready.top();
        ready.pop();
        sorted.push_back(i);
        for (Value* o : order[i]->m_outputs) {
            std::unordered_set<const Node*> seen;
            for (Node* u : o->m_users) {
                if (!seen.insert(u).second)
                    continue;
                size_t j = rank[u];
                size_t uses = 0;
                for (Value* in : u->m_inputs)
                    if (in == o)
                        ++uses;
                pending[j] -= uses;
                if (pending[j] == 0)
                    ready.push(j);
            }
        }
    }
    if (sorted.size() != order.size()) {
        std::string names;
        int shown = 0;
        for (size_t i = 0; i < order.size() && shown < 5; ++i)
            if (pending[i] != 0) {
                names += (shown++ ? ", '" : "'") + order[i]->m_name + "'";
            }
        return makeError(ErrorKind::Invalid, "graph has a cycle through nodes " + names,
                         order[0]->m_name);
    }
    NodeList reordered(m_pool.get());
    std::vector<NodeList::iterator> its;
    for (auto it = m_nodes.begin(); it != m_nodes.end(); ++it)
        its.push_back(it);
    for (size_t i : sorted)
        reordered.splice(reordered.end(), m_nodes, its[i]);
    m_nodes.swap(reordered);
    m_orderValid.store(false, std::memory_order_relaxed);
    for (auto it = m_nodes.begin(); it != m_nodes.end(); ++it)
        (*it)->m_pos = it;
    return {};
}

Status Graph::inferTypes(bool* changed) {
    if (changed)
        *changed = false;
    for (Node* n : nodeOrder()) {
        auto types = n->info().infer(*n);
        if (!types.ok()) {
            Error e = types.takeError();
            if (e.subject.empty())
                e.subject = n->name();
            e.message = "node '" + n->name() + "' (" + qualifiedOpName(n->kind()) + "): " + e.message;
            return e;
        }
        if (types->size() < n->numOutputs())
            return makeError(ErrorKind::Verify,
                             "shape inference of node '" + n->name() + "' gave too few outputs",
                             n->name());
        for (size_t i = 0; i < n->numOutputs(); ++i) {
            LayoutKind keep = n->output(i)->type().layout;
            TensorType t = (*types)[i];
            if (t.layout == LayoutKind::Any)
                t.layout = keep;
            if (changed && !(t == n->output(i)->type()))
                *changed = true;
            n->output(i)->setType(std::move(t));
        }
    }
    return {};
}

Expected<std::unique_ptr<Graph>> Graph::clone() const {
    auto g = std::make_unique<Graph>(m_name);
    g->m_valueIndex.reserve(m_numValues);
    g->m_valueSlots.reserve(m_numValues);
    g->m_nodeIndex.reserve(m_nodes.size());
    // This graph's value -> the copy, by Value::id (a hash table here cost more than the copy).
    // The original is kept beside it, so a value of another graph with the same id is caught.
    std::vector<std::pair<const Value*, Value*>> map(m_nextValueId, {nullptr, nullptr});
    // The copy of `v`, or nullptr when it is not defined yet (or not this graph's).
    auto mapped = [&map](const Value* v) -> Value* {
        if (v->m_id >= map.size() || map[v->m_id].first != v)
            return nullptr;
        return map[v->m_id].second;
    };
    auto undefined = [this](const Value* v, const std::string& user) {
        return makeError(ErrorKind::Verify,
                         "cannot copy graph '" + m_name + "': value '" + v->m_name + "' used by " + user +
                             (owns(v) ? " is not defined before it" : " belongs to another graph"),
                         v->m_name);
    };
    // Sources (inputs, constants) are made first, in their creation order, then each node's
    // outputs in node order: constants() and the printout come out as the original's.
    for (const Value* v : m_valueSlots) {
        if (!v || v->m_producer)
            continue;
        Value* nv = g->newValue(v->m_name);
        nv->m_type = v->m_type;
        nv->m_constant = v->m_constant;
        nv->m_isConstant = v->m_isConstant;
        g->m_numConstants += v->m_isConstant;
        map[v->m_id] = {v, nv};
    }
    for (const Value* v : m_inputs) {
        Value* nv = mapped(v);
        if (!nv)
            return undefined(v, "the graph's inputs");
        nv->m_isInput = true;
        g->m_inputs.push_back(nv);
    }
    std::vector<std::string> outs;
    for (const Node* n : nodeOrder()) {
        std::vector<Value*> ins;
        ins.reserve(n->m_inputs.size());
        for (Value* in : n->m_inputs) {
            Value* nin = in ? mapped(in) : nullptr;
            if (in && !nin)
                return undefined(in, "node '" + n->m_name + "'");
            ins.push_back(nin);
        }
        outs.clear();
        for (Value* o : n->m_outputs)
            outs.push_back(o->m_name);
        // Names are unique here, so they are in the copy: addNode cannot refuse them.
        Node* nn = g->addNode(n->m_kind, n->m_name, std::move(ins), outs).value();
        nn->setSharedAttrs(n->m_sharedAttrs); // shared until either graph changes them
        nn->m_provenance = n->m_provenance;
        nn->m_precision = n->m_precision;
        nn->m_view = n->m_view;
        nn->m_body = n->m_body; // immutable: shared
        for (size_t i = 0; i < outs.size(); ++i) {
            nn->m_outputs[i]->m_type = n->m_outputs[i]->m_type;
            map[n->m_outputs[i]->m_id] = {n->m_outputs[i], nn->m_outputs[i]};
        }
    }
    std::vector<Value*> graphOutputs;
    for (Value* o : m_outputs) {
        Value* no = mapped(o);
        if (!no)
            return undefined(o, "the graph's outputs");
        graphOutputs.push_back(no);
    }
    g->setOutputs(std::move(graphOutputs));
    // Constants are copied without addConstant: list the unused ones as addConstant would have.
    for (Value* v : g->m_valueSlots)
        if (v->m_users.empty())
            g->queueForCleanup(v);
    return g;
}

bool isWeightOperand(const Node& user, size_t index) {
    switch (user.kind()) {
    case OpKind::Conv:
    case OpKind::BatchNormalization:
        return index >= 1;
    case OpKind::FusedConv:
        return index == 1 || index == 2 || index == 4 || index == 5;
    case OpKind::Gemm:
    case OpKind::FusedGemm:
    case OpKind::MatMul:
        return index == 1 || index == 2;
    default:
        return false;
    }
}

bool hasInputPrologue(const Node& n) {
    return n.kind() == OpKind::FusedConv && n.numInputs() > 5 && n.input(4) && n.input(5);
}

namespace {

/// Whether `u` only gives its input 0 another shape (its other inputs, if any, being the shape or
/// the axes): a weight built by one (inception v1's classifier, ConstantOfShape then Reshape to
/// the Gemm's [N, K]) is still a weight.
bool reshapesOnly(const Node& u) {
    switch (u.kind()) {
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
        return u.numOutputs() == 1;
    default:
        return false;
    }
}

} // namespace

bool onlyFeedsWeights(const Value* v) {
    if (v->users().empty() || v->isGraphOutput())
        return false;
    for (const Node* u : v->users())
        for (size_t i = 0; i < u->numInputs(); ++i) {
            if (u->input(i) != v || isWeightOperand(*u, i))
                continue;
            if (i != 0 || !reshapesOnly(*u) || !onlyFeedsWeights(u->output(0)))
                return false;
        }
    return true;
}

} // namespace sextant::ir
