#pragma once

// The simulator's machine: the state of one run and the member functions that move it, defined
// across the files of core/sim by what they model (internal to sextant_sim; include only there):
//   Simulator.cpp    the event loop: load memory, dispatch Tasks as their events allow, start/end
//   Executor.cpp     the functional executor: a Task's nodes computed from the memory image
//   Timing.cpp       the timing model: a Task's cycles from its tiles, DMA and the shared DRAM
//   RaceChecker.cpp  the race checker (SimOptions::checkRaces): unordered or overlapping accesses
//   Watchdog.cpp     the watchdog's dump when no Task can make progress

#include "MemoryImage.h"
#include "core/backend/Tiling.h"
#include "Simulator.h"

#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace sextant::sim::detail {

using backend::Buffer;
using backend::Program;
using backend::Task;
using backend::UnitKind;

/// "task 7 'conv1'", as every simulator message names a Task.
std::string taskLabel(const Task& t);

/// One entry of the event queue. Ends sort before starts at the same cycle so that a Task starting
/// exactly when its producer ends sees the producer's data; ties then go by Task id.
struct Item {
    uint64_t time;
    int kind; ///< 0 end, 1 start
    int taskId;
    size_t index;
    bool operator>(const Item& o) const {
        return std::tie(time, kind, taskId, index) > std::tie(o.time, o.kind, o.taskId, o.index);
    }
};

struct TaskState {
    bool scheduled = false;
    bool started = false;
    bool executed = false; ///< its nodes computed (at its start, or once the Task before it ended)
    /// Its loads of host data (weights, graph inputs) began at `issuedAt` while its events were
    /// still to come (Machine::trySchedule); it starts there once they are in.
    bool issued = false;
    uint64_t issuedAt = 0;
    bool ended = false;
    uint64_t ready = 0;
    uint64_t start = 0;
    uint64_t end = 0;
    std::vector<std::pair<size_t, ir::Tensor>> pendingWrites; ///< buffer index, value
    std::vector<size_t> reads;  ///< buffer indices read (for the race checker)
    std::vector<size_t> homeReads; ///< of `reads`, those read from their DRAM home only
    std::vector<size_t> writes; ///< buffer indices written
};

/// The values a Task's nodes computed so far, by value: a Task runs a handful of nodes, so a
/// short list searched by pointer beats any map keyed by name.
class TaskLocals {
public:
    const ir::Tensor* find(const ir::Value* v) const {
        for (const auto& [value, tensor] : m_items)
            if (value == v)
                return &tensor;
        return nullptr;
    }
    void set(const ir::Value* v, ir::Tensor t) {
        for (auto& [value, tensor] : m_items)
            if (value == v) {
                tensor = std::move(t);
                return;
            }
        m_items.emplace_back(v, std::move(t));
    }

private:
    std::vector<std::pair<const ir::Value*, ir::Tensor>> m_items;
};

/// Race checker: bytes of a place of a buffer that do not hold what its writers stored, and
/// the buffer whose write replaced them (Machine::kNoBuffer: never written yet).
struct StaleBytes {
    backend::SliceBytes bytes;
    size_t by;
};

/// The whole state of one run; simulate() builds one and calls run().
class Machine {
public:
    Machine(const Program& program, const SimOptions& options, MemoryImage memory)
        : m_p(program), m_opt(options), m_mem(std::move(memory)) {}

    Status prepare(std::span<const ir::Tensor> inputs);
    Expected<SimResult> run();

private:
    Status checkSram() const;
    Status loadWeights();
    Status loadInputs(std::span<const ir::Tensor> inputs);
    /// Per Task: whether it may start while the Task before it on its core still runs (see
    /// findOverlaps); the Task before it on its core (-1 for a core's first).
    void findOverlaps();
    std::vector<char> m_overlapsPrev;
    /// Per Task: none of its SRAM buffers meets one the Task two before it on its core uses, so
    /// it may issue its loads while that Task still runs (trySchedule).
    std::vector<char> m_clearOfSecondPrev;
    std::vector<long> m_prevOnCore;
    std::vector<uint64_t> m_lateLoad; ///< per Task: bytes it loads of what the Task before it stores
    std::vector<uint64_t> m_hostLoad; ///< per Task: bytes it loads of weights and graph inputs
    uint64_t m_now = 0;               ///< the event loop's time
    /// Computes a started Task's nodes from memory (or, not functional, notes what it touches)
    /// and checks it for races at `now`.
    Status executeStarted(size_t index, uint64_t now);
    std::vector<char> m_dmaCore; ///< scratch of startTask: cores with a Task streaming DRAM
    void trySchedule(int core);
    Status startTask(size_t index, uint64_t now);
    Status endTask(size_t index, uint64_t now);
    Status execute(size_t index);
    /// SimOptions::keepValues: records what `task` computed for `value` (a split node's parts
    /// put together).
    void keepValue(const Task& task, const ir::Value& value, const ir::Tensor& computed);
    std::unordered_map<const ir::Value*, std::pair<ir::Tensor, int>> m_assembling; ///< looked up, never iterated
    Expected<ir::Tensor> readInput(const Task& task, const ir::Node& node, const ir::Value& v,
                                   const TaskLocals& local,
                                   std::vector<size_t>& reads, std::vector<size_t>& homeReads);
    /// Whether `task` reads `b` from its DRAM home: a home holding every row, and no resident
    /// stripe of `b` on the Task's core while it runs.
    bool readsHome(const Task& task, const Buffer& b) const;
    std::map<std::pair<int, int>, std::pair<int, int>> m_residentRange; ///< (buffer id, core) -> Task range
    Status checkRaces(size_t index, uint64_t now) const;
    std::vector<size_t> outputBuffersFor(const Task& task, const ir::Value& value) const;
    /// The buffers planned for `v` (indices, in buffer id order); empty when it has none.
    const std::vector<size_t>& buffersOf(const ir::Value& v) const;
    std::string watchdogDump(uint64_t now) const;

