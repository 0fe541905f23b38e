#include "FileWrite.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <unistd.h>

namespace sextant {

Status writeFileAtomically(const std::string& path, std::string_view content, const std::string& what) {
    namespace fs = std::filesystem;
    auto fail = [&](const std::string& why) {
        return makeError(ErrorKind::Io, what + " '" + path + "': " + why);
    };
    if (path.empty())
        return fail("no file name");
    const fs::path target(path);
    std::error_code ec;
    if (fs::is_directory(target, ec))
        return fail("is a folder");
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        return fail("folder '" + dir.string() + "' does not exist");
    // Unique per process and call: two exports to one folder never share a temporary, also when
    // the GUI's pool threads write at once.
    static std::atomic<uint64_t> counter{0};
    const fs::path tmp = dir / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                                std::to_string(++counter));
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out)
            return fail(std::string("cannot write in '") + dir.string() + "' (" + std::strerror(errno) + ")");
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        out.flush();
        if (!out) {
            out.close();
            fs::remove(tmp, ec);
            return fail("write failed (disk full?)");
        }
    }
    fs::rename(tmp, target, ec);
    if (ec) {
        fs::remove(tmp, ec);
        return fail("cannot replace it (" + ec.message() + ")");
    }
    return {};
}

} // namespace sextant
