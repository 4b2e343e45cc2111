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

namespace {

// A LongBench-v2 record of the fixture tests: "Who went to the park?" with four names.
std::string lb_row(const std::string& id, const std::string& diff, const std::string& len,
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
}

// Three questions; q3's context (~6,500 tokens for stories260K) does not fit 512.
void write_lb(const std::filesystem::path& file) {
  std::string big = "At first Tom had a small red ball. ";
  for (int i = 0; i < 300; ++i) big += "Lily went to the park and played with a big red ball. ";
  big += "In the end Sue went home.";
  ragform::testing::write_file(
      file, lb_row("q1", "easy", "short", "B", "Lily went to the park. Tom stayed home.") +
                lb_row("q2", "hard", "medium", "C", "Max went to the park with mom.") +
                lb_row("q3", "hard", "long", "B", big));
}

}  // namespace

// --overflow drop: the behaviour before middle truncation, a question over --ctx is left out.
TEST(CnormStoreFixture, LongBenchMultipleChoice) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_lb");
  write_lb(dir / "lb.jsonl");
  // LongBench-v2 is calibrated as its own model-task pair (q3 does not fit and is passed over).
  auto cal = run_ragform(
      cnorm_calibrate(model,
                      "--task longbench --input " + quoted(dir / "lb.jsonl") +
                          " -S 3 --delims 'none,&' --ctx 512 --no-cache --overflow drop",
                      dir / "p.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  EXPECT_NE(cal.err.find("1 questions passed over"), std::string::npos) << cal.err;
  EXPECT_NE(cal.err.find("only 2 items, S reduced"), std::string::npos) << cal.err;
  auto ev = run_ragform(cnorm_eval(model, dir / "p.json",
                                   "--task longbench --input " + quoted(dir / "lb.jsonl") +
                                       " --ctx 512 -n 12 --overflow drop --store " +
                                       quoted(dir / "lb.sqlite")));
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

// --extract strict (LongBench-v2's pred.py) grades every row with the strict rule and is a run
// of its own; the default (lenient) run resumes; --extract is refused for other tasks and for
// an unknown mode (usage errors, exit 2).
TEST(CnormStoreFixture, LongBenchExtractStrict) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_lb_extract");
  write_lb(dir / "lb.jsonl");
  auto cal = run_ragform(
      cnorm_calibrate(model,
                      "--task longbench --input " + quoted(dir / "lb.jsonl") +
                          " -S 2 --delims 'none,&' --ctx 512 --no-cache --overflow drop",
                      dir / "p.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  const std::string args = "--task longbench --input " + quoted(dir / "lb.jsonl") +
                           " --ctx 512 -n 12 --overflow drop --store " + quoted(dir / "lb.sqlite");
  auto lenient = run_ragform(cnorm_eval(model, dir / "p.json", args));
  ASSERT_EQ(lenient.exit_code, 0) << lenient.err;
  auto strict = run_ragform(cnorm_eval(model, dir / "p.json", args + " --extract strict"));
  ASSERT_EQ(strict.exit_code, 0) << strict.err;
  const auto ls = nlohmann::json::parse(lenient.out), ss = nlohmann::json::parse(strict.out);
  EXPECT_EQ(ls["extract"], "lenient");
  EXPECT_EQ(ss["extract"], "strict");
  EXPECT_NE(ls["run"], ss["run"]);
  auto again = run_ragform(cnorm_eval(model, dir / "p.json", args + " --extract lenient"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["run"], ls["run"]);
  store::RunStore st(dir / "lb.sqlite", store::RunStore::Mode::read_only);
  EXPECT_EQ(st.runs().size(), 2u);
  size_t rows = 0;
  for (const auto& r : st.results(ss["run"].get<int64_t>())) {
    ++rows;
    const auto x = extract_choice(r.output, Extract::Strict);
    EXPECT_EQ(r.extra["extracted"], x ? std::string(1, *x) : std::string()) << r.output;
    EXPECT_EQ(*r.correct, x && std::string(1, *x) == r.extra["gold"].get<std::string>());
  }
  EXPECT_EQ(rows, 6u);
  auto needle = run_ragform(
      cnorm_eval(model, dir / "p.json",
                 "--task needle --extract strict --force --store " + quoted(dir / "n.sqlite")));
  EXPECT_EQ(needle.exit_code, 2) << needle.err;
  EXPECT_NE(needle.err.find("ragform: --extract: applies to --task longbench only"),
            std::string::npos)
      << needle.err;
  auto bad = run_ragform(cnorm_eval(model, dir / "p.json", args + " --extract loose"));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--extract: expected strict or lenient, got 'loose'"), std::string::npos)
      << bad.err;
}

// The default: q3's context loses its middle (LongBench's rule) on stories260K at --ctx 512. Its
// prompts keep the context's first and last sentences, the instruction, question and choices
// whole, and fit with the answer's 12 tokens; the summary, stderr and run metadata count the cut.
TEST(CnormStoreFixture, LongBenchCutsTheMiddleOfALongContext) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_lb_cut");
  write_lb(dir / "lb.jsonl");
  auto cal = run_ragform(cnorm_calibrate(model,
                                         "--task longbench --input " + quoted(dir / "lb.jsonl") +
                                             " -S 3 --delims 'none,&' --ctx 512 --no-cache",
                                         dir / "p.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  EXPECT_EQ(cal.err.find("passed over"), std::string::npos) << cal.err;
  EXPECT_NE(cal.err.find("2 prompts of 1 questions cut in the middle"), std::string::npos)
      << cal.err;
  auto prof = nlohmann::json::parse(read_file(dir / "p.json"));
  EXPECT_EQ(prof["S"], 3);
  EXPECT_EQ(prof["config"]["overflow"], "truncate-middle");
  const std::string args = "--task longbench --input " + quoted(dir / "lb.jsonl") +
                           " --ctx 512 -n 12 --store " + quoted(dir / "lb.sqlite");
  auto ev = run_ragform(cnorm_eval(model, dir / "p.json", args));
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  EXPECT_EQ(ev.err.find("left out"), std::string::npos) << ev.err;
  EXPECT_NE(ev.err.find("cnorm eval: note: 3 prompts of 1 questions cut in the middle of their "
                        "context to fit --ctx 512 tokens"),
            std::string::npos)
      << ev.err;
  auto s = nlohmann::json::parse(ev.out);
  EXPECT_EQ(s["items"], 3);
  EXPECT_EQ(s["left_out"], 0);
  EXPECT_EQ(s["overflow"], "truncate-middle");
  EXPECT_EQ(s["truncated"]["questions"], 1);
  EXPECT_EQ(s["truncated"]["prompts"], 3);
  // ~6,500 tokens cut to ~500: most of the context goes.
  EXPECT_GT(s["truncated"]["tokens_removed"]["mean"].get<double>(), 2000.0);
  for (const auto& v : s["variants"]) EXPECT_EQ(v["by_length"]["long"]["n"], 1);

  store::RunStore st(dir / "lb.sqlite", store::RunStore::Mode::read_only);
  auto runs = st.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].config["overflow"], "truncate-middle");
  EXPECT_EQ(st.run_meta(runs[0].id, "truncation"), s["truncated"]);
  size_t cut = 0;
  for (const auto& r : st.results(std::nullopt)) {
    const std::string tail =
        "\n</text>\n\nQuestion: Who went to the park?\n\nChoices:\n(A) Tom\n(B) Lily\n(C) "
        "Max\n(D) Sue\n\nFormat your response as follows: \"The correct answer is (insert answer "
        "here)\".";
    EXPECT_EQ(r.prompt.rfind("Please read the following text and answer the question below."
                             "\n\n<text>\n",
                             0),
              0u);
    EXPECT_EQ(r.prompt.substr(r.prompt.size() - tail.size()), tail);
    EXPECT_LE(*r.prompt_tokens, 512 - 12) << r.variant;  // counted by the model's own reader
    if (r.instance != "q3") {
      EXPECT_EQ(r.extra["tokens_removed"], 0);
      continue;
    }
    ++cut;
    EXPECT_GT(r.extra["tokens_removed"].get<int>(), 2000);
    EXPECT_GT(*r.prompt_tokens, 512 - 12 - 8) << r.variant;  // the window is used
    if (r.variant == "baseline") {  // unformatted: the sentences as written
      EXPECT_NE(r.prompt.find("<text>\nAt first Tom had a small red ball. Lily went"),
                std::string::npos);
      EXPECT_NE(r.prompt.find("In the end Sue went home.\n</text>"), std::string::npos);
    }
  }
  EXPECT_EQ(cut, 3u);

  // --overflow drop is another run; the cut run resumes.
  auto drop = run_ragform(cnorm_eval(model, dir / "p.json", args + " --overflow drop"));
  ASSERT_EQ(drop.exit_code, 0) << drop.err;
  EXPECT_NE(drop.err.find("1 of 3 questions left out"), std::string::npos) << drop.err;
  auto again = run_ragform(cnorm_eval(model, dir / "p.json", args));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["run"], s["run"]);
  store::RunStore st2(dir / "lb.sqlite", store::RunStore::Mode::read_only);
  EXPECT_EQ(st2.runs().size(), 2u);
  // --overflow applies to longbench only.
  auto needle = run_ragform(
      cnorm_eval(model, dir / "p.json",
                 "--task needle --overflow drop --force --store " + quoted(dir / "n.sqlite")));
  EXPECT_EQ(needle.exit_code, 2) << needle.err;
}

}  // namespace ragform::cnorm
