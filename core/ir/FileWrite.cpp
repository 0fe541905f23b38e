#include "FileWrite.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <utility>

#include <unistd.h>

namespace sextant {

namespace fs = std::filesystem;

fs::path folderOf(const std::string& path) {
    const fs::path p(path);
    return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

std::string whyNoNewFile(const std::string& path) {
    const fs::path dir = folderOf(path);
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        return "folder '" + dir.string() + "' does not exist";
    if (::access(dir.c_str(), W_OK) != 0)
        return "folder '" + dir.string() + "' cannot be written (" + std::strerror(errno) + ")";
    return {};
}

Error PendingFile::fail(const std::string& why) const {
    return makeError(ErrorKind::Io, m_what + " '" + m_target.string() + "': " + why);
}

Expected<PendingFile> PendingFile::open(const std::string& target, const std::string& what) {
    PendingFile f;
    f.m_target = target;
    f.m_what = what;
    if (target.empty())
        return f.fail("no file name");
    std::error_code ec;
    const fs::file_status status = fs::status(f.m_target, ec); // through symbolic links
    if (fs::is_directory(status))
        return f.fail("is a folder");
    if (fs::exists(status) && !fs::is_regular_file(status)) {
        // A stream (/dev/stdout, a named pipe, a terminal): nothing there to keep, nothing to
        // rename over; written straight through.
        errno = 0;
        f.m_out = std::make_unique<std::ofstream>(f.m_target, std::ios::binary | std::ios::out);
        if (!*f.m_out) {
            const int err = errno;
            f.m_out.reset();
            return f.fail(std::string("cannot write to it (") + (err ? std::strerror(err) : "cannot open") + ")");
        }
        f.m_direct = true;
        return f;
    }
    // A symbolic link to a file: the file it names is replaced, and the link stays.
    if (fs::is_symlink(fs::symlink_status(f.m_target, ec))) {
        const fs::path real = fs::weakly_canonical(f.m_target, ec);
        if (!ec)
            f.m_target = real;
    }
    const fs::path dir = folderOf(f.m_target.string());
    if (!fs::is_directory(dir, ec))
        return f.fail("folder '" + dir.string() + "' does not exist");
    // Unique per process and call: two writes to one folder never share a temporary, also when
    // the GUI's pool threads write at once.
    static std::atomic<uint64_t> counter{0};
    f.m_tmp = dir / ("." + f.m_target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                     std::to_string(++counter));
    errno = 0;
    f.m_out = std::make_unique<std::ofstream>(f.m_tmp, std::ios::binary | std::ios::trunc);
    if (!*f.m_out) {
        const int err = errno;
        f.m_out.reset();
        f.m_tmp.clear();
        return f.fail("cannot write in '" + dir.string() + "' (" + (err ? std::strerror(err) : "cannot create a file") + ")");
    }
    return f;
}

PendingFile::PendingFile(PendingFile&& o) noexcept
    : m_target(std::move(o.m_target)), m_tmp(std::exchange(o.m_tmp, {})), m_what(std::move(o.m_what)),
      m_out(std::move(o.m_out)), m_finished(o.m_finished), m_direct(o.m_direct), m_errno(o.m_errno) {}

PendingFile& PendingFile::operator=(PendingFile&& o) noexcept {
    if (this != &o) {
        discard();
        m_target = std::move(o.m_target);
        m_tmp = std::exchange(o.m_tmp, {});
        m_what = std::move(o.m_what);
        m_out = std::move(o.m_out);
        m_finished = o.m_finished;
        m_direct = o.m_direct;
        m_errno = o.m_errno;
    }
    return *this;
}

PendingFile::~PendingFile() { discard(); }

void PendingFile::discard() {
    m_out.reset();
    if (!m_tmp.empty()) {
        std::error_code ec;
        fs::remove(m_tmp, ec);
        m_tmp.clear();
    }
}

void PendingFile::write(const void* data, size_t size) {
    const bool good = m_out->good();
    errno = 0;
    m_out->write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (good && !m_out->good() && m_errno == 0)
        m_errno = errno;
}

Status PendingFile::finish() {
    if (!m_out)
        return fail("nothing to finish");
    errno = 0;
    m_out->flush();
    m_out->close();
    const int err = m_errno ? m_errno : errno;
    if (!*m_out) {
        discard();
        return fail(std::string("write failed (") + (err ? std::strerror(err) : "disk full?") + ")");
    }
    m_finished = true;
    return {};
}

Status PendingFile::commit() {
    if (!m_finished)
        SX_TRY(finish());
    if (m_direct)
        return {};
    std::error_code ec;
    fs::rename(m_tmp, m_target, ec);
    if (ec) {
        discard();
        return fail("cannot replace it (" + ec.message() + ")");
    }
    m_tmp.clear();
    return {};
}

Status writeFileAtomically(const std::string& path, std::string_view content, const std::string& what) {
    SX_ASSIGN(PendingFile file, PendingFile::open(path, what));
    file.write(content.data(), content.size());
    return file.commit();
}

} // namespace sextant
