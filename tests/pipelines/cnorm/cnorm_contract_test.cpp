// C-NORM's runners on the runner contract (pipelines/common/common.h): run_calibrate, run_eval and
// run_longbench report each stage through the caller's RunHooks (begin, advance to the stage's
// total, end), store the origin the caller filled with the description and chat mode of the
// reader that answered, and say when they resume a run, in the contract's one wording:
// "<stage>: resuming run N: D of T <what> already stored".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capital_items.h"
#include "pipelines/cnorm/cnorm.h"
#include "support/fake_reader.h"
#include "support/recording_hooks.h"
#include "support/test_support.h"

namespace ragform::cnorm {
namespace {

using ragform::testing::FakeReader;
using testing::capital_items;
using testing::kQaTemplate;

using Recorder = ragform::testing::RecordingHooks;

// The even spread of attention for every prompt; answers with the first document's text.
FakeReader fake() {
  FakeReader r;
  r.name = "fake:contract";
  r.mode = "llama2";
  r.heads = [](const std::string&, size_t T) -> std::vector<std::vector<float>> {
    return {std::vector<float>(T, 1.0f)};
  };
  r.answer = [](const std::string& prompt) {
    const auto docs = testing::document_texts(prompt);
    return docs.empty() ? std::string() : " " + docs.front();
  };
  return r;
}

// The caller's origin: its reader field names another reader than the one given to the runner.
RunOrigin caller_origin() {
  RunOrigin o;
  o.tool_version = "contract-test";
  o.model_path = "m.gguf";
  o.model_sha256 = "abc";
  o.reader = "not the reader that ran";
  o.chat_mode = "none";
  return o;
}

void expect_origin(store::RunStore& st, int64_t run) {
  const auto info = st.run(run);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->tool_version, "contract-test");
  EXPECT_EQ(info->model_path, "m.gguf");
  EXPECT_EQ(info->model_sha256, "abc");
  EXPECT_EQ(info->reader, "fake:contract");
  EXPECT_EQ(info->chat_mode, "llama2");
}

CalibrateOptions calibrate_options(const RunHooks& hooks) {
  CalibrateOptions o;
  o.setup.task = Task::Qa;
  o.setup.tmpl = kQaTemplate;
  o.setup.candidates = parse_delimiter_list("&,-");
  o.setup.p = 1.0;
  o.samples = 2;
  o.k = 3;
  o.origin = caller_origin();
  o.hooks = hooks;
  return o;
}

TEST(CnormContract, CalibrateReportsStoresItsOriginAndResumes) {
  store::RunStore st(ragform::testing::temp_dir("cnorm-contract-cal") / "runs.sqlite");
  FakeReader r = fake();
  Recorder rec;
  const CalibrateSummary first =
      run_calibrate(r, st, capital_items(), calibrate_options(rec.hooks()));
  EXPECT_EQ(rec.steps("begin cnorm calibrate 4"), 4);  // S x F
  EXPECT_TRUE(rec.notes().empty());
  expect_origin(st, first.run);

  Recorder again;
  const CalibrateSummary second =
      run_calibrate(r, st, capital_items(), calibrate_options(again.hooks()));
  EXPECT_EQ(second.run, first.run);
  ASSERT_FALSE(again.notes().empty());
  EXPECT_EQ(again.notes()[0], "cnorm calibrate: resuming run " + std::to_string(first.run) +
                                  ": 4 scored prompts already stored");
}

TEST(CnormContract, EvalReportsEachSeedStoresItsOriginAndResumes) {
  store::RunStore st(ragform::testing::temp_dir("cnorm-contract-eval") / "runs.sqlite");
  FakeReader r = fake();
  EvalOptions o;
  o.task = Task::Qa;
  o.tmpl = kQaTemplate;
  o.profile = run_calibrate(r, capital_items(), calibrate_options({})).profile;
  o.seeds = {1, 2};
  o.k = 3;
  o.max_tokens = 8;
  o.origin = caller_origin();
  Recorder rec;
  o.hooks = rec.hooks();
  const EvalSummary first = run_eval(r, st, {capital_items(), capital_items()}, o);
  // 2 questions x 3 positions x 3 variants per seed, each seed its own stage and run.
  EXPECT_EQ(rec.steps("begin cnorm eval seed 1 18"), 18);
  EXPECT_EQ(rec.steps("begin cnorm eval seed 2 18"), 18);
  ASSERT_EQ(first.per_seed.size(), 2u);
  for (const SeedRun& s : first.per_seed) expect_origin(st, s.run);

  Recorder again;
  o.hooks = again.hooks();
  const EvalSummary second = run_eval(r, st, {capital_items(), capital_items()}, o);
  EXPECT_EQ(second.per_seed[0].run, first.per_seed[0].run);
  // The stored answers count as done steps of the stage.
  EXPECT_EQ(again.steps("begin cnorm eval seed 1 18"), 18);
  const std::vector<std::string> notes = again.notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "cnorm eval seed 1: resuming run " + std::to_string(first.per_seed[0].run) +
                          ": 18 of 18 answers already stored");
  EXPECT_EQ(notes[1], "cnorm eval seed 2: resuming run " + std::to_string(first.per_seed[1].run) +
                          ": 18 of 18 answers already stored");
}

TEST(CnormContract, LongbenchReportsStoresItsOriginAndResumes) {
  store::RunStore st(ragform::testing::temp_dir("cnorm-contract-lb") / "runs.sqlite");
  FakeReader r = fake();
  r.answer = [](const std::string&) { return std::string("The correct answer is (A)"); };
  McItem a;
  a.id = "q1";
  a.question = "Who went home?";
  a.choices = {"the dog", "the cat", "a bird", "no one"};
  a.answer = 'A';
  a.difficulty = "easy";
  a.length = "short";
  a.context = "The dog went home.";
  McItem b = a;
  b.id = "q2";
  LongbenchOptions o;
  o.profile.task = "longbench";
  o.profile.best = {"-", "-"};
  CandidateScore dash;
  dash.delim = o.profile.best;
  o.profile.candidates = {dash};
  o.ctx = 512;
  o.max_tokens = 8;
  o.origin = caller_origin();
  Recorder rec;
  o.hooks = rec.hooks();
  const LongbenchSummary first = run_longbench(r, st, {a, b}, o);
  EXPECT_EQ(rec.steps("begin cnorm eval longbench 6"), 6);  // 2 questions x 3 variants
  expect_origin(st, first.run);

  Recorder again;
  o.hooks = again.hooks();
  const LongbenchSummary second = run_longbench(r, st, {a, b}, o);
  EXPECT_EQ(second.run, first.run);
  const std::vector<std::string> notes = again.notes();
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0], "cnorm eval longbench: resuming run " + std::to_string(first.run) +
                          ": 6 of 6 answers already stored");
}

}  // namespace
}  // namespace ragform::cnorm
