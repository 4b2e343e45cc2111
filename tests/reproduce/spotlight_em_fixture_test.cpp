// `reproduce spotlight` grades the generator's answers with SpotlightRAG's answer step
// (pipelines/spotlight/answer.h): a reader that writes the right answer and then keeps going on
// the next line scores EM 100, as `spotlight eval --generate` counts it.
#include <map>

#include <gtest/gtest.h>

#include "eval/datasets.h"
#include "reproduce/reproduce.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace {

using namespace ragform;

TEST(ReproduceSpotlightEm, AnswerFollowedByMoreTextIsCorrect) {
  REQUIRE_SHARED(dev, "data/hotpotqa-distractor/dev.jsonl");
  reproduce::Options opt;
  opt.paper = "spotlight";
  opt.scale = reproduce::Scale::Smoke;
  opt.shared_dir = ragform::testing::shared_dir().string();
  opt.tool_version = "test";
  const auto planned = reproduce::plan(opt);
  ASSERT_EQ(planned.size(), 1u);
  ASSERT_TRUE(planned[0].missing.empty()) << planned[0].missing;
  const reproduce::Job job = reproduce::make_job(planned[0], opt);

  // The fake generator answers each question's gold answer, then a second line.
  std::map<std::string, std::string> gold;
  for (const auto& r : eval::load_qa_file(dev.string(), {}).records)
    if (!r.answers.empty()) gold[r.question] = r.answers[0];
  ragform::testing::FakeReader rd;
  rd.answer = [&](const std::string& prompt) {
    const size_t b = prompt.find("Question: ") + 10, e = prompt.find("\nEvidence:");
    const auto it = gold.find(prompt.substr(b, e - b));
    return (it == gold.end() ? std::string("unknown") : it->second) +
           "\nThe capital of France is Paris.";
  };
  store::RunStore st(
      (ragform::testing::temp_dir("reproduce-spotlight-em") / "runs.sqlite").string());
  const reproduce::JobResult res = reproduce::run_job(rd, st, job, opt);
  ASSERT_EQ(res.values.size(), 1u);
  const reproduce::Value& v = res.values[0];
  EXPECT_EQ(v.n, 5u);
  EXPECT_EQ(rd.generate_calls, 5);
  EXPECT_DOUBLE_EQ(v.value, 100.0) << "EM must grade the first line of each answer";
}

}  // namespace
