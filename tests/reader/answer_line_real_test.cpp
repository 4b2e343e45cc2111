// Gemma 3 270M (trained, base; RAGFORM_GEMMA) on a SpotlightRAG eq. (10) prompt (HotpotQA dev's
// first question, its six selected sentences): the model begins its answer with a newline, so a
// "\n" stop string returns an empty answer (EM 0 of 300 in the papers run, issue 43), while
// GenerateParams::stop_after_line returns the first non-empty line, as the answer step
// (spotlight/answer.h) asks for it.
#include <gtest/gtest.h>

#include "engine/runtime/generate.h"
#include "pipelines/spotlight/answer.h"
#include "reader/native_reader.h"
#include "support/real_models.h"

namespace ragform::reader {
namespace {

const char* const kPrompt =
    "Question: The band who released the debut album Tinted Windows had their first performance "
    "in what city?\nEvidence:\n"
    "Tinted Windows is the eponymous debut album of the American supergroup, Tinted Windows.\n"
    "Tinted Windows was formed in New York City and consists of guitarist James Iha, previously "
    "of The Smashing Pumpkins and A Perfect Circle, singer Taylor Hanson of Hanson, bassist Adam "
    "Schlesinger of Fountains of Wayne and Ivy, and Cheap Trick's Bun E. Carlos.\n"
    "The album was recorded at Stratosphere Sound Studios in New York, which Schlesinger and Iha "
    "co-own with Ivy's Andy Chase.\n"
    "Josh Lattanzi also often performs with the band as the second guitarist.\n"
    "The first performance by the band was on March 18, 2009 at Cain's Ballroom in Tulsa, "
    "Oklahoma in a small show at the side-stage.\n"
    "The band made their South by Southwest Festival debut in Austin, Texas on Friday, March 20, "
    "2009 at the Levi/Fader Fort, followed by a set at Pangaea.\n"
    "Answer:";

TEST(AnswerLineReal, GemmaBeginsWithANewlineAndTheLineRuleReadsPastIt) {
  REQUIRE_REAL_MODEL(gemma, "RAGFORM_GEMMA");
  NativeOptions no;
  no.n_ctx = 1024;
  NativeReader r(gemma, no);
  GenerateParams nl;
  nl.max_tokens = 24;
  nl.stop = {"\n"};
  const Generation cut = r.generate(kPrompt, nl);
  EXPECT_EQ(cut.text, "") << "Gemma no longer begins with a newline here: update this test";
  EXPECT_EQ(cut.finish_reason, "stop");

  const Generation line = r.generate(kPrompt, spotlight::answer_params(24));
  const std::string answer = spotlight::answer_line(line.text);
  EXPECT_FALSE(answer.empty()) << "'" << line.text << "'";
  EXPECT_EQ(runtime::line_stop_at(line.text), std::string::npos) << line.text;
  EXPECT_EQ(line.text.substr(line.text.find_first_not_of(" \t\r\n")), answer);
  // The same tokens as an unstopped generation up to the line's end.
  GenerateParams all;
  all.max_tokens = 24;
  const Generation full = r.generate(kPrompt, all);
  EXPECT_EQ(full.text.substr(0, line.text.size()), line.text);
}

}  // namespace
}  // namespace ragform::reader
