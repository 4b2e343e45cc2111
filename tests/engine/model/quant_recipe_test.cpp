// llama-quantize's per-tensor recipe applied to tensor tables by name (quant_recipe.h), against
// types worked out by hand from llama.cpp 34af94c's rules. (The same recipe on make-test-model's
// planned tensors is tested in random_model_test.cpp; our output against llama-quantize's, byte
// for byte, is in docs/engine.md.)
#include "engine/model/quant_recipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "base/error.h"

namespace ragform::model {
namespace {

using gguf::TensorInfo;
using gguf::TensorType;

TensorInfo info(const std::string& name, std::vector<int64_t> ne, TensorType t = TensorType::F32) {
  TensorInfo i;
  i.name = name;
  i.ne = std::move(ne);
  i.type = t;
  return i;
}

std::string blk(int i, const char* what) {
  return "blk." + std::to_string(i) + "." + what + ".weight";
}

// Gemma 3 270M's tensor table (n_embd 640, 18 layers, 4 heads of 256, one KV head, n_ff 2048,
// vocabulary 262144, tied output), in the shipped file's order.
std::vector<TensorInfo> gemma3_270m() {
  std::vector<TensorInfo> v = {info("output_norm.weight", {640}),
                               info("token_embd.weight", {640, 262144})};
  for (int i = 0; i < 18; ++i) {
    v.push_back(info(blk(i, "attn_k"), {640, 256}));
    v.push_back(info(blk(i, "attn_k_norm"), {256}));
    v.push_back(info(blk(i, "attn_norm"), {640}));
    v.push_back(info(blk(i, "attn_output"), {1024, 640}));
    v.push_back(info(blk(i, "attn_q"), {640, 1024}));
    v.push_back(info(blk(i, "attn_q_norm"), {256}));
    v.push_back(info(blk(i, "attn_v"), {640, 256}));
    v.push_back(info(blk(i, "ffn_down"), {2048, 640}));
    v.push_back(info(blk(i, "ffn_gate"), {640, 2048}));
    v.push_back(info(blk(i, "ffn_norm"), {640}));
    v.push_back(info(blk(i, "ffn_up"), {640, 2048}));
    v.push_back(info(blk(i, "post_attention_norm"), {640}));
    v.push_back(info(blk(i, "post_ffw_norm"), {640}));
  }
  return v;
}

std::map<std::string, TensorType> plan(const std::vector<TensorInfo>& t, const std::string& type,
                                       int n_layer, bool lift = false) {
  RecipeFacts f;
  f.arch = "gemma3";
  f.n_layer = n_layer;
  f.lift_attn_v = lift;
  const auto types = plan_types(t, f, parse_scheme(type, "quantize"));
  std::map<std::string, TensorType> m;
  for (size_t i = 0; i < t.size(); ++i) m[t[i].name] = types[i];
  return m;
}

// use_more_bits(i, 18): i < 2, i >= 15, or (i - 2) % 3 == 2.
const std::set<int> kMoreBits18 = {0, 1, 4, 7, 10, 13, 15, 16, 17};

TEST(QuantRecipe, Gemma3_270M_Q4_K_M) {
  // 640 = 2.5 x 256: rows of 640 fall back (Q4_K -> Q5_0, Q6_K -> Q8_0, the tied embedding's
  // output rule -> Q8_0); attn_output (rows of 1024) and ffn_down (2048) keep K types. This is the
  // shipped Q4_K_M file's table: 109 f32, 81 q5_0, 27 q4_K, 9 q6_K, 10 q8_0.
  auto t = plan(gemma3_270m(), "q4_k_m", 18);
  EXPECT_EQ(t["token_embd.weight"], TensorType::Q8_0);
  EXPECT_EQ(t["output_norm.weight"], TensorType::F32);
  std::map<TensorType, int> count;
  for (const auto& [name, type] : t) ++count[type];
  for (int i = 0; i < 18; ++i) {
    const bool more = kMoreBits18.count(i) > 0;
    EXPECT_EQ(t[blk(i, "attn_q")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "attn_k")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "attn_v")], more ? TensorType::Q8_0 : TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "attn_output")], TensorType::Q4_K) << i;
    EXPECT_EQ(t[blk(i, "ffn_gate")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "ffn_up")], TensorType::Q5_0) << i;
    EXPECT_EQ(t[blk(i, "ffn_down")], more ? TensorType::Q6_K : TensorType::Q4_K) << i;
    EXPECT_EQ(t[blk(i, "attn_q_norm")], TensorType::F32) << i;
    EXPECT_EQ(t[blk(i, "post_ffw_norm")], TensorType::F32) << i;
  }
  EXPECT_EQ(count[TensorType::F32], 109);
  EXPECT_EQ(count[TensorType::Q5_0], 81);
  EXPECT_EQ(count[TensorType::Q4_K], 27);
  EXPECT_EQ(count[TensorType::Q6_K], 9);
  EXPECT_EQ(count[TensorType::Q8_0], 10);
}

