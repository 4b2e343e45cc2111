// make-test-model: llama-quantize's per-tensor type rules on the real shapes (checked without
// writing), the synthetic vocabulary, and small models of every type and mixture that the engine
// loads and runs.
#include "engine/model/random_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model.h"
#include "engine/ops/ops.h"
#include "engine/tokenizer/tokenizer.h"
#include "reader/native_reader.h"
#include "support/test_support.h"

namespace ragform::model {
namespace {

using gguf::TensorType;

std::map<std::string, TensorType> types_of(const std::vector<TensorPlan>& plan) {
  std::map<std::string, TensorType> m;
  for (const auto& t : plan) m[t.name] = t.type;
  return m;
}

std::string blk(int i, const char* what) {
  return "blk." + std::to_string(i) + "." + what + ".weight";
}

// use_more_bits(i, 24): i < 3, i >= 21, or (i - 3) % 3 == 2.
const std::set<int> kMoreBits24 = {0, 1, 2, 5, 8, 11, 14, 17, 20, 21, 22, 23};

TEST(RandomModelTypes, Qwen25_05B_Q4_K_M_AsLlamaQuantize) {
  // n_embd 896 = 3.5 * 256: every tensor whose rows are 896 long falls back (Q4_K -> Q5_0,
  // Q6_K -> Q8_0); ffn_down rows are n_ff = 4864 = 19 * 256 and keep K-quants.
  const auto plan = plan_tensors(find_shape("qwen2.5-0.5b"), "qwen2", parse_scheme("q4_k_m"));
  auto t = types_of(plan);
  EXPECT_EQ(t.size(), 1u + 24 * 12 + 1);    // token_embd, 12 per layer (incl. 3 biases), norm
  EXPECT_EQ(t.count("output.weight"), 0u);  // tied
  EXPECT_EQ(t["token_embd.weight"], TensorType::Q8_0);  // output rule, 896 % 256 != 0
  EXPECT_EQ(t["output_norm.weight"], TensorType::F32);
  for (int i = 0; i < 24; ++i) {
    const bool more = kMoreBits24.count(i) > 0;
    EXPECT_EQ(t[blk(i, "attn_q")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "attn_k")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "attn_v")], more ? TensorType::Q8_0 : TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "attn_output")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "ffn_gate")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "ffn_up")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "ffn_down")], more ? TensorType::Q6_K : TensorType::Q4_K) << i;
    EXPECT_EQ(t["blk." + std::to_string(i) + ".attn_q.bias"], TensorType::F32);
    EXPECT_EQ(t[blk(i, "attn_norm")], TensorType::F32);
  }
}

TEST(RandomModelTypes, Llama32_1B_Mixtures) {
  const ModelShape& s = find_shape("llama-3.2-1b");
  // use_more_bits(i, 16): i < 2, i >= 14, (i - 2) % 3 == 2.
  const std::set<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  auto m = types_of(plan_tensors(s, "llama", parse_scheme("q4_k_m")));
  EXPECT_EQ(m["token_embd.weight"], TensorType::Q6_K);  // tied, 2048 % 256 == 0
  for (int i = 0; i < 16; ++i) {
    const auto hi = more.count(i) ? TensorType::Q6_K : TensorType::Q4_K;
    EXPECT_EQ(m[blk(i, "attn_v")], hi) << i;
    EXPECT_EQ(m[blk(i, "ffn_down")], hi) << i;
    EXPECT_EQ(m[blk(i, "attn_q")], TensorType::Q4_K) << i;
    EXPECT_EQ(m[blk(i, "ffn_up")], TensorType::Q4_K) << i;
  }
  // Q4_K_S: attn_v of layers 0..3 and ffn_down of layers < 16/8 = 2 get Q5_K.
  auto k = types_of(plan_tensors(s, "llama", parse_scheme("q4_k_s")));
  EXPECT_EQ(k["token_embd.weight"], TensorType::Q6_K);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(k[blk(i, "attn_v")], i < 4 ? TensorType::Q5_K : TensorType::Q4_K) << i;
    EXPECT_EQ(k[blk(i, "ffn_down")], i < 2 ? TensorType::Q5_K : TensorType::Q4_K) << i;
    EXPECT_EQ(k[blk(i, "attn_output")], TensorType::Q4_K) << i;
  }
}

