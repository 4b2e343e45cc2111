// Model card on small GGUF images written in memory: defaults, required keys, validation errors,
// special-token rules and chat-template detection. Expected values are the hand-set metadata.
#include "engine/model/model_card.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "support/gguf_image.h"

namespace ragform::model {
namespace {

using gguf::Value;
using gguf::ValueType;

// A minimal llama-arch model: 2 layers, n_embd 8, 2 heads, one 8x4 F32 token_embd.
struct Builder {
  gguf::Writer w;
  std::vector<float> embd = std::vector<float>(8 * 4, 0.5f);
  std::vector<float> out = std::vector<float>(8 * 4, 0.25f);
  bool with_output = true;
  bool with_tensors = true;
  std::string bytes;

  Builder() {
    w.set("general.architecture", Value::str("llama"));
    w.set("general.name", Value::str("unit"));
    w.set("llama.embedding_length", Value::u32(8));
    w.set("llama.block_count", Value::u32(2));
    w.set("llama.attention.head_count", Value::u32(2));
    w.set("llama.context_length", Value::u32(128));
    w.set("tokenizer.ggml.model", Value::str("llama"));
    w.set("tokenizer.ggml.tokens", Value::str_array({"<unk>", "<s>", "</s>", "hi"}));
  }
  std::unique_ptr<gguf::File> file() {
    if (with_tensors) {
      w.add_tensor("token_embd.weight", {8, 4}, gguf::TensorType::F32, embd.data(),
                   embd.size() * 4);
      if (with_output)
        w.add_tensor("output.weight", {8, 4}, gguf::TensorType::F32, out.data(), out.size() * 4);
    }
    bytes = w.to_bytes();
    return ragform::testing::parse_gguf(bytes, "unit.gguf");
  }
};

std::string error_of(Builder& b) {
  try {
    summarize(*b.file());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const SpecialToken* special(const ModelCard& c, const std::string& role) {
  for (const auto& s : c.special_tokens)
    if (s.role == role) return &s;
  return nullptr;
}

TEST(ModelCard, DefaultsFollowLlamaCpp) {
  Builder b;
  ModelCard c = summarize(*b.file());
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.name, "unit");
  EXPECT_FALSE(c.vocab_only);
  EXPECT_EQ(c.n_embd, 8);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.n_head, 2);
  EXPECT_EQ(c.n_head_kv, 2);  // absent -> head_count
  EXPECT_EQ(c.head_dim, 4);   // 8 / 2
  EXPECT_EQ(c.n_rot, 4);      // absent -> head_dim
  EXPECT_FALSE(c.n_ff.has_value());
  EXPECT_EQ(c.rope_type, "norm");
  EXPECT_EQ(c.rope_freq_base, 10000.0);
  EXPECT_EQ(c.rope_scaling, "none");
  EXPECT_EQ(c.rope_scaling_factor, 1.0);
  EXPECT_EQ(c.norm, "");
  EXPECT_EQ(c.tied_output, false);
  EXPECT_EQ(c.n_params, 64);  // 2 tensors x 32 elements
  EXPECT_EQ(c.tensor_bytes, 256u);
  ASSERT_EQ(c.type_histogram.size(), 1u);
  EXPECT_EQ(c.type_histogram[0].type, gguf::TensorType::F32);
  EXPECT_EQ(c.type_histogram[0].count, 2);
  EXPECT_EQ(c.vocab_size, 4);
  EXPECT_EQ(c.chat_family, "none");
  EXPECT_FALSE(c.has_chat_template);
  // SPM defaults: bos 1, eos 2, unk 0 (llama-vocab.cpp), with their texts.
  ASSERT_NE(special(c, "bos"), nullptr);
  EXPECT_EQ(special(c, "bos")->id, 1);
  EXPECT_EQ(special(c, "bos")->text, "<s>");
  EXPECT_EQ(special(c, "bos")->source, "default");
  EXPECT_EQ(special(c, "eos")->text, "</s>");
  EXPECT_EQ(special(c, "unk")->id, 0);
  EXPECT_EQ(special(c, "eot"), nullptr);
  EXPECT_EQ(special(c, "pad"), nullptr);
  EXPECT_TRUE(c.warnings.empty());
}

TEST(ModelCard, TiedWhenNoOutputTensor) {
  Builder b;
  b.with_output = false;
  ModelCard c = summarize(*b.file());
  EXPECT_EQ(c.tied_output, true);
  EXPECT_EQ(c.n_params, 32);
}

TEST(ModelCard, MissingRequiredKeyIsNamed) {
  for (const char* key : {"llama.embedding_length", "llama.block_count",
                          "llama.attention.head_count", "llama.context_length"}) {
    SCOPED_TRACE(key);
    Builder b;
    gguf::Writer w2;
    // Rebuild without `key`.
    for (const auto& k : {"general.architecture", "llama.embedding_length", "llama.block_count",
                          "llama.attention.head_count", "llama.context_length"}) {
      if (std::string(k) == key) continue;
      if (std::string(k) == "general.architecture")
        w2.set(k, Value::str("llama"));
      else
        w2.set(k, Value::u32(std::string(k) == "llama.embedding_length" ? 8 : 2));
    }
    b.w = w2;
    std::string err = error_of(b);
    EXPECT_NE(err.find(std::string("'") + key + "' is missing"), std::string::npos) << err;
    EXPECT_NE(err.find("unit.gguf"), std::string::npos) << err;
  }
  Builder b;
  b.w = gguf::Writer();
  EXPECT_NE(error_of(b).find("'general.architecture' is missing"), std::string::npos);
}

TEST(ModelCard, InvalidHeadCountsAreErrors) {
  Builder b;
  b.w.set("llama.attention.head_count_kv", Value::u32(3));  // 2 % 3 != 0
  EXPECT_NE(error_of(b).find("'llama.attention.head_count_kv' = 3 does not divide head_count 2"),
            std::string::npos);
  Builder b2;
  b2.w.set("llama.attention.head_count", Value::u32(3));  // 8 % 3 != 0
  EXPECT_NE(error_of(b2).find("does not divide embedding_length 8"), std::string::npos);
  Builder b3;
  b3.w.set("llama.block_count", Value::u32(0));
  EXPECT_NE(error_of(b3).find("'llama.block_count' must be positive"), std::string::npos);
  Builder b4;
  b4.w.set("llama.context_length", Value::str("2048"));
  EXPECT_NE(error_of(b4).find("'llama.context_length' must be an integer, found string"),
            std::string::npos);
}

TEST(ModelCard, KeyLengthOverridesHeadDim) {
  Builder b;
  b.w.set("llama.attention.head_count", Value::u32(3));
  b.w.set("llama.attention.key_length", Value::u32(16));
  ModelCard c = summarize(*b.file());
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.n_rot, 16);
}

TEST(ModelCard, PerLayerArraysReportTheLargestAndWarn) {
  Builder b;
  b.w.set("llama.attention.head_count_kv",
          Value::array(ValueType::I32, {Value::i32(1), Value::i32(2)}));
  ModelCard c = summarize(*b.file());
  EXPECT_EQ(c.n_head_kv, 2);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("varies per layer (1..2)"), std::string::npos);
}

