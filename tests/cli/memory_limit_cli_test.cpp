// Commands under an address-space limit (`ulimit -v`) end as they should: exit 0, or exit 1 with
// "out of memory", never a hang or std::terminate (issue 40, pass 12).
// - L2: OpenBLAS (FAISS's BLAS) started a worker thread per core as it loaded, each taking a
//   128 MB buffer; under ~210 MB a worker spun and exit() waited for it forever: even
//   `ragform --version` hung.
// - L3: reading a 14.7 MB record under ~280 MB ended in std::terminate (SIGABRT, exit 134): a
//   nlohmann::json destructor allocates as it frees, and a failure there is fatal. Every command
//   now keeps a memory reserve for that.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/sanitizer.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

// `ragform ARGS` under `ulimit -v kib` and `timeout 60`: the shell's exit status (124 when timed
// out, 128 + N for signal N).
int run_limited(size_t kib, const std::string& args) {
  const std::string cmd = "ulimit -v " + std::to_string(kib) + "; exec timeout 60 '" +
                          ragform_bin().string() + "' " + args + " >/dev/null 2>&1";
  const int status = std::system(("sh -c \"" + cmd + "\"").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(MemoryLimitCli, ACommandEndsUnderATightLimit) {
  if (kSanitized) GTEST_SKIP() << "a sanitizer's shadow memory cannot live under ulimit -v";
  for (size_t kib : {150000, 200000, 250000}) {
    const int rc = run_limited(kib, "--version");
    EXPECT_EQ(rc, 0) << "ulimit -v " << kib << ": 124 is a hang";
  }
  // Whatever OPENBLAS_NUM_THREADS said (pass 13: "", "0", "2" and "abc" hung as before).
  for (const char* v : {"", "0", "2", "abc"}) {
    setenv("OPENBLAS_NUM_THREADS", v, 1);
    const int rc = run_limited(180000, "--version");
    unsetenv("OPENBLAS_NUM_THREADS");
    EXPECT_EQ(rc, 0) << "OPENBLAS_NUM_THREADS='" << v << "': 124 is a hang";
  }
}

TEST(MemoryLimitCli, ABigRecordUnderALimitIsOutOfMemoryNotAnAbort) {
  if (kSanitized) GTEST_SKIP() << "a sanitizer's shadow memory cannot live under ulimit -v";
  const fs::path d = temp_dir("memory_limit_cli");
  {
    // One record with 150,000 documents: ~15 MB of JSON, some 300 MB as a parsed value.
    std::ofstream out(d / "big.jsonl");
    out << R"({"id": "big", "question": "who?", "answers": ["x"], "ctxs": [)";
    for (int i = 0; i < 150000; ++i)
      out << (i ? "," : "") << R"({"title": "t)" << i
          << R"(", "text": "w w w w w", "score": 1.0, "extra": [{"a": 1}, {"a": 1}, {"a": 1}]})";
    out << "]}\n";
  }
  const std::string args = "data check '" + (d / "big.jsonl").string() + "'";
  const auto ends_well = [&](size_t kib) {
    const int rc = run_limited(kib, args);
    EXPECT_TRUE(rc == 0 || rc == 1)
        << "ulimit -v " << kib << ": exit " << rc << " (134 is std::terminate, 124 a hang)";
    return rc;
  };
  // The smallest limit (to 4 MB) under which the file is read, between one too tight and one
  // wide enough; then every 2 MB below it, where a parse runs out of memory late, with the most
  // built to unwind (the aborts were there: 276-282 MB, read from 294 MB).
  size_t lo = 100000, hi = 1000000;
  ASSERT_EQ(ends_well(lo), 1) << "the file was read under " << lo << " KiB";
  ASSERT_EQ(ends_well(hi), 0) << "the file was not read under " << hi << " KiB";
  while (hi - lo > 4000) {
    const size_t mid = (lo + hi) / 2;
    (ends_well(mid) == 0 ? hi : lo) = mid;
  }
  for (size_t kib = hi > 40000 ? hi - 40000 : 0; kib < hi; kib += 2000) ends_well(kib);
}

}  // namespace
}  // namespace ragform::testing
