#include "engine/runtime/prefix_cache.h"

#include <algorithm>

#include "base/memory_limit.h"

namespace ragform::runtime {

size_t PrefixEntry::bytes() const {
  size_t b = tokens.size() * sizeof(int32_t);
  for (const auto& x : k32) b += x.size() * sizeof(float);
  for (const auto& x : v32) b += x.size() * sizeof(float);
  for (const auto& x : k16) b += x.size() * sizeof(uint16_t);
  for (const auto& x : v16) b += x.size() * sizeof(uint16_t);
  return b;
}

namespace {
size_t common_prefix(const std::vector<int32_t>& a, const int32_t* b, size_t n) {
  size_t m = std::min(a.size(), n), i = 0;
  while (i < m && a[i] == b[i]) ++i;
  return i;
}
}  // namespace

nlohmann::json to_json(const PrefixCacheStats& s) {
  return {{"entries", s.entries},     {"bytes", s.bytes},
          {"max_bytes", s.max_bytes}, {"lookups", s.lookups},
          {"hits", s.hits},           {"inserts", s.inserts},
          {"evictions", s.evictions}, {"tokens_reused", s.tokens_reused}};
}

PrefixCache::PrefixCache(size_t max_bytes)
    : max_bytes_(max_bytes ? max_bytes : default_prefix_cache_bytes()) {
  st_.max_bytes = max_bytes_;
}

PrefixMatch PrefixCache::lookup(const void* owner, bool f16, const int32_t* tokens, size_t n,
                                size_t max_len, const std::string& steer) {
  std::lock_guard<std::mutex> lock(mu_);
  ++st_.lookups;
  PrefixMatch best;
  auto best_it = lru_.end();
  const size_t cap = std::min(n, max_len);
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const PrefixEntry& e = **it;
    if (e.owner != owner || e.f16 != f16 || e.steer != steer) continue;
    size_t m = std::min(common_prefix(e.tokens, tokens, n), cap);
    if (int(m) > best.n) {
      best.n = int(m);
      best_it = it;
      if (m == cap) break;  // cannot do better
    }
  }
  if (best_it != lru_.end()) {
    best.entry = *best_it;
    lru_.splice(lru_.begin(), lru_, best_it);
    ++st_.hits;
    st_.tokens_reused += best.n;
  }
  return best;
}

std::list<std::shared_ptr<const PrefixEntry>>::iterator PrefixCache::find_covering(
    const void* owner, bool f16, const int32_t* tokens, size_t n, const std::string& steer) {
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    const PrefixEntry& e = **it;
    if (e.owner == owner && e.f16 == f16 && e.steer == steer &&
        common_prefix(e.tokens, tokens, n) == n) {
      lru_.splice(lru_.begin(), lru_, it);
      return lru_.begin();
    }
  }
  return lru_.end();
}

bool PrefixCache::covers(const void* owner, bool f16, const int32_t* tokens, size_t n,
                         const std::string& steer) {
  std::lock_guard<std::mutex> lock(mu_);
  return find_covering(owner, f16, tokens, n, steer) != lru_.end();
}

void PrefixCache::insert(std::shared_ptr<const PrefixEntry> e) {
  if (!e || e->tokens.empty()) return;
  const size_t b = e->bytes();
  std::lock_guard<std::mutex> lock(mu_);
  // Already covered by a cached entry: that one is refreshed instead.
  if (find_covering(e->owner, e->f16, e->tokens.data(), e->tokens.size(), e->steer) != lru_.end())
    return;
  if (b > max_bytes_) return;
  // Entries that are prefixes of the new one are redundant.
  for (auto it = lru_.begin(); it != lru_.end();) {
    const PrefixEntry& c = **it;
    if (c.owner == e->owner && c.f16 == e->f16 && c.steer == e->steer &&
        common_prefix(e->tokens, c.tokens.data(), c.tokens.size()) == c.tokens.size()) {
      bytes_ -= c.bytes();
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
  evict_to(max_bytes_ - b);
  lru_.push_front(std::move(e));
  bytes_ += b;
  ++st_.inserts;
}

void PrefixCache::evict_to(size_t budget) {
  while (bytes_ > budget && !lru_.empty()) {
    bytes_ -= lru_.back()->bytes();
    lru_.pop_back();
    ++st_.evictions;
  }
}

PrefixCacheStats PrefixCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  PrefixCacheStats s = st_;
  s.entries = lru_.size();
  s.bytes = bytes_;
  return s;
}

size_t default_prefix_cache_bytes() { return default_prefix_cache_bytes(memory_limits()); }

size_t default_prefix_cache_bytes(const MemoryLimits& m) {
  const size_t gib = size_t(1) << 30;
  const size_t limit = m.smallest();
  if (limit == 0) return gib;
  return std::min(limit / 8, 2 * gib);
}

void PrefixCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  st_.evictions += int64_t(lru_.size());
  lru_.clear();
  bytes_ = 0;
}

}  // namespace ragform::runtime
