#include "Machine.h"

#include "core/backend/Grouping.h"
#include "core/ir/Interpreter.h"

#include <algorithm>
#include <cstring>

namespace sextant::sim::detail {

bool Machine::readsHome(const Task& task, const Buffer& b) const {
    if (!b.homeHoldsAll())
        return false;
    auto it = m_residentRange.find({b.id, task.core});
    return it == m_residentRange.end() || task.id < it->second.first || task.id > it->second.second;
}

const std::vector<size_t>& Machine::buffersOf(const ir::Value& v) const {
    static const std::vector<size_t> kNone;
    return v.id() < m_buffersByValue.size() ? m_buffersByValue[v.id()] : kNone;
}

std::vector<size_t> Machine::outputBuffersFor(const Task& task, const ir::Value& value) const {
    std::vector<size_t> out;
    for (size_t index : buffersOf(value)) {
        const Buffer& b = m_p.buffers[index];
        bool listed =
            std::find(task.outputs.begin(), task.outputs.end(), b.id) != task.outputs.end();
        if (listed || b.firstTask == task.id)
            out.push_back(index);
    }
    return out;
}

Expected<ir::Tensor> Machine::readInput(const Task& task, const ir::Node& node, const ir::Value& v,
                                        const TaskLocals& local, std::vector<size_t>& reads,
                                        std::vector<size_t>& homeReads) {
    if (const ir::Tensor* t = local.find(&v))
        return *t;
    // The output of a view node (no Task) is read from the buffer its input lives in, then
    // takes its own shape below.
    const ir::Value* owner = !buffersOf(v).empty() ? &v : backend::bufferOwner(&v);
    if (owner != &v)
        if (const ir::Tensor* t = local.find(owner))
            return t->reshaped(v.type().dims());
    const Buffer* chosen = nullptr;
    {
        // Prefer a buffer the Task lists as an input (it may have an SRAM copy), else the value's
        // first buffer by id.
        const std::vector<size_t>& planned = buffersOf(*owner);
        for (size_t index : planned) {
            const Buffer& b = m_p.buffers[index];
            if (std::find(task.inputs.begin(), task.inputs.end(), b.id) != task.inputs.end()) {
                chosen = &b;
                break;
            }
        }
        if (!chosen && !planned.empty())
            chosen = &m_p.buffers[planned.front()];
    }
    if (!chosen) {
        if (v.isConstant() && !ir::isFloat(v.constant()->dtype()))
            return *v.constant(); // a shape/axes operand: part of the descriptor, not of memory
        return makeError(ErrorKind::Runtime,
                         taskLabel(task) + ": input '" + v.name() + "' of node '" + node.name() +
                             "' has no planned buffer",
                         task.name);
    }
    reads.push_back(static_cast<size_t>(chosen - m_p.buffers.data()));
    const bool home = readsHome(task, *chosen);
    if (home)
        homeReads.push_back(reads.back());
    SX_ASSIGN(ir::Tensor t, home ? m_mem.readHome(*chosen) : m_mem.read(*chosen, task.core));
    if (v.type().isStatic() && v.type().numel() == t.numel() && v.type().dims() != t.shape())
        t = t.reshaped(v.type().dims());
    return t;
}

namespace {

/// How a node's numbers are computed on its unit, from the precision the `precision` pass set
/// (Node::precision, printed precision = "..."), or the unit's default where the pass did not run:
///   "f16-acc-f32"  data and weights (operands 0, 1) and a FusedConv's residual (3) rounded to
///                  f16, f32 accumulation (backend::readsInF16)
///   "f16"          every float operand and the results rounded to f16 (vector lanes in f16)
///   "f32"          f32 throughout (a cube op kept in f32 reads f32 data and weights)
///   none           cube nodes as data and weights in f16, everything else f32
/// backend::storedDType keeps a tensor in f16 only where every reader rounds it so: both follow
/// readsInF16, which is what keeps f16 storage from changing any number.
struct Numerics {
    const ir::Node* node = nullptr;
    bool unsetCube = false; ///< no precision marked, on the cube: operands 0 and 1 in f16
    bool f16Results = false;
    bool roundsOperand(size_t i) const {
        return unsetCube ? i < 2 : backend::readsInF16(*node, i);
    }
};

Numerics numericsOf(const Task& task, const ir::Node& node) {
    const bool cube = task.unit == UnitKind::Cube && node.info().cost == ir::CostClass::Cube;
    Numerics n;
    n.node = &node;
    n.unsetCube = node.precision() == ir::Precision::Unset && cube;
    n.f16Results = node.precision() == ir::Precision::F16;
    return n;
}

/// Same dtypes, shapes and bytes (an omitted operand matches only an omitted one).
bool sameTensors(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const ir::Tensor& x = a[i];
        const ir::Tensor& y = b[i];
        if (x.valid() != y.valid() || x.dtype() != y.dtype() || x.shape() != y.shape())
            return false;
        if (x.byteSize() > 0 && (x.bytes() == nullptr || y.bytes() == nullptr ||
                                 std::memcmp(x.bytes(), y.bytes(), x.byteSize()) != 0))
            return false;
    }
    return true;
}

/// The node's results from the operands as read from memory, in its numerics: f16 operands are
/// rounded to f16 (the cube's data, weights and residual; every operand of an f16 vector op),
/// the cube's bias joins the f32 accumulator, and an f16 op's results are rounded to f16.
Expected<std::vector<ir::Tensor>> computeNode(const ir::Node& node, const std::vector<ir::Tensor>& raw,
                                              const Numerics& num, ir::KernelContext& ctx) {
    std::vector<ir::Tensor> args;
    args.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
        ir::Tensor t = raw[i];
        if (t.valid() && ir::isFloat(t.dtype()))
            t = num.roundsOperand(i) ? t.castTo(ir::DType::F16).castTo(ir::DType::F32) : t.castTo(ir::DType::F32);
        args.push_back(std::move(t));
    }
    SX_ASSIGN(std::vector<ir::Tensor> outs, ir::evaluateNode(node, args, ctx));
    if (num.f16Results)
        for (ir::Tensor& o : outs)
            if (ir::isFloat(o.dtype()))
                o = o.castTo(ir::DType::F16).castTo(ir::DType::F32);
    return outs;
}

