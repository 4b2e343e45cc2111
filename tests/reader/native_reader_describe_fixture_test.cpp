// The reader description is part of a run's identity in the run store (store/run_store.h): a
// model with F16/BF16 matrices records the F16 product path in it, so runs with exact and with
// approximate int16 products never merge as one run; other models' descriptions do not change.
#include <gtest/gtest.h>

#include "reader/native_reader.h"
#include "support/test_support.h"

namespace ragform::reader {
namespace {

TEST(NativeReaderDescribeFixture, RecordsTheF16PathForHalfPrecisionModels) {
  REQUIRE_SHARED(f16, "fixtures/models/tinyq-f16.gguf");
  REQUIRE_SHARED(bf16, "fixtures/models/tinyq-bf16.gguf");
  REQUIRE_SHARED(q8, "fixtures/models/tinyq-q8_0.gguf");
  NativeOptions o;
  o.n_ctx = 64;
  o.engine.threads = 1;
  EXPECT_EQ(NativeReader(f16.string(), o).describe(), "native:tinyq-f16.gguf#f16-gemm=exact");
  EXPECT_EQ(NativeReader(bf16.string(), o).describe(), "native:tinyq-bf16.gguf#f16-gemm=exact");
  EXPECT_EQ(NativeReader(q8.string(), o).describe(), "native:tinyq-q8_0.gguf");
  o.engine.f16_gemm = ops::F16Gemm::int16;
  EXPECT_EQ(NativeReader(f16.string(), o).describe(), "native:tinyq-f16.gguf#f16-gemm=int16");
  EXPECT_EQ(NativeReader(q8.string(), o).describe(), "native:tinyq-q8_0.gguf");
}

// Pass 24: runs under another system message, KV cache type or cut never resume one another (a
// run with --system "Answer with one word." resumed one with "Answer only in French."); the
// defaults leave the description as it was.
TEST(NativeReaderDescribeFixture, RecordsTheSettingsThatChangeTheNumbers) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  NativeOptions o;
  o.n_ctx = 64;
  o.engine.threads = 1;
  const std::string base = "native:stories260K.gguf";
  EXPECT_EQ(NativeReader(model.string(), o).describe(), base);
  NativeOptions kv = o;
  kv.kv_f16 = true;
  EXPECT_EQ(NativeReader(model.string(), kv).describe(), base + "#kv=f16");
  NativeOptions cut = o;
  cut.overflow = Overflow::TruncateLeft;
  EXPECT_EQ(NativeReader(model.string(), cut).describe(), base + "#truncate=left@64");
  NativeOptions chat = o;
  chat.chat = true;
  chat.chat_template = "chatml";
  EXPECT_EQ(NativeReader(model.string(), chat).describe(), base);  // chat_mode() tells chatml
  chat.system_prompt = "Answer only in French.";
  const std::string french = NativeReader(model.string(), chat).describe();
  chat.system_prompt = "Answer with one word.";
  const std::string word = NativeReader(model.string(), chat).describe();
  EXPECT_EQ(french.rfind(base + "#system=", 0), 0u) << french;
  EXPECT_NE(french, word);
}

}  // namespace
}  // namespace ragform::reader
