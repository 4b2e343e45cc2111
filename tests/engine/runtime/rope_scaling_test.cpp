// Linear RoPE scaling (rope.scaling.type = linear, rope.scaling.factor): the engine divides every
// angle by the factor (ggml's freq_scale = 1/factor). A tiny random llama with factor 4 against the
// scalar reference of reference_forward.h over 120 positions; the same reference without the
// factor is far off, so the test sees whether the factor is applied.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/gguf/gguf.h"
#include "engine/model/random_model.h"
#include "engine/runtime/context.h"
#include "reference_forward.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {

TEST(RopeScaling, LinearFactorMatchesTheReference) {
  const std::string dir = testing::temp_dir("rope_scaling_linear").string();
  model::RandomModelOptions o;
  o.shape = "tiny";
  o.type = "f32";
  o.threads = 1;
  o.out = dir + "/tiny.gguf";
  model::write_random_model(o);
  auto src = gguf::File::open(o.out);
  gguf::Writer w = gguf::Writer::copy_of(*src);
  w.set("llama.rope.scaling.type", gguf::Value::str("linear"));
  w.set("llama.rope.scaling.factor", gguf::Value::f32(4.0f));
  const std::string path = dir + "/linear.gguf";
  w.write(path);

  auto m = model::Model::load(path);
  ASSERT_EQ(m->hp().rope_scale, 4.0f);
  std::vector<int32_t> ids;
  for (int t = 0; t < 120; ++t) ids.push_back(int32_t((t * 131 + 7) % 512));
  Context ctx(*m, {256, KvType::F32, nullptr});
  SeqInput in;
  in.seq = ctx.new_sequence();
  in.tokens = ids;
  in.logits = LogitsMode::None;
  in.hidden_layer = m->hp().n_layer;
  auto out = ctx.eval({in});
  const int E = m->hp().n_embd;
  ASSERT_EQ(out[0].hidden.size(), ids.size() * size_t(E));

  auto diff = [&](const testing::ReferenceOutput& r) {
    double d = 0;
    for (size_t t = 0; t < ids.size(); ++t)
      for (int i = 0; i < E; ++i)
        d = std::max(
            d, std::fabs(out[0].hidden[t * size_t(E) + size_t(i)] - r.final_hidden[t][size_t(i)]));
    return d;
  };
  testing::ReferenceForward ref(*m);
  const double d = diff(ref.run(ids));
  EXPECT_LE(d, 1e-4);
  // The reference with scale 1 (what ignoring the key would compute).
  auto plain = model::Model::load(o.out);
  const double unscaled = diff(testing::ReferenceForward(*plain).run(ids));
  EXPECT_GT(unscaled, 100 * d);
  EXPECT_GT(unscaled, 1e-2);
}

}  // namespace
}  // namespace ragform::runtime
