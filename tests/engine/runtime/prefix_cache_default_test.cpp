// The prefix cache's default bound respects the memory this process may use, not only the
// machine's (issue 40: `ragform serve` under `ulimit -v 2000000` grew its cache, an eighth of RAM
// up to 2 GiB, past the limit and died of bad_alloc): an eighth of the smallest of RAM,
// RLIMIT_AS, RLIMIT_DATA and the cgroup's limit (base/memory_limit.h), read from cgroup v1 and v2
// files of the process's cgroup and its ancestors.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "base/memory_limit.h"
#include "engine/runtime/prefix_cache.h"
#include "support/sanitizer.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

namespace fs = std::filesystem;
constexpr size_t kMiB = size_t(1) << 20, kGiB = size_t(1) << 30;

TEST(PrefixCacheDefault, AnEighthOfTheSmallestLimitAtMostTwoGiB) {
  MemoryLimits m;
  EXPECT_EQ(default_prefix_cache_bytes(m), kGiB);  // nothing known
  m.physical = 64 * kGiB;
  EXPECT_EQ(default_prefix_cache_bytes(m), 2 * kGiB);
  m.physical = 8 * kGiB;
  EXPECT_EQ(default_prefix_cache_bytes(m), kGiB);
  m.address_space = 2000000 * size_t(1024);  // ulimit -v 2000000
  EXPECT_EQ(default_prefix_cache_bytes(m), 2000000 * size_t(1024) / 8);
  m.cgroup = 512 * kMiB;
  EXPECT_EQ(default_prefix_cache_bytes(m), 64 * kMiB);
  m.data = 256 * kMiB;
  EXPECT_EQ(default_prefix_cache_bytes(m), 32 * kMiB);
  EXPECT_EQ(m.smallest(), 256 * kMiB);
}

// What a front end says of a std::bad_alloc: the tightest limit, by name.
TEST(PrefixCacheDefault, OutOfMemoryMessageNamesTheTightestLimit) {
  MemoryLimits m;
  EXPECT_EQ(out_of_memory_message(m).find("may use"), std::string::npos);  // nothing known
  m.physical = 8 * kGiB;
  EXPECT_NE(out_of_memory_message(m).find("may use 8192 MiB (the machine's RAM"), std::string::npos)
      << out_of_memory_message(m);
  m.address_space = 2 * kGiB;
  EXPECT_NE(out_of_memory_message(m).find("may use 2048 MiB (ulimit -v"), std::string::npos);
  m.cgroup = kGiB;
  EXPECT_NE(out_of_memory_message(m).find("may use 1024 MiB (the cgroup's memory limit"),
            std::string::npos);
  EXPECT_NE(out_of_memory_message().find("out of memory: an allocation failed"), std::string::npos);
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(PrefixCacheDefault, ReadsTheTightestCgroupLimitOnTheWayUp) {
  const fs::path root = ragform::testing::temp_dir("cgroup");
  // v2: the process's own cgroup has no limit ("max"), its parent has 512 MiB, the root none.
  write(root / "a/b/memory.max", "max\n");
  write(root / "a/memory.max", "536870912\n");
  EXPECT_EQ(cgroup_memory_limit("0::/a/b\n", root.string()), 512 * kMiB);
  EXPECT_EQ(cgroup_memory_limit("0::/\n", root.string()), 0u);
  // A cgroup namespace shows "/" while the mount's root holds the container's limit.
  write(root / "memory.max", "268435456\n");
  EXPECT_EQ(cgroup_memory_limit("0::/\n", root.string()), 256 * kMiB);
  // v1: "unlimited" is the largest page-aligned long; the memory controller among others.
  const fs::path v1 = ragform::testing::temp_dir("cgroup-v1");
  write(v1 / "memory/x/y/memory.limit_in_bytes", "9223372036854771712\n");
  write(v1 / "memory/x/memory.limit_in_bytes", "1073741824\n");
  EXPECT_EQ(cgroup_memory_limit("5:cpu,memory:/x/y\n0::/\n", v1.string()), kGiB);
  EXPECT_EQ(cgroup_memory_limit("5:cpu:/x/y\n", v1.string()), 0u);
  EXPECT_EQ(cgroup_memory_limit("", v1.string()), 0u);
}

// In a child under RLIMIT_AS = 1 GiB (as `prlimit --as` or `ulimit -v` set it), the default is
// an eighth of it, and a cache made with the default reports it.
TEST(PrefixCacheDefault, RespectsTheAddressSpaceLimitOfTheProcess) {
  if (ragform::testing::kSanitized)
    GTEST_SKIP() << "a sanitizer's shadow memory cannot live under RLIMIT_AS";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit rl{kGiB, kGiB};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(10);
    if (memory_limits().address_space != kGiB) _exit(11);
    if (default_prefix_cache_bytes() > kGiB / 8) _exit(12);
    PrefixCache c(0);
    if (c.max_bytes() != default_prefix_cache_bytes() || c.stats().max_bytes != c.max_bytes())
      _exit(13);
    _exit(0);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "10: setrlimit failed, 11: the limit not read, 12: the "
                                   "default over an eighth of it, 13: the cache's bound differs";
}

TEST(PrefixCacheDefault, ClearDropsEveryEntry) {
  PrefixCache c(kMiB);
  auto e = std::make_shared<PrefixEntry>();
  e->tokens = {1, 2, 3};
  e->k32.assign(1, std::vector<float>(100, 1.0f));
  c.insert(e);
  ASSERT_EQ(c.stats().entries, 1u);
  c.clear();
  EXPECT_EQ(c.stats().entries, 0u);
  EXPECT_EQ(c.stats().bytes, 0u);
  EXPECT_EQ(c.stats().evictions, 1);
}

}  // namespace
}  // namespace ragform::runtime
