// RetrieverPool (retrieval/retriever_pool.h), BM25 only (SQLite: this test runs under TSan; FAISS
// is in dense_index_parallel_test.cpp): two callers hold two Retrievers at once (requests run in
// parallel, not one at a time), a pool of one makes the second caller wait, and concurrent
// retrievals each get the sequential answer.
#include <chrono>
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "retrieval/index_build.h"
#include "retrieval/retriever_pool.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

using namespace std::chrono_literals;

// 60 passages over a small vocabulary, so questions rank them differently.
std::string small_index() {
  auto d = temp_dir("retriever-pool");
  const char* words[] = {"river",  "castle", "piano",   "comet",   "harbor", "violin",
                         "desert", "falcon", "glacier", "lantern", "meadow", "orchid"};
  std::string corpus;
  for (int i = 0; i < 60; ++i) {
    std::string text;
    for (int w = 0; w < 8; ++w) text += std::string(words[(i * 7 + w * w + i / 5) % 12]) + " ";
    corpus += "{\"id\": \"p" + std::to_string(i) + "\", \"title\": \"" + words[i % 12] +
              "\", \"text\": \"" + text + "\"}\n";
  }
  write_file(d / "c.jsonl", corpus);
  retrieval::BuildOptions o;
  o.corpus = (d / "c.jsonl").string();
  o.dir = (d / "ix").string();
  retrieval::build_index(o);
  return o.dir;
}

TEST(RetrieverPool, TwoCallersHoldTwoRetrieversAtOnce) {
  const auto dir = small_index();
  retrieval::RetrieverPool pool(dir, {}, nullptr, 2);
  EXPECT_EQ(pool.opened(), 1u);
  auto a = pool.acquire();
  // With a's Retriever still leased, another thread gets one without waiting.
  auto other = std::async(std::launch::async, [&] {
    auto b = pool.acquire();
    return b->retrieve({"castle piano"}, 3)[0].size();
  });
  ASSERT_EQ(other.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(other.get(), 3u);
  EXPECT_EQ(pool.opened(), 2u);
  EXPECT_EQ(a->retrieve({"comet"}, 2)[0].size(), 2u);
}

TEST(RetrieverPool, APoolOfOneMakesTheSecondCallerWait) {
  const auto dir = small_index();
  retrieval::RetrieverPool pool(dir, {}, nullptr, 1);
  std::optional<retrieval::RetrieverPool::Lease> a(pool.acquire());
  auto other = std::async(std::launch::async, [&] {
    auto b = pool.acquire();
    return b->retrieve({"violin"}, 1)[0].size();
  });
  EXPECT_EQ(other.wait_for(200ms), std::future_status::timeout);
  a.reset();  // released: the waiting caller gets it
  ASSERT_EQ(other.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(other.get(), 1u);
  EXPECT_EQ(pool.opened(), 1u);
}

TEST(RetrieverPool, ConcurrentRetrievalsGetTheSequentialAnswers) {
  const auto dir = small_index();
  const std::vector<std::string> qs = {"river castle",   "piano comet harbor",
                                       "violin",         "desert falcon glacier",
                                       "lantern meadow", "orchid river"};
  retrieval::Retriever seq(dir, {});
  std::vector<std::vector<std::string>> want;
  for (const auto& q : qs) {
    std::vector<std::string> ids;
    const auto res = seq.retrieve({q}, 5);  // (not ranged over a temporary's element)
    for (const auto& r : res[0]) ids.push_back(r.id);
    want.push_back(ids);
  }
  retrieval::RetrieverPool pool(dir, {}, nullptr, 4);
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        const size_t qi = size_t(t * 3 + i) % qs.size();
        auto lease = pool.acquire();
        std::vector<std::string> ids;
        const auto res = lease->retrieve({qs[qi]}, 5);
        for (const auto& r : res[0]) ids.push_back(r.id);
        if (ids != want[qi]) ++wrong;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(pool.opened(), 4u);
}

}  // namespace
}  // namespace ragform::testing
