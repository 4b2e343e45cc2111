// LongBench-v2-style multiple choice (section 5.2): the Appendix D prompt, answer extraction with
// its documented fallbacks, and accuracy overall / by difficulty / by length.
#include "pipelines/cnorm/longbench.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/format.h"
#include "support/test_support.h"

namespace ragform::cnorm {

TEST(CnormLongBench, ExtractChoice) {
  EXPECT_EQ(extract_choice("The correct answer is (B)"), 'B');
  EXPECT_EQ(extract_choice("After reading, the correct answer is (c)."), 'C');  // rule 1, any case
  EXPECT_EQ(extract_choice("The correct answer is D."), 'D');                   // rule 2
  EXPECT_EQ(extract_choice("The correct answer is A"), 'A');
  EXPECT_EQ(extract_choice("I think (A) is wrong, the correct answer is (D)"), 'D');  // 1 before 3
  EXPECT_EQ(extract_choice("Probably (C), because"), 'C');                            // rule 3
  EXPECT_EQ(extract_choice("  B. The text says so"), 'B');                            // rule 4
  EXPECT_EQ(extract_choice("B"), 'B');
  EXPECT_FALSE(extract_choice("Because the text is long").has_value());
  EXPECT_FALSE(extract_choice("The correct answer is (E)").has_value());
  EXPECT_FALSE(extract_choice("Apples").has_value());  // 'A' followed by a letter
  EXPECT_FALSE(extract_choice("").has_value());
}

TEST(CnormLongBench, PromptFormatsOnlyTheContext) {
  McItem it;
  it.id = "q1";
  it.question = "Who went home?";
  it.choices = {"the cat", "the dog", "a bird", "no one"};
  it.answer = 'B';
  it.context = "The dog went home. The cat stayed.";
  std::string plain = longbench_prompt(it, Format{{"none", ""}, 0.0, 0});
  EXPECT_EQ(plain,
            "Please read the following text and answer the question below.\n\n<text>\nThe dog "
            "went home. The cat stayed.\n</text>\n\nQuestion: Who went home?\n\nChoices:\n(A) the "
            "cat\n(B) the dog\n(C) a bird\n(D) no one\n\nFormat your response as follows: \"The "
            "correct answer is (insert answer here)\".");
  std::string amp = longbench_prompt(it, Format{{"&", "&"}, 1.0, 0});
  EXPECT_NE(amp.find("<text>\nThe&dog&went&home. The&cat&stayed.\n</text>"), std::string::npos);
  EXPECT_NE(amp.find("(A) the cat"), std::string::npos);  // choices untouched
  EXPECT_EQ(amp.find("Who&went"), std::string::npos);     // question untouched
}

TEST(CnormLongBench, ItemsFromLoaderAndSummary) {
  auto dir = ragform::testing::temp_dir("cnorm_longbench");
  ragform::testing::write_file(
      dir / "lb.jsonl",
      "{\"_id\": \"a\", \"domain\": \"d\", \"sub_domain\": \"s\", \"difficulty\": \"easy\", "
      "\"length\": \"short\", \"question\": \"Q1?\", \"choice_A\": \"x\", \"choice_B\": \"y\", "
      "\"choice_C\": \"z\", \"choice_D\": \"w\", \"answer\": \"C\", \"context\": \"Some text.\"}\n"
      "{\"_id\": \"b\", \"domain\": \"d\", \"sub_domain\": \"s\", \"difficulty\": \"hard\", "
      "\"length\": \"long\", \"question\": \"Q2?\", \"choice_A\": \"x\", \"choice_B\": \"y\", "
      "\"choice_C\": \"z\", \"choice_D\": \"w\", \"answer\": \"A\", \"context\": \"Other.\"}\n");
  auto items = build_mc_items(eval::load_qa_file((dir / "lb.jsonl").string()).records);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].id, "a");
  EXPECT_EQ(items[0].answer, 'C');
  EXPECT_EQ(items[1].difficulty, "hard");
  EXPECT_EQ(items[1].length, "long");
  EXPECT_EQ(items[1].context, "Other.");
  // 3 easy/short answers (2 right) and 1 hard/long (wrong) for "v"; one right for "w".
  std::vector<McGraded> rows = {{"v", "easy", "short", true},
                                {"v", "easy", "short", true},
                                {"v", "easy", "short", false},
                                {"v", "hard", "long", false},
                                {"w", "hard", "long", true}};
  auto s = summarize_mc(rows, {"v", "w", "none"});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0].accuracy, 0.5);
  EXPECT_EQ(s[0].n, 4u);
  EXPECT_DOUBLE_EQ(s[0].by_difficulty["easy"].first, 2.0 / 3);
  EXPECT_EQ(s[0].by_difficulty["easy"].second, 3u);
  EXPECT_DOUBLE_EQ(s[0].by_length["long"].first, 0.0);
  EXPECT_DOUBLE_EQ(s[1].accuracy, 1.0);
  EXPECT_EQ(s[2].n, 0u);
  EXPECT_EQ(s[2].accuracy, 0.0);
  // A QA record is not a multiple-choice one.
  eval::QaRecord r;
  r.id = "x";
  EXPECT_THROW(build_mc_items({r}), Error);
}

}  // namespace ragform::cnorm
