#include "MemoryExport.h"

#include "MemoryPlanner.h"

#include "core/ir/Csv.h"

#include <algorithm>

namespace sextant::backend {

namespace {

/// "1x16x32x32" (symbolic dims by name).
std::string shapeText(const ir::TensorType& t) {
    std::string s;
    for (size_t i = 0; i < t.shape.size(); ++i) {
        if (i)
            s += 'x';
        s += t.shape[i].isKnown() ? std::to_string(t.shape[i].value) : (t.shape[i].symbol.empty() ? std::string("?") : t.shape[i].symbol.str());
    }
    return s.empty() ? "scalar" : s;
}

/// The Task's id, or "host" for -1 (written before the run, read after it).
std::string taskText(const Program& p, int task) {
    return task < 0 || static_cast<size_t>(task) >= p.tasks.size() ? std::string("host")
                                                                     : std::to_string(p.tasks[static_cast<size_t>(task)].id);
}

uint64_t programEnd(const Program& p) {
    uint64_t end = 0;
    for (const Task& t : p.tasks)
        end = std::max(end, t.estEnd);
    return end;
}

/// Scheduled cycles from the first write to the last access: [writer start, reader end).
std::pair<uint64_t, uint64_t> lifetime(const Program& p, const Buffer& b, uint64_t end) {
    const auto task = [&p](int i) -> const Task* {
        return i >= 0 && static_cast<size_t>(i) < p.tasks.size() ? &p.tasks[static_cast<size_t>(i)] : nullptr;
    };
    const Task* w = task(b.firstTask);
    const Task* r = task(b.lastTask);
    const uint64_t lo = w ? w->estStart : 0;
    uint64_t hi = r ? r->estEnd : end;
    if (w)
        hi = std::max(hi, w->estEnd);
    return {lo, std::max(hi, lo + 1)};
}

} // namespace

std::string memoryPlanCsv(const Program& p) {
    std::string out = "buffer,tensor,role,dtype,shape,level,core,offset,size,first_task,last_task,est_first_cycle,"
                      "est_last_cycle,in_place_of\n";
    const uint64_t end = programEnd(p);
    for (const Buffer& b : p.buffers) {
        const auto [lo, hi] = lifetime(p, b, end);
        const std::string head = std::to_string(b.id) + "," + csvField(b.value) + "," + std::string(bufferKindName(b.kind)) + "," +
                                 std::string(ir::dtypeName(b.type.dtype)) + "," + csvField(shapeText(b.type)) + ",";
        const std::string tail = "," + taskText(p, b.firstTask) + "," + taskText(p, b.lastTask) + "," +
                                 std::to_string(lo) + "," + std::to_string(hi) + "," +
                                 (b.inPlaceOf >= 0 ? std::to_string(b.inPlaceOf) : std::string()) + "\n";
        auto row = [&](const std::string& level, int core, uint64_t offset, uint64_t size) {
            out += head + level + "," + (core < 0 ? std::string() : std::to_string(core)) + "," +
                   std::to_string(offset) + "," + std::to_string(size) + tail;
        };
        if (!b.type.isStatic() && b.level == MemLevel::Dram && b.stripes.empty()) {
            out += head + "host,,,," + tail.substr(1);
            continue;
        }
        if (b.stripes.empty()) {
            row(b.level == MemLevel::Sram ? "sram" : "dram", b.level == MemLevel::Sram ? b.core : -1, b.offset, b.size);
            continue;
        }
        if (b.level == MemLevel::Dram) // a halo tensor's DRAM home
            row("dram", -1, b.offset, b.size);
        for (const Buffer::Stripe& s : b.stripes)
            row("sram", s.core, s.offset, s.size);
    }
    return out;
}

Expected<std::string> offsetProblemCsv(const Program& p) {
    SX_ASSIGN(const DramArenaProblem arena, dramArenaProblem(p));
    const OffsetProblem& problem = arena.problem;
    const size_t n = problem.sizes.size();
    // A lifetime of at least one cycle, as every row needs lower < upper.
    std::vector<std::pair<uint64_t, uint64_t>> life = problem.lifetimes;
    for (auto& [lo, hi] : life)
        hi = std::max(hi, lo + 1);
    const auto meet = [&](size_t i, size_t j) { return life[i].first < life[j].second && life[j].first < life[i].second; };
    std::string out = "id,lower,upper,size,alignment,conflicts\n";
    uint64_t listed = 0;
    for (size_t i = 0; i < n; ++i) {
        std::string row = std::to_string(arena.firstBuffer[i]) + "," + std::to_string(life[i].first) + "," +
                          std::to_string(life[i].second) + "," + std::to_string(problem.sizes[i]) + "," +
                          std::to_string(problem.alignment) + ",";
        // Each pair once, on its first row: the items this one's Tasks do not order against it,
        // though the estimated lifetimes do not meet.
        bool first = true;
        for (int c : problem.conflicts[i]) {
            const size_t j = static_cast<size_t>(c);
            if (j <= i || meet(i, j) || problem.sizes[i] == 0 || problem.sizes[j] == 0)
                continue;
            row += (first ? "" : " ") + std::to_string(arena.firstBuffer[j]);
            first = false;
            if (++listed > kMaxListedPairs)
                return makeError(ErrorKind::Unsupported,
                                 "the DRAM arena's problem has more than " + std::to_string(kMaxListedPairs) +
                                     " pairs of buffers that conflict beyond their lifetimes (Tasks not ordered): "
                                     "too many to write");
        }
        if (row.size() >= kMaxIntervalCsvLine)
            return makeError(ErrorKind::Unsupported, "buffer " + std::to_string(arena.firstBuffer[i]) +
                                                         " of the DRAM arena conflicts with too many others to "
                                                         "write on one line of " +
                                                         std::to_string(kMaxIntervalCsvLine) + " bytes");
        out += row + "\n";
    }
    return out;
}

} // namespace sextant::backend
