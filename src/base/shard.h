// A deterministic split of a batch's instances over n workers, "i/n" (cli/shard.h: --shard).
// Instance `id` belongs to shard fnv1a64(id) mod n (base/stable_hash.h).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"
#include "base/stable_hash.h"

namespace ragform {

struct Shard {
  int index = 0;  // i
  int count = 1;  // n (1 = no sharding)
  bool keeps(std::string_view instance_id) const {
    return count <= 1 || fnv1a64(instance_id) % uint64_t(count) == uint64_t(index);
  }
  std::string describe() const { return std::to_string(index) + "/" + std::to_string(count); }
};

// Parses "i/n" (0 <= i < n); UsageError naming `where` (the option's spelling) otherwise.
inline Shard parse_shard(const std::string& text, const std::string& where = "--shard") {
  auto fail = [&] {
    throw UsageError(where, "'" + text + "' is not i/n with 0 <= i < n (e.g. 0/4)");
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

}  // namespace ragform