TEST(RandomModelTypes, Qwen25_15B_Q5_K_M) {
  // 1536 = 6 * 256 and 8960 = 35 * 256: no fallbacks. use_more_bits(i, 28): i < 3, i >= 24,
  // (i - 3) % 3 == 2.
  const std::set<int> more = {0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};
  auto m = types_of(plan_tensors(find_shape("qwen2.5-1.5b"), "qwen2", parse_scheme("q5_k_m")));
  EXPECT_EQ(m["token_embd.weight"], TensorType::Q6_K);
  for (int i = 0; i < 28; ++i) {
    const auto hi = more.count(i) ? TensorType::Q6_K : TensorType::Q5_K;
    EXPECT_EQ(m[blk(i, "attn_v")], hi) << i;
    EXPECT_EQ(m[blk(i, "ffn_down")], hi) << i;
    EXPECT_EQ(m[blk(i, "ffn_gate")], TensorType::Q5_K) << i;
  }
}

TEST(RandomModelTypes, FallbacksAndPureTypes) {
  const WeightScheme q2 = parse_scheme("q2_k"), q3 = parse_scheme("q3_k"),
                     q5 = parse_scheme("q5_k"), q6 = parse_scheme("q6_k"),
                     q40 = parse_scheme("q4_0"), f16 = parse_scheme("f16");
  const auto r = TensorRole::AttnQ;
  EXPECT_EQ(choose_tensor_type(q2, r, 0, 24, 896, true), TensorType::Q4_0);
  EXPECT_EQ(choose_tensor_type(q3, r, 0, 24, 896, true), TensorType::Q4_0);
  EXPECT_EQ(choose_tensor_type(q5, r, 0, 24, 896, true), TensorType::Q5_1);
  EXPECT_EQ(choose_tensor_type(q6, r, 0, 24, 896, true), TensorType::Q8_0);
  EXPECT_EQ(choose_tensor_type(q6, r, 0, 24, 1024, true), TensorType::Q6_K);
  EXPECT_EQ(choose_tensor_type(q40, r, 0, 24, 48, true), TensorType::F16);  // 48 % 32 != 0
  EXPECT_EQ(choose_tensor_type(q6, r, 0, 24, 40, true), TensorType::F16);   // Q8_0 does not fit
  // Pure: the tied token_embd keeps the plain type (the fixtures' --pure files).
  EXPECT_EQ(choose_tensor_type(q40, TensorRole::TokenEmbd, -1, 24, 1024, true), TensorType::Q4_0);
  EXPECT_EQ(choose_tensor_type(f16, TensorRole::Output, -1, 24, 100, false), TensorType::F16);
  EXPECT_EQ(choose_tensor_type(q40, TensorRole::Norm, 0, 24, 1024, false), TensorType::F32);
  // Mixture with an untied token_embd: the base type (only output gets Q6_K).
  const WeightScheme km = parse_scheme("Q4_K_M");
  EXPECT_EQ(choose_tensor_type(km, TensorRole::TokenEmbd, -1, 24, 1024, false), TensorType::Q4_K);
  EXPECT_EQ(choose_tensor_type(km, TensorRole::Output, -1, 24, 1024, false), TensorType::Q6_K);
  EXPECT_EQ(km.file_type, 15u);
}

TEST(RandomModelTypes, BadNamesAreUsageErrors) {
  EXPECT_THROW(parse_scheme("q4_k_l"), UsageError);
  EXPECT_THROW(find_shape("gpt-5"), UsageError);
  try {
    parse_scheme("iq2_xs");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("q4_k_m"), std::string::npos) << e.what();
  }
}

