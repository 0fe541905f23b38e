#include "SnapshotState.h"

#include "core/ir/Printer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unordered_map>

namespace sextant::passes {

/// Records in chunks of fixed size: appending never moves a record, and a pipeline's worth of
/// records costs a few hundred allocations instead of one each. Only capture appends, on the
/// thread that runs the pipeline; readers only follow pointers to records already made.
class RecordStore {
public:
    NodeRecord* newNode() { return m_nodes.next(); }
    ValueRecord* newValue() { return m_values.next(); }
    size_t slackBytes() const { return m_nodes.slackBytes() + m_values.slackBytes(); }

private:
    template <typename T> class Chunks {
    public:
        T* next() {
            if (m_used == kChunk) {
                m_chunks.push_back(std::make_unique<T[]>(kChunk));
                m_used = 0;
            }
            return &m_chunks.back()[m_used++];
        }
        size_t slackBytes() const { return m_chunks.empty() ? 0 : (kChunk - m_used) * sizeof(T); }

    private:
        static constexpr size_t kChunk = 256;
        std::vector<std::unique_ptr<T[]>> m_chunks;
        size_t m_used = kChunk;
    };
    Chunks<NodeRecord> m_nodes;
    Chunks<ValueRecord> m_values;
};

size_t SnapshotState::storeSlackBytes() const {
    return m_store ? m_store->slackBytes() : 0;
}

namespace {

bool sameTensor(const ir::Tensor& a, const ir::Tensor& b) {
    if (a.dtype() != b.dtype() || a.shape() != b.shape())
        return false;
    // Copies share storage, so the common case is one pointer compare; otherwise the bytes.
    return a.bytes() == b.bytes() || a.identical(b);
}

bool sameBits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0; // -0 vs 0 and NaNs print differently
}

bool sameAttribute(const ir::Attribute& a, const ir::Attribute& b) {
    if (a.index() != b.index())
        return false;
    return std::visit(
        [&](const auto& x) -> bool {
            using T = std::decay_t<decltype(x)>;
            const T& y = std::get<T>(b);
            if constexpr (std::is_same_v<T, ir::Tensor>)
                return sameTensor(x, y);
            else if constexpr (std::is_same_v<T, double>)
                return sameBits(x, y);
            else if constexpr (std::is_same_v<T, std::vector<double>>) {
                if (x.size() != y.size())
                    return false;
                for (size_t i = 0; i < x.size(); ++i)
                    if (!sameBits(x[i], y[i]))
                        return false;
                return true;
            } else
                return x == y; // subgraphs: immutable and shared, so identity
        },
        a);
}

bool sameAttributes(const ir::AttributeMap& a, const ir::AttributeMap& b) {
    if (&a == &b) // one shared map (maps shared by a node and a record never change)
        return true;
    if (a.size() != b.size())
        return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
        if (ia->first != ib->first || !sameAttribute(ia->second, ib->second))
            return false;
    return true;
}

bool sameInputs(const std::vector<std::string>& r, const ir::Node& n) {
    if (r.size() != n.numInputs())
        return false;
    for (size_t i = 0; i < r.size(); ++i) {
        const ir::Value* v = n.input(i);
        if (v ? r[i] != v->name() : !r[i].empty())
            return false;
    }
    return true;
}

bool sameOutputs(const NodeRecord& r, const ir::Node& n) {
    if (r.outputNames.size() != n.numOutputs())
        return false;
    for (size_t i = 0; i < r.outputNames.size(); ++i)
        if (r.outputNames[i] != n.output(i)->name() || !(r.outputTypes[i] == n.output(i)->type()))
            return false;
    return true;
}

bool sameProvenance(const ir::Provenance& a, const ir::Provenance& b) {
    return a.createdBy == b.createdBy && a.origins == b.origins;
}

bool recordMatches(const NodeRecord& r, const ir::Node& n) {
    return r.kind == n.kind() && r.name == n.name() && sameInputs(*r.inputs, n) &&
           sameOutputs(r, n) && sameProvenance(*r.provenance, n.provenance()) &&
           sameAttributes(*r.attrs, n.attrs()) && r.precision == n.precision() &&
           r.view == n.isView() && ir::sameBody(r.body.get(), n.body());
}

/// A record of `n`, sharing with `old` (a record of the same node before the pass, or null) the
/// parts that did not change.
const NodeRecord* recordOf(const ir::Node& n, const NodeRecord* old, RecordStore& store) {
    NodeRecord* r = store.newNode();
    r->name = n.name();
    r->kind = n.kind();
    if (old && sameInputs(*old->inputs, n)) {
        r->inputs = old->inputs;
    } else {
        auto ins = std::make_shared<std::vector<std::string>>();
        ins->reserve(n.numInputs());
        for (const ir::Value* v : n.inputs())
            ins->push_back(v ? v->name() : std::string());
        r->inputs = std::move(ins);
    }
    r->outputNames.reserve(n.numOutputs());
    r->outputTypes.reserve(n.numOutputs());
    for (const ir::Value* v : n.outputs()) {
        r->outputNames.push_back(v->name());
        r->outputTypes.push_back(v->type());
    }
    if (old && sameAttributes(*old->attrs, n.attrs()))
        r->attrs = old->attrs;
    else if (n.sharedAttrs())
        r->attrs = n.sharedAttrs(); // copied on the node's next change, not now
    else {
        static const auto kNone = std::make_shared<const ir::AttributeMap>();
        r->attrs = kNone;
    }
    if (old && sameProvenance(*old->provenance, n.provenance()))
        r->provenance = old->provenance;
    else
        r->provenance = std::make_shared<const ir::Provenance>(n.provenance());
    r->precision = n.precision();
    r->view = n.isView();
    r->body = n.sharedBody();
    return r;
}

bool sourceMatches(const ValueRecord& r, const ir::Value& v) {
    if (r.name != v.name() || r.isInput != v.isGraphInput() || !(r.type == v.type()) ||
        r.constant.has_value() != v.isConstant())
        return false;
    return !r.constant || sameTensor(*r.constant, *v.constant());
}

const ValueRecord* recordOf(const ir::Value& v, RecordStore& store) {
    ValueRecord* r = store.newValue();
    r->name = v.name();
    r->type = v.type();
    if (const ir::Tensor* t = v.constant())
        r->constant = *t;
    r->isInput = v.isGraphInput();
    return r;
}

/// SEXTANT_CHECK_SNAPSHOTS found a record shared by key that no longer matches its item: a
/// mutator changed the item without saying so. Stops the process, naming the item.
[[noreturn]] void sharedStaleRecord(const char* kind, const std::string& name,
                                    const char* without) {
    std::fprintf(stderr, "SEXTANT_CHECK_SNAPSHOTS: %s '%s' changed without %s\n", kind,
                 name.c_str(), without);
    std::abort();
}

/// Finds, for each live item in graph order, the index of its record in the previous snapshot.
/// One cursor serves both ways of looking: passes mostly keep the order, and mostly erase items
/// (the members of a fused chain) or put new ones under an old name (the anchor's), so the record
/// sought is usually a few places past the cursor. Whatever finds it moves the cursor there, so
/// after a run of erased items the next unchanged one is again found near the cursor.
template <typename Record> class PreviousRecords {
public:
    static constexpr size_t npos = static_cast<size_t>(-1);

    explicit PreviousRecords(const std::vector<const Record*>* prev) : m_prev(prev) {}

    /// The first index in the few past the cursor whose entry satisfies `is` (a key compare:
    /// it reads a key array, not the records), else npos.
    template <typename Pred> size_t nearCursor(Pred is) const {
        if (!m_prev)
            return npos;
        const size_t end = std::min(m_prev->size(), m_cursor + kKeyWindow);
        for (size_t i = m_cursor; i < end; ++i)
            if (is(i))
                return i;
        return npos;
    }

    /// The index of the record named `name`, else npos: first a window past the cursor, then a
    /// name index built the first time the window misses. Looking near the cursor first keeps
    /// most captures from indexing the whole previous snapshot (one allocation per record, and a
    /// hash lookup that misses the cache on big graphs). Names are unique, so any record found
    /// by name is the one the index would give.
    size_t byName(const std::string& name) {
        if (!m_prev)
            return npos;
        const size_t end = std::min(m_prev->size(), m_cursor + kNameWindow);
        for (size_t i = m_cursor; i < end; ++i)
            if ((*m_prev)[i]->name == name)
                return i;
        if (!m_indexed) {
            m_indexed = true;
            for (size_t i = 0; i < m_prev->size(); ++i)
                m_index.emplace((*m_prev)[i]->name, i);
        }
        auto it = m_index.find(name);
        return it == m_index.end() ? npos : it->second;
    }

    void movePast(size_t i) { m_cursor = i + 1; }

private:
    static constexpr size_t kKeyWindow = 8;
    static constexpr size_t kNameWindow = 16;
    const std::vector<const Record*>* m_prev;
    size_t m_cursor = 0;
    bool m_indexed = false;
    std::unordered_map<std::string_view, size_t> m_index; // lookups only, never iterated
};

} // namespace

