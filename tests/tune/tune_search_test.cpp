// The search of `ragform tune` against a reader double whose accuracy and robustness depend on the
// presentation by a table (table_reader.h): the planted winner of each objective is found within
// the budget, the budget is never exceeded, a search killed with SIGKILL resumes to the same
// profile and rows, shards merge into the unsharded search, and the plan narrows the field.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "store/run_store.h"
#include "support/test_support.h"
#include "tune/run.h"
#include "tune/table_reader.h"
#include "tune/tune.h"

namespace {

using namespace ragform;
using namespace ragform::tune;
using namespace ragform::tune::search_testing;

TEST(TuneSearch, PlantedWinnerOfEachObjective) {
  Fixture fx;
  ASSERT_EQ(fx.cands.size(), 12u);
  for (auto [obj, want] :
       {std::pair{Objective::Accuracy, fx.w_acc}, std::pair{Objective::Robust, fx.w_rob},
        std::pair{Objective::Balanced, fx.w_bal}}) {
    TableReader tr(fx.cands, fx.dev, fx.table());
    auto dir = ragform::testing::temp_dir(std::string("tune_planted_") + objective_name(obj));
    store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create,
                       store::RunStore::Durability::normal);
    TuneSummary s = run_tune(tr.r, st, fx.options(obj, 120));
    ASSERT_TRUE(s.complete);
    // The search's winner (no held-out split here: the profile deploys the original).
    EXPECT_EQ(s.profile.winner, label(fx.cands[want])) << objective_name(obj);
    EXPECT_EQ(label(s.candidates[s.winner].presentation), label(fx.cands[want]));
    EXPECT_EQ(s.profile.deployed, "original");
    EXPECT_LE(size_t(tr.r.generate_calls), 120u);
    EXPECT_LE(s.spent, 120u);
  }
}

TEST(TuneSearch, AbsObjectivePicksTheMostBalancedAttention) {
  Fixture fx;
  ragform::testing::FakeReader r;
  // Uniform attention (ABS 1) for yaml documents in reversed order, all on the first token
  // (ABS 0) otherwise.
  const size_t want = fx.idx("original", "yaml", Order::Reversed);
  const std::string want_t0 =
      render(fx.dev[0], fx.cands[want], Task::Qa, template_for(Task::Qa)).prompt;
  const std::string want_t1 =
      render(fx.dev[1], fx.cands[want], Task::Qa, template_for(Task::Qa)).prompt;
  r.heads = [&](const std::string& prompt, size_t T) {
    std::vector<float> a(T, 0.0f);
    if (prompt == want_t0 || prompt == want_t1)
      a.assign(T, 1.0f);
    else
      a[0] = 1.0f;
    return std::vector<std::vector<float>>{a};
  };
  auto dir = ragform::testing::temp_dir("tune_abs");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  TuneOptions o = fx.options(Objective::Abs, 24);
  o.search.abs_prompts = 2;
  TuneSummary s = run_tune(r, st, o);
  EXPECT_EQ(s.winner, want);
  EXPECT_EQ(r.attention_calls, 24);
  EXPECT_EQ(r.generate_calls, 0);
}

TEST(TuneSearch, BudgetIsNeverExceededAndTooSmallNamesTheMinimum) {
  Fixture fx;
  SearchParams with_control;
  with_control.control = true;  // the space holds the original presentation: the control arm
  const Plan smallest = plan_with(fx.cands.size(), fx.dev.size(), 1, with_control);
  const size_t minimum = minimum_budget(fx.cands.size(), fx.dev.size(), with_control);
  EXPECT_EQ(minimum, fx.cands.size());  // no ABS (no attention): one record per candidate
  // Below the whole plan the halving is cut short; above it the first rung grows.
  for (size_t budget : {minimum, minimum + 5, smallest.total - 1, smallest.total,
                        smallest.total + 7, size_t(150), size_t(400)}) {
    TableReader tr(fx.cands, fx.dev, fx.table());
    auto dir = ragform::testing::temp_dir("tune_budget_" + std::to_string(budget));
    store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create,
                       store::RunStore::Durability::normal);
    TuneSummary s = run_tune(tr.r, st, fx.options(Objective::Accuracy, budget));
    ASSERT_TRUE(s.complete);
    EXPECT_LE(size_t(tr.r.generate_calls), budget);
    EXPECT_EQ(s.spent, size_t(tr.r.generate_calls));  // every prompt run is counted
    EXPECT_LE(s.spent, s.plan.total);
    EXPECT_EQ(s.plan.truncated, budget < smallest.total) << budget;
  }
  TableReader tr(fx.cands, fx.dev, fx.table());
  auto dir = ragform::testing::temp_dir("tune_budget_small");
  store::RunStore st(dir / "s.sqlite");
  try {
    run_tune(tr.r, st, fx.options(Objective::Accuracy, minimum - 1));
    FAIL() << "a budget below the first rung was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the minimum is --budget " + std::to_string(minimum)),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(tr.r.generate_calls, 0);
}

