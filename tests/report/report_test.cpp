// The HTML report rendered from run stores written with the RunStore API in the layouts the
// pipelines write: every number checked here is computed by hand from the rows below.
#include "report/report.h"

#include <gtest/gtest.h>

#include "report/report_rows.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

store::RunConfig config(const std::string& pipeline) {
  store::RunConfig rc;
  rc.pipeline = pipeline;
  rc.config = {{"note", "<b>&"}};
  rc.tool_version = "test";
  rc.model_path = "/models/tiny.gguf";
  rc.model_sha256 = "0123456789abcdef0123";
  rc.reader = "native";
  rc.chat_mode = "raw";
  return rc;
}

// A new run store in this test's own folder.
store::RunStore fresh_store(const std::string& tag) {
  return store::RunStore(ragform::testing::temp_dir(tag) / "r.sqlite",
                         store::RunStore::Mode::create, store::RunStore::Durability::normal);
}

std::string render(const store::RunStore& st) {
  report::ReportOptions o;
  o.resamples = 50;
  return report::render_report(st, o);
}

}  // namespace

TEST(Report, EmptyStoreSaysSo) {
  store::RunStore st = fresh_store("report-empty");
  std::string h = render(st);
  EXPECT_NE(h.find("no data: the store"), std::string::npos);
  EXPECT_EQ(h.find("<script"), std::string::npos);
}

TEST(Report, CnormCalibrationAndEval) {
  store::RunStore st = fresh_store("report-cnorm");
  ragform::testing::RowWriter put{st};
  int64_t cal = st.begin_run(config("cnorm calibrate"));
  nlohmann::json mass = std::vector<double>{0.5, 0.1, 0, 0, 0, 0, 0, 0, 0.1, 0.3};
  // candidate "-": ABS 0.4 and 0.6 -> mean 0.5, sample sd sqrt(0.02) = 0.1414
  // candidate "none": ABS 0.2 and 0.2 -> mean 0.2, sd 0
  nlohmann::json strip = {{"delimiter", "-"},
                          {"p", 0.5},
                          {"mass_by_position", mass},
                          {"attention", {0.1, 0.7, 0.2}},
                          {"tokens", {"<s>", "a<b", "&c"}}};
  put(cal, "s0", "-", std::nullopt, {{"abs", 0.4}, {"mu", 0.3}}, strip,
      "Document <1> & \"quoted\"");
  put(cal, "s1", "-", std::nullopt, {{"abs", 0.6}, {"mu", 0.7}},
      {{"delimiter", "-"}, {"mass_by_position", mass}});
  put(cal, "s0", "none", std::nullopt, {{"abs", 0.2}, {"mu", 0.1}}, {{"delimiter", ""}});
  put(cal, "s1", "none", std::nullopt, {{"abs", 0.2}, {"mu", 0.1}}, {{"delimiter", ""}});
  int64_t ev = st.begin_run(config("cnorm eval"));
  // baseline: position 0 right, 1 wrong -> OAA 0.5, OPA 1 (best position 1)
  // cnorm: both right -> OAA 1
  put(ev, "q0", "baseline@0", true, {}, {{"variant", "baseline"}, {"gold_position", 0}});
  put(ev, "q0", "baseline@1", false, {}, {{"variant", "baseline"}, {"gold_position", 1}});
  put(ev, "q0", "cnorm@0", true, {}, {{"variant", "cnorm"}, {"position", 0}});
  put(ev, "q0", "cnorm@1", true, {});  // no extra: parsed from the variant key
  report::ReportStats stats;
  report::ReportOptions o;
  std::string h = report::render_report(st, o, &stats);
  EXPECT_EQ(stats.runs, 2u);
  EXPECT_EQ(stats.rows, 8u);
  EXPECT_EQ(stats.charts, 3u);  // ABS bars, Figure 3 lines, accuracy lines
  EXPECT_NE(h.find("<td>0.5000</td><td>0.1414</td><td>f*</td>"), std::string::npos);
  EXPECT_NE(h.find("<td>0.2000</td><td>0.0000</td><td></td>"), std::string::npos);
  // OAA/OPA table rows in the paper's order: Baseline, then C-NORM.
  size_t b = h.find("<td>Baseline</td><td>0.5000</td><td>1.0000</td><td>1</td><td>2</td>");
  size_t c = h.find("<td>C-NORM</td><td>1.0000</td><td>1.0000</td><td>1</td><td>2</td>");
  EXPECT_NE(b, std::string::npos);
  EXPECT_NE(c, std::string::npos);
  EXPECT_LT(b, c);
  // Escaping: the prompt, the tokens and the config.
  EXPECT_NE(h.find("Document &lt;1&gt; &amp; &quot;quoted&quot;"), std::string::npos);
  EXPECT_EQ(h.find("Document <1>"), std::string::npos);
  EXPECT_NE(h.find(">a&lt;b</span>"), std::string::npos);
  EXPECT_NE(h.find("&lt;b&gt;&amp;"), std::string::npos);
  // The strip: 0.7 is the max (full colour), 0.1 -> t = 1/7.
  EXPECT_NE(h.find("background:#e6550d\" title=\"1: 0.7000\""), std::string::npos);
  EXPECT_EQ(count(h, "<svg"), 3u);
  EXPECT_EQ(h.find("<script"), std::string::npos);
  EXPECT_EQ(count(h, "http"), count(h, "http://www.w3.org/2000/svg"))
      << "no URL other than the SVG namespace";
}

