#include "SramMap.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace sextant::views {

std::vector<int> SramMapData::blocksOfCore(int core) const {
    std::vector<int> out;
    for (size_t i = 0; i < blocks.size(); ++i)
        if (core < 0 || blocks[i].core == core)
            out.push_back(static_cast<int>(i));
    return out;
}

bool SramMapData::usedBy(const SramBlock& b, const std::string& node) {
    return std::find(b.nodes.begin(), b.nodes.end(), node) != b.nodes.end();
}

namespace {

bool touches(const backend::Task& t, int buffer) {
    return std::find(t.inputs.begin(), t.inputs.end(), buffer) != t.inputs.end() ||
           std::find(t.outputs.begin(), t.outputs.end(), buffer) != t.outputs.end();
}

void addNodes(std::vector<std::string>& to, const std::vector<std::string>& from) {
    for (const std::string& n : from)
        if (std::find(to.begin(), to.end(), n) == to.end())
            to.push_back(n);
}

} // namespace

SramMapData buildSramMap(const backend::Program& program, const TimelineModel& timeline) {
    SramMapData map;
    map.totalCycles = timeline.totalCycles();
    map.capacity = program.target.sramBytes;
    map.dramTrafficBytes = program.memory.dramTrafficBytes;
    map.compulsoryBytes = program.memory.compulsoryBytes;
    for (size_t c = 0; c < program.memory.sram.size(); ++c) {
        const backend::SramStats& s = program.memory.sram[c];
        map.cores.push_back({static_cast<int>(c), s.capacity, s.peak, s.lowerBound});
    }
    // A program without an SRAM plan (an artifact that predates it) still gets one band per core.
    for (int c = static_cast<int>(map.cores.size()); c < program.target.numCores; ++c)
        map.cores.push_back({c, program.target.sramBytes, 0, 0});
    // A tensor of a node split across cores is kept a stripe per core: one tensor, several pieces.
    for (size_t i = 0; i < program.onChip.size(); ++i) {
        const backend::OnChip& oc = program.onChip[i];
        map.onChipBytes += oc.bytes;
        map.savedDmaBytes += oc.savedDmaBytes;
        if (i == 0 || program.onChip[i - 1].buffer != oc.buffer)
            ++map.onChipTensors;
    }

    // Task id -> simulated [start, end), from the trace like the DRAM map's lifetimes.
    std::vector<const TimelineTask*> times(program.tasks.size(), nullptr);
    for (const TimelineTask& t : timeline.tasks())
        if (t.task >= 0 && static_cast<size_t>(t.task) < times.size())
            times[static_cast<size_t>(t.task)] = &t;
    auto taskOf = [&](int id) -> const backend::Task* {
        return id >= 0 && static_cast<size_t>(id) < program.tasks.size()
                   ? &program.tasks[static_cast<size_t>(id)]
                   : nullptr;
    };
    auto startOf = [&](int id) -> uint64_t {
        if (const backend::Task* t = taskOf(id))
            return times[static_cast<size_t>(id)] ? times[static_cast<size_t>(id)]->start
                                                  : t->estStart;
        return 0;
    };
    auto endOf = [&](int id) -> uint64_t {
        if (const backend::Task* t = taskOf(id))
            return times[static_cast<size_t>(id)] ? times[static_cast<size_t>(id)]->end : t->estEnd;
        return 0;
    };

    // Ping-pong partners: the two slots of one stream share Task, tensor and role.
    std::map<std::tuple<int, int, int, int>, int> firstSlot;
    map.blocks.reserve(program.sramBuffers.size());
    for (const backend::SramBuffer& sb : program.sramBuffers) {
        SramBlock block;
        block.sramBuffer = sb.id;
        block.core = sb.core;
        block.role = sb.role;
        block.pair = sb.pair;
        block.offset = sb.offset;
        block.size = sb.size;
        block.task = sb.task;
        block.firstTask = sb.firstTask >= 0 ? sb.firstTask : sb.task;
        block.lastTask = sb.lastTask >= 0 ? sb.lastTask : block.firstTask;
        block.buffer = sb.buffer;
        if (sb.buffer >= 0 && static_cast<size_t>(sb.buffer) < program.buffers.size())
            block.value = program.buffers[static_cast<size_t>(sb.buffer)].value;
        block.t0 = startOf(block.firstTask);
        block.t1 = std::max(block.t0, endOf(block.lastTask));
        if (const backend::Task* t = taskOf(sb.task))
            addNodes(block.nodes, t->nodes);
        // The Tasks on the core in its lifetime that read or write the tensor (a resident's
        // consumers); a tile slot's lifetime is its own Task.
        for (int id = block.firstTask; id <= block.lastTask; ++id) {
            const backend::Task* t = taskOf(id);
            if (t && id != sb.task && t->core == sb.core && touches(*t, sb.buffer))
                addNodes(block.nodes, t->nodes);
        }
        const int index = static_cast<int>(map.blocks.size());
        if (sb.pair >= 0) {
            const auto key =
                std::make_tuple(sb.core, sb.task, sb.buffer, static_cast<int>(sb.role));
            auto [it, inserted] = firstSlot.emplace(key, index);
            if (!inserted && map.blocks[static_cast<size_t>(it->second)].partner < 0) {
                block.partner = it->second;
                map.blocks[static_cast<size_t>(it->second)].partner = index;
            }
        }
        map.blocks.push_back(std::move(block));
    }
    return map;
}

NodeOnChip nodeOnChip(const backend::Program& program, const std::string& node) {
    NodeOnChip out;
    for (const backend::OnChip& oc : program.onChip) {
        if (oc.buffer < 0 || static_cast<size_t>(oc.buffer) >= program.buffers.size())
            continue;
        const int writer = program.buffers[static_cast<size_t>(oc.buffer)].firstTask;
        if (writer < 0 || static_cast<size_t>(writer) >= program.tasks.size())
            continue;
        const std::vector<std::string>& nodes = program.tasks[static_cast<size_t>(writer)].nodes;
        if (std::find(nodes.begin(), nodes.end(), node) == nodes.end())
            continue;
        out.kept.push_back(&oc);
        out.bytes += oc.bytes;
        out.savedDmaBytes += oc.savedDmaBytes;
    }
    return out;
}

} // namespace sextant::views
