// MappedFile's two ways to hold a file: mapped, or read into 2 MB-aligned huge-page memory (the
// model weights), chosen by Load. Both give the same bytes; small files are mapped by
// memory_if_room and read by memory; bad paths are errors naming them; moves hand the image over.
#include "base/mapped_file.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
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

// A pipe or a device is refused in words (it read as an empty file: "needs 4 bytes ... size 0").
TEST(MappedFile, APipeOrADeviceIsNotARegularFile) {
  for (const char* path : {"/dev/zero", "/dev/null"}) {
    try {
      MappedFile f(path);
      ADD_FAILURE() << path << " was mapped";
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
}

// A FIFO is refused at once (pass 10: opening it for reading waited for a writer, forever:
// `ragform info FIFO` hung). Should the open hang again, a writer is attached after 5 s to
// release it, so the test fails instead of hanging.
TEST(MappedFile, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = (testing::temp_dir("fifo") / "model.gguf").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  auto opened = std::async(std::launch::async, [&]() -> std::string {
    try {
      MappedFile f(fifo);
      return "mapped";
    } catch (const FileError& e) {
      return e.what();
    }
  });
  if (opened.wait_for(std::chrono::seconds(5)) == std::future_status::timeout) {
    ADD_FAILURE() << "opening a FIFO waited for a writer";
    const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  EXPECT_NE(opened.get().find("not a regular file"), std::string::npos);
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

// Issue 40, D12: whole-file reads are bounded. /dev/zero as a prompt or template file ended in
// std::bad_alloc, and as --api-key-file was read for 2 GB before its first line was refused.
TEST(MappedFile, TextFileReadsAreBounded) {
  const auto dir = testing::temp_dir("mapped_file_bounded");
  testing::write_file(dir / "t.txt", "line one\r\nline two\n");
  EXPECT_EQ(read_file_bytes((dir / "t.txt").string()), "line one\r\nline two\n");
  EXPECT_EQ(read_first_line((dir / "t.txt").string(), 4096, "API key file"), "line one");
  testing::write_file(dir / "n.txt", "no newline");
  EXPECT_EQ(read_first_line((dir / "n.txt").string(), 10, "key"), "no newline");
  EXPECT_EQ(read_file_bytes((dir / "n.txt").string(), 10), "no newline");
  auto message = [](auto read) {
    try {
      read();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { read_file_bytes((dir / "n.txt").string(), 9, "prompt template"); }),
            (dir / "n.txt").string() +
                ": the prompt template is over the limit of 9 bytes (a text file is read whole; "
                "is it the right file?)");
  EXPECT_EQ(message([&] { read_first_line((dir / "n.txt").string(), 9, "API key file"); }),
            (dir / "n.txt").string() + ": the API key file's first line is longer than 9 bytes");
  EXPECT_EQ(message([&] { read_first_line(dir.string(), 9, "API key file"); }),
            dir.string() + ": cannot read the API key file: it is a directory");
  EXPECT_EQ(message([&] { read_file_bytes((dir / "missing").string()); }),
            (dir / "missing").string() + ": No such file or directory");
  // A device without end: refused after the bound, at once.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_NE(message([] { read_file_bytes("/dev/zero"); }).find("over the limit of 67108864 bytes"),
            std::string::npos);
  EXPECT_NE(message([] {
              read_first_line("/dev/zero", 4096, "API key file");
            }).find("first line is longer than 4096 bytes"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

}  // namespace
}  // namespace ragform
