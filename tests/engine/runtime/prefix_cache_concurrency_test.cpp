// The prefix cache's bookkeeping without a model: longest-prefix lookup, the never-the-last-token
// cap, prefix entries dropped when a longer one covers them, LRU eviction within the byte bound,
// entries of other models never matched, and concurrent use from several threads.
#include <gtest/gtest.h>

#include <thread>

#include "engine/runtime/prefix_cache.h"

namespace ragform::runtime {
namespace {

int kOwner = 0, kOther = 0;

// An entry of n tokens from `tokens` with `payload` floats of K and of V in one layer.
std::shared_ptr<PrefixEntry> entry(std::vector<int32_t> tokens, size_t payload,
                                   const void* owner = &kOwner) {
  auto e = std::make_shared<PrefixEntry>();
  e->owner = owner;
  e->tokens = std::move(tokens);
  e->k32.assign(1, std::vector<float>(payload, 1.0f));
  e->v32.assign(1, std::vector<float>(payload, 2.0f));
  return e;
}

TEST(PrefixCache, FindsTheLongestCommonPrefix) {
  PrefixCache c(1 << 20);
  c.insert(entry({1, 2, 3, 4, 5}, 10));
  c.insert(entry({1, 2, 9, 9}, 10));
  c.insert(entry({7, 7}, 10));
  std::vector<int32_t> q{1, 2, 3, 4, 8, 8};
  PrefixMatch m = c.lookup(&kOwner, false, q.data(), q.size(), q.size() - 1);
  ASSERT_TRUE(m.entry);
  EXPECT_EQ(m.n, 4);
  EXPECT_EQ(m.entry->tokens.size(), 5u);
  // The caller's cap: the query's last token is never handed out.
  std::vector<int32_t> same{1, 2, 3, 4, 5};
  m = c.lookup(&kOwner, false, same.data(), same.size(), same.size() - 1);
  EXPECT_EQ(m.n, 4);
  std::vector<int32_t> none{5, 5, 5};
  m = c.lookup(&kOwner, false, none.data(), none.size(), 2);
  EXPECT_FALSE(m.entry);
  EXPECT_EQ(m.n, 0);
  // Another model's rows, or the other KV type, never match.
  m = c.lookup(&kOther, false, q.data(), q.size(), q.size() - 1);
  EXPECT_FALSE(m.entry);
  m = c.lookup(&kOwner, true, q.data(), q.size(), q.size() - 1);
  EXPECT_FALSE(m.entry);
}

TEST(PrefixCache, ALongerEntryReplacesItsPrefixesAndAPrefixIsNotStoredTwice) {
  PrefixCache c(1 << 20);
  c.insert(entry({1, 2}, 10));
  c.insert(entry({1, 2, 3}, 10));
  EXPECT_EQ(c.stats().entries, 1u);
  c.insert(entry({1, 2}, 10));  // covered by {1, 2, 3}
  EXPECT_EQ(c.stats().entries, 1u);
  std::vector<int32_t> q{1, 2};
  EXPECT_TRUE(c.covers(&kOwner, false, q.data(), q.size()));
  EXPECT_FALSE(c.covers(&kOther, false, q.data(), q.size()));
}

TEST(PrefixCache, EvictsLeastRecentlyUsedWithinTheBound) {
  const size_t one = entry({0}, 100)->bytes();  // every entry below has this size
  PrefixCache c(3 * one + one / 2);             // room for three
  c.insert(entry({1}, 100));
  c.insert(entry({2}, 100));
  c.insert(entry({3}, 100));
  EXPECT_EQ(c.stats().entries, 3u);
  // Touch {1}: {2} is now the least recently used.
  std::vector<int32_t> q1{1, 0};
  EXPECT_EQ(c.lookup(&kOwner, false, q1.data(), q1.size(), 1).n, 1);
  c.insert(entry({4}, 100));
  PrefixCacheStats s = c.stats();
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_LE(s.bytes, s.max_bytes);
  std::vector<int32_t> q2{2, 0};
  EXPECT_EQ(c.lookup(&kOwner, false, q2.data(), q2.size(), 1).n, 0);
  EXPECT_EQ(c.lookup(&kOwner, false, q1.data(), q1.size(), 1).n, 1);
  // An entry larger than the whole bound is not kept, and evicts nothing.
  c.insert(entry({9}, 1000));
  EXPECT_EQ(c.stats().entries, 3u);
  // Many inserts: the bytes never pass the bound.
  for (int32_t t = 10; t < 200; ++t) {
    c.insert(entry({t, t}, 100));
    ASSERT_LE(c.stats().bytes, c.max_bytes());
  }
}

TEST(PrefixCache, AnEntryHandedOutOutlivesItsEviction) {
  const size_t one = entry({0}, 100)->bytes();
  PrefixCache c(one + one / 2);
  c.insert(entry({1, 2, 3}, 100));
  std::vector<int32_t> q{1, 2, 3, 4};
  PrefixMatch m = c.lookup(&kOwner, false, q.data(), q.size(), 3);
  ASSERT_TRUE(m.entry);
  c.insert(entry({5, 6, 7}, 100));  // evicts {1, 2, 3}
  EXPECT_EQ(c.stats().evictions, 1);
  EXPECT_EQ(m.entry->tokens[2], 3);  // still readable: the match holds a reference
  EXPECT_EQ(m.entry->v32[0][99], 2.0f);
}

TEST(PrefixCache, ConcurrentLookupsAndInsertsStayWithinTheBound) {
  const size_t one = entry({0}, 64)->bytes();
  PrefixCache c(8 * one);
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&c, t] {
      for (int i = 0; i < 500; ++i) {
        std::vector<int32_t> toks{t, i % 17, i};
        c.insert(entry(toks, 64));
        auto m = c.lookup(&kOwner, false, toks.data(), toks.size(), 2);
        if (m.entry) {
          EXPECT_GE(m.entry->tokens.size(), size_t(m.n));
        }
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_LE(c.stats().bytes, c.max_bytes());
  EXPECT_GT(c.stats().evictions, 0);
}

TEST(PrefixCache, DefaultBoundIsAnEighthOfMemoryAtMostTwoGiB) {
  const size_t b = default_prefix_cache_bytes();
  EXPECT_GT(b, 0u);
  EXPECT_LE(b, size_t(2) << 30);
}

}  // namespace
}  // namespace ragform::runtime
