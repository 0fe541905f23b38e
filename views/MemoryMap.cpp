#include "MemoryMap.h"

#include <algorithm>
#include <map>

namespace sextant::views {

std::vector<const MemoryBlock*> MemoryMapData::select(bool weights, bool io, bool intermediates) const {
    std::vector<const MemoryBlock*> out;
    for (const MemoryBlock& b : blocks) {
        switch (b.kind) {
        case backend::BufferKind::Weight:
            if (weights)
                out.push_back(&b);
            break;
        case backend::BufferKind::Input:
        case backend::BufferKind::Output:
            if (io)
                out.push_back(&b);
            break;
        case backend::BufferKind::Intermediate:
            if (intermediates)
                out.push_back(&b);
            break;
        }
    }
    return out;
}

MemoryMapData buildMemoryMap(const backend::Program& program, const TimelineModel& timeline) {
    MemoryMapData map;
    map.totalCycles = timeline.totalCycles();
    map.arenaPeak = program.memory.dramPeak;
    map.lowerBound = program.memory.dramLowerBound;
    map.weightBytes = program.memory.weightBytes;
    map.ioBytes = program.memory.ioBytes;

    // Task id -> simulated [start, end) and its nodes.
    std::map<int, const TimelineTask*> times;
    for (const TimelineTask& t : timeline.tasks())
        times[t.task] = &t;
    // Buffer id -> writer and reader Task ids, from the Program (the trace has no buffer lists).
    std::map<int, std::vector<int>> writers, readers;
    for (const backend::Task& t : program.tasks) {
        for (int b : t.outputs)
            writers[b].push_back(t.id);
        for (int b : t.inputs)
            readers[b].push_back(t.id);
    }

    // A Concat's output whose inputs are written in place into it lives while any of them does;
    // it is drawn first, under them, so that each input shows as its part of the output.
    const std::vector<char> holders = backend::holdersOfParts(program);
    for (const backend::Buffer& b : program.buffers) {
        const std::vector<int> w = writers[b.id], r = readers[b.id];
        backend::forEachHolder(program.buffers, b.id, [&](int holder, uint64_t) {
            writers[holder].insert(writers[holder].end(), w.begin(), w.end());
            readers[holder].insert(readers[holder].end(), r.begin(), r.end());
        });
    }
    std::vector<const backend::Buffer*> buffers;
    for (const backend::Buffer& b : program.buffers)
        if (b.level == backend::MemLevel::Dram && b.type.isStatic()) // not one the host holds: no address
            buffers.push_back(&b);
    auto holds = [&](const backend::Buffer* b) {
        return static_cast<size_t>(b->id) < holders.size() && holders[static_cast<size_t>(b->id)] ? 0 : 1;
    };
    std::sort(buffers.begin(), buffers.end(),
              [&](auto* a, auto* b) { return std::make_pair(holds(a), a->id) < std::make_pair(holds(b), b->id); });

    for (const backend::Buffer* b : buffers) {
        MemoryBlock block;
        block.buffer = b->id;
        block.value = b->value;
        block.type = b->type.str();
        block.kind = b->kind;
        block.offset = b->offset;
        block.size = b->size;
        block.fill = b->fill;
        if (b->fill) { // the node that computes it has no Task: the loader fills it
            map.weightBytes += b->size;
            const ir::Value* v = program.graph ? program.graph->findValue(b->value) : nullptr;
            if (v && v->producer())
                block.nodes.push_back(v->producer()->name());
        }
        const bool hostWrites = b->kind == backend::BufferKind::Input || b->kind == backend::BufferKind::Weight;
        const bool hostReads = b->kind == backend::BufferKind::Output || b->kind == backend::BufferKind::Weight;
        uint64_t t0 = hostWrites ? 0 : map.totalCycles;
        uint64_t t1 = hostReads ? map.totalCycles : 0;
        auto addNodes = [&](const TimelineTask* t) {
            for (const std::string& n : t->nodes)
                if (std::find(block.nodes.begin(), block.nodes.end(), n) == block.nodes.end())
                    block.nodes.push_back(n);
        };
        for (const auto* tasks : {&writers[b->id], &readers[b->id]})
            for (int id : *tasks) {
                auto it = times.find(id);
                if (it == times.end())
                    continue;
                t0 = std::min(t0, it->second->start);
                t1 = std::max(t1, it->second->end);
                addNodes(it->second);
            }
        if (t1 < t0) // never touched by a Task: show it as a sliver at the start
            t1 = t0;
        block.t0 = t0;
        block.t1 = t1;
        map.blocks.push_back(std::move(block));
    }
    return map;
}

} // namespace sextant::views
