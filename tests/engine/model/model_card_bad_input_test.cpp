// Hostile GGUF images that reached the model card through the fuzz target's invariants
// (fuzz/fuzz_gguf.cpp): each must give a clean ragform::Error or a correct card, never a wrapped
// size or an escaping exception. Images are built byte by byte (layout: engine/gguf/gguf.h).
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/model/model_card.h"

namespace ragform::model {
namespace {

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_str(std::string& s, const std::string& x) {
  put<uint64_t>(s, x.size());
  s += x;
}
std::string header(uint64_t n_tensors, uint64_t n_kv) {
  std::string s = "GGUF";
  put<uint32_t>(s, 3);
  put<uint64_t>(s, n_tensors);
  put<uint64_t>(s, n_kv);
  return s;
}
std::unique_ptr<gguf::File> parse(const std::string& bytes) {
  return gguf::File::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                           "bad.gguf");
}

// An F32 tensor of 2^31 x 2^31 elements has 2^64 bytes: the byte size used to wrap to 0, so the
// tensor passed the bounds check with a 4.6e18-element shape and no data.
TEST(ModelCardBadInput, TensorByteSizeOverflowIsRejected) {
  std::string s = header(1, 0);
  put_str(s, "t");
  put<uint32_t>(s, 2);
  put<uint64_t>(s, uint64_t(1) << 31);
  put<uint64_t>(s, uint64_t(1) << 31);
  put<uint32_t>(s, 0);  // F32
  put<uint64_t>(s, 0);  // offset
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
  std::string s = header(0, 3);
  put_str(s, "general.architecture");
  put<uint32_t>(s, 8);
  put_str(s, "llama");
  put_str(s, "tokenizer.ggml.model");
  put<uint32_t>(s, 8);
  put_str(s, "llama");
  put_str(s, "llama.block_count");
  put<uint32_t>(s, 10);  // u64
  put<uint64_t>(s, ~uint64_t(0));
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
