// Hostile GGUF images that reached the model card through the fuzz target's invariants
// (fuzz/fuzz_gguf.cpp): each must give a clean ragform::Error or a correct card, never a wrapped
// size or an escaping exception. Images are built byte by byte (layout: engine/gguf/gguf.h).
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model_card.h"
#include "support/gguf_image.h"

namespace ragform::model {
namespace {

using ragform::testing::GgufBytes;

std::unique_ptr<gguf::File> parse(const std::string& bytes) {
  return ragform::testing::parse_gguf(bytes, "bad.gguf");
}

// An F32 tensor of 2^31 x 2^31 elements has 2^64 bytes: the byte size used to wrap to 0, so the
// tensor passed the bounds check with a 4.6e18-element shape and no data.
TEST(ModelCardBadInput, TensorByteSizeOverflowIsRejected) {
  GgufBytes g = GgufBytes::header(1, 0);
  g.tensor_info("t", {uint64_t(1) << 31, uint64_t(1) << 31}, /*F32*/ 0, /*offset*/ 0);
  std::string& s = g.b;
  s.append((32 - s.size() % 32) % 32 + 32, '\0');
  try {
    parse(s);
    FAIL() << "a tensor whose byte size overflows was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 't': byte size of 4611686018427387904 f32 "
                                         "elements overflows"),
              std::string::npos)
        << e.what();
  }
}

// A u64 metadata value above INT64_MAX is legal GGUF: displaying it must not throw, and the card
// must name the key when it cannot use the value.
TEST(ModelCardBadInput, HugeU64ValuesDisplayAndAreNamed) {
  GgufBytes g = GgufBytes::header(0, 3);
  g.key("general.architecture", 8).str("llama");
  g.key("tokenizer.ggml.model", 8).str("llama");
  g.key("llama.block_count", 10).pod<uint64_t>(~uint64_t(0));  // u64
  const std::string& s = g.b;
  auto f = parse(s);
  EXPECT_EQ(f->find("llama.block_count")->to_display(), "18446744073709551615");
  try {
    summarize(*f);
    FAIL() << "an unusable block count was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'llama.block_count' is too large"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ragform::model
