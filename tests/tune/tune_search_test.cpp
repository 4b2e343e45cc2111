// The search of `ragform tune` against a reader double whose accuracy and robustness depend on the
// presentation by a table: the planted winner of each objective is found within the budget, the
// budget is never exceeded, and a search killed with SIGKILL resumes to the same profile and rows.
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
#include "support/fake_reader.h"
#include "support/test_support.h"
#include "tune/run.h"
#include "tune/tune.h"

namespace {

using namespace ragform;
using namespace ragform::tune;

std::vector<eval::QaRecord> qa_records(size_t n, const std::string& tag) {
  std::vector<eval::QaRecord> out;
  for (size_t i = 0; i < n; ++i) {
    eval::QaRecord r;
    r.id = tag + std::to_string(i);
    r.question = "who is person " + std::to_string(i) + "?";
    r.answers = {"Ann" + std::to_string(i)};
    for (size_t d = 0; d < 3; ++d) {
      eval::Context c;
      c.title = "T" + std::to_string(d);
      c.text = d == 1 ? "Ann" + std::to_string(i) + " is the person. She lives in a house."
                      : "Filler " + std::to_string(d) + " text. More filler words here.";
      c.isgold = d == 1;
      r.ctxs.push_back(c);
    }
    out.push_back(r);
  }
  return out;
}

Space small_space() {
  Space s = default_space(Task::Qa);
  set_dimension(s, "delimiter", "original,-");
  set_dimension(s, "p", "1");
  set_dimension(s, "format", "plain,json,yaml");
  set_dimension(s, "order", "retrieved,reversed");
  set_dimension(s, "k", "all");
  set_dimension(s, "spotlight", "off");
  return s;
}

// What the double knows of a candidate: accuracy a (record i is answered right when the
// low-discrepancy point frac((i + 1) * 0.618) < a) and which (record, kind) pairs flip.
struct Planted {
  double acc = 0;
  int flip_mod = 0;  // pair (i, kind) flips when (i + kind) % flip_mod == 0; 0 = never
};

// A FakeReader answering by the table: every prompt the search can render is rendered up front.
struct TableReader {
  ragform::testing::FakeReader r;
  std::map<std::string, std::tuple<size_t, size_t, int>> prompts;  // -> (candidate, record, kind)
  std::vector<Planted> table;
  std::vector<eval::QaRecord> recs;

