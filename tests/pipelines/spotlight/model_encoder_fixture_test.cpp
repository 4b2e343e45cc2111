// SpotlightRAG's encoder-model token encoder (model_encoder.h): word-piece grouping and alignment,
// word vectors = the normalised mean of the word's piece states (checked against the encoder's own
// per-token output), batch = one by one, and equations 5-8 running on top (mechanics: tiny-bert's
// weights are random).
#include <cmath>

#include <gtest/gtest.h>

#include "pipelines/spotlight/model_encoder.h"
#include "pipelines/spotlight/scoring.h"
#include "reader/native_encoder.h"
#include "support/test_support.h"

namespace ragform::spotlight {
namespace {

TEST(GroupPieces, WordStartsContinuationsSpecialsAndCase) {
  const std::string text = "Once a little Llama, named 550e8400!";
  const std::vector<std::string> pieces = {"[CLS]",
                                           "\xE2\x96\x81once",
                                           "\xE2\x96\x81"
                                           "a",
                                           "\xE2\x96\x81little",
                                           "\xE2\x96\x81ll",
                                           "ama",
                                           "\xE2\x96\x81,",
                                           " named",
                                           " 550",
                                           "e",
                                           "8",
                                           "400",
                                           " !",
                                           "[SEP]"};
  auto w = group_pieces(text, pieces);
  ASSERT_EQ(w.size(), 8u);
  EXPECT_EQ(w[3].text, "llama");
  EXPECT_EQ(w[3].pieces, (std::vector<int>{4, 5}));
  EXPECT_EQ(text.substr(w[3].span.begin, w[3].span.size()), "Llama");  // case ignored
  EXPECT_EQ(w[4].text, ",");
  EXPECT_EQ(w[6].text, "550e8400");
  EXPECT_EQ(text.substr(w[6].span.begin, w[6].span.size()), "550e8400");
  EXPECT_EQ(w[6].pieces.size(), 4u);
  // A word whose accents the tokenizer stripped is found in the text as the text spells it
  // (issue 44: "Šešupė" and Bengali words were dropped as not found).
  auto u = group_pieces("café au lait", {" cafe", " au", " lait"});
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0].span.begin, 0u);
  EXPECT_EQ(u[0].span.size(), 5u);  // "café"
  EXPECT_EQ(u[1].span.begin, 6u);
  const std::string river =
      "The \xC5\xA0"
      "e\xC5\xA1up\xC4\x97 river";  // Šešupė, precomposed
  auto r = group_pieces(river, {" the", " sesupe", " river"});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(river.substr(r[1].span.begin, r[1].span.size()),
            "\xC5\xA0"
            "e\xC5\xA1up\xC4\x97");
  EXPECT_EQ(river.substr(r[2].span.begin, r[2].span.size()), "river");
  // Decomposed (e + U+0307): the mark belongs to the word's span.
  const std::string nfd = "ve\xCC\x87 x";
  auto d = group_pieces(nfd, {" ve", " x"});
  EXPECT_EQ(nfd.substr(d[0].span.begin, d[0].span.size()), "ve\xCC\x87");
  // A word found only inside a later word is not that word, and does not swallow the words
  // between (HotpotQA dev record 6: "ակիմ" matched inside "Հովակիմ").
  const std::string hy =
      "\xD5\x80\xD5\xB8\xD5\xBE\xD5\xA1\xD5\xAF\xD5\xAB\xD5\xB4 a b";  // Հովակիմ a b
  auto h = group_pieces(hy, {" \xD5\xA1\xD5\xAF\xD5\xAB\xD5\xB4", " a", " b"});
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].span.size(), 0u);
  EXPECT_EQ(hy.substr(h[1].span.begin, h[1].span.size()), "a");
  EXPECT_EQ(hy.substr(h[2].span.begin, h[2].span.size()), "b");
  // Case folds beyond ASCII: "Հովակիմ" is the piece text "հովակիմ".
  auto h2 = group_pieces(hy, {" \xD5\xB0\xD5\xB8\xD5\xBE\xD5\xA1\xD5\xAF\xD5\xAB\xD5\xB4", " a"});
  EXPECT_EQ(h2[0].span.begin, 0u);
  EXPECT_EQ(h2[0].span.size(), 14u);
}

