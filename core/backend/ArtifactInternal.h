#pragma once

// The parts of the artifact reader and writer (Artifact.h), internal to sextant_backend:
//   TaskDescriptors.cpp  tasks.bin: the binary descriptor codec and its check against the manifest
//   ArtifactManifest.cpp manifest.json: the document written, and its typed, path-naming reader
//   ArtifactSramPlan.cpp manifest.json's SRAM plan (format version 2): written, read, cross-checked
//   Artifact.cpp         the directory: which files, in which order, and the checks across them

#include "Artifact.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace sextant::backend::artifact {

using nlohmann::json;

// ---- hashes (TaskDescriptors.cpp)

/// FNV-1a 64 fed in pieces, so that the manifest is hashed as it is streamed to its file.
class Fnv1a64 {
public:
    static constexpr uint64_t kBasis = 14695981039346656037ull; ///< the standard offset basis
    static constexpr uint64_t kLegacyBasis = 1469598103934665603ull; ///< versions 1 and 2 (a digit short)
    static constexpr uint64_t kPrime = 1099511628211ull;

    explicit Fnv1a64(uint64_t basis = kBasis) : m_hash(basis) {}
    void add(const void* data, size_t size);
    /// The hash so far as 16 lower-case hex digits.
    std::string hex() const;

private:
    uint64_t m_hash;
};

// ---- tasks.bin (TaskDescriptors.cpp)

/// The kernel names of `p`'s Tasks, sorted and unique: a descriptor holds an index into it.
std::vector<std::string> kernelTable(const Program& p);
/// Checks tasks.bin against the Program rebuilt from the manifest: header, offsets, sizes, and
/// every descriptor's fields, buffer addresses and events. Errors name `file`.
Status checkTasksBin(const std::vector<uint8_t>& bin, const Program& p, const std::vector<std::string>& kernels,
                     const std::string& file);

// ---- manifest.json (ArtifactManifest.cpp)

/// Bytes a tensor of this type holds (0 when its size is unknown).
uint64_t tensorBytes(const ir::TensorType& t);

/// A top-level list of the manifest that grows with the program (buffers, Tasks, events, SRAM
/// buffers, transfers): its length and how to make element i, so that it is written one element
/// at a time instead of held as one document (at 160,000 Tasks that document took gigabytes).
struct StreamedList {
    size_t size = 0;
    std::function<json(size_t)> element;
};
using StreamedLists = std::map<std::string, StreamedList>;

/// The manifest of `p`, with the sizes and hashes of the binary files it goes with: the small
/// fields in the returned document, the big lists in `lists`.
json manifestHead(const Program& p, const std::vector<uint8_t>& tasksBin, const std::vector<uint8_t>& weightsBin,
                  StreamedLists& lists);
/// Writes the manifest to `out`: the same bytes as `dump(1)` of `head` with `lists` in place,
/// holding one element at a time.
void writeManifest(std::ostream& out, const json& head, const StreamedLists& lists);

/// Typed access to manifest fields; every error names the file and the field path.
class Manifest {
public:
    explicit Manifest(std::string file) : m_file(std::move(file)) {}

    Error err(const std::string& path, const std::string& what) const {
        return makeError(ErrorKind::Parse, m_file + ": field '" + path + "' " + what, path);
    }
    Error fail(const std::string& what) const { return makeError(ErrorKind::Parse, m_file + ": " + what); }

