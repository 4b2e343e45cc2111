// SQuAD-style answer normalisation (text/normalize.h). Expected values for the reference mode
// were worked out by hand from the SQuAD v1.1 normalize_answer definition (lower, delete
// string.punctuation, \b(a|an|the)\b -> " ", " ".join(split())).
#include "text/normalize.h"

#include <gtest/gtest.h>

namespace ragform::text {
namespace {

TEST(Normalize, SquadSteps) {
  EXPECT_EQ(normalize_answer("The Cat"), "cat");
  EXPECT_EQ(normalize_answer("  An  apple,\ta PEAR and\nthe   plum. "), "apple pear and plum");
  EXPECT_EQ(normalize_answer("U.S. Navy"), "us navy");  // punctuation is deleted
  EXPECT_EQ(normalize_answer("don't-stop"), "dontstop");
  EXPECT_EQ(normalize_answer("1,000,000"), "1000000");
  EXPECT_EQ(normalize_answer("theatre anthem a-team"), "theatre anthem ateam");  // whole words only
  EXPECT_EQ(normalize_answer("$5 + <x> ^ `y` | ~z"), "5 x y z");  // ASCII symbols count
  EXPECT_EQ(normalize_answer("The"), "");
  EXPECT_EQ(normalize_answer(""), "");
  EXPECT_EQ(normalize_answer("a.n"), "");  // "an" after punctuation removal
  EXPECT_EQ(normalize_answer("__init__"), "init");
}

TEST(Normalize, UnicodePunctuationAndSpaces) {
  // “Quoted” — dash … ellipsis, ¿inverted? «guillemets»
  EXPECT_EQ(normalize_answer("\xE2\x80\x9CParis\xE2\x80\x9D \xE2\x80\x94 France\xE2\x80\xA6"),
            "paris france");
  EXPECT_EQ(normalize_answer("\xC2\xBFQu\xC3\xA9?"), "que");
  EXPECT_EQ(normalize_answer("\xC2\xAB"
                             "the end\xC2\xBB"),
            "end");
  EXPECT_EQ(normalize_answer("1990\xE2\x80\x93"
                             "1995"),
            "19901995");  // en dash deleted
  // NBSP, ideographic space, em space, line separator are whitespace.
  EXPECT_EQ(normalize_answer("a\xC2\xA0"
                             "b\xE3\x80\x80"
                             "c\xE2\x80\x83"
                             "d\xE2\x80\xA8"
                             "e"),
            "b c d e");
  // Non-ASCII symbols are kept.
  EXPECT_EQ(normalize_answer("100 \xE2\x82\xAC, 5\xC2\xB0"), "100 \xE2\x82\xAC 5\xC2\xB0");
}

TEST(Normalize, CaseAndAccents) {
  EXPECT_EQ(normalize_answer("Wilhelm Conrad R\xC3\xB6ntgen"), "wilhelm conrad rontgen");
  EXPECT_EQ(normalize_answer("CAF\xC3\x89 \xC3\x86SIR STRA\xC3\x9F"
                             "E"),
            "cafe aesir strasse");
  EXPECT_EQ(normalize_answer("Maria Sk\xC5\x82odowska"), "maria sklodowska");
  EXPECT_EQ(normalize_answer("\xC5\x81\xC3\x93"
                             "D\xC5\xB9"),
            "lodz");
  // Decomposed e + U+0301 equals precomposed e-acute after folding.
  EXPECT_EQ(normalize_answer("Cafe\xCC\x81"), normalize_answer("Caf\xC3\xA9"));
  EXPECT_EQ(normalize_answer("\xC8\x98tefan"), "stefan");  // S-comma
  EXPECT_EQ(normalize_answer("\xCE\x91\xCE\x98\xCE\x97\xCE\x9D\xCE\x91"),
            "\xCE\xB1\xCE\xB8\xCE\xB7\xCE\xBD\xCE\xB1");  // ΑΘΗΝΑ -> αθηνα
  EXPECT_EQ(normalize_answer("\xD0\x9C\xD0\x9E\xD0\xA1\xD0\x9A\xD0\x92\xD0\x90"),
            "\xD0\xBC\xD0\xBE\xD1\x81\xD0\xBA\xD0\xB2\xD0\xB0");  // МОСКВА -> москва
}

TEST(Normalize, CompatibilityFolding) {
  EXPECT_EQ(normalize_answer("\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3"), "abc");  // fullwidth ABC
  EXPECT_EQ(normalize_answer("\xEF\xAC\x81"
                             "nal"),
            "final");  // fi ligature
  EXPECT_EQ(normalize_answer("m\xC2\xB2"), "m2");
  EXPECT_EQ(normalize_answer("zero\xE2\x80\x8Bwidth\xC2\xAD"
                             "ok"),
            "zerowidthok");
}

TEST(Normalize, SquadReferenceModeKeepsNonAscii) {
  // The Python reference deletes ASCII punctuation only and keeps accents.
  EXPECT_EQ(normalize_answer("\xE2\x80\x9C"
                             "Caf\xC3\xA9\xE2\x80\x9D!",
                             kSquadReference),
            "\xE2\x80\x9C"
            "caf\xC3\xA9\xE2\x80\x9D");
  EXPECT_EQ(normalize_answer("The R\xC3\x96NTGEN", kSquadReference), "r\xC3\xB6ntgen");
  EXPECT_EQ(normalize_answer("\xEF\xAC\x81", kSquadReference), "\xEF\xAC\x81");
  // Unicode whitespace still splits (Python's str.split()).
  EXPECT_EQ(normalize_answer("x\xC2\xA0y", kSquadReference), "x y");
}

TEST(Normalize, InvalidUtf8IsRepairedNotFatal) {
  EXPECT_EQ(normalize_answer("Bad\xFF byte"), "bad\xEF\xBF\xBD byte");
}

TEST(Normalize, Tokens) {
  EXPECT_EQ(normalized_tokens("The quick, brown fox!"),
            (std::vector<std::string>{"quick", "brown", "fox"}));
  EXPECT_TRUE(normalized_tokens(" the a an ").empty());
}

}  // namespace
}  // namespace ragform::text