TEST(ModelEncoder, WordVectorsAreNormalisedMeansOfPieceStates) {
  REQUIRE_SHARED(path, "fixtures/models/tiny-bert.gguf");
  reader::NativeEncoderOptions no;
  no.engine.threads = 2;
  reader::NativeEncoder native(path.string(), no);
  ModelEncoder enc(native);
  const std::string text = "The little llama named Nessie loved Tokyo.";
  EncodedText e = enc.encode(text);
  auto raw = native.embed({text}, reader::Pooling::None, false)[0];
  auto words = group_pieces(text, raw.pieces);
  // "The little llama named Nessie loved Tokyo" (the '.' is dropped)
  ASSERT_EQ(e.tokens.size(), 7u);
  EXPECT_EQ(e.words, 7u);
  EXPECT_EQ(e.oov, 0u);
  EXPECT_EQ(e.dim, 64);
  EXPECT_EQ(e.tokens[2].text, "llama");
  EXPECT_EQ(e.tokens[4].text, "Nessie");
  EXPECT_EQ(e.tokens[4].key, "nessie");
  for (size_t t = 0; t < e.tokens.size(); ++t) {
    const PieceWord& w = words[t];
    std::vector<double> mean(64, 0.0);
    for (int p : w.pieces)
      for (int d = 0; d < 64; ++d) mean[size_t(d)] += raw.token_vectors[size_t(p) * 64 + size_t(d)];
    double n = 0;
    for (double v : mean) n += v * v;
    for (int d = 0; d < 64; ++d)
      EXPECT_NEAR(e.row(e.tokens[t].vec)[d], mean[size_t(d)] / std::sqrt(n), 1e-5);
  }
  EXPECT_GT(enc.pieces(), 0u);

  // Batched = one by one.
  const std::vector<std::string_view> texts{text, "Tokyo is a city.", "Nessie"};
  auto batch = enc.encode_batch(texts);
  for (size_t i = 0; i < texts.size(); ++i) {
    EncodedText one = enc.encode(texts[i]);
    ASSERT_EQ(batch[i].tokens.size(), one.tokens.size());
    ASSERT_EQ(batch[i].vectors.size(), one.vectors.size());
    for (size_t k = 0; k < one.vectors.size(); ++k)
      EXPECT_NEAR(batch[i].vectors[k], one.vectors[k], 1e-6);
  }
}

TEST(ModelEncoder, ScoresQuestionsEndToEnd) {
  REQUIRE_SHARED(path, "fixtures/models/tiny-bert.gguf");
  reader::NativeEncoderOptions no;
  no.engine.threads = 2;
  reader::NativeEncoder native(path.string(), no);
  ModelEncoder enc(native);
  Document d{"d0", "Nessie", "Nessie lives in Loch Ness. Tokyo is far away.", {{0, 26}, {27, 45}}};
  ScoredQuestion sq = score_question(enc, "Where does Nessie live?", {d}, ScoreParams{});
  ASSERT_EQ(sq.sentences.size(), 2u);
  EXPECT_EQ(sq.query_tokens, 4u);
  for (const auto& s : sq.sentences) {
    EXPECT_TRUE(std::isfinite(s.R));
    EXPECT_GE(s.R_norm, 0.0);
    EXPECT_LE(s.R_norm, 1.0);
  }
  // "Nessie" occurs in the first sentence: its best match there is the word itself.
  bool exact = false;
  for (const auto& m : sq.sentences[0].matches) exact |= m.q == "Nessie" && m.c == "Nessie";
  EXPECT_TRUE(exact);
}

}  // namespace
}  // namespace ragform::spotlight
