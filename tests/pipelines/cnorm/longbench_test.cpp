// LongBench-v2-style multiple choice (section 5.2): the Appendix D prompt, answer extraction with
// its documented fallbacks, and accuracy overall / by difficulty / by length.
#include "pipelines/cnorm/longbench.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "eval/datasets.h"
#include "pipelines/cnorm/format.h"
#include "reader/http_json.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::cnorm {
namespace {

using ragform::testing::FakeReader;

// Words as tokens: maximal runs of non-spaces.
size_t words(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != ' ' && (i == 0 || s[i - 1] == ' ')) ++n;
  return n;
}

// A question whose context starts with "START", ends with "FINISH" and has `filler` bytes of
// other text between.
Item long_item(size_t filler) {
  Item it;
  it.id = "long";
  it.question = "Where did it start?";
  it.choices = {"at START", "at FINISH", "nowhere", "everywhere"};
  it.answers = {"A"};
  std::string mid;
  while (mid.size() < filler) mid += "filler text. ";
  it.gold = {"", "START of the story. " + mid + "The end: FINISH"};
  return it;
}

}  // namespace

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

// Strict = LongBench-v2's pred.py extract_answer: delete every '*', then the first match of
// r'The correct answer is \(([A-D])\)' in the whole text, else the first match of
// r'The correct answer is ([A-D])', else None. The expected letters are what those two
// case-sensitive regexes give, worked out by hand; the lenient column is ragform's rules (above).
TEST(CnormLongBench, ExtractChoiceStrictIsPredPy) {
  struct Case {
    const char* output;
    std::optional<char> strict, lenient;
  };
  const Case cases[] = {
      {"The correct answer is (B)", 'B', 'B'},
      {"The correct answer is A", 'A', 'A'},
      {"The correct answer is A or B", 'A', 'A'},
      {"The correct answer is **(C)**", 'C', 'C'},  // '*' deleted first
      {"**The correct answer is (D)**", 'D', 'D'},
      {"The correct answer is (*B*)", 'B', std::nullopt},
      // Case-sensitive: pred.py finds nothing.
      {"the correct answer is (B)", std::nullopt, 'B'},
      {"THE CORRECT ANSWER IS (A)", std::nullopt, 'A'},
      {"The correct answer is (a)", std::nullopt, 'A'},
      // No fallbacks: a bare "(X)" or a leading letter is no answer.
      {"Probably (C), because", std::nullopt, 'C'},
      {"  B. The text says so", std::nullopt, 'B'},
      {"B", std::nullopt, 'B'},
      // Exactly one space, no colon, and a whole "(X)" for the first pattern.
      {"The correct answer is  (A)", std::nullopt, 'A'},
      {"The correct answer is: (A)", std::nullopt, 'A'},
      {"The correct answer is (B", std::nullopt, std::nullopt},
      {"The correct answer is (E)", std::nullopt, std::nullopt},
      // The second regex needs nothing after the letter.
      {"The correct answer is Definitely (C)", 'D', 'C'},
      // The parenthesised pattern is searched over the whole text before the bare one.
      {"The correct answer is B. No: The correct answer is (C)", 'C', 'B'},
      {"", std::nullopt, std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(extract_choice(c.output, Extract::Strict), c.strict) << c.output;
    EXPECT_EQ(extract_choice(c.output, Extract::Lenient), c.lenient) << c.output;
    EXPECT_EQ(extract_choice(c.output), c.lenient) << c.output;  // lenient is the default
  }
  EXPECT_EQ(parse_extract("strict"), Extract::Strict);
  EXPECT_EQ(parse_extract("lenient"), Extract::Lenient);
  EXPECT_STREQ(extract_name(Extract::Strict), "strict");
  EXPECT_STREQ(extract_name(Extract::Lenient), "lenient");
  EXPECT_THROW(parse_extract("Strict"), UsageError);
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

TEST(CnormLongBench, CutMiddleKeepsTheFirstAndLastTokens) {
  const std::string text = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10";
  // The longest prefix with 3 words and the longest suffix with 2.
  EXPECT_EQ(cut_middle(text, 3, 2, words), "w1 w2 w3  w9 w10");
  EXPECT_EQ(cut_middle(text, 0, 2, words), " w9 w10");
  EXPECT_EQ(cut_middle(text, 3, 0, words), "w1 w2 w3 ");
  EXPECT_EQ(cut_middle(text, 8, 8, words), text);  // head and tail never overlap
  // Whole UTF-8 characters only: with a token per byte, 3 tokens hold one 2-byte character.
  auto bytes = [](std::string_view s) { return s.size(); };
  EXPECT_EQ(cut_middle("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 3, 3, bytes), "\xC3\xA9\xC3\xA9");
}

TEST(CnormLongBench, ParseOverflow) {
  EXPECT_EQ(parse_overflow("truncate-middle"), Overflow::TruncateMiddle);
  EXPECT_EQ(parse_overflow("drop"), Overflow::Drop);
  EXPECT_STREQ(overflow_name(Overflow::TruncateMiddle), "truncate-middle");
  EXPECT_STREQ(overflow_name(Overflow::Drop), "drop");
  EXPECT_THROW(parse_overflow("middle"), UsageError);
}

// LongBench's cut on the fake reader's one token per byte (plus BOS): the prompt fills the budget
// exactly, the context keeps its first budget / 2 - 1 - P bytes (P: the instruction before it)
// and its last A - H, and the instruction, question and choices are whole.
TEST(CnormLongBench, FitCutsOnlyTheContextAtLongBenchsPoint) {
  FakeReader r;
  const Item it = long_item(3000);
  const Format none{{"none", ""}, 0.0, 0};
  const Prompt full = render_longbench_context(it, it.gold.text);
  const size_t P = full.ctx_begin, S = full.text.size() - full.ctx_end;
  const size_t budget = 600;
  auto fp = fit_longbench_prompt(r, it, none, budget, Overflow::TruncateMiddle);
  ASSERT_TRUE(fp.has_value());
  EXPECT_EQ(fp->tokens, budget);
  EXPECT_EQ(fp->tokens, fp->prompt.text.size() + 1);
  EXPECT_EQ(fp->tokens_removed, full.text.size() + 1 - budget);
  const size_t A = budget - 1 - P - S, H = budget / 2 - 1 - P;
  const std::string& ctx = it.gold.text;
  EXPECT_EQ(fp->prompt.text.substr(fp->prompt.ctx_begin, fp->prompt.ctx_end - fp->prompt.ctx_begin),
            ctx.substr(0, H) + ctx.substr(ctx.size() - (A - H)));
  EXPECT_EQ(fp->prompt.text.substr(0, P), full.text.substr(0, P));  // instruction
  EXPECT_EQ(fp->prompt.text.substr(fp->prompt.ctx_end), full.text.substr(full.ctx_end));
  EXPECT_EQ(fp->prompt.text.rfind("<text>\nSTART of the story.", P), P - 7);
  EXPECT_NE(fp->prompt.text.find("FINISH\n</text>\n\nQuestion: Where did it start?"),
            std::string::npos);

  // As written when it fits; Drop leaves it out; no room for any context is no prompt.
  auto fits = fit_longbench_prompt(r, it, none, full.text.size() + 1, Overflow::TruncateMiddle);
  ASSERT_TRUE(fits.has_value());
  EXPECT_EQ(fits->prompt.text, full.text);
  EXPECT_EQ(fits->tokens_removed, 0u);
  EXPECT_FALSE(fit_longbench_prompt(r, it, none, budget, Overflow::Drop).has_value());
  EXPECT_FALSE(fit_longbench_prompt(r, it, none, 1 + P + S, Overflow::TruncateMiddle).has_value());
  EXPECT_TRUE(fit_longbench_prompt(r, it, none, 2 + P + S, Overflow::TruncateMiddle).has_value());
  // A formatted context is cut after formatting: every '&' variant prompt fills the budget too.
  auto amp =
      fit_longbench_prompt(r, it, Format{{"&", "&"}, 1.0, 0}, budget, Overflow::TruncateMiddle);
  ASSERT_TRUE(amp.has_value());
  EXPECT_EQ(amp->tokens, budget);
  EXPECT_NE(amp->prompt.text.find("<text>\nSTART&of&the&story."), std::string::npos);
}

// A reader that refuses to count a prompt over its context (as NativeReader does): the context
// is counted in pieces, so the tokens removed are still known; a server outage is no length.
TEST(CnormLongBench, FitCountsALongContextInPieces) {
  FakeReader r;
  r.tokens = [](const std::string& p) -> int {
    if (p.size() + 1 > 800) throw Error("reader", "prompt exceeds the context size n_ctx = 800");
    return int(p.size()) + 1;
  };
  const Item it = long_item(20000);
  const Prompt full = render_longbench_context(it, it.gold.text);
  auto fp = fit_longbench_prompt(r, it, Format{}, 700, Overflow::TruncateMiddle);
  ASSERT_TRUE(fp.has_value());
  EXPECT_EQ(fp->tokens, 700u);
  EXPECT_EQ(fp->tokens_removed, full.text.size() + 1 - 700);
  EXPECT_FALSE(fit_longbench_prompt(r, it, Format{}, 700, Overflow::Drop).has_value());
  r.tokens = [](const std::string&) -> int {
    throw reader::RequestFailed("HTTP 401 from /v1/completions: invalid API key", 401, 1);
  };
  EXPECT_THROW(fit_longbench_prompt(r, it, Format{}, 700, Overflow::TruncateMiddle),
               reader::RequestFailed);
}

TEST(CnormLongBench, FitItemsKeepsLongQuestionsWhenCut) {
  FakeReader r;
  McItem shortq;
  shortq.id = "short";
  shortq.question = "Q?";
  shortq.choices = {"a", "b", "c", "d"};
  shortq.context = "A short text.";
  McItem longq = shortq;
  longq.id = "long";
  longq.context = long_item(3000).gold.text;
  const std::vector<Format> fmts = {Format{}, Format{{"&", "&"}, 1.0, 0}};
  McFit drop = fit_mc_items(r, {shortq, longq}, fmts, 600, Overflow::Drop);
  ASSERT_EQ(drop.items.size(), 1u);
  EXPECT_EQ(drop.left_out, 1u);
  McFit cut = fit_mc_items(r, {shortq, longq}, fmts, 600, Overflow::TruncateMiddle);
  ASSERT_EQ(cut.items.size(), 2u);
  EXPECT_EQ(cut.left_out, 0u);
  // Min-Token's measure is the prompts as written, not cut.
  EXPECT_EQ(cut.tokens[0], double(longbench_prompt(shortq, fmts[0]).size() + 1 +
                                  longbench_prompt(longq, fmts[0]).size() + 1));
}

TEST(CnormLongBench, TruncationStats) {
  TruncationStats t;
  EXPECT_EQ(t.note("x", 100), "");
  t.add("a", 10);
  t.add("a", 30);
  t.add("b", 0);  // not cut
  t.add("c", 20);
  EXPECT_EQ(t.prompts, 3u);
  EXPECT_EQ(t.questions.size(), 2u);
  EXPECT_EQ(t.max, 30u);
  EXPECT_DOUBLE_EQ(t.mean(), 20.0);
  EXPECT_EQ(t.to_json(), nlohmann::json::parse(R"({"questions": 2, "prompts": 3,
            "tokens_removed": {"total": 60, "mean": 20.0, "max": 30}})"));
  EXPECT_EQ(t.note("cnorm eval: note", 512),
            "cnorm eval: note: 3 prompts of 2 questions cut in the middle of their context to fit "
            "--ctx 512 tokens (tokens removed: mean 20.0, max 30)");
}

}  // namespace ragform::cnorm