TEST(ModelCard, RopeAndNormSettings) {
  Builder b;
  b.w.set("general.architecture", Value::str("qwen2"));
  for (auto [k, v] : std::vector<std::pair<std::string, uint32_t>>{{"embedding_length", 8},
                                                                   {"block_count", 2},
                                                                   {"attention.head_count", 2},
                                                                   {"context_length", 64}})
    b.w.set("qwen2." + k, Value::u32(v));
  b.w.set("qwen2.rope.freq_base", Value::f32(1e6f));
  b.w.set("qwen2.rope.scaling.type", Value::str("yarn"));
  b.w.set("qwen2.rope.scaling.factor", Value::f32(4.0f));
  b.w.set("qwen2.rope.scaling.original_context_length", Value::u32(32768));
  b.w.set("qwen2.attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
  ModelCard c = summarize(*b.file());
  EXPECT_EQ(c.rope_type, "neox");
  EXPECT_EQ(c.rope_freq_base, 1e6);
  EXPECT_EQ(c.rope_scaling, "yarn");
  EXPECT_EQ(c.rope_scaling_factor, 4.0);
  EXPECT_EQ(c.rope_original_ctx, 32768);
  EXPECT_EQ(c.norm, "rms");
  EXPECT_EQ(c.norm_eps, 1e-6);  // shortest float32 decimal, not 9.99999997e-07
  // The older key: a linear factor without a type.
  Builder b2;
  b2.w.set("llama.rope.scale_linear", Value::f32(2.0f));
  ModelCard c2 = summarize(*b2.file());
  EXPECT_EQ(c2.rope_scaling, "linear");
  EXPECT_EQ(c2.rope_scaling_factor, 2.0);
}

TEST(ModelCard, SpecialTokensFromMetadataAndBadIds) {
  Builder b;
  b.w.set("tokenizer.ggml.bos_token_id", Value::u32(3));
  b.w.set("tokenizer.ggml.eos_token_id", Value::u32(99));  // out of range: warn, default
  b.w.set("tokenizer.ggml.padding_token_id", Value::u32(0xFFFFFFFFu));  // "none": silent
  ModelCard c = summarize(*b.file());
  EXPECT_EQ(special(c, "bos")->id, 3);
  EXPECT_EQ(special(c, "bos")->text, "hi");
  EXPECT_EQ(special(c, "bos")->source, "metadata");
  EXPECT_EQ(special(c, "eos")->id, 2);
  EXPECT_EQ(special(c, "eos")->source, "default");
  EXPECT_EQ(special(c, "pad"), nullptr);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("'tokenizer.ggml.eos_token_id' = 99 is outside the vocabulary"),
            std::string::npos);
}