  TableReader(const std::vector<Presentation>& cands, const std::vector<eval::QaRecord>& records,
              std::vector<Planted> t)
      : table(std::move(t)), recs(records) {
    const std::string tmpl = template_for(Task::Qa);
    for (size_t c = 0; c < cands.size(); ++c)
      for (size_t i = 0; i < recs.size(); ++i) {
        prompts[render(recs[i], cands[c], Task::Qa, tmpl).prompt] = {c, i, -1};
        for (size_t k = 0; k < robustness_kinds().size(); ++k) {
          auto pr = perturbed(recs[i], Task::Qa, robustness_kinds()[k], 0);
          if (pr) prompts[render(*pr, cands[c], Task::Qa, tmpl).prompt] = {c, i, int(k)};
        }
      }
    r.answer = [this](const std::string& prompt) { return answer(prompt); };
  }
  std::string answer(const std::string& prompt) {
    auto it = prompts.find(prompt);
    if (it == prompts.end()) throw Error("table reader", "unknown prompt");
    auto [c, i, kind] = it->second;
    const Planted& p = table[c];
    double x = std::fmod(double(i % 20 + 1) * 0.6180339887, 1.0);
    bool ok = x < p.acc;
    if (kind >= 0 && p.flip_mod && (i + size_t(kind)) % size_t(p.flip_mod) == 0) ok = !ok;
    return ok ? " " + recs[i].answers[0] + "\n" : " nobody\n";
  }
};

struct Fixture {
  std::vector<eval::QaRecord> dev = qa_records(16, "d");
  Space space = small_space();
  std::vector<Presentation> cands = candidates(space, Task::Qa);
  size_t idx(const std::string& delim, const std::string& format, Order o) const {
    for (size_t i = 0; i < cands.size(); ++i)
      if (cands[i].delimiter == delim && cands[i].format == format && cands[i].order == o) return i;
    return size_t(-1);
  }
  // Accuracy winner (-, json, retrieved), robustness winner (original, yaml, reversed), and a
  // balanced one (-, plain, reversed): accurate and robust enough for a 0.75 floor.
  size_t w_acc = idx("-", "json", Order::Retrieved);
  size_t w_rob = idx("original", "yaml", Order::Reversed);
  size_t w_bal = idx("-", "plain", Order::Reversed);
  std::vector<Planted> table() const {
    std::vector<Planted> t(cands.size(), Planted{0.1, 0});
    t[w_acc] = {0.95, 2};  // flips half the pairs: robustness 0.5
    t[w_bal] = {0.88, 5};  // flips about a fifth: robustness about 0.8
    t[w_rob] = {0.8, 0};   // never flips: robustness 1
    return t;
  }
  TuneOptions options(Objective obj, size_t budget) const {
    TuneOptions o;
    o.task = Task::Qa;
    o.tmpl = template_for(Task::Qa);
    o.dev = dev;
    o.space = space;
    o.objective = obj;
    o.robust_floor = 0.75;
    o.budget = budget;
    o.max_tokens = 8;
    return o;
  }
};

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

// The context cap: candidates over the context are dropped before the search, the original
// presentation falls back to the largest k that fits, and held-out records that fit under
// neither side are left out of the paired comparison.
TEST(TuneSearch, ContextCapsCandidatesBaselineAndHoldout) {
  Fixture fx;
  fx.space.ks = {0, 2};
  fx.cands = candidates(fx.space, Task::Qa);
  TuneOptions o = fx.options(Objective::Accuracy, 200);
  o.space = fx.space;
  o.holdout = qa_records(5, "h");
  o.holdout[2].ctxs[0].text += std::string(4000, 'x');  // too long for any presentation
  std::vector<eval::QaRecord> all = o.dev;
  all.insert(all.end(), o.holdout.begin(), o.holdout.end());
  TableReader tr(fx.cands, all, std::vector<Planted>(fx.cands.size(), Planted{0.5, 0}));
  // One token per byte: k = all (3 documents) is over a context that 2 documents fit.
  const std::string tmpl = template_for(Task::Qa);
  Presentation two = original_presentation(), three = original_presentation();
  two.k = 2;
  o.ctx = (render(o.dev[0], two, Task::Qa, tmpl).prompt.size() +
           render(o.dev[0], three, Task::Qa, tmpl).prompt.size()) /
          2;
  auto dir = ragform::testing::temp_dir("tune_context");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
  TuneSummary s = run_tune(tr.r, st, o);
  EXPECT_GT(s.dropped_for_context, 0u);
  for (const auto& c : s.candidates) EXPECT_EQ(c.presentation.k, 2u) << label(c.presentation);
  ASSERT_TRUE(s.holdout);
  EXPECT_EQ(s.holdout->items, 4u);
  EXPECT_EQ(s.holdout->original.label,
            "delim=original,format=plain,order=retrieved,k=2,spotlight=off");
}

}  // namespace

