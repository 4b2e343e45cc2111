// `ragform position-bias` through the real binary on stories260K and on a random-weight model: the
// curve (overall and per layer), its file, its run store (resumed, never recomputed), the qa task
// on records the test writes, and `attention --doc-spans --calibrated` agreeing with the stored
// masses.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/run_store.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;
using namespace ragform::testing;

// Checks the shape of a curve object: k slots, one curve per layer, the overall curve the mean
// of the layers', every mass a share of one attention row.
void expect_curve(const json& c, size_t k, size_t n_layer, size_t prompts) {
  ASSERT_EQ(c["curve"].size(), k) << c.dump();
  ASSERT_EQ(c["layers"].size(), n_layer);
  EXPECT_EQ(c["prompts"], prompts);
  for (size_t s = 0; s < k; ++s) {
    double mean = 0;
    for (size_t l = 0; l < n_layer; ++l) {
      EXPECT_EQ(c["layers"][l]["layer"], l);
      mean += c["layers"][l]["curve"][s].get<double>() / double(n_layer);
    }
    const double m = c["curve"][s].get<double>();
    EXPECT_NEAR(m, mean, 1e-7) << "slot " << s;
    EXPECT_GT(m, 0.0);
    EXPECT_LT(m, 1.0);
  }
}

TEST(PositionBiasCli, NeedleOnStories260KStoresAndResumes) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("position_bias_needle");
  const std::string args = "position-bias -m " + quoted(model) +
                           " --task needle -k 6 --limit 4 --json -o " + quoted(dir / "curve.json") +
                           " --store " + quoted(dir / "run.sqlite");
  auto r = run_ragform(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out);
  expect_curve(c, 6, 5, 4 * 3 * 6);  // stories260K: 5 layers; 4 items x 3 fillers x 6 slots
  EXPECT_EQ(c["task"], "needle");
  EXPECT_EQ(json::parse(read_file(dir / "curve.json")), c);

  ragform::store::RunStore st(dir / "run.sqlite", ragform::store::RunStore::Mode::read_only);
  ASSERT_EQ(st.runs().size(), 1u);
  EXPECT_EQ(st.runs()[0].pipeline, "position-bias");
  const auto rows = st.results(std::nullopt);
  ASSERT_EQ(rows.size(), 72u);
  // Each row keeps its cost as C-NORM calibration's do: the prompt's tokens and the reader's time.
  for (const auto& x : rows) {
    ASSERT_TRUE(x.prompt_tokens) << x.instance << " " << x.variant;
    EXPECT_GT(*x.prompt_tokens, 10) << x.prompt;
    EXPECT_TRUE(x.timings_ms.count("total")) << x.variant;
  }

  // A rerun reads every row from the store and prints the same curve.
  auto again = run_ragform(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("resuming run 1: 72 of 72 prompts already stored"), std::string::npos)
      << again.err;
  EXPECT_EQ(json::parse(again.out), c);

  // One stored prompt through `ragform attention`: the filler's attention at layer 2 is the row's.
  const ragform::store::Result* found = nullptr;
  for (const auto& x : rows)
    if (x.extra["slot"] == 3 && x.extra["filler"] == 0) found = &x;
  ASSERT_NE(found, nullptr);
  const auto& row = *found;
  const std::string filler = "The sky was blue. The grass was green.";
  const size_t at = row.prompt.find(filler);
  ASSERT_NE(at, std::string::npos);
  write_file(dir / "prompt.txt", row.prompt);
  auto a = run_ragform("attention -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                       " --layer 2 --json --doc-spans " + std::to_string(at) + ":" +
                       std::to_string(at + filler.size()));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const json aj = json::parse(a.out);
  // The curve's measure is the paper's mean per token: the row holds the filler's mean.
  EXPECT_NEAR(aj["documents"][0]["mean"].get<double>(), row.scores.at("l2"), 1e-7) << row.prompt;
  const int tokens =
      aj["documents"][0]["token_end"].get<int>() - aj["documents"][0]["token_start"].get<int>();
  EXPECT_NEAR(aj["documents"][0]["mass"].get<double>(), row.scores.at("l2") * tokens, 1e-7);
  // Calibrated with a one-slot curve, the document's attention under the curve's measure minus
  // the curve's layer-2 value: the mass for a curve file without "measure" (sums), the mean for
  // one measured per token.
  write_file(dir / "one.json", R"({"curve":[0.5],"layers":[{"layer":2,"curve":[0.25]}]})");
  write_file(dir / "mean.json",
             R"({"curve":[0.5],"measure":"mean","layers":[{"layer":2,"curve":[0.25]}]})");
  for (const char* curve : {"one.json", "mean.json"}) {
    a = run_ragform("attention -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                    " --layer 2 --json --calibrated --bias " + quoted(dir / curve) +
                    " --doc-spans " + std::to_string(at) + ":" +
                    std::to_string(at + filler.size()));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const double want = std::string(curve) == "one.json" ? aj["documents"][0]["mass"].get<double>()
                                                         : row.scores.at("l2");
    EXPECT_NEAR(json::parse(a.out)["documents"][0]["calibrated"].get<double>(), want - 0.25, 1e-7)
        << curve;
  }
}

