// Model loading accounts for every tensor of the file: a tensor the architecture does not read is
// an Error naming it (the engine would otherwise run without it and give wrong logits), a
// harmless one a warning; rope_freqs.weight is read by llama; unsupported RoPE scaling is
// refused. Files: a tiny make-test-model GGUF, re-written with gguf::Writer plus the extra tensor
// or key.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "support/test_support.h"

namespace ragform::model {
namespace {

std::string base_model(const std::string& dir, const std::string& arch = "llama") {
  RandomModelOptions o;
  o.shape = "tiny";
  o.arch = arch;
  o.type = "f32";
  o.threads = 1;
  o.out = dir + "/base-" + arch + ".gguf";
  write_random_model(o);
  return o.out;
}

// Rewrites `src` with an extra tensor of n F32 values (and optionally a key) as `dst`.
std::string with_extra(const std::string& src, const std::string& dst, const std::string& tensor,
                       int64_t n, const std::string& key = "", gguf::Value value = {}) {
  auto f = gguf::File::open(src);
  gguf::Writer w = gguf::Writer::copy_of(*f);
  std::vector<float> data(size_t(n), 1.0f);
  if (!tensor.empty())
    w.add_tensor(tensor, {n}, gguf::TensorType::F32, data.data(), uint64_t(n) * 4);
  if (!key.empty()) w.set(key, std::move(value));
  w.write(dst);
  return dst;
}

std::string load_error(const std::string& path) {
  try {
    Model::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelTensors, EveryTensorOfAPlainFileIsRead) {
  const std::string dir = testing::temp_dir("model_tensors_plain").string();
  auto m = Model::load(base_model(dir));
  EXPECT_TRUE(m->warnings().empty());
  EXPECT_EQ(m->rope_freqs, nullptr);
}

TEST(ModelTensors, UnknownTensorIsAnErrorNamingIt) {
  const std::string dir = testing::temp_dir("model_tensors_unknown").string();
  const std::string base = base_model(dir);
  for (const char* name : {"blk.0.mystery.weight", "output.bias", "blk.1.attn_q.bias"}) {
    const std::string msg = load_error(with_extra(base, dir + "/x.gguf", name, 64));
    EXPECT_NE(msg.find(std::string("'") + name + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("llama"), std::string::npos) << msg;
  }
  // A qwen2 file does not read rope_freqs.weight: an error, not a silent difference.
  const std::string qwen = base_model(dir, "qwen2");
  const std::string msg = load_error(with_extra(qwen, dir + "/q.gguf", "rope_freqs.weight", 8));
  EXPECT_NE(msg.find("'rope_freqs.weight'"), std::string::npos) << msg;
}

TEST(ModelTensors, HarmlessTensorWarns) {
  const std::string dir = testing::temp_dir("model_tensors_harmless").string();
  auto m = Model::load(with_extra(base_model(dir), dir + "/h.gguf", "blk.1.attn_rot_embd", 8));
  ASSERT_EQ(m->warnings().size(), 1u);
  EXPECT_NE(m->warnings()[0].find("blk.1.attn_rot_embd"), std::string::npos);
}

TEST(ModelTensors, LongRopeFactorsAreRefused) {
  const std::string dir = testing::temp_dir("model_tensors_longrope").string();
  const std::string msg =
      load_error(with_extra(base_model(dir), dir + "/l.gguf", "rope_factors_long.weight", 8));
  EXPECT_NE(msg.find("rope_factors_long.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LongRoPE"), std::string::npos) << msg;
}

TEST(ModelTensors, LlamaReadsRopeFreqs) {
  const std::string dir = testing::temp_dir("model_tensors_rope_freqs").string();
  const std::string base = base_model(dir);
  // tiny: head_dim 16 -> 8 factors.
  auto m = Model::load(with_extra(base, dir + "/r.gguf", "rope_freqs.weight", 8));
  ASSERT_NE(m->rope_freqs, nullptr);
  EXPECT_EQ(m->rope_freqs[7], 1.0f);
  EXPECT_TRUE(m->warnings().empty());
  // The wrong length is an error naming the tensor and its shape.
  const std::string msg = load_error(with_extra(base, dir + "/r2.gguf", "rope_freqs.weight", 16));
  EXPECT_NE(msg.find("'rope_freqs.weight' has shape [16]"), std::string::npos) << msg;
}

TEST(ModelRopeScaling, LinearIsReadYarnIsRefused) {
  const std::string dir = testing::temp_dir("model_rope_scaling").string();
  const std::string base = base_model(dir);
  auto lin = with_extra(base, dir + "/lin.gguf", "", 0, "llama.rope.scaling.type",
                        gguf::Value::str("linear"));
  lin = with_extra(lin, dir + "/lin2.gguf", "", 0, "llama.rope.scaling.factor",
                   gguf::Value::f32(4.0f));
  EXPECT_EQ(Model::load(lin)->hp().rope_scale, 4.0f);
  for (const char* type : {"yarn", "longrope"}) {
    const std::string msg = load_error(with_extra(
        base, dir + "/y.gguf", "", 0, "llama.rope.scaling.type", gguf::Value::str(type)));
    EXPECT_NE(msg.find(std::string("'") + type + "' is not supported"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ragform::model
