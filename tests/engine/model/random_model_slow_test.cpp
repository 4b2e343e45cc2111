// Issue 4 section 2, "Weights stay memory-mapped": a Qwen2.5-0.5B-shaped Q4_K_M model (written by
// make-test-model with the real Qwen2.5 vocabulary) runs a few-hundred-token prefill at n_ctx
// 4096 in under 1 GB resident (VmHWM, the peak, from /proc/self/status). Writing it first, in
// the same process, also checks that the writer streams: its peak stays far below the 398 MB of
// tensor data it writes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "engine/gguf/gguf.h"
#include "engine/model/random_model.h"
#include "reader/native_reader.h"
#include "support/test_support.h"

namespace {

// A /proc/self/status field in kB ("VmRSS", "VmHWM").
long status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

TEST(RandomModelSlow, Qwen25_05B_Q4_K_M_RunsUnder1GB) {
  REQUIRE_SHARED(vocab, "fixtures/models/tiny-qwen2.gguf");
  const std::string out = (ragform::testing::temp_dir("make_test_model_q05") / "q05.gguf").string();
  ragform::model::RandomModelOptions o;
  o.shape = "qwen2.5-0.5b";
  o.type = "q4_k_m";
  o.vocab_from = vocab.string();
  o.out = out;
  const auto sum = ragform::model::write_random_model(o);
  const long hwm_write = status_kb("VmHWM");
  // Qwen2.5-0.5B has 494,032,768 parameters; its llama-quantize Q4_K_M mixes Q5_0 (896-long rows)
  // and Q8_0 (token_embd and the use_more_bits attn_v) with Q4_K/Q6_K ffn_down.
  EXPECT_EQ(sum.n_params, 494032768);
  const std::map<std::string, int> types = {
      {"f32", 121}, {"q4_K", 12}, {"q5_0", 132}, {"q6_K", 12}, {"q8_0", 13}};
  EXPECT_EQ(sum.type_counts, types);
  EXPECT_EQ(sum.file_bytes, std::filesystem::file_size(out));
  std::printf("make-test-model qwen2.5-0.5b q4_k_m: %.1f MB written, writer VmHWM %.1f MB\n",
              double(sum.file_bytes) / 1e6, double(hwm_write) / 1024);
  EXPECT_LT(hwm_write, 256L * 1024L) << "the writer does not stream";

  const long rss_before = status_kb("VmRSS");
  ragform::reader::NativeOptions no;
  no.n_ctx = 4096;
  ragform::reader::NativeReader reader(out, no);
  const long hwm_load = status_kb("VmHWM");
  std::string prompt;
  while (reader.count_tokens(prompt) < 300)
    prompt += "Retrieved passage: the committee met in Geneva to discuss the treaty's final text. ";
  const int n_prompt = reader.count_tokens(prompt);
  ragform::reader::GenerateParams gp;
  gp.max_tokens = 4;
  gp.ignore_eos = true;
  const auto g = reader.generate(prompt, gp);
  EXPECT_EQ(g.ids.size(), 4u);
  const long hwm_generate = status_kb("VmHWM");
  const auto sc = reader.score(prompt, " The treaty");
  EXPECT_TRUE(std::isfinite(sc.sum));

  const long rss = status_kb("VmRSS"), hwm = status_kb("VmHWM");
  std::printf(
      "qwen2.5-0.5b q4_k_m (%.1f MB file), n_ctx 4096, %d-token prefill: VmRSS %.1f MB "
      "(%.1f MB before loading), VmHWM %.1f MB (%.1f MB after loading, %.1f MB after "
      "generate, then score)\n",
      double(std::filesystem::file_size(out)) / 1e6, n_prompt, double(rss) / 1024,
      double(rss_before) / 1024, double(hwm) / 1024, double(hwm_load) / 1024,
      double(hwm_generate) / 1024);
  ASSERT_GT(hwm, 0);
  EXPECT_LT(hwm, 1024L * 1024L) << "peak resident memory " << hwm << " kB is over 1 GB";
  EXPECT_GE(n_prompt, 300);
}

}  // namespace