/// The race checker's own test of what the lowering recorded: that this part of a split node
/// reads only its slice of an input (Task::sliceLocalInputs) or only its window's rows
/// (Task::haloReads), which lets it wait for just the producer parts that write those bytes.
/// The record comes from backend::readsOwnSlice and the windows; the checker's other tests take
/// it on trust (disjointSliceRead), so a wrong answer there would be a missing wait that no race
/// report names. Here the node is computed again with every byte of those inputs outside the
/// recorded bytes set (all ones: NaN in a float), and the part's own slice of each output must
/// come out bit for bit as before. `from[i]` is the buffer operand i was read from (nullptr for
/// a value computed inside the Task). A kernel that refuses the changed operands proves nothing
/// either way and is let be.
Status checkRecordedReads(const Task& task, const backend::Target& target, const ir::Node& node,
                          const std::vector<ir::Tensor>& raw, const std::vector<const Buffer*>& from,
                          const std::vector<ir::Tensor>& outs, const Numerics& num, ir::KernelContext& ctx) {
    std::vector<ir::Tensor> changed;
    std::string claimed;
    for (size_t i = 0; i < raw.size() && i < from.size(); ++i) {
        const Buffer* b = from[i];
        if (!b || !raw[i].valid() ||
            (!task.haloReadOf(b->id) &&
             !std::binary_search(task.sliceLocalInputs.begin(), task.sliceLocalInputs.end(), b->id)))
            continue;
        // The recorded bytes are the buffer's, in its own dims: the operand must be those bytes.
        if (raw[i].dtype() != b->type.dtype || !b->type.isStatic() ||
            raw[i].byteSize() != static_cast<uint64_t>(b->type.numel()) * ir::dtypeSize(b->type.dtype))
            continue;
        const backend::SliceBytes keep = backend::touchedBytes(task, *b);
        if (changed.empty())
            changed = raw;
        ir::Tensor poisoned = ir::Tensor::copyOf(raw[i].dtype(), raw[i].shape(),
                                                 std::span<const std::byte>(raw[i].bytes(), raw[i].byteSize()));
        std::byte* bytes = poisoned.mutableBytes();
        const uint64_t size = poisoned.byteSize();
        std::vector<char> kept(size, 0);
        for (uint64_t r = 0; r < keep.runs; ++r)
            for (uint64_t at = r * keep.stride + keep.begin; at < r * keep.stride + keep.end && at < size; ++at)
                kept[at] = 1;
        for (uint64_t at = 0; at < size; ++at)
            if (!kept[at])
                bytes[at] = std::byte{0xff};
        changed[i] = std::move(poisoned);
        claimed += (claimed.empty() ? "'" : ", '") + b->value + "'";
    }
    if (changed.empty())
        return {};
    Expected<std::vector<ir::Tensor>> again = computeNode(node, changed, num, ctx);
    if (!again.ok())
        return {};
    for (size_t o = 0; o < outs.size() && o < again->size() && o < node.numOutputs(); ++o) {
        const ir::Tensor& x = outs[o];
        const ir::Tensor& y = (*again)[o];
        if (!x.valid() || !y.valid() || x.dtype() != y.dtype() || x.shape() != y.shape())
            continue;
        Buffer layout;
        layout.type = ir::TensorType::of(x.dtype(), x.shape());
        const backend::SliceBytes mine = backend::sliceOf(task, layout);
        for (uint64_t r = 0; r < mine.runs; ++r) {
            const uint64_t at = r * mine.stride + mine.begin, len = mine.end - mine.begin;
            if (mine.end <= mine.begin || at + len > x.byteSize())
                continue;
            if (std::memcmp(x.bytes() + at, y.bytes() + at, len) != 0)
                return makeError(ErrorKind::Runtime,
                                 "race: " + taskAndNodes(task) + " on " + backend::laneName(task.core, target) +
                                     " waits only for the parts of " + claimed +
                                     " that write what the lowering recorded it reads (its slice or window), but "
                                     "its slice of '" +
                                     node.output(o)->name() + "' changes with the bytes outside them: it reads "
                                     "other parts' bytes without waiting for their writers (a missing event wait)",
                                 task.name);
        }
    }
    return {};
}

} // namespace