TEST(RandomModelVocab, SyntheticSpmVocabulary) {
  const auto v = synthetic_spm_vocab(151936);
  ASSERT_EQ(v.tokens.size(), 151936u);
  EXPECT_EQ(v.tokens[0], "<unk>");
  EXPECT_EQ(v.tokens[1], "<s>");
  EXPECT_EQ(v.tokens[2], "</s>");
  EXPECT_EQ(v.tokens[3], "<0x00>");
  EXPECT_EQ(v.tokens[3 + 0x0A], "<0x0A>");
  EXPECT_EQ(v.tokens[258], "<0xFF>");
  EXPECT_EQ(v.types[0], 2);
  EXPECT_EQ(v.types[1], 3);
  EXPECT_EQ(v.types[100], 6);
  EXPECT_EQ(v.types[300], 1);
  EXPECT_EQ(v.tokens[259], "\xE2\x96\x81");
  std::set<std::string> unique(v.tokens.begin(), v.tokens.end());
  EXPECT_EQ(unique.size(), v.tokens.size());
  for (size_t i = 260; i < v.scores.size(); ++i) ASSERT_LT(v.scores[i], v.scores[i - 1]) << i;
  EXPECT_THROW(synthetic_spm_vocab(100), UsageError);
}

// Writes, loads and runs a model; returns the path.
std::string write_small(const std::string& dir, const std::string& type, const std::string& arch,
                        const std::string& shape = "small", int layers = 2, uint64_t seed = 1,
                        int threads = 0) {
  RandomModelOptions o;
  o.shape = shape;
  o.arch = arch;
  o.type = type;
  o.layers = layers;
  o.seed = seed;
  o.threads = threads;
  o.out = dir + "/" + shape + "-" + arch + "-" + type + "-" + std::to_string(seed) + "-" +
          std::to_string(threads) + ".gguf";
  write_random_model(o);
  return o.out;
}

TEST(RandomModelWrite, EveryTypeAndMixtureLoadsAndRuns) {
  const std::string dir = testing::temp_dir("make_test_model_types").string();
  for (const auto& type : scheme_names()) {
    SCOPED_TRACE(type);
    const std::string path = write_small(dir, type, "llama");
    auto m = Model::load(path);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->hp().n_layer, 2);
    EXPECT_EQ(m->hp().n_vocab, 1024);
    // Each tensor has the type the plan chose.
    ModelShape s = find_shape("small");
    s.n_layer = 2;
    for (const auto& t : plan_tensors(s, "llama", parse_scheme(type)))
      EXPECT_EQ(m->file().tensor(t.name).type, t.type) << t.name;
    reader::NativeOptions no;
    no.n_ctx = 256;
    reader::NativeReader r(path, no);
    reader::GenerateParams gp;
    gp.max_tokens = 4;
    gp.ignore_eos = true;
    auto g = r.generate("the quick brown fox", gp);
    EXPECT_EQ(g.ids.size(), 4u);
    auto sc = r.score("the quick brown", " fox");
    ASSERT_FALSE(sc.tokens.empty());
    EXPECT_TRUE(std::isfinite(sc.sum));
    EXPECT_LT(sc.sum, 0.0);
  }
}

TEST(RandomModelWrite, Qwen2AndQwen3Architectures) {
  const std::string dir = testing::temp_dir("make_test_model_archs").string();
  for (const char* arch : {"qwen2", "qwen3"}) {
    SCOPED_TRACE(arch);
    const std::string path = write_small(dir, "q4_k_m", arch);
    auto f = gguf::File::open(path);
    EXPECT_EQ(f->architecture(), arch);
    EXPECT_EQ(f->find_tensor("blk.0.attn_q.bias") != nullptr, std::string(arch) == "qwen2");
    EXPECT_EQ(f->find_tensor("blk.0.attn_q_norm.weight") != nullptr, std::string(arch) == "qwen3");
    if (std::string(arch) == "qwen3") {
      EXPECT_EQ(f->get_int("qwen3.attention.key_length"), 64);
    }
    reader::NativeOptions no;
    no.n_ctx = 128;
    reader::NativeReader r(path, no);
    auto sc = r.score("a b c", " d");
    EXPECT_TRUE(std::isfinite(sc.sum));
  }
}