TEST(PositionBiasCli, RandomWeightModel) {
  const auto dir = temp_dir("position_bias_random");
  const auto model = dir / "tiny.gguf";
  auto m = run_ragform("make-test-model --shape tiny --type f32 --seed 5 -o " + quoted(model));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  auto r = run_ragform("position-bias -m " + quoted(model) + " --task needle -k 4 --limit 2 -o " +
                       quoted(dir / "curve.json") + " --store " + quoted(dir / "run.sqlite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");  // no --json: the curve goes to the file and the store only
  const json c = json::parse(read_file(dir / "curve.json"));
  expect_curve(c, 4, 2, 2 * 3 * 4);
  ragform::store::RunStore st(dir / "run.sqlite", ragform::store::RunStore::Mode::read_only);
  EXPECT_EQ(st.results(std::nullopt).size(), 24u);
}

TEST(PositionBiasCli, QaTaskOnRecords) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("position_bias_qa");
  std::string lines;
  const char* names[] = {"Lily", "Tom", "Sue", "Ben"};
  for (int i = 0; i < 4; ++i)
    lines += json{{"id", "q" + std::to_string(i)},
                  {"question", "Who had the red ball?"},
                  {"answers", {names[i]}},
                  {"ctxs",
                   {{{"title", "Park"},
                     {"text", std::string(names[i]) + " had the red ball in the park."},
                     {"isgold", true}}}}}
                 .dump() +
             "\n";
  write_file(dir / "qa.jsonl", lines);
  auto r = run_ragform("position-bias -m " + quoted(model) + " --task qa --input " +
                       quoted(dir / "qa.jsonl") + " -k 3 --limit 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_curve(json::parse(r.out), 3, 5, 2 * 3 * 3);
}

TEST(PositionBiasCli, UsageErrors) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const std::string m = " -m " + quoted(model);
  for (const std::string& bad :
       {"position-bias" + m + " --task kv", "position-bias" + m + " --task needle --input x",
        "position-bias" + m + " --task needle -k 0", "position-bias" + m + " --task needle -k 13",
        "attention" + m + " -p 'a b' --calibrated --doc-spans 0:1",
        "attention" + m + " -p 'a b' --bias x.json --doc-spans 0:1",
        "attention" + m + " -p 'a b' --doc-spans 2:1",
        "attention" + m + " -p 'a b' --doc-spans 0:9"}) {
    auto r = run_ragform(bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find("ragform: "), std::string::npos) << r.err;
  }
  // A task it refuses is answered with the tasks it accepts, not C-NORM's whole list (kv and
  // longbench, which it would then refuse).
  for (const std::string task : {"", "kv", "longbench", "nope"}) {
    auto r = run_ragform("position-bias" + m + " --task '" + task + "'");
    EXPECT_EQ(r.exit_code, 2) << task << "\n" << r.err;
    EXPECT_EQ(r.err, "ragform: --task: expected qa or needle, got '" + task + "'\n") << r.err;
  }
  // What a mode does not read is refused, not ignored (issue 40, pass 12: --score ran without a
  // word about --store, --json and --seed, and -o went unused with --rank and --sweep).
  const std::string score = "position-bias" + m + " --score x.jsonl --bias b.json";
  for (const auto& [extra, says] : std::vector<std::pair<std::string, std::string>>{
           {" --store s.sqlite", "--store: does not go with --score"},
           {" --json", "--json: does not go with --score"},
           {" --seed 3", "--seed: does not go with --score"}}) {
    auto r = run_ragform(score + extra);
    EXPECT_EQ(r.exit_code, 2) << extra << "\n" << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  for (const std::string mode : {" --rank x.jsonl --bias b.json", " --sweep --task needle"}) {
    auto r = run_ragform("position-bias" + m + mode + " -o out.json");
    EXPECT_EQ(r.exit_code, 2) << mode << "\n" << r.err;
    EXPECT_NE(r.err.find("-o: goes with the measurement"), std::string::npos) << r.err;
  }
}

}  // namespace
