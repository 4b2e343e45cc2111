// Scale-out: --shard i/n (parse rules, FNV-1a 64 reference values, the shards partition the ids)
// and `ragform merge` of the run stores that sharded workers write.
#include <gtest/gtest.h>

#include <set>

#include "base/error.h"
#include "cli/shard.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform::cli {
namespace {

TEST(Shard, Fnv1a64ReferenceValues) {
  // The published FNV-1a 64-bit test vectors.
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(Shard, ParsesAndRejects) {
  auto s = parse_shard("2/5");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(s.describe(), "2/5");
  for (const char* bad : {"5/5", "1/0", "-1/3", "a/b", "1", "/3", "1/", "1/3/4", ""})
    EXPECT_THROW(parse_shard(bad), UsageError) << bad;
}

TEST(Shard, PartitionsEveryIdExactlyOnce) {
  const int n = 4;
  std::vector<int> per(n, 0);
  for (int i = 0; i < 4000; ++i) {
    std::string id = "nq-" + std::to_string(i);
    int owners = 0;
    for (int k = 0; k < n; ++k)
      if (Shard{k, n}.keeps(id)) {
        ++owners;
        ++per[k];
      }
    EXPECT_EQ(owners, 1) << id;
  }
  for (int k = 0; k < n; ++k) {  // roughly even: 1000 +- 15%
    EXPECT_GT(per[k], 850);
    EXPECT_LT(per[k], 1150);
  }
  EXPECT_TRUE(Shard{}.keeps("anything"));
  // "a" hashes to 0xaf63dc4c8601ec8c, which is even: shard 0 of 2.
  EXPECT_TRUE((Shard{0, 2}.keeps("a")));
  EXPECT_FALSE((Shard{1, 2}.keeps("a")));
}

// Three workers each evaluate their shard of 30 instances into their own store (one row
// unmeasured in worker 0, measured again by worker 1 as a retry); merge gives one run with every
// instance once.
TEST(Merge, CombinesShardedWorkerStores) {
  auto dir = testing::temp_dir("merge");
  store::RunConfig rc;
  rc.pipeline = "test eval";
  rc.config = {{"k", 3}};
  rc.reader = "openai";
  rc.chat_mode = "raw";
  std::vector<std::string> ins;
  for (int w = 0; w < 3; ++w) {
    auto p = dir / ("w" + std::to_string(w) + ".sqlite");
    ins.push_back(p.string());
    store::RunStore st(p);
    auto run = st.begin_run(rc);
    Shard sh{w, 3};
    for (int i = 0; i < 30; ++i) {
      std::string id = "q" + std::to_string(i);
      if (!sh.keeps(id)) continue;
      store::Result r;
      r.run = run;
      r.instance = id;
      r.variant = "v";
      r.output = "answer " + id;
      r.correct = i % 2 == 0;
      st.put(r);
    }
    if (w == 0 || w == 1) {
      // The instance of shard 2 that worker 0 also tried and failed, and worker 1 retried.
      std::string id;
      for (int i = 0; i < 30 && id.empty(); ++i)
        if (Shard{2, 3}.keeps("q" + std::to_string(i))) id = "q" + std::to_string(i);
      store::Result r;
      r.run = run;
      r.instance = id;
      r.variant = "v";
      if (w == 0) {
        r.status = store::Status::unmeasured;
        r.error = "openai reader: HTTP 503 (after 5 attempts)";
      } else {
        r.output = "answer " + id;
        r.correct = std::stoi(id.substr(1)) % 2 == 0;
      }
      st.put(r);
    }
  }
  auto out = dir / "all.sqlite";
  auto res = testing::run_ragform("merge " + out.string() + " " + ins[0] + " " + ins[1] + " " +
                                  ins[2] + " --json");
  ASSERT_EQ(res.exit_code, 0) << res.err;
  auto j = nlohmann::json::parse(res.out);
  EXPECT_EQ(j["inputs"], 3);
  EXPECT_EQ(j["runs_added"], 1);
  EXPECT_EQ(j["rows_replaced"], 1);  // worker 0's unmeasured row replaced by worker 1's
  store::RunStore st(out, store::RunStore::Mode::read_only);
  ASSERT_EQ(st.runs().size(), 1u);
  auto c = st.counts(st.runs()[0].id);
  EXPECT_EQ(c.rows, 30);  // every instance once
  EXPECT_EQ(c.unmeasured, 0);
  EXPECT_EQ(c.correct, 15);
  EXPECT_EQ(c.wrong, 15);
}

TEST(Merge, UsageErrors) {
  EXPECT_EQ(testing::run_ragform("merge only_one.sqlite").exit_code, 2);
  auto dir = testing::temp_dir("merge-usage");
  EXPECT_EQ(testing::run_ragform("merge " + (dir / "o.sqlite").string() + " " +
                                 (dir / "missing.sqlite").string())
                .exit_code,
            2);
}

}  // namespace
}  // namespace ragform::cli
