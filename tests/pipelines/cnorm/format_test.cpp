// Candidate formatting (section 4.1). Hash, generator and permutation values were computed with an
// independent Python implementation of FNV-1a 64, splitmix64 and MT19937-64 (Matsumoto &
// Nishimura's reference algorithm), whose first output for seed 5489 is the C++ standard's
// 14514284786278117030.
#include "pipelines/cnorm/format.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"

namespace ragform::cnorm {

TEST(CnormFormat, DefaultCandidateSetIsThePapersWithOriginalAndBothDots) {
  // The paper's F with \cdot read both as '.' (5.3: LLaMA-2-7B preferred ".") and as U+00B7,
  // after the unformatted text.
  const auto& d = default_delimiters();
  ASSERT_EQ(d.size(), 11u);
  std::vector<std::string> names;
  for (const auto& x : d) names.push_back(x.name);
  EXPECT_EQ(names, (std::vector<std::string>{"original", "none", "-", "_", ":", ".", "\xC2\xB7",
                                             "~", "+", "/", "&"}));
  EXPECT_TRUE(d[0].original);
  EXPECT_EQ(d[0], original_delimiter());
  EXPECT_FALSE(d[1].original);
  EXPECT_EQ(d[1].text, "");
  EXPECT_EQ(d[5].text, ".");
  EXPECT_EQ(default_delimiter_list(), "original,none,-,_,:,.,\xC2\xB7,~,+,/,&");
  EXPECT_EQ(parse_delimiter_list(default_delimiter_list()), d);
}

TEST(CnormFormat, HashesAndPermutationMatchReference) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(splitmix64_mix(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(seeded_permutation(5, 42), (std::vector<size_t>{2, 3, 4, 0, 1}));
  EXPECT_EQ(seeded_permutation(10, 7), (std::vector<size_t>{0, 7, 4, 9, 3, 1, 2, 8, 6, 5}));
  EXPECT_EQ(seeded_permutation(0, 7), std::vector<size_t>{});
  EXPECT_EQ(document_seed(42, "The cat sat. The dog ran. A bird flew."), 15609294860523106084ULL);
}

TEST(CnormFormat, ChooseSentencesCountsRoundHalfUp) {
  EXPECT_TRUE(choose_sentences(4, 0.0, 1).empty());
  EXPECT_EQ(choose_sentences(4, 1.0, 1), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(choose_sentences(4, 0.5, 1).size(), 2u);
  EXPECT_EQ(choose_sentences(3, 0.5, 1).size(), 2u);   // 1.5 rounds up
  EXPECT_EQ(choose_sentences(5, 0.25, 1).size(), 1u);  // 1.25 -> 1
  // The first m of the permutation, sorted: permutation(5, 42) = 2 3 4 0 1.
  EXPECT_EQ(choose_sentences(5, 0.6, 42), (std::vector<size_t>{2, 3, 4}));
  EXPECT_THROW(choose_sentences(3, 1.5, 1), UsageError);
  EXPECT_THROW(choose_sentences(3, -0.1, 1), UsageError);
  EXPECT_THROW(choose_sentences(3, std::nan(""), 1), UsageError);
}

TEST(CnormFormat, JoinWordsReplacesEveryWhitespaceRun) {
  EXPECT_EQ(join_words("The  cat\tsat\non it.", "-"), "The-cat-sat-on-it.");
  EXPECT_EQ(join_words("The cat sat.", ""), "Thecatsat.");
  EXPECT_EQ(join_words("a b", "\xC2\xB7"),
            "a\xC2\xB7"
            "b");
  EXPECT_EQ(join_words("a\xC2\xA0"
                       "b",
                       "&"),
            "a&b");  // U+00A0 is whitespace too
  EXPECT_EQ(join_words("single", "&"), "single");
}

TEST(CnormFormat, FormatDocumentFollowsTheSeededRule) {
  const std::string t = "The cat sat. The dog ran. A bird flew.";
  // Document seed 15609294860523106084 gives the permutation 2 1 0 of the three sentences.
  EXPECT_EQ(format_document(t, "-", 1.0 / 3, 42), "The cat sat. The dog ran. A-bird-flew.");
  EXPECT_EQ(format_document(t, "-", 0.5, 42), "The cat sat. The-dog-ran. A-bird-flew.");
  EXPECT_EQ(format_document(t, "&", 1.0, 42), "The&cat&sat. The&dog&ran. A&bird&flew.");
  EXPECT_EQ(format_document(t, "none", 0.0, 42), t);
  EXPECT_EQ(format_document(t, "", 1.0, 42), "Thecatsat. Thedogran. Abirdflew.");
  // Text between sentences is kept byte for byte.
  EXPECT_EQ(format_document("A b.  \n\nC d.", "_", 1.0, 3), "A_b.  \n\nC_d.");
  EXPECT_EQ(format_document("", "_", 1.0, 3), "");
}

TEST(CnormFormat, SameTextSameFormattingAnywhere) {
  const std::string t = "One two. Three four. Five six. Seven eight.";
  EXPECT_EQ(format_document(t, "+", 0.5, 9), format_document(t, "+", 0.5, 9));
  size_t changed = 0;
  std::string f = format_document(t, "+", 0.5, 9);
  for (char c : f) changed += c == '+';
  EXPECT_EQ(changed, 2u);  // two sentences of one inner space each
}

TEST(CnormFormat, ParseDelimiters) {
  auto d = parse_delimiter_list("none,-,comma,||,\xC2\xB7");
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0], (Delimiter{"none", ""}));
  EXPECT_EQ(d[2], (Delimiter{",", ","}));
  EXPECT_EQ(d[3], (Delimiter{"||", "||"}));
  EXPECT_THROW(parse_delimiter_list("-,-"), UsageError);
  EXPECT_THROW(parse_delimiter_list("-,,&"), UsageError);
  EXPECT_THROW(parse_delimiter_list("a b"), UsageError);
  EXPECT_THROW(parse_delimiter_list("\xFF"), UsageError);
  // "original" is the unformatted candidate, not the literal word; it and "none" both replace
  // with "" yet are different candidates.
  auto o = parse_delimiter_list("original,none,.");
  ASSERT_EQ(o.size(), 3u);
  EXPECT_TRUE(o[0].original);
  EXPECT_EQ(o[0].name, "original");
  EXPECT_FALSE(o[1].original);
  EXPECT_EQ(o[2], (Delimiter{".", "."}));
  EXPECT_THROW(parse_delimiter_list("original,original"), UsageError);
}

// Issue 40, second pass: each whitespace run becomes one copy of the delimiter, so its length
// multiplies a document's size; a 100 KB delimiter in a 240 KB /v1/rag/normalize request built
// 7 GB. Past kMaxDelimiterBytes it is refused, quoting a bounded excerpt.
TEST(CnormFormat, ParseDelimiterBoundsTheLength) {
  const std::string longest(kMaxDelimiterBytes, 'Z');
  EXPECT_EQ(parse_delimiter(longest), (Delimiter{longest, longest}));
  EXPECT_EQ(parse_delimiter("[SEP]").text, "[SEP]");
  try {
    parse_delimiter(std::string(100000, 'Z'));
    FAIL() << "a 100 KB delimiter was accepted";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("is longer than 16 bytes"), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 200u) << msg;
  }
  EXPECT_THROW(parse_delimiter(longest + "Z"), UsageError);
  // A profile (C-NORM's, or tune's through the same parser) cannot carry one either.
  EXPECT_THROW(parse_delimiter_list("-," + std::string(17, '#')), UsageError);
}

TEST(CnormFormat, ModifiedUuid) {
  EXPECT_EQ(format_uuid("550e8400-e29b-41d4", "&"), "550e8400&e29b&41d4");
  EXPECT_EQ(format_uuid("550e8400-e29b-41d4", ""), "550e8400e29b41d4");
}

}  // namespace ragform::cnorm

// Issue 40, pass 19: a delimiter that is not UTF-8 is quoted with its bytes escaped (the raw 0xFF
// went to the terminal), and one holding a control character with the control escaped.
TEST(CnormFormat, ABadDelimiterIsQuotedEscaped) {
  try {
    ragform::cnorm::parse_delimiter("a\xff");
    ADD_FAILURE() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("delimiter 'a\\xFF' is not valid UTF-8"),
              std::string::npos)
        << e.what();
  }
  try {
    ragform::cnorm::parse_delimiter("\x1b[2J\n");
    ADD_FAILURE() << "accepted";
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find('\x1b'), std::string::npos) << e.what();
  }
}