std::shared_ptr<const SnapshotState> SnapshotState::capture(const ir::Graph& graph,
                                                            const SnapshotState* previous,
                                                            bool* changed) {
    auto s = std::make_shared<SnapshotState>();
    s->m_name = graph.name();
    s->m_store = previous && previous->m_store ? previous->m_store : std::make_shared<RecordStore>();
    RecordStore& store = *s->m_store;
    bool differs = !previous || previous->m_name != s->m_name;

    static const bool check = std::getenv("SEXTANT_CHECK_SNAPSHOTS") != nullptr;
    // A source whose stamp is the one its previous record was made with is unchanged (see
    // Value::stamp): its record is shared without reading either. The rest are matched by name
    // and compared.
    PreviousRecords<ValueRecord> prevSources(previous ? &previous->m_sources : nullptr);
    s->m_sources.reserve(graph.inputs().size() + graph.numConstants());
    s->m_sourceStamps.reserve(graph.inputs().size() + graph.numConstants());
    graph.forEachValue([&](const ir::Value* v) {
        if (v->producer())
            return;
        const ValueRecord* shared = nullptr;
        size_t i = prevSources.nearCursor(
            [&](size_t k) { return previous->m_sourceStamps[k] == v->stamp(); });
        if (i != prevSources.npos) {
            shared = previous->m_sources[i];
            if (check && !sourceMatches(*shared, *v))
                sharedStaleRecord("value", v->name(),
                                  "a new stamp: a Graph/Value mutator misses Value::restamp");
        } else if ((i = prevSources.byName(v->name())) != prevSources.npos &&
                   sourceMatches(*previous->m_sources[i], *v)) {
            shared = previous->m_sources[i];
        }
        if (i != prevSources.npos)
            prevSources.movePast(i);
        s->m_sources.push_back(shared ? shared : recordOf(*v, store));
        s->m_sourceStamps.push_back(v->stamp());
    });
    PreviousRecords<NodeRecord> prevNodes(previous ? &previous->m_nodes : nullptr);
    s->m_nodes.reserve(graph.numNodes());
    s->m_nodeKeys.reserve(graph.numNodes());
    // A node that is still the same live node at the same version as when the previous record
    // was made is unchanged (Node::version goes up with every change a record shows): its record
    // is shared without reading it. Anything else is matched by name and compared field by field.
    for (const ir::Node* n : graph.nodeOrder()) {
        const NodeRecord* shared = nullptr;
        const NodeRecord* sameNode = nullptr; // the previous record of this live node
        size_t i = prevNodes.nearCursor(
            [&](size_t k) { return previous->m_nodeKeys[k].uid == n->uid(); });
        if (i == prevNodes.npos)
            i = prevNodes.byName(n->name());
        if (i != prevNodes.npos) {
            prevNodes.movePast(i);
            const NodeRecord* old = previous->m_nodes[i];
            const NodeKey& key = previous->m_nodeKeys[i];
            if (key.uid == n->uid() && key.version == n->version()) {
                shared = old;
                if (check && !recordMatches(*shared, *n))
                    sharedStaleRecord("node", n->name(),
                                      "its version going up: a Graph/Node mutator misses a "
                                      "version bump");
            } else if (recordMatches(*old, *n)) {
                shared = old; // changed and changed back, or a new node just like the old one
            } else {
                sameNode = old; // the same live node, or the one that took over its name
            }
        }
        s->m_nodes.push_back(shared ? shared : recordOf(*n, sameNode, store));
        s->m_nodeKeys.push_back(NodeKey{n->uid(), n->version()});
    }
    s->m_outputs.reserve(graph.outputs().size());
    for (const ir::Value* v : graph.outputs())
        s->m_outputs.push_back(v->name());

    if (previous && !differs)
        differs = s->m_outputs != previous->m_outputs || s->m_sources != previous->m_sources ||
                  s->m_nodes != previous->m_nodes; // element-wise pointer compare
    if (changed)
        *changed = differs;
    return s;
}

