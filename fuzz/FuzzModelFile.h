#pragma once

// What both libFuzzer targets share: each input is written to model.onnx in a private temp folder
// (the importer reads files, and external data next to them; the folder holds nothing else an
// input could point at), and a finding aborts with one line naming the target.

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

/// The model file every input is written to. Call init() once from LLVMFuzzerInitialize; the
/// folder is removed at exit.
class ModelFile {
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

    /// Writes `data` to the model file and returns its path.
    static std::string write(const uint8_t* data, size_t size) {
        const std::string path = (dir() / "model.onnx").string();
        FILE* f = std::fopen(path.c_str(), "wb");
        if (!f)
            finding(s_target, "cannot write the model file");
        const bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
        std::fclose(f);
        if (!ok)
            finding(s_target, "cannot write the model file");
        return path;
    }

private:
    static std::filesystem::path& dir() {
        static std::filesystem::path d;
        return d;
    }
    static inline const char* s_target = "fuzzer";
};

} // namespace sextant::fuzz
