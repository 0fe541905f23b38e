#pragma once

#include "Target.h"
#include "core/ir/Graph.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sextant::backend {

/// Which unit of a core runs a Task. Host: not the NPU but the host CPU, for a node the NPU
/// cannot run (control flow, a recurrence, a shape computation; backend::hostReason says why):
/// a host Task runs on the host lane (hostLane), reads and writes DRAM only, has no tiling, no
/// SRAM slots and no transfers, and syncs with the cores by events like a core of its own.
enum class UnitKind : uint8_t { Cube, Vector, Dma, Host };
std::string_view unitName(UnitKind u);

/// The lane of host Tasks: the core index after the target's last core (Task::core, Event::core
/// and the trace use it; no SRAM, no per-core figures belong to it).
inline int hostLane(const Target& t) { return t.numCores; }

struct Task;
/// Whether `t` is on a lane its unit may use: a host Task on the host lane, any other Task on one
/// of the target's cores.
bool onItsLane(const Task& t, const Target& target);
/// "core 3" or "the host": where a Task runs, for messages.
std::string laneName(int core, const Target& target);

struct Program;
/// The target's cores that run at least one Task (the host lane is not one of them).
int coresUsed(const Program& p);
/// The partition's host steps, one line per op and reason (DESIGN §6, partitions): how many host
/// Tasks run it, the first few node names and why the NPU does not ("2 x LSTM (LSTM_1, LSTM_2):
/// 'LSTM' is a recurrence ..."), in the order their first Task runs. Empty when everything runs
/// on the NPU.
std::vector<std::string> hostStepLines(const Program& p);
/// One line per input guard: "input 'sr' = 16000 (decides 'If_0'; other values are refused)".
std::vector<std::string> inputGuardLines(const Program& p);

/// Where a buffer lives.
enum class MemLevel : uint8_t { Dram, Sram };

/// What a buffer holds.
enum class BufferKind : uint8_t { Input, Output, Weight, Intermediate };

/// "input", "output", "weight", "intermediate": how the artifact's manifest and the memory plan
/// export name a buffer's kind.
const char* bufferKindName(BufferKind k);

/// A planned region of memory holding one tensor (an IR value).
struct Buffer {
    int id = 0;
    std::string value;            ///< IR value name (the tensor)
    BufferKind kind = BufferKind::Intermediate;
    MemLevel level = MemLevel::Dram;
    int core = -1;                ///< owning core for SRAM, -1 for DRAM
    uint64_t offset = 0;          ///< DRAM: absolute byte address (see MemoryStats); SRAM: offset in the core's SRAM
    uint64_t size = 0;            ///< bytes, aligned
    ir::TensorType type;          ///< element type and shape as stored
    int firstTask = -1;           ///< Task that writes it (-1: written by the host before the run)
    int lastTask = -1;            ///< last Task that reads it (-1: read by the host after the run)
    // (A buffer others are written in place into: the first Task writing any of them, and the
    // last reading it or any of them; holdersLifetimes.)
    /// A tensor kept on chip a stripe at a time (keep-on-chip on a node split across cores, as
    /// Vela cascades): stripe i holds the slice [begin, end) of dim `stripeAxis` in the SRAM of
    /// `core`, where the part that writes it and the parts that read it run. level is Sram, and
    /// core/offset/size repeat the first stripe's. Empty: the buffer is whole at (level, core, offset).
    /// With a halo (a convolution's window reaches a row or two into its neighbours' stripes):
    /// level stays Dram and (offset, size) is a DRAM home where each writer also stores the rows
    /// other cores read, its first haloTop and last haloBottom rows (haloHomeType); a reader takes
    /// its own stripe's rows from its core's SRAM and the rest of the window from that DRAM home.
    struct Stripe {
        int core = 0;
        uint64_t offset = 0, size = 0;
        int64_t begin = 0, end = 0;
        int64_t haloTop = 0, haloBottom = 0; ///< rows also stored to DRAM (halo buffers only)
    };
    std::vector<Stripe> stripes;
    int stripeAxis = -1;
    /// An input of a Concat lowered in place (rule concat-in-place): no Task copies it, its
    /// producer writes it straight into the Concat's output, whose bytes [inPlaceOffset,
    /// inPlaceOffset + size) it is. -1: a buffer of its own. Always DRAM; a chain of such
    /// Concats nests (storageOf follows it to the buffer the memory plan places).
    int inPlaceOf = -1;
    uint64_t inPlaceOffset = 0;
    /// A weight the loader fills with this one value before the run (backend::loadTimeFill), in
    /// the buffer's dtype: the output of a ConstantOfShape the backend gives no Task. Its bytes
    /// are not in weights.bin; it lies after the weights region, before the I/O region (artifact
    /// version 7). nullopt: a weight from weights.bin, or not a weight.
    std::optional<double> fill;
    /// A halo buffer's DRAM home holds only its stripes' halo rows, in stripe order (each
    /// stripe's haloTop rows, then its haloBottom rows): the tensor's type with dim stripeAxis
    /// their count. (offset, size) is that home; size its stored bytes, aligned.
    ir::TensorType haloHomeType() const {
        ir::TensorType t = type;
        int64_t rows = 0;
        for (const Stripe& s : stripes)
            rows += s.haloTop + s.haloBottom;
        if (stripeAxis >= 0 && static_cast<size_t>(stripeAxis) < t.shape.size())
            t.shape[static_cast<size_t>(stripeAxis)] = ir::Dim::known(rows);
        return t;
    }
    /// A halo buffer whose DRAM home holds every row (each writer stores its whole stripe there):
    /// a Task that does not read its own core's stripe in place reads the home, as a DRAM buffer.
    bool homeHoldsAll() const {
        if (level != MemLevel::Dram || stripes.empty())
            return false;
        for (const Stripe& s : stripes)
            if (s.haloTop + s.haloBottom < s.end - s.begin)
                return false;
        return true;
    }
    /// The stripe on `c` (nullptr when it has none there).
    const Stripe* stripeOn(int c) const {
        for (const Stripe& s : stripes)
            if (s.core == c)
                return &s;
        return nullptr;
    }
};