// Pass 22: over several seeds OPA is each seed's own, averaged, which the mean curve's highest
// point need not be: the note under the table says so (it said "accuracy at the best position"
// beside an OPA of 1.0 and a mean curve of [0.5, 0.5]).
TEST(Report, CnormOpaOverSeedsSaysWhatItAverages) {
  store::RunStore st = fresh_store("report-cnorm-seeds");
  ragform::testing::RowWriter put{st};
  for (int seed : {1, 2}) {
    store::RunConfig rc = config("cnorm eval");
    rc.seed = seed;
    const int64_t ev = st.begin_run(rc);
    put(ev, "q0", "baseline@0", seed == 1, {}, {{"variant", "baseline"}, {"gold_position", 0}});
    put(ev, "q0", "baseline@1", seed == 2, {}, {{"variant", "baseline"}, {"gold_position", 1}});
  }
  const std::string h = render(st);
  EXPECT_NE(h.find("mean over 2 runs (seeds)"), std::string::npos);
  EXPECT_NE(h.find("<td>Baseline</td><td>0.5000</td><td>1.0000</td>"), std::string::npos);
  EXPECT_NE(h.find("OPA: each seed's accuracy at its own best position, averaged over the "
                   "seeds"),
            std::string::npos);
}

TEST(Report, CnormMissingFieldsDegrade) {
  store::RunStore st = fresh_store("report-cnorm-missing");
  ragform::testing::RowWriter put{st};
  int64_t cal = st.begin_run(config("cnorm calibrate"));
  put(cal, "s0", "-", std::nullopt, {{"abs", 0.4}});  // no mass_by_position
  int64_t ev = st.begin_run(config("cnorm eval"));
  put(ev, "q0", "odd", true);  // neither extra nor a variant@position key
  std::string h = render(st);
  EXPECT_NE(h.find("no data: no extra.mass_by_position"), std::string::npos);
  EXPECT_NE(h.find("no data: no graded &#39;cnorm eval&#39; rows"), std::string::npos);
}