namespace {

// The context cap's messages name the real cause: the cap's source (not always --ctx), the
// shortest prompt that did not fit with its record and tokens, a record that no candidate fits,
// and --max-tokens that leaves no room at all (it was "N of N candidates dropped ... use smaller
// k values" for each).
TEST(TuneSearch, ContextCapMessagesNameTheCause) {
  Fixture fx;
  TuneOptions o = fx.options(Objective::Accuracy, 200);
  o.ctx_source = "the model file's context_length 2048";
  std::vector<std::string> notes;
  o.hooks.note = [&](const std::string& line) { notes.push_back(line); };
  auto dir = ragform::testing::temp_dir("tune_context_cause");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
  auto error_of = [&](const TuneOptions& opt) -> std::string {
    TableReader tr(fx.cands, opt.dev, fx.table());
    try {
      run_tune(tr.r, st, opt);
    } catch (const UsageError& e) {
      EXPECT_EQ(tr.r.generate_calls, 0);
      return e.what();
    }
    return "";
  };
  // --max-tokens as large as the context: an OptionError naming the key (each front end spells it).
  o.ctx = 8;
  std::string e = error_of(o);
  EXPECT_EQ(e.rfind("max_tokens: ", 0), 0u) << e;
  EXPECT_NE(e.find("8 answer tokens leave no room for a prompt in the 8-token context (the "
                   "model file's context_length 2048)"),
            std::string::npos)
      << e;
  // One record longer than every candidate's prompts can be: named, with its shortest prompt.
  o.dev[3].ctxs[0].text += std::string(3000, 'x');
  o.ctx = 1500;
  notes.clear();
  e = error_of(o);
  EXPECT_NE(e.find("record d3 fits under no candidate of the space, every other dev record does "
                   "(its shortest prompt, under "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(" answer tokens > 1500)"), std::string::npos) << e;
  EXPECT_EQ(e.find("use smaller k values"), std::string::npos) << e;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find(" of " + std::to_string(fx.cands.size()) +
                          " candidates dropped: their prompts exceed the 1500-token context (the "
                          "model file's context_length 2048) with the answer on a dev record (the "
                          "shortest: "),
            std::string::npos)
      << notes[0];
  EXPECT_EQ(notes[0].find("(--ctx)"), std::string::npos) << notes[0];
  // Every record over the cap: no record is blamed, the shortest overflow is named.
  o.ctx = 100;
  e = error_of(o);
  EXPECT_NE(e.find("no candidate of the space fits the 100-token context (the model file's "
                   "context_length 2048) on every dev record (the shortest prompt over it: "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(" on record d0, "), std::string::npos) << e;
}

// Order edges puts the best document first and the second best last: with k = 2 it is the
// retrieved order, so every edges candidate aliases a retrieved one. Each rendered prompt is
// measured once, charged once against the budget, and the aliases are reported.
TEST(TuneSearch, AliasesAreMeasuredOnceAndChargedOnce) {
  Fixture fx;
  set_dimension(fx.space, "format", "plain,json");
  set_dimension(fx.space, "order", "retrieved,edges");
  set_dimension(fx.space, "k", "2");
  fx.cands = candidates(fx.space, Task::Qa);
  ASSERT_EQ(fx.cands.size(), 8u);
  // Four distinct candidates, and the original presentation (k all: the space lacks it) joins
  // them as the control arm.
  SearchParams with_control;
  with_control.control = true;
  const size_t minimum = minimum_budget(5, fx.dev.size(), with_control);
  std::vector<Presentation> rendered = fx.cands;
  rendered.push_back(original_presentation());
  for (size_t budget : {minimum, size_t(30), size_t(100)}) {
    TableReader tr(rendered, fx.dev, std::vector<Planted>(rendered.size(), Planted{0.5, 3}));
    std::map<std::string, int> asked;
    tr.r.answer = [&](const std::string& prompt) {
      ++asked[prompt];
      return tr.answer(prompt);
    };
    TuneOptions o = fx.options(Objective::Accuracy, budget);
    o.space = fx.space;
    auto dir = ragform::testing::temp_dir("tune_alias_" + std::to_string(budget));
    store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
    TuneSummary s = run_tune(tr.r, st, o);
    ASSERT_TRUE(s.complete);
    EXPECT_EQ(s.candidates.size(), 5u);
    EXPECT_TRUE(s.control_added);
    ASSERT_EQ(s.aliases.size(), 4u);
    for (const auto& [p, of] : s.aliases) {
      EXPECT_EQ(p.order, Order::Edges);
      EXPECT_EQ(s.candidates[of].presentation.order, Order::Retrieved);
    }
    for (const auto& [prompt, n] : asked) EXPECT_EQ(n, 1) << "measured twice:\n" << prompt;
    EXPECT_EQ(s.spent, size_t(tr.r.generate_calls));
    EXPECT_LE(s.spent, budget);
    const auto j = summary_json(s, o);
    EXPECT_EQ(j["aliases"].size(), 4u);
    EXPECT_EQ(j["candidates"], 5);
    EXPECT_EQ(j["main_effects"]["order"]["edges"], j["main_effects"]["order"]["retrieved"]);
    EXPECT_NE(summary_text(s, o).find("4 aliases"), std::string::npos) << summary_text(s, o);
  }
}

}  // namespace

namespace {

// A reader without attention (an OpenAI server other than ragform serve) still runs the search:
// the ABS filter is skipped with a note, and the output says so.
TEST(TuneSearch, AbsFilterSkippedWithANoteWithoutAttention) {
  Fixture fx;
  TableReader tr(fx.cands, fx.dev, fx.table());
  TuneOptions o = fx.options(Objective::Accuracy, 120);
  o.search.abs_filter = true;
  std::vector<std::string> notes;
  o.hooks.note = [&](const std::string& line) { notes.push_back(line); };
  auto dir = ragform::testing::temp_dir("tune_abs_skipped");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
  TuneSummary s = run_tune(tr.r, st, o);
  ASSERT_TRUE(s.complete);
  EXPECT_EQ(tr.r.attention_calls, 0);
  EXPECT_EQ(s.plan.abs_cost, 0u);
  bool noted = false;
  for (const auto& n : notes) noted = noted || n.find("ABS filter is skipped") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(summary_json(s, o)["abs_filter"], "skipped: no attention");
  EXPECT_NE(summary_text(s, o).find("filter skipped"), std::string::npos);
}

}  // namespace

namespace {

// The ABS pass scores the same prompts the rungs then answer: an ABS row (no answer) must not
// stand in for an answer.
TEST(TuneSearch, AbsFilterThenEveryRungAnswers) {
  Fixture fx;
  TableReader tr(fx.cands, fx.dev, fx.table());
  tr.r.heads = [](const std::string&, size_t T) {
    return std::vector<std::vector<float>>{std::vector<float>(T, 1.0f)};
  };
  TuneOptions o = fx.options(Objective::Accuracy, 150);
  o.search.abs_filter = true;
  auto dir = ragform::testing::temp_dir("tune_abs_then_rungs");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
  // The ABS rows are in the store before the search that answers (a search stopped after its
  // ABS pass, resumed): loaded rows must not stand in for answers either.
  TuneOptions abs_only = o;
  abs_only.objective = Objective::Abs;
  abs_only.budget = 24;
  run_tune(tr.r, st, abs_only);
  tr.r.attention_calls = 0;
  TuneSummary s = run_tune(tr.r, st, o);
  ASSERT_TRUE(s.complete);
  EXPECT_EQ(tr.r.attention_calls, 0);  // the ABS pass was stored
  EXPECT_GT(tr.r.generate_calls, 0);
  EXPECT_EQ(s.spent, size_t(tr.r.generate_calls) + s.plan.abs_cost);
  for (const auto& c : s.candidates)
    if (c.dropped_at != "abs") {
      EXPECT_GT(c.score.n, 0u) << label(c.presentation);
    }
  EXPECT_EQ(s.profile.winner, label(fx.cands[fx.w_acc]));
}

}  // namespace

namespace {

// The original presentation is the control arm: it loses every rung (accuracy 0, the lowest ABS)
// and still reaches the final comparison, measured on the final rung's records like the others.
TEST(TuneSearch, ControlArmReachesTheFinalWhenItLosesEarlyRungs) {
  Fixture fx;
  const size_t control = fx.idx("original", "plain", Order::Retrieved);
  std::vector<Planted> table = fx.table();
  table[control] = {0.0, 0};
  for (bool abs : {false, true}) {
    TableReader tr(fx.cands, fx.dev, table);
    const std::string t0 =
        render(fx.dev[0], fx.cands[control], Task::Qa, template_for(Task::Qa)).prompt;
    const std::string t1 =
        render(fx.dev[1], fx.cands[control], Task::Qa, template_for(Task::Qa)).prompt;
    tr.r.heads = [&](const std::string& prompt, size_t T) {
      std::vector<float> a(T, 1.0f);
      if (prompt == t0 || prompt == t1) a.assign(T, 0.0f), a[0] = 1.0f;  // ABS 0: the worst
      return std::vector<std::vector<float>>{a};
    };
    TuneOptions o = fx.options(Objective::Accuracy, 150);
    o.search.abs_filter = abs;
    o.search.finalists = 2;
    auto dir = ragform::testing::temp_dir(std::string("tune_control_") + (abs ? "abs" : "plain"));
    store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
    TuneSummary s = run_tune(tr.r, st, o);
    ASSERT_TRUE(s.complete);
    ASSERT_EQ(s.control, control);
    EXPECT_FALSE(s.control_added);
    ASSERT_GE(s.plan.rungs.size(), 2u) << "the control must survive cuts";
    EXPECT_NE(std::find(s.finalists.begin(), s.finalists.end(), control), s.finalists.end());
    EXPECT_EQ(s.candidates[control].dropped_at, "final");
    EXPECT_TRUE(s.candidates[control].control);
    EXPECT_EQ(s.candidates[control].score.n, s.plan.final_items());
    EXPECT_EQ(s.candidates[control].score.correct, 0u);
    if (!abs) {  // (uniform ABS: the filter keeps the earlier candidates)
      EXPECT_EQ(s.profile.winner, label(fx.cands[fx.w_acc]));
    }
    EXPECT_LE(s.spent, 150u);  // the control's place is in the plan: the budget still holds
    EXPECT_EQ(summary_json(s, o)["control"], label(fx.cands[control]));
    if (abs) {
      EXPECT_LT(*s.candidates[control].score.abs, 0.01);
    }
  }
}

// The plan narrows the field when the winner would rest on fewer than 20 dev records per
// finalist (a stricter ABS filter, then two finalists), and leaves a setting the user gave alone.
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
// unmeasured, not wrong.
TEST(TuneSearch, TheHeldOutSplitDecidesWhatIsDeployed) {
  Fixture fx;
  // Other questions than the dev split's (persons 16-39).
  std::vector<eval::QaRecord> held = qa_records(40, "h");
  held.erase(held.begin(), held.begin() + 16);
  std::vector<eval::QaRecord> all = fx.dev;
  all.insert(all.end(), held.begin(), held.end());
  for (bool confirms : {true, false}) {
    std::vector<Planted> t = fx.table();
    TableReader tr(fx.cands, all, t);
    // On held-out records (index >= 16) the winner answers as well as its table says, or as
    // badly as the original presentation.
    std::vector<Planted> held_table = t;
    if (!confirms) held_table[fx.w_acc] = held_table[fx.idx("original", "plain", Order::Retrieved)];
    tr.r.answer = [&](const std::string& prompt) {
      auto [c, i, kind] = tr.prompts.at(prompt);
      if (i < fx.dev.size()) return tr.answer(prompt);
      const double x = std::fmod(double(i % 20 + 1) * 0.6180339887, 1.0);
      return x < held_table[c].acc ? " " + all[i].answers[0] + "\n" : std::string(" nobody\n");
    };
    TuneOptions o = fx.options(Objective::Accuracy, 120);
    o.holdout = held;
    auto dir = ragform::testing::temp_dir(std::string("tune_deploy_") + (confirms ? "y" : "n"));
    store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
    TuneSummary s = run_tune(tr.r, st, o);
    ASSERT_TRUE(s.complete);
    ASSERT_TRUE(s.holdout);
    EXPECT_EQ(s.profile.winner, label(fx.cands[fx.w_acc]));
    const nlohmann::json j = summary_json(s, o);
    EXPECT_EQ(j["deployed"], confirms ? "tuned" : "original");
    EXPECT_EQ(j["why"], s.deployment.why);
    EXPECT_EQ(j["profile"]["deployed"], j["deployed"]);
    EXPECT_EQ(j["profile"]["why"], j["why"]);
    EXPECT_EQ(j["final_n"], s.plan.final_items());
    EXPECT_NE(s.deployment.why.find("["), std::string::npos) << "the CI: " << s.deployment.why;
    if (confirms) {
      EXPECT_GT(s.holdout->diff_lo, 0);
      EXPECT_EQ(s.profile.presentation, fx.cands[fx.w_acc]);
      EXPECT_NE(s.deployment.why.find("confirms the winner"), std::string::npos);
    } else {
      EXPECT_LE(s.holdout->diff_lo, 0);
      EXPECT_EQ(label(s.profile.presentation),
                label(fx.cands[fx.idx("original", "plain", Order::Retrieved)]));
      EXPECT_NE(s.deployment.why.find("does not confirm"), std::string::npos);
      EXPECT_NE(summary_text(s, o).find("deployed (--deploy confirmed): original"),
                std::string::npos)
          << summary_text(s, o);
      // The other rule on the same store: the same rows, nothing measured, the winner written.
      const int calls = tr.r.generate_calls;
      o.deploy = DeployRule::Best;
      TuneSummary b = run_tune(tr.r, st, o);
      EXPECT_EQ(tr.r.generate_calls, calls);
      EXPECT_EQ(b.new_prompts, 0u);
      EXPECT_EQ(b.profile.presentation, fx.cands[fx.w_acc]);
      EXPECT_EQ(b.profile.deployed, "tuned");
      EXPECT_NE(b.deployment.why.find("--deploy best"), std::string::npos) << b.deployment.why;
    }
  }

  // Two held-out answers of the winner fail: those records are unmeasured and left out of the
  // paired comparison (not wrong answers), the run does not stop, and a rerun retries them.
  TableReader tr(fx.cands, all, fx.table());
  bool fail = true;
  tr.r.answer = [&](const std::string& prompt) {
    auto [c, i, kind] = tr.prompts.at(prompt);
    const size_t h = i - fx.dev.size();
    if (fail && c == fx.w_acc && i >= fx.dev.size() && (h == 3 || h == 4) && kind < 0)
      throw Error("table reader", "the server went away");
    return tr.answer(prompt);
  };
  TuneOptions o = fx.options(Objective::Accuracy, 120);
  o.holdout = held;
  std::vector<std::string> notes;
  o.hooks.note = [&](const std::string& line) { notes.push_back(line); };
  auto dir = ragform::testing::temp_dir("tune_deploy_unmeasured");
  store::RunStore st(dir / "s.sqlite", store::RunStore::Mode::create, kNormal);
  TuneSummary s = run_tune(tr.r, st, o);
  ASSERT_TRUE(s.holdout);
  EXPECT_EQ(s.holdout->unmeasured, 2u);
  EXPECT_EQ(s.holdout->items, held.size() - 2);
  EXPECT_EQ(summary_json(s, o)["holdout"]["unmeasured"], 2);
  bool said = false;
  for (const auto& n : notes) said = said || n.find("not counted as wrong") != std::string::npos;
  EXPECT_TRUE(said);
  fail = false;
  TuneSummary again = run_tune(tr.r, st, o);
  EXPECT_EQ(again.holdout->unmeasured, 0u);
  EXPECT_EQ(again.holdout->items, held.size());
}

}  // namespace
