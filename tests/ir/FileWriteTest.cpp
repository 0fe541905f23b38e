#include "core/ir/FileWrite.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

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
