// --shard i/n on the batch commands of SURE and SpotlightRAG (cli/shard.h): for sure perturb,
// sure filter, sure eval, spotlight select and spotlight eval, the n shards of a run are disjoint
// and together give exactly the unsharded run (same pairs, same stored rows, same questions).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "eval/datasets.h"
#include "pipelines/sure/nq_pairs_input.h"
#include "pipelines/sure/perturb_rules.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;
using ragform::testing::json_lines;
using ragform::testing::quoted;
using ragform::testing::read_file;
using ragform::testing::run_ragform;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

namespace {

// Runs `cmd --shard i/n` for every i; checks each shard's key set is disjoint from the others and
// their union equals the unsharded run's. `key` maps one stdout line to its key.
template <class KeyFn>
void expect_partition(const std::string& cmd, int n, KeyFn key,
                      const std::string& stdin_text = "") {
  auto whole = run_ragform(cmd, stdin_text);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::multiset<std::string> all;
  for (const auto& j : json_lines(whole.out)) all.insert(key(j));
  ASSERT_FALSE(all.empty()) << cmd;
  std::multiset<std::string> joined;
  int non_empty = 0;
  for (int i = 0; i < n; ++i) {
    auto r =
        run_ragform(cmd + " --shard " + std::to_string(i) + "/" + std::to_string(n), stdin_text);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> mine;
    for (const auto& j : json_lines(r.out)) mine.insert(key(j));
    non_empty += !mine.empty();
    for (const auto& k : mine) EXPECT_EQ(joined.count(k), 0u) << "in two shards: " << k;
    for (const auto& j : json_lines(r.out)) joined.insert(key(j));
  }
  EXPECT_EQ(joined, all) << cmd;
  EXPECT_GE(non_empty, 2) << "the split put everything in one shard: " << cmd;
}

std::string pair_key(const nlohmann::json& j) {
  return j.at("id").get<std::string>() + "|" + j.at("perturbation").get<std::string>();
}

// Six NQ questions, each with its gold passage (two sentences) and the next question's as noise.
std::filesystem::path nq_input(const std::filesystem::path& dir) {
  auto nq = ragform::testing::shared_path("data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  std::string input = ragform::testing::nq_pairs_input(nq, 6);
  write_file(dir / "qa.jsonl", input);
  return dir / "qa.jsonl";
}

TEST(Shard, SurePerturbFilterEvalPartitionTheRun) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("sure_shard");
  auto qa = nq_input(dir);
  std::string perturb = "sure perturb --input " + quoted(qa) + " --kinds logic/reverse,format/json";
  expect_partition(perturb, 3, pair_key);
  auto r = run_ragform(perturb);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(json_lines(r.out).size(), 6u * 2 * 2);
  write_file(dir / "pairs.jsonl", r.out);
  // Every pair of one question lands in the same shard (its closed-book row is computed once).
  for (int i = 0; i < 3; ++i) {
    auto s = run_ragform(perturb + " --shard " + std::to_string(i) + "/3");
    EXPECT_EQ(json_lines(s.out).size() % 4, 0u) << s.out;
  }
  expect_partition("sure filter --nli none --input " + quoted(dir / "pairs.jsonl"), 3, pair_key);
  expect_partition("sure filter --nli none", 2, pair_key, r.out);  // from stdin as well

  // sure eval: the shards' stores hold disjoint rows that together are the unsharded run's rows,
  // and `ragform merge` joins them into one run.
  std::string ev = "sure eval --input " + quoted(dir / "pairs.jsonl") + " -m " + quoted(model) +
                   " --ctx 1024 -n 4 --temp 0";
  ASSERT_EQ(run_ragform(ev + " --store " + quoted(dir / "whole.sqlite")).exit_code, 0);
  for (int i = 0; i < 2; ++i) {
    auto s = run_ragform(ev + " --shard " + std::to_string(i) + "/2 --store " +
                         quoted(dir / ("w" + std::to_string(i) + ".sqlite")));
    ASSERT_EQ(s.exit_code, 0) << s.err;
  }
  auto keys = [](const std::filesystem::path& p) {
    store::RunStore st(p, store::RunStore::Mode::read_only);
    std::set<std::string> out;
    for (const auto& res : st.results(std::nullopt))
      out.insert(res.instance + "|" + res.variant + "|" + store::to_string(res.status));
    return std::pair{out, st.runs().size()};
  };
  auto [whole, whole_runs] = keys(dir / "whole.sqlite");
  auto [w0, runs0] = keys(dir / "w0.sqlite");
  auto [w1, runs1] = keys(dir / "w1.sqlite");
  EXPECT_EQ(whole.size(), 6u + 12 + 24);  // closed-book + originals + perturbed
  EXPECT_FALSE(w0.empty());
  EXPECT_FALSE(w1.empty());
  for (const auto& k : w0) EXPECT_EQ(w1.count(k), 0u) << k;
  std::set<std::string> u = w0;
  u.insert(w1.begin(), w1.end());
  EXPECT_EQ(u, whole);
  auto m = run_ragform("merge " + quoted(dir / "merged.sqlite") + " " + quoted(dir / "w0.sqlite") +
                       " " + quoted(dir / "w1.sqlite"));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  auto [merged, merged_runs] = keys(dir / "merged.sqlite");
  EXPECT_EQ(merged, whole);
  EXPECT_EQ(merged_runs, 1u);  // the shards share one run identity

  // Bad values are usage errors.
  auto bad = run_ragform(perturb + " --shard 3/3");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--shard"), std::string::npos) << bad.err;
}

TEST(Shard, SpotlightSelectAndEvalPartitionTheQuestions) {
  REQUIRE_SHARED(dev, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  std::string base =
      "--input " + quoted(dev) + " --vectors " + quoted(glove) + " --limit 24 --json";
  expect_partition("spotlight select " + base, 3, [](const nlohmann::json& j) {
    return j.at("id").get<std::string>() + "|" + j.at("prompt").get<std::string>();
  });
  // eval: the shards' question counts add up to the whole run's, and the question-weighted mean of
  // the shards' recall@6 is the whole run's.
  auto main_row = [](const std::string& out) {
    for (const auto& j : json_lines(out)) {
      if (j.value("kind", "") == "recall" && j.value("method", "") == "spotlight") return j;
    }
    return nlohmann::json();
  };
  auto whole = run_ragform("spotlight eval " + base);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto w = main_row(whole.out);
  ASSERT_FALSE(w.is_null()) << whole.out;
  double sum = 0;
  int n = 0;
  for (int i = 0; i < 2; ++i) {
    auto r = run_ragform("spotlight eval " + base + " --shard " + std::to_string(i) + "/2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto s = main_row(r.out);
    ASSERT_FALSE(s.is_null()) << r.out;
    n += s["questions"].get<int>();
    sum += s["recall"].get<double>() * s["questions"].get<int>();
  }
  EXPECT_EQ(n, w["questions"].get<int>());
  EXPECT_NEAR(sum / n, w["recall"].get<double>(), 1e-6);
}

}  // namespace
