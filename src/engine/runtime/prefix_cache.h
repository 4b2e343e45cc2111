// The prefix cache: the KV rows of prompts already prefilled, keyed by their tokens, so that a new
// sequence whose prompt starts with a cached prefix copies those rows and prefills only the rest
// (the idea of vLLM's automatic prefix caching and SGLang's radix attention).
//
// Why copying rows is exact: the key and value of position p depend only on tokens 0..p (causal
// attention), and a token's numbers do not depend on how it was batched (docs/engine.md "Batch
// invariance"). The rows copied in are therefore the same bits a full prefill would write, and
// every tap of the new tokens (logits, attention rows, hidden states) is unchanged.
//
// Layout of an entry: for each layer, K in the context's tiled key layout (attention.h,
// key_cache_elems(n) elements: whole tiles of kKeyTile positions) and V rows [n][kv_dim], F32 or
// F16 as the context stores them; the tokens 0..n-1 they were computed from.
//
// Lookup: the longest common prefix over all entries (a scan; a study keeps tens to hundreds of
// entries, and comparing token ids costs nothing next to prefilling one token). Callers that
// submit prompts in sorted token order (runtime::generate does) find their best match in the
// entry inserted just before, which also keeps a small cache effective.
//
// Memory: bounded by max_bytes. Inserting past the bound evicts least-recently-used entries; an
// entry that is a prefix of a newly inserted one is dropped (the new one covers it). Entries are
// reference counted (shared_ptr): an entry evicted while a context copies from it lives until the
// copy ends, so the bound can be exceeded by at most the entries being copied at that moment.
//
// Thread-safe: every method takes the cache's mutex (serve's engine thread and Python threads
// may share one cache).
#pragma once
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ragform {
struct MemoryLimits;
}

namespace ragform::runtime {

// One cached prefix: tokens [n] and, per layer, K (tiled) and V ([n][kv_dim]) of positions 0..n-1.
struct PrefixEntry {
  const void* owner = nullptr;  // the model the rows belong to (never compared across models)
  bool f16 = false;
  // Steering::key() of the sequence the rows were computed in ("" = unsteered): rows are reused
  // only under the same steering, whose numbers they are.
  std::string steer;
  std::vector<int32_t> tokens;                  // [n]
  std::vector<std::vector<float>> k32, v32;     // [n_layer][...] when !f16
  std::vector<std::vector<uint16_t>> k16, v16;  // [n_layer][...] when f16
  size_t bytes() const;
};

struct PrefixMatch {
  std::shared_ptr<const PrefixEntry> entry;  // null when nothing matches
  int n = 0;                                 // tokens of the query covered by entry->tokens
};

struct PrefixCacheStats {
  size_t entries = 0;
  size_t bytes = 0;
  size_t max_bytes = 0;
  int64_t lookups = 0, hits = 0, inserts = 0, evictions = 0;
  int64_t tokens_reused = 0;  // summed match lengths handed out
};
// {"entries", "bytes", "max_bytes", "lookups", "hits", "inserts", "evictions", "tokens_reused"}:
// what serve's /health and the Python module report.
nlohmann::json to_json(const PrefixCacheStats& s);

class PrefixCache {
 public:
  // max_bytes 0: default_prefix_cache_bytes().
  explicit PrefixCache(size_t max_bytes);
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // The entry sharing the longest prefix with tokens[0..n), at most max_len tokens of it, among
  // entries of `owner` with the given KV type and steering key. Marks it most recently used.
  PrefixMatch lookup(const void* owner, bool f16, const int32_t* tokens, size_t n, size_t max_len,
                     const std::string& steer = {});
  // Adds an entry (evicting LRU entries to stay within max_bytes). An entry larger than the whole
  // bound is not kept. An entry whose tokens are a prefix of a cached one only refreshes it.
  void insert(std::shared_ptr<const PrefixEntry> e);
  // True when an entry of `owner` already holds tokens[0..n) (the caller can skip building one).
  bool covers(const void* owner, bool f16, const int32_t* tokens, size_t n,
              const std::string& steer = {});
  PrefixCacheStats stats() const;
  size_t max_bytes() const { return max_bytes_; }
  // Drops every entry (counted as evictions): serve's engine sheds the cache when an allocation
  // fails, so the memory goes to the requests.
  void clear();

 private:
  void evict_to(size_t budget);  // mu_ held
  // The entry of owner/f16 whose tokens start with tokens[0..n), moved to the front; end() when
  // none. mu_ held.
  std::list<std::shared_ptr<const PrefixEntry>>::iterator find_covering(const void* owner, bool f16,
                                                                        const int32_t* tokens,
                                                                        size_t n,
                                                                        const std::string& steer);
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::list<std::shared_ptr<const PrefixEntry>> lru_;  // front = most recently used
  size_t bytes_ = 0;
  PrefixCacheStats st_;
};

// The default bound: an eighth of the memory this process may use — the smallest of physical
// memory, RLIMIT_AS, RLIMIT_DATA and its cgroup's memory limit (base/memory_limit.h) — at most
// 2 GiB (1 GiB when none can be read). An eighth of RAM alone let a server under `ulimit -v
// 2000000` grow its cache past the limit and die of bad_alloc (issue 40).
size_t default_prefix_cache_bytes();
size_t default_prefix_cache_bytes(const MemoryLimits& limits);

}  // namespace ragform::runtime