TEST(Report, SureTable1FromStoredRows) {
  store::RunStore st = fresh_store("report-sure");
  ragform::testing::RowWriter put{st};
  int64_t run = st.begin_run(config("sure eval"));
  // Record a: known (closed-book right), golden document; originals right.
  // logic/reverse: a#0 stays right (robust), a#1 becomes wrong (lose) -> RR 50, LR 50, WR 0
  // format/json: a#0 right (robust); b#0 (unknown, noise) original wrong, perturbed right (win)
  put(run, "a", "closed-book", true);
  put(run, "b", "closed-book", false);
  put(run, "a#0", "original", true);
  put(run, "a#1", "original", true);
  put(run, "b#0", "original", false);
  put(run, "a#0", "logic/reverse", true, {}, {{"golden", true}});
  put(run, "a#1", "logic/reverse", false, {}, {{"golden", true}});
  put(run, "a#0", "format/json", true, {}, {{"golden", true}});
  put(run, "b#0", "format/json", true, {}, {{"golden", false}});
  report::ReportStats stats;
  report::ReportOptions o;
  o.resamples = 50;
  std::string h = report::render_report(st, o, &stats);
  EXPECT_EQ(stats.charts, 2u) << "2 categories: bars instead of a radar, plus WR vs LR";
  // Row logic/reverse: K-G LR 50 RR 50 WR 0 over n = 2 pairs; K-N, U-G, U-N empty (n = 0);
  // All 50/50/0 over 2; Org 100 Acc 50.
  EXPECT_NE(h.find("<td>logic/reverse</td><td>50.0</td><td>50.0</td><td>0.0</td><td>2</td>"
                   "<td>–</td><td>–</td><td>–</td><td>0</td><td>–</td><td>–</td><td>–</td>"
                   "<td>0</td><td>–</td><td>–</td><td>–</td><td>0</td>"
                   "<td>50.0</td><td>50.0</td><td>0.0</td><td>2</td><td>100.0</td><td>50.0</td>"),
            std::string::npos)
      << h;
  // format/json: All = 1 robust + 1 win of 2 -> LR 0, RR 50, WR 50; Org 50, Acc 100.
  EXPECT_NE(h.find("<td>0.0</td><td>50.0</td><td>50.0</td><td>2</td><td>50.0</td><td>100.0</td>"),
            std::string::npos);
  // The pairs come first in the drill-down: a#1 turned wrong (lose), b#0 turned right (win).
  EXPECT_LT(h.find("<h3>Instance pairs</h3>"), h.find("<h3>Instances</h3>"));
  EXPECT_NE(h.find("<td>a#1</td><td>logic/reverse</td>"), std::string::npos);
  EXPECT_NE(h.find("right → wrong (C = 1)"), std::string::npos);
  EXPECT_NE(h.find("wrong → right (C = −1)"), std::string::npos);
  // overall over 4 pairs: 2 robust, 1 lose, 1 win.
  EXPECT_NE(h.find("Overall RR 50.0%"), std::string::npos);
}

TEST(Report, SpotlightRecallAndMatches) {
  store::RunStore st = fresh_store("report-spot");
  ragform::testing::RowWriter put{st};
  int64_t run = st.begin_run(config("spotlight eval"));
  nlohmann::json sel = nlohmann::json::array();
  sel.push_back({{"title", "Paris"},
                 {"text", "Paris is the capital of France."},
                 {"R_norm", 1.0},
                 {"category", "definition"},
                 {"gold", true},
                 {"matches",
                  {{{"q", "capital"}, {"c", "capital"}, {"s", 1.0}, {"begin", 13}, {"end", 20}},
                   {{"q", "city"}, {"c", "capita"}, {"s", 0.4}, {"begin", 13}, {"end", 19}},
                   {{"q", "bad"}, {"c", "x"}, {"s", 0.9}, {"begin", 40}, {"end", 45}}}}});
  put(run, "q1", "spotlight", std::nullopt, {{"recall@2", 1.0}, {"recall@6", 1.0}},
      {{"question", "What is the capital?"}, {"selected", sel}});
  put(run, "q1", "lead", std::nullopt, {{"recall@2", 0.5}, {"recall@6", 1.0}});
  put(run, "q2", "spotlight", std::nullopt, {{"recall@2", 0.0}, {"recall@6", 0.5}});
  put(run, "q2", "lead", std::nullopt, {{"recall@2", 0.5}, {"recall@6", 0.5}});
  std::string h = render(st);
  EXPECT_NE(h.find("<td>spotlight</td><td>0.5000</td><td>0.7500</td><td>2</td>"),
            std::string::npos);
  EXPECT_NE(h.find("<td>lead</td><td>0.5000</td><td>0.7500</td><td>2</td>"), std::string::npos);
  // The stronger of two overlapping matches is drawn; the out-of-range one is ignored.
  EXPECT_NE(h.find("Paris is the <mark style=\"background:#e6550d\" title=\"capital → capital  "
                   "s = 1.000\">capital</mark> of France."),
            std::string::npos)
      << h;
  EXPECT_EQ(count(h, "<mark"), 1u);
}