TEST(ModelCard, EotByTextPrefersEarlierCandidates) {
  Builder b;
  b.w.set("tokenizer.ggml.tokens",
          Value::str_array({"<unk>", "<s>", "</s>", "<|endoftext|>", "<|im_end|>"}));
  ModelCard c = summarize(*b.file());
  ASSERT_NE(special(c, "eot"), nullptr);
  EXPECT_EQ(special(c, "eot")->id, 4);  // <|im_end|> before <|endoftext|>
  EXPECT_EQ(special(c, "eot")->source, "text");
  Builder b2;
  b2.w.set("tokenizer.ggml.eot_token_id", Value::u32(2));
  ModelCard c2 = summarize(*b2.file());
  EXPECT_EQ(special(c2, "eot")->id, 2);
  EXPECT_EQ(special(c2, "eot")->source, "metadata");
}

TEST(ModelCard, ChatTemplateFamily) {
  Builder b;
  b.w.set("tokenizer.chat_template",
          Value::str("{% for m in messages %}{{'<|im_start|>' + m['role'] }}{% endfor %}"));
  ModelCard c = summarize(*b.file());
  EXPECT_TRUE(c.has_chat_template);
  EXPECT_EQ(c.chat_family, "chatml");
  Builder b2;
  b2.w.set("tokenizer.chat_template", Value::u32(1));
  EXPECT_NE(error_of(b2).find("'tokenizer.chat_template' must be a string"), std::string::npos);
}

TEST(ModelCard, VocabOnlyNeedsOnlyATokenizer) {
  Builder b;
  b.with_tensors = false;
  b.w = gguf::Writer();
  b.w.set("general.architecture", Value::str("llama"));
  b.w.set("tokenizer.ggml.model", Value::str("llama"));
  b.w.set("tokenizer.ggml.tokens", Value::str_array({"<unk>", "<s>", "</s>"}));
  ModelCard c = summarize(*b.file());
  EXPECT_TRUE(c.vocab_only);
  EXPECT_FALSE(c.n_embd.has_value());
  EXPECT_FALSE(c.tied_output.has_value());
  EXPECT_EQ(c.n_params, 0);
  EXPECT_EQ(c.vocab_size, 3);
  EXPECT_NE(to_text(c).find("vocabulary only"), std::string::npos);
  EXPECT_TRUE(to_json(c)["n_embd"].is_null());

  Builder b2;
  b2.with_tensors = false;
  b2.w = gguf::Writer();
  b2.w.set("general.architecture", Value::str("llama"));
  EXPECT_NE(error_of(b2).find("'tokenizer.ggml.model' is missing in a vocabulary-only file"),
            std::string::npos);
}

TEST(ModelCard, ConsistencyWarnings) {
  Builder b;
  b.w.set("llama.vocab_size", Value::u32(5));
  b.w.set("tokenizer.ggml.tokens", Value::str_array({"<unk>", "<s>", "</s>"}));
  ModelCard c = summarize(*b.file());
  ASSERT_EQ(c.warnings.size(), 2u);
  EXPECT_NE(c.warnings[0].find("has 4 rows but the tokenizer has 3 tokens"), std::string::npos);
  EXPECT_NE(c.warnings[1].find("'llama.vocab_size' = 5"), std::string::npos);
}

TEST(ModelCard, NameTables) {
  EXPECT_EQ(rope_type_of_arch("llama"), "norm");
  EXPECT_EQ(rope_type_of_arch("qwen2"), "neox");
  EXPECT_EQ(rope_type_of_arch("qwen3"), "neox");
  EXPECT_EQ(rope_type_of_arch("gpt2"), "none");
  EXPECT_EQ(rope_type_of_arch("frobnicator"), "unknown");
  EXPECT_EQ(file_type_name(15), "Q4_K - Medium");
  EXPECT_EQ(file_type_name(32), "BF16");
  EXPECT_EQ(file_type_name(999), "unknown (999)");
  EXPECT_EQ(tokenizer_kind("gpt2"), "BPE");
}

}  // namespace
}  // namespace ragform::model
