// --shard i/n: a deterministic split of a batch command's instances over n workers.
//
// Instance `id` belongs to shard (fnv1a64(id) mod n); worker i of n (0 <= i < n) keeps exactly the
// instances of its shard. FNV-1a 64 over the id's UTF-8 bytes (offset basis 14695981039346656037,
// prime 1099511628211) depends on nothing but the id, so every worker, on any machine, in any
// order of the input, computes the same split; the n shards are disjoint and cover every instance.
// Merge the workers' run stores afterwards with `ragform merge` (docs/scale.md).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/stable_hash.h"
#include "cli/args.h"

namespace ragform::cli {

using ::ragform::fnv1a64;  // the split's hash (base/stable_hash.h)

struct Shard {
  int index = 0;  // i
  int count = 1;  // n (1 = no sharding)
  bool keeps(std::string_view instance_id) const {
    return count <= 1 || fnv1a64(instance_id) % uint64_t(count) == uint64_t(index);
  }
  std::string describe() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// Parses "i/n" (0 <= i < n); UsageError otherwise. (Header-only so libraries and tests can use
// it; the cli folder is compiled into the executable.)
inline Shard parse_shard(const std::string& text) {
  auto fail = [&] {
    throw UsageError("--shard", "'" + text + "' is not i/n with 0 <= i < n (e.g. 0/4)");
  };
  size_t slash = text.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) fail();
  auto num = [&](const std::string& s) {
    if (s.size() > 6) fail();
    for (char c : s)
      if (c < '0' || c > '9') fail();
    return std::stoi(s);
  };
  Shard s;
  s.index = num(text.substr(0, slash));
  s.count = num(text.substr(slash + 1));
  if (s.count < 1 || s.index >= s.count) fail();
  return s;
}

// Declares --shard on a command: `ShardFlag sf(a); ... if (!sf.shard().keeps(id)) continue;`
struct ShardFlag {
  explicit ShardFlag(Args& a);
  Opt<std::string>& text;
  Shard shard() const { return parse_shard(text.value); }
};

}  // namespace ragform::cli