// The budget line says what happens: a budget above the full grid's cost does not buy the grid
// (the ABS filter and the halving still cut candidates), and the part a largest plan cannot use
// is named as not needed; below the grid it states the grid's cost as before.
TEST(TuneSearch, SpendingLineSaysWhatABudgetOverTheGridDoes) {
  SearchParams sp;
  sp.abs_filter = true;
  sp.robust_items = 1;
  TuneSummary s;  // 2 candidates, 4 dev records: ABS 2 x 2 keeps 1, 1 x 4 answers, 2 pairs
  s.plan = plan_search(2, 4, 30, sp);
  s.budget = 30;
  s.spent = 8;
  s.grid = 12;
  std::string t = spending_text(s, 4);
  EXPECT_EQ(t.find("would cost"), std::string::npos) << t;
  EXPECT_EQ(t,
            "spent 8 of --budget 30 prompts; the budget covers a full grid over the same dev "
            "records (12 prompts), but the search cuts candidates (the ABS filter, halving to "
            "--finalists) instead of measuring them all; the other 22 are not needed: every rung "
            "already answers all 4 dev records");
  sp.abs_filter = false;  // nothing cut: the search was the grid
  s.plan = plan_search(2, 4, 30, sp);
  s.spent = 9;
  EXPECT_EQ(spending_text(s, 4),
            "spent 9 of --budget 30 prompts: the full grid over the same dev records (12 "
            "prompts, less the answers that identical prompts share); the other 21 are not "
            "needed");
  s.plan = plan_search(12, 16, 60, SearchParams{});  // below the grid: its cost, as before
  s.budget = 60;
  s.spent = 58;
  s.grid = 384;
  EXPECT_EQ(spending_text(s, 16),
            "spent 58 of --budget 60 prompts; a full grid over the same dev records would cost "
            "384");
}

// A smaller budget after a larger one resumes with more rows stored than its plan charges: the
// note states both counts, never "N of M measurements" with N > M.
TEST(TuneSearch, ResumeNoteCountsRowsAndThePlanApart) {
  Fixture fx;
  auto dir = ragform::testing::temp_dir("tune_resume_note");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  TuneOptions o = fx.options(Objective::Accuracy, 200);
  TableReader t1(fx.cands, fx.dev, fx.table());
  run_tune(t1.r, st, o);
  const size_t stored = st.done_keys(1).size();
  std::vector<std::string> notes;
  o.hooks.note = [&](const std::string& line) { notes.push_back(line); };
  o.budget = 40;
  TableReader t2(fx.cands, fx.dev, fx.table());
  TuneSummary s = run_tune(t2.r, st, o);
  ASSERT_GT(stored, s.plan.total);
  std::string resumed;
  for (const std::string& n : notes)
    if (n.find("resuming run") != std::string::npos) resumed = n;
  EXPECT_EQ(resumed, "tune: resuming run 1: " + std::to_string(stored) +
                         " rows already stored by earlier invocations (any budget); this "
                         "budget's plan charges at most " +
                         std::to_string(s.plan.total) + " prompts, stored answers included");
}

