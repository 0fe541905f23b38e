#include "ProtoFile.h"

#include "core/ir/FileRead.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace sextant::frontend {

namespace {

/// Closes a file descriptor on every exit path.
class FdCloser {
public:
    explicit FdCloser(int fd) : m_fd(fd) {}
    ~FdCloser() {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    FdCloser(const FdCloser&) = delete;
    FdCloser& operator=(const FdCloser&) = delete;

private:
    int m_fd;
};

} // namespace

Status parseProtoFile(const std::string& path, const char* what,
                      google::protobuf::Message& message) {
    if (const std::string kind = specialFileKind(path); !kind.empty())
        return makeError(ErrorKind::Io, std::string(what) + " '" + path + "' is " + kind + ", not a file");
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return makeError(ErrorKind::Io, std::string("cannot open ") + what + " '" + path +
                                            "': " + std::strerror(errno));
    FdCloser closer(fd);
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return makeError(ErrorKind::Io, std::string("cannot read ") + what + " '" + path +
                                            "': " + std::strerror(errno));
    if (S_ISDIR(st.st_mode))
        return makeError(ErrorKind::Io,
                         std::string(what) + " '" + path + "' is a directory, not a file");
    if (st.st_size == 0)
        return makeError(ErrorKind::Parse, std::string(what) + " '" + path + "' is empty");
    // Protobuf cannot address messages of 2 GiB or more; such models need external data.
    if (st.st_size >= std::numeric_limits<int>::max())
        return makeError(ErrorKind::Unsupported,
                         std::string(what) + " '" + path + "' is " +
                             std::to_string(st.st_size) +
                             " bytes; protobuf files must be under 2 GiB (use external data)");

    google::protobuf::io::FileInputStream raw(fd);
    google::protobuf::io::CodedInputStream coded(&raw);
    coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
    if (!message.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
        return makeError(ErrorKind::Parse, std::string("cannot parse ") + what + " '" + path +
                                               "': truncated or not a protobuf");
    if (raw.GetErrno() != 0)
        return makeError(ErrorKind::Io, std::string("cannot read ") + what + " '" + path +
                                            "': " + std::strerror(raw.GetErrno()));
    return {};
}

} // namespace sextant::frontend
