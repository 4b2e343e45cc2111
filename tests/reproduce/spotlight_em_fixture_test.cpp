// `reproduce spotlight` grades the generator's answers with SpotlightRAG's answer step
// (pipelines/spotlight/answer.h): a reader that writes the right answer and then keeps going on
// the next line scores EM 100, as `spotlight eval --generate` counts it; EM is SQuAD's
// normalize_answer (no Unicode punctuation dropped) and the scorer runs with the paper's settings,
// alpha uniform (its stated 1/n; the paper never names IDF).
#include <map>

#include <gtest/gtest.h>

#include "eval/datasets.h"
#include "reproduce/reproduce.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace {

using namespace ragform;

// The smoke-scale spotlight job and a fake generator that answers each question's gold answer
// followed by `suffix`.
struct SpotlightRun {
  reproduce::Options opt;
  reproduce::Job job;
  ragform::testing::FakeReader rd;
};

void plan_spotlight(SpotlightRun& s) {
  reproduce::Options& opt = s.opt;
  opt.paper = "spotlight";
  opt.scale = reproduce::Scale::Smoke;
  opt.shared_dir = ragform::testing::shared_dir().string();
  opt.tool_version = "test";
  const auto planned = reproduce::plan(opt);
  ASSERT_EQ(planned.size(), 1u);
  ASSERT_TRUE(planned[0].missing.empty()) << planned[0].missing;
  s.job = reproduce::make_job(planned[0], opt);
}

void answer_gold_then(SpotlightRun& s, const std::string& dev, const std::string& suffix) {
  std::map<std::string, std::string> gold;
  for (const auto& r : eval::load_qa_file(dev, {}).records)
    if (!r.answers.empty()) gold[r.question] = r.answers[0];
  s.rd.answer = [gold, suffix](const std::string& prompt) {
    const size_t b = prompt.find("Question: ") + 10, e = prompt.find("\nEvidence:");
    const auto it = gold.find(prompt.substr(b, e - b));
    return (it == gold.end() ? std::string("unknown") : it->second) + suffix;
  };
}

TEST(ReproduceSpotlightEm, AnswerFollowedByMoreTextIsCorrect) {
  REQUIRE_SHARED(dev, "data/hotpotqa-distractor/dev.jsonl");
  SpotlightRun s;
  plan_spotlight(s);
  if (HasFatalFailure()) return;
  const reproduce::Job& job = s.job;
  ragform::testing::FakeReader& rd = s.rd;
  // The fake generator answers each question's gold answer, then a second line.
  answer_gold_then(s, dev.string(), "\nThe capital of France is Paris.");
  store::RunStore st(
      (ragform::testing::temp_dir("reproduce-spotlight-em") / "runs.sqlite").string());
  const reproduce::JobResult res = reproduce::run_job(rd, st, job, s.opt);
  ASSERT_EQ(res.values.size(), 1u);
  const reproduce::Value& v = res.values[0];
  EXPECT_EQ(v.n, 5u);
  EXPECT_EQ(rd.generate_calls, 5);
  EXPECT_DOUBLE_EQ(v.value, 100.0) << "EM must grade the first line of each answer";
}

// The gold answer followed by an em dash (U+2014): SQuAD's normalize_answer drops only
// string.punctuation (ASCII), so "Paris—" is not "Paris" (ragform's default normaliser,
// which drops Unicode punctuation, counted it right). The selection runs with alpha uniform and
// the answers are stored under the SQuAD grading's name.
TEST(ReproduceSpotlightEm, SquadGradingAndUniformAlpha) {
  REQUIRE_SHARED(dev, "data/hotpotqa-distractor/dev.jsonl");
  SpotlightRun s;
  plan_spotlight(s);
  if (HasFatalFailure()) return;
  answer_gold_then(s, dev.string(), "\xE2\x80\x94");
  store::RunStore st(
      (ragform::testing::temp_dir("reproduce-spotlight-squad") / "runs.sqlite").string());
  const reproduce::JobResult res = reproduce::run_job(s.rd, st, s.job, s.opt);
  ASSERT_EQ(res.values.size(), 1u);
  EXPECT_EQ(res.values[0].n, 5u);
  EXPECT_DOUBLE_EQ(res.values[0].value, 0.0) << "an em dash is not ASCII punctuation";
  bool saw_eval = false, saw_generate = false;
  for (const store::RunInfo& run : st.runs()) {
    if (run.pipeline == "spotlight eval") {
      saw_eval = true;
      EXPECT_EQ(run.config.value("alpha", ""), "uniform") << run.config.dump();
      EXPECT_EQ(run.config.value("top_k", 0), 5) << run.config.dump();
    }
    if (run.pipeline == "spotlight generate") {
      saw_generate = true;
      EXPECT_EQ(run.config.value("grading", ""), "squad em of the first line");
    }
  }
  EXPECT_TRUE(saw_eval);
  EXPECT_TRUE(saw_generate);
}

}  // namespace
