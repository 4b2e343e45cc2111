// The memory reserve (base/memory_limit.h): when an allocation fails, the reserve is given back
// so that the unwinding and the error reply that follow have room (issue 40, fourth pass: a
// nlohmann::json destructor that allocated during unwinding ended `ragform serve`), then the next
// failure is std::bad_alloc as usual, and the reserve is taken again once memory is back.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/memory_limit.h"
#include "support/process_memory.h"
#include "support/sanitizer.h"

namespace ragform {
namespace {

using testing::vm_size_bytes;

TEST(MemoryReserve, AFailedAllocationLeavesRoomToUnwindAndIsTakenAgain) {
  if (ragform::testing::kSanitized)
    GTEST_SKIP() << "a sanitizer's shadow memory cannot live under RLIMIT_AS";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    install_memory_reserve(size_t(32) << 20);
    if (memory_reserve_spent()) _exit(10);
    const size_t base = vm_size_bytes();
    if (base == 0) _exit(11);
    rlimit rl{base + (size_t(128) << 20), base + (size_t(128) << 20)};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(12);
    std::vector<std::unique_ptr<char[]>> hog;
    bool failed = false;
    try {
      for (int i = 0; i < 100000; ++i) hog.emplace_back(new char[size_t(1) << 20]);
    } catch (const std::bad_alloc&) {
      failed = true;
    }
    if (!failed) _exit(13);
    if (!memory_reserve_spent()) _exit(14);
    // What an error path does while the hog is still held: a JSON reply built and destroyed.
    try {
      nlohmann::json j = nlohmann::json::array();
      for (int i = 0; i < 20000; ++i) j.push_back({{"i", i}, {"s", "x"}});
      if (j.dump().empty()) _exit(15);
    } catch (const std::bad_alloc&) {
      _exit(16);
    }
    hog.clear();
    if (!refill_memory_reserve() || memory_reserve_spent()) _exit(17);
    _exit(0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << "the child died of signal " << WTERMSIG(st);
  EXPECT_EQ(WEXITSTATUS(st), 0)
      << "10: spent at start, 11: no VmSize, 12: setrlimit, 13: no allocation failed, 14: the "
         "reserve not given back, 15/16: no room to build a reply after the failure, 17: not "
         "taken again";
}

}  // namespace
}  // namespace ragform
