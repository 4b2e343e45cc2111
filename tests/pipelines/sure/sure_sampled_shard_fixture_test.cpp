// Issue 24 defect 11: a sampled `sure eval` split over workers must store what one process stores.
// Each row samples with its own seed, row_seed(seed, instance, variant)
// (pipelines/sure/evaluate.h), so neither the rows before it nor its batch neighbours change its
// output; the OpenAI-compatible reader sends that seed in each request's `seed` field, so `ragform
// serve` samples the same text.
#include <gtest/gtest.h>

#include <map>

#include "base/stable_hash.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/nq_pairs_input.h"
#include "server/serve_harness.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;
using ragform::testing::quoted;
using ragform::testing::run_ragform;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

namespace {

// "instance|variant" -> output of every row of a store.
std::map<std::string, std::string> outputs(const std::filesystem::path& p) {
  store::RunStore st(p, store::RunStore::Mode::read_only);
  std::map<std::string, std::string> out;
  for (const auto& r : st.results(std::nullopt)) {
    EXPECT_EQ(r.status, store::Status::ok) << r.error;
    out[r.instance + "|" + r.variant] = r.output;
  }
  return out;
}

// Pairs of 8 NQ questions (logic/reverse and format/json of each).
std::filesystem::path pairs_file(const std::filesystem::path& dir) {
  auto nq = ragform::testing::shared_path("data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  write_file(dir / "qa.jsonl", ragform::testing::nq_pairs_input(nq, 8));
  auto r = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") +
                       " --kinds logic/reverse,format/json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  write_file(dir / "pairs.jsonl", r.out);
  return dir / "pairs.jsonl";
}

TEST(SureSampling, RowSeedIsTheStatedHash) {
  // splitmix64_mix(seed ^ fnv1a64("q1\0original")) >> 33, with the pieces of base/stable_hash.h.
  const std::string key("q1\0original", 11);
  EXPECT_EQ(sure::row_seed(5, "q1", "original"), splitmix64_mix(5 ^ fnv1a64(key)) >> 33);
  EXPECT_LT(sure::row_seed(5, "q1", "original"), 1ull << 31);
  EXPECT_NE(sure::row_seed(5, "q1", "original"), sure::row_seed(5, "q1", "closed-book"));
  EXPECT_NE(sure::row_seed(5, "q1", "original"), sure::row_seed(6, "q1", "original"));
}

TEST(SureSampling, ShardedAndMergedEqualsOneRun) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("sure_sampled_shard");
  auto pairs = pairs_file(dir);
  // The paper's T = 0.1, and T = 1 where nearly every token is a real draw.
  for (const std::string t : {"0.1", "1"}) {
    std::string ev = "sure eval --input " + quoted(pairs) + " -m " + quoted(model) +
                     " --ctx 1024 -n 12 --batch 8 --seed 3 --temp " + t;
    auto one = dir / ("one-" + t + ".sqlite");
    auto r = run_ragform(ev + " --store " + quoted(one));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> parts;
    for (int i = 0; i < 2; ++i) {
      auto s = dir / ("w" + std::to_string(i) + "-" + t + ".sqlite");
      // A different batch size as well: batch neighbours must not matter either.
      r = run_ragform(ev + " --batch 3 --shard " + std::to_string(i) + "/2 --store " + quoted(s));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      parts.push_back(quoted(s));
    }
    auto merged = dir / ("merged-" + t + ".sqlite");
    r = run_ragform("merge " + quoted(merged) + " " + parts[0] + " " + parts[1]);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto a = outputs(one), b = outputs(merged);
    EXPECT_EQ(a.size(), 8u * 7);  // per question: closed-book, 2 originals, 4 perturbed
    EXPECT_EQ(a, b) << "T = " << t;
  }
}

TEST(SureSampling, OpenAIReaderSendsTheRowSeed) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("sure_sampled_openai");
  auto pairs = pairs_file(dir);
  ragform::testing::ServeProcess srv({"-m", model.string(), "--ctx", "1024"});
  std::string ev = "sure eval --input " + quoted(pairs) + " -n 12 --seed 3 --temp 1";
  auto r = run_ragform(ev + " -m " + quoted(model) + " --ctx 1024 --store " +
                       quoted(dir / "native.sqlite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_ragform(ev + " --reader openai --base-url " + srv.url() + "/v1 -m stories260K --store " +
                  quoted(dir / "remote.sqlite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(outputs(dir / "native.sqlite"), outputs(dir / "remote.sqlite"));
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
