// SURE's runners on the runner contract (pipelines/common/common.h): run_eval, run_prepare and
// run_perturb on a FakeReader with recording RunHooks — each begins its own run with the origin
// recorded (a resume finds the same run), reports one progress stage (begin, advances adding up to
// its total, end) and, for the perturbations, asks the perturber before the reader under test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipelines/sure/rule_pairs.h"
#include "pipelines/sure/sure.h"
#include "store/run_store.h"
#include "support/fake_reader.h"
#include "support/recording_hooks.h"
#include "support/test_support.h"

namespace ragform::sure {
namespace {

using Recorded = ragform::testing::RecordingHooks;

common::RunOrigin fake_origin(const reader::Reader& r) {
  return common::origin_of(r, "9.9.9 (git test)", "/models/fake.gguf", "abc123");
}

// Two questions, one document each, two rule-based kinds: 2 closed-book, 2 original and 4
// perturbed rows.
std::vector<Pair> two_pairs() {
  return testing::rule_pairs(2, [](int q) {
    return Document{"T", "Thing " + std::to_string(q) + " is answer" + std::to_string(q) + "."};
  });
}

TEST(SureRunnerContract, RunEvalBeginsItsRunRecordsTheOriginAndReportsOneStage) {
  testing::FakeReader rd;
  rd.name = "fake-reader";
  rd.answer = [](const std::string&) { return "answer0"; };
  const PromptSet prompts = load_prompts();
  const auto pairs = two_pairs();
  auto dir = testing::temp_dir("sure-contract-eval");
  store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::create);
  Recorded rec;
  EvalRunOptions opt;
  opt.eval.batch = 3;
  opt.eval.seed = 7;
  opt.origin = fake_origin(rd);
  opt.hooks = rec.hooks();
  const EvalSummary sum = run_eval(rd, st, prompts, pairs, opt);

  ASSERT_EQ(rec.events.front(), "begin sure eval 8");
  EXPECT_EQ(rec.events.back(), "end");
  EXPECT_EQ(rec.advanced, 8u);
  EXPECT_EQ(sum.stats.generated, 8);
  EXPECT_EQ(sum.outcomes.size(), 4u);
  const auto runs = st.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, sum.run);
  EXPECT_EQ(runs[0].pipeline, "sure eval");
  EXPECT_EQ(runs[0].tool_version, "9.9.9 (git test)");
  EXPECT_EQ(runs[0].model_path, "/models/fake.gguf");
  EXPECT_EQ(runs[0].model_sha256, "abc123");
  EXPECT_EQ(runs[0].reader, "fake-reader");
  EXPECT_EQ(runs[0].chat_mode, "raw");
  EXPECT_EQ(runs[0].seed, 7);
  // The identity is eval_run_config's, so every front end resumes the same run.
  EXPECT_EQ(runs[0].config, eval_run_config(opt.eval, prompts, pairs_sha256(pairs)).config);

  // A resume: the same run, said as every runner says it (common::begin_or_resume), nothing to
  // generate (a stage of 0 rows), the same outcomes.
  Recorded again;
  opt.hooks = again.hooks();
  const EvalSummary resumed = run_eval(rd, st, prompts, pairs, opt);
  EXPECT_EQ(resumed.run, sum.run);
  EXPECT_EQ(resumed.stats.generated, 0);
  EXPECT_EQ(resumed.stats.skipped_done, 8);
  EXPECT_EQ(again.events,
            (std::vector<std::string>{"note sure eval: resuming run " + std::to_string(sum.run) +
                                          ": 8 answers already stored",
                                      "begin sure eval 0", "end"}));

  // A tag joins the identity (reproduce's experiments): another run.
  opt.tag["reproduce"] = "table1";
  EXPECT_NE(run_eval(rd, st, prompts, pairs, opt).run, sum.run);
}

