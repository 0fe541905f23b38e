#include "FileRead.h"

#include <filesystem>
#include <fstream>

namespace sextant {

std::string specialFileKind(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    switch (fs::status(path, ec).type()) { // stat: it does not wait on a named pipe
    case fs::file_type::fifo: return "a named pipe";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::socket: return "a socket";
    default: return {};
    }
}

Expected<std::string> readFileLimited(const std::string& path, const std::string& what, uint64_t limit) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        return makeError(ErrorKind::Io, path + ": is a folder, not a " + what, path);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorKind::Io, path + ": cannot open " + what, path);
    std::string text;
    char chunk[1 << 16];
    while (in) {
        in.read(chunk, sizeof chunk);
        const auto got = static_cast<uint64_t>(in.gcount());
        if (got > limit - text.size())
            return makeError(ErrorKind::Io,
                             path + ": " + what + " is larger than " + std::to_string(limit >> 20) +
                                 " MiB (an endless or wrong file?)",
                             path);
        text.append(chunk, static_cast<size_t>(got));
    }
    if (in.bad())
        return makeError(ErrorKind::Io, path + ": read error in " + what, path);
    return text;
}

} // namespace sextant
