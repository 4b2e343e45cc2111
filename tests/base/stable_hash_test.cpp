// base/stable_hash.h against published test vectors: FNV-1a 64 from the FNV specification
// (draft-eastlake-fnv, test vectors of the reference code), SplitMix64's first output for state 0
// from Steele, Lea and Flood's generator (as in Vigna's splitmix64.c).
#include "base/stable_hash.h"

#include <gtest/gtest.h>

#include <string>

namespace ragform {

TEST(StableHash, Fnv1a64MatchesTheSpecVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);  // the offset basis
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  // One byte by hand: (basis XOR 'a') * prime mod 2^64.
  EXPECT_EQ(fnv1a64("a"), (0xcbf29ce484222325ull ^ 0x61ull) * 1099511628211ull);
}

TEST(StableHash, Fnv1a64ContinuesAcrossPieces) {
  EXPECT_EQ(fnv1a64("bar", fnv1a64("foo")), fnv1a64("foobar"));
  EXPECT_EQ(fnv1a64(std::string("a\0b", 3)),
            fnv1a64("b", fnv1a64(std::string("\0", 1), fnv1a64("a"))));
  EXPECT_NE(fnv1a64(std::string("a\0b", 3)), fnv1a64("ab"));  // bytes after a NUL count
}

TEST(StableHash, SplitMixAndDerivedSeeds) {
  EXPECT_EQ(splitmix64_mix(0), 0xe220a8397b1dcdafull);  // SplitMix64(state 0), first output
  EXPECT_EQ(derive_seed(0, ""), splitmix64_mix(0xcbf29ce484222325ull));
  EXPECT_EQ(derive_seed(7, "q1"), splitmix64_mix(7 ^ fnv1a64("q1")));
  EXPECT_NE(derive_seed(0, "q1"), derive_seed(1, "q1"));
  EXPECT_NE(derive_seed(0, "q1"), derive_seed(0, "q2"));
  static_assert(fnv1a64("a") == 0xaf63dc4c8601ec8cull, "usable at compile time");
}

}  // namespace ragform
