// The report's steering section, rendered from rows written in the layouts of `ragform
// position-bias` (one row per item, slot and filler: "mass" and "l<L>") and `position-bias --rank`
// (one row per record: "<method>@<k>"); every number checked is computed by hand from the rows.
#include <gtest/gtest.h>

#include "base/error.h"
#include "report/report.h"
#include "report/report_rows.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;

namespace {

store::RunConfig config(const std::string& pipeline, nlohmann::json cfg) {
  store::RunConfig rc;
  rc.pipeline = pipeline;
  rc.config = std::move(cfg);
  rc.tool_version = "test";
  rc.reader = "native:tiny.gguf";
  rc.chat_mode = "raw";
  return rc;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(SteeringSection, BiasCurvesAndRankingRecall) {
  store::RunStore st(ragform::testing::temp_dir("report-steering") / "r.sqlite");
  ragform::testing::RowWriter put{st};
  const int64_t bias = st.begin_run(config("position-bias", {{"task", "needle"}, {"k", 3}}));
  // Two items per slot: slot 0 masses 0.5 and 0.3 (mean 0.4), slot 1 0.1 and 0.1, slot 2 0.7 and
  // 0.5 (mean 0.6); layer 0 carries 2x layer 1 everywhere.
  const double mass[3][2] = {{0.5, 0.3}, {0.1, 0.1}, {0.7, 0.5}};
  for (int s = 0; s < 3; ++s)
    for (int i = 0; i < 2; ++i)
      put(bias, "item" + std::to_string(i), "slot" + std::to_string(s) + "/filler0", std::nullopt,
          {{"mass", mass[s][i]}, {"l0", mass[s][i] * 4 / 3}, {"l1", mass[s][i] * 2 / 3}},
          {{"slot", s}, {"filler", 0}});
  const int64_t rank = st.begin_run(config("position-bias rank", {{"limit", 2}}));
  // Record a: raw finds 1 of 2 golds at k = 1, calibrated 1, bm25 0; record b: 0, 1, 1.
  put(rank, "a", "rank", std::nullopt,
      {{"raw@1", 0.5},
       {"raw@2", 0.5},
       {"calibrated@1", 0.5},
       {"calibrated@2", 1.0},
       {"bm25@1", 0.0},
       {"bm25@2", 0.5}});
  put(rank, "b", "rank", std::nullopt,
      {{"raw@1", 0.0},
       {"raw@2", 0.5},
       {"calibrated@1", 0.5},
       {"calibrated@2", 1.0},
       {"bm25@1", 0.5},
       {"bm25@2", 1.0}});

  report::ReportOptions o;
  report::ReportStats stats;
  const std::string h = report::render_report(st, o, &stats);
  EXPECT_NE(h.find("<section id=\"steering\">"), std::string::npos);
  EXPECT_NE(h.find("href=\"#steering\""), std::string::npos);
  EXPECT_NE(h.find("Bias curve, 3 slots"), std::string::npos);
  EXPECT_NE(h.find("tiny · needle (run 1)"), std::string::npos);
  // The curve as numbers too: slot means 0.4, 0.1, 0.6.
  EXPECT_NE(h.find("<td>1</td><td>tiny · needle</td><td>attention mass</td><td>0.4</td><td>0.1</td>"
                   "<td>0.6</td>"),
            std::string::npos);
  EXPECT_NE(h.find("layer 0"), std::string::npos);
  EXPECT_NE(h.find("layer 1"), std::string::npos);
  // The overall curve and the per-layer chart, both drawn.
  EXPECT_GE(stats.charts, 2u);
  // Recall table: k = 1: raw 0.25, calibrated 0.5, bm25 0.25; k = 2: 0.5, 1, 0.75.
  EXPECT_NE(h.find("<tr><td>1</td><td>0.250</td><td>0.500</td><td>0.250</td></tr>"),
            std::string::npos)
      << h.substr(h.find("recall@k"), 2000);
  EXPECT_NE(h.find("<tr><td>2</td><td>0.500</td><td>1.000</td><td>0.750</td></tr>"),
            std::string::npos);
  // The section's runs are not listed again under "Other runs".
  EXPECT_EQ(count(h, "<section id=\"other\">"), 0u);
}

TEST(SteeringSection, SweepOaaAndAccuracyByPosition) {
  store::RunStore st(ragform::testing::temp_dir("report-steering-sweep") / "r.sqlite");
  ragform::testing::RowWriter put{st};
  const int64_t run =
      st.begin_run(config("position-bias sweep", {{"task", "needle"}, {"share", 0.5}}));
  // Two items, two positions. baseline: position 0 right once of 2, position 1 right twice
  // (OAA 0.75); calibrated: right at position 0 twice, never at 1 (OAA 0.5).
  put(run, "i1", "baseline@0", true, {}, {{"position", 0}});
  put(run, "i2", "baseline@0", false, {}, {{"position", 0}});
  put(run, "i1", "baseline@1", true, {}, {{"position", 1}});
  put(run, "i2", "baseline@1", true, {}, {{"position", 1}});
  put(run, "i1", "calibrated@0", true, {}, {{"position", 0}});
  put(run, "i2", "calibrated@0", true, {}, {{"position", 0}});
  put(run, "i1", "calibrated@1", false, {}, {{"position", 1}});
  put(run, "i2", "calibrated@1", false, {}, {{"position", 1}});
  report::ReportOptions o;
  const std::string h = report::render_report(st, o);
  EXPECT_NE(h.find("Accuracy by gold position, with and without calibration"), std::string::npos);
  // A run without "allocation" in its identity is from before proportional allocation: top.
  EXPECT_NE(h.find("<td>share 0.50</td><td>top</td><td>baseline</td><td>0.750</td>"),
            std::string::npos)
      << h.substr(h.find("OAA"), 1500);
  EXPECT_NE(h.find("<td>share 0.50</td><td>top</td><td>calibrated</td><td>0.500</td>"),
            std::string::npos);
  EXPECT_NE(h.find("Run 1 — tiny · needle, share 0.50 (top)"), std::string::npos);
  // No bias-curve run: the section says so and still shows the sweep.
  EXPECT_NE(h.find("position-bias&#39; run in the store"), std::string::npos)
      << h.substr(h.find("steering"), 800);
}

// A curve measured per token (the paper's measure, values near 1e-4) keeps its digits, is named
// by its measure and gets its own chart beside a summed curve of the same K.
TEST(SteeringSection, PerTokenCurvesKeepTheirDigitsAndTheirMeasure) {
  store::RunStore st(ragform::testing::temp_dir("report-steering-mean") / "r.sqlite");
  ragform::testing::RowWriter put{st};
  const int64_t mean = st.begin_run(
      config("position-bias", {{"task", "qa"}, {"k", 2}, {"layers", {0}}, {"measure", "mean"}}));
  put(mean, "i", "slot0/filler0", std::nullopt, {{"mass", 1.25e-4}, {"l0", 1.25e-4}},
      {{"slot", 0}});
  put(mean, "i", "slot1/filler0", std::nullopt, {{"mass", 2.5e-3}, {"l0", 2.5e-3}}, {{"slot", 1}});
  const int64_t sum =
      st.begin_run(config("position-bias", {{"task", "qa"}, {"k", 2}, {"layers", {0}}}));
  put(sum, "i", "slot0/filler0", std::nullopt, {{"mass", 0.5}, {"l0", 0.5}}, {{"slot", 0}});
  put(sum, "i", "slot1/filler0", std::nullopt, {{"mass", 0.25}, {"l0", 0.25}}, {{"slot", 1}});
  const std::string h = report::render_report(st, report::ReportOptions{});
  EXPECT_NE(h.find("<td>attention per token</td><td>0.000125</td><td>0.0025</td>"),
            std::string::npos)
      << h.substr(h.find("Positional attention bias"), 3000);
  EXPECT_NE(h.find("Bias curve, 2 slots (attention per token)"), std::string::npos);
  EXPECT_NE(h.find("Bias curve, 2 slots (attention mass)"), std::string::npos);
}

// Proportional and top runs at the same share are told apart by their allocation.
TEST(SteeringSection, SweepRunsNameTheirAllocation) {
  store::RunStore st(ragform::testing::temp_dir("report-steering-alloc") / "r.sqlite");
  ragform::testing::RowWriter put{st};
  const int64_t top =
      st.begin_run(config("position-bias sweep", {{"task", "needle"}, {"share", 0.5}}));
  const int64_t prop = st.begin_run(config(
      "position-bias sweep", {{"task", "needle"}, {"share", 0.5}, {"allocation", "proportional"}}));
  put(top, "i1", "calibrated@0", true, {}, {{"position", 0}});
  put(prop, "i1", "calibrated@0", false, {}, {{"position", 0}});
  const std::string h = report::render_report(st, report::ReportOptions{});
  EXPECT_NE(h.find("<td>share 0.50</td><td>top</td><td>calibrated</td><td>1.000</td>"),
            std::string::npos)
      << h.substr(h.find("OAA"), 1500);
  EXPECT_NE(h.find("<td>share 0.50</td><td>proportional</td><td>calibrated</td><td>0.000</td>"),
            std::string::npos);
  EXPECT_NE(h.find("share 0.50 (proportional)"), std::string::npos);
}

// A softmax run (Found in the Middle's allocation) keeps each row's total: it is named by its
// temperature, not by a share it does not use.
TEST(SteeringSection, SoftmaxSweepRunsNameTheirTemperature) {
  store::RunStore st(ragform::testing::temp_dir("report-steering-softmax") / "r.sqlite");
  ragform::testing::RowWriter put{st};
  const int64_t run = st.begin_run(
      config("position-bias sweep",
             {{"task", "qa"}, {"share", 0.5}, {"allocation", "softmax"}, {"temperature", 5e-5}}));
  put(run, "i1", "calibrated@0", true, {}, {{"position", 0}});
  const std::string h = report::render_report(st, report::ReportOptions{});
  EXPECT_NE(h.find("<td>t 5e-05</td><td>softmax</td><td>calibrated</td><td>1.000</td>"),
            std::string::npos)
      << h.substr(h.find("OAA"), 1500);
  EXPECT_NE(h.find("t 5e-05 (softmax)"), std::string::npos);
  const int64_t gold = st.begin_run(
      config("position-bias sweep", {{"task", "qa"}, {"share", 0.5}, {"allocation", "gold"}}));
  put(gold, "i1", "calibrated@0", false, {}, {{"position", 0}});
  const std::string g = report::render_report(st, report::ReportOptions{});
  EXPECT_NE(g.find("<td>oracle</td><td>gold</td><td>calibrated</td><td>0.000</td>"),
            std::string::npos);
  EXPECT_EQ(h.find("share 0.50 (softmax)"), std::string::npos);
}

TEST(SteeringSection, CurveValuesAreTheSlotMeans) {
  store::RunStore st(ragform::testing::temp_dir("report-steering-values") / "r.sqlite");
  ragform::testing::RowWriter put{st};
  const int64_t bias = st.begin_run(config("position-bias", {{"task", "qa"}, {"k", 2}}));
  put(bias, "i", "slot0/filler0", std::nullopt, {{"mass", 0.25}, {"l0", 0.25}}, {{"slot", 0}});
  put(bias, "i", "slot0/filler1", std::nullopt, {{"mass", 0.75}, {"l0", 0.75}}, {{"slot", 0}});
  put(bias, "i", "slot1/filler0", std::nullopt, {{"mass", 0.125}, {"l0", 0.125}}, {{"slot", 1}});
  report::ReportOptions o;
  const std::string a = report::render_report(st, o);
  // Same store with slot 0's masses swapped for their mean: the same chart.
  store::RunStore st2(ragform::testing::temp_dir("report-steering-values2") / "r.sqlite");
  ragform::testing::RowWriter put2{st2};
  const int64_t b2 = st2.begin_run(config("position-bias", {{"task", "qa"}, {"k", 2}}));
  put2(b2, "i", "slot0/filler0", std::nullopt, {{"mass", 0.5}, {"l0", 0.5}}, {{"slot", 0}});
  put2(b2, "i", "slot1/filler0", std::nullopt, {{"mass", 0.125}, {"l0", 0.125}}, {{"slot", 1}});
  const std::string b = report::render_report(st2, o);
  auto svg = [](const std::string& h) {
    const size_t s = h.find("<svg");
    return h.substr(s, h.find("</svg>", s) - s);
  };
  EXPECT_EQ(svg(a), svg(b));
  // A different mean draws a different line.
  store::RunStore st3(ragform::testing::temp_dir("report-steering-values3") / "r.sqlite");
  ragform::testing::RowWriter put3{st3};
  const int64_t b3 = st3.begin_run(config("position-bias", {{"task", "qa"}, {"k", 2}}));
  put3(b3, "i", "slot0/filler0", std::nullopt, {{"mass", 0.25}, {"l0", 0.25}}, {{"slot", 0}});
  put3(b3, "i", "slot1/filler0", std::nullopt, {{"mass", 0.125}, {"l0", 0.125}}, {{"slot", 1}});
  EXPECT_NE(svg(a), svg(report::render_report(st3, o)));
}

}  // namespace

// Issue 40, pass 19: a run whose config holds null reads it as absent (a measure of null is the
// sums of a run stored before the measure existed); one of another type is an error naming the run
// and the key, not the JSON library's "[json.exception.type_error.302] type must be string".
TEST(SteeringSection, AStoredConfigOfAnotherShapeIsNamed) {
  for (const auto& [measure, why] : std::vector<std::pair<nlohmann::json, std::string>>{
           {nullptr, ""}, {5, "run 1's config: 'measure' is number, not the string ragform"}}) {
    store::RunStore st(ragform::testing::temp_dir("report-steering-shape") / "r.sqlite");
    ragform::testing::RowWriter put{st};
    const int64_t run =
        st.begin_run(config("position-bias", {{"task", nullptr}, {"k", 1}, {"measure", measure}}));
    put(run, "item0", "slot0/filler0", std::nullopt, {{"mass", 0.5}}, {{"slot", 0}});
    report::ReportOptions o;
    if (why.empty()) {
      const std::string h = report::render_report(st, o, nullptr);
      EXPECT_NE(h.find("tiny · ?"), std::string::npos);
      EXPECT_NE(h.find("attention mass"), std::string::npos);
      continue;
    }
    try {
      report::render_report(st, o, nullptr);
      ADD_FAILURE() << "accepted a number as the measure";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
    }
  }
}
