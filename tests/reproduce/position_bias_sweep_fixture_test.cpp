// `ragform position-bias --sweep` (reproduce/calibrated_sweep.h) on stories260K's needle task: each
// baseline answer is what `ragform generate` gives the stored prompt, each calibrated answer what
// `ragform generate --steer reallocate:S --steer-spans` gives it with the span of the document
// `ragform attention --doc-spans --calibrated` ranks first (mean over the layers), and the
// summary's accuracies are the stored rows'.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "reproduce/sweep_cli.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;
using namespace ragform::testing;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The generated text of `ragform generate --json` with extra flags.
std::string generate(const std::filesystem::path& model, const std::filesystem::path& prompt,
                     const std::string& flags) {
  auto g = run_ragform("generate -m " + quoted(model) + " --file " + quoted(prompt) +
                       " -n 16 --json " + flags);
  EXPECT_EQ(g.exit_code, 0) << g.err;
  return g.exit_code == 0 ? json::parse(g.out)["text"].get<std::string>() : "";
}

TEST(PositionBiasSweep, AnswersAsGenerateDoesWithAndWithoutSteering) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("position_bias_sweep");
  auto c = run_ragform("position-bias -m " + quoted(model) + " --task needle -k 4 --limit 3 -o " +
                       quoted(dir / "curve.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto r = run_ragform("position-bias -m " + quoted(model) +
                       " --task needle --sweep --allocation top --limit 2 --share 0.7 --bias " +
                       quoted(dir / "curve.json") + " --store " + quoted(dir / "run.sqlite") +
                       " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  // K comes from the curve: a different -k is refused.
  auto k5 =
      run_ragform("position-bias -m " + quoted(model) + " --task needle --sweep -k 5 --bias " +
                  quoted(dir / "curve.json") + " --store " + quoted(dir / "k5.sqlite"));
  EXPECT_EQ(k5.exit_code, 2) << k5.err;
  EXPECT_EQ(j["items"], 2);
  EXPECT_EQ(j["k"], 4);
  ASSERT_EQ(j["variants"].size(), 2u);

  ragform::store::RunStore st(dir / "run.sqlite", ragform::store::RunStore::Mode::read_only);
  const auto rows = st.results(std::nullopt);
  ASSERT_EQ(rows.size(), 2u * 4 * 2);
  // Every row keeps its prompt's tokens and the reader's time for it.
  for (const auto& row : rows) {
    EXPECT_GT(row.prompt_tokens.value_or(0), 0) << row.variant;
    EXPECT_GT(row.timings_ms.count("total"), 0u) << row.variant;
  }
  // Accuracy of the calibrated variant at position 3 from the rows.
  double right = 0;
  for (const auto& row : rows)
    if (row.variant == "calibrated@3") right += *row.correct ? 0.5 : 0.0;
  EXPECT_DOUBLE_EQ(j["variants"][1]["accuracy"][3].get<double>(), right);

  // Two rows checked against the commands: one baseline, one calibrated.
  for (const auto& row : rows) {
    if (row.instance != rows[0].instance ||
        (row.variant != "baseline@2" && row.variant != "calibrated@2"))
      continue;
    write_file(dir / "prompt.txt", row.prompt);
    if (row.variant == "baseline@2") {
      EXPECT_EQ(first_line(row.output), first_line(generate(model, dir / "prompt.txt", "")));
      continue;
    }
    const size_t top = row.extra["top"], b = row.extra["span"][0], e = row.extra["span"][1];
    // The top document: highest attention per token (the curve's measure, mean over the five
    // layers) minus the curve at its slot.
    const json curve = json::parse(read_file(dir / "curve.json"));
    std::string spans;
    size_t at = 0;
    for (int d = 0; d < 4; ++d) {  // the needle's documents: two sentences each, joined by ' '
      const size_t dot = row.prompt.find('.', row.prompt.find('.', at) + 1);
      spans += (d ? "," : "") + std::to_string(at) + ":" + std::to_string(dot + 1);
      at = dot + 2;
    }
    const std::vector<double> cal = cli_calibrated(model, dir / "prompt.txt", spans, curve, 5);
    ASSERT_EQ(cal.size(), 4u);
    EXPECT_EQ(top, size_t(std::max_element(cal.begin(), cal.end()) - cal.begin())) << spans;
    EXPECT_EQ(first_line(row.output),
              first_line(generate(model, dir / "prompt.txt",
                                  "--steer reallocate:0.7 --steer-spans " + std::to_string(b) +
                                      ":" + std::to_string(e))));
  }
}

// --positions sweeps a subset of the gold positions (the first and the last, say): its rows are
// the full sweep's rows at those positions, its accuracies the full sweep's there, and it shares
// the full sweep's run; a position outside 1..K or a curve measured with --positions is refused,
// naming the option.
TEST(PositionBiasSweep, APositionSubsetHasTheFullSweepsRowsThere) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("position_bias_sweep_positions");
  auto c = run_ragform("position-bias -m " + quoted(model) + " --task needle -k 4 --limit 2 -o " +
                       quoted(dir / "curve.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto sweep = [&](const std::string& store, const std::string& extra) {
    return run_ragform("position-bias -m " + quoted(model) +
                       " --task needle --sweep --allocation top --limit 2 --bias " +
                       quoted(dir / "curve.json") + " --store " + quoted(dir / store) + " --json" +
                       extra);
  };
  auto full = sweep("full.sqlite", "");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  auto part = sweep("part.sqlite", " --positions 4,1");
  ASSERT_EQ(part.exit_code, 0) << part.err;
  const json jf = json::parse(full.out), jp = json::parse(part.out);
  EXPECT_EQ(jf["positions"], json::array({1, 2, 3, 4}));
  EXPECT_EQ(jp["positions"], json::array({1, 4}));
  for (size_t v = 0; v < 2; ++v) {
    ASSERT_EQ(jp["variants"][v]["accuracy"].size(), 2u);
    EXPECT_EQ(jp["variants"][v]["accuracy"][0], jf["variants"][v]["accuracy"][0]);
    EXPECT_EQ(jp["variants"][v]["accuracy"][1], jf["variants"][v]["accuracy"][3]);
  }
  auto rows_of = [](const std::filesystem::path& path) {
    ragform::store::RunStore st(path, ragform::store::RunStore::Mode::read_only);
    std::map<std::pair<std::string, std::string>, std::tuple<std::string, bool, std::string>> m;
    for (const auto& r : st.results(std::nullopt))
      m[{r.instance, r.variant}] = {r.output, r.correct.value_or(false), r.prompt};
    return m;
  };
  const auto rf = rows_of(dir / "full.sqlite"), rp = rows_of(dir / "part.sqlite");
  EXPECT_EQ(rp.size(), 2u * 2 * 2);  // 2 items x 2 positions x 2 variants
  for (const auto& [key, row] : rp) {
    EXPECT_TRUE(key.second.ends_with("@0") || key.second.ends_with("@3")) << key.second;
    ASSERT_TRUE(rf.count(key)) << key.second;
    EXPECT_EQ(rf.at(key), row) << key.first << " " << key.second;
  }
  // The subset on the full sweep's store: its run, nothing new.
  auto again = sweep("full.sqlite", " --positions 1,4");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["run"], jf["run"]);
  EXPECT_EQ(rows_of(dir / "full.sqlite"), rf);
  // Errors name the option.
  for (const std::string bad :
       {" --positions 0", " --positions 5", " --positions 1,1", " --positions 2,x"}) {
    auto r = sweep("bad.sqlite", bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--positions"), std::string::npos) << r.err;
  }
  auto curve = run_ragform("position-bias -m " + quoted(model) +
                           " --task needle -k 4 --limit 1 --positions 1");
  EXPECT_EQ(curve.exit_code, 2) << curve.err;
  EXPECT_NE(curve.err.find("--positions: goes with the gold-position sweep"), std::string::npos)
      << curve.err;
}

}  // namespace
