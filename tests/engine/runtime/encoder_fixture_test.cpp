// The bert encoder against llama.cpp's reference outputs (../shared/fixtures/ref/tiny-bert and
// tiny-bert-nli, FORMAT.md "Architecture fixtures"): per-token final states (pooling none), the
// mean and CLS vectors, and the 3 raw classifier scores of the NLI head, within 2e-3 per value.
// The prompts are tokenised with the model's own WordPiece tokenizer and must give the ref's ids.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/model/bert.h"
#include "engine/runtime/encoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {
using nlohmann::json;

constexpr double kTol = 2e-3;

std::vector<float> read_f32(const std::filesystem::path& path) {
  std::string b = testing::read_file(path);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
  return d;
}

struct Case {
  std::string model, dir;
};

class EncoderFixture : public ::testing::TestWithParam<Case> {};

TEST_P(EncoderFixture, MatchesLlamaCpp) {
  const Case c = GetParam();
  REQUIRE_SHARED(ref, "fixtures/ref/" + c.model + "/" + c.dir);
  REQUIRE_SHARED(path, "fixtures/models/" + c.model + ".gguf");
  const json meta = json::parse(testing::read_file(ref / "meta.json"));
  auto m = model::BertModel::load(path.string());
  auto tok = tok::Tokenizer::from_gguf(m->file());
  const std::string prompt = meta["prompt"].get<std::string>();
  const auto ids = meta["prompt_ids"].get<std::vector<int32_t>>();
  EncoderInput in = encoder_input(*tok, prompt, m->hp().n_ctx_train, Truncate::Error);
  ASSERT_EQ(in.tokens, ids);

  const model::Pooling pooling = model::parse_pooling(meta["settings"]["pooling"]);
  Encoder enc(*m, std::make_shared<ThreadPool>(2));
  // The same input alone and inside a batch with other inputs must give the same numbers.
  EncoderInput other = encoder_input(*tok,
                                     "a different passage, longer than the first one "
                                     "by a few words",
                                     512, Truncate::Error);
  for (int batched = 0; batched < 2; ++batched) {
    SCOPED_TRACE(batched ? "batched" : "alone");
    std::vector<EncoderInput> inputs =
        batched ? std::vector<EncoderInput>{other, in, other} : std::vector<EncoderInput>{in};
    auto out = enc.encode(inputs, {pooling, 4096});
    const EncoderOutput& o = out[batched ? 1 : 0];
    ASSERT_EQ(o.n_tokens, int(ids.size()));
    double d = 0;
    if (pooling == model::Pooling::None) {
      const auto shape = meta["embeddings"]["shape"].get<std::vector<int>>();
      ASSERT_EQ(shape[0], int(ids.size()));
      ASSERT_EQ(shape[1], m->hp().n_embd);
      d = max_diff(o.states, read_f32(ref / meta["embeddings"]["file"].get<std::string>()));
    } else {
      d = max_diff(o.pooled, meta["pooled"].get<std::vector<float>>());
    }
    EXPECT_LE(d, kTol);
    std::printf("[measured] %s %s max|d| %.3g\n", c.model.c_str(), c.dir.c_str(), d);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Refs, EncoderFixture,
    ::testing::Values(Case{"tiny-bert", "p1-none"}, Case{"tiny-bert", "p1-mean"},
                      Case{"tiny-bert", "p1-cls"}, Case{"tiny-bert", "p2-none"},
                      Case{"tiny-bert", "p2-mean"}, Case{"tiny-bert", "p2-cls"},
                      Case{"tiny-bert-nli", "p1-rank"}, Case{"tiny-bert-nli", "p2-rank"}),
    [](const auto& param_info) {
      std::string n = param_info.param.model + "_" + param_info.param.dir;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

// longest_first's closed form is HF's loop (one piece at a time from the longer segment, the
// first on a tie), and a pair made of pieces tokenised once is the pair made of the two texts.
TEST(EncoderPairs, LongestFirstIsTheLoopAndPiecesGiveTheSameInput) {
  for (size_t la = 0; la < 40; ++la)
    for (size_t lb = 0; lb < 40; ++lb)
      for (size_t budget = 0; budget < 85; ++budget) {
        size_t a = la, b = lb;
        while (a + b > budget) (a >= b ? a : b) -= 1;
        const PairLengths got = longest_first(la, lb, budget);
        ASSERT_EQ(got.a, a) << la << " " << lb << " " << budget;
        ASSERT_EQ(got.b, b) << la << " " << lb << " " << budget;
      }
  REQUIRE_SHARED(path, "fixtures/models/tiny-bert-nli.gguf");
  auto m = model::BertModel::load(path.string());
  auto tok = tok::Tokenizer::from_gguf(m->file());
  std::string query;
  while (query.size() < 3000) query += "the capital of france is paris. ";
  const std::vector<int32_t> q = encoder_pieces(*tok, query);
  for (const std::string& doc :
       std::vector<std::string>{"Paris.", "", std::string(900, 'x') + " Berlin is in Germany"})
    for (int n_max : {0, 16, 64, 512}) {
      const EncoderInput want = encoder_pair_input(*tok, query, doc, n_max, Truncate::Right, 2);
      const std::vector<int32_t> d = encoder_pieces(*tok, doc);
      const EncoderInput got = encoder_pair_input(*tok, q, d, n_max, Truncate::Right, 2);
      EXPECT_EQ(got.tokens, want.tokens) << n_max;
      EXPECT_EQ(got.types, want.types) << n_max;
      EXPECT_EQ(got.truncated, want.truncated) << n_max;
      EXPECT_EQ(got.truncated, n_max > 0) << n_max;
      if (n_max > 0) {
        EXPECT_EQ(int(got.tokens.size()), n_max);
      }
    }
}

TEST(EncoderFixtureLabels, NliHeadLabelsComeFromTheFile) {
  REQUIRE_SHARED(path, "fixtures/models/tiny-bert-nli.gguf");
  auto m = model::BertModel::load(path.string());
  EXPECT_EQ(m->labels, (std::vector<std::string>{"entailment", "neutral", "contradiction"}));
  EXPECT_EQ(m->hp().pooling, model::Pooling::Rank);
  EXPECT_EQ(m->hp().n_token_types, 2);
}

TEST(EncoderFixtureLabels, DecoderFileIsRefusedWithAHint) {
  REQUIRE_SHARED(path, "fixtures/models/tiny-llama.gguf");
  try {
    model::BertModel::load(path.string());
    FAIL() << "loaded a decoder as an encoder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not an encoder"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ragform::runtime
