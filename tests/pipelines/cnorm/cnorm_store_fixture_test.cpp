// C-NORM's run-store side on stories260K through the CLI: calibration rows (ABS, mu, mass by
// position, attention, tokens) that resume, the ABS of a prompt recomputed from the attention
// vector of `ragform attention --json` (the "Done when"), `cnorm eval --shard`, and
// `ragform kv generate` read back by `cnorm eval --task kv`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "pipelines/cnorm/abs.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/cnorm_cli.h"
#include "pipelines/cnorm/longbench.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform::cnorm {
namespace {

using ragform::testing::cnorm_calibrate;
using ragform::testing::cnorm_eval;
using ragform::testing::quoted;
using ragform::testing::read_file;
using ragform::testing::run_ragform;
using ragform::testing::temp_dir;

// The story-needle profile the eval tests start from: 2 prompts, 2 candidates, 3 documents.
const char* const kNeedleProfile = "--task needle -S 2 -k 3 --delims 'none,&' --ctx 512 --no-cache";

}  // namespace

TEST(CnormStoreFixture, CalibrationRowsMatchAttentionAndResume) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_store");
  std::string calib =
      cnorm_calibrate(model,
                      "--task needle -S 2 -k 4 --delims 'none,&' --ctx 512 --no-cache --store " +
                          quoted(dir / "cal.sqlite") + " --dump-prompts " + quoted(dir / "prompts"),
                      dir / "p.json");
  auto r = run_ragform(calib);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto prof = nlohmann::json::parse(read_file(dir / "p.json"));
  std::vector<store::Result> rows;
  {
    store::RunStore st(dir / "cal.sqlite", store::RunStore::Mode::read_only);
    auto runs = st.runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].pipeline, "cnorm calibrate");
    rows = st.results(std::nullopt);
  }
  ASSERT_EQ(rows.size(), 4u);  // 2 prompts x 2 candidates
  // Row of candidate '&' (f1) on the second sampled prompt (s1).
  const std::string id1 = prof["config"]["samples"][1]["id"];
  const store::Result* row = nullptr;
  for (const auto& x : rows)
    if (x.instance == id1 && x.variant == "&") row = &x;
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->prompt, read_file(dir / "prompts" / "f1-s1.txt"));
  EXPECT_EQ(row->extra["delimiter"], "&");
  EXPECT_EQ(row->extra["p"], 0.5);
  EXPECT_EQ(row->extra["gold_position"], prof["config"]["samples"][1]["gold_position"]);
  EXPECT_NEAR(row->scores.at("abs"), prof["candidates"][1]["abs"][1].get<double>(), 1e-8);

  // `ragform attention --json` on the same prompt: its printed ABS, the profile's, the store's
  // and attention_balance_score() of its printed head-mean vector are one number.
  auto att = run_ragform("attention -m " + quoted(model) + " --ctx 512 --json --file " +
                         quoted(dir / "prompts" / "f1-s1.txt"));
  ASSERT_EQ(att.exit_code, 0) << att.err;
  auto aj = nlohmann::json::parse(att.out);
  std::vector<float> mean = aj["mean"].get<std::vector<float>>();
  double recomputed = attention_balance_score(mean);
  EXPECT_NEAR(recomputed, aj["abs"].get<double>(), 1e-7);
  EXPECT_NEAR(recomputed, row->scores.at("abs"), 1e-7);
  EXPECT_NEAR(attention_centroid(mean), row->scores.at("mu"), 1e-7);
  EXPECT_NEAR(recomputed, 1 - 2 * std::fabs(row->scores.at("mu") - 0.5), 1e-12);

  // The stored vector is that row to 4 significant digits, with its token strings.
  auto stored = row->extra["attention"].get<std::vector<double>>();
  ASSERT_EQ(stored.size(), mean.size());
  EXPECT_EQ(row->prompt_tokens, int64_t(mean.size()));
  for (size_t t = 0; t < mean.size(); ++t)
    EXPECT_NEAR(stored[t], mean[t], 5e-4 * std::fabs(mean[t]) + 1e-12) << t;
  EXPECT_EQ(row->extra["tokens"], aj["pieces"]);
  // Figure 3's mass by tenth of the documents' span, recomputed from the attention vector.
  auto span = row->extra["mass_span"].get<std::vector<size_t>>();
  ASSERT_EQ(span.size(), 2u);
  EXPECT_TRUE(row->extra["mass_span_is_context"].get<bool>());
  EXPECT_GT(span[0], 0u);           // the documents start after BOS
  EXPECT_LT(span[1], mean.size());  // " The <animal>'s name was" follows them
  auto mass = row->extra["mass_by_position"].get<std::vector<double>>();
  auto want = mass_by_tenth(mean, span[0], span[1]);
  ASSERT_EQ(mass.size(), 10u);
  double total = 0;
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_NEAR(mass[i], want[i], 1e-6) << i;
    total += mass[i];
  }
  EXPECT_NEAR(total, 1.0, 1e-6);

  // A rerun resumes: every score is read back, the profile is unchanged.
  auto again = run_ragform(calib);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("4 scores read from the store"), std::string::npos) << again.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "p.json")), prof);
}

