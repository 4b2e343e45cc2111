// SpotlightRAG's end-to-end step (answer.h): the reader's answer is cut at the first newline and
// graded by SQuAD-normalised exact match, whatever else the reader goes on to write.
#include <gtest/gtest.h>

#include "pipelines/spotlight/answer.h"
#include "support/fake_reader.h"
#include "text/metrics.h"

namespace ragform::spotlight {
namespace {

// A reader that ignores the stop string and runs on past the answer, as a small model does.
testing::FakeReader chatty_reader(const std::string& text) {
  testing::FakeReader r;
  r.answer = [text](const std::string&) { return text; };
  return r;
}

TEST(SpotlightAnswer, FirstLineIsGradedNotTheWholeOutput) {
  const std::string out = "Paris\nThe capital of France is Paris, on the Seine.";
  testing::FakeReader r = chatty_reader(out);
  const GradedAnswer g = answer_and_grade(r, "Question: q\nEvidence:\nAnswer:", {"Paris"}, 16);
  EXPECT_EQ(g.text, "Paris");
  EXPECT_EQ(g.em, 1.0);
  EXPECT_EQ(g.substring, 1.0);
  EXPECT_EQ(r.generate_calls, 1);
  // The grading `reproduce spotlight` had before this step: EM of the whole output, which counts
  // this correct answer as wrong.
  EXPECT_EQ(text::exact_match(out, {"Paris"}), 0.0);
}

TEST(SpotlightAnswer, SquadNormalisationAndLeadingWhitespace) {
  EXPECT_EQ(grade_answer(" The Paris.\n", {"paris"}).em, 1.0);  // article, case, punctuation
  EXPECT_EQ(grade_answer("\n  Paris\nLyon", {"Paris"}).text, "Paris");
  EXPECT_EQ(grade_answer("Lyon\nParis", {"Paris"}).em, 0.0);  // only the first line counts
  EXPECT_EQ(grade_answer("Lyon\nParis", {"Paris"}).substring, 0.0);
  EXPECT_EQ(grade_answer("", {"Paris"}).em, 0.0);
  EXPECT_EQ(grade_answer("Paris, France", {"Lyon", "Paris"}).substring, 1.0);
}

TEST(SpotlightAnswer, GenerationIsGreedyAndStopsAtNewline) {
  const reader::GenerateParams gp = answer_params(16);
  EXPECT_EQ(gp.max_tokens, 16);
  EXPECT_LE(gp.temperature, 0.0);
  ASSERT_EQ(gp.stop.size(), 1u);
  EXPECT_EQ(gp.stop[0], "\n");
}

}  // namespace
}  // namespace ragform::spotlight
