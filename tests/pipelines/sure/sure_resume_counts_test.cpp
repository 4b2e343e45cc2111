// `sure eval`'s counts over resumes (EvalStats): every row of the pairs is generated, already done
// (stored before and reused), unmeasured or deferred, so the four add up to the run's rows in
// every invocation — after a fault injection, on the resume that fills it in, and on a rerun of
// the finished run (everything already done, nothing generated).
#include <gtest/gtest.h>

#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/perturb_plan.h"
#include "pipelines/sure/prompts.h"
#include "reader/measured.h"
#include "store/run_store.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::sure {
namespace {

// Four questions with two documents each, three rule-based kinds per document: 4 closed-book
// rows, 8 original rows and 24 perturbed rows.
std::vector<Pair> pairs() {
  std::vector<Pair> out;
  for (int q = 0; q < 4; ++q)
    for (int d = 0; d < 2; ++d) {
      const std::string inst = "q" + std::to_string(q);
      Document doc{"Title", "First fact about thing " + std::to_string(q) + ". Answer" +
                                std::to_string(q) + " is here. Last one."};
      for (Kind k : {Kind::LogicReverse, Kind::FormatJson, Kind::DatasourceWiki}) {
        Pair p = pair_of(inst, d, "what is thing " + std::to_string(q) + "?",
                         {"answer" + std::to_string(q)}, doc, k);
        p.perturbed = apply_rule(k, doc, RuleOptions{}, p.id).text;
        out.push_back(p);
      }
    }
  return out;
}

constexpr int64_t kRows = 4 + 8 + 24;

int64_t accounted(const EvalStats& s) {
  return s.generated + s.skipped_done + s.unmeasured + s.deferred;
}

TEST(SureResumeCounts, EveryRowIsCountedOnceInEveryInvocation) {
  testing::FakeReader rd;
  rd.answer = [](const std::string& p) {
    return p.find("thing 1") != std::string::npos ? "answer1" : "no";
  };
  const PromptSet prompts = load_prompts();
  const auto ps = pairs();
  auto dir = testing::temp_dir("sure-resume-counts");
  store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::create);
  store::RunConfig rc = eval_run_config(EvalOptions{}, prompts, pairs_sha256(ps));
  rc.reader = rd.describe();
  const int64_t run = st.begin_run(rc);

  // A fault on every prompt of question 2 (its closed-book, originals; its perturbed rows wait).
  rd.fail_marker = "thing 2";
  EvalStats s1;
  evaluate_pairs(rd, st, run, prompts, ps, EvalOptions{}, s1);
  EXPECT_EQ(s1.skipped_done, 0);
  EXPECT_EQ(s1.unmeasured, 3);  // 1 closed-book + 2 originals
  EXPECT_EQ(s1.deferred, 6);
  EXPECT_EQ(accounted(s1), kRows);

  // The resume reuses every stored row and computes the rest.
  rd.fail_marker.clear();
  EvalStats s2;
  evaluate_pairs(rd, st, run, prompts, ps, EvalOptions{}, s2);
  EXPECT_EQ(s2.generated, 3 + 6);
  EXPECT_EQ(s2.skipped_done, kRows - 9);
  EXPECT_EQ(s2.unmeasured + s2.deferred, 0);
  EXPECT_EQ(accounted(s2), kRows);

  // A rerun of the finished run: every row already done, perturbed ones included.
  EvalStats s3;
  auto out = evaluate_pairs(rd, st, run, prompts, ps, EvalOptions{}, s3);
  EXPECT_EQ(s3.generated, 0);
  EXPECT_EQ(s3.skipped_done, kRows);
  EXPECT_EQ(accounted(s3), kRows);
  EXPECT_EQ(out.size(), ps.size());
}

// Interrupted by a limit (the first call sees only the first question's pairs, in a run of the
// same identity): the resume's already-done count is exactly the rows the first call stored.
TEST(SureResumeCounts, ResumeAfterALimitedRunCountsItsStoredRows) {
  testing::FakeReader rd;
  rd.answer = [](const std::string&) { return "no"; };
  const PromptSet prompts = load_prompts();
  const auto ps = pairs();
  auto dir = testing::temp_dir("sure-resume-stopped");
  store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::create);
  const int64_t run = st.begin_run(eval_run_config(EvalOptions{}, prompts, pairs_sha256(ps)));
  EvalOptions small;
  small.batch = 2;
  const std::vector<Pair> first(ps.begin(), ps.begin() + 6);
  EvalStats s1;
  evaluate_pairs(rd, st, run, prompts, first, small, s1);
  EXPECT_EQ(s1.generated, 1 + 2 + 6);
  EvalStats s2;
  evaluate_pairs(rd, st, run, prompts, ps, small, s2);
  EXPECT_EQ(s2.skipped_done, 9);
  EXPECT_EQ(s2.generated, kRows - 9);
  EXPECT_EQ(accounted(s2), kRows);
}

}  // namespace
}  // namespace ragform::sure
