// Stable hashes: the same value on every machine, compiler, standard library and run, for
// anything that seeds randomness or splits work (std::hash promises none of that: libstdc++ and
// libc++ differ, and it may change between releases).
//
// fnv1a64 is FNV-1a with 64-bit parameters (Fowler, Noll, Vo; IETF draft
// draft-eastlake-fnv, "The FNV Non-Cryptographic Hash Algorithm"):
//   h = offset basis 14695981039346656037 (0xcbf29ce484222325)
//   for each byte b of the input: h = (h XOR b) * prime 1099511628211 (0x100000001b3) mod 2^64
// It is not a cryptographic hash; it only has to spread nearby inputs apart and never change.
//
// derive_seed mixes a base seed with the bytes of a key into an independent 64-bit seed:
//   splitmix64(seed XOR fnv1a64(key)), splitmix64 being the finaliser of Steele, Lea and Flood's
// SplitMix64 generator (add 0x9e3779b97f4a7c15, then two xor-shift-multiply rounds), so seeds of
// adjacent keys (or adjacent base seeds) share no visible bits.
#pragma once
#include <cstdint>
#include <string_view>

namespace ragform {

constexpr uint64_t kFnv64OffsetBasis = 14695981039346656037ull;
constexpr uint64_t kFnv64Prime = 1099511628211ull;

// FNV-1a 64 of `bytes`, continuing from `h` (pass a previous result to hash a concatenation).
constexpr uint64_t fnv1a64(std::string_view bytes, uint64_t h = kFnv64OffsetBasis) {
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= kFnv64Prime;
  }
  return h;
}

// SplitMix64's output function applied to x.
constexpr uint64_t splitmix64_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A seed for one item of a seeded run: splitmix64_mix(seed XOR fnv1a64(key)).
constexpr uint64_t derive_seed(uint64_t seed, std::string_view key) {
  return splitmix64_mix(seed ^ fnv1a64(key));
}

}  // namespace ragform
