// base64_encode (base/base64.h) against RFC 4648's test vectors (section 10) and every byte value.
#include <gtest/gtest.h>

#include "base/base64.h"

namespace {

TEST(Base64, Rfc4648TestVectors) {
  using ragform::base64_encode;
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

// High bytes are unsigned: 0xff 0xfe 0x80 is "//6A"; a float32 1.0f (00 00 80 3f little-endian)
// is "AACAPw==", as Python's base64.b64encode(struct.pack('<f', 1.0)) gives.
TEST(Base64, HighBytesAndAFloat) {
  using ragform::base64_encode;
  EXPECT_EQ(base64_encode(std::string("\xff\xfe\x80", 3)), "//6A");
  EXPECT_EQ(base64_encode(std::string("\x00\x00\x80\x3f", 4)), "AACAPw==");
}

}  // namespace