/// Elements a value of type `t` occupies in memory: its element count, except that a rank-4
/// NC1HWC0 value holds N * ceil(C / c0) * H * W * c0 (the last channel block zero-padded), which
/// is what its buffer reserves and what the DMA moves. -1 for a type without a static shape.
int64_t storedElements(const ir::TensorType& t, int c0);
/// storedElements times the element size (0 for a type without a static shape).
uint64_t storedBytes(const ir::TensorType& t, int c0);

/// Whether node `n` computes with its operand `i` rounded to f16, by the precision the
/// `precision` pass marked (the simulator's numerics, sim/Executor.cpp): an f16 op every float
/// operand; an f16-acc-f32 (cube) op its data and weights (operands 0 and 1) and a FusedConv's
/// residual (operand 3, read like the data and added in the f32 epilogue), not a bias, which
/// joins the f32 accumulator. Unmarked and f32 ops: none.
bool readsInF16(const ir::Node& n, size_t i);

/// The element type value `v` is kept in between Tasks (its buffer's type, in DRAM or SRAM):
/// f16 for a computed f32 tensor that every reader rounds to f16 anyway -- an
/// operand its reader's precision takes in f16 (readsInF16), or an operand of a
/// data-movement op (CostClass::DmaOnly: its float outputs are copies of its float inputs)
/// whose outputs are all kept in f16 themselves. Keeping such a tensor in f16 changes no number
/// the NPU computes and halves its bytes. Graph inputs and outputs keep their own type (the
/// host writes and reads them as declared), and so do weights (the artifact's weights.bin holds
/// the graph's constants as they are), as does everything else. A view's output is kept
/// as the value whose buffer it shares (bufferOwner).
ir::DType storedDType(const ir::Value& v);
/// v's type with storedDType as its element type.
ir::TensorType storedType(const ir::Value& v);

/// Tiling chosen for a Task, with the runner-up candidates so a GUI can say why.
struct Tiling {
    std::vector<int64_t> tileShape; ///< output tile extents
    int numTiles = 1;               ///< output tiles times reduceChunks
    /// Chunks a split reduction is done in (global pooling of a large map, a dense convolution's
    /// input channels), each accumulated into the output tile; 1 when the op reads its whole
    /// reduction at once.
    int reduceChunks = 1;
    bool doubleBuffered = false;
    uint64_t sramBytes = 0;         ///< SRAM footprint of the chosen tiling
    uint64_t estCycles = 0;
    struct Candidate {
        std::vector<int64_t> tileShape;
        int reduceChunks = 1;
        uint64_t estCycles = 0;
        std::string rejectedBecause;
    };
    std::vector<Candidate> candidates;
};

