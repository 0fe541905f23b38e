#include "core/ir/FileWrite.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <sys/stat.h>

#include <unistd.h>

namespace fs = std::filesystem;
using sextant::PendingFile;

namespace {

struct Folder {
    fs::path dir = fs::temp_directory_path() / ("sextant-filewrite-" + std::to_string(::getpid()));
    Folder() {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~Folder() { fs::remove_all(dir); }
    std::string read(const std::string& name) const {
        std::ifstream in(dir / name, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }
    size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir), {})); }
};

} // namespace

// What a user sees of a write that fails part-way: the file they had is still there, whole, and
// nothing else is left in the folder.
TEST(PendingFile, ReplacesTheFileOnlyOnCommit) {
    Folder f;
    const std::string target = (f.dir / "plan.csv").string();
    ASSERT_TRUE(sextant::writeFileAtomically(target, "old\n", "plan").ok());
    {
        auto file = PendingFile::open(target, "plan");
        ASSERT_TRUE(file.ok()) << file.error().message;
        file->stream() << "new, half written";
        EXPECT_EQ(f.read("plan.csv"), "old\n"); // not yet
        EXPECT_EQ(f.entries(), 2u);             // the file and the temporary
    } // dropped without commit, as when a later step fails
    EXPECT_EQ(f.read("plan.csv"), "old\n");
    EXPECT_EQ(f.entries(), 1u);

    auto file = PendingFile::open(target, "plan");
    ASSERT_TRUE(file.ok());
    file->write("new\n", 4);
    ASSERT_TRUE(file->finish().ok());
    EXPECT_EQ(f.read("plan.csv"), "old\n"); // finished, not committed
    ASSERT_TRUE(file->commit().ok());
    EXPECT_EQ(f.read("plan.csv"), "new\n");
    EXPECT_EQ(f.entries(), 1u);
}

TEST(PendingFile, ErrorsNameWhatAndWhere) {
    Folder f;
    auto missing = PendingFile::open((f.dir / "no-such-folder" / "t.json").string(), "trace");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("trace '"), std::string::npos) << missing.error().message;
    EXPECT_NE(missing.error().message.find("no-such-folder' does not exist"), std::string::npos) << missing.error().message;
    auto folder = PendingFile::open(f.dir.string(), "trace");
    ASSERT_FALSE(folder.ok());
    EXPECT_NE(folder.error().message.find("is a folder"), std::string::npos) << folder.error().message;
    EXPECT_EQ(f.entries(), 0u);
}

// `--report /dev/stdout | jq`, or a report written where a link points: a stream is written
// straight through (not replaced by a file), a link to a file keeps being a link.
TEST(PendingFile, WritesThroughStreamsAndFollowsLinks) {
    Folder f;
    const fs::path fifo = f.dir / "pipe";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string got;
    std::thread reader([&] {
        std::ifstream in(fifo, std::ios::binary);
        got.assign(std::istreambuf_iterator<char>(in), {});
    });
    const auto written = sextant::writeFileAtomically(fifo.string(), "through\n", "report");
    reader.join();
    ASSERT_TRUE(written.ok()) << written.error().message;
    EXPECT_EQ(got, "through\n");
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));

    ASSERT_TRUE(sextant::writeFileAtomically((f.dir / "real.json").string(), "old\n", "report").ok());
    fs::create_symlink("real.json", f.dir / "link.json");
    ASSERT_TRUE(sextant::writeFileAtomically((f.dir / "link.json").string(), "new\n", "report").ok());
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(f.dir / "link.json")));
    EXPECT_EQ(f.read("real.json"), "new\n");
    EXPECT_EQ(f.entries(), 3u); // the pipe, the file and the link: no temporary left
}
