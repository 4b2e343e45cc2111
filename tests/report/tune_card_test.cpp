// The report's `ragform tune` card, from a run store holding a "tune" run with the summary the
// search stores (run meta "tune_summary", the object `ragform tune --json` prints) and its
// "tune holdout" run: every number below is planted in that summary and found on the page.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "report/report.h"
#include "report/report_rows.h"
#include "report/sections.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;
using nlohmann::json;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

store::RunConfig config(const std::string& pipeline) {
  store::RunConfig rc;
  rc.pipeline = pipeline;
  rc.config = {{"task", "needle"}};
  rc.tool_version = "test";
  rc.model_path = "/models/stories260K.gguf";
  rc.model_sha256 = "0123456789abcdef0123";
  rc.reader = "native";
  rc.chat_mode = "raw";
  return rc;
}

store::RunStore fresh_store(const std::string& tag) {
  return store::RunStore(ragform::testing::temp_dir(tag) / "r.sqlite",
                         store::RunStore::Mode::create, store::RunStore::Durability::normal);
}

json cand(const std::string& label, const std::string& dropped, double acc, long n, double tok,
          json rob) {
  return {{"label", label}, {"dropped_at", dropped}, {"accuracy", acc}, {"n", n},
          {"tokens", tok},  {"robustness", rob},     {"abs", nullptr}};
}

// Five candidates: W the winner (on the front), F a finalist (more robust than W: on the front),
// S short but less accurate (front: fewest tokens), D dominated by W, E dropped at rung 0 and
// dominated by S, A dropped by the ABS filter (no answers: its zeros are not measurements).
json summary(int64_t holdout_run) {
  return {
      {"task", "needle"},
      {"objective", "balanced"},
      {"robust_floor", 0.75},
      {"complete", true},
      {"profile",
       {{"format", "ragform-tune-profile"},
        {"presentation",
         {{"delimiter", "&"}, {"format", "yaml"}, {"order", "edges"}, {"k", 0}, {"spotlight", 0}}},
        {"searched", {"delimiter", "format"}}}},
      {"winner", "W"},
      {"deployed", "tuned"},
      {"why", "the held-out split confirms the winner: <CI [0.1, 0.4]>"},
      {"deploy", "confirmed"},
      {"final_n", 32},
      {"budget", 400},
      {"spent", 377},
      {"grid", 2000},
      {"dropped_for_context", 27},
      {"context", {{"tokens", 512}, {"from", "--ctx"}}},
      {"plan",
       {{"rungs",
         {{{"candidates", 5}, {"items", 8}, {"keep", 3}, {"cost", 40}},
          {{"candidates", 3}, {"items", 32}, {"keep", 2}, {"cost", 72}}}}}},
      {"trajectory",
       {cand("W", "", 0.9, 32, 100, 0.8), cand("F", "final", 0.85, 32, 110, 0.95),
        cand("S", "rung 1", 0.6, 8, 50, nullptr), cand("D", "rung 1", 0.7, 8, 120, nullptr),
        cand("E", "rung 0", 0.5, 8, 60, nullptr), cand("A", "abs", 0, 0, 0, nullptr)}},
      {"main_effects",
       {{"delimiter", {{"&", 0.8}, {"original", 0.55}}},
        {"format", {{"yaml", 0.7}, {"plain", 0.65}}}}},
      {"holdout",
       {{"items", 40},
        {"prompts", 160},
        {"original", {{"label", "O"}, {"accuracy", 0.55}, {"robustness", 0.7}, {"tokens", 98.5}}},
        {"tuned", {{"label", "W"}, {"accuracy", 0.8}, {"robustness", 0.85}, {"tokens", 101.25}}},
        {"diff_ci95", {0.1, 0.4}},
        {"mcnemar_p", 0.0123}}},
      {"run", 1},
      {"holdout_run", holdout_run}};
}

}  // namespace

