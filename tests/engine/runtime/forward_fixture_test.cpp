// The forward pass against llama.cpp's reference outputs (../shared/fixtures/ref): logits at every
// shipped position, the last layer's attention for the final query, every layer's full attention
// tensor where shipped, and greedy continuations up to the first near-tie.
// Tolerances are the table (per weight type); see docs/engine.md for why they hold.
#include <cmath>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {
using nlohmann::json;

struct Tol {
  double logits, attn, margin;
};

Tol tolerance_for(const std::string& model) {
  if (model == "stories260K" || model == "tinyq-f32" || model == "tinyq-qwen2-f32")
    return {1e-3, 1e-4, 0.01};
  // F16 products are exact by default (issue 23), each output one fused chain along k (issue 30):
  // measured 1.36e-3 on tinyq-f16, 7.2e-5 (tiny-llama, top-10 of one position) and 2.4e-6
  // (tiny-qwen2) with F16 embeddings and output only. The approximate int16
  // path, when it was the default, gave 2.1e-3 / 9.3e-4 / 1.8e-3: these bars fail if it becomes
  // the default again (on AVX512-VNNI machines, where it runs).
  if (model == "tinyq-f16") return {1.6e-3, 1e-3, 0.1};
  if (model == "tiny-llama" || model == "tiny-qwen2") return {1e-4, 1e-3, 0.1};
  if (model == "tinyq-bf16") return {2e-2, 3e-3, 0.1};
  return {0.25, 2.6e-2, 0.1};
}

std::vector<std::string> all_models() {
  return {"stories260K",  "tiny-llama",      "tiny-qwen2",       "tinyq-f32",
          "tinyq-f16",    "tinyq-bf16",      "tinyq-q8_0",       "tinyq-q4_0",
          "tinyq-q4_1",   "tinyq-q5_0",      "tinyq-q5_1",       "tinyq-q2_k",
          "tinyq-q3_k_s", "tinyq-q4_k_s",    "tinyq-q5_k_s",     "tinyq-q6_k",
          "tinyq-q4_k_m", "tinyq-qwen2-f32", "tinyq-qwen2-q8_0", "tinyq-qwen2-q4_k_m"};
}

