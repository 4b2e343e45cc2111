// SpotlightRAG equations (5)-(8), the positional prior, encoders' OOV rule and piece alignment,
// checked on hand-computed examples.
#include <cmath>

#include <gtest/gtest.h>

#include "base/error.h"
#include "pipelines/spotlight/encoder.h"
#include "pipelines/spotlight/lexical.h"
#include "pipelines/spotlight/scoring.h"
#include "support/test_support.h"
#include "text/sentences.h"

namespace ragform::spotlight {
namespace {

// s = [[1, 0, .5], [0, .5, .5]], tokens 0,1 in sentence 0 and token 2 in sentence 1, alpha = 1/2.
// (6): max_i s_ij = [1, .5, .5]; w = [e, e^.5, e^.5] / (e + 2 e^.5) = [0.451863, 0.274069,
// 0.274069].
TEST(SpotlightScoring, HandExampleEquations5to8) {
  std::vector<std::vector<double>> s{{1.0, 0.0, 0.5}, {0.0, 0.5, 0.5}};
  std::vector<int> sent{0, 0, 1};
  std::vector<double> alpha{0.5, 0.5}, w;
  // k = 1: R0 = 1/2 (1 * w0 + .5 * w1) = 0.294449; R1 = 1/2 (.5 w2 + .5 w2) = 0.137034.
  auto R = sentence_relevance(s, sent, 2, alpha, 1, Weighting::Softmax, &w);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NEAR(w[0], 0.45186276, 1e-7);
  EXPECT_NEAR(w[1], 0.27406862, 1e-7);
  EXPECT_NEAR(w[2], 0.27406862, 1e-7);
  EXPECT_NEAR(R[0], 0.29444854, 1e-7);
  EXPECT_NEAR(R[1], 0.13703431, 1e-7);
  // k = 2: the sum is divided by k even for the one-token sentence 1 (eq. 7 as written).
  R = sentence_relevance(s, sent, 2, alpha, 2, Weighting::Softmax);
  EXPECT_NEAR(R[0], 0.14722427, 1e-7);
  EXPECT_NEAR(R[1], 0.06851715, 1e-7);
  // Uniform w (Table 3 "w/o importance weighting"): w = 1/3; R0 = 1/2 (1 + .5)/3 = 0.25.
  R = sentence_relevance(s, sent, 2, alpha, 1, Weighting::Uniform, &w);
  EXPECT_NEAR(w[0], 1.0 / 3, 1e-12);
  EXPECT_NEAR(R[0], 0.25, 1e-12);
  EXPECT_NEAR(R[1], 0.5 * (0.5 + 0.5) / 3, 1e-12);
}

TEST(SpotlightScoring, RejectsBadArguments) {
  std::vector<std::vector<double>> s{{1.0}};
  EXPECT_THROW(sentence_relevance(s, {0}, 1, {1.0}, 0, Weighting::Softmax), UsageError);
  EXPECT_THROW(sentence_relevance(s, {0}, 1, {1.0, 1.0}, 1, Weighting::Softmax), Error);
  EXPECT_THROW(sentence_relevance(s, {3}, 1, {1.0}, 1, Weighting::Softmax), Error);
}

TEST(SpotlightScoring, PositionalPriorShape) {
  PositionalPrior pi;
  EXPECT_DOUBLE_EQ(pi(0.0), 1.0);
  EXPECT_DOUBLE_EQ(pi(0.2), 1.0);
  EXPECT_NEAR(pi(0.5), 0.75, 1e-12);  // halfway down from 1 to the 0.5 floor
  EXPECT_NEAR(pi(0.79), 0.5 + 0.5 * 0.01 / 0.6, 1e-12);
  EXPECT_DOUBLE_EQ(pi(0.8), 0.75);  // the rebound of the final 20%
  EXPECT_DOUBLE_EQ(pi(1.0), 0.75);
}

WordVectors tiny() {
  const float r = static_cast<float>(1 / std::sqrt(2.0));
  return WordVectors::from_map({{"a", {1, 0}}, {"b", {0, 1}}, {"c", {r, r}}, {"the", {3, 4}}});
}

// Query "a b"; one document "a c. b b." with sentences [0,4) and [5,9).
// Cosines: q_a -> [1, .7071, 0, 0], q_b -> [0, .7071, 1, 1]; max_i = [1, .7071, 1, 1];
// w = softmax = [0.266944, 0.199168, 0.266944, 0.266944]. k = 1, alpha = 1/2 (uniform):
// R0 = 1/2 (1 * w0 + .7071 * w1) = 0.203888; R1 = 1/2 (0 + 1 * w2) = 0.133472.
TEST(SpotlightScoring, TinyVectorsEndToEnd) {
  WordVectors v = tiny();
  StaticEncoder enc(v);
  Document d{"d0", "T", "a c. b b.", {{0, 4}, {5, 9}}};
  ScoreParams p;
  p.top_k = 1;
  p.lambda = 0;
  p.alpha = Alpha::Uniform;
  ScoredQuestion sq = score_question(enc, "a b", {d}, p);
  ASSERT_EQ(sq.sentences.size(), 2u);
  EXPECT_NEAR(sq.sentences[0].R, 0.20388843, 1e-6);
  EXPECT_NEAR(sq.sentences[1].R, 0.13347208, 1e-6);
  EXPECT_DOUBLE_EQ(sq.sentences[0].R_norm, 1.0);
  EXPECT_DOUBLE_EQ(sq.sentences[1].R_norm, 0.0);
  // Match matrix of sentence 0: a -> a (1), b -> c. (0.7071).
  ASSERT_EQ(sq.sentences[0].matches.size(), 2u);
  EXPECT_EQ(sq.sentences[0].matches[0].q, "a");
  EXPECT_EQ(sq.sentences[0].matches[0].c, "a");
  EXPECT_NEAR(sq.sentences[0].matches[0].s, 1.0, 1e-6);
  EXPECT_EQ(sq.sentences[0].matches[1].c, "c.");
  EXPECT_NEAR(sq.sentences[0].matches[1].s, 0.70710678, 1e-6);
  EXPECT_EQ(sq.sentences[0].matches[1].c_span, (text::TextSpan{2, 4}));

  // lambda = 1: sentence 1 sits at x = 1 (the rebound, pi = .75), sentence 0 at x = 0 (pi = 1):
  // s^ of sentence-1 tokens is lowered by 1 - .75 = .25 (q_a: 0 -> -.25, q_b: 1 -> .75);
  // max_i s^ = [1, .7071, .75, .75].
  p.lambda = 1;
  sq = score_question(enc, "a b", {d}, p);
  const double e1 = std::exp(1.0), ec = std::exp(1 / std::sqrt(2.0)), e75 = std::exp(0.75);
  const double z = e1 + ec + 2 * e75;
  EXPECT_NEAR(sq.sentences[0].R, 0.5 * (e1 / z + (1 / std::sqrt(2.0)) * ec / z), 1e-6);
  EXPECT_NEAR(sq.sentences[1].R, 0.5 * (-0.25 * e75 / z + 0.75 * e75 / z), 1e-6);
}

// The prior lowers every similarity outside the lead, whatever its sign. Query "a"; a document of
// three sentences "n." whose token has cosine -1/2 with "a"; lambda = 1: rho = pi(x) = 1, .75, .75
// at x = 0, .5, 1, so s^ = -.5, -.75, -.75 (a product s * rho would give -.5, -.375, -.375 and
// rank the middle first). k = 1, one query token (alpha = 1): w = softmax(s^) =
// [e^-.5, e^-.75, e^-.75] / Z; R_t = s^_t w_t.
TEST(SpotlightScoring, PriorFavoursTheLeadForNegativeSimilarities) {
  WordVectors v =
      WordVectors::from_map({{"a", {1, 0}}, {"n", {-0.5f, static_cast<float>(std::sqrt(0.75))}}});
  StaticEncoder enc(v);
  Document d{"d0", "", "n. n. n.", {{0, 2}, {3, 5}, {6, 8}}};
  ScoreParams p;
  p.top_k = 1;
  p.lambda = 1;
  p.alpha = Alpha::Uniform;
  ScoredQuestion sq = score_question(enc, "a", {d}, p);
  ASSERT_EQ(sq.sentences.size(), 3u);
  const double z = std::exp(-0.5) + 2 * std::exp(-0.75);
  EXPECT_NEAR(sq.sentences[0].R, -0.5 * std::exp(-0.5) / z, 1e-6);    // -0.195496
  EXPECT_NEAR(sq.sentences[1].R, -0.75 * std::exp(-0.75) / z, 1e-6);  // -0.228378
  EXPECT_NEAR(sq.sentences[2].R, sq.sentences[1].R, 1e-12);
  EXPECT_GT(sq.sentences[0].R, sq.sentences[1].R);
  EXPECT_DOUBLE_EQ(apply_prior(-0.5, 0.75), -0.75);
  EXPECT_DOUBLE_EQ(apply_prior(1.0, 0.75), 0.75);  // the product's value at s = 1
  // The mean-vector ablation takes the same penalty: R = cos - (1 - rho).
  p.scorer = Scorer::MeanVector;
  sq = score_question(enc, "a", {d}, p);
  EXPECT_NEAR(sq.sentences[0].R, -0.5, 1e-6);
  EXPECT_NEAR(sq.sentences[1].R, -0.75, 1e-6);
}

// Section 3.6's truncation: "a c. b b." has tokens a, c., b, b. (sentence 1 starts at byte 5).
TEST(SpotlightScoring, MaxContextTokensCutsEachContext) {
  WordVectors v = tiny();
  StaticEncoder enc(v);
  Document d{"d0", "T", "a c. b b.", {{0, 4}, {5, 9}}};
  ScoreParams p;
  p.top_k = 1;
  p.lambda = 0;
  p.alpha = Alpha::Uniform;
  p.max_context_tokens = 2;  // a, c.: sentence 1 is cut away
  ScoredQuestion sq = score_question(enc, "a b", {d}, p);
  ASSERT_EQ(sq.sentences.size(), 1u);
  EXPECT_EQ(sq.context_tokens, 2u);
  p.max_context_tokens = 3;  // a, c., b: sentence 1 keeps its first token
  sq = score_question(enc, "a b", {d}, p);
  ASSERT_EQ(sq.sentences.size(), 2u);
  EXPECT_EQ(sq.context_tokens, 3u);
  // max_i s = [1, .7071, 1]: w_b = e / (2e + e^.7071); R1 = 1/2 (0 + 1 * w_b).
  const double e1 = std::exp(1.0), ec = std::exp(1 / std::sqrt(2.0));
  EXPECT_NEAR(sq.sentences[1].R, 0.5 * e1 / (2 * e1 + ec), 1e-6);
  EXPECT_EQ(paper_score_params().max_context_tokens, 512);
  EXPECT_EQ(ScoreParams{}.max_context_tokens, 0);
}

// The paper's settings weight query tokens by its stated fallback alpha_i = 1/n (section 3.4);
// IDF, which the paper never names, is ragform's default only.
TEST(SpotlightScoring, PaperSettingsUseUniformAlpha) {
  const ScoreParams paper = paper_score_params();
  EXPECT_EQ(paper.alpha, Alpha::Uniform);
  EXPECT_EQ(alpha_spec(paper), "uniform");
  EXPECT_EQ(paper.top_k, 5);
  EXPECT_EQ(paper.lambda, 0.5);
  EXPECT_EQ(default_score_params().alpha, Alpha::Idf);
}

// Title tokens as context of every sentence: query "b", title "b", text "a." (no b in it).
TEST(SpotlightScoring, TitleContext) {
  WordVectors v = tiny();
  StaticEncoder enc(v);
  Document d{"d0", "b", "a.", {{0, 2}}};
  ScoreParams p;
  p.top_k = 1;
  p.lambda = 0;
  p.alpha = Alpha::Uniform;
  ScoredQuestion sq = score_question(enc, "b", {d}, p);
  EXPECT_NEAR(sq.sentences[0].R, 0.0, 1e-12);  // cos(b, a) = 0
  p.title_context = true;
  sq = score_question(enc, "b", {d}, p);
  // Context tokens a (s 0) and title b (s 1): w = [1, e] / (1 + e); R = 1 * e / (1 + e).
  EXPECT_NEAR(sq.sentences[0].R, std::exp(1.0) / (1 + std::exp(1.0)), 1e-6);
  // The match matrix shows text tokens only (the title is not in the document's text).
  ASSERT_EQ(sq.sentences[0].matches.size(), 1u);
  EXPECT_EQ(sq.sentences[0].matches[0].c, "a.");
}

// BM25 of lexical.h by hand: query {a, b}; documents [x a b], [x c]; N = 2, avgdl = 2.5,
// idf(a) = idf(b) = ln(1 + 1.5 / 1.5) = ln 2; document 0 (length 3): each term adds
// ln 2 * 2.2 / (1 + 1.2 (0.25 + 0.75 * 3 / 2.5)) = ln 2 * 2.2 / 2.38.
TEST(SpotlightScoring, Bm25AndTheLexicalMix) {
  auto sc = bm25_scores({"a", "b", "a"}, {{"x", "a", "b"}, {"x", "c"}});
  ASSERT_EQ(sc.size(), 2u);
  EXPECT_NEAR(sc[0], 2 * std::log(2.0) * 2.2 / 2.38, 1e-12);
  EXPECT_DOUBLE_EQ(sc[1], 0.0);
  EXPECT_EQ(bm25_terms("The Tulsa, (1998)"), (std::vector<std::string>{"the", "tulsa", "1998"}));

  // Two paragraphs: "x" / "c a." and "y" / "b b b." for the query "a b"; sentence BM25 over
  // title + sentence: [x c a] holds a, [y b b b] holds b three times.
  WordVectors v = tiny();
  StaticEncoder enc(v);
  std::vector<Document> docs{{"d0", "x", "c a.", {{0, 4}}}, {"d1", "y", "b b b.", {{0, 6}}}};
  ScoreParams p;
  p.top_k = 1;
  p.lambda = 0;
  p.alpha = Alpha::Uniform;
  auto plain = score_question(enc, "a b", docs, p);
  std::vector<double> rn = {plain.sentences[0].R_norm, plain.sentences[1].R_norm};
  // BM25 by hand: idf = ln 2 for a and b, avgdl = 3.5; [x c a]: 2.2 ln2 / (1 + 1.2 (0.25 + 0.75 *
  // 3 / 3.5)); [y b b b] (tf 3, length 4): 3 * 2.2 ln2 / (3 + 1.2 (0.25 + 0.75 * 4 / 3.5)).
  const double l0 = 2.2 * std::log(2.0) / (1 + 1.2 * (0.25 + 0.75 * 3 / 3.5));
  const double l1 = 3 * 2.2 * std::log(2.0) / (3 + 1.2 * (0.25 + 0.75 * 4 / 3.5));
  ASSERT_GT(l1, l0);  // min-max: sentence 1 -> 1, sentence 0 -> 0
  p.lexical_weight = 0.25;
  auto mixed = score_question(enc, "a b", docs, p);
  EXPECT_NEAR(mixed.sentences[0].R, 0.75 * rn[0] + 0.25 * 0.0, 1e-9);
  EXPECT_NEAR(mixed.sentences[1].R, 0.75 * rn[1] + 0.25 * 1.0, 1e-9);
  // The paragraph term scores whole paragraphs (here one sentence each: the same BM25).
  p.lexical_weight = 0;
  p.paragraph_weight = 1;
  auto par = score_question(enc, "a b", docs, p);
  EXPECT_NEAR(par.sentences[0].R, 0.0, 1e-12);
  EXPECT_NEAR(par.sentences[1].R, 1.0, 1e-12);
  p.paragraph_weight = 0.8;
  p.lexical_weight = 0.3;
  EXPECT_THROW(score_question(enc, "a b", docs, p), UsageError);
}

// IDF alpha: with two passages, "a" in both (df 2) and "b" in one (df 1):
// idf = ln(1 + .5/2.5) = 0.182322 and ln(1 + 1.5/1.5) = 0.693147 -> alpha = [0.208264, 0.791736].
TEST(SpotlightScoring, IdfAlpha) {
  WordVectors v = tiny();
  StaticEncoder enc(v);
  std::vector<Document> docs{{"d0", "", "a.", {{0, 2}}}, {"d1", "", "a b.", {{0, 4}}}};
  ScoreParams p;
  p.top_k = 1;
  p.lambda = 0;
  p.alpha = Alpha::Idf;
  ScoredQuestion sq = score_question(enc, "a b", docs, p);
  // Context tokens a, a, b: max_i = [1, 1, 1] -> w = 1/3 each.
  const double ia = std::log(1.2), ib = std::log(2.0), aa = ia / (ia + ib), ab = ib / (ia + ib);
  EXPECT_NEAR(sq.sentences[0].R, aa * (1.0 / 3), 1e-6);  // b's best in "a." has cosine 0
  EXPECT_NEAR(sq.sentences[1].R, aa / 3 + ab / 3, 1e-6);
}

TEST(SpotlightEncoder, OovRuleAndIdentityTokens) {
  EXPECT_EQ(word_keys("Paris,"), (std::vector<std::string>{"Paris,", "paris,", "paris"}));
  EXPECT_EQ(word_keys("Tulsa's"),
            (std::vector<std::string>{"Tulsa's", "tulsa's", "tulsa's", "tulsa"}));
  EXPECT_TRUE(word_keys("--").empty());
  WordVectors v = tiny();
  StaticEncoder match(v, OovPolicy::Match), skip(v, OovPolicy::Skip);
  EncodedText m = match.encode("The Tulsa, a -- tulsa");
  ASSERT_EQ(m.tokens.size(), 4u);  // "--" dropped as punctuation
  EXPECT_EQ(m.words, 4u);
  EXPECT_EQ(m.oov, 2u);
  EXPECT_EQ(m.tokens[0].key, "the");  // lowercased lookup
  EXPECT_GE(m.tokens[0].vec, 0);
  EXPECT_EQ(m.tokens[1].vec, -1);
  EXPECT_EQ(m.tokens[1].key, "tulsa");
  // Identity tokens: 1 to the same key, 0 to anything else.
  EXPECT_DOUBLE_EQ(token_similarity(m, m.tokens[1], m, m.tokens[3]), 1.0);
  EXPECT_DOUBLE_EQ(token_similarity(m, m.tokens[1], m, m.tokens[2]), 0.0);
  EncodedText s = skip.encode("The Tulsa, a -- tulsa");
  EXPECT_EQ(s.tokens.size(), 2u);
  EXPECT_EQ(s.oov, 2u);
  // Vectors are unit-normalised: "the" = (3,4)/5.
  EXPECT_NEAR(m.row(m.tokens[0].vec)[0], 0.6, 1e-6);
  // A cosine is within [-1, 1]: float rows a rounding past unit length give 1 (pass 23: "s":
  // 1.00000001 for band/band).
  EncodedText over;
  over.dim = 2;
  over.vectors = {0.70710683f, 0.70710683f, -0.70710683f, -0.70710683f};  // |v|^2 = 1.0000001
  Token a, b;
  a.vec = 0;
  b.vec = 1;
  over.tokens = {a, b};
  EXPECT_EQ(token_similarity(over, over.tokens[0], over, over.tokens[0]), 1.0);
  EXPECT_EQ(token_similarity(over, over.tokens[0], over, over.tokens[1]), -1.0);
}

TEST(SpotlightEncoder, WordVectorFileErrors) {
  auto dir = testing::temp_dir("spotlight_vectors");
  testing::write_file(dir / "bad.json", R"({"a": [1, 2], "b": [1]})");
  try {
    WordVectors::load((dir / "bad.json").string());
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("word 'b' has 1 values, expected 2"), std::string::npos)
        << e.what();
  }
  testing::write_file(dir / "nan.json", R"({"a": [1, "x"]})");
  EXPECT_THROW(WordVectors::load((dir / "nan.json").string()), Error);
  testing::write_file(dir / "broken.json", R"({"a": [1, )");
  EXPECT_THROW(WordVectors::load((dir / "broken.json").string()), Error);
  EXPECT_THROW(WordVectors::load((dir / "missing.json").string()), Error);
}

// Read as a stream (issue 40, A5): every shape a tree parse refused is refused with the word named,
// a repeated word keeps its last row as a parsed object did, and a bad text is located.
// Issue 40, fourth pass: the work of one question (query tokens x context tokens) is bounded
// before the similarity matrix is built: a 2,100-token question over 2,000 context tokens is
// refused naming the limit; 2,000 x 2,000 (4.0M pairs) is scored.
TEST(SpotlightScoring, QueryTimesContextTokensIsBounded) {
  WordVectors v = tiny();
  StaticEncoder enc(v);
  std::string text;
  for (int i = 0; i < 2000; ++i) text += i % 100 == 99 ? "a. " : "a ";
  Document d{"d0", "", text, {}};
  for (const text::Sentence& st : text::split_sentences(text)) d.sentences.push_back(st.span);
  auto words = [](int n) {
    std::string q;
    for (int i = 0; i < n; ++i) q += "b ";
    return q;
  };
  const ScoreParams p;  // no title, no lexical terms: 2,000 context tokens exactly
  EXPECT_EQ(score_question(enc, words(2000), {d}, p).query_tokens, 2000u);
  try {
    score_question(enc, words(2100), {d}, p);
    ADD_FAILURE() << "4.2M token pairs scored";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("a question of 2100 tokens over 2000 context tokens is "
                                         "4200000 token pairs to score, more than the limit of "
                                         "4194304"),
              std::string::npos)
        << e.what();
  }
}