TEST(SureRunnerContract, RunPrepareBeginsItsRunWithTheOriginAndTheSeed) {
  testing::FakeReader rd;
  rd.answer = [](const std::string& p) {
    return p.find("thing 0") != std::string::npos ? "answer0" : "no";
  };
  std::vector<eval::QaRecord> recs;
  for (int q = 0; q < 3; ++q) {
    eval::QaRecord r;
    r.id = "q" + std::to_string(q);
    r.question = "what is thing " + std::to_string(q) + "?";
    r.answers = {"answer" + std::to_string(q)};
    eval::Context c;
    c.id = "p" + std::to_string(q);
    c.text = "Thing " + std::to_string(q) + " is answer" + std::to_string(q) + ".";
    r.ctxs.push_back(c);
    recs.push_back(r);
  }
  auto dir = testing::temp_dir("sure-contract-prepare");
  store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::create);
  Recorded rec;
  PrepareOptions o;
  o.batch = 2;
  o.seed = 5;
  o.origin = fake_origin(rd);
  o.hooks = rec.hooks();
  const PromptSet prompts = load_prompts();
  const PrepareSummary s = run_prepare(&rd, st, prompts, recs, o);
  EXPECT_EQ(rec.events,
            (std::vector<std::string>{"begin sure prepare 3", "advance 2", "advance 1", "end"}));
  EXPECT_EQ(s.known, 1u);
  const auto runs = st.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, s.run);
  EXPECT_EQ(runs[0].pipeline, "sure prepare");
  EXPECT_EQ(runs[0].reader, "fake");
  EXPECT_EQ(runs[0].tool_version, "9.9.9 (git test)");
  EXPECT_EQ(runs[0].model_sha256, "abc123");
  EXPECT_EQ(runs[0].seed, 5);
  EXPECT_EQ(runs[0].config, prepare_run_config(o, prompts, recs).config);
  EXPECT_EQ(st.counts(s.run).rows, 3);
  // Resumed: the same run, said as every runner says it, no rows to make.
  Recorded again;
  o.hooks = again.hooks();
  EXPECT_EQ(run_prepare(&rd, st, prompts, recs, o).run, s.run);
  EXPECT_EQ(st.runs().size(), 1u);
  EXPECT_EQ(again.events,
            (std::vector<std::string>{"note sure prepare: resuming run " + std::to_string(s.run) +
                                          ": 3 closed-book answers already stored",
                                      "begin sure prepare 0", "end"}));
}

TEST(SureRunnerContract, RunPerturbAsksThePerturberFirstThenTheReaderUnderTest) {
  std::vector<std::string> asked;  // which reader answered, in order
  testing::FakeReader under_test, perturber;
  under_test.name = "under-test";
  perturber.name = "perturber";
  under_test.answer = [&](const std::string&) {
    asked.push_back("under-test");
    return "A passage the reader wrote itself.";
  };
  perturber.answer = [&](const std::string&) {
    asked.push_back("perturber");
    return "A simpler passage.";
  };
  eval::QaRecord r;
  r.id = "q0";
  r.question = "what is thing 0?";
  r.answers = {"answer0"};
  for (int d = 0; d < 2; ++d) {
    eval::Context c;
    c.title = "T";
    c.text = "Thing 0 is answer0. It was found in " + std::to_string(1990 + d) + ".";
    r.ctxs.push_back(c);
  }
  const std::vector<Kind> kinds = {Kind::SourceSelfGenerated, Kind::StyleSimple, Kind::FormatJson};
  // Without a reader under test, self-generated cannot run; the perturber stands for style only.
  std::vector<Kind> missing;
  EXPECT_EQ(runnable_kinds(kinds, {nullptr, &perturber}, &missing),
            (std::vector<Kind>{Kind::StyleSimple, Kind::FormatJson}));
  EXPECT_EQ(missing, std::vector<Kind>{Kind::SourceSelfGenerated});
  // The reader under test is the perturber when none is given.
  EXPECT_EQ(runnable_kinds(kinds, {&under_test, nullptr}, nullptr), kinds);

  Recorded rec;
  PerturbOptions po;
  po.llm.batch = 1;
  po.hooks = rec.hooks();
  const PerturbResult res = run_perturb({r}, kinds, {&under_test, &perturber}, load_prompts(), po);
  ASSERT_EQ(res.pairs.size(), 6u);  // 2 documents x 3 kinds, record order
  EXPECT_EQ(res.pairs[0].perturbation, "source/self-generated");
  EXPECT_EQ(asked,
            (std::vector<std::string>{"perturber", "perturber", "under-test", "under-test"}));
  EXPECT_EQ(rec.events.front(), "begin sure perturb 4");
  EXPECT_EQ(rec.events.back(), "end");
  EXPECT_EQ(rec.advanced, 4u);
  // Rule-based kinds alone: no reader, no progress stage.
  Recorded none;
  po.hooks = none.hooks();
  EXPECT_EQ(run_perturb({r}, {Kind::FormatJson}, {}, PromptSet{}, po).pairs.size(), 2u);
  EXPECT_TRUE(none.events.empty());
}

}  // namespace
}  // namespace ragform::sure