/// One unit of work on one core: a fused group's kernel over its tiles.
struct Task {
    int id = 0;
    std::string name;                 ///< stable, from the group's first node
    std::string kernel;               ///< kernel id: the op name of the fused group ("FusedConv")
    int core = 0;
    UnitKind unit = UnitKind::Vector;
    std::vector<std::string> nodes;   ///< IR node names it executes, in order
    std::vector<int> inputs;          ///< buffer ids read
    std::vector<int> outputs;         ///< buffer ids written
    std::vector<int> deps;            ///< Task ids that must finish first (data dependencies)
    /// Input buffers this part of a split node reads only within its own slice (an elementwise
    /// op, a depthwise convolution or a pooling along channels, split like its producer): it
    /// depends only on the producer's part that writes that slice.
    std::vector<int> sliceLocalInputs;
    /// Input buffers this part reads along its own split dim within [begin, end) only, a window
    /// a little wider than its slice (a convolution's halo rows), split that way by its producer:
    /// it depends only on the producer's parts whose slices meet the window. Sorted by buffer.
    struct HaloRead {
        int buffer = 0;
        int64_t begin = 0, end = 0;
        bool operator==(const HaloRead&) const = default;
    };
    std::vector<HaloRead> haloReads;
    /// The halo read of `buffer`, or nullptr.
    const HaloRead* haloReadOf(int buffer) const {
        for (const HaloRead& h : haloReads)
            if (h.buffer == buffer)
                return &h;
        return nullptr;
    }
    std::vector<int> waitEvents;      ///< event ids waited on before starting (cross-core deps)
    std::vector<int> recordEvents;    ///< event ids recorded on finishing
    Tiling tiling;
    /// Split across cores (DESIGN §6, groups' tiles assigned to cores): this Task is part `part`
    /// of `parts` sharing its group's work, and computes the slice [sliceBegin, sliceEnd) of its
    /// single output along dim `sliceAxis` (all of every other dim; see sliceOf for the bytes).
    /// The parts' ranges are disjoint and cover the dim. parts == 1: the whole group.
    int part = 0;
    int parts = 1;
    int sliceAxis = -1;
    int64_t sliceBegin = 0, sliceEnd = 0;
    uint64_t flops = 0;
    uint64_t dmaBytes = 0;            ///< bytes moved between DRAM and SRAM
    uint64_t estCycles = 0;           ///< cost-model duration, without dispatch
    /// Cycles its unit computes over all tiles (the cost model's, per op: cube blocks, vector
    /// passes at the lanes its precision gives); the simulator times the compute with it. 0 in an
    /// artifact that predates it: the simulator then derives it from the flops.
    uint64_t computeCycles = 0;
    uint64_t estStart = 0;            ///< scheduled start (cycles), from the list scheduler
    uint64_t estEnd = 0;              ///< scheduled end, including dispatch
};

/// The bytes of `buffer` (one of the Task's outputs) that `task` writes: `runs` runs of
/// [begin, end), the i-th offset by i * stride from the buffer's start. The whole tensor is one
/// run; one part of a split group writes its rows of every outer index. Buffers hold the logical
/// tensor in row-major order (the NC1HWC0 padding is costed, not stored).
struct SliceBytes {
    uint64_t runs = 1;
    uint64_t stride = 0;
    uint64_t begin = 0, end = 0;
};
SliceBytes sliceOf(const Task& task, const Buffer& buffer);
/// The bytes of `buffer` in [begin, end) along dim `axis` (all of every other dim); all of it
/// for an axis the buffer does not have.
SliceBytes sliceAlong(const Buffer& buffer, int axis, int64_t begin, int64_t end);
/// The bytes of `buffer` that `task` touches: of an output, what it writes (sliceOf); of an
/// input, its own slice where it reads only that (Task::sliceLocalInputs), its window's rows
/// (Task::haloReads), else all of it.
SliceBytes touchedBytes(const Task& task, const Buffer& buffer);
/// Whether bytes `a` of a buffer at address `baseA` and bytes `b` of one at `baseB` share an
/// address: exactly for two byte sets of one layout (same runs and stride) at one address, of
/// one stride at addresses whole runs apart (a tensor written in place into a Concat, and the
/// Concat's output), or one range against runs; else whether their spans meet.
bool bytesMeet(uint64_t baseA, const SliceBytes& a, uint64_t baseB, const SliceBytes& b);
/// Whether `a` and `b` are two parts of one node's split (same node, same part count, same dim).
bool sameSplit(const Task& a, const Task& b);

