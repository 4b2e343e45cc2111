// Hand-built GGUF images: every value type, nesting, alignment, and each kind of bad input.
#include <cstring>

#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "support/gguf_image.h"

namespace ragform::gguf {
namespace {

using ragform::testing::GgufBytes;
using ragform::testing::parse_gguf;

std::string error_of(const std::string& s) {
  try {
    parse_gguf(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Gguf, AllValueTypesRoundTrip) {
  Writer w;
  w.set("a.u8", Value{ValueType::U8, uint64_t(200)});
  w.set("a.i8", Value{ValueType::I8, int64_t(-5)});
  w.set("a.u16", Value{ValueType::U16, uint64_t(65535)});
  w.set("a.i16", Value{ValueType::I16, int64_t(-300)});
  w.set("a.u32", Value::u32(4000000000u));
  w.set("a.i32", Value::i32(-7));
  w.set("a.f32", Value::f32(0.25f));
  w.set("a.bool", Value::boolean(true));
  w.set("a.str", Value::str("héllo"));
  w.set("a.u64", Value::u64(1ull << 60));
  w.set("a.i64", Value{ValueType::I64, int64_t(-(1ll << 50))});
  w.set("a.f64", Value{ValueType::F64, 1e-300});
  w.set("a.nested",
        Value::array(ValueType::ARRAY, {Value::str_array({"x", "y"}), Value::str_array({})}));
  float data[64];
  for (int i = 0; i < 64; ++i) data[i] = float(i);
  w.add_tensor("t", {16, 4}, TensorType::F32, data, sizeof data);
  std::string bytes = w.to_bytes();
  auto f = parse_gguf(bytes);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_int("a.u8"), 200);
  EXPECT_EQ(f->get_int("a.i8"), -5);
  EXPECT_EQ(f->get_int("a.u16"), 65535);
  EXPECT_EQ(f->get_int("a.i16"), -300);
  EXPECT_EQ(f->get_int("a.u32"), 4000000000ll);
  EXPECT_EQ(f->get_int("a.i32"), -7);
  EXPECT_EQ(f->get_float("a.f32", 0), 0.25);
  EXPECT_TRUE(f->get_bool("a.bool", false));
  EXPECT_EQ(f->get_string("a.str"), "héllo");
  EXPECT_EQ(f->get_int("a.u64"), 1ll << 60);
  EXPECT_EQ(f->get_int("a.i64"), -(1ll << 50));
  EXPECT_EQ(f->get_float("a.f64", 0), 1e-300);
  const Array& outer = f->get("a.nested").as_array();
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_EQ(outer.array_at(0).string_at(1), "y");
  EXPECT_EQ(outer.at(0).as_array().at(1).as_string(), "y");
  EXPECT_TRUE(outer.array_at(1).empty());
  EXPECT_EQ(f->data_offset() % 32, 0u);
  const TensorInfo& t = f->tensor("t");
  EXPECT_EQ(t.rows(), 4);
  EXPECT_EQ(0, std::memcmp(t.data, data, sizeof data));
  EXPECT_EQ(Writer::copy_of(*f).to_bytes(), bytes);
}

TEST(Gguf, CustomAlignmentIsHonoured) {
  Writer w;
  w.set("general.alignment", Value::u32(64));
  float a[32] = {}, b[32] = {};
  w.add_tensor("a", {8}, TensorType::F32, a, 32);
  w.add_tensor("b", {8}, TensorType::F32, b, 32);
  std::string bytes = w.to_bytes();
  auto f = parse_gguf(bytes);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  EXPECT_EQ(f->tensor("b").offset, 64u);
}

TEST(Gguf, BadInputIsAClearError) {
  EXPECT_NE(error_of("").find("magic"), std::string::npos);
  EXPECT_NE(error_of("GGML\x03\0\0\0").find("not a GGUF file"), std::string::npos);
  GgufBytes v1 = GgufBytes::header(0, 0, /*version=*/1);
  EXPECT_NE(error_of(v1.b).find("unsupported GGUF version 1"), std::string::npos);

  // An array that claims 10^12 elements fails before allocating.
  GgufBytes big = GgufBytes::header(0, 1);
  big.key("tokenizer.ggml.tokens", 9).pod<uint32_t>(8).pod<uint64_t>(1000000000000ull);
  std::string e = error_of(big.b);
  EXPECT_NE(e.find("'tokenizer.ggml.tokens'"), std::string::npos) << e;
  EXPECT_NE(e.find("claims 1000000000000 elements"), std::string::npos) << e;

  // Duplicate keys.
  GgufBytes dup = GgufBytes::header(0, 2);
  dup.key("k", 4).pod<uint32_t>(1).key("k", 4).pod<uint32_t>(2);
  EXPECT_NE(error_of(dup.b).find("'k': duplicate key"), std::string::npos);

  // A string whose length runs past the end.
  GgufBytes s = GgufBytes::header(0, 1);
  s.key("k", 8).pod<uint64_t>(999);
  EXPECT_NE(error_of(s.b).find("'k': needs 999 bytes"), std::string::npos);

  // Unknown value type, unknown tensor type, data past the end of the file.
  GgufBytes vt = GgufBytes::header(0, 1);
  vt.key("k", 77);
  EXPECT_NE(error_of(vt.b).find("unknown value type 77"), std::string::npos);

  GgufBytes tt = GgufBytes::header(1, 0);
  tt.tensor_info("w", {32}, 99, 0);
  EXPECT_NE(error_of(tt.b).find("tensor 'w': unsupported tensor type id 99"), std::string::npos);

  GgufBytes past = GgufBytes::header(1, 0);
  past.tensor_info("w", {32}, 0, 0);
  past.b.resize(64, '\0');  // data section starts at 64 but holds no bytes for 32 floats
  e = error_of(past.b);
  EXPECT_NE(e.find("tensor 'w': data at offset 64 + 128 bytes exceeds the file size 64"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace ragform::gguf