void Machine::keepHeldValues(const Task& task) {
    for (int out : task.outputs) {
        auto it = m_bufferById.find(out);
        if (it == m_bufferById.end())
            continue;
        for (size_t h : m_holders[it->second]) {
            const bool done = std::all_of(m_writers[h].begin(), m_writers[h].end(),
                                          [&](size_t w) { return m_state[w].ended; });
            if (m_holderKept[h] || !done || !m_bufferValue[h])
                continue;
            m_holderKept[h] = 1;
            Expected<ir::Tensor> t = m_mem.read(m_p.buffers[h]);
            if (t.ok())
                m_values.emplace_back(m_bufferValue[h]->name(),
                                      ir::isFloat(t->dtype()) ? t->castTo(ir::DType::F32) : std::move(t).value());
        }
    }
}

void Machine::keepValue(const Task& task, const ir::Value& value, const ir::Tensor& computed) {
    if (task.parts <= 1) {
        m_values.emplace_back(value.name(), computed);
        return;
    }
    // A part is right only in its own slice (it may have read other slices before their parts
    // wrote them): the value is its parts' slices put together, kept once the last part ran.
    auto& [tensor, parts] = m_assembling[&value];
    if (parts == 0)
        tensor = ir::Tensor::copyOf(computed.dtype(), computed.shape(),
                                    std::span<const std::byte>(computed.bytes(), computed.byteSize()));
    else if (computed.dtype() == tensor.dtype() && computed.shape() == tensor.shape()) {
        Buffer layout;
        layout.type = ir::TensorType::of(computed.dtype(), computed.shape());
        const backend::SliceBytes slice = backend::sliceOf(task, layout);
        for (uint64_t r = 0; r < slice.runs; ++r) {
            const uint64_t at = r * slice.stride + slice.begin;
            if (slice.end > slice.begin && at + (slice.end - slice.begin) <= tensor.byteSize())
                std::memcpy(tensor.mutableBytes() + at, computed.bytes() + at, slice.end - slice.begin);
        }
    }
    if (++parts >= task.parts) {
        m_values.emplace_back(value.name(), std::move(tensor));
        m_assembling.erase(&value);
    }
}