TEST(RandomModelWrite, Gemma3AndPhi3Architectures) {
  const std::string dir = testing::temp_dir("make_test_model_gemma_phi").string();
  for (const char* arch : {"gemma3", "phi3"}) {
    SCOPED_TRACE(arch);
    const bool gemma = std::string(arch) == "gemma3";
    const std::string path = write_small(dir, "q4_k_m", arch);
    auto f = gguf::File::open(path);
    EXPECT_EQ(f->find_tensor("blk.0.attn_qkv.weight") != nullptr, !gemma);
    EXPECT_EQ(f->find_tensor("blk.0.ffn_gate.weight") != nullptr, gemma);
    EXPECT_EQ(f->find_tensor("blk.1.post_ffw_norm.weight") != nullptr, gemma);
    if (gemma) {
      EXPECT_EQ(f->get_int("gemma3.attention.sliding_window"), 512);
    } else {
      // small: 256 x (256 + 2 * 128) attn_qkv, ffn_up of 2 n_ff rows. llama-quantize 34af94c
      // gives the fused attn_qkv attn_v's rule: Q6_K where use_more_bits(i, 2) (layer 1).
      EXPECT_EQ(f->tensor("blk.0.attn_qkv.weight").ne, (std::vector<int64_t>{256, 512}));
      EXPECT_EQ(f->tensor("blk.0.ffn_up.weight").ne, (std::vector<int64_t>{256, 1536}));
      EXPECT_EQ(f->tensor("blk.0.attn_qkv.weight").type, TensorType::Q4_K);
      EXPECT_EQ(f->tensor("blk.1.attn_qkv.weight").type, TensorType::Q6_K);
    }
    reader::NativeOptions no;
    no.n_ctx = 128;
    reader::NativeReader r(path, no);
    EXPECT_TRUE(r.model().warnings().empty());
    auto sc = r.score("a b c", " d");
    EXPECT_TRUE(std::isfinite(sc.sum));
  }
}

// Meta's Llama 3.1 factors for Llama 3.2 1B (head_dim 64, base 500000, factor 32, low 1, high 4,
// original context 8192): pair p has wavelength 2 pi 500000^(p/32). Below 8192/4 = 2048 (pairs
// 0..14; pair 14: 1956.5) the factor is 1; above 8192 (pairs 18..31; pair 18: 10089) it is 32;
// pairs 15..17 interpolate. By hand for pair 16: wavelength 2 pi 500000^0.5 = 4442.9,
// s = (8192/4442.9 - 1) / 3 = 0.2813, factor = 1 / ((1 - 0.2813)/32 + 0.2813) = 3.292.
TEST(RandomModelTypes, Llama3RopeFactors) {
  const auto f = llama3_rope_factors(64, 500000.0f);
  ASSERT_EQ(f.size(), 32u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(f[size_t(i)], 1.0f) << i;
  for (int i = 18; i < 32; ++i) EXPECT_EQ(f[size_t(i)], 32.0f) << i;
  EXPECT_NEAR(f[16], 3.292, 0.002);
  for (int i = 14; i < 18; ++i) EXPECT_LT(f[size_t(i)], f[size_t(i + 1)]);
  // llama-3.2-1b carries them; the plan lists rope_freqs.weight with n_rot/2 values.
  bool found = false;
  for (const auto& t : plan_tensors(find_shape("llama-3.2-1b"), "llama", parse_scheme("q8_0")))
    if (t.name == "rope_freqs.weight") found = t.ne == std::vector<int64_t>{32};
  EXPECT_TRUE(found);
}

TEST(RandomModelWrite, MetadataMatchesTheShape) {
  const std::string dir = testing::temp_dir("make_test_model_meta").string();
  const std::string path = write_small(dir, "q8_0", "qwen2", "small", 3);
  auto f = gguf::File::open(path);
  EXPECT_EQ(f->get_string("general.architecture"), "qwen2");
  EXPECT_EQ(f->get_int("general.file_type"), 7);
  EXPECT_EQ(f->get_int("general.quantization_version"), 2);
  EXPECT_EQ(f->get_int("qwen2.embedding_length"), 256);
  EXPECT_EQ(f->get_int("qwen2.block_count"), 3);
  EXPECT_EQ(f->get_int("qwen2.attention.head_count"), 4);
  EXPECT_EQ(f->get_int("qwen2.attention.head_count_kv"), 2);
  EXPECT_EQ(f->get_int("qwen2.feed_forward_length"), 768);
  EXPECT_EQ(f->get_int("qwen2.context_length"), 2048);
  EXPECT_FLOAT_EQ(float(f->get_float("qwen2.rope.freq_base", 0)), 10000.0f);
  EXPECT_FLOAT_EQ(float(f->get_float("qwen2.attention.layer_norm_rms_epsilon", 0)), 1e-5f);
  EXPECT_EQ(f->get_strings("tokenizer.ggml.tokens").size(), 1024u);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
  auto tok = tok::Tokenizer::from_gguf(*f);
  EXPECT_EQ(tok->bos(), 1);
  EXPECT_EQ(tok->eos(), 2);
  // Text round-trips through the synthetic vocabulary (byte fallback covers the rest).
  const std::string text = "Hello, world! caf\xC3\xA9 42";
  EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text);
}