TEST(CnormStoreFixture, EvalShardsSplitTheItems) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_shard");
  auto cal = run_ragform(cnorm_calibrate(model, kNeedleProfile, dir / "p.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  std::string ev = cnorm_eval(model, dir / "p.json", "--task needle -k 3 --limit 4 --ctx 512");
  auto whole = run_ragform(ev + " --store " + quoted(dir / "all.sqlite"));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::map<store::Key, store::Result> all_rows;
  std::string key_all;
  {
    store::RunStore st(dir / "all.sqlite", store::RunStore::Mode::read_only);
    for (const auto& r : st.results(std::nullopt)) all_rows[{r.instance, r.variant}] = r;
    key_all = st.runs().at(0).config_key;
  }
  ASSERT_EQ(all_rows.size(), 4u * 3 * 3);
  std::set<std::string> seen;
  size_t n = 0;
  for (int i = 0; i < 2; ++i) {
    auto path = dir / ("s" + std::to_string(i) + ".sqlite");
    auto r = run_ragform(ev + " --shard " + std::to_string(i) + "/2 --store " + quoted(path));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["shard"], std::to_string(i) + "/2");
    store::RunStore st(path, store::RunStore::Mode::read_only);
    EXPECT_EQ(st.runs().at(0).config_key, key_all);  // same run: `ragform merge` joins them
    std::set<std::string> mine;
    for (const auto& row : st.results(std::nullopt)) {
      mine.insert(row.instance);
      auto it = all_rows.find({row.instance, row.variant});
      ASSERT_NE(it, all_rows.end());
      EXPECT_EQ(row.output, it->second.output);  // greedy: the same answer as unsharded
      EXPECT_EQ(row.extra["gold_position"], it->second.extra["position"]);
      EXPECT_TRUE(row.extra.contains("delimiter"));
      ++n;
    }
    for (const auto& id : mine) EXPECT_TRUE(seen.insert(id).second) << id << " in two shards";
  }
  EXPECT_EQ(n, all_rows.size());
  // The analyses: every candidate and a density sweep as extra variants.
  auto an =
      run_ragform(ev + " --all-candidates --density 0,1 --store " + quoted(dir / "an.sqlite"));
  ASSERT_EQ(an.exit_code, 0) << an.err;
  auto aj = nlohmann::json::parse(an.out);
  ASSERT_EQ(aj["variants"].size(), 3u + 2 + 2);
  EXPECT_EQ(aj["variants"][3]["name"], "f:none");
  EXPECT_EQ(aj["variants"][6]["name"], "p=1");
  // p = 0 is the baseline's format: the same answers, the same curve.
  EXPECT_EQ(aj["variants"][5]["accuracy"], aj["variants"][0]["accuracy"]);
  const auto& a = aj["analysis"];
  ASSERT_EQ(a["abs_vs_accuracy"]["candidates"].size(), 2u);
  EXPECT_EQ(a["abs_vs_accuracy"]["candidates"][0]["oaa"], aj["variants"][3]["oaa"]);
  EXPECT_EQ(a["abs_vs_accuracy"]["questions"], 4);
  ASSERT_EQ(a["density"].size(), 2u);
  EXPECT_EQ(a["density"][1]["oaa"], aj["variants"][6]["oaa"]);
  ASSERT_EQ(a["stability"]["best_by_S"].size(), 2u);  // S = 2 in the profile
  EXPECT_EQ(a["stability"]["best_by_S"][1]["best"],
            nlohmann::json::parse(read_file(dir / "p.json"))["best"]);
  EXPECT_TRUE(a["token_count_vs_oaa"].contains("pearson_r"));  // null: 2 candidates < 3
  EXPECT_NE(an.err.find("f* by S = 1..2"), std::string::npos) << an.err;

  auto bad = run_ragform(ev + " --shard 2/2 --store " + quoted(dir / "x.sqlite"));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

TEST(CnormStoreFixture, KvGenerateThenEvalKv) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_kv");
  auto g = run_ragform("kv generate --format modified --delimiter '&' -n 1 --seed 5 -o " +
                       quoted(dir / "kv.jsonl"));
  ASSERT_EQ(g.exit_code, 0) << g.err;
  auto lines = read_file(dir / "kv.jsonl");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 40);  // one row per gold position
  EXPECT_EQ(run_ragform("kv generate --format uuid --delimiter '&'").exit_code, 2);
  auto cal = run_ragform(cnorm_calibrate(model,
                                         "--task kv --input " + quoted(dir / "kv.jsonl") +
                                             " -S 2 --delims 'none,-' --ctx 1024 --no-cache",
                                         dir / "p.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  auto ev = run_ragform(cnorm_eval(model, dir / "p.json",
                                   "--task kv --input " + quoted(dir / "kv.jsonl") +
                                       " --positions natural --limit 3 -n 8 --ctx 1024 --store " +
                                       quoted(dir / "ev.sqlite")));
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  EXPECT_NE(ev.err.find("k reduced from 40"), std::string::npos) << ev.err;
  auto s = nlohmann::json::parse(ev.out);
  EXPECT_EQ(s["task"], "kv");
  ASSERT_EQ(s["variants"].size(), 3u);
  // Items kv-...-g0, g1, g2: one answer per variant at each of positions 0, 1, 2.
  for (const auto& v : s["variants"]) {
    auto nn = v["n"].get<std::vector<size_t>>();
    ASSERT_GE(nn.size(), 3u);
    EXPECT_EQ(nn[0], 1u);
    EXPECT_EQ(nn[1], 1u);
    EXPECT_EQ(nn[2], 1u);
    for (size_t j = 3; j < nn.size(); ++j) EXPECT_EQ(nn[j], 0u);
  }
  store::RunStore st(dir / "ev.sqlite", store::RunStore::Mode::read_only);
  auto rows = st.results(std::nullopt);
  ASSERT_EQ(rows.size(), 9u);
  for (const auto& r : rows) EXPECT_NE(r.prompt.find("&"), std::string::npos);  // modified ids
}

