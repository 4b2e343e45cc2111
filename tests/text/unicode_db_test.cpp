// The generated Unicode database shared by text/ and the tokenizers.
#include "text/unicode_db.h"

#include <gtest/gtest.h>

#include "text/normalize.h"
#include "text/unicode.h"

namespace ragform::text {

TEST(UnicodeDb, CategoriesAndMappings) {
  EXPECT_TRUE(cp_flags('a') & kLetter);
  EXPECT_TRUE(cp_flags('7') & kNumber);
  EXPECT_TRUE(cp_flags(0x2014) & kPunctuation);  // em dash
  EXPECT_TRUE(cp_flags(0x3000) & kWhitespace);   // ideographic space
  EXPECT_TRUE(cp_flags(0x0301) & kMark);         // combining acute
  EXPECT_EQ(cp_tolower(0x0531), 0x0561u);        // Armenian Ayb
  EXPECT_EQ(cp_nfd_first(0x00E9), uint32_t('e'));
}

TEST(UnicodeDb, AnswerLowercasingCoversEveryScript) {
  EXPECT_EQ(to_lower(0x0130), uint32_t('i'));  // the documented exception
  EXPECT_EQ(to_lower(0x10A0), 0x2D00u);        // Georgian Asomtavruli An -> Nuskhuri
  EXPECT_EQ(to_lower(0x0410), 0x0430u);        // Cyrillic A
  EXPECT_EQ(normalize_answer("ԱՐԱՐԱՏ"), normalize_answer("արարատ"));  // Armenian
}

// BERT's normaliser, one rule for the WordPiece tokenizer and Spotlight's word search.
TEST(UnicodeDb, BertFold) {
  EXPECT_EQ(bert_fold(0x00C9, true, true), uint32_t('e'));   // É: decomposed, lowercased
  EXPECT_EQ(bert_fold(0x00C9, false, true), uint32_t('E'));  // cased vocabulary
  EXPECT_EQ(bert_fold(0x00C9, true, false), 0x00E9u);        // accents kept
  EXPECT_EQ(bert_fold(0x0301, true, true), kBertDropped);    // a combining mark
  EXPECT_EQ(bert_fold(0x0301, true, false), 0x0301u);
  EXPECT_EQ(bert_fold(0x1E69, true, true), uint32_t('s'));  // two marks below and above
  // Decomposing first (as the tokenizer does for its word splits) changes nothing: the table
  // holds full NFD's first code point.
  for (uint32_t cp = 0; cp < 0x30000; ++cp)
    ASSERT_EQ(bert_fold(cp_nfd_first(cp), true, true), bert_fold(cp, true, true)) << cp;
}

}  // namespace ragform::text
