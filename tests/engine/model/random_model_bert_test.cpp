// make-test-model's bert writer (random_model_bert.h): the file loads as a BertModel of the shape,
// with a WordPiece tokenizer, and the same seed written as F16 / Q8_0 / Q4_K gives the F32 model's
// states within each type's rounding (the encoder runs every weight type through ops::matmul).
#include <cmath>

#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/model/bert.h"
#include "engine/model/random_model.h"
#include "engine/model/random_model_bert.h"
#include "engine/runtime/encoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"

namespace ragform::model {
namespace {

std::vector<float> encode(const std::string& path, const std::string& text, int* n_tokens) {
  auto m = BertModel::load(path);
  auto tok = tok::Tokenizer::from_gguf(m->file());
  runtime::Encoder enc(*m, std::make_shared<ThreadPool>(2));
  auto out = enc.encode({runtime::encoder_input(*tok, text, 512, runtime::Truncate::Error)},
                        {Pooling::None, 4096});
  *n_tokens = out[0].n_tokens;
  return out[0].states;
}

TEST(RandomModelBert, WritesLoadableBgeShapesInEveryWeightType) {
  const auto dir = testing::temp_dir("bert_writer");
  const std::string text = "the quick brown fox jumps over the lazy dog, twice.";
  std::vector<float> ref;
  int n_ref = 0;
  for (const char* type : {"f32", "f16", "q8_0", "q4_k"}) {
    SCOPED_TRACE(type);
    RandomModelOptions o;
    o.shape = "bge-small";
    o.type = type;
    o.layers = 2;
    o.out = (dir / (std::string(type) + ".gguf")).string();
    RandomModelSummary s = write_random_model(o);
    EXPECT_EQ(s.arch, "bert");
    auto m = BertModel::load(o.out);
    EXPECT_EQ(m->hp().n_embd, 384);
    EXPECT_EQ(m->hp().n_layer, 2);
    EXPECT_EQ(m->hp().n_head, 12);
    EXPECT_EQ(m->hp().n_ff, 1536);
    EXPECT_EQ(m->hp().n_ctx_train, 512);
    EXPECT_EQ(m->hp().n_token_types, 2);
    EXPECT_EQ(m->hp().pooling, Pooling::Cls);
    EXPECT_EQ(m->layers[0].wq.type, std::string(type) == "f32"    ? gguf::TensorType::F32
                                    : std::string(type) == "f16"  ? gguf::TensorType::F16
                                    : std::string(type) == "q8_0" ? gguf::TensorType::Q8_0
                                                                  : gguf::TensorType::Q5_0)
        << "q4_k falls back to q5_0 for 384-long rows, as llama-quantize";
    int n = 0;
    std::vector<float> st = encode(o.out, text, &n);
    ASSERT_GT(n, 10);
    if (ref.empty()) {
      ref = st;
      n_ref = n;
      continue;
    }
    ASSERT_EQ(n, n_ref);
    double d = 0;
    for (size_t i = 0; i < st.size(); ++i) d = std::max(d, std::fabs(double(st[i]) - ref[i]));
    // States are LayerNorm outputs (O(1) per value); measured 2.1e-3, 4.4e-2 and 0.28.
    const double tol = std::string(type) == "f16" ? 1e-2 : std::string(type) == "q8_0" ? 0.1 : 0.6;
    EXPECT_LE(d, tol);
    std::printf("[measured] bge-small 2 layers %s vs f32: max|d| %.3g\n", type, d);
  }
}

TEST(RandomModelBert, RejectsDecoderShapesAndOtherArchs) {
  const auto dir = testing::temp_dir("bert_writer_bad");
  RandomModelOptions o;
  o.out = (dir / "x.gguf").string();
  o.arch = "bert";
  o.shape = "tiny";
  EXPECT_THROW(write_random_model(o), UsageError);
  o.arch = "llama";
  o.shape = "bge-small";
  EXPECT_THROW(write_random_model(o), UsageError);
}

}  // namespace
}  // namespace ragform::model
