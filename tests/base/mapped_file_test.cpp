// MappedFile's two ways to hold a file: mapped, or read into 2 MB-aligned huge-page memory (the
// model weights), chosen by Load. Both give the same bytes; small files are mapped by
// memory_if_room and read by memory; bad paths are errors naming them; moves hand the image over.
#include "base/mapped_file.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "base/error.h"
#include "support/test_support.h"

namespace ragform {
namespace {

std::string sample_bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((i * 131 + 7) % 251);
  return s;
}

TEST(MappedFile, MappedAndInMemoryImagesHoldTheSameBytes) {
  const auto path = testing::temp_dir("mapped_file") / "image.bin";
  const std::string bytes = sample_bytes(3 * (size_t(1) << 20) + 12345);  // not page-sized
  testing::write_file(path, bytes);

  MappedFile mapped(path.string());
  EXPECT_FALSE(mapped.in_memory());
  EXPECT_EQ(mapped.bytes(), bytes);

  // A 3 MB file is below the 64 MB floor: memory_if_room maps it.
  MappedFile small(path.string(), MappedFile::Load::memory_if_room);
  EXPECT_FALSE(small.in_memory());
  EXPECT_EQ(small.bytes(), bytes);

  MappedFile mem(path.string(), MappedFile::Load::memory);
  ASSERT_TRUE(mem.in_memory());
  EXPECT_EQ(mem.bytes(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mem.data()) % (uintptr_t(2) << 20), 0u)
      << "the image starts on a 2 MB boundary";

  MappedFile moved(std::move(mem));
  EXPECT_TRUE(moved.in_memory());
  EXPECT_EQ(moved.bytes(), bytes);
  EXPECT_EQ(mem.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  moved = MappedFile(path.string());
  EXPECT_FALSE(moved.in_memory());
  EXPECT_EQ(moved.bytes(), bytes);
}

TEST(MappedFile, BadInputIsAnErrorNamingIt) {
  const auto dir = testing::temp_dir("mapped_file_bad");
  const auto path = dir / "x.bin";
  testing::write_file(path, "abc");
  EXPECT_THROW(MappedFile((dir / "missing.bin").string()), Error);
  EXPECT_THROW(MappedFile(dir.string()), Error);  // a directory
  testing::write_file(dir / "empty.bin", "");
  MappedFile empty((dir / "empty.bin").string(), MappedFile::Load::memory);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.data(), nullptr);
}

// A file that cannot be opened is a FileError carrying its errno (the Python module turns it into
// FileNotFoundError / IsADirectoryError), with the message "<path>: <strerror>".
int error_code_of(const std::string& path) {
  try {
    MappedFile f(path);
  } catch (const FileError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    return e.error_code();
  }
  ADD_FAILURE() << path << " opened";
  return 0;
}

TEST(MappedFile, OpenFailuresAreFileErrorsWithErrno) {
  const auto dir = testing::temp_dir("mapped_file_errno");
  EXPECT_EQ(error_code_of((dir / "missing.bin").string()), ENOENT);
  EXPECT_EQ(error_code_of(dir.string()), EISDIR);
}

}  // namespace
}  // namespace ragform