TEST(TuneCard, ParetoFront) {
  const double nan = NAN;
  // 0: acc .9 tok 100 rob .8; 1: more robust, fewer accurate: kept; 2: fewest tokens: kept;
  // 3: dominated by 0 (robustness unchecked: accuracy and tokens decide); 4: dominated by 2;
  // 5: no accuracy: left out; 6: 0's equal twin: neither dominates the other.
  const std::vector<size_t> front =
      report::pareto_front({0.9, 0.85, 0.6, 0.7, 0.5, nan, 0.9}, {100, 110, 50, 120, 60, 10, 100},
                           {0.8, 0.95, nan, nan, nan, nan, 0.8});
  EXPECT_EQ(front, (std::vector<size_t>{0, 1, 2, 6}));
  // A robust candidate is not dominated by one whose robustness was never checked.
  EXPECT_EQ(report::pareto_front({0.9, 0.8}, {50, 60}, {nan, 0.9}), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(report::pareto_front({0.9, 0.8}, {50, 60}, {0.95, 0.9}), (std::vector<size_t>{0}));
}

TEST(TuneCard, SummaryOnThePage) {
  store::RunStore st = fresh_store("tune-card");
  ragform::testing::RowWriter put{st};
  const int64_t run = st.begin_run(config("tune"));
  const int64_t ho = st.begin_run(config("tune holdout"));
  put(run, "needle-0-0", "acc W", true, {}, json::object(), "the search's prompt");
  put(ho, "needle-9-0", "acc W", true, {}, json::object(), "a held-out prompt");
  st.set_run_meta(run, "tune_summary", summary(ho));
  report::ReportStats stats;
  const std::string h = report::render_report(st, {}, &stats);
  ASSERT_NE(h.find("<section id=\"tune\">"), std::string::npos);
  EXPECT_NE(h.find("<a href=\"#tune\">Tune</a>"), std::string::npos);
  EXPECT_EQ(h.find("id=\"other\""), std::string::npos);  // both runs belong to the card
  // The profile and the spend.
  EXPECT_NE(h.find("<b>377</b> of a budget of 400"), std::string::npos);
  EXPECT_EQ(h.find("had no signal"), std::string::npos);  // no rung grew
  {
    json grown = summary(ho);
    grown["grown"] =
        json::array({{{"rung", 0}, {"from", 4}, {"to", 16}, {"prompts", 60}, {"signal", true}},
                     {{"rung", 1}, {"from", 32}, {"to", 64}, {"prompts", 96}, {"signal", false}}});
    st.set_run_meta(run, "tune_summary", grown);
    const std::string hg = report::render_report(st, {}, nullptr);
    EXPECT_NE(hg.find("Rung 1 had no signal (every candidate it ranked answered alike) and grew "
                      "from 4 to 16 dev records (60 prompts beyond the plan).</p>"),
              std::string::npos)
        << hg;
    EXPECT_NE(hg.find("Rung 2 had no signal (every candidate it ranked answered alike) and grew "
                      "from 32 to 64 dev records (96 prompts beyond the plan): <span "
                      "class=\"muted\">still no signal, so the cut fell to the tie-breaker"),
              std::string::npos);
    st.set_run_meta(run, "tune_summary", summary(ho));
  }
  EXPECT_NE(h.find("would cost 2000"), std::string::npos);
  // A budget that covers the grid: the card says why the search did not run it.
  json covered = summary(ho);
  covered["budget"] = 3000;
  st.set_run_meta(run, "tune_summary", covered);
  const std::string hc = report::render_report(st, {}, nullptr);
  EXPECT_EQ(hc.find("would cost 2000"), std::string::npos);
  EXPECT_NE(hc.find("the budget covered a full grid over the same dev items (2000 prompts), but "
                    "the search cut candidates (ABS filter, halving) instead of measuring them "
                    "all"),
            std::string::npos);
  st.set_run_meta(run, "tune_summary", summary(ho));
  EXPECT_NE(h.find("27 candidates were dropped before the search: their prompts with the answer "
                   "exceed the 512-token context (--ctx)."),
            std::string::npos);
  EXPECT_NE(h.find("<td>order</td><td><code>edges</code></td><td><span class=\"muted\">held"),
            std::string::npos);
  EXPECT_NE(h.find("<td>delimiter</td><td><code>&amp;</code></td><td>searched"), std::string::npos);
  EXPECT_NE(h.find("<td>k</td><td><code>all</code>"), std::string::npos);  // 0 = every document
  EXPECT_NE(h.find("<td>spotlight</td><td><code>off</code>"), std::string::npos);
  // The held-out evaluation.
  EXPECT_NE(h.find("<td>original</td><td><code>O</code></td><td>55.0%</td><td>0.700</td>"
                   "<td>98.5</td>"),
            std::string::npos);
  EXPECT_NE(h.find("<td>tuned</td><td><code>W</code></td><td>80.0%</td><td>0.850</td>"),
            std::string::npos);
  EXPECT_NE(h.find("<b>[10.0, 40.0] points</b>"), std::string::npos);
  EXPECT_NE(h.find("McNemar's p = <b>0.0123</b> over 40 held-out questions (160 prompts"),
            std::string::npos);
  EXPECT_NE(h.find("The interval excludes 0."), std::string::npos);
  // The deploy decision and its reason (escaped), and the records the winner was chosen on.
  EXPECT_NE(h.find("Deployed: <b class=\"ok\">tuned</b> (--deploy confirmed): the held-out split "
                   "confirms the winner: &lt;CI [0.1, 0.4]&gt;. The winner was chosen on 32 dev "
                   "records per finalist."),
            std::string::npos);
  {
    json old = summary(ho);  // stored before the deploy rule
    old.erase("deployed");
    st.set_run_meta(run, "tune_summary", old);
    EXPECT_NE(report::render_report(st, {}, nullptr).find("stored before tune's deploy rule"),
              std::string::npos);
    st.set_run_meta(run, "tune_summary", summary(ho));
  }
  // The trajectory: stages in the search's order, with the number each dropped.
  const size_t abs = h.find(">abs<"), r0 = h.find(">rung 0<"), r1 = h.find(">rung 1<"),
               fin = h.find(">final<"), win = h.find(">winner<");
  ASSERT_NE(abs, std::string::npos);
  EXPECT_LT(abs, r0);
  EXPECT_LT(r0, r1);
  EXPECT_LT(r1, fin);
  EXPECT_LT(fin, win);
  EXPECT_NE(h.find("<td>rung 1</td><td>3</td><td>32</td><td>2</td><td>72</td>"), std::string::npos);
  // The Pareto table lists W, F and S, not D or E.
  const size_t pt = h.find("<th>Pareto candidate</th>");
  ASSERT_NE(pt, std::string::npos);
  const std::string pareto = h.substr(pt, h.find("</table>", pt) - pt);
  EXPECT_EQ(count(pareto, "<tr><td><code>"), 3u) << pareto;
  for (const char* c : {"<code>W</code>", "<code>F</code>", "<code>S</code>"})
    EXPECT_NE(pareto.find(c), std::string::npos) << c;
  EXPECT_NE(h.find("class=\"chart scatter\""), std::string::npos);
  EXPECT_EQ(count(h, "<circle "), 5u);
  // Main effects: one chart per dimension and the spread in points.
  EXPECT_NE(h.find("<td>delimiter</td><td>2</td><td>25.0</td>"), std::string::npos);
  EXPECT_NE(h.find("<td>format</td><td>2</td><td>5.0</td>"), std::string::npos);
  // Drill-down: the rows of both runs.
  EXPECT_NE(h.find("the search&#39;s prompt"), std::string::npos);
  EXPECT_NE(h.find("a held-out prompt"), std::string::npos);
  EXPECT_EQ(stats.sections, 1u);
  EXPECT_EQ(stats.charts, 4u);  // trajectory, Pareto, two main effects
}

TEST(TuneCard, WithoutASummaryItSaysWhy) {
  store::RunStore st = fresh_store("tune-card-nosummary");
  ragform::testing::RowWriter put{st};
  const int64_t run = st.begin_run(config("tune"));
  put(run, "needle-0-0", "acc W", true);
  std::string h = report::render_report(st, {});
  EXPECT_NE(h.find("no data: the search of this run has not completed a pass"), std::string::npos);
  json pending = summary(0);
  pending["complete"] = false;
  pending["pending"] = "shard 1/2 ran its share of rung 0";
  st.set_run_meta(run, "tune_summary", pending);
  h = report::render_report(st, {});
  EXPECT_NE(h.find("no data: the search stopped before it finished: shard 1/2 ran its share of "
                   "rung 0"),
            std::string::npos);
  // No held-out split: the card says so instead of a table of zeros.
  json no_holdout = summary(0);
  no_holdout["holdout"] = nullptr;
  st.set_run_meta(run, "tune_summary", no_holdout);
  h = report::render_report(st, {});
  EXPECT_NE(h.find("no data: the search stored no held-out evaluation"), std::string::npos);
  // A summary that is not an object is a damaged store, said as such, not "not completed"
  // (issue 40, pass 11).
  st.set_run_meta(run, "tune_summary", json::array({1}));
  try {
    report::render_report(st, {});
    ADD_FAILURE() << "a damaged summary was rendered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run " + std::to_string(run) +
                                         ": metadata 'tune_summary' is not an object"),
              std::string::npos)
        << e.what();
  }
}
