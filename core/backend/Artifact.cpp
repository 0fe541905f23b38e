#include "ArtifactInternal.h"

#include "EventAllocator.h"
#include "Grouping.h"
#include "MathUtil.h"
#include "MemoryPlanner.h"
#include "SramPlanner.h"
#include "core/ir/FileRead.h"
#include "core/ir/FileWrite.h"
#include "core/ir/Parser.h"
#include "core/ir/Printer.h"

#include <cstring>
#include <filesystem>
#include <variant>
#include <fstream>
#include <map>
#include <tuple>

#include <unistd.h>

namespace sextant::backend {

namespace fs = std::filesystem;
using artifact::json;
using artifact::Manifest;

namespace {

/// An output stream buffer that hashes what passes through it to `out` (the manifest, hashed as
/// it is streamed instead of read back: at 160,000 Tasks it is hundreds of megabytes).
class HashingBuf : public std::streambuf {
public:
    explicit HashingBuf(std::streambuf* out) : m_out(out) {}
    const artifact::Fnv1a64& hash() const { return m_hash; }

protected:
    int_type overflow(int_type c) override {
        if (traits_type::eq_int_type(c, traits_type::eof()))
            return traits_type::not_eof(c);
        const char ch = traits_type::to_char_type(c);
        m_hash.add(&ch, 1);
        return m_out->sputc(ch);
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        m_hash.add(s, static_cast<size_t>(n));
        return m_out->sputn(s, n);
    }
    int sync() override { return m_out->pubsync(); }

private:
    std::streambuf* m_out;
    artifact::Fnv1a64 m_hash;
};

/// Streams the manifest to `file` and returns its FNV-1a 64 hash.
std::string writeManifestFile(PendingFile& file, const json& head, const artifact::StreamedLists& lists) {
    HashingBuf buf(file.stream().rdbuf());
    std::ostream out(&buf);
    artifact::writeManifest(out, head, lists);
    out.flush();
    if (!out)
        file.stream().setstate(std::ios::badbit); // finish() reports it
    return buf.hash().hex();
}

/// Reads a whole regular file of at most `limit` bytes (a 20,000-node program's manifest is tens of
/// MiB; the limits only keep a wrong file from being read into memory whole).
Expected<std::vector<uint8_t>> readBytes(const fs::path& path, uint64_t limit = uint64_t{1} << 30) {
    std::error_code ec;
    if (fs::is_directory(path, ec))
        return makeError(ErrorKind::Io, path.string() + ": is a folder, not a file");
    if (const std::string kind = specialFileKind(path.string()); !kind.empty())
        return makeError(ErrorKind::Io, path.string() + ": is " + kind + ", not a file");
    if (!fs::is_regular_file(path, ec))
        return makeError(ErrorKind::Io, path.string() + ": missing");
    const uintmax_t size = fs::file_size(path, ec);
    if (!ec && size > limit)
        return makeError(ErrorKind::Io, path.string() + ": " + std::to_string(size) + " bytes, more than an artifact's " +
                                            std::to_string(limit >> 30) + " GiB limit for this file (a wrong file?)");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorKind::Io, path.string() + ": cannot open");
    // Larger than the machine's memory: refused before the allocation (the allocator would end
    // the process, not throw).
    const uint64_t memory = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    if (!ec && memory > 0 && size > memory)
        return makeError(ErrorKind::Io, path.string() + ": " + std::to_string(size) + " bytes, more than this machine's " +
                                            std::to_string(memory >> 20) + " MiB of memory");
    std::vector<uint8_t> bytes;
    if (!ec)
        bytes.reserve(static_cast<size_t>(size));
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return bytes;
}

/// A binary file of the artifact, read only when its size on disk is the size the manifest gives
/// it: a file grown or swapped for another (a sparse file of many GiB) is named, not read into
/// memory. The manifest's own fields are checked by artifact::checkFile after the read.
Expected<std::vector<uint8_t>> readDeclared(const json& files, const std::string& name, const std::string& path,
                                            uint64_t limit) {
    std::error_code ec;
    const auto entry = files.is_object() ? files.find(name) : files.end();
    if (fs::is_regular_file(path, ec) && entry != files.end() && entry->is_object()) {
        const auto declared = entry->find("bytes");
        const uintmax_t size = fs::file_size(path, ec);
        if (!ec && declared != entry->end() && declared->is_number_unsigned() && declared->get<uint64_t>() != size)
            return makeError(ErrorKind::Parse, path + ": size " + std::to_string(size) + " bytes, manifest says " +
                                                   std::to_string(declared->get<uint64_t>()) + " (truncated or wrong file)");
    }
    return readBytes(path, limit);
}

/// Checks manifest.json's bytes against the hash file beside it, one line "<16 hex digits>
/// manifest.json" (two spaces). Returns false when there is none (versions 1 and 2 have none:
/// the caller decides once it knows the version).
Expected<bool> checkManifestHash(const fs::path& path, const std::vector<uint8_t>& manifestBytes) {
    std::error_code ec;
    if (!fs::exists(path, ec))
        return false;
    const uintmax_t size = fs::is_regular_file(path, ec) ? fs::file_size(path, ec) : 0;
    if (ec || size == 0 || size > 256)
        return makeError(ErrorKind::Parse, path.string() + ": not a hash file (one line: the 16 hex digits of "
                                                           "manifest.json's FNV-1a 64, two spaces, manifest.json)");
    SX_ASSIGN(std::vector<uint8_t> bytes, readBytes(path));
    std::string line(bytes.begin(), bytes.end());
    if (!line.empty() && line.back() == '\n')
        line.pop_back();
    const std::string expected = line.substr(0, 16);
    if (line.size() != 16 + 15 || line.compare(16, std::string::npos, "  manifest.json") != 0 ||
        expected.find_first_not_of("0123456789abcdef") != std::string::npos)
        return makeError(ErrorKind::Parse, path.string() + ": expected '<16 lower-case hex digits>  manifest.json'");
    artifact::Fnv1a64 h;
    h.add(manifestBytes.data(), manifestBytes.size());
    if (h.hex() != expected)
        return makeError(ErrorKind::Parse, (path.parent_path() / "manifest.json").string() + ": content hash " +
                                               h.hex() + " does not match " + expected + " in " +
                                               path.filename().string() + " (corrupt file)");
    return true;
}

/// `inputs` and `outputs` name the graph's inputs and outputs, all of them, in order.
Status checkGraphIo(const Manifest& m, const ir::Graph& g, const Program& p) {
    for (const auto& [key, list, values] :
         {std::tuple<const char*, const std::vector<int>*, const std::vector<ir::Value*>*>{"inputs", &p.inputBuffers,
                                                                                          &g.inputs()},
          {"outputs", &p.outputBuffers, &g.outputs()}}) {
        if (list->size() != values->size())
            return m.err(key, "lists " + std::to_string(list->size()) + " buffers, but the graph has " +
                                  std::to_string(values->size()) + " " + key);
        for (size_t i = 0; i < list->size(); ++i) {
            const Buffer& b = p.buffers[static_cast<size_t>((*list)[i])];
            if (b.value != (*values)[i]->name())
                return m.err(std::string(key) + "[" + std::to_string(i) + "]",
                             "is buffer " + std::to_string(b.id) + " '" + b.value + "', but graph " + key + "[" +
                                 std::to_string(i) + "] is '" + (*values)[i]->name() + "'");
        }
    }
    return {};
}

/// A constant inside a subgraph (an If branch, a loop body) that the printed graph shows as a
/// digest: a host Task's weight, stored in host_weights.bin (version 5), outside the NPU's DRAM.
struct HostWeight {
    std::string value;
    const ir::Tensor* tensor = nullptr;
    uint64_t offset = 0;
};

void collectHostWeights(const ir::Graph& g, std::vector<HostWeight>& out, std::map<std::string, const ir::Tensor*>& seen,
                        int depth, std::string& clash) {
    if (depth > 0)
        for (const ir::Value* c : g.constants()) {
            const ir::Tensor* t = c->constant();
            if (!t || t->numel() <= ir::kInlineConstantLimit)
                continue; // printed inline
            auto [it, added] = seen.emplace(c->name(), t);
            if (added)
                out.push_back(HostWeight{c->name(), t, 0});
            else if (it->second != t && it->second->digest() != t->digest() && clash.empty())
                clash = c->name();
        }
    for (const ir::Node* n : g.nodes())
        for (const auto& [name, attr] : n->attrs())
            if (const auto* sub = std::get_if<std::shared_ptr<const ir::Graph>>(&attr); sub && *sub && depth < 64)
                collectHostWeights(**sub, out, seen, depth + 1, clash);
}

/// The subgraphs' digest-printed constants of `g`, each at a 64-byte aligned offset of
/// host_weights.bin, in the order the graph names them; an error when two different tensors
/// share a name (the printed graph could not tell them apart).
Expected<std::vector<HostWeight>> hostWeights(const ir::Graph& g) {
    std::vector<HostWeight> out;
    std::map<std::string, const ir::Tensor*> seen;
    for (const ir::Value* c : g.constants())
        if (c->constant())
            seen.emplace(c->name(), c->constant());
    std::string clash;
    collectHostWeights(g, out, seen, 0, clash);
    if (!clash.empty())
        return makeError(ErrorKind::Unsupported, "two different constants are named '" + clash +
                                                     "' (in the graph and a subgraph): the artifact names weights by value");
    uint64_t at = 0;
    for (HostWeight& w : out) {
        w.offset = at;
        at += alignUp(w.tensor->byteSize(), 64);
    }
    return out;
}

std::vector<uint8_t> encodeHostWeights(const std::vector<HostWeight>& weights) {
    uint64_t total = 0;
    for (const HostWeight& w : weights)
        total = std::max<uint64_t>(total, w.offset + w.tensor->byteSize());
    std::vector<uint8_t> bin(alignUp(total, 64), 0);
    for (const HostWeight& w : weights)
        if (w.tensor->byteSize() > 0)
            std::memcpy(bin.data() + w.offset, w.tensor->bytes(), w.tensor->byteSize());
    return bin;
}

/// host_weights (version 5): the subgraphs' weights, each inside host_weights.bin, added to
/// `weights` by value name (a name the NPU's weights already use is an error).
Status readHostWeights(const Manifest& m, const json& doc, const std::vector<uint8_t>& bin,
                       std::map<std::string, ir::Tensor>& weights) {
    auto list = doc.find("host_weights");
    if (list == doc.end())
        return {};
    if (!list->is_array())
        return m.err("host_weights", "must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
        const json& j = (*list)[i];
        const std::string path = "host_weights[" + std::to_string(i) + "]";
        SX_ASSIGN(std::string value, m.str(j, "value", path));
        SX_ASSIGN(std::string dtype, m.str(j, "dtype", path));
        std::optional<ir::DType> dt = ir::parseDType(dtype);
        if (!dt)
            return m.err(path + ".dtype", "has unknown dtype '" + dtype + "'");
        SX_ASSIGN(std::vector<int64_t> shape, m.dims(j, "shape", path));
        SX_ASSIGN(uint64_t offset, m.u64(j, "offset", path));
        const ir::TensorType type = ir::TensorType::of(*dt, shape);
        const uint64_t bytes = artifact::tensorBytes(type);
        if (offset > bin.size() || bytes > bin.size() - offset)
            return m.err(path, "lies outside host_weights.bin (" + std::to_string(bin.size()) + " bytes)");
        if (weights.count(value))
            return m.err(path + ".value", "names '" + value + "' a second time");
        weights[value] = ir::Tensor::copyOf(*dt, shape,
                                            std::span<const std::byte>(reinterpret_cast<const std::byte*>(bin.data()) + offset, bytes));
    }
    return {};
}

/// input_guards (version 5): the inputs the program was compiled for, each an integer or bool
/// graph input of at most 16 elements with values that fit its type.
Status readInputGuards(const Manifest& m, const json& doc, Program& p) {
    auto list = doc.find("input_guards");
    if (list == doc.end())
        return {};
    if (!list->is_array())
        return m.err("input_guards", "must be an array");
    const auto& inputs = p.graph->inputs();
    for (size_t i = 0; i < list->size(); ++i) {
        const json& j = (*list)[i];
        const std::string path = "input_guards[" + std::to_string(i) + "]";
        InputGuard g;
        SX_ASSIGN(g.input, m.intIn(j, "input", path, 0, static_cast<int64_t>(inputs.size()) - 1));
        SX_ASSIGN(std::string dtype, m.str(j, "dtype", path));
        std::optional<ir::DType> dt = ir::parseDType(dtype);
        const ir::TensorType& want = inputs[static_cast<size_t>(g.input)]->type();
        if (!dt || ir::isFloat(*dt) || *dt != want.dtype)
            return m.err(path + ".dtype", "is '" + dtype + "', input '" + inputs[static_cast<size_t>(g.input)]->name() +
                                              "' is " + want.str());
        SX_ASSIGN(std::vector<int64_t> shape, m.dims(j, "shape", path));
        SX_ASSIGN(g.decides, m.str(j, "decides", path));
        auto values = j.find("values");
        if (values == j.end() || !values->is_array() || values->size() > 16)
            return m.err(path + ".values", "must be an array of at most 16 integers");
        std::vector<int64_t> v;
        for (const json& x : *values) {
            if (!x.is_number_integer())
                return m.err(path + ".values", "must hold integers");
            v.push_back(x.get<int64_t>());
        }
        int64_t count = 1;
        for (int64_t d : shape)
            count = d > 16 ? 17 : count * d;
        if (count != static_cast<int64_t>(v.size()) || !want.isStatic() || want.dims() != shape)
            return m.err(path, "holds " + std::to_string(v.size()) + " values of shape " + ir::TensorType::of(*dt, shape).str() +
                                   " for input " + want.str());
        g.value = ir::Tensor::fromVector<int64_t>(shape, v).castTo(*dt);
        p.inputGuards.push_back(std::move(g));
    }
    return {};
}

/// Gives `p` its graph, from the manifest's textual IR with the weights taken from weights.bin at
/// their planned offsets, and checks that every name the Tasks, buffers and node_tasks use is in it.
Status attachGraph(const Manifest& m, const json& doc, const std::vector<uint8_t>& weightsBin,
                   const std::vector<uint8_t>& hostWeightsBin, Program& p) {
    const MemoryStats& ms = p.memory;
    std::map<std::string, ir::Tensor> weights;
    for (const Buffer& b : p.buffers) {
        if (b.kind != BufferKind::Weight || b.fill)
            continue; // a filled weight's bytes are the loader's, not weights.bin's
        uint64_t at = b.offset - ms.weightsBase;
        uint64_t bytes = artifact::tensorBytes(b.type);
        weights[b.value] = ir::Tensor::copyOf(
            b.type.dtype, b.type.dims(),
            std::span<const std::byte>(reinterpret_cast<const std::byte*>(weightsBin.data()) + at, bytes));
    }
    SX_TRY(readHostWeights(m, doc, hostWeightsBin, weights));
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
        if (b.fill) {
            // The graph says what the loader writes: the value's ConstantOfShape, which the
            // backend would lower to no Task for this very fill.
            const std::optional<double> fill = v->producer() ? loadTimeFill(*v->producer()) : std::nullopt;
            if (!fill || *fill != *b.fill)
                return m.err("buffers[" + std::to_string(b.id) + "].fill",
                             "fills '" + b.value + "', which the graph does not compute as a ConstantOfShape of " +
                                 json(*b.fill).dump() + " read only as weights");
        } else if (b.kind == BufferKind::Weight && !v->isConstant()) {
            return m.err("buffers[" + std::to_string(b.id) + "].value", "names weight '" + b.value + "' that is not a constant");
        }
    }
    SX_TRY(checkGraphIo(m, *g, p));
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

namespace {
Status writeArtifactFiles(const Program& p, const std::string& dir);
} // namespace

Status writeArtifact(const Program& p, const std::string& dir) {
    if (!p.graph)
        return makeError(ErrorKind::Invalid, "writeArtifact: program has no graph");
    // Refuse to write what the reader would reject.
    for (const Buffer& b : p.buffers)
        if (b.kind == BufferKind::Weight && b.fill) {
            const ir::Value* v = p.graph->findValue(b.value);
            const std::optional<double> fill = v && v->producer() ? loadTimeFill(*v->producer()) : std::nullopt;
            if (!fill || *fill != *b.fill)
                return makeError(ErrorKind::Invalid, "weight buffer '" + b.value + "' is filled, but not by a ConstantOfShape of the graph");
            if (b.offset < p.memory.weightsBase + p.memory.weightBytes || b.offset + b.size > p.memory.ioBase)
                return makeError(ErrorKind::Invalid, "filled weight buffer '" + b.value + "' lies outside its region");
        } else if (b.kind == BufferKind::Weight) {
            const ir::Value* v = p.graph->findValue(b.value);
            if (!v || !v->constant())
                return makeError(ErrorKind::Invalid, "weight buffer '" + b.value + "' is not a constant of the graph");
            if (b.offset < p.memory.weightsBase || b.offset + v->constant()->byteSize() > p.memory.weightsBase + p.memory.weightBytes)
                return makeError(ErrorKind::Invalid, "weight buffer '" + b.value + "' lies outside the weights region");
        }
    std::error_code ec;
    const bool existed = fs::exists(dir, ec);
    fs::create_directories(dir, ec);
    if (ec)
        return makeError(ErrorKind::Io, dir + ": cannot create directory (" + ec.message() + ")");
    Status written = writeArtifactFiles(p, dir);
    if (!written.ok() && !existed)
        fs::remove(dir, ec); // the folder this call made, when it is still empty
    return written;
}

namespace {

/// writeArtifact's files. Each is written to a temporary beside its name, and the temporaries
/// are renamed over the names only once every one was written: a full disk or a failed write
/// leaves an earlier artifact in `dir` as it was (the hash file, renamed last, is what tells a
/// reader the set is whole).
Status writeArtifactFiles(const Program& p, const std::string& dir) {

    std::vector<uint8_t> tasksBin = encodeTasks(p);
    std::vector<uint8_t> weightsBin = encodeWeights(p);
    SX_ASSIGN(std::vector<HostWeight> hostList, hostWeights(*p.graph));
    const std::vector<uint8_t> hostBin = encodeHostWeights(hostList);

    artifact::StreamedLists lists;
    json head = artifact::manifestHead(p, tasksBin, weightsBin, lists);
    if (!p.inputGuards.empty()) {
        json guards = json::array();
        for (const InputGuard& g : p.inputGuards) {
            std::vector<int64_t> values;
            for (int64_t k = 0; k < g.value.numel(); ++k)
                values.push_back(static_cast<int64_t>(g.value.at(k)));
            guards.push_back(json{{"input", g.input},
                                  {"dtype", std::string(ir::dtypeName(g.value.dtype()))},
                                  {"shape", g.value.shape()},
                                  {"values", values},
                                  {"decides", g.decides}});
        }
        head["input_guards"] = std::move(guards);
    }
    if (!hostList.empty()) {
        json list = json::array();
        for (const HostWeight& w : hostList)
            list.push_back(json{{"value", w.value},
                                {"dtype", std::string(ir::dtypeName(w.tensor->dtype()))},
                                {"shape", w.tensor->shape()},
                                {"offset", w.offset}});
        head["host_weights"] = std::move(list);
        head["files"]["host_weights.bin"] = json{{"bytes", hostBin.size()}, {"fnv1a64", fnv1a64Hex(hostBin)}};
    }

    const fs::path d(dir);
    auto pending = [&](const std::string& name) { return PendingFile::open((d / name).string(), "artifact file"); };
    std::vector<PendingFile> files;
    SX_ASSIGN(PendingFile tasksFile, pending("tasks.bin"));
    tasksFile.write(tasksBin.data(), tasksBin.size());
    files.push_back(std::move(tasksFile));
    SX_ASSIGN(PendingFile weightsFile, pending("weights.bin"));
    weightsFile.write(weightsBin.data(), weightsBin.size());
    files.push_back(std::move(weightsFile));
    if (!hostList.empty()) {
        SX_ASSIGN(PendingFile hostFile, pending("host_weights.bin"));
        hostFile.write(hostBin.data(), hostBin.size());
        files.push_back(std::move(hostFile));
    }
    SX_ASSIGN(PendingFile manifestFile, pending("manifest.json"));
    const std::string hash = writeManifestFile(manifestFile, head, lists);
    files.push_back(std::move(manifestFile));
    SX_ASSIGN(PendingFile hashFile, pending(kManifestHashFile));
    hashFile.stream() << hash << "  manifest.json\n"; // as sha256sum and friends print it
    files.push_back(std::move(hashFile));
    for (PendingFile& f : files)
        SX_TRY(f.finish());
    if (hostList.empty()) {
        std::error_code gone;
        fs::remove(d / "host_weights.bin", gone); // an earlier artifact's in the same directory
    }
    for (PendingFile& f : files)
        SX_TRY(f.commit());
    return {};
}

} // namespace

Expected<Program> readArtifact(const std::string& dir) {
    fs::path d(dir);
    std::error_code ec;
    if (!fs::is_directory(d, ec))
        return makeError(ErrorKind::Io, dir + ": not an artifact directory");
    const std::string manifestPath = (d / "manifest.json").string();
    const std::string tasksPath = (d / "tasks.bin").string();
    const std::string weightsPath = (d / "weights.bin").string();
    SX_ASSIGN(std::vector<uint8_t> manifestBytes, readBytes(manifestPath));

    SX_ASSIGN(const bool hashed, checkManifestHash(d / kManifestHashFile, manifestBytes));

    Manifest m(manifestPath);
    json doc;
    try {
        doc = json::parse(manifestBytes.begin(), manifestBytes.end());
    } catch (const json::parse_error& e) {
        return m.fail("invalid JSON at byte " + std::to_string(e.byte));
    } catch (const json::out_of_range&) { // the one other error parse raises: 5e400
        return m.fail("invalid JSON: a number beyond the range of a double");
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

    if (version >= kArtifactStandardHashVersion && !hashed)
        return makeError(ErrorKind::Io, (d / kManifestHashFile).string() + ": missing (from version " +
                                            std::to_string(kArtifactStandardHashVersion) +
                                            " on, the manifest's hash is in it)");

    SX_ASSIGN(const json* files, m.get(doc, "files", ""));
    SX_ASSIGN(std::vector<uint8_t> tasksBin, readDeclared(*files, "tasks.bin", tasksPath, uint64_t{1} << 30));
    SX_TRY(artifact::checkFile(m, *files, "tasks.bin", tasksBin, tasksPath, version));
    SX_ASSIGN(std::vector<uint8_t> weightsBin, readDeclared(*files, "weights.bin", weightsPath, uint64_t{64} << 30));
    SX_TRY(artifact::checkFile(m, *files, "weights.bin", weightsBin, weightsPath, version));
    std::vector<uint8_t> hostWeightsBin;
    if (doc.contains("host_weights")) { // version 5: the subgraphs' weights
        const std::string hostPath = (d / "host_weights.bin").string();
        SX_ASSIGN(hostWeightsBin, readDeclared(*files, "host_weights.bin", hostPath, uint64_t{64} << 30));
        SX_TRY(artifact::checkFile(m, *files, "host_weights.bin", hostWeightsBin, hostPath, version));
    }

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
    SX_TRY(attachGraph(m, doc, weightsBin, hostWeightsBin, p));
    SX_TRY(readInputGuards(m, doc, p));
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