    Expected<const json*> get(const json& obj, const std::string& key, const std::string& path) const {
        if (!obj.is_object())
            return err(path, "is not an object");
        auto it = obj.find(key);
        if (it == obj.end())
            return err(join(path, key), "is missing");
        return &*it;
    }
    Expected<uint64_t> u64(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_number_unsigned())
            return err(join(path, key), "must be a non-negative integer");
        return v->get<uint64_t>();
    }
    /// An integer that fits int64. (JSON reads 18446744073709551615 as an unsigned integer, which
    /// as int64 would be -1: such a number is out of range, not -1.)
    Expected<int64_t> i64(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        return i64Of(*v, join(path, key));
    }
    /// An int in [lo, hi].
    Expected<int> intIn(const json& obj, const std::string& key, const std::string& path, int64_t lo, int64_t hi) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        return intOf(*v, join(path, key), lo, hi);
    }
    Expected<std::string> str(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_string())
            return err(join(path, key), "must be a string");
        return v->get<std::string>();
    }
    /// A finite number, integer or not.
    Expected<double> number(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_number() || !std::isfinite(v->get<double>()))
            return err(join(path, key), "must be a finite number");
        return v->get<double>();
    }
    Expected<bool> boolean(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_boolean())
            return err(join(path, key), "must be true or false");
        return v->get<bool>();
    }
    Expected<const json*> array(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_array())
            return err(join(path, key), "must be an array");
        return v;
    }
    /// An array of ints, each in [lo, hi].
    Expected<std::vector<int>> ints(const json& obj, const std::string& key, const std::string& path, int64_t lo,
                                    int64_t hi) const {
        SX_ASSIGN(const json* a, array(obj, key, path));
        std::vector<int> out;
        for (size_t i = 0; i < a->size(); ++i) {
            SX_ASSIGN(int x, intOf((*a)[i], join(path, key) + "[" + std::to_string(i) + "]", lo, hi));
            out.push_back(x);
        }
        return out;
    }
    Expected<std::vector<int64_t>> dims(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* a, array(obj, key, path));
        std::vector<int64_t> out;
        for (size_t i = 0; i < a->size(); ++i) {
            const json& v = (*a)[i];
            const std::string p = join(path, key) + "[" + std::to_string(i) + "]";
            if (!v.is_number_unsigned())
                return err(p, "must be a non-negative integer");
            if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
                return err(p, "is " + v.dump() + ", outside the range of a 64-bit signed integer");
            out.push_back(v.get<int64_t>());
        }
        return out;
    }
    Expected<std::vector<std::string>> strings(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* a, array(obj, key, path));
        std::vector<std::string> out;
        for (size_t i = 0; i < a->size(); ++i) {
            if (!(*a)[i].is_string())
                return err(join(path, key) + "[" + std::to_string(i) + "]", "must be a string");
            out.push_back((*a)[i].get<std::string>());
        }
        return out;
    }
    Expected<int64_t> i64Of(const json& v, const std::string& path) const {
        if (!v.is_number_integer())
            return err(path, "must be an integer");
        if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
            return err(path, "is " + v.dump() + ", outside the range of a 64-bit signed integer");
        return v.get<int64_t>();
    }
    Expected<int> intOf(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
        if (!v.is_number_integer())
            return err(path, "must be an integer");
        const bool huge = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
        if (huge || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
            return err(path, "is " + v.dump() + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return static_cast<int>(v.get<int64_t>());
    }
    static std::string join(const std::string& path, const std::string& key) {
        return path.empty() ? key : path + "." + key;
    }
    const std::string& file() const { return m_file; }

private:
    std::string m_file;
};


/// Checks one binary file against the manifest's "files" entry: its size, then its hash (the
/// legacy FNV variant before kArtifactStandardHashVersion).
Status checkFile(const Manifest& m, const json& files, const std::string& name, const std::vector<uint8_t>& bytes,
                 const std::string& binPath, int64_t version);

/// Rebuilds a Program's model, target, pipeline, estimate and memory regions (which must follow
/// one another inside the target's DRAM) from the manifest `doc`; `kernels` receives the kernel
/// table.
Status parseProgramHead(const Manifest& m, const json& doc, Program& p, std::vector<std::string>& kernels);
/// Then its buffers, inputs and outputs, Tasks and events, each field typed and every id and
/// reference in range.
Status parseProgramTables(const Manifest& m, const json& doc, Program& p);

// ---- the SRAM plan in manifest.json (ArtifactSramPlan.cpp)

/// Adds `p`'s SRAM plan to its manifest `doc`: memory.sram, memory.dram_traffic_bytes and
/// memory.compulsory_bytes, and the sram_buffers, transfers and on_chip lists.
void addSramPlan(json& doc, const Program& p, StreamedLists& lists);
/// Reads the SRAM plan of a manifest of format `version` into `p`, whose buffers and Tasks are
/// already read: every field typed, every id in range, each SRAM buffer aligned inside its core's
/// SRAM and used by Tasks of that core, residents where their buffers say, transfers between a
/// Task's own buffers and slots adding up to its dma_bytes, and the figures agreeing with the
/// Tasks. Version 1 has no plan: the lists stay empty and the figures are recomputed.
Status parseSramPlan(const Manifest& m, const json& doc, int64_t version, Program& p);

} // namespace sextant::backend::artifact