struct Program;
/// Calls `f(holder, offset)` for each buffer that holds buffer `b` in place, nearest first: the
/// one b is written into (Buffer::inPlaceOf), the one that is written into, and so on, with b's
/// byte offset in each. Buffer ids are their indices. Stops at an id out of range, or after as
/// many hops as there are buffers (a chain that loops, in a corrupt artifact: the planner's
/// checkInPlace and the artifact reader reject those, naming them).
template <class F>
void forEachHolder(const std::vector<Buffer>& buffers, int b, F&& f) {
    uint64_t offset = 0;
    for (size_t hops = 0; hops < buffers.size() && b >= 0 && static_cast<size_t>(b) < buffers.size(); ++hops) {
        const Buffer& part = buffers[static_cast<size_t>(b)];
        if (part.inPlaceOf < 0 || static_cast<size_t>(part.inPlaceOf) >= buffers.size())
            return;
        offset += part.inPlaceOffset;
        b = part.inPlaceOf;
        f(b, offset);
    }
}
/// The buffer whose addresses hold buffer `b` (Buffer::inPlaceOf followed to its end; `b` itself
/// for a buffer of its own), and b's byte offset in it. A chain longer than the buffers (a
/// cycle, in a corrupt artifact) ends where it stands.
int storageOf(const Program& p, int b, uint64_t* offset = nullptr);
/// Sets the lifetime of every buffer others are written in place into from theirs: it has no
/// writer of its own, so its first Task is the first writing any of them, and its last Task the
/// last reading it or any of them (Buffer::firstTask / lastTask as the Tasks give them first).
void holdersLifetimes(std::vector<Buffer>& buffers);
/// Per buffer (by index): 1 when other buffers are written in place into it, directly or
/// through a chain (it holds their bytes and has no writer of its own).
std::vector<char> holdersOfParts(const Program& p);
/// The bytes of buffer `storage` that `task` touches, directly (touchedBytes) or through a
/// buffer written in place into it, directly or through a chain (that buffer's bytes at its
/// offset in it); all of it when it does both or through several; nothing (runs 0) when it
/// touches none of it.
SliceBytes touchedInStorage(const Program& p, const Task& task, int storage);

/// A cross-core synchronisation: the producer records a slot, consumers on other cores wait on it.
/// Slot semantics: recording event E stores E's id in the slot; a wait on E passes once the slot
/// holds E. The allocator only reuses a slot for a new event after every consumer of the previous
/// event happens-before the new producer (through deps and per-core program order), so a waiter
/// never sees a stale or an overwritten record. `consumerTasks` are the first Task on each
/// consuming core that needs the producer; later Tasks on that core are ordered after it.
struct Event {
    int id = 0;
    int slot = 0;                     ///< hardware slot on the recording core
    int core = 0;                     ///< the recording core (the producer's core)
    int producerTask = 0;
    std::vector<int> consumerTasks;
};

/// What an SRAM buffer holds for the Task or Tasks that use it.
enum class SramRole : uint8_t {
    InputTile,   ///< a tile of an activation input, loaded from DRAM
    WeightTile,  ///< weights (and bias), loaded from DRAM
    OutputTile,  ///< a tile of the output, stored to DRAM when done
    Accumulator, ///< an output tile summed over the chunks of a split reduction
    Resident,    ///< a whole tensor kept on chip from its producer to its last consumer
};
std::string_view sramRoleName(SramRole r);

/// A planned region of one core's SRAM (DESIGN §6, on-chip residency). Tile slots live for
/// one Task; a double-buffered stream has two slots (`pair` 0 and 1: while the unit computes on
/// one the DMA fills or drains the other). A resident tensor lives from the Task that writes it
/// to the last Task on the core that reads it; its Program::buffers entry is then at level Sram
/// on that core, at the same offset, so the simulator computes from and into the SRAM image.
struct SramBuffer {
    int id = 0;
    int core = 0;
    uint64_t offset = 0; ///< byte offset in the core's SRAM
    uint64_t size = 0;   ///< bytes, a multiple of the target's sram_align
    SramRole role = SramRole::InputTile;
    int pair = -1;       ///< 0 or 1 in a ping-pong pair, -1 for a single slot
    int task = -1;       ///< the Task whose slot it is; for a resident tensor, the Task that writes it
    int buffer = -1;     ///< Program::buffers id of the tensor it holds a tile of (or holds whole)
    /// Lifetime, first to last Task using it (ids of Tasks on `core`, inclusive). Tasks on one
    /// core run in issue order, so two buffers whose ranges do not meet are ordered by that order:
    /// a slot reused later waits for every reader of what it held before. (A Task loads while
    /// the one before it still runs only when its own buffers meet none that Task uses.)
    int firstTask = -1, lastTask = -1;
};

