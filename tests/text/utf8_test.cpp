#include "text/utf8.h"

#include <gtest/gtest.h>

namespace ragform::text {

TEST(Utf8, ValidatesAndLocatesFirstBadByte) {
  size_t off = 99;
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("ab\xC3", &off));  // truncated
  EXPECT_EQ(off, 2u);
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // > U+10FFFF
}

TEST(Utf8, RepairReplacesMaximalSubparts) {
  // Unicode's own example (Table 3-8): 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64
  std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(repair_utf8(in), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_TRUE(is_valid_utf8(repair_utf8("\xFF\xFE broken \xE2\x82")));
}

TEST(Utf8, DecodeEncodeRoundTrip) {
  std::string s = "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
  auto cps = decode_utf8(s);
  ASSERT_EQ(cps.size(), 4u);
  EXPECT_EQ(cps[1], 0xE9u);
  EXPECT_EQ(cps[2], 0x20ACu);
  EXPECT_EQ(cps[3], 0x1F600u);
  EXPECT_EQ(encode_utf8(cps), s);
}

TEST(Utf8, DescribesTheBadByteOrAUtf16Or32File) {
  EXPECT_EQ(describe_invalid_utf8("caf\xC3\x28", 3),
            "invalid UTF-8 at byte offset 3 of the line (byte 0xC3)");
  EXPECT_NE(describe_invalid_utf8(std::string("\xFE\xFF\0{", 4), 0)
                .find("UTF-16 text (byte-order "
                      "mark FE FF)"),
            std::string::npos);
  EXPECT_NE(describe_invalid_utf8(std::string("\xFF\xFE\0\0{\0\0\0", 8), 0).find("UTF-32"),
            std::string::npos);
  // A 0xFF later in the line is only a bad byte.
  EXPECT_EQ(describe_invalid_utf8("a\xFF\xFE", 1),
            "invalid UTF-8 at byte offset 1 of the line (byte 0xFF)");
}

}  // namespace ragform::text
