// make-test-model against the fixtures: the per-tensor types and file types llama-quantize chose
// for the tinyq files (tensor_types.json), and --vocab-from copying a real vocabulary.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_support.h"

namespace ragform::model {
namespace {

// The tinyq shape (FORMAT.md): 256 wide, 2 layers, 4/2 heads, n_ff 768, 512 tokens.
ModelShape tinyq_shape(bool tied) {
  ModelShape s = find_shape("small");
  s.n_layer = 2;
  s.n_vocab = 512;
  s.tied = tied;
  return s;
}

TEST(RandomModelFixture, TensorTypesMatchLlamaQuantize) {
  REQUIRE_SHARED(path, "fixtures/models/tensor_types.json");
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  // fixture file -> our --type (the _s files were made with --pure: plain K types)
  const std::pair<const char*, const char*> cases[] = {
      {"tinyq-f32.gguf", "f32"},
      {"tinyq-f16.gguf", "f16"},
      {"tinyq-bf16.gguf", "bf16"},
      {"tinyq-q8_0.gguf", "q8_0"},
      {"tinyq-q4_0.gguf", "q4_0"},
      {"tinyq-q4_1.gguf", "q4_1"},
      {"tinyq-q5_0.gguf", "q5_0"},
      {"tinyq-q5_1.gguf", "q5_1"},
      {"tinyq-q2_k.gguf", "q2_k"},
      {"tinyq-q3_k_s.gguf", "q3_k"},
      {"tinyq-q4_k_s.gguf", "q4_k"},
      {"tinyq-q5_k_s.gguf", "q5_k"},
      {"tinyq-q6_k.gguf", "q6_k"},
      {"tinyq-q4_k_m.gguf", "q4_k_m"},
      {"tinyq-qwen2-f32.gguf", "f32"},
      {"tinyq-qwen2-q8_0.gguf", "q8_0"},
      {"tinyq-qwen2-q4_k_m.gguf", "q4_k_m"},
  };
  for (const auto& [file, type] : cases) {
    SCOPED_TRACE(file);
    const auto& f = j.at(file);
    const std::string arch = f.at("general.architecture");
    const WeightScheme w = parse_scheme(type);
    EXPECT_EQ(f.at("general.file_type").get<int>(), int(w.file_type));
    const auto plan = plan_tensors(tinyq_shape(arch == "qwen2"), arch, w);
    ASSERT_EQ(plan.size(), f.at("tensors").size());
    for (const auto& t : plan) {
      ASSERT_TRUE(f.at("tensors").contains(t.name)) << t.name;
      const auto& ft = f.at("tensors").at(t.name);
      EXPECT_EQ(ft.at("type").get<std::string>(), [&] {
        std::string n = gguf::type_name(t.type);
        for (auto& c : n) c = char(std::toupper(static_cast<unsigned char>(c)));
        return n;
      }()) << t.name;
      EXPECT_EQ(ft.at("ggml_ne").get<std::vector<int64_t>>(), t.ne) << t.name;
    }
  }
}

TEST(RandomModelFixture, VocabFromCopiesTheQwenTokenizer) {
  REQUIRE_SHARED(src, "fixtures/models/tiny-qwen2.gguf");
  const std::string out = (testing::temp_dir("make_test_model_vocab") / "q.gguf").string();
  RandomModelOptions o;
  o.shape = "tiny";
  o.arch = "qwen2";
  o.type = "q8_0";
  o.vocab_from = src.string();
  o.out = out;
  const RandomModelSummary s = write_random_model(o);
  EXPECT_EQ(s.shape.n_vocab, 151936);

  auto a = gguf::File::open(src.string());
  auto b = gguf::File::open(out);
  for (const auto& [k, v] : a->metadata()) {
    if (k.rfind("tokenizer.", 0) != 0) continue;
    ASSERT_TRUE(b->has(k)) << k;
    EXPECT_EQ(b->get(k).to_display(), v.to_display()) << k;
  }
  EXPECT_EQ(b->tensor("token_embd.weight").ne[1], 151936);
  auto ta = tok::Tokenizer::from_gguf(*a);
  auto tb = tok::Tokenizer::from_gguf(*b);
  const std::string text =
      "Retrieval-augmented readers answer 42 questions; naïve ones don't <|im_end|> 你好.";
  const auto ids = tb->encode(text, true, false);
  EXPECT_EQ(ids, ta->encode(text, true, false));
  EXPECT_GT(ids.size(), 10u);
  EXPECT_EQ(tb->decode(ids), text);
  // The written model loads and its vocabulary size comes from the copied tokenizer.
  auto m = Model::load(out);
  EXPECT_EQ(m->hp().n_vocab, 151936);
  EXPECT_EQ(m->output.n_out, 151936);  // tiny is untied: output.weight has a row per token
}

}  // namespace
}  // namespace ragform::model