TEST(QuantRecipe, Gemma3_270M_OtherMixtures) {
  const auto g = gemma3_270m();
  // q5_k_m: base Q5_K falls back to Q5_1 on 640-long rows; bumps as q4_k_m.
  auto m5 = plan(g, "q5_k_m", 18);
  EXPECT_EQ(m5["token_embd.weight"], TensorType::Q8_0);
  EXPECT_EQ(m5[blk(3, "attn_q")], TensorType::Q5_1);
  EXPECT_EQ(m5[blk(3, "attn_output")], TensorType::Q5_K);
  EXPECT_EQ(m5[blk(4, "ffn_down")], TensorType::Q6_K);
  EXPECT_EQ(m5[blk(3, "ffn_down")], TensorType::Q5_K);
  // q4_k_s: attn_v of the first 4, ffn_down of layers < 18/8 = 2 get Q5_K (-> Q5_1 at 640).
  auto s4 = plan(g, "q4_k_s", 18);
  EXPECT_EQ(s4[blk(3, "attn_v")], TensorType::Q5_1);
  EXPECT_EQ(s4[blk(4, "attn_v")], TensorType::Q5_0);
  EXPECT_EQ(s4[blk(1, "ffn_down")], TensorType::Q5_K);
  EXPECT_EQ(s4[blk(2, "ffn_down")], TensorType::Q4_K);
  // q3_k_m: attn_v Q5_K for the first 2 else Q4_K, ffn_down Q5_K below 18/16 = 1 else Q4_K,
  // attn_output Q4_K; other weights Q3_K (-> Q4_0 at 640).
  auto m3 = plan(g, "q3_k_m", 18);
  EXPECT_EQ(m3[blk(1, "attn_v")], TensorType::Q5_1);
  EXPECT_EQ(m3[blk(2, "attn_v")], TensorType::Q5_0);
  EXPECT_EQ(m3[blk(0, "ffn_down")], TensorType::Q5_K);
  EXPECT_EQ(m3[blk(1, "ffn_down")], TensorType::Q4_K);
  EXPECT_EQ(m3[blk(5, "attn_output")], TensorType::Q4_K);
  EXPECT_EQ(m3[blk(5, "ffn_up")], TensorType::Q4_0);
  // q5_k_s: only the output rule.
  auto s5 = plan(g, "q5_k_s", 18);
  EXPECT_EQ(s5["token_embd.weight"], TensorType::Q8_0);
  EXPECT_EQ(s5[blk(0, "ffn_down")], TensorType::Q5_K);
  EXPECT_EQ(s5[blk(0, "attn_v")], TensorType::Q5_1);
  // Plain types are --pure: no output rule, only the fallback.
  auto q4 = plan(g, "q4_k", 18);
  EXPECT_EQ(q4["token_embd.weight"], TensorType::Q5_0);
  EXPECT_EQ(q4[blk(0, "ffn_down")], TensorType::Q4_K);
  auto q40 = plan(g, "q4_0", 18);
  EXPECT_EQ(q40["token_embd.weight"], TensorType::Q4_0);
  // Float types: every weight, norms untouched.
  auto f16 = plan(g, "f16", 18);
  EXPECT_EQ(f16["token_embd.weight"], TensorType::F16);
  EXPECT_EQ(f16[blk(0, "attn_norm")], TensorType::F32);
}

