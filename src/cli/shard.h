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

#include "base/shard.h"
#include "base/stable_hash.h"
#include "cli/args.h"

namespace ragform::cli {

using ::ragform::fnv1a64;  // the split's hash (base/stable_hash.h)
using ::ragform::parse_shard;
using ::ragform::Shard;

// Declares --shard on a command: `ShardFlag sf(a); ... if (!sf.shard().keeps(id)) continue;`
struct ShardFlag {
  explicit ShardFlag(Args& a);
  Opt<std::string>& text;
  Shard shard() const { return parse_shard(text.value); }
};

}  // namespace ragform::cli