TEST(CnormStoreFixture, LongBenchMultipleChoice) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_lb");
  auto row = [](const std::string& id, const std::string& diff, const std::string& len,
                const std::string& ans, const std::string& ctx) {
    return nlohmann::json({{"_id", id},
                           {"domain", "Single-Document QA"},
                           {"sub_domain", "story"},
                           {"difficulty", diff},
                           {"length", len},
                           {"question", "Who went to the park?"},
                           {"choice_A", "Tom"},
                           {"choice_B", "Lily"},
                           {"choice_C", "Max"},
                           {"choice_D", "Sue"},
                           {"answer", ans},
                           {"context", ctx}})
               .dump() +
           "\n";
  };
  std::string big;
  for (int i = 0; i < 300; ++i) big += "Lily went to the park and played with a big red ball. ";
  ragform::testing::write_file(
      dir / "lb.jsonl", row("q1", "easy", "short", "B", "Lily went to the park. Tom stayed home.") +
                            row("q2", "hard", "medium", "C", "Max went to the park with mom.") +
                            row("q3", "hard", "long", "B", big));
  // LongBench-v2 is calibrated as its own model-task pair (q3 does not fit and is passed over).
  auto cal = run_ragform(cnorm_calibrate(model,
                                         "--task longbench --input " + quoted(dir / "lb.jsonl") +
                                             " -S 3 --delims 'none,&' --ctx 512 --no-cache",
                                         dir / "p.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  EXPECT_NE(cal.err.find("1 questions passed over"), std::string::npos) << cal.err;
  EXPECT_NE(cal.err.find("only 2 items, S reduced"), std::string::npos) << cal.err;
  auto ev = run_ragform(cnorm_eval(model, dir / "p.json",
                                   "--task longbench --input " + quoted(dir / "lb.jsonl") +
                                       " --ctx 512 -n 12 --store " + quoted(dir / "lb.sqlite")));
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  EXPECT_NE(ev.err.find("1 of 3 questions left out"), std::string::npos) << ev.err;
  auto s = nlohmann::json::parse(ev.out);
  EXPECT_EQ(s["task"], "longbench");
  EXPECT_EQ(s["items"], 2);
  ASSERT_EQ(s["variants"].size(), 3u);
  store::RunStore st(dir / "lb.sqlite", store::RunStore::Mode::read_only);
  auto rows = st.results(std::nullopt);
  ASSERT_EQ(rows.size(), 6u);
  std::map<std::string, double> right;
  for (const auto& r : rows) {
    EXPECT_NE(r.prompt.find("Question: Who went to the park?"), std::string::npos);
    auto x = extract_choice(r.output);
    EXPECT_EQ(*r.correct, x && std::string(1, *x) == r.extra["gold"].get<std::string>());
    right[r.variant] += *r.correct ? 0.5 : 0.0;
  }
  for (const auto& v : s["variants"]) {
    EXPECT_EQ(v["n"], 2);
    EXPECT_DOUBLE_EQ(v["accuracy"].get<double>(), right[v["name"].get<std::string>()]);
    EXPECT_EQ(v["by_difficulty"]["easy"]["n"], 1);
    EXPECT_EQ(v["by_difficulty"]["hard"]["n"], 1);
    EXPECT_EQ(v["by_length"]["medium"]["n"], 1);
    EXPECT_FALSE(v["by_length"].contains("long"));  // q3 did not fit
  }
}

}  // namespace ragform::cnorm