TEST(TuneSearch, RerunRunsNothingAndALargerBudgetContinues) {
  Fixture fx;
  auto dir = ragform::testing::temp_dir("tune_rerun");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  TuneOptions o = fx.options(Objective::Accuracy, 60);
  o.holdout = qa_records(6, "h");
  std::vector<eval::QaRecord> all = o.dev;
  all.insert(all.end(), o.holdout.begin(), o.holdout.end());
  TableReader t1(fx.cands, all, fx.table());
  TuneSummary a = run_tune(t1.r, st, o);
  TableReader t2(fx.cands, all, fx.table());
  TuneSummary b = run_tune(t2.r, st, o);
  EXPECT_EQ(t2.r.generate_calls, 0);
  EXPECT_EQ(summary_json(a, o).dump(), summary_json(b, o).dump());
  ASSERT_TRUE(a.holdout);
  EXPECT_EQ(a.holdout->items, 6u);
  // A larger budget (without the held-out split, so every prompt is the search's) continues:
  // the first rung's stored answers are reused.
  o.holdout.clear();
  o.budget = 200;
  TableReader t3(fx.cands, all, fx.table());
  TuneSummary c = run_tune(t3.r, st, o);
  EXPECT_GT(c.spent, a.spent);
  EXPECT_LT(size_t(t3.r.generate_calls), c.spent);
  EXPECT_GE(size_t(t3.r.generate_calls) + a.spent, c.spent);
  EXPECT_LE(size_t(t3.r.generate_calls), size_t(200));
}

// WAL with synchronous=NORMAL already keeps every committed row through SIGKILL (run_store.h).
constexpr auto kNormal = store::RunStore::Durability::normal;

// Rows as comparable tuples (run ids and timings aside).
std::set<std::tuple<std::string, std::string, std::string, std::string, int>> rows(
    const store::RunStore& st) {
  std::set<std::tuple<std::string, std::string, std::string, std::string, int>> out;
  for (const auto& r : st.results(std::nullopt))
    out.insert({r.instance, r.variant, r.prompt, r.output, r.correct ? int(*r.correct) : -1});
  return out;
}

TEST(TuneSearch, SigkillResumesToTheSameProfileAndRows) {
  Fixture fx;
  TuneOptions o = fx.options(Objective::Balanced, 150);
  o.holdout = qa_records(4, "h");
  std::vector<eval::QaRecord> all = o.dev;
  all.insert(all.end(), o.holdout.begin(), o.holdout.end());
  auto dir = ragform::testing::temp_dir("tune_sigkill");
  Profile clean;
  {
    store::RunStore st(dir / "clean.sqlite", store::RunStore::Mode::create, kNormal);
    TableReader tr(fx.cands, all, fx.table());
    clean = run_tune(tr.r, st, o).profile;
  }
  for (int kill_after : {1, 37, 90}) {
    const auto path = dir / ("killed" + std::to_string(kill_after) + ".sqlite");
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      store::RunStore st(path, store::RunStore::Mode::create, kNormal);
      TableReader tr(fx.cands, all, fx.table());
      tr.r.answer = [&](const std::string& p) {
        if (tr.r.generate_calls > kill_after) raise(SIGKILL);
        return tr.answer(p);
      };
      run_tune(tr.r, st, o);
      _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << kill_after;
    store::RunStore st(path, store::RunStore::Mode::create, kNormal);
    TableReader tr(fx.cands, all, fx.table());
    Profile resumed = run_tune(tr.r, st, o).profile;
    EXPECT_EQ(resumed.presentation, clean.presentation);
    EXPECT_EQ(resumed.searched, clean.searched);
    store::RunStore ref(dir / "clean.sqlite", store::RunStore::Mode::read_only);
    EXPECT_EQ(rows(st), rows(ref)) << kill_after;
  }
}