/// One DMA transfer of a Task: DRAM buffer to SRAM slot (a load) or back (a store), over all
/// its tiles.
struct Transfer {
    int task = 0;
    bool load = true;    ///< DRAM -> SRAM; false: SRAM -> DRAM
    int dramBuffer = 0;  ///< Program::buffers id
    int sramBuffer = 0;  ///< Program::sramBuffers id
    uint64_t bytes = 0;  ///< over all tiles
};

/// A tensor the keep-on-chip rule kept in SRAM instead of DRAM.
struct OnChip {
    int buffer = 0;        ///< Program::buffers id (now at level Sram)
    int core = 0;
    uint64_t bytes = 0;    ///< its SRAM footprint
    uint64_t savedDmaBytes = 0; ///< DRAM bytes no longer written and read
};

/// Per-core SRAM figures of the plan.
struct SramStats {
    uint64_t capacity = 0;   ///< the target's sram_bytes
    uint64_t peak = 0;       ///< highest byte any SRAM buffer on the core reaches
    uint64_t lowerBound = 0; ///< max over the core's Tasks of the bytes live at once
};

/// Summary of the memory plan.
struct MemoryStats {
    uint64_t dramPeak = 0;        ///< bytes of the intermediate arena the plan uses
    uint64_t dramLowerBound = 0;  ///< no plan can do better: max-live, or buffers that all conflict
    uint64_t weightBytes = 0;     ///< weights region
    uint64_t ioBytes = 0;         ///< graph inputs and outputs region
    // DRAM layout, absolute byte addresses (Buffer::offset is absolute for DRAM buffers):
    // [weightsBase, weightsBase + weightBytes) weights in constant order (weights.bin), then
    // the weights the loader fills (Buffer::fill) up to ioBase, [ioBase, arenaBase) graph inputs then
    // outputs, [arenaBase, arenaBase + dramPeak) the intermediate arena. All 64-byte aligned.
    uint64_t weightsBase = 0;
    uint64_t ioBase = 0;
    uint64_t arenaBase = 0;
    uint64_t dramTotal = 0;       ///< arenaBase + dramPeak: bytes of DRAM the program needs
    std::vector<SramStats> sram;  ///< one per core of the target
    /// Bytes the DMA moves between DRAM and SRAM over the whole program (Tasks' dmaBytes).
    uint64_t dramTrafficBytes = 0;
    /// What any program must move at least: weights, graph inputs and graph outputs, once.
    uint64_t compulsoryBytes = 0;
    double fragmentation() const {
        return dramPeak == 0 ? 0.0 : 1.0 - static_cast<double>(dramLowerBound) / static_cast<double>(dramPeak);
    }
};

/// A graph input whose value the program was compiled for (runtime::bindControlInputs): it
/// decides control flow (an If's condition), which compiling for it folded away. The runtime
/// refuses other values, naming the input, both values and what it decides.
struct InputGuard {
    int input = 0;        ///< index into the graph's inputs
    ir::Tensor value;     ///< an integer or bool tensor of at most a few elements
    std::string decides;  ///< the node whose condition it decided ("If_0")
};

/// The compiled form of a model: what the artifact stores and the simulator runs.
struct Program {
    std::string modelName;
    Target target;
    /// The final graph (after every pass), with its constants; Tasks name its nodes.
    std::shared_ptr<const ir::Graph> graph;
    std::vector<Buffer> buffers;
    std::vector<Task> tasks;          ///< in issue order (a valid topological order)
    std::vector<Event> events;
    MemoryStats memory;
    std::vector<SramBuffer> sramBuffers; ///< every core's SRAM plan, by core then Task
    std::vector<Transfer> transfers;     ///< DMA transfers, by Task
    std::vector<OnChip> onChip;          ///< tensors the keep-on-chip rule kept, by buffer id
    std::vector<int> inputBuffers;    ///< one per graph input, in order
    std::vector<int> outputBuffers;   ///< one per graph output, in order
    std::vector<InputGuard> inputGuards; ///< inputs bound to the values it was compiled for
    std::vector<std::string> pipeline;      ///< pass ids that ran, in order
    std::vector<std::string> disabledRules; ///< rule/pass ids switched off
    int64_t bisectLimit = -1;               ///< the pipeline's rule-application limit (-1: none)
    uint64_t estCycles = 0;                 ///< makespan of the list schedule (cycles)
    /// What the compiler had to give up and why, one sentence each, for the CLI summary and the
    /// GUI's log (say, fewer cores because the events did not fit). Not stored in artifacts.
    std::vector<std::string> notes;
};

} // namespace sextant::backend