std::vector<float> read_f32(const std::string& path) {
  std::string b = testing::read_file(path);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

class ForwardFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(ForwardFixture, LogitsAndAttentionMatchLlamaCpp) {
  const std::string name = GetParam();
  const Tol tol = tolerance_for(name);
  REQUIRE_SHARED(ref, "fixtures/ref/" + name);
  for (const char* p : {"p1", "p2"}) {
    SCOPED_TRACE(std::string(name) + " " + p);
    json meta = json::parse(testing::read_file(ref / p / "meta.json"));
    auto model = model::Model::load(
        testing::shared_path("fixtures/" + meta["model"].get<std::string>()).string());
    Context ctx(*model, {512, KvType::F32, nullptr});
    int seq = ctx.new_sequence();
    SeqInput in;
    in.seq = seq;
    in.tokens = meta["prompt_ids"].get<std::vector<int32_t>>();
    in.logits = LogitsMode::All;
    for (int l = 0; l < model->hp().n_layer; ++l) in.attn_layers.push_back(l);
    const int T = int(in.tokens.size());
    for (int i = 0; i < T; ++i) in.attn_queries.push_back(i);
    auto out = ctx.eval({in});
    const int V = model->hp().n_vocab;
    ASSERT_EQ(out[0].logits.size(), size_t(T) * size_t(V));

    // Last position, full vocabulary.
    auto last = meta["logits_last"].get<std::vector<double>>();
    ASSERT_EQ(last.size(), size_t(V));
    double d_last = 0;
    for (int i = 0; i < V; ++i)
      d_last = std::max(d_last, std::fabs(out[0].logits[size_t(T - 1) * V + i] - last[size_t(i)]));
    EXPECT_LE(d_last, tol.logits) << "last-position logits";
    std::printf("[measured] %s %s last-position max|dlogit| %.3g\n", name.c_str(), p, d_last);
    // Every position, where shipped.
    if (!meta["logits_all"]["file"].is_null()) {
      auto all = read_f32((ref / p / meta["logits_all"]["file"].get<std::string>()).string());
      ASSERT_EQ(all.size(), out[0].logits.size());
      double d = 0;
      for (size_t i = 0; i < all.size(); ++i)
        d = std::max(d, double(std::fabs(all[i] - out[0].logits[i])));
      EXPECT_LE(d, tol.logits) << "all-position logits";
      std::printf("[measured] %s %s all-position max|dlogit| %.3g\n", name.c_str(), p, d);
    } else {
      // Top-10 logits of every position.
      double d = 0;
      for (auto& row : meta["top10_per_position"]) {
        int pos = row["pos"];
        auto ids = row["ids"].get<std::vector<int>>();
        auto lg = row["logits"].get<std::vector<double>>();
        for (size_t k = 0; k < ids.size(); ++k)
          d = std::max(d, std::fabs(out[0].logits[size_t(pos) * V + ids[k]] - lg[k]));
      }
      EXPECT_LE(d, tol.logits) << "top-10 logits per position";
      std::printf("[measured] %s %s top-10 per position max|dlogit| %.3g\n", name.c_str(), p, d);
    }
    // Full attention tensors [1][n_head][n_tokens][n_kv] where shipped.
    for (auto& cap : meta["captured"]) {
      if (cap["file"].is_null()) continue;
      std::string capname = cap["name"];
      int layer = std::stoi(capname.substr(capname.rfind('-') + 1));
      auto t = read_f32((ref / p / cap["file"].get<std::string>()).string());
      const int n_kv = cap["ggml_ne"][0], n_tok = cap["ggml_ne"][1], n_head = cap["ggml_ne"][2];
      ASSERT_EQ(n_tok, T);
      double d = 0;
      for (auto& ar : out[0].attention) {
        if (ar.layer != layer) continue;
        for (int h = 0; h < n_head; ++h)
          for (int j = 0; j < n_kv; ++j) {
            float ours = j <= ar.query_pos ? ar.heads[size_t(h)][size_t(j)] : 0.0f;
            d = std::max(
                d, double(std::fabs(
                       ours - t[(size_t(h) * n_tok + size_t(ar.query_pos)) * n_kv + size_t(j)])));
          }
      }
      EXPECT_LE(d, tol.attn) << capname;
      std::printf("[measured] %s %s %s max|dattn| %.3g\n", name.c_str(), p, capname.c_str(), d);
    }
  }
  // The last layer's final-query attention of p2 (the only attention reference for big
  // vocabularies).
  json aj = json::parse(testing::read_file(ref / "attn_last_layer_last_query.json"));
  auto model =
      model::Model::load(testing::shared_path("fixtures/models/" + name + ".gguf").string());
  Context ctx(*model, {512, KvType::F32, nullptr});
  SeqInput in;
  in.seq = ctx.new_sequence();
  in.tokens = aj["prompt_ids"].get<std::vector<int32_t>>();
  in.logits = LogitsMode::None;
  in.attn_layers = {model->hp().n_layer - 1};
  auto out = ctx.eval({in});
  ASSERT_EQ(out[0].attention.size(), 1u);
  auto& w = aj["weights"];
  double d = 0;
  for (size_t h = 0; h < w.size(); ++h)
    for (size_t j = 0; j < w[h].size(); ++j)
      d = std::max(d, std::fabs(out[0].attention[0].heads[h][j] - w[h][j].get<double>()));
  EXPECT_LE(d, tol.attn) << "attn_last_layer_last_query";
  std::printf("[measured] %s attn_last_layer_last_query max|dattn| %.3g\n", name.c_str(), d);
}

TEST_P(ForwardFixture, GreedyMatchesUpToFirstNearTie) {
  const std::string name = GetParam();
  const Tol tol = tolerance_for(name);
  REQUIRE_SHARED(gpath, "fixtures/ref/" + name + "/greedy16.json");
  json g = json::parse(testing::read_file(gpath));
  auto model =
      model::Model::load(testing::shared_path("fixtures/models/" + name + ".gguf").string());
  Context ctx(*model, {512, KvType::F32, nullptr});
  SeqInput in;
  in.seq = ctx.new_sequence();
  in.tokens = g["prompt_ids"].get<std::vector<int32_t>>();
  auto expect = g["ids"].get<std::vector<int32_t>>();
  auto margins = g["margin_top1_minus_top2"].get<std::vector<double>>();
  const int V = model->hp().n_vocab;
  for (size_t step = 0; step < expect.size(); ++step) {
    auto out = ctx.eval({in});
    const float* lg = out[0].logits.data();
    int32_t best = int32_t(std::max_element(lg, lg + V) - lg);
    if (margins[step] < tol.margin) break;  // past a near-tie the continuation is not a fair test
    ASSERT_EQ(best, expect[step]) << "step " << step;
    in.tokens = {best};
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, ForwardFixture, ::testing::ValuesIn(all_models()),
                         [](const auto& param_info) {
                           std::string s = param_info.param;
                           for (auto& c : s)
                             if (!std::isalnum((unsigned char)c)) c = '_';
                           return s;
                         });

}  // namespace
}  // namespace ragform::runtime