    const Program& m_p;
    SimOptions m_opt;
    std::vector<std::pair<std::string, ir::Tensor>> m_values; ///< SimOptions::keepValues
    MemoryImage m_mem;
    std::map<int, size_t> m_bufferById;
    /// The graph's objects behind the program's names, resolved once in prepare() so the run looks
    /// nothing up by name: per buffer index its value (nullptr when the graph has none of that
    /// name), per Value::id() its buffers in id order, per Task index its nodes (nullptr for a
    /// name the graph lacks; execute() reports it).
    std::vector<const ir::Value*> m_bufferValue;
    std::vector<std::vector<size_t>> m_buffersByValue;
    std::vector<std::vector<const ir::Node*>> m_taskNodes;
    std::map<int, size_t> m_eventById;
    std::map<int, std::vector<size_t>> m_recorders; ///< event id -> Tasks that record it
    /// Hardware event slots, keyed by (recording core, slot): the event last recorded there and
    /// the cycle its recording Task ended. A wait on E passes while E's slot holds E.
    std::map<std::pair<int, int>, std::pair<int, uint64_t>> m_slots;
    std::set<int> m_everRecorded; ///< for the watchdog dump
    std::map<int, uint64_t> m_dropped; ///< FaultKind::DropRecord: event -> cycle its record was skipped
    /// The watchdog's words for why `task` (the head of its core's queue) cannot start.
    std::string blockedBy(size_t index) const;
    std::string recorderState(int event) const;
    /// The slot an event lives in: (core of the Task that records it, Event::slot); unknown
    /// events get a slot no Task records, so their waits never pass.
    std::pair<int, int> slotOf(int event) const;
    /// The cycle `event` was recorded if its slot holds it now.
    std::optional<uint64_t> recordedAt(int event) const;
    std::vector<std::vector<size_t>> m_queues; ///< per core: Task indices in issue order
    std::vector<size_t> m_head;
    std::vector<uint64_t> m_coreFree;
    std::vector<TaskState> m_state;
    std::vector<TraceRecord> m_trace;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> m_queue;
    std::vector<size_t> m_running; ///< started, not ended
    std::map<int, size_t> m_taskById;
    std::vector<std::vector<size_t>> m_writers; ///< per buffer index: the Tasks (indices) writing it
    /// Per buffer index: the buffers (indices) written in place into it, directly or through a
    /// chain (Buffer::inPlaceOf); empty for a buffer others are not written into. Such a holder
    /// is written only through them: its m_writers are theirs, and reading it reads their bytes.
    std::vector<std::vector<size_t>> m_inPlaceParts;
    /// Per buffer index: the buffers (indices) holding it in place, nearest first (the inverse of
    /// m_inPlaceParts); empty for a buffer of its own.
    std::vector<std::vector<size_t>> m_holders;
    std::vector<char> m_holderKept; ///< keepValues: a holder's value already kept (read once)
    /// keepValues: a Concat lowered in place computes nothing; its value is kept as its buffer
    /// holds it once the last writer of its parts (`task` one of them) has ended.
    void keepHeldValues(const Task& task);
    /// A split node's outputs, from its first part to start until its last, with the inputs they
    /// were computed from (see execute).
    struct PartResults {
        std::vector<ir::Tensor> inputs; ///< as the part that computed them read them
        std::vector<ir::Tensor> outputs;
        int started = 0;
    };
    std::unordered_map<const ir::Node*, PartResults> m_partResults; ///< looked up, never iterated
    /// Race checker only: per buffer, per place it has (one; or one per stripe, then a halo
    /// buffer's DRAM home), the bytes there that do not hold what its writers stored: never
    /// written yet (`by` kNoBuffer), or overwritten by buffer `by`. Bytes relative to the place;
    /// a buffer's one place in the layout of the slices written there (backend::SliceBytes), so
    /// that buffers sharing their addresses slice by slice are told apart slice by slice.
    static constexpr size_t kNoBuffer = SIZE_MAX;
    std::vector<std::vector<std::vector<StaleBytes>>> m_stale;
    /// A write of `buffer` by a Task on `core` (-1: the host, every place); `task`: the writing
    /// Task's index (SIZE_MAX: the host, all of it).
    void noteWrite(size_t buffer, int core = -1, size_t task = SIZE_MAX);
    /// "by task 2 'sig' (node 'sig') on core 1", or "by the host (a weight)": who stored `buffer`.
    std::string writerOf(size_t buffer) const;
    size_t m_finished = 0;
    std::vector<uint64_t> m_loadBytes; ///< per Task: DMA bytes it loads (the rest it stores)
    std::vector<backend::HostTransfer> m_hostMoves; ///< per host Task: what it reads and writes of DRAM
};


} // namespace sextant::sim::detail
