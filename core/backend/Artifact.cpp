#include "ArtifactInternal.h"

#include "EventAllocator.h"
#include "MemoryPlanner.h"
#include "SramPlanner.h"
#include "core/ir/Parser.h"

#include <filesystem>
#include <fstream>
#include <map>

namespace sextant::backend {

namespace fs = std::filesystem;
using artifact::json;
using artifact::Manifest;

namespace {

Status writeFile(const fs::path& path, const void* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError(ErrorKind::Io, path.string() + ": cannot open for writing");
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out)
        return makeError(ErrorKind::Io, path.string() + ": write failed");
    return {};
}

Expected<std::vector<uint8_t>> readBytes(const fs::path& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        return makeError(ErrorKind::Io, path.string() + ": missing");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorKind::Io, path.string() + ": cannot open");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return bytes;
}


/// Gives `p` its graph, from the manifest's textual IR with the weights taken from weights.bin at
/// their planned offsets, and checks that every name the Tasks, buffers and node_tasks use is in it.
Status attachGraph(const Manifest& m, const json& doc, const std::vector<uint8_t>& weightsBin, Program& p) {
    const MemoryStats& ms = p.memory;
    std::map<std::string, ir::Tensor> weights;
    for (const Buffer& b : p.buffers) {
        if (b.kind != BufferKind::Weight)
            continue;
        uint64_t at = b.offset - ms.weightsBase;
        uint64_t bytes = artifact::tensorBytes(b.type);
        weights[b.value] = ir::Tensor::copyOf(
            b.type.dtype, b.type.dims(),
            std::span<const std::byte>(reinterpret_cast<const std::byte*>(weightsBin.data()) + at, bytes));
    }
    SX_ASSIGN(std::string graphText, m.str(doc, "graph", ""));
    Expected<std::unique_ptr<ir::Graph>> graph = ir::parseGraph(graphText, &weights);
    if (!graph.ok())
        return m.err("graph", "does not parse: " + graph.error().message);
    std::shared_ptr<const ir::Graph> g = std::move(graph).value();
    p.graph = g;
    for (const Task& t : p.tasks)
        for (const std::string& n : t.nodes)
            if (!g->findNode(n))
                return m.err("tasks[" + std::to_string(t.id) + "].nodes", "names node '" + n + "' that is not in the graph");
    for (const Buffer& b : p.buffers) {
        const ir::Value* v = g->findValue(b.value);
        if (!v)
            return m.err("buffers[" + std::to_string(b.id) + "].value", "names value '" + b.value + "' that is not in the graph");
        if (b.kind == BufferKind::Weight && !v->isConstant())
            return m.err("buffers[" + std::to_string(b.id) + "].value", "names weight '" + b.value + "' that is not a constant");
    }
    SX_ASSIGN(const json* nodeTasks, m.get(doc, "node_tasks", ""));
    if (!nodeTasks->is_object())
        return m.err("node_tasks", "must be an object");
    std::map<std::string, int> firstTaskOf;
    for (const Task& t : p.tasks)
        for (const std::string& n : t.nodes)
            firstTaskOf.emplace(n, t.id);
    for (const auto& [n, id] : firstTaskOf) {
        auto it = nodeTasks->find(n);
        if (it == nodeTasks->end() || !it->is_number_integer() || it->get<int64_t>() != id)
            return m.err("node_tasks." + n, "does not map to task " + std::to_string(id));
    }

    return {};
}

} // namespace