Expected<std::unique_ptr<ir::Graph>> SnapshotState::build() const {
    auto g = std::make_unique<ir::Graph>(m_name);
    for (const auto& r : m_sources) {
        if (r->isInput) {
            SX_ASSIGN(ir::Value * v, g->addInput(r->name, r->type));
            (void)v;
        } else {
            SX_ASSIGN(ir::Value * v, g->addConstant(r->name, *r->constant));
            v->setType(r->type);
        }
    }
    // Inputs produced by a later node (an order a pass left unsorted) are wired afterwards.
    struct Pending {
        ir::Node* node;
        size_t index;
        const std::string* name;
    };
    std::vector<Pending> pending;
    for (const auto& r : m_nodes) {
        const std::vector<std::string>& inputNames = *r->inputs;
        std::vector<ir::Value*> ins(inputNames.size(), nullptr);
        for (size_t i = 0; i < ins.size(); ++i)
            if (!inputNames[i].empty() && !(ins[i] = g->findValue(inputNames[i])))
                pending.push_back({nullptr, i, &inputNames[i]});
        SX_ASSIGN(ir::Node * n,
                  g->addNode(r->kind, r->name, std::move(ins), r->outputNames, *r->attrs));
        for (Pending& p : pending)
            if (!p.node)
                p.node = n;
        n->mutableProvenance() = *r->provenance;
        n->setPrecision(r->precision);
        n->setView(r->view);
        n->setBody(r->body);
        for (size_t i = 0; i < r->outputTypes.size(); ++i)
            n->output(i)->setType(r->outputTypes[i]);
    }
    for (const Pending& p : pending) {
        ir::Value* v = g->findValue(*p.name);
        if (!v)
            return makeError(ErrorKind::Verify,
                             "snapshot node '" + p.node->name() + "' uses unknown value '" +
                                 *p.name + "'",
                             p.node->name());
        g->setInput(p.node, p.index, v);
    }
    std::vector<ir::Value*> outs;
    for (const std::string& name : m_outputs) {
        ir::Value* v = g->findValue(name);
        if (!v)
            return makeError(ErrorKind::Verify, "snapshot output '" + name + "' is not a value",
                             name);
        outs.push_back(v);
    }
    g->setOutputs(std::move(outs));
    return g;
}

std::shared_ptr<const ir::Graph> SnapshotState::graph() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (auto g = m_graph.lock())
        return g;
    auto built = build();
    if (!built.ok())
        return nullptr;
    std::shared_ptr<const ir::Graph> g(std::move(*built));
    m_graph = g;
    return g;
}

std::shared_ptr<const ir::Graph> SnapshotState::cachedGraph() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_graph.lock();
}

bool SnapshotState::hasText() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_text.has_value();
}

const std::string& SnapshotState::text() const {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (m_text)
            return *m_text;
    }
    std::shared_ptr<const ir::Graph> g = graph();
    std::string printed = g ? ir::printGraph(*g) : "# snapshot graph could not be rebuilt\n";
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_text)
        m_text = std::move(printed);
    return *m_text;
}

} // namespace sextant::passes
