#pragma once

// What the libFuzzer targets share: each input is written to a file in a private temp folder (the
// readers under test read files, and files next to them; the folder holds nothing else an input
// could point at), and a finding aborts with one line naming the target.

#include "core/ir/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace sextant::fuzz {

/// Prints "<target>: <what>" and aborts: libFuzzer records the input as a crash.
[[noreturn]] inline void finding(const char* target, const char* what) {
    std::fprintf(stderr, "%s: %s\n", target, what);
    std::abort();
}

/// The private folder the inputs are written into. Call init() once from LLVMFuzzerInitialize;
/// the folder is removed at exit.
class Scratch {
public:
    static void init(const char* target) {
        s_target = target;
        std::string pattern =
            (std::filesystem::temp_directory_path() / (std::string(target) + "-XXXXXX")).string();
        if (!::mkdtemp(pattern.data()))
            finding(target, "cannot create a temp folder");
        dir() = pattern;
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(dir(), ec);
        });
    }

    /// Writes `data` to the file `name` in the folder and returns its path.
    static std::string write(const std::string& name, const void* data, size_t size) {
        const std::string path = (dir() / name).string();
        FILE* f = std::fopen(path.c_str(), "wb");
        if (!f)
            finding(s_target, "cannot write an input file");
        const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
        std::fclose(f);
        if (!ok)
            finding(s_target, "cannot write an input file");
        return path;
    }

    static const std::filesystem::path& folder() { return dir(); }

    /// Every error must say what is wrong: an empty message is a finding.
    static void checkError(const Error& e) {
        if (e.message.empty())
            finding(s_target, "an error with an empty message");
    }

private:
    static std::filesystem::path& dir() {
        static std::filesystem::path d;
        return d;
    }
    static inline const char* s_target = "fuzzer";
};

/// The model file the ONNX fuzzers write each input to.
struct ModelFile {
    static void init(const char* target) { Scratch::init(target); }
    static std::string write(const uint8_t* data, size_t size) { return Scratch::write("model.onnx", data, size); }
};

} // namespace sextant::fuzz
