// Freeing JSON values without allocating (base/json_release.h). nlohmann's destructor of a
// non-empty array or object allocates a stack for the children and is noexcept: out of memory,
// that allocation ended the process with std::terminate (issue 40, pass 11: `data check` of a
// 26 MB record under `ulimit -v` aborted with SIGABRT, and 8 concurrent 1 MB bodies killed a
// server). Each case runs in a child whose address space is then limited.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/json_file.h"
#include "base/json_release.h"
#include "support/process_memory.h"
#include "support/sanitizer.h"

namespace ragform {
namespace {

using testing::vm_size_bytes;

void limit_address_space(size_t bytes) {
  rlimit rl{bytes, bytes};
  if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(12);
}

// `body` in a child process: its exit status (0 = all went well), or 128 + the signal it died of.
template <class F>
int in_child(F body) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// `[[],[],...]`: an array of n empty arrays.
std::string wide_text(size_t n) {
  std::string t = "[";
  for (size_t i = 0; i < n; ++i) t += i ? ",[]" : "[]";
  return t + "]";
}

TEST(JsonRelease, EmptiesEveryContainerFromItsLeavesUp) {
  nlohmann::json v = nlohmann::json::parse(
      R"({"a": [1, [2, [3, {"b": [4]}]], {"c": {}}], "d": "text", "e": {"f": [[], {}]}})");
  release_json(v);
  EXPECT_TRUE(v.empty()) << v.dump();
  nlohmann::json leaf = 5;
  release_json(leaf);
  EXPECT_EQ(leaf, 5);  // a leaf is left as it is: its destructor allocates nothing
  // A value as deep as a parse allows.
  std::string deep;
  for (int i = 0; i < kMaxJsonDepth; ++i) deep += i % 2 ? "{\"k\":" : "[";
  deep += "0";
  for (int i = kMaxJsonDepth - 1; i >= 0; --i) deep += i % 2 ? "}" : "]";
  nlohmann::json d = parse_json_text(deep);
  release_json(d);
  EXPECT_TRUE(d.empty());
}

// A parse that runs out of memory half-way throws std::bad_alloc to its caller (the CLI's
// "out of memory" message, the server's 503) instead of aborting while the half-built value is
// destroyed.
TEST(JsonRelease, AParseOutOfMemoryThrowsInsteadOfAborting) {
  if (testing::kSanitized)
    GTEST_SKIP() << "a sanitizer's shadow memory cannot live under RLIMIT_AS";
  const std::string text = wide_text(2'000'000);  // ~6 MB of text, ~200 MB as a DOM
  const int status = in_child([&] {
    const size_t base = vm_size_bytes();
    if (base == 0) _exit(11);
    limit_address_space(base + (size_t(64) << 20));
    try {
      const nlohmann::json j = parse_json_text(text);
      _exit(13);  // it fit: the limit did not bite
    } catch (const std::bad_alloc&) {
      _exit(0);
    }
  });
  EXPECT_EQ(status, 0) << "13: the parse fit in the limit; 134: std::terminate (SIGABRT)";
}

// A whole value, released at its scope's end once no memory is left, does not allocate.
TEST(JsonRelease, AValueIsReleasedWhenNoMemoryIsLeft) {
  if (testing::kSanitized)
    GTEST_SKIP() << "a sanitizer's shadow memory cannot live under RLIMIT_AS";
  const std::string text = wide_text(400'000);
  const int status = in_child([&] {
    nlohmann::json j = parse_json_text(text);
    if (j.size() != 400'000) _exit(14);
    // No more address space, and the heap's free room taken: the destructor's stack of 400,000
    // values (6.4 MB) cannot be had.
    limit_address_space(vm_size_bytes());
    std::vector<void*> room;
    try {
      for (;;) room.push_back(::operator new(4096));
    } catch (const std::bad_alloc&) {
    }
    { ReleaseAtExit release(j); }
    if (!j.empty()) _exit(15);
  });
  EXPECT_EQ(status, 0) << "134: the release allocated and std::terminate ran (SIGABRT)";
}

}  // namespace
}  // namespace ragform
