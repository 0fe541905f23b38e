#pragma once

// Writing a file the user names (an export, a report, an artifact) so that nothing half-written
// is left behind: the content goes to a temporary file beside the target, which is renamed over
// it only once the whole was written. A failure leaves any earlier file of that name as it was.

#include "core/ir/Error.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

namespace sextant {

/// The folder a file at `path` is in ("." for a bare name).
std::filesystem::path folderOf(const std::string& path);

/// Why no new file can be made at `path`, or empty: "folder 'D' does not exist", or "folder 'D'
/// cannot be written (Read-only file system)". For writers that do not open the file themselves
/// (SQLite's own message for both is "unable to open database file").
std::string whyNoNewFile(const std::string& path);

/// A file being written: a temporary beside `target`, renamed over it by commit(). Until then
/// nothing of that name changes, and a PendingFile dropped uncommitted removes its temporary.
/// A symbolic link is followed (the file it names is replaced, the link stays); a target that
/// is not a regular file (/dev/stdout, a named pipe) is written straight through.
/// Errors (ErrorKind::Io) name `what` ("memory plan") and the target: a missing folder, a folder
/// that is not writable, a full disk (with the system's reason).
class PendingFile {
public:
    static Expected<PendingFile> open(const std::string& target, const std::string& what);
    PendingFile(PendingFile&&) noexcept;
    PendingFile& operator=(PendingFile&&) noexcept;
    ~PendingFile();

    std::ostream& stream() { return *m_out; }
    /// Writes `size` bytes, keeping the system's reason when that fails (finish() gives it).
    void write(const void* data, size_t size);
    /// Flushes and closes the temporary; an error when any write to it failed.
    Status finish();
    /// Renames the finished temporary over the target.
    Status commit();

private:
    PendingFile() = default;
    Error fail(const std::string& why) const;
    void discard();

    std::filesystem::path m_target, m_tmp;
    std::string m_what;
    std::unique_ptr<std::ofstream> m_out;
    bool m_finished = false;
    bool m_direct = false; ///< a stream (/dev/stdout, a pipe), written straight through
    int m_errno = 0; ///< the reason of the first failed write(), when it failed
};

/// Writes `content` to `path` through a PendingFile.
Status writeFileAtomically(const std::string& path, std::string_view content, const std::string& what);

} // namespace sextant
