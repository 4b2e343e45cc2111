// The GGUF reader on every fixture file, checked against tensor_types.json (written by the
// fixtures' producer from llama.cpp's own reading of the files), and write -> read round trips.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "support/test_support.h"

namespace ragform::gguf {
namespace fs = std::filesystem;

TEST(GgufFixtures, EveryModelMatchesTensorTypesJson) {
  REQUIRE_SHARED(types_path, "fixtures/models/tensor_types.json");
  auto j = nlohmann::json::parse(testing::read_file(types_path));
  ASSERT_GE(j.size(), 20u);
  for (auto& [file, info] : j.items()) {
    SCOPED_TRACE(file);
    auto f = File::open(testing::shared_path("fixtures/models/" + file).string());
    EXPECT_EQ(f->architecture(), info["general.architecture"].get<std::string>());
    if (info["general.file_type"].is_null())
      EXPECT_FALSE(f->has("general.file_type"));
    else
      EXPECT_EQ(f->get_int("general.file_type"), info["general.file_type"].get<int64_t>());
    ASSERT_EQ(f->tensors().size(), info["n_tensors"].get<size_t>());
    for (auto& [name, t] : info["tensors"].items()) {
      const TensorInfo& ti = f->tensor(name);
      EXPECT_EQ(type_from_name(t["type"].get<std::string>()), ti.type) << name;
      EXPECT_EQ(ti.ne, t["ggml_ne"].get<std::vector<int64_t>>()) << name;
      EXPECT_EQ(ti.n_bytes, t["n_bytes"].get<uint64_t>()) << name;
    }
  }
}

TEST(GgufFixtures, VocabOnlyFilesHaveTokenizerMetadata) {
  for (const char* name :
       {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-bert-bge.gguf"}) {
    SCOPED_TRACE(name);
    auto f = File::open(testing::shared_path(std::string("fixtures/vocab/") + name).string());
    EXPECT_EQ(f->tensors().size(), 0u);
    EXPECT_GT(f->get_strings("tokenizer.ggml.tokens").size(), 1000u);
    EXPECT_FALSE(f->get_string("tokenizer.ggml.model").empty());
  }
}

TEST(GgufFixtures, WriteReadRoundTripIsIdentical) {
  fs::path dir = testing::temp_dir("gguf-rt");
  for (const char* name : {"models/stories260K.gguf", "models/tinyq-q4_k_m.gguf",
                           "models/tiny-qwen2.gguf", "vocab/ggml-vocab-gpt-2.gguf"}) {
    SCOPED_TRACE(name);
    auto a = File::open(testing::shared_path(std::string("fixtures/") + name).string());
    std::string out = (dir / "copy.gguf").string();
    Writer::copy_of(*a).write(out);
    auto b = File::open(out);
    ASSERT_EQ(a->metadata().size(), b->metadata().size());
    for (size_t i = 0; i < a->metadata().size(); ++i) {
      EXPECT_EQ(a->metadata()[i].first, b->metadata()[i].first);
      EXPECT_EQ(a->metadata()[i].second.type, b->metadata()[i].second.type);
      EXPECT_EQ(a->metadata()[i].second.to_display(1000000),
                b->metadata()[i].second.to_display(1000000));
    }
    ASSERT_EQ(a->tensors().size(), b->tensors().size());
    for (size_t i = 0; i < a->tensors().size(); ++i) {
      const auto &ta = a->tensors()[i], &tb = b->tensors()[i];
      EXPECT_EQ(ta.name, tb.name);
      EXPECT_EQ(ta.ne, tb.ne);
      EXPECT_EQ(ta.type, tb.type);
      ASSERT_EQ(ta.n_bytes, tb.n_bytes);
      EXPECT_EQ(0, std::memcmp(ta.data, tb.data, ta.n_bytes)) << ta.name;
    }
    // Writing the copy again gives the same bytes (the writer is deterministic).
    EXPECT_EQ(Writer::copy_of(*b).to_bytes(), testing::read_file(out));
  }
}

// Truncating a real file at every byte of its header and tensor table, and at each tensor's start
// and end +-1, must give a clean error (never a crash; ASan checks the reads).
TEST(GgufFixtures, TruncationAtEveryHeaderByteIsACleanError) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  std::string bytes = testing::read_file(path);
  auto full = File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "full");
  std::vector<size_t> cuts;
  for (size_t i = 0; i < full->data_offset(); ++i) cuts.push_back(i);
  for (auto& t : full->tensors()) {
    size_t s = full->data_offset() + t.offset, e = s + t.n_bytes;
    for (size_t c : {s - 1, s, s + 1, e - 1}) cuts.push_back(c);
  }
  size_t errors = 0;
  for (size_t cut : cuts) {
    std::vector<uint8_t> img(bytes.begin(),
                             bytes.begin() + long(cut));  // exact-size heap copy for ASan
    try {
      File::parse(img.data(), img.size(), "cut");
      ADD_FAILURE() << "truncation at " << cut << " was accepted";
    } catch (const Error& e) {
      ++errors;
      EXPECT_NE(std::string(e.what()).find("gguf: cut: "), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(errors, cuts.size());
}

}  // namespace ragform::gguf
