// Gemma 3 270M Q4_K_M (trained; RAGFORM_GEMMA from scripts/models.sh) against llama.cpp 34af94c on
// the same file: logits at every position of six prompts of 150 to ~2,600 tokens (NQ-Open with
// 2-20 documents, HotpotQA, a chat turn; tests/data/real/gemma/prompts.json), past the 512-token
// sliding window, and 64 greedy tokens after each prompt.
//
// The references (tests/data/real/gemma/<prompt>.meta.json and .top8.bin) were made outside this
// repository by a dumper against llama.h: F32 KV cache, flash attention off, the prompt as one
// batch, 2 threads. Per position the .bin holds llama.cpp's top 8 ids (int32), their logits
// (float32) and the row's log-sum-exp (float32), so the full 262k-wide rows need not be shipped:
//   - top-1 agreement: ragform's argmax over the full row is llama.cpp's top id;
//   - max |dlogit| over llama.cpp's top 8 ids;
//   - KL(llama.cpp || ragform) over the 8 ids plus one bucket for the rest of the vocabulary: a
//     lower bound of the full KL (coarse-graining cannot raise a divergence). docs/engine.md
//     gives the full-row KL measured with scripts/compare-logits.py, with the command.
// Bars: as close to llama.cpp's F32-KV run as llama.cpp's own F16-KV run is to it, per prompt
// (its spread is in each .meta.json): top-1 agreement no more than 1 point below the spread's (and
// never more than 1 point below 97%), KL at most 0.7 x the spread's full-row KL, max |dlogit| at
// most the spread's. Issue 39 asked for top-1 >= 97% and KL <= 2e-3; on this model llama.cpp
// does not meet that against itself (top-1 94.7-98%, KL 6.3e-3-7.5e-3 between its two KV cache
// types), and ragform measures top-1 94.4-98%, KL (this lower bound) 3.2e-3-4.0e-3: at position 0
// the rows agree to 6e-6, from position 1 on the 8-bit activation blocks turn summation-order
// ulps into quantisation steps (docs/engine.md, "Gemma 3 270M").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "engine/runtime/generate.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/real_models.h"
#include "support/test_support.h"

