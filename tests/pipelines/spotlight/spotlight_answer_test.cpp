// SpotlightRAG's end-to-end step (answer.h): the reader's answer is cut after its first non-empty
// line and graded by SQuAD-normalised exact match, whatever else the reader goes on to write.
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

// The grade is SQuAD's normalize_answer itself: lower(), delete the characters of Python's
// string.punctuation (ASCII only), replace the whole words a/an/the by a space, join on
// whitespace. The expected values below follow from that definition by hand, not from ragform's
// normaliser: no accent or compatibility folding, Unicode punctuation stays.
TEST(SpotlightAnswer, EmIsSquadNormalizeAnswer) {
  auto em = [](const std::string& pred, const std::string& gold) {
    return grade_answer(pred, {gold}).em;
  };
  EXPECT_EQ(em("The  Cat!", "cat"), 1.0);             // "the  cat" -> " cat" -> "cat"
  EXPECT_EQ(em("an apple a day", "Apple day"), 1.0);  // articles as whole words
  EXPECT_EQ(em("theatre", "atre"), 0.0);              // ... and only as whole words
  EXPECT_EQ(em("U.S.", "US"), 1.0);                   // punctuation deleted, not spaced
  EXPECT_EQ(em("$5", "5"), 1.0);                      // '$' is in string.punctuation
  EXPECT_EQ(em("rock & roll", "Rock roll"), 1.0);     // "rock  roll" -> "rock roll"
  EXPECT_EQ(em("Caf\xC3\x89", "caf\xC3\xA9"), 1.0);   // "CafÉ" lower-cases to "café"
  // Not folded: accents, ligatures; not deleted: Unicode punctuation.
  EXPECT_EQ(em("caf\xC3\xA9", "cafe"), 0.0);                     // "café" != "cafe"
  EXPECT_EQ(em("na\xC3\xAFve", "naive"), 0.0);                   // "naïve"
  EXPECT_EQ(em("\xEF\xAC\x81sh", "fish"), 0.0);                  // "ﬁsh" (U+FB01)
  EXPECT_EQ(em("Paris\xE2\x80\x94", "Paris"), 0.0);              // "Paris—" (U+2014)
  EXPECT_EQ(em("\xE2\x80\x9CParis\xE2\x80\x9D", "Paris"), 0.0);  // curly quotes
  EXPECT_EQ(em("\xE2\x80\x9CParis\xE2\x80\x9D", "\xE2\x80\x9Cparis\xE2\x80\x9D"), 1.0);
  // Substring match on the same normalisation: "café au lait" does not contain "cafe".
  EXPECT_EQ(grade_answer("caf\xC3\xA9 au lait", {"cafe"}).substring, 0.0);
  EXPECT_EQ(grade_answer("caf\xC3\xA9 au lait", {"Caf\xC3\xA9"}).substring, 1.0);
}

// Greedy, and stopped after the first non-empty line, not at the first newline: Gemma 3 270M
// begins its answer to "...\nAnswer:" with a newline, which a "\n" stop string turned into an
// empty answer for every question (EM 0 of 300, issue 43).
TEST(SpotlightAnswer, GenerationIsGreedyAndStopsAfterTheFirstLine) {
  const reader::GenerateParams gp = answer_params(16);
  EXPECT_EQ(gp.max_tokens, 16);
  EXPECT_LE(gp.temperature, 0.0);
  EXPECT_TRUE(gp.stop_after_line);
  EXPECT_TRUE(gp.stop.empty());
}

// The generation's prompt tokens and finish reason come back with the grade, and F1 beside EM.
TEST(SpotlightAnswer, GradeCarriesF1PromptTokensAndFinishReason) {
  testing::FakeReader r = chatty_reader("\nthe Eiffel Tower in Paris\nmore");
  const std::string prompt = "Question: q\nEvidence:\nAnswer:";
  const GradedAnswer g = answer_and_grade(r, prompt, {"Paris"}, 16);
  EXPECT_EQ(g.text, "the Eiffel Tower in Paris");
  EXPECT_EQ(g.em, 0.0);
  EXPECT_DOUBLE_EQ(g.f1, 2.0 * (1.0 / 4) * 1.0 / (1.0 / 4 + 1.0));  // 1 of 4 tokens, recall 1
  EXPECT_EQ(g.substring, 1.0);
  EXPECT_EQ(g.prompt_tokens, int(prompt.size()) + 1);  // the fake reader: a token per byte + BOS
  EXPECT_EQ(g.finish_reason, "stop");
}

}  // namespace
}  // namespace ragform::spotlight
