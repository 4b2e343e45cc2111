// MappedFile's two ways to hold a file: mapped, or read into 2 MB-aligned huge-page memory (the
// model weights), chosen by Load and overridden by RAGFORM_LOAD. Both give the same bytes; small
// files are always mapped unless RAGFORM_LOAD=memory says otherwise; a bad RAGFORM_LOAD is an
// error naming the variable; moves hand the image over.
#include "base/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "support/test_support.h"

namespace ragform {
namespace {

struct EnvGuard {
  ~EnvGuard() { unsetenv("RAGFORM_LOAD"); }
};

std::string sample_bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((i * 131 + 7) % 251);
  return s;
}

TEST(MappedFile, MappedAndInMemoryImagesHoldTheSameBytes) {
  EnvGuard guard;
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

  setenv("RAGFORM_LOAD", "memory", 1);
  MappedFile mem(path.string(), MappedFile::Load::map);
  ASSERT_TRUE(mem.in_memory());
  EXPECT_EQ(mem.bytes(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mem.data()) % (uintptr_t(2) << 20), 0u)
      << "the image starts on a 2 MB boundary";

  MappedFile moved(std::move(mem));
  EXPECT_TRUE(moved.in_memory());
  EXPECT_EQ(moved.bytes(), bytes);
  EXPECT_EQ(mem.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  unsetenv("RAGFORM_LOAD");
  moved = MappedFile(path.string());
  EXPECT_FALSE(moved.in_memory());
  EXPECT_EQ(moved.bytes(), bytes);

  setenv("RAGFORM_LOAD", "mmap", 1);
  EXPECT_FALSE(MappedFile(path.string(), MappedFile::Load::memory_if_room).in_memory());
}

TEST(MappedFile, BadInputIsAnErrorNamingIt) {
  EnvGuard guard;
  const auto dir = testing::temp_dir("mapped_file_bad");
  const auto path = dir / "x.bin";
  testing::write_file(path, "abc");
  setenv("RAGFORM_LOAD", "hugepages", 1);
  try {
    MappedFile f(path.string());
    FAIL() << "a bad RAGFORM_LOAD was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RAGFORM_LOAD"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hugepages"), std::string::npos) << e.what();
  }
  unsetenv("RAGFORM_LOAD");
  EXPECT_THROW(MappedFile((dir / "missing.bin").string()), Error);
  EXPECT_THROW(MappedFile(dir.string()), Error);  // a directory
  testing::write_file(dir / "empty.bin", "");
  setenv("RAGFORM_LOAD", "memory", 1);
  MappedFile empty((dir / "empty.bin").string());
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.data(), nullptr);
}

}  // namespace
}  // namespace ragform