TEST(SpotlightEncoder, WordVectorFileShapes) {
  auto dir = testing::temp_dir("spotlight_vectors_shapes");
  auto message = [&](const std::string& text) {
    testing::write_file(dir / "v.json", text);
    try {
      WordVectors::load((dir / "v.json").string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  auto has = [](const std::string& m, const std::string& part) {
    return m.find(part) != std::string::npos;
  };
  EXPECT_PRED2(has, message("[]"), "expected a non-empty object");
  EXPECT_PRED2(has, message("3"), "expected a non-empty object");
  EXPECT_PRED2(has, message("{}"), "expected a non-empty object");
  EXPECT_PRED2(has, message(R"({"a": 1})"), "word 'a': expected a non-empty array");
  EXPECT_PRED2(has, message(R"({"a": []})"), "word 'a': expected a non-empty array");
  EXPECT_PRED2(has, message(R"({"a": {"b": [1]}})"), "word 'a': expected a non-empty array");
  EXPECT_PRED2(has, message(R"({"a": [1, [2]]})"), "word 'a': non-numeric value an array");
  EXPECT_PRED2(has, message(R"({"a": [1, true]})"), "word 'a': non-numeric value true");
  EXPECT_PRED2(has, message(R"({"a": [1, null]})"), "word 'a': non-numeric value null");
  EXPECT_PRED2(has, message(R"({"a": [1, {}]})"), "word 'a': non-numeric value an object");
  EXPECT_PRED2(has, message("{\"a\": [1, 2],\n \"b\": [1, 2, 3]}"), "word 'b' has 3 values");
  EXPECT_PRED2(has, message("{\"a\": [1, 2],\n \"b\": [1, ]}"),
               "v.json:2: word vectors is not valid JSON");
  EXPECT_PRED2(has, message(R"({"a": [1e999]})"), "1e999 does not fit a double");
  EXPECT_PRED2(has, message(R"({"a": [1e39, 2]})"), "word 'a': value out of float range");
  EXPECT_PRED2(has, message(R"({"a": [1, -1e39]})"), "word 'a': value out of float range");
  // A word given twice is refused where its second row starts (it kept the last row silently
  // until the JSON parse refused every duplicate key, issue 40 pass 10).
  EXPECT_PRED2(has, message(R"({"a": [1, 0], "b": [0, 1], "a": [0, 2]})"),
               "duplicate key at column 28: 'a' twice in one object");
}

TEST(SpotlightEncoder, PieceAlignment) {
  // BOS (not in the text), a SentencePiece space marker, a byte-level marker, a plain space.
  auto sp = align_pieces("Hello world, again",
                         {"<s>", "\xE2\x96\x81Hello", "\xC4\xA0world", ",", " again"});
  ASSERT_EQ(sp.size(), 5u);
  EXPECT_EQ(sp[0].size(), 0u);
  EXPECT_EQ(sp[1], (text::TextSpan{0, 5}));
  EXPECT_EQ(sp[2], (text::TextSpan{6, 11}));
  EXPECT_EQ(sp[3], (text::TextSpan{11, 12}));
  EXPECT_EQ(sp[4], (text::TextSpan{13, 18}));
  // A piece that only occurs later (after non-space text) is not matched there.
  sp = align_pieces("ab cd", {"cd", "ab"});
  EXPECT_EQ(sp[0].size(), 0u);
  EXPECT_EQ(sp[1], (text::TextSpan{0, 2}));
}

}  // namespace
}  // namespace ragform::spotlight