TEST(QuantRecipe, AttnVCountedInLayerOrderWhateverTheFileOrder) {
  // llama.cpp ranks attn_v tensors in (layer, name) order: a file listing blk.10 before blk.2
  // (string order) must get the same types as one in layer order.
  auto g = gemma3_270m();
  const auto in_order = plan(g, "q4_k_m", 18);
  std::sort(g.begin(), g.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
  std::mt19937 rng(7);
  auto shuffled = g;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  EXPECT_EQ(plan(g, "q4_k_m", 18), in_order);
  EXPECT_EQ(plan(shuffled, "q4_k_m", 18), in_order);
}

TEST(QuantRecipe, UntiedOutputAndEmbedding) {
  // With an output.weight, it takes the output rule and token_embd keeps the base type.
  std::vector<TensorInfo> t = {info("token_embd.weight", {512, 1000}),
                               info("output.weight", {512, 1000}),
                               info(blk(0, "attn_v"), {512, 128})};
  auto m = plan(t, "q4_k_m", 1);
  EXPECT_EQ(m["output.weight"], TensorType::Q6_K);
  EXPECT_EQ(m["token_embd.weight"], TensorType::Q4_K);
  EXPECT_EQ(m[blk(0, "attn_v")], TensorType::Q6_K);  // use_more_bits(0, 1): 0 >= 7/8 = 0
  // Tied: token_embd takes the output rule.
  t.erase(t.begin() + 1);
  EXPECT_EQ(plan(t, "q4_k_m", 1)["token_embd.weight"], TensorType::Q6_K);
}

TEST(QuantRecipe, WhatIsConverted) {
  EXPECT_TRUE(is_quantizable("blk.0.attn_q.weight", {64, 64}));
  EXPECT_FALSE(is_quantizable("blk.0.attn_q.bias", {64, 64}));       // not a weight
  EXPECT_FALSE(is_quantizable("blk.0.attn_norm.weight", {64}));      // 1-D
  EXPECT_FALSE(is_quantizable("blk.0.ffn_up.weight", {64, 1}));      // ggml_n_dims = 1
  EXPECT_FALSE(is_quantizable("blk.0.ffn_norm.weight", {64, 64}));   // a norm
  EXPECT_FALSE(is_quantizable("position_embd.weight", {384, 512}));  // BERT
  EXPECT_FALSE(is_quantizable("token_types.weight", {384, 2}));
  EXPECT_FALSE(is_quantizable("blk.0.ffn_gate_inp.weight", {64, 8}));  // MoE router
  EXPECT_TRUE(is_quantizable("blk.0.ffn_up.weight", {64, 1, 4}));      // experts: 3-D
  EXPECT_EQ(role_of_name("blk.3.attn_qkv.weight"), TensorRole::AttnQKV);
  EXPECT_EQ(role_of_name("blk.3.ffn_down_exps.weight"), TensorRole::FfnDown);
  EXPECT_EQ(role_of_name("per_layer_token_embd.weight"), TensorRole::TokenEmbd);
  EXPECT_EQ(role_of_name("blk.0.attn_output_norm.weight"), TensorRole::Other);
  // A tensor that is not converted keeps its own type, whatever the scheme.
  const std::vector<TensorInfo> t = {info("blk.0.attn_norm.weight", {64}, TensorType::F16),
                                     info("blk.0.attn_q.weight", {64, 64}, TensorType::Q8_0)};
  RecipeFacts f;
  f.n_layer = 1;
  const auto types = plan_types(t, f, parse_scheme("f32"));
  EXPECT_EQ(types[0], TensorType::F16);
  EXPECT_EQ(types[1], TensorType::F32);
}

TEST(QuantRecipe, FallbackAndSeventyB) {
  const WeightScheme q2 = parse_scheme("q2_k"), q6 = parse_scheme("q6_k"),
                     q40 = parse_scheme("q4_0"), km = parse_scheme("q4_k_m");
  EXPECT_EQ(choose_tensor_type(q2, TensorRole::AttnQ, 0, 0, 640, true), TensorType::Q4_0);
  EXPECT_EQ(choose_tensor_type(q6, TensorRole::AttnQ, 0, 0, 640, true), TensorType::Q8_0);
  EXPECT_EQ(choose_tensor_type(q40, TensorRole::AttnQ, 0, 0, 48, true), TensorType::F16);
  // "70B": attn_v's Q4_K becomes Q5_K (Q6_K stays).
  EXPECT_EQ(choose_tensor_type(km, TensorRole::AttnV, 40, 80, 8192, false, true), TensorType::Q5_K);
  EXPECT_EQ(choose_tensor_type(km, TensorRole::AttnV, 0, 80, 8192, false, true), TensorType::Q6_K);
  EXPECT_EQ(choose_tensor_type(km, TensorRole::AttnV, 40, 80, 8192, false, false),
            TensorType::Q4_K);
  // Which models are "70B" (llama.cpp's LLM_TYPE_70B): 80-layer llama with GQA, 80-layer qwen2.
  auto facts = [](const std::string& arch, uint32_t layers, uint32_t heads, uint32_t kv) {
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::str(arch));
    w.set(arch + ".block_count", gguf::Value::u32(layers));
    w.set(arch + ".attention.head_count", gguf::Value::u32(heads));
    w.set(arch + ".attention.head_count_kv", gguf::Value::u32(kv));
    const std::string bytes = w.to_bytes();
    auto f = gguf::File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "m");
    return recipe_facts(*f);
  };
  EXPECT_TRUE(facts("llama", 80, 64, 8).lift_attn_v);
  EXPECT_FALSE(facts("llama", 80, 64, 64).lift_attn_v);  // 65B
  EXPECT_FALSE(facts("llama", 32, 32, 8).lift_attn_v);
  EXPECT_TRUE(facts("qwen2", 80, 64, 8).lift_attn_v);
  EXPECT_FALSE(facts("gemma3", 80, 64, 8).lift_attn_v);
  EXPECT_EQ(facts("gemma3", 18, 4, 1).n_layer, 18);
}

TEST(QuantRecipe, SchemesAndRefusals) {
  EXPECT_EQ(parse_scheme("Q4_K_M").file_type, 15u);
  EXPECT_EQ(parse_scheme("q5_k_m").file_type, 17u);
  EXPECT_EQ(parse_scheme("q3_k_m").file_type, 12u);
  EXPECT_EQ(parse_scheme("q5_k_s").file_type, 16u);
  EXPECT_EQ(parse_scheme("bf16").file_type, 32u);
  EXPECT_EQ(parse_scheme("q8_0").file_type, 7u);
  try {
    parse_scheme("q4_k_l", "quantize");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("quantize: unknown --type 'q4_k_l' (accepted: f32,"),
              std::string::npos)
        << e.what();
  }
  RecipeFacts moe;
  moe.arch = "llama";
  moe.n_expert = 8;
  const std::vector<TensorInfo> t = {info(blk(0, "ffn_up_exps"), {256, 512, 8})};
  EXPECT_THROW(plan_types(t, moe, parse_scheme("q4_k_m")), UsageError);
  EXPECT_NO_THROW(plan_types(t, moe, parse_scheme("q4_k")));  // a plain type has no MoE rule
}

}  // namespace
}  // namespace ragform::model