// Weight statistics follow the stated distributions (F32 file, so values are exact).
TEST(RandomModelWrite, WeightDistributions) {
  const std::string dir = testing::temp_dir("make_test_model_stats").string();
  const std::string path = write_small(dir, "f32", "qwen2");
  auto f = gguf::File::open(path);
  auto stats = [&](const std::string& name, double& mean, double& sd) {
    const auto& t = f->tensor(name);
    const float* x = reinterpret_cast<const float*>(t.data);
    const int64_t n = t.n_elements();
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      s += x[i];
      s2 += double(x[i]) * x[i];
    }
    mean = s / double(n);
    sd = std::sqrt(s2 / double(n) - mean * mean);
  };
  double mean, sd;
  stats("token_embd.weight", mean, sd);  // untied: N(0, 1), 262144 samples
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(sd, 1.0, 0.01);
  stats("blk.0.attn_q.weight", mean, sd);  // N(0, 1/256): sd 0.0625, 65536 samples
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(sd, 0.0625, 0.001);
  stats("blk.1.ffn_down.weight", mean, sd);  // N(0, 1/768)
  EXPECT_NEAR(sd, 1.0 / std::sqrt(768.0), 0.0006);
  stats("blk.0.attn_k.bias", mean, sd);  // N(0, 0.5^2), 128 samples
  EXPECT_NEAR(sd, 0.5, 0.12);
  stats("output_norm.weight", mean, sd);  // 1 + N(0, 0.1^2), 256 samples
  EXPECT_NEAR(mean, 1.0, 0.025);
  EXPECT_NEAR(sd, 0.1, 0.02);
}

TEST(RandomModelWrite, DeterministicForASeedWhateverTheThreads) {
  const std::string dir = testing::temp_dir("make_test_model_seed").string();
  const auto a = testing::read_file(write_small(dir, "q4_k_m", "llama", "small", 2, 7, 1));
  const auto b = testing::read_file(write_small(dir, "q4_k_m", "llama", "small", 2, 7, 2));
  const auto c = testing::read_file(write_small(dir, "q4_k_m", "llama", "small", 2, 8, 2));
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
}

TEST(RandomModelWrite, ErrorsLeaveNoFileBehind) {
  const std::string dir = testing::temp_dir("make_test_model_err").string();
  RandomModelOptions o;
  o.shape = "tiny";
  o.type = "q8_0";
  o.out = dir + "/x.gguf";
  o.vocab_from = dir + "/missing.gguf";
  EXPECT_THROW(write_random_model(o), Error);
  EXPECT_FALSE(std::filesystem::exists(o.out));
  EXPECT_FALSE(std::filesystem::exists(o.out + ".tmp"));
  o.vocab_from.clear();
  o.arch = "gpt2";
  EXPECT_THROW(write_random_model(o), UsageError);
  o.arch.clear();
  o.out = dir + "/no/such/dir/x.gguf";
  EXPECT_THROW(write_random_model(o), Error);
}

}  // namespace
}  // namespace ragform::model
