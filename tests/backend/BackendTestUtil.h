#pragma once

// Helpers shared by the backend tests.

#include "core/backend/Artifact.h"
#include "core/backend/Program.h"
#include "core/ir/Tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace sextant::backend::test {

/// The buffer of `p` that holds `value`: a test failure (and the first buffer) when none does.
inline const Buffer& bufferOf(const Program& p, const std::string& value) {
    for (const Buffer& b : p.buffers)
        if (b.value == value)
            return b;
    ADD_FAILURE() << "no buffer for " << value;
    return p.buffers.front();
}

/// An f32 tensor of `shape` whose elements ramp from `start` in steps of 0.001, repeating every
/// 97: distinct enough that a value read from the wrong place shows.
inline ir::Tensor filled(std::vector<int64_t> shape, float start) {
    ir::Tensor t(ir::DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, start + 0.001 * static_cast<double>(i % 97));
    return t;
}

/// A file's bytes (empty when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/// Writes `bytes` as the whole of file `p`.
inline void spit(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
}

/// Writes `text` as the manifest of the artifact in `dir` with its hash file to match, so that
/// the reader's checks of the fields are what must catch an edit.
inline void spitManifest(const std::string& dir, const std::string& text) {
    spit(std::filesystem::path(dir) / "manifest.json", text);
    spit(std::filesystem::path(dir) / kManifestHashFile,
         fnv1a64Hex(std::vector<uint8_t>(text.begin(), text.end())) + "  manifest.json\n");
}

} // namespace sextant::backend::test