TEST(TuneSearch, ShardsMergeIntoTheUnshardedSearch) {
  Fixture fx;
  TuneOptions o = fx.options(Objective::Accuracy, 100);
  auto dir = ragform::testing::temp_dir("tune_shards");
  Profile clean;
  {
    store::RunStore st(dir / "clean.sqlite");
    TableReader tr(fx.cands, fx.dev, fx.table());
    clean = run_tune(tr.r, st, o).profile;
  }
  // Two workers, each on its own store, merged after every phase until the search completes.
  std::vector<std::filesystem::path> stores = {dir / "w0.sqlite", dir / "w1.sqlite"};
  TuneSummary last;
  for (int round = 0; round < 20 && !last.complete; ++round) {
    for (int w = 0; w < 2; ++w) {
      store::RunStore st(stores[w]);
      TuneOptions ow = o;
      ow.shard_index = w;
      ow.shard_count = 2;
      TableReader tr(fx.cands, fx.dev, fx.table());
      last = run_tune(tr.r, st, ow);
    }
    for (int w = 0; w < 2; ++w) {
      store::RunStore st(stores[w]);
      st.merge({stores[1 - w]});
    }
  }
  ASSERT_TRUE(last.complete);
  EXPECT_EQ(last.profile.presentation, clean.presentation);
}

}  // namespace

namespace {

TEST(TuneSearch, FailedRequestsAreUnmeasuredAndRetried) {
  Fixture fx;
  TuneOptions o = fx.options(Objective::Accuracy, 100);
  auto dir = ragform::testing::temp_dir("tune_failures");
  Profile clean;
  {
    store::RunStore st(dir / "clean.sqlite", store::RunStore::Mode::create, kNormal);
    TableReader tr(fx.cands, fx.dev, fx.table());
    clean = run_tune(tr.r, st, o).profile;
  }
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
  {
    TableReader tr(fx.cands, fx.dev, fx.table());
    tr.r.fail_marker = "who is person 0?";  // every candidate's prompt of the first record
    try {
      run_tune(tr.r, st, o);
      FAIL() << "a failed request went unnoticed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("stored as unmeasured"), std::string::npos) << e.what();
    }
    size_t unmeasured = 0;
    for (const auto& r : st.results(std::nullopt))
      unmeasured += r.status == store::Status::unmeasured ? 1 : 0;
    EXPECT_EQ(unmeasured, fx.cands.size());
  }
  TableReader tr(fx.cands, fx.dev, fx.table());
  TuneSummary s = run_tune(tr.r, st, o);
  ASSERT_TRUE(s.complete);
  EXPECT_EQ(s.profile.presentation, clean.presentation);
}

}  // namespace

namespace {

using namespace ragform::tune;

TEST(TuneSearch, ThePlanNarrowsTheFieldToJudgeOnEnoughRecords) {
  SearchParams p;
  p.abs_filter = true;
  p.control = true;
  const Plan wide = plan_search(216, 24, 600, p);
  EXPECT_LT(wide.final_items(), kMinFinalRecords);
  EXPECT_FALSE(wide.narrowed);
  p.narrow_abs_keep = p.narrow_finalists = true;
  const Plan narrow = plan_search(216, 24, 600, p);
  EXPECT_TRUE(narrow.narrowed);
  EXPECT_GE(narrow.final_items(), kMinFinalRecords);
  EXPECT_GE(narrow.first_items, kMinFirstRecords);
  EXPECT_LT(narrow.abs_keep_share, 0.5);
  EXPECT_LE(narrow.total, 600u);
  // A budget that already judges on enough records is not narrowed.
  const Plan rich = plan_search(12, 24, 2000, p);
  EXPECT_FALSE(rich.narrowed);
  EXPECT_GE(rich.final_items(), kMinFinalRecords);
  // Every cut keeps the control beside the others' best: a rung of c keeps 1 + ceil((c-1)/eta).
  for (const Rung& r : narrow.rungs)
    if (&r != &narrow.rungs.back()) {
      EXPECT_EQ(r.keep, 1 + (r.candidates - 1 + 1) / 2);
    }
}

// A reader double whose held-out answers follow their own table: the held-out split confirms
// the winner (deployed), or does not (the original is deployed; --deploy best writes the winner
// from the same rows, measuring nothing new), and a held-out answer the reader failed to give is

}  // namespace

