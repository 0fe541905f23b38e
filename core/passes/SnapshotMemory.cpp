#include "SnapshotMemory.h"

#include <string>
#include <variant>

namespace sextant::passes {

namespace {

// Rough per-allocation costs of the containers Graph uses (libstdc++, 64-bit).
constexpr size_t kListNode = 16 + sizeof(void*) * 2;    // std::list node holding a unique_ptr
constexpr size_t kHashEntry = 16 + sizeof(std::string) + sizeof(void*) * 3; // unordered_map node
constexpr size_t kMapNode = 32;                         // std::map node header

size_t stringBytes(const std::string& s) {
    // Short strings live inside the object (SSO); longer ones own a heap block.
    return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

size_t dimHeapBytes(const ir::TensorType& t) {
    // Ranks up to DimVector::kInline live inside the type; dim symbols are interned process-wide.
    return t.shape.onHeap() ? t.shape.capacity() * sizeof(ir::Dim) : 0;
}

void addTensor(const ir::Tensor& t, MemoryFootprint& fp, std::set<const void*>& seen) {
    fp.structureBytes += t.shape().capacity() * sizeof(int64_t);
    if (t.bytes() && seen.insert(t.bytes()).second)
        fp.tensorBytes += t.byteSize();
}

void addAttribute(const ir::Attribute& a, MemoryFootprint& fp, std::set<const void*>& seen) {
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>)
                fp.structureBytes += stringBytes(v);
            else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                               std::is_same_v<T, std::vector<double>>)
                fp.structureBytes += v.capacity() * sizeof(typename T::value_type);
            else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                fp.structureBytes += v.capacity() * sizeof(std::string);
                for (const std::string& s : v)
                    fp.structureBytes += stringBytes(s);
            } else if constexpr (std::is_same_v<T, ir::Tensor>)
                addTensor(v, fp, seen);
            else if constexpr (std::is_same_v<T, std::shared_ptr<const ir::Graph>>) {
                if (v && seen.insert(v.get()).second)
                    addGraphFootprint(*v, fp, seen);
            }
        },
        a);
}

void addBody(const ir::FusedBody* body, MemoryFootprint& fp, std::set<const void*>& seen) {
    if (!body || !seen.insert(body).second)
        return;
    constexpr size_t kSharedBlock = 16; // make_shared's control block
    fp.structureBytes += kSharedBlock + sizeof(*body) + body->steps.capacity() * sizeof(ir::BodyStep);
    for (const ir::BodyStep& s : body->steps) {
        fp.structureBytes += s.operands.capacity() * sizeof(ir::BodyOperand);
        fp.structureBytes += s.attrs.capacity() * sizeof(s.attrs[0]);
        for (const auto& [key, value] : s.attrs)
            fp.structureBytes += stringBytes(key);
    }
}

} // namespace

void addGraphFootprint(const ir::Graph& graph, MemoryFootprint& fp,
                       std::set<const void*>& seenBuffers) {
    fp.structureBytes += sizeof(ir::Graph) + stringBytes(graph.name());
    for (const ir::Node* n : graph.nodes()) {
        fp.structureBytes += sizeof(ir::Node) + kListNode + kHashEntry + stringBytes(n->name());
        fp.structureBytes += n->inputs().heapBytes() + n->outputs().heapBytes();
        for (const auto& [key, value] : n->attrs()) {
            fp.structureBytes += kMapNode + sizeof(key) + sizeof(value) + stringBytes(key);
            addAttribute(value, fp, seenBuffers);
        }
        addBody(n->body(), fp, seenBuffers);
        const ir::Provenance& p = n->provenance();
        fp.structureBytes += p.origins.capacity() * sizeof(std::string) + stringBytes(p.createdBy);
        for (const std::string& o : p.origins)
            fp.structureBytes += stringBytes(o);
    }
    for (const ir::Value* v : graph.values()) {
        fp.structureBytes += sizeof(ir::Value) + kListNode + kHashEntry + stringBytes(v->name());
        fp.structureBytes += dimHeapBytes(v->type());
        fp.structureBytes += v->users().heapBytes();
        if (const ir::Tensor* t = v->constant())
            addTensor(*t, fp, seenBuffers);
    }
    fp.structureBytes += (graph.inputs().capacity() + graph.outputs().capacity()) * sizeof(void*);
}

