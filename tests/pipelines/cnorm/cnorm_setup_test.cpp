// The calibration set-up (setup.h): one validation for the CLI's flags and Python's keywords
// (their names in the messages), the items' seed (needle: its own stream), k (longbench: one
// context), --heads, the ratio lists, and the items of each task.
#include "pipelines/cnorm/setup.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/options.h"
#include "base/stable_hash.h"
#include "eval/datasets.h"
#include "support/test_support.h"

namespace ragform::cnorm {
namespace {

// The message of the UsageError f throws, "" when it throws none.
template <typename F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

CalibrationRequest request(const std::string& task) {
  CalibrationRequest r;
  r.task = task;
  r.delims = "none,-";
  return r;
}

TEST(CnormSetup, PlanFillsTheRunnersOptions) {
  CalibrationRequest r = request("qa");
  r.samples = 4;
  r.k = 7;
  r.seed = 3;
  r.p = 0.25;
  r.heads = "per-head";
  const CalibrationPlan qa = calibration_plan(r);
  EXPECT_EQ(qa.options.samples, 4u);
  EXPECT_EQ(qa.options.k, 7u);
  EXPECT_EQ(qa.item_seed, 3u);
  EXPECT_EQ(qa.options.setup.task, Task::Qa);
  EXPECT_EQ(qa.options.setup.p, 0.25);
  EXPECT_EQ(qa.options.setup.seed, 3u);
  EXPECT_EQ(qa.options.setup.abs.heads, HeadMode::PerHead);
  EXPECT_EQ(qa.options.setup.candidates.size(), 2u);
  EXPECT_EQ(qa.options.setup.tmpl, load_template(Task::Qa, ""));

  // Needle items come from their own stream; longbench prompts hold one context.
  r.task = "needle";
  EXPECT_EQ(calibration_plan(r).item_seed, splitmix64_mix(3));
  EXPECT_EQ(calibration_plan(r).options.k, 7u);
  r.task = "longbench";
  EXPECT_EQ(calibration_plan(r).options.k, 1u);
  EXPECT_EQ(calibration_plan(r).item_seed, 3u);
}

TEST(CnormSetup, HeadsAreMeanPerHeadOrOneIndex) {
  EXPECT_EQ(parse_abs_options(-1, "mean", false, "--heads").heads, HeadMode::Mean);
  const AbsOptions one = parse_abs_options(2, "5", true, "--heads");
  EXPECT_EQ(one.heads, HeadMode::Single);
  EXPECT_EQ(one.head, 5);
  EXPECT_EQ(one.layer, 2);
  EXPECT_TRUE(one.context_span);
  for (const char* bad : {"x", "-1", "+1", " 1", "1,2", "", "99999999999999999999"})
    EXPECT_EQ(usage_error([&] { parse_abs_options(-1, bad, false, "--heads"); }),
              std::string("--heads: expected mean, per-head or one head index, got '") + bad + "'")
        << bad;
}

// Every check names the option by its declared key (CalibrationRequest::visit), which each front
// end spells its way (the CLI's flag, Python's keyword): OptionError carries the key and the why.
std::pair<std::string, std::string> option_error(const CalibrationRequest& r) {
  try {
    calibration_plan(r);
  } catch (const OptionError& e) {
    return {e.key(), e.why()};
  }
  return {};
}

TEST(CnormSetup, ErrorsNameTheOptionsKey) {
  const CalibrationRequest r = request("qa");
  auto with = [&](auto&& set) {
    CalibrationRequest q = r;
    set(q);
    return option_error(q);
  };
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(with([](CalibrationRequest& q) { q.samples = 0; }),
            P("S", "value out of range: 0 (accepted: 1 or more)"));
  EXPECT_EQ(with([](CalibrationRequest& q) { q.k = 0; }),
            P("k", "value out of range: 0 (accepted: 1 or more)"));
  EXPECT_EQ(with([](CalibrationRequest& q) { q.seed = -1; }).first, "seed");
  EXPECT_EQ(with([](CalibrationRequest& q) { q.p = 1.5; }),
            P("p", "value too large: 1.5 (largest accepted: 1)"));
  EXPECT_EQ(
      with([](CalibrationRequest& q) { q.p = std::numeric_limits<double>::quiet_NaN(); }).first,
      "p");
  EXPECT_EQ(with([](CalibrationRequest& q) { q.heads = "max"; }),
            P("heads", "expected mean, per-head or one head index, got 'max'"));
  EXPECT_EQ(with([](CalibrationRequest& q) { q.task = "xx"; }),
            P("task", "expected qa, kv, needle or longbench, got 'xx'"));
  EXPECT_EQ(with([](CalibrationRequest& q) { q.delims = "a,a"; }),
            P("delims", "delimiter 'a' given twice"));
  EXPECT_EQ(with([](CalibrationRequest& q) { q.template_path = "x", q.task = "longbench"; }).first,
            "template");
}

// cnorm eval's plan: the seeds, the positions, the items of each seed cut to the limit.
TEST(CnormSetup, EvalPlanSeedsPositionsAndLimit) {
  Profile prof;
  prof.seed = 5;
  EvalRequest req;
  req.task = "needle";
  req.limit = 3;
  EvalPlan plan = eval_plan(req, prof, {});
  EXPECT_EQ(plan.options.seeds, (std::vector<uint64_t>{5}));  // the profile's seed
  ASSERT_EQ(plan.items.size(), 1u);
  EXPECT_EQ(plan.items[0].size(), 3u);
  EXPECT_EQ(plan.options.max_tokens, 16);
  req.seeds = {"1", "2"};
  req.positions = "natural";
  plan = eval_plan(req, prof, {});
  EXPECT_EQ(plan.options.seeds, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(plan.items.size(), 2u);
  EXPECT_TRUE(plan.options.natural_positions);
  auto key_of = [&](EvalRequest q) {
    try {
      eval_plan(q, prof, {});
    } catch (const OptionError& e) {
      return e.key() + ": " + e.why();
    }
    return std::string();
  };
  EvalRequest bad = req;
  bad.seeds = {"1", "1"};
  EXPECT_EQ(key_of(bad), "seeds: seed 1 given twice");
  bad.seeds = {"-1"};
  EXPECT_EQ(key_of(bad), "seeds: '-1' is not a seed (a whole number >= 0)");
  bad = req;
  bad.positions = "some";
  EXPECT_EQ(key_of(bad), "positions: expected all or natural, got 'some'");
  bad = req;
  bad.max_tokens = 0;
  EXPECT_EQ(key_of(bad), "max_tokens: value out of range: 0 (accepted: 1 or more)");
  bad = req;
  bad.density = "0,2";
  EXPECT_EQ(key_of(bad), "density: '2' is not a number in [0, 1]");
  bad = req;
  bad.task = "longbench";
  EXPECT_EQ(key_of(bad).rfind("task: longbench is", 0), 0u);
}

// A key-value answer is a UUID: 34 of Gemma 3's tokens (digits are one token each). At the qa
// default of 16 every answer was cut and graded wrong (a 10-sample sweep on Gemma: OAA 0.000 for
// every variant); unless told, a kv sweep generates 48, as reproduce's kv-retrieval does.
TEST(CnormSetup, AKvSweepGeneratesEnoughTokensForAUuid) {
  EXPECT_EQ(answer_tokens(Task::Qa), 16);
  EXPECT_EQ(answer_tokens(Task::Kv), 48);
  EXPECT_GE(answer_tokens(Task::Kv), 36 + 2);  // a UUID's characters and its quotes, at worst
  REQUIRE_SHARED(kv_file, "data/lost-in-the-middle/kv-retrieval-75_keys.jsonl.gz");
  eval::LoadOptions lo;
  lo.limit = 2;
  const auto recs = eval::load_qa_file(kv_file.string(), lo).records;
  EvalRequest req;
  req.task = "kv";
  req.limit = 1;
  EvalPlan plan = eval_plan(req, Profile{}, recs);
  EXPECT_EQ(plan.options.max_tokens, 48);
  req.max_tokens = 20;  // a value given is kept
  EXPECT_EQ(eval_plan(req, Profile{}, recs).options.max_tokens, 20);
}

// Pass 22: when every question is left out for want of distractors, the error says so (cnorm eval
// said only "no items", where calibrate's note named the reason).
TEST(CnormSetup, NoItemsSaysWhyEveryQuestionWasLeftOut) {
  std::vector<eval::QaRecord> recs;
  for (int i = 0; i < 3; ++i) {
    eval::QaRecord r;
    r.id = "r" + std::to_string(i);
    r.question = "what is it " + std::to_string(i) + "?";
    r.answers = {"cat"};
    eval::Context c;
    c.id = "c" + std::to_string(i);
    c.title = "t";
    c.text = "the cat sat";
    r.ctxs = {c};
    recs.push_back(r);
  }
  EvalRequest req;
  req.task = "qa";
  req.k = 5;
  try {
    eval_plan(req, Profile{}, recs);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cnorm eval: no items: all 3 questions left out: fewer than k - 1 = 4 other "
              "passages without their answers (first: r0); lower -k");
  }
}

TEST(CnormSetup, GridFormatsAndSearch) {
  CalibrationRequest r = request("qa");
  r.p_grid = "0.5,1";
  r.formats = "json";
  r.search = "halving";
  const CalibrationPlan plan = calibration_plan(r);
  EXPECT_EQ(plan.options.setup.p_grid, (std::vector<double>{0.5, 1.0}));
  EXPECT_EQ(plan.options.setup.wrappers, (std::vector<std::string>{"json"}));
  EXPECT_EQ(plan.options.setup.search, Search::Halving);
  r.p_grid = "0.5,,1";
  EXPECT_EQ(usage_error([&] { calibration_plan(r); }), "p_grid: '' is not a number in [0, 1]");
  r.p_grid = "";
  r.task = "kv";
  EXPECT_EQ(usage_error([&] { calibration_plan(r); }),
            "formats: document formats do not apply to kv");
  r.task = "qa";
  r.formats = "";
  r.search = "random";
  EXPECT_EQ(usage_error([&] { calibration_plan(r); }),
            "search: expected exhaustive or halving, got 'random'");
  EXPECT_EQ(parse_ratio_list("0,0.25,1", "--density"), (std::vector<double>{0, 0.25, 1}));
  EXPECT_EQ(usage_error([] { parse_ratio_list("0,2", "--density"); }),
            "--density: '2' is not a number in [0, 1]");
}

TEST(CnormSetup, ValidatePIsTheOneCheckOfARatio) {
  EXPECT_NO_THROW(validate_p(0.0, "p"));
  EXPECT_NO_THROW(validate_p(1.0, "p"));
  EXPECT_EQ(usage_error([] { validate_p(-0.1, "p"); }), "p: must be in [0, 1], got -0.1");
  // choose_sentences and candidate_list check p the same way.
  EXPECT_EQ(usage_error([] { choose_sentences(3, 2.0, 0); }),
            "cnorm: ratio p: must be in [0, 1], got 2");
  CalibrationSetup s;
  s.candidates = parse_delimiter_list("-");
  s.p_grid = {0.5, 1.25};
  EXPECT_EQ(usage_error([&] { candidate_list(s); }), "cnorm: ratio p: must be in [0, 1], got 1.25");
}

TEST(CnormSetup, TaskItemsOfEachTask) {
  // Needle: generated, n items of k slots (k - 1 distractors), the records not read.
  const std::vector<Item> needle = task_items(Task::Needle, {}, 3, 7, 2);
  ASSERT_EQ(needle.size(), 2u);
  EXPECT_EQ(needle[0].distractors.size(), 2u);
  EXPECT_EQ(needle[0].id, make_needle_items(2, 3, 7)[0].id);
}

}  // namespace
}  // namespace ragform::cnorm
