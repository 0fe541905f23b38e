// libFuzzer target for the artifact reader: bytes → manifest.json of an artifact folder whose
// tasks.bin and weights.bin are those of a fixed small compiled sample (tests/data/artifact-fuzz),
// with the manifest's hash file written to match → readArtifact. A Program the reader accepts is
// written again and must read back. A finding is a crash, a sanitizer report, a leak, or an error
// with an empty message.
//
// Why the manifest text and not an archive of the three files: every field the reader range-checks
// is in the manifest, and JSON mutates well with a dictionary of its keys; mutating an archive
// would spend almost every input on a broken container or a hash mismatch (both checked before
// any field), and the binary files' own checks (size, hash, magic, descriptors) are few and
// covered by tests/backend/ArtifactTest.cpp.

#include "FuzzScratch.h"

#include "core/backend/Artifact.h"

#include <filesystem>
#include <string>
#include <vector>

namespace {

constexpr const char* kTarget = "artifact_fuzzer";
namespace fs = std::filesystem;

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    using sextant::fuzz::Scratch;
    Scratch::init(kTarget);
    const fs::path sample = fs::path(SEXTANT_FUZZ_ARTIFACT_DIR);
    std::error_code ec;
    for (const char* f : {"tasks.bin", "weights.bin"})
        if (!fs::copy_file(sample / f, Scratch::folder() / f, ec))
            sextant::fuzz::finding(kTarget, "cannot copy the sample artifact's binary files");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sextant;
    using fuzz::Scratch;
    fuzz::Scratch::write("manifest.json", data, size);
    const std::string hash = backend::fnv1a64Hex(std::vector<uint8_t>(data, data + size)) + "  manifest.json\n";
    Scratch::write(backend::kManifestHashFile, hash.data(), hash.size());
    Expected<backend::Program> p = backend::readArtifact(Scratch::folder().string());
    if (!p.ok()) {
        Scratch::checkError(p.error());
        return 0;
    }
    // What the reader accepts, the writer writes and the reader takes back.
    const std::string again = (Scratch::folder() / "again").string();
    if (Status w = backend::writeArtifact(*p, again); !w.ok())
        fuzz::finding(kTarget, ("an accepted artifact does not write: " + w.error().message).c_str());
    if (Expected<backend::Program> back = backend::readArtifact(again); !back.ok())
        fuzz::finding(kTarget, ("an accepted artifact, written again, does not read: " + back.error().message).c_str());
    return 0;
}
