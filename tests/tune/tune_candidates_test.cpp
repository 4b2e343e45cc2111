// Which candidates `ragform tune` measures and how it compares the winner, against the reader
// double of table_reader.h: the context cap and its messages, aliases measured once, the ABS
// filter (skipped without attention), the control arm reaching the final comparison, and the
// held-out split deciding what is deployed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "store/run_store.h"
#include "support/test_support.h"
#include "tune/run.h"
#include "tune/run_cells.h"
#include "tune/table_reader.h"
#include "tune/tune.h"

namespace {

using namespace ragform;
using namespace ragform::tune;
using namespace ragform::tune::search_testing;

constexpr auto kNormal = store::RunStore::Durability::normal;

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

// Aliases are candidates that render alike on every dev record and perturbation: k = 1, 2 and 3
// are one prompt on records of one document, and apart as soon as a record has three.
TEST(TuneSearch, AliasesRenderAlikeOnEveryRecord) {
  Fixture fx;
  std::vector<Presentation> ks;
  for (size_t k : {1, 2, 3}) {
    Presentation p = original_presentation();
    p.k = k;
    ks.push_back(p);
  }
  TuneOptions o = fx.options(Objective::Accuracy, 100);
  std::vector<eval::QaRecord> short_recs = qa_records(4, "s");
  for (eval::QaRecord& r : short_recs) r.ctxs.resize(1);
  o.dev = short_recs;
  std::vector<std::pair<Presentation, size_t>> aliases;
  std::vector<Presentation> distinct = tune::detail::without_aliases(o, ks, aliases);
  ASSERT_EQ(distinct.size(), 1u);
  EXPECT_EQ(distinct[0].k, 1u);
  ASSERT_EQ(aliases.size(), 2u);
  EXPECT_EQ(aliases[0].first.k, 2u);
  EXPECT_EQ(aliases[1].first.k, 3u);
  EXPECT_EQ(aliases[1].second, 0u);
  // The last record has all three documents: every k is its own prompt there.
  o.dev.push_back(qa_records(1, "l")[0]);
  aliases.clear();
  EXPECT_EQ(tune::detail::without_aliases(o, ks, aliases).size(), 3u);
  EXPECT_TRUE(aliases.empty());
  // Two documents on the last record: k = 2 and 3 alike, k = 1 apart.
  o.dev.back().ctxs.resize(2);
  aliases.clear();
  distinct = tune::detail::without_aliases(o, ks, aliases);
  ASSERT_EQ(distinct.size(), 2u);
  ASSERT_EQ(aliases.size(), 1u);
  EXPECT_EQ(aliases[0].first.k, 3u);
  EXPECT_EQ(distinct[aliases[0].second].k, 2u);
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