Status writeArtifact(const Program& p, const std::string& dir) {
    if (!p.graph)
        return makeError(ErrorKind::Invalid, "writeArtifact: program has no graph");
    // Refuse to write what the reader would reject.
    for (const Buffer& b : p.buffers)
        if (b.kind == BufferKind::Weight) {
            const ir::Value* v = p.graph->findValue(b.value);
            if (!v || !v->constant())
                return makeError(ErrorKind::Invalid, "weight buffer '" + b.value + "' is not a constant of the graph");
            if (b.offset < p.memory.weightsBase || b.offset + v->constant()->byteSize() > p.memory.weightsBase + p.memory.weightBytes)
                return makeError(ErrorKind::Invalid, "weight buffer '" + b.value + "' lies outside the weights region");
        }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return makeError(ErrorKind::Io, dir + ": cannot create directory (" + ec.message() + ")");

    std::vector<uint8_t> tasksBin = encodeTasks(p);
    std::vector<uint8_t> weightsBin = encodeWeights(p);

    artifact::StreamedLists lists;
    const json head = artifact::manifestHead(p, tasksBin, weightsBin, lists);

    fs::path d(dir);
    SX_TRY(writeFile(d / "tasks.bin", tasksBin.data(), tasksBin.size()));
    SX_TRY(writeFile(d / "weights.bin", weightsBin.data(), weightsBin.size()));
    const fs::path manifest = d / "manifest.json";
    std::ofstream out(manifest, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError(ErrorKind::Io, manifest.string() + ": cannot open for writing");
    artifact::writeManifest(out, head, lists);
    out.flush();
    if (!out)
        return makeError(ErrorKind::Io, manifest.string() + ": write failed");
    return {};
}

Expected<Program> readArtifact(const std::string& dir) {
    fs::path d(dir);
    std::error_code ec;
    if (!fs::is_directory(d, ec))
        return makeError(ErrorKind::Io, dir + ": not an artifact directory");
    const std::string manifestPath = (d / "manifest.json").string();
    const std::string tasksPath = (d / "tasks.bin").string();
    const std::string weightsPath = (d / "weights.bin").string();
    SX_ASSIGN(std::vector<uint8_t> manifestBytes, readBytes(manifestPath));
    SX_ASSIGN(std::vector<uint8_t> tasksBin, readBytes(tasksPath));
    SX_ASSIGN(std::vector<uint8_t> weightsBin, readBytes(weightsPath));

    Manifest m(manifestPath);
    json doc;
    try {
        doc = json::parse(manifestBytes.begin(), manifestBytes.end());
    } catch (const json::parse_error& e) {
        return m.fail("invalid JSON at byte " + std::to_string(e.byte));
    }
    if (!doc.is_object())
        return m.fail("expected a JSON object");
    SX_ASSIGN(std::string format, m.str(doc, "format", ""));
    if (format != kArtifactFormat)
        return m.err("format", "is '" + format + "', expected '" + kArtifactFormat + "'");
    SX_ASSIGN(int64_t version, m.i64(doc, "version", ""));
    if (version < kArtifactOldestVersion || version > kArtifactVersion)
        return m.err("version", "is " + std::to_string(version) + ", this reader knows " +
                                    std::to_string(kArtifactOldestVersion) + " to " + std::to_string(kArtifactVersion));

    SX_ASSIGN(const json* files, m.get(doc, "files", ""));
    SX_TRY(artifact::checkFile(m, *files, "tasks.bin", tasksBin, tasksPath));
    SX_TRY(artifact::checkFile(m, *files, "weights.bin", weightsBin, weightsPath));

    Program p;
    std::vector<std::string> kernels;
    SX_TRY(artifact::parseProgramHead(m, doc, p, kernels));
    if (weightsBin.size() != p.memory.weightBytes)
        return makeError(ErrorKind::Parse, weightsPath + ": " + std::to_string(weightsBin.size()) +
                                               " bytes, the manifest's weights region is " +
                                               std::to_string(p.memory.weightBytes));
    SX_TRY(artifact::parseProgramTables(m, doc, p));
    SX_TRY(artifact::parseSramPlan(m, doc, version, p));
    SX_TRY(artifact::checkTasksBin(tasksBin, p, kernels, tasksPath));
    SX_TRY(attachGraph(m, doc, weightsBin, p));
    Status events_ = checkEvents(p);
    if (!events_.ok())
        return m.fail("events are unsound: " + events_.error().message);
    Status hazards = checkHazards(p);
    if (!hazards.ok())
        return m.fail("memory plan is unsafe: " + hazards.error().message);
    Status sram = checkSramPlan(p);
    if (!sram.ok())
        return m.fail("SRAM plan is unsafe: " + sram.error().message);
    return p;
}

} // namespace sextant::backend