namespace {

// A rung whose records no candidate answers right has nothing to cut on: it grows its sample
// (doubling its dev records, search.h kMaxRungGrowth) until a candidate differs, says so, and
// records it; a rung with signal does not grow. A rerun on the same store measures nothing new
// and grows the same way, with no duplicate row.
TEST(TuneSearch, AFirstRungWithNoSignalGrowsItsRecords) {
  Fixture fx;
  // The winner answers record 4 (its first right answer: frac(5 * 0.618) = 0.09 < 0.1); every
  // other candidate answers nothing.
  std::vector<Planted> silent(fx.cands.size(), Planted{0.0, 0});
  silent[fx.w_acc] = {0.1, 0};
  // 160 prompts: rungs of 12, 7 and 4 candidates on 2, 4 and 8 records, and the robustness check.
  TuneOptions o = fx.options(Objective::Accuracy, 160);
  std::vector<std::string> notes;
  o.hooks.note = [&](const std::string& line) { notes.push_back(line); };
  auto dir = ragform::testing::temp_dir("tune_grow");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
  TableReader tr(fx.cands, fx.dev, silent);
  TuneSummary s = run_tune(tr.r, st, o);
  ASSERT_TRUE(s.complete);
  ASSERT_GE(s.plan.rungs.size(), 2u);
  const size_t first = s.plan.rungs[0].items;
  ASSERT_LE(first, 4u) << "the winner must answer nothing on the first rung";
  ASSERT_GE(s.plan.rungs.back().items, 8u);
  ASSERT_FALSE(s.grown.empty());
  EXPECT_EQ(s.grown[0].rung, 0u);
  EXPECT_EQ(s.grown[0].from, first);
  EXPECT_GE(s.grown[0].to, 5u);  // reaches record 4
  EXPECT_LE(s.grown[0].to, first * kMaxRungGrowth);
  EXPECT_TRUE(s.grown[0].signal);
  EXPECT_EQ(s.grown[0].prompts, s.plan.rungs[0].candidates * (s.grown[0].to - first));
  // The winner was not cut by the tie-breaker: it reaches the final and wins.
  EXPECT_EQ(s.profile.winner, label(fx.cands[fx.w_acc]));
  EXPECT_EQ(s.spent, size_t(tr.r.generate_calls));
  bool noted = false;
  for (const auto& n : notes)
    noted = noted ||
            (n.find("rung 0: every candidate it ranks answered 0 of its") != std::string::npos &&
             n.find("no signal") != std::string::npos);
  EXPECT_TRUE(noted);
  const nlohmann::json j = summary_json(s, o);
  ASSERT_EQ(j["grown"].size(), s.grown.size());
  EXPECT_EQ(j["grown"][0]["rung"], 0);
  EXPECT_EQ(j["grown"][0]["to"], s.grown[0].to);
  EXPECT_NE(
      summary_text(s, o).find("rung 0: " + std::to_string(s.plan.rungs[0].candidates) +
                              " candidates x " + std::to_string(first) +
                              " dev records (no signal: grown to " + std::to_string(s.grown[0].to)),
      std::string::npos)
      << summary_text(s, o);

  // Resumed: nothing new, the same growth, one row per (record, variant).
  const size_t rows = st.results(s.run).size();
  TableReader again(fx.cands, fx.dev, silent);
  TuneSummary s2 = run_tune(again.r, st, o);
  EXPECT_EQ(again.r.generate_calls, 0);
  EXPECT_EQ(st.results(s.run).size(), rows);
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& row : st.results(s.run)) keys.insert({row.instance, row.variant});
  EXPECT_EQ(keys.size(), rows);
  ASSERT_EQ(s2.grown.size(), s.grown.size());
  EXPECT_EQ(s2.grown[0].to, s.grown[0].to);
  EXPECT_EQ(s2.spent, s.spent);
  EXPECT_EQ(s2.profile.winner, s.profile.winner);

  // With signal on the first rung (the winner answers record 0), no rung grows.
  std::vector<Planted> loud = silent;
  loud[fx.w_acc] = {0.95, 0};
  auto dir2 = ragform::testing::temp_dir("tune_no_grow");
  store::RunStore st2(dir2 / "s.sqlite", store::RunStore::Mode::create, kNormal);
  TableReader tr2(fx.cands, fx.dev, loud);
  TuneSummary s3 = run_tune(tr2.r, st2, o);
  ASSERT_TRUE(s3.complete);
  EXPECT_TRUE(s3.grown.empty());
  EXPECT_EQ(s3.plan.rungs[0].items, first);
  EXPECT_EQ(summary_json(s3, o)["grown"].size(), 0u);
}

}  // namespace
