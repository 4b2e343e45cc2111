// Sentence splitter and word tokeniser on synthetic hard cases (rules in text/sentences.h).
#include "text/sentences.h"

#include <gtest/gtest.h>

namespace ragform::text {
namespace {

std::vector<std::string> texts(std::string_view passage) {
  std::vector<std::string> out;
  for (const Sentence& s : split_sentences(passage)) {
    EXPECT_EQ(s.text, passage.substr(s.span.begin, s.span.size()));
    out.push_back(s.text);
  }
  return out;
}
using V = std::vector<std::string>;

TEST(Sentences, PlainAndEmpty) {
  EXPECT_TRUE(texts("").empty());
  EXPECT_TRUE(texts("   \n\n \t ").empty());
  EXPECT_EQ(texts("One. Two! Three? Four"), (V{"One.", "Two!", "Three?", "Four"}));
  auto ss = split_sentences("  Hello there.  Bye.  ");
  ASSERT_EQ(ss.size(), 2u);
  EXPECT_EQ(ss[0].span, (TextSpan{2, 14}));
  EXPECT_EQ(ss[1].span, (TextSpan{16, 20}));
}

TEST(Sentences, Abbreviations) {
  EXPECT_EQ(texts("Mr. Smith met Dr. Jones at St. Louis. They talked."),
            (V{"Mr. Smith met Dr. Jones at St. Louis.", "They talked."}));
  EXPECT_EQ(texts("He lives in the U.S. and works for Acme Inc. in Ohio."),
            (V{"He lives in the U.S. and works for Acme Inc. in Ohio."}));
  EXPECT_EQ(texts("She moved to the U.S. The next year she left."),
            (V{"She moved to the U.S.", "The next year she left."}));
  EXPECT_EQ(texts("Fruit, e.g. apples, i.e. food, etc. are sold. Prices rose."),
            (V{"Fruit, e.g. apples, i.e. food, etc. are sold.", "Prices rose."}));
  EXPECT_EQ(texts("It was founded by Apple Inc. The firm grew."),
            (V{"It was founded by Apple Inc.", "The firm grew."}));
  EXPECT_EQ(texts("Born Jan. 5, 1990 in No. 7 Main St. He left."),
            (V{"Born Jan. 5, 1990 in No. 7 Main St.", "He left."}));
  EXPECT_EQ(texts("Ali vs. Frazier was a fight. See Fig. 3 and pp. 10-12."),
            (V{"Ali vs. Frazier was a fight.", "See Fig. 3 and pp. 10-12."}));
  // Titles never end a sentence, even before a word that usually opens one.
  EXPECT_EQ(texts("Ask Mr. The Man himself."), (V{"Ask Mr. The Man himself."}));
}

TEST(Sentences, Initials) {
  EXPECT_EQ(texts("J. R. R. Tolkien wrote it. It sold well."),
            (V{"J. R. R. Tolkien wrote it.", "It sold well."}));
  EXPECT_EQ(texts("Stars include John F. Kennedy Jr. and J. A. Smith."),
            (V{"Stars include John F. Kennedy Jr. and J. A. Smith."}));
  EXPECT_EQ(texts("They need vitamin C. It helps."), (V{"They need vitamin C.", "It helps."}));
}

TEST(Sentences, DecimalsAndNumbers) {
  EXPECT_EQ(texts("Pi is 3.14 roughly. It cost $1.5 million. 2 people paid."),
            (V{"Pi is 3.14 roughly.", "It cost $1.5 million.", "2 people paid."}));
  EXPECT_EQ(texts("Version 2.0.1 shipped (c. 1500 copies)."),
            (V{"Version 2.0.1 shipped (c. 1500 copies)."}));
}

TEST(Sentences, QuotesAndBrackets) {
  EXPECT_EQ(texts("He said \"Stop.\" Then he left."), (V{"He said \"Stop.\"", "Then he left."}));
  EXPECT_EQ(texts("\"Stop!\" he said. (He left.) Then silence."),
            (V{"\"Stop!\" he said.", "(He left.)", "Then silence."}));
  EXPECT_EQ(texts("She wrote \xE2\x80\x9CYes.\xE2\x80\x9D Nobody replied."),
            (V{"She wrote \xE2\x80\x9CYes.\xE2\x80\x9D", "Nobody replied."}));
  EXPECT_EQ(texts("The film \"Moulin Rouge!\" (2001) was a hit."),
            (V{"The film \"Moulin Rouge!\" (2001) was a hit."}));
}

TEST(Sentences, Ellipses) {
  EXPECT_EQ(texts("Wait... what happened? Nothing."), (V{"Wait... what happened?", "Nothing."}));
  EXPECT_EQ(texts("Wait... What happened?"), (V{"Wait...", "What happened?"}));
  EXPECT_EQ(texts("Well\xE2\x80\xA6 Fine."), (V{"Well\xE2\x80\xA6", "Fine."}));
  EXPECT_EQ(texts("It was . . . odd. Yes."), (V{"It was . . . odd.", "Yes."}));
}

TEST(Sentences, Newlines) {
  // A single newline is a soft wrap; a blank line always ends a sentence.
  EXPECT_EQ(
      texts("This sentence is\nwrapped over lines. Next one.\n\nNew paragraph\n\nwithout stops"),
      (V{"This sentence is\nwrapped over lines.", "Next one.", "New paragraph", "without stops"}));
  EXPECT_EQ(texts("Windows line\r\nends here.\r\n\r\nNext."),
            (V{"Windows line\r\nends here.", "Next."}));
}

TEST(Sentences, BulletLists) {
  std::string doc =
      "Shopping list:\n- eggs\n* milk and bread\n1. first item. Has two.\n2) second\n"
      "\xE2\x80\xA2 bullet\nAfter the list.";
  EXPECT_EQ(texts(doc), (V{"Shopping list:", "eggs", "milk and bread", "first item.", "Has two.",
                           "second", "bullet", "After the list."}));
  // The marker stays outside the span.
  auto ss = split_sentences("- eggs");
  ASSERT_EQ(ss.size(), 1u);
  EXPECT_EQ(ss[0].span, (TextSpan{2, 6}));
  // Not bullets: a hyphen without a space, a 4-digit year.
  EXPECT_EQ(texts("-5 degrees\n1990. The year"), (V{"-5 degrees\n1990.", "The year"}));
}

TEST(Sentences, CjkAndGluedStops) {
  EXPECT_EQ(texts("\xE4\xBB\x8A\xE5\xA4\xA9\xE3\x80\x82\xE6\x98\x8E\xE5\xA4\xA9\xEF\xBC\x81"),
            (V{"\xE4\xBB\x8A\xE5\xA4\xA9\xE3\x80\x82", "\xE6\x98\x8E\xE5\xA4\xA9\xEF\xBC\x81"}));
  EXPECT_EQ(texts("It ended in 1994.Played again later."),
            (V{"It ended in 1994.", "Played again later."}));
  EXPECT_EQ(texts("Built with ASP.NET and Node.js at www.Google.com today."),
            (V{"Built with ASP.NET and Node.js at www.Google.com today."}));
}

TEST(Sentences, InvalidUtf8IsKeptAndNeverCrashes) {
  std::string bad = "Caf\xC3 ok. Next \xFF\xFE one.";
  auto ss = split_sentences(bad);
  ASSERT_EQ(ss.size(), 2u);
  EXPECT_EQ(ss[0].text, "Caf\xC3 ok.");
  EXPECT_EQ(ss[1].span.end, bad.size());
}

// Random bytes (seeded) drawn mostly from the characters the rules look at: the spans must stay
// ordered, trimmed, inside the input and equal to their text.
TEST(Sentences, RandomInputKeepsSpanInvariants) {
  const std::string alphabet[] = {"a",
                                  "B",
                                  "J",
                                  " ",
                                  "\n",
                                  ".",
                                  "!",
                                  "?",
                                  "\"",
                                  "'",
                                  ")",
                                  "(",
                                  "-",
                                  "1",
                                  "Mr",
                                  "U.S",
                                  "\xE2\x80\xA6",
                                  "\xE3\x80\x82",
                                  "\xC2\xA0",
                                  "\xFF",
                                  "\xC3",
                                  "The",
                                  "\t",
                                  "* "};
  uint64_t state = 12345;
  for (int round = 0; round < 2000; ++round) {
    std::string s;
    for (int k = 0; k < 40; ++k) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      s += alphabet[(state >> 33) % std::size(alphabet)];
    }
    size_t prev = 0;
    for (const Sentence& sent : split_sentences(s)) {
      ASSERT_LE(prev, sent.span.begin) << s;
      ASSERT_LT(sent.span.begin, sent.span.end) << s;
      ASSERT_LE(sent.span.end, s.size()) << s;
      ASSERT_EQ(sent.text, s.substr(sent.span.begin, sent.span.size()));
      ASSERT_EQ(words(sent.text).front(),
                s.substr(sent.span.begin, words(sent.text).front().size()));
      prev = sent.span.end;
    }
  }
}

TEST(Words, SplitsOnUnicodeWhitespace) {
  std::string s =
      " a\xC2\xA0"
      "bc\tde\xE3\x80\x80"
      "f ";
  auto w = split_words(s);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0], (TextSpan{1, 2}));
  EXPECT_EQ(words(s), (std::vector<std::string>{"a", "bc", "de", "f"}));
  EXPECT_TRUE(words(" \n ").empty());
}

}  // namespace
}  // namespace ragform::text