MemoryFootprint graphFootprint(const ir::Graph& graph) {
    MemoryFootprint fp;
    std::set<const void*> seen;
    addGraphFootprint(graph, fp, seen);
    return fp;
}

namespace {

constexpr size_t kSharedBlock = 16; // make_shared control block

void addTypeBytes(const ir::TensorType& t, MemoryFootprint& fp) {
    fp.structureBytes += dimHeapBytes(t);
}

void addNodeRecord(const NodeRecord& r, MemoryFootprint& fp, std::set<const void*>& seen) {
    fp.structureBytes += sizeof(NodeRecord) + stringBytes(r.name); // in the store's chunks
    // The inputs, attributes and provenance parts may be shared with other records: once each.
    if (seen.insert(r.inputs.get()).second) {
        fp.structureBytes += kSharedBlock + sizeof(*r.inputs) +
                             r.inputs->capacity() * sizeof(std::string);
        for (const std::string& s : *r.inputs)
            fp.structureBytes += stringBytes(s);
    }
    fp.structureBytes += r.outputNames.capacity() * sizeof(std::string);
    for (const std::string& s : r.outputNames)
        fp.structureBytes += stringBytes(s);
    fp.structureBytes += r.outputTypes.capacity() * sizeof(ir::TensorType);
    for (const ir::TensorType& t : r.outputTypes)
        addTypeBytes(t, fp);
    if (seen.insert(r.attrs.get()).second) {
        fp.structureBytes += kSharedBlock + sizeof(*r.attrs);
        for (const auto& [key, value] : *r.attrs) {
            fp.structureBytes += kMapNode + sizeof(key) + sizeof(value) + stringBytes(key);
            addAttribute(value, fp, seen);
        }
    }
    addBody(r.body.get(), fp, seen);
    if (seen.insert(r.provenance.get()).second) {
        fp.structureBytes += kSharedBlock + sizeof(*r.provenance) +
                             r.provenance->origins.capacity() * sizeof(std::string) +
                             stringBytes(r.provenance->createdBy);
        for (const std::string& o : r.provenance->origins)
            fp.structureBytes += stringBytes(o);
    }
}

void addValueRecord(const ValueRecord& r, MemoryFootprint& fp, std::set<const void*>& seen) {
    fp.structureBytes += sizeof(ValueRecord) + stringBytes(r.name); // in the store's chunks
    addTypeBytes(r.type, fp);
    if (r.constant)
        addTensor(*r.constant, fp, seen);
}

} // namespace

void addStateFootprint(const SnapshotState& state, MemoryFootprint& fp,
                       std::set<const void*>& seen) {
    fp.structureBytes += sizeof(SnapshotState) + kSharedBlock + stringBytes(state.graphName());
    fp.structureBytes += (state.sources().capacity() + state.nodes().capacity()) * sizeof(void*);
    if (seen.insert(state.store()).second)
        fp.structureBytes += state.storeSlackBytes();
    fp.structureBytes += state.keyBytes();
    fp.structureBytes += state.outputs().capacity() * sizeof(std::string);
    for (const std::string& o : state.outputs())
        fp.structureBytes += stringBytes(o);
    for (const ValueRecord* v : state.sources())
        if (seen.insert(v).second)
            addValueRecord(*v, fp, seen);
    for (const NodeRecord* n : state.nodes())
        if (seen.insert(n).second)
            addNodeRecord(*n, fp, seen);
    if (state.hasText())
        fp.textBytes += state.text().capacity();
    // A graph someone is holding right now is memory too.
    if (auto g = state.cachedGraph(); g && seen.insert(g.get()).second)
        addGraphFootprint(*g, fp, seen);
}

MemoryFootprint snapshotsFootprint(const std::vector<Snapshot>& snapshots) {
    MemoryFootprint fp;
    std::set<const void*> seen;
    for (const Snapshot& s : snapshots)
        if (s.state && seen.insert(s.state.get()).second)
            addStateFootprint(*s.state, fp, seen);
    return fp;
}

} // namespace sextant::passes
