// Tokenizer unit tests on small hand-built vocabularies: bad metadata gives clear errors naming
// the file and the field; the SPM / BPE / WordPiece algorithms on cases small enough to work out
// by hand.
#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/gguf_image.h"

namespace ragform::tok {
namespace {

using gguf::Value;
using gguf::ValueType;

struct Spec {
  std::string model = "gpt2";
  std::string pre = "gpt-2";
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  std::vector<std::pair<std::string, Value>> extra;
};

// Serialises the spec as a vocabulary-only GGUF and loads a tokenizer from it. The bytes stay
// alive in `keep` because the File views into them.
std::unique_ptr<Tokenizer> load(const Spec& s, std::string* keep) {
  gguf::Writer w;
  w.set("general.architecture", Value::str("llama"));
  if (!s.model.empty()) w.set("tokenizer.ggml.model", Value::str(s.model));
  if (!s.pre.empty()) w.set("tokenizer.ggml.pre", Value::str(s.pre));
  if (!s.tokens.empty()) w.set("tokenizer.ggml.tokens", Value::str_array(s.tokens));
  if (!s.scores.empty()) {
    std::vector<Value> v;
    for (float x : s.scores) v.push_back(Value::f32(x));
    w.set("tokenizer.ggml.scores", Value::array(ValueType::F32, v));
  }
  if (!s.types.empty()) {
    std::vector<Value> v;
    for (int32_t x : s.types) v.push_back(Value::i32(x));
    w.set("tokenizer.ggml.token_type", Value::array(ValueType::I32, v));
  }
  if (!s.merges.empty()) w.set("tokenizer.ggml.merges", Value::str_array(s.merges));
  for (const auto& [k, v] : s.extra) w.set(k, v);
  *keep = w.to_bytes();
  static std::vector<std::unique_ptr<gguf::File>> files;  // outlive the tokenizers
  files.push_back(ragform::testing::parse_gguf(*keep, "synthetic.gguf"));
  return Tokenizer::from_gguf(*files.back());
}

// Expects loading to fail with a message naming the file, the field and the reason.
void expect_error(const Spec& s, const std::string& field, const std::string& why) {
  std::string keep;
  try {
    load(s, &keep);
    FAIL() << "expected an error about " << field;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("synthetic.gguf"), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << msg;
  }
}

Spec small_bpe() {
  Spec s;
  s.tokens = {"a", "b", "c", "ab", "abc", "<|endoftext|>", "<|im_end|>", "\xc4\xa0"};
  s.merges = {"a b", "ab c"};
  s.types = {1, 1, 1, 1, 1, 3, 1, 1};
  return s;
}

TEST(TokenizerErrors, UnknownModelKind) {
  Spec s = small_bpe();
  s.model = "sentencepiece-unigram";
  expect_error(s, "tokenizer.ggml.model", "unknown tokenizer model 'sentencepiece-unigram'");
}

TEST(TokenizerErrors, MissingModel) {
  Spec s = small_bpe();
  s.model = "";
  expect_error(s, "tokenizer.ggml.model", "missing");
}

TEST(TokenizerErrors, UnknownPreTokenizer) {
  Spec s = small_bpe();
  s.pre = "my-new-model";
  expect_error(s, "tokenizer.ggml.pre", "unknown pre-tokenizer 'my-new-model'");
}

TEST(TokenizerErrors, ScoresLengthMismatch) {
  Spec s = small_bpe();
  s.scores = {0.f, 1.f};
  expect_error(s, "tokenizer.ggml.scores", "2 scores for 8 tokens");
}

TEST(TokenizerErrors, TokenTypeLengthMismatch) {
  Spec s = small_bpe();
  s.types = {1};
  expect_error(s, "tokenizer.ggml.token_type", "1 types for 8 tokens");
}

TEST(TokenizerErrors, MergeWithUnknownToken) {
  Spec s = small_bpe();
  s.merges = {"a b", "ab zz"};
  expect_error(s, "tokenizer.ggml.merges", "entry 1 'ab zz' references unknown token 'zz'");
}

TEST(TokenizerErrors, MalformedMerge) {
  Spec s = small_bpe();
  s.merges = {"ab"};
  expect_error(s, "tokenizer.ggml.merges", "entry 0 'ab' is not 'left right'");
}

TEST(TokenizerErrors, MissingMergesAndTokens) {
  Spec s = small_bpe();
  s.merges.clear();
  expect_error(s, "tokenizer.ggml.merges", "missing");
  Spec t = small_bpe();
  t.tokens.clear();
  t.types.clear();
  t.merges.clear();
  t.model = "llama";
  expect_error(t, "tokenizer.ggml.tokens", "missing");
}

TEST(TokenizerErrors, DuplicateToken) {
  Spec s = small_bpe();
  s.tokens[2] = "a";
  expect_error(s, "tokenizer.ggml.tokens", "duplicate token 'a' at ids 0 and 2");
}

TEST(TokenizerErrors, AddBosWithoutBosToken) {
  Spec s = small_bpe();  // the gpt2 default BOS id 11 is outside this 8-token vocabulary
  s.extra.push_back({"tokenizer.ggml.add_bos_token", Value::boolean(true)});
  expect_error(s, "tokenizer.ggml.add_bos_token", "bos_token_id is not set");
}

TEST(TokenizerBpe, MergesByRankLeftmostFirst) {
  std::string keep;
  auto tok = load(small_bpe(), &keep);
  EXPECT_EQ(tok->kind(), "bpe");
  EXPECT_EQ(tok->pre(), "gpt-2");
  // "abcab": a+b (rank 0) at both places, then ab+c (rank 1) -> [abc, ab].
  EXPECT_EQ(tok->encode("abcab", false, false), (std::vector<int32_t>{4, 3}));
  // " a": GPT-2 maps the space byte to U+0120, a token here; no merge joins it to "a".
  EXPECT_EQ(tok->encode(" a", false, false), (std::vector<int32_t>{7, 0}));
  // 'd' is neither a token nor a byte token: llama.cpp drops it.
  EXPECT_EQ(tok->encode("ad", false, false), (std::vector<int32_t>{0}));
  EXPECT_EQ(tok->decode({4, 3}), "abcab");
  EXPECT_EQ(tok->decode({7, 0}), " a");
}

TEST(TokenizerBpe, SpecialTokensAndEog) {
  std::string keep;
  auto tok = load(small_bpe(), &keep);
  // Control tokens are parsed only with parse_special.
  EXPECT_EQ(tok->encode("ab<|endoftext|>c", false, true), (std::vector<int32_t>{3, 5, 2}));
  // "<|im_end|>" is a normal token in the file, but llama.cpp's EOG heuristic makes it control.
  EXPECT_TRUE(tok->is_eog(6));
  EXPECT_TRUE(tok->is_control(6));
  EXPECT_TRUE(tok->is_eog(5));
  EXPECT_FALSE(tok->is_eog(3));
  EXPECT_EQ(tok->encode("<|im_end|>", false, true), (std::vector<int32_t>{6}));
  EXPECT_EQ(tok->token_to_piece(5, true), "<|endoftext|>");
  EXPECT_EQ(tok->token_to_piece(5, false), "");
  EXPECT_EQ(tok->find_token("abc"), 4);
  EXPECT_FALSE(tok->find_token("zzz").has_value());
  EXPECT_THROW(tok->token_to_piece(8), Error);
  EXPECT_THROW(tok->token_to_piece(-1), Error);
}

Spec small_spm() {
  Spec s;
  s.model = "llama";
  s.pre = "default";
  //          0        1      2       3       4    5    6      7     8       9
  s.tokens = {"<unk>",
              "<s>",
              "</s>",
              "\xe2\x96\x81",
              "a",
              "b",
              "\xe2\x96\x81"
              "a",
              "ab",
              "\xe2\x96\x81"
              "ab",
              "<0x63>"};
  s.scores = {0, 0, 0, -1, -2, -2, -3, -1, -0.5f, 0};
  s.types = {2, 3, 3, 1, 1, 1, 1, 1, 1, 6};
  return s;
}

TEST(TokenizerSpm, ScoreMergesSpacePrefixAndByteFallback) {
  std::string keep;
  auto tok = load(small_spm(), &keep);
  EXPECT_EQ(tok->kind(), "spm");
  EXPECT_TRUE(tok->add_bos());
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  // "ab" -> "▁ab": bigrams "▁a" (-3) and "ab" (-1); "ab" wins, then "▁"+"ab" (-0.5).
  EXPECT_EQ(tok->encode("ab", false, false), (std::vector<int32_t>{8}));
  EXPECT_EQ(tok->encode("ab", true, false), (std::vector<int32_t>{1, 8}));
  // "c" has no token: byte fallback to <0x63>; the escaped space stays a token.
  EXPECT_EQ(tok->encode("c", false, false), (std::vector<int32_t>{3, 9}));
  EXPECT_EQ(tok->token_to_piece(9), "c");
  EXPECT_EQ(tok->token_to_piece(8), " ab");
  // The first token's leading space is dropped by decode, so text round-trips.
  EXPECT_EQ(tok->decode(tok->encode("ab c", false, false)), "ab c");
  // A control token splits the text; the text after it gets the space prefix again.
  EXPECT_EQ(tok->encode("a</s>a", false, true), (std::vector<int32_t>{6, 2, 6}));
  EXPECT_TRUE(tok->is_eog(2));
}

// The SPM text is cut before a U+2581 only where no token spans the cut: here "a\u2581b" is a
// token, so "a b" must still merge across the space.
TEST(TokenizerSpm, MergesAcrossSpaceWhenATokenSpansIt) {
  Spec s;
  s.model = "llama";
  s.pre = "default";
  s.tokens = {"<unk>",
              "<s>",
              "</s>",
              "\xe2\x96\x81",
              "a",
              "b",
              "a\xe2\x96\x81",
              "a\xe2\x96\x81"
              "b"};
  s.scores = {0, 0, 0, -3, -3, -3, -1, -0.5f};
  s.types = {2, 3, 3, 1, 1, 1, 1, 1};
  std::string keep;
  auto tok = load(s, &keep);
  EXPECT_EQ(tok->encode("a b", false, false), (std::vector<int32_t>{3, 7}));
  EXPECT_EQ(tok->encode("b b", false, false), (std::vector<int32_t>{3, 5, 3, 5}));
  EXPECT_EQ(tok->decode(tok->encode("a b", false, false)), "a b");
}

TEST(TokenizerSpm, AddSpacePrefixOff) {
  Spec s = small_spm();
  s.extra.push_back({"tokenizer.ggml.add_space_prefix", Value::boolean(false)});
  std::string keep;
  auto tok = load(s, &keep);
  EXPECT_EQ(tok->encode("ab", false, false), (std::vector<int32_t>{7}));
}

TEST(TokenizerWpm, LowercaseAccentsPunctuationAndUnknown) {
  Spec s;
  s.model = "bert";
  s.pre = "";
  // WordPiece vocabularies as llama.cpp's converter stores them: word starts carry U+2581,
  // continuations lose their "##".
  s.tokens = {"[PAD]",
              "[UNK]",
              "[CLS]",
              "[SEP]",
              "\xe2\x96\x81"
              "cafe",
              "\xe2\x96\x81"
              "!",
              "\xe2\x96\x81"
              "un",
              "able"};
  s.types = {3, 3, 3, 3, 1, 1, 1, 1};
  s.extra = {{"tokenizer.ggml.unknown_token_id", Value::u32(1)},
             {"tokenizer.ggml.bos_token_id", Value::u32(2)},
             {"tokenizer.ggml.seperator_token_id", Value::u32(3)}};
  std::string keep;
  auto tok = load(s, &keep);
  EXPECT_EQ(tok->kind(), "wpm");
  // "Café!" -> NFD strips the accent, lowercases, '!' is its own word.
  EXPECT_EQ(tok->encode("Caf\xc3\xa9!", false, false), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(tok->encode("unable", true, false), (std::vector<int32_t>{2, 6, 7, 3}));
  // A word that cannot be covered becomes one [UNK].
  EXPECT_EQ(tok->encode("unxyz cafe", false, false), (std::vector<int32_t>{1, 4}));
}

TEST(TokenizerRobustness, InvalidUtf8NeverThrows) {
  std::string k1, k2;
  auto bpe = load(small_bpe(), &k1);
  auto spm = load(small_spm(), &k2);
  const std::string bad[] = {
      "\xff",    "\xc3", "a\xe2\x96", "\xf4\x90\x80\x80", "\xed\xa0\x80", std::string("a\0b", 3),
      "\xc0\x80"};
  for (const auto& s : bad) {
    for (bool ps : {false, true}) {
      EXPECT_NO_THROW(bpe->decode(bpe->encode(s, true, ps)));
      EXPECT_NO_THROW(spm->decode(spm->encode(s, true, ps)));
    }
  }
}

}  // namespace
}  // namespace ragform::tok

#include "engine/tokenizer/pretokenize.h"

namespace ragform::tok {
namespace {

std::vector<std::string> split_with(const std::string& pre, const std::string& text) {
  const auto spec = find_pre_tokenizer(pre);
  EXPECT_TRUE(spec.has_value()) << pre;
  PreTokenizer p(spec->regexes);
  std::vector<std::string> words;
  p.split(text, &words);
  return words;
}

using Words = std::vector<std::string>;

// Worked by hand from llama.cpp's regex lists: each regex splits the pieces of the previous one
// into matches and gaps.
TEST(PreTokenizers, DefaultChainsFourRegexes) {
  // [\p{P}$+<=>^~|]+ | GPT-2 | \p{N}+ | [0-9][0-9][0-9]
  EXPECT_EQ(split_with("default", "Hello, world 12345!"),
            (Words{"Hello", ",", " world", " ", "123", "45", "!"}));
  EXPECT_EQ(split_with("", "a+b"), (Words{"a", "+", "b"}));  // missing pre = default
}

TEST(PreTokenizers, DeepseekCoderMixesCategoryAndCodepointRegexes) {
  // [\r\n] | \s?\p{L}+ | \s?\p{P}+ | [CJK ranges]+ (code point path) | \p{N}
  EXPECT_EQ(split_with("deepseek-coder",
                       "ab, 12\n\xe6\x97\xa5\xe6\x9c\xac"
                       "c"),
            (Words{"ab", ",", " ", "1", "2", "\n", "\xe6\x97\xa5\xe6\x9c\xac", "c"}));
}

TEST(PreTokenizers, StarcoderSplitsDigitsFirst) {
  // \p{N} | GPT-2
  EXPECT_EQ(split_with("starcoder", "x = 42;"), (Words{"x", " =", " ", "4", "2", ";"}));
}

TEST(PreTokenizers, Qwen2AndLlama3DifferOnDigitRuns) {
  EXPECT_EQ(split_with("qwen2", "in 2024"), (Words{"in", " ", "2", "0", "2", "4"}));
  EXPECT_EQ(split_with("llama-bpe", "in 20245"), (Words{"in", " ", "202", "45"}));
  // Case-insensitive contractions, newline runs keep their leading spaces.
  EXPECT_EQ(split_with("llama-bpe", "WE'RE  \n\nok"), (Words{"WE", "'RE", "  \n\n", "ok"}));
}

TEST(PreTokenizers, UnknownNameIsNotFound) {
  EXPECT_FALSE(find_pre_tokenizer("no-such-pre").has_value());
  EXPECT_TRUE(find_pre_tokenizer("llama3").has_value());  // alias of llama-bpe
}

}  // namespace
}  // namespace ragform::tok
