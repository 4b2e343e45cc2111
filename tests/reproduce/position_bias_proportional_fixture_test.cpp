// `ragform position-bias --sweep` with per-document allocations (reproduce/calibrated_sweep.h):
// softmax (Found in the Middle's eq. 5-6), each calibrated answer what `ragform generate --steer
// redistribute:W1,..,WK --steer-spans` gives the stored prompt; proportional (ragform's variant),
// what `--steer reallocate:S1,..,SK` gives it, each document's share --share split in proportion
// to its calibrated relevance. Relevance from `ragform attention --doc-spans` and the curve.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "reproduce/calibrated_sweep.h"
#include "reproduce/sweep_cli.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace {

using nlohmann::json;
using namespace ragform::testing;
using ragform::reproduce::proportional_shares;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(ProportionalShares, SplitTheShareByPositiveRelevance) {
  EXPECT_EQ(proportional_shares({0.1, -0.2, 0.3, 0.0}, 0.8),
            (std::vector<float>{0.2f, 0.0f, 0.6f, 0.0f}));
  // None positive: an even split.
  EXPECT_EQ(proportional_shares({-0.1, -0.3}, 0.5), (std::vector<float>{0.25f, 0.25f}));
}

TEST(PositionBiasSweep, ProportionalAnswersAsGenerateWithPerSpanShares) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("position_bias_proportional");
  auto c = run_ragform("position-bias -m " + quoted(model) + " --task needle -k 4 --limit 3 -o " +
                       quoted(dir / "curve.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto r = run_ragform("position-bias -m " + quoted(model) +
                       " --task needle --sweep --allocation proportional --limit 1 --share 0.6 "
                       "--bias " +
                       quoted(dir / "curve.json") + " --store " + quoted(dir / "run.sqlite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_ragform("position-bias -m " + quoted(model) +
                        " --task needle --sweep --allocation best --bias " +
                        quoted(dir / "curve.json") + " --store " + quoted(dir / "x.sqlite"))
                .exit_code,
            2);

  ragform::store::RunStore st(dir / "run.sqlite", ragform::store::RunStore::Mode::read_only);
  const auto rows = st.results(std::nullopt);
  ASSERT_EQ(rows.size(), 4u * 2);
  const json curve = json::parse(read_file(dir / "curve.json"));
  int checked = 0;
  for (const auto& row : rows) {
    if (row.variant != "calibrated@1" && row.variant != "calibrated@3") continue;
    write_file(dir / "prompt.txt", row.prompt);
    ASSERT_EQ(row.extra["spans"].size(), 4u);
    const std::string spans = span_list(row.extra["spans"]);
    const std::string shares = number_list(row.extra["shares"]);
    // The calibrated relevance the shares come from (stories260K's five layers).
    const std::vector<double> cal = cli_calibrated(model, dir / "prompt.txt", spans, curve, 5);
    ASSERT_EQ(cal.size(), 4u);
    const std::vector<float> want = proportional_shares(cal, 0.6);
    for (size_t d = 0; d < 4; ++d)
      EXPECT_NEAR(row.extra["shares"][d].get<double>(), want[d], 1e-5) << spans;
    auto g = run_ragform("generate -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                         " -n 16 --json --steer reallocate:" + shares + " --steer-spans " + spans);
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(first_line(row.output), first_line(json::parse(g.out)["text"].get<std::string>()));
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// The paper's allocation, the default (Found in the Middle eq. 4-6): the weights are
// softmax(calibrated / 5e-5) of the per-token relevance, and the answer is what `generate --steer
// redistribute:W1,..,W4 --steer-spans` gives the stored prompt.
TEST(PositionBiasSweep, SoftmaxAnswersAsGenerateWithRedistributedWeights) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("position_bias_softmax");
  auto c = run_ragform("position-bias -m " + quoted(model) + " --task needle -k 4 --limit 3 -o " +
                       quoted(dir / "curve.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const json curve = json::parse(read_file(dir / "curve.json"));
  EXPECT_EQ(curve["measure"], "mean");
  auto r = run_ragform("position-bias -m " + quoted(model) + " --task needle --sweep --limit 1 " +
                       "--bias " + quoted(dir / "curve.json") + " --store " +
                       quoted(dir / "run.sqlite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // --share is proportional's and top's; --temperature softmax's; --measure the curve's.
  for (const std::string bad :
       {" --share 0.5", " --allocation top --temperature 1e-4", " --measure sum"}) {
    auto b = run_ragform("position-bias -m " + quoted(model) + " --task needle --sweep --bias " +
                         quoted(dir / "curve.json") + " --store " + quoted(dir / "x.sqlite") + bad);
    EXPECT_EQ(b.exit_code, 2) << bad << b.err;
  }
  ragform::store::RunStore st(dir / "run.sqlite", ragform::store::RunStore::Mode::read_only);
  const auto rows = st.results(std::nullopt);
  ASSERT_EQ(rows.size(), 4u * 2);
  int checked = 0;
  for (const auto& row : rows) {
    if (row.variant != "calibrated@0" && row.variant != "calibrated@2") continue;
    write_file(dir / "prompt.txt", row.prompt);
    ASSERT_EQ(row.extra["spans"].size(), 4u);
    const std::string spans = span_list(row.extra["spans"]);
    const std::string weights = number_list(row.extra["weights"]);
    const std::vector<double> cal = cli_calibrated(model, dir / "prompt.txt", spans, curve, 5);
    ASSERT_EQ(cal.size(), 4u);
    const double top = *std::max_element(cal.begin(), cal.end());
    double z = 0;
    std::vector<double> want;
    for (size_t d = 0; d < 4; ++d) z += want.emplace_back(std::exp((cal[d] - top) / 5e-5));
    for (size_t d = 0; d < 4; ++d)
      EXPECT_NEAR(row.extra["weights"][d].get<double>(), want[d] / z, 1e-4) << spans;
    auto g =
        run_ragform("generate -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                    " -n 16 --json --steer redistribute:" + weights + " --steer-spans " + spans);
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(first_line(row.output), first_line(json::parse(g.out)["text"].get<std::string>()));
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

// The oracle diagnostic (--allocation gold): the redistribution with all of each row's document
// attention to the gold, what `generate --steer redistribute:0,..,1,..,0` gives the stored prompt.
TEST(PositionBiasSweep, GoldAllocationRedistributesToTheGold) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = temp_dir("position_bias_gold");
  auto c = run_ragform("position-bias -m " + quoted(model) + " --task needle -k 3 --limit 2 -o " +
                       quoted(dir / "curve.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto r = run_ragform("position-bias -m " + quoted(model) +
                       " --task needle --sweep --allocation gold --limit 1 --bias " +
                       quoted(dir / "curve.json") + " --store " + quoted(dir / "run.sqlite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_ragform("position-bias -m " + quoted(model) +
                        " --task needle --sweep --allocation gold --share 0.5 --bias " +
                        quoted(dir / "curve.json") + " --store " + quoted(dir / "x.sqlite"))
                .exit_code,
            2);
  ragform::store::RunStore st(dir / "run.sqlite", ragform::store::RunStore::Mode::read_only);
  int checked = 0;
  for (const auto& row : st.results(std::nullopt)) {
    if (row.variant.rfind("calibrated@", 0) != 0) continue;
    const size_t pos = row.extra["position"];
    std::vector<double> want(3, 0.0);
    want[pos] = 1.0;
    EXPECT_EQ(row.extra["weights"].get<std::vector<double>>(), want);
    write_file(dir / "prompt.txt", row.prompt);
    auto g = run_ragform("generate -m " + quoted(model) + " --file " + quoted(dir / "prompt.txt") +
                         " -n 16 --json --steer redistribute:" + number_list(row.extra["weights"]) +
                         " --steer-spans " + span_list(row.extra["spans"]));
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(first_line(row.output), first_line(json::parse(g.out)["text"].get<std::string>()));
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

// The flags around it: --allocation only with --sweep; per-span shares one per span.
TEST(PositionBiasSweep, AllocationAndPerSpanFlagsAreChecked) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto a = run_ragform("position-bias -m " + quoted(model) +
                       " --task needle -k 3 --limit 1 --allocation top");
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.err.find("--allocation: goes with --sweep"), std::string::npos) << a.err;
  auto g = run_ragform("generate -m " + quoted(model) +
                       " -p 'Once upon a time there was a cat.' -n 2 --steer reallocate:0.2,0.3 "
                       "--steer-spans 0:4");
  EXPECT_EQ(g.exit_code, 2);
  EXPECT_NE(g.err.find("2 per-span shares for 1 spans"), std::string::npos) << g.err;
  auto ok = run_ragform("generate -m " + quoted(model) +
                        " -p 'Once upon a time there was a cat.' -n 2 --steer reallocate:0.2,0.3 "
                        "--steer-spans 0:4,10:14");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
