// A file name holding a NUL byte is refused by every opener (issue 40, pass 8): the system reads a
// name only up to its NUL, so "a.gguf\0/other.gguf" opened a.gguf while the caller believed it had
// opened other.gguf (Python's strings and JSON's "\u0000" can both carry one).
#include <string>

#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_file.h"
#include "base/mapped_file.h"
#include "base/paths.h"
#include "eval/jsonl.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform {
namespace {

// The refusal names the part before the NUL and where the NUL is; nothing is opened or created.
template <class F>
void expect_refused(F&& open, const std::string& what) {
  try {
    open();
    ADD_FAILURE() << what << ": a path with a NUL byte was accepted";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot hold a NUL byte"), std::string::npos)
        << what << ": " << e.what();
    EXPECT_EQ(std::string(e.what()).find('\0'), std::string::npos) << what;
  }
}

TEST(PathNul, EveryOpenerRefusesIt) {
  const auto dir = testing::temp_dir("path_nul");
  const std::string real = (dir / "real.json").string();
  testing::write_file(real, "{\"a\": 1}\n");
  const std::string cut = real + std::string(1, '\0') + "/other.json";
  EXPECT_NO_THROW(check_path(real));
  expect_refused([&] { check_path(cut); }, "check_path");
  expect_refused([&] { MappedFile f(cut); }, "MappedFile");
  expect_refused([&] { (void)read_json_file(cut, "a test file"); }, "read_json_file");
  expect_refused([&] { AtomicFile f(cut, "a test file"); }, "AtomicFile");
  expect_refused([&] { store::RunStore s(cut); }, "RunStore");
  expect_refused(
      [&] {
        eval::JsonRecordReader r(cut);
        (void)r;
      },
      "JsonRecordReader");
}

}  // namespace
}  // namespace ragform