namespace ragform::runtime {
namespace {
using nlohmann::json;

struct Reference {
  json meta;
  std::vector<int32_t> prompt_ids;
  int k = 0;
  std::vector<int32_t> top_ids;   // [T][k]
  std::vector<float> top_logits;  // [T][k]
  std::vector<float> lse;         // [T]
};

Reference load_reference(const std::string& key) {
  const auto dir = testing::real_data_dir("gemma");
  Reference r;
  r.meta = json::parse(testing::read_file(dir / (key + ".meta.json")));
  r.prompt_ids = r.meta["prompt_ids"].get<std::vector<int32_t>>();
  r.k = r.meta["top_k"];
  const std::string bin = testing::read_file(dir / (key + ".top8.bin"));
  const size_t T = r.prompt_ids.size(), rec = size_t(r.k) * 8 + 4;
  EXPECT_EQ(bin.size(), T * rec) << key << ".top8.bin";
  r.top_ids.resize(T * size_t(r.k));
  r.top_logits.resize(T * size_t(r.k));
  r.lse.resize(T);
  for (size_t t = 0; t < T && (t + 1) * rec <= bin.size(); ++t) {
    const char* p = bin.data() + t * rec;
    std::memcpy(&r.top_ids[t * size_t(r.k)], p, size_t(r.k) * 4);
    std::memcpy(&r.top_logits[t * size_t(r.k)], p + size_t(r.k) * 4, size_t(r.k) * 4);
    std::memcpy(&r.lse[t], p + size_t(r.k) * 8, 4);
  }
  return r;
}

struct Agreement {
  double top1 = 0, max_dlogit = 0, mean_kl = 0;
  double mean_dtop1_first = 0, mean_dtop1_last = 0;  // first 512 positions, last quarter
};

Agreement compare(const Reference& r, const std::vector<float>& logits, int V) {
  const size_t T = r.prompt_ids.size(), K = size_t(r.k);
  Agreement a;
  int agree = 0, n_first = 0, n_last = 0;
  for (size_t t = 0; t < T; ++t) {
    const float* row = &logits[t * size_t(V)];
    const int argmax = int(std::max_element(row, row + V) - row);
    agree += argmax == r.top_ids[t * K];
    double mx = row[argmax], s = 0;
    for (int i = 0; i < V; ++i) s += std::exp(double(row[i]) - mx);
    const double our_lse = mx + std::log(s);
    double p_top = 0, q_top = 0, kl = 0;
    for (size_t k = 0; k < K; ++k) {
      const int id = r.top_ids[t * K + k];
      const double ref = r.top_logits[t * K + k];
      a.max_dlogit = std::max(a.max_dlogit, std::fabs(row[id] - ref));
      const double lp = ref - r.lse[t], lq = row[id] - our_lse;
      p_top += std::exp(lp);
      q_top += std::exp(lq);
      kl += std::exp(lp) * (lp - lq);
    }
    const double pt = std::max(0.0, 1.0 - p_top), qt = std::max(1e-300, 1.0 - q_top);
    if (pt > 0) kl += pt * std::log(pt / qt);
    a.mean_kl += kl;
    const double d1 = std::fabs(row[r.top_ids[t * K]] - r.top_logits[t * K]);
    if (t < 512) a.mean_dtop1_first += d1, ++n_first;
    if (t >= T - T / 4) a.mean_dtop1_last += d1, ++n_last;
  }
  a.top1 = double(agree) / double(T);
  a.mean_kl /= double(T);
  a.mean_dtop1_first /= std::max(1, n_first);
  a.mean_dtop1_last /= std::max(1, n_last);
  return a;
}

class GemmaLogitsReal : public ::testing::TestWithParam<std::string> {};

TEST_P(GemmaLogitsReal, EveryPositionAgreesWithLlamaCpp) {
  REQUIRE_REAL_MODEL(path, "RAGFORM_GEMMA");
  const std::string key = GetParam();
  const Reference r = load_reference(key);
  auto model = model::Model::load(path);
  const int V = model->hp().n_vocab;
  ASSERT_EQ(V, r.meta["n_vocab"].get<int>());
  // The prompt's ids are llama.cpp's; ragform's own tokenisation must give the same.
  auto tk = tok::Tokenizer::from_gguf(model->file());
  const auto prompts =
      json::parse(testing::read_file(testing::real_data_dir("gemma") / "prompts.json"));
  EXPECT_EQ(tk->encode(prompts[key].get<std::string>(), true, r.meta["parse_special"]),
            r.prompt_ids)
      << key << ": tokenisation";

  const int T = int(r.prompt_ids.size());
  Context ctx(*model, {T + 64, KvType::F32, nullptr});
  SeqInput in;
  in.seq = ctx.new_sequence();
  in.tokens = r.prompt_ids;
  in.logits = LogitsMode::All;
  auto out = ctx.eval({in});
  ASSERT_EQ(out[0].logits.size(), size_t(T) * size_t(V));
  const Agreement a = compare(r, out[0].logits, V);
  out.clear();
  const json& spread = r.meta["f16kv_vs_f32kv"];
  std::printf(
      "[measured] gemma3-270m %s T=%d: top-1 %.4f, max|dlogit| (top-8) %.4g, KL (top-8 + tail) "
      "%.3g; mean |dlogit| of llama.cpp's top-1, positions <512 %.4g, last quarter %.4g; "
      "llama.cpp F16-KV vs F32-KV: max|dlogit| %.4g, top-1 %.4f, KL %.3g\n",
      key.c_str(), T, a.top1, a.max_dlogit, a.mean_kl, a.mean_dtop1_first, a.mean_dtop1_last,
      spread["max_abs_dlogit"].get<double>(), spread["top1_agreement"].get<double>(),
      spread["mean_kl"].get<double>());
  EXPECT_GE(a.top1, std::min(0.97, spread["top1_agreement"].get<double>()) - 0.01) << key;
  EXPECT_LE(a.mean_kl, 0.7 * spread["mean_kl"].get<double>()) << key;
  EXPECT_LE(a.max_dlogit, spread["max_abs_dlogit"].get<double>()) << key;
  // No drift with position: the error past the sliding window is of the size it is before it.
  if (T > 1024) {
    EXPECT_LE(a.mean_dtop1_last, 2.0 * a.mean_dtop1_first + 0.02) << key;
  }

  // 64 greedy tokens after the prompt (no stop at end-of-generation, as the dumper ran).
  Context gctx(*model, {T + 64, KvType::F32, nullptr});
  GenerateOptions go;
  go.max_tokens = 64;
  go.ignore_eos = true;
  auto g = generate(gctx, *tk, {r.prompt_ids}, go);
  const auto want = r.meta["greedy_ids"].get<std::vector<int32_t>>();
  size_t same = 0;
  while (same < want.size() && same < g[0].ids.size() && g[0].ids[same] == want[same]) ++same;
  std::printf("[measured] gemma3-270m %s: %zu of %zu greedy tokens equal llama.cpp's\n",
              key.c_str(), same, want.size());
  // Greedy: llama.cpp's 64 tokens, or where the two part, a near-tie: at that step ragform's own
  // logit for llama.cpp's token is within 0.5 of its best (the engines spread by ~0.2 on the top
  // logit, above; a wrong window, RoPE or norm moves logits by whole units). This replaced "all 64
  // where llama.cpp's two KV cache types agree, else 4": a prompt that ends on a near-tie in
  // llama.cpp's own row (nq20: its top two 0.087 apart) breaks either way with a change of
  // summation order (issue 45's online-softmax attention took the other branch there, and at
  // hotpot's second token).
  if (same < want.size()) {
    std::vector<int32_t> ids = r.prompt_ids;
    ids.insert(ids.end(), want.begin(), want.begin() + long(same));
    Context pctx(*model, {int(ids.size()) + 1, KvType::F32, nullptr});
    SeqInput step;
    step.seq = pctx.new_sequence();
    step.tokens = ids;
    step.logits = LogitsMode::Last;
    const auto o = pctx.eval({step});
    ASSERT_EQ(o[0].logits.size(), size_t(V));
    const float best = *std::max_element(o[0].logits.begin(), o[0].logits.end());
    const double gap = best - o[0].logits[size_t(want[same])];
    std::printf(
        "[measured] gemma3-270m %s: parts at token %zu, where llama.cpp's token is %.3f "
        "below ragform's best\n",
        key.c_str(), same, gap);
    EXPECT_LE(gap, 0.5) << key << ": greedy text '" << g[0].text << "' against llama.cpp's '"
                        << r.meta["greedy_text"].get<std::string>() << "'";
  }
}

INSTANTIATE_TEST_SUITE_P(Prompts, GemmaLogitsReal,
                         ::testing::Values("chat", "nq2", "nq5", "nq10", "hotpot", "nq20"));

}  // namespace
}  // namespace ragform::runtime
