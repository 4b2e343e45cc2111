// Synthetic key-value extraction data (cnorm-surface-formatting.txt, section 2 and Appendix B):
// a JSON object of random identifier pairs, one of them the gold pair whose key is asked for.
// Written in lost-in-the-middle's KV shape ({"ordered_kv_records": [[k, v], ...], "key",
// "value"}), so every reader of their files (eval/datasets.h, `cnorm eval --task kv`) reads it.
//
// Identifier formats (Appendix B; one seed gives the same hex digits in every format, so the
// formats differ only in surface form, as the paper requires):
//   uuid      32 random hex digits written as a version-4 UUID, 8-4-4-4-12 ("-" separated; the
//             version nibble is 4 and the variant nibble one of 8 9 a b, as RFC 9562 section 5.4)
//   plain     the same 32 digits without delimiters (the paper's "Plain Text")
//   modified  the UUID with every '-' replaced by a delimiter (default "&": "Modified UUID")
// Densities (section 2): low = 40 pairs of 32-digit identifiers; high = 10 pairs of 128-digit
// identifiers. The paper does not say how a 128-character identifier is grouped; here it is four
// 32-digit UUIDs joined by the same delimiter (so uuid has 16 '-' groups, plain 128 digits).
// Every sample is written once per gold position 0..n-1 (positions = All) with the same pairs
// in the same order except for the gold pair, which moves; ids are
// "kv-<density>-<format>-<s>-g<j>".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ragform::cnorm {

enum class KvFormat { Uuid, Plain, Modified };
KvFormat parse_kv_format(const std::string& name);  // "uuid", "plain", "modified"; UsageError
const char* kv_format_name(KvFormat f);

struct KvSpec {
  KvFormat format = KvFormat::Uuid;
  std::string delimiter = "&";  // modified only
  size_t pairs = 40;            // low density; high: 10
  size_t groups = 1;            // 32-digit groups per identifier (low: 1, high: 4)
  size_t samples = 10;
  bool all_positions = true;  // false: one row per sample, gold at a seeded position
  uint64_t seed = 0;
  std::string density_name = "low";
};
// "low" -> 40 pairs x 1 group, "high" -> 10 pairs x 4 groups; UsageError otherwise.
void apply_density(KvSpec& s, const std::string& density);

// One identifier of `groups` x 32 hex digits drawn from rng state `state` (splitmix64 stream),
// in UUID layout with '-'.
std::string random_uuid_id(uint64_t& state, size_t groups);
// An identifier in UUID layout rewritten in `f` ("-" kept, removed, or replaced by delimiter).
std::string to_kv_format(const std::string& uuid_id, KvFormat f, const std::string& delimiter);

// The rows (JSON objects) of the data set, in order: sample-major, gold position minor.
std::vector<nlohmann::json> generate_kv(const KvSpec& spec);

}  // namespace ragform::cnorm
