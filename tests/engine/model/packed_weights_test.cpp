// Models pack their F16/BF16 matrices into the float kernels' panels at load (packed_weights.h):
// a packed model computes the bits of the same file without its panels (rows read from the file,
// the token embedding included: get_rows reads it from the panels when packed), for the decoder
// and the encoder; quantised and F32 matrices are left as they are. (That the kernel over panels
// gives vec_dot's bits is tests/engine/ops/float_panels_test.cpp; the scalar tier's attention is
// not the SIMD tiers' bit for bit, so whole models are compared within one tier.)
#include "engine/model/packed_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/bert.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/ops/cpu_features.h"
#include "engine/runtime/context.h"
#include "engine/runtime/encoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"

namespace ragform::model {
namespace {

std::string write(const std::string& shape, const std::string& type, const char* dir) {
  RandomModelOptions o;
  o.shape = shape;
  o.type = type;
  o.layers = 2;
  o.out = (testing::temp_dir(dir) / (shape + "-" + type + ".gguf")).string();
  write_random_model(o);
  return o.out;
}

std::vector<float> all_logits(const Model& m) {
  runtime::Context ctx(m, {64, runtime::KvType::F32, nullptr, 2});
  runtime::SeqInput in;
  in.seq = ctx.new_sequence();
  for (int i = 0; i < 23; ++i) in.tokens.push_back((i * 37 + 5) % m.hp().n_vocab);
  in.logits = runtime::LogitsMode::All;
  return ctx.eval({in})[0].logits;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The same file with its panels dropped: every matrix is then packed by the kernel a group at a
// time from the rows in the file (whose pages the load released: read again from the file), and
// get_rows reads the embedding's rows.
void drop_panels(Model& m) {
  m.tok_embd.panels = m.output.panels = nullptr;
  for (LayerWeights& L : m.layers)
    for (ops::WeightView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
      w->panels = nullptr;
}

TEST(PackedWeights, DecoderPackedAtLoadGivesTheRowsBits) {
  if (ops::best_cpu_tier() == ops::CpuTier::Scalar) GTEST_SKIP() << "no panel kernels here";
  for (const char* type : {"f16", "bf16"}) {
    SCOPED_TRACE(type);
    const std::string path = write("tiny", type, "packed_decoder");
    auto packed = Model::load(path);
    EXPECT_GT(packed->packed_bytes(), 0u);
    EXPECT_NE(packed->tok_embd.panels, nullptr);
    EXPECT_NE(packed->layers[0].w_down.panels, nullptr);
    auto rows = Model::load(path);
    drop_panels(*rows);
    EXPECT_TRUE(same_bits(all_logits(*packed), all_logits(*rows)));
    // The scalar tier multiplies the rows in place: nothing is packed.
    LoadOptions scalar;
    scalar.cpu_tier = ops::CpuTier::Scalar;
    EXPECT_EQ(Model::load(path, scalar)->packed_bytes(), 0u);
  }
  // Quantised and F32 matrices are never packed.
  for (const char* type : {"q8_0", "f32"})
    EXPECT_EQ(Model::load(write("tiny", type, "packed_decoder_other"))->packed_bytes(), 0u) << type;
}

TEST(PackedWeights, EncoderPackedAtLoadGivesTheRowsBits) {
  if (ops::best_cpu_tier() == ops::CpuTier::Scalar) GTEST_SKIP() << "no panel kernels here";
  const std::string path = write("bge-small", "f16", "packed_encoder");
  const auto states = [&](bool drop) {
    auto m = BertModel::load(path);
    EXPECT_NE(m->layers[0].wq.panels, nullptr);
    EXPECT_NE(m->tok_embd.panels, nullptr);
    if (drop) {
      m->tok_embd.panels = nullptr;
      for (BertLayer& L : m->layers)
        for (ops::WeightView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_up, &L.w_down})
          w->panels = nullptr;
    }
    auto tok = tok::Tokenizer::from_gguf(m->file());
    runtime::Encoder enc(*m, std::make_shared<ThreadPool>(2));
    return enc
        .encode({runtime::encoder_input(*tok, "the quick brown fox jumps over the lazy dog", 512,
                                        runtime::Truncate::Error)},
                {Pooling::None, 4096})[0]
        .states;
  };
  EXPECT_TRUE(same_bits(states(false), states(true)));
}

}  // namespace
}  // namespace ragform::model
