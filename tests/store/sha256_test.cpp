// SHA-256 against the FIPS 180-2 test vectors (appendix B) and the streaming/file paths.
#include "store/sha256.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "support/test_support.h"

namespace ragform::store {

TEST(Sha256, Fips180_2Vectors) {
  // FIPS 180-2 appendix B.1 (one block), B.2 (two blocks), B.3 (one million 'a').
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // The empty message (FIPS 180-4 examples, also NIST CAVS SHA256ShortMsg Len = 0).
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, PaddingBoundaries) {
  // Messages of 55, 56 and 64 bytes put the length field in the first or in a second block.
  // Values computed with coreutils sha256sum.
  EXPECT_EQ(sha256_hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sha256_hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sha256_hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(Sha256, StreamingEqualsOneShotAtEverySplit) {
  std::string msg;
  for (int i = 0; i < 300; ++i) msg += char('A' + i * 7 % 26);
  const std::string whole = sha256_hex(msg);
  Sha256 h;
  for (size_t split = 0; split <= msg.size(); ++split) {
    h.update(msg.substr(0, split));
    h.update(std::string_view(msg).substr(split, 13));
    h.update(std::string_view(msg).substr(std::min(msg.size(), split + 13)));
    ASSERT_EQ(to_hex(h.finish()), whole) << "split at " << split;  // finish() resets
  }
}

TEST(Sha256, FileHashAndErrors) {
  auto dir = testing::temp_dir("sha256");
  testing::write_file(dir / "abc.bin", "abc");
  EXPECT_EQ(sha256_file(dir / "abc.bin"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Larger than the 1 MiB read buffer.
  testing::write_file(dir / "big.bin", std::string(1000000, 'a') + std::string(1200000, 'a'));
  EXPECT_EQ(sha256_file(dir / "big.bin"), sha256_hex(std::string(2200000, 'a')));
  try {
    sha256_file(dir / "missing.gguf");
    FAIL() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.gguf: No such file or directory"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(sha256_file(dir), Error);
}

}  // namespace ragform::store
