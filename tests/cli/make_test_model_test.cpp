// `ragform make-test-model` through the real binary: the JSON summary, a model the other commands
// run, and usage errors with exit code 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {
using nlohmann::json;
using ragform::testing::run_ragform;

TEST(MakeTestModelCli, WritesARunnableModel) {
  const auto dir = ragform::testing::temp_dir("make_test_model_cli");
  const std::string out = (dir / "m.gguf").string();
  auto r = run_ragform("make-test-model --shape tiny --arch qwen2 --type q4_k_m --seed 3 -o '" +
                       out + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["arch"], "qwen2");
  EXPECT_EQ(j["shape"], "tiny");
  EXPECT_EQ(j["n_layer"], 2);
  EXPECT_EQ(j["n_vocab"], 512);
  // tiny: 64-wide rows fall back from Q4_K to Q5_0; output and layer 1's attn_v / ffn_down want
  // Q6_K and get Q8_0 (64 and 192 are not multiples of 256); 2 norms + 3 biases per layer + 1.
  EXPECT_EQ(j["tensor_types"], json::parse(R"({"f32": 11, "q5_0": 13, "q8_0": 3})"));
  EXPECT_EQ(j["file_bytes"].get<uint64_t>(), std::filesystem::file_size(out));
  // tiny: 512*64 embedding + output, per layer 4096+2048+2048+4096 attention, 3*64*192 ffn,
  // 2*64 norms and 64+32+32 biases (head_dim 16), plus the output norm.
  EXPECT_EQ(j["n_params"],
            2 * 512 * 64 + 2 * (4096 + 2048 + 2048 + 4096 + 3 * 64 * 192 + 128 + 128) + 64);

  auto g = run_ragform("generate -m '" + out + "' -p 'once upon a time' -n 3 --ignore-eos --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(json::parse(g.out)["ids"].size(), 3u);
}

TEST(MakeTestModelCli, BadArgumentsAreUsageErrors) {
  const auto dir = ragform::testing::temp_dir("make_test_model_cli_err");
  const std::string out = (dir / "m.gguf").string();
  auto r = run_ragform("make-test-model --shape tiny --type q4_k_l -o '" + out + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown --type 'q4_k_l'"), std::string::npos) << r.err;
  r = run_ragform("make-test-model --shape huge --type q8_0 -o '" + out + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("qwen2.5-0.5b"), std::string::npos) << r.err;
  r = run_ragform("make-test-model --shape tiny --type q8_0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(out));
  r = run_ragform("make-test-model --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("llama-3.2-1b"), std::string::npos);
}

}  // namespace