Status Machine::execute(size_t index) {
    const Task& task = m_p.tasks[index];
    TaskState& st = m_state[index];
    TaskLocals local;
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F32;
    for (size_t k = 0; k < task.nodes.size(); ++k) {
        const std::string& nodeName = task.nodes[k];
        const ir::Node* node = m_taskNodes[index][k];
        if (!node)
            return makeError(ErrorKind::Runtime,
                             taskLabel(task) + " executes node '" + nodeName +
                                 "' which is not in the graph",
                             task.name);
        const Numerics num = numericsOf(task, *node);
        std::vector<ir::Tensor> raw; // as read from memory
        std::vector<const Buffer*> from(node->numInputs(), nullptr); // the buffer each was read from
        raw.reserve(node->numInputs());
        for (size_t i = 0; i < node->numInputs(); ++i) {
            const ir::Value* v = node->input(i);
            if (!v) {
                raw.emplace_back();
                continue;
            }
            const size_t readBefore = st.reads.size();
            SX_ASSIGN(ir::Tensor t, readInput(task, *node, *v, local, st.reads, st.homeReads));
            if (st.reads.size() > readBefore)
                from[i] = &m_p.buffers[st.reads.back()];
            raw.push_back(std::move(t));
        }
        // The parts of a node split across cores compute the same numbers from the same inputs:
        // the first part to start computes them, and a later part whose inputs read back
        // byte-identical takes them over. A plan that changed an input between parts (a hazard)
        // reads other bytes, so that part computes afresh and the corruption shows.
        std::vector<ir::Tensor> outs;
        auto cached = task.parts > 1 ? m_partResults.find(node) : m_partResults.end();
        if (cached != m_partResults.end() && sameTensors(cached->second.inputs, raw)) {
            outs = cached->second.outputs;
            if (m_opt.checkRaces)
                SX_TRY(checkRecordedReads(task, m_p.target, *node, raw, from, outs, num, ctx));
        } else {
            auto results = computeNode(*node, raw, num, ctx);
            if (!results.ok()) {
                // The kernels name their node already ("node 'x' (Op): ..."); say it once.
                const std::string& why = results.error().message;
                const std::string named = "node '" + nodeName + "'";
                return makeError(ErrorKind::Runtime,
                                 taskLabel(task) + ": " + (why.starts_with(named) ? why : named + ": " + why),
                                 task.name);
            }
            outs = std::move(results).value();
            if (m_opt.checkRaces && task.parts > 1)
                SX_TRY(checkRecordedReads(task, m_p.target, *node, raw, from, outs, num, ctx));
            if (task.parts > 1)
                cached = m_partResults.insert_or_assign(node, PartResults{std::move(raw), outs, 0}).first;
        }
        if (task.parts > 1 && ++cached->second.started >= task.parts)
            m_partResults.erase(cached); // the last part: nobody needs them any more
        for (size_t i = 0; i < outs.size() && i < node->numOutputs(); ++i) {
            const ir::Value* value = node->output(i);
            for (size_t b : outputBuffersFor(task, *value)) {
                st.pendingWrites.emplace_back(b, outs[i]);
                st.writes.push_back(b);
            }
            if (m_opt.keepValues)
                keepValue(task, *value, outs[i]);
            local.set(value, std::move(outs[i]));
        }
    }
    for (int b : task.outputs) {
        const size_t bi = m_bufferById.at(b);
        const Buffer& buf = m_p.buffers[bi];
        if (!m_bufferValue[bi] || !local.find(m_bufferValue[bi]))
            return makeError(ErrorKind::Runtime,
                             taskLabel(task) + " lists output buffer " + std::to_string(b) + " ('" +
                                 buf.value + "') but none of its nodes computes it",
                             task.name);
    }
    return {};
}

} // namespace sextant::sim::detail
