// The model card of every fixture model against ../shared/fixtures/FORMAT.md's model table (dims,
// layers, heads, vocab, RoPE, eps, tied output) and tensor_types.json (type histogram, parameter
// count, file type); vocabulary-only files against their known metadata.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf.h"
#include "engine/model/model_card.h"
#include "support/test_support.h"

namespace ragform::model {
namespace {

struct Expected {
  const char* arch;
  int64_t n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, vocab;
  const char* tokenizer;  // tokenizer.ggml.model
  const char* rope;
  double rope_base, eps;
  bool tied;
};

// FORMAT.md "models/" table, one row per family.
const Expected kStories = {"llama", 64, 5, 8, 4, 8, 172, 512, "llama", "norm", 1e4, 1e-5, false};
const Expected kTinyLlama = {"llama", 64,      3,      4,   2,    16,   176,
                             32000,   "llama", "norm", 1e4, 1e-5, false};
const Expected kTinyQwen2 = {"qwen2", 32, 2, 4, 2, 8, 96, 151936, "gpt2", "neox", 1e6, 1e-6, true};
const Expected kTinyq = {"llama", 256, 2, 4, 2, 64, 768, 512, "llama", "norm", 1e4, 1e-5, false};
const Expected kTinyqQwen2 = {"qwen2", 256,     2,      4,   2,    64,  768,
                              512,     "llama", "neox", 1e6, 1e-6, true};

const Expected& expected_for(const std::string& file) {
  if (file == "stories260K.gguf") return kStories;
  if (file == "tiny-llama.gguf") return kTinyLlama;
  if (file == "tiny-qwen2.gguf") return kTinyQwen2;
  if (file.rfind("tinyq-qwen2-", 0) == 0) return kTinyqQwen2;
  return kTinyq;
}

TEST(ModelCardFixtures, EveryModelMatchesFormatTable) {
  REQUIRE_SHARED(types_path, "fixtures/models/tensor_types.json");
  auto j = nlohmann::json::parse(testing::read_file(types_path));
  ASSERT_EQ(j.size(), 20u);
  for (auto& [file, info] : j.items()) {
    SCOPED_TRACE(file);
    const Expected& e = expected_for(file);
    auto f = gguf::File::open(testing::shared_path("fixtures/models/" + file).string());
    ModelCard c = summarize(*f);
    EXPECT_EQ(c.architecture, e.arch);
    EXPECT_FALSE(c.vocab_only);
    EXPECT_EQ(c.n_embd, e.n_embd);
    EXPECT_EQ(c.n_layer, e.n_layer);
    EXPECT_EQ(c.n_head, e.n_head);
    EXPECT_EQ(c.n_head_kv, e.n_head_kv);
    EXPECT_EQ(c.head_dim, e.head_dim);
    EXPECT_EQ(c.n_rot, e.head_dim);
    EXPECT_EQ(c.n_ff, e.n_ff);
    EXPECT_EQ(c.vocab_size, e.vocab);
    EXPECT_EQ(c.tokenizer_model, e.tokenizer);
    EXPECT_EQ(c.rope_type, e.rope);
    EXPECT_EQ(c.rope_freq_base, e.rope_base);
    EXPECT_EQ(c.rope_scaling, "none");
    EXPECT_EQ(c.norm, "rms");
    EXPECT_EQ(c.norm_eps, e.eps);
    EXPECT_EQ(c.tied_output, e.tied);
    EXPECT_EQ(c.chat_family, "none");
    EXPECT_EQ(c.file_size,
              std::filesystem::file_size(testing::shared_path("fixtures/models/" + file)));
    EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();

    // Tensor histogram, parameter count and bytes from tensor_types.json (llama.cpp's reading).
    std::map<std::string, int64_t> counts;
    for (const auto& u : c.type_histogram) counts[gguf::type_name(u.type)] = u.count;
    std::map<std::string, int64_t> want_counts;
    for (auto& [t, n] : info["type_counts"].items()) {
      auto tt = gguf::type_from_name(t);
      ASSERT_TRUE(tt.has_value()) << t;
      want_counts[gguf::type_name(*tt)] = n.get<int64_t>();
    }
    EXPECT_EQ(counts, want_counts);
    int64_t params = 0;
    uint64_t bytes = 0;
    for (auto& [name, t] : info["tensors"].items()) {
      int64_t n = 1;
      for (auto d : t["ggml_ne"]) n *= d.get<int64_t>();
      params += n;
      bytes += t["n_bytes"].get<uint64_t>();
    }
    EXPECT_EQ(c.n_params, params);
    EXPECT_EQ(c.tensor_bytes, bytes);
    EXPECT_EQ(c.n_tensors, info["n_tensors"].get<int64_t>());
    if (info["general.file_type"].is_null())
      EXPECT_FALSE(c.file_type.has_value());
    else
      EXPECT_EQ(c.file_type, info["general.file_type"].get<int64_t>());
  }
}

TEST(ModelCardFixtures, SpecialTokensOfTheRealVocabularies) {
  REQUIRE_SHARED(stories, "fixtures/models/stories260K.gguf");
  ModelCard s = summarize(*gguf::File::open(stories.string()));
  ASSERT_EQ(s.special_tokens.size(), 3u);  // pad is 0xFFFFFFFF ("none")
  EXPECT_EQ(s.special_tokens[0].role, "bos");
  EXPECT_EQ(s.special_tokens[0].id, 1);
  EXPECT_EQ(s.special_tokens[0].text, "<s>");
  EXPECT_EQ(s.special_tokens[1].text, "</s>");
  EXPECT_EQ(s.special_tokens[2].role, "unk");
  EXPECT_EQ(s.special_tokens[2].text, "<unk>");
  EXPECT_FALSE(s.file_type.has_value());

  REQUIRE_SHARED(qwen, "fixtures/models/tiny-qwen2.gguf");
  ModelCard q = summarize(*gguf::File::open(qwen.string()));
  EXPECT_EQ(q.tokenizer_pre, "qwen2");
  EXPECT_EQ(q.add_bos, false);
  EXPECT_EQ(q.n_merges, 151387);
  std::map<std::string, std::pair<int64_t, std::string>> got;
  for (const auto& t : q.special_tokens) got[t.role] = {t.id, t.text};
  EXPECT_EQ(got["bos"], std::make_pair(int64_t(151643), std::string("<|endoftext|>")));
  EXPECT_EQ(got["eos"], std::make_pair(int64_t(151643), std::string("<|endoftext|>")));
  EXPECT_EQ(got["pad"], std::make_pair(int64_t(151643), std::string("<|endoftext|>")));
  EXPECT_EQ(got["eot"], std::make_pair(int64_t(151645), std::string("<|im_end|>")));
}

TEST(ModelCardFixtures, VocabOnlyFiles) {
  REQUIRE_SHARED(bert, "fixtures/vocab/ggml-vocab-bert-bge.gguf");
  ModelCard b = summarize(*gguf::File::open(bert.string()));
  EXPECT_TRUE(b.vocab_only);
  EXPECT_EQ(b.n_tensors, 0);
  EXPECT_EQ(b.n_params, 0);
  EXPECT_FALSE(b.tied_output.has_value());
  EXPECT_EQ(b.architecture, "bert");
  EXPECT_EQ(b.n_embd, 384);
  EXPECT_EQ(b.n_layer, 12);
  EXPECT_EQ(b.norm, "layer");
  EXPECT_EQ(b.norm_eps, 1e-12);
  EXPECT_EQ(b.tokenizer_model, "bert");
  EXPECT_EQ(b.vocab_size, 30522);
  std::map<std::string, int64_t> ids;
  for (const auto& t : b.special_tokens) ids[t.role] = t.id;
  // BERT: metadata gives unk 100, sep 102, pad 0, cls 101, mask 103; bos defaults to [CLS] 101.
  EXPECT_EQ(
      ids, (std::map<std::string, int64_t>{
               {"bos", 101}, {"unk", 100}, {"sep", 102}, {"pad", 0}, {"mask", 103}, {"cls", 101}}));

  REQUIRE_SHARED(gpt2, "fixtures/vocab/ggml-vocab-gpt-2.gguf");
  ModelCard g = summarize(*gguf::File::open(gpt2.string()));
  EXPECT_TRUE(g.vocab_only);
  EXPECT_EQ(g.rope_type, "none");
  EXPECT_EQ(g.vocab_size, 50257);
  EXPECT_EQ(g.n_merges, 50000);

  REQUIRE_SHARED(spm, "fixtures/vocab/ggml-vocab-llama-spm.gguf");
  ModelCard l = summarize(*gguf::File::open(spm.string()));
  EXPECT_EQ(l.n_head_kv, 32);
  EXPECT_EQ(l.head_dim, 128);
  EXPECT_EQ(l.vocab_size, 32000);
  EXPECT_EQ(l.add_bos, true);
  EXPECT_EQ(l.add_eos, false);
}

}  // namespace
}  // namespace ragform::model
