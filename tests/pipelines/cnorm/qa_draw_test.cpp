// build_qa_items' distractor draw is near-linear in a file's records (issue 40, leftover of the
// last pass: `ragform data distractors` built a whole permutation of the file for every record,
// quadratic: 200,000 records were 4 x 10^10 steps). Files of at most kExactDrawRecords records
// draw the bytes they always drew; larger ones draw lazily, a passage at a time.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "base/stable_hash.h"
#include "pipelines/cnorm/format.h"
#include "pipelines/cnorm/lazy_permutation.h"
#include "pipelines/cnorm/tasks.h"

namespace ragform::cnorm {
namespace {

eval::QaRecord one_passage(size_t i, const std::string& answer, const std::string& text) {
  eval::QaRecord r;
  r.id = "r" + std::to_string(i);
  r.question = "question " + std::to_string(i);
  r.answers = {answer};
  eval::Context c;
  c.title = "t" + std::to_string(i);
  c.text = text;
  c.isgold = true;
  r.ctxs = {c};
  return r;
}

std::vector<eval::QaRecord> distinct_records(size_t n) {
  std::vector<eval::QaRecord> rs;
  rs.reserve(n);
  for (size_t i = 0; i < n; ++i)
    rs.push_back(one_passage(i, "a" + std::to_string(i), "passage a" + std::to_string(i) + "."));
  return rs;
}

TEST(LazyPermutation, DrawsAPermutationOneItemAtATime) {
  LazyPermutation p(1000, 7), q(1000, 7), other(1000, 8);
  std::set<size_t> seen;
  bool same_as_other = true;
  while (!p.done()) {
    const size_t v = p.next();
    EXPECT_EQ(q.next(), v);  // seeded: the same order
    same_as_other = same_as_other && other.next() == v;
    EXPECT_LT(v, 1000u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_FALSE(same_as_other);
  // Its first items of a billion: what was drawn is all it holds (seeded_permutation: 8 GB).
  LazyPermutation big(size_t(1) << 30, 1);
  std::set<size_t> first;
  for (int i = 0; i < 100; ++i) first.insert(big.next());
  EXPECT_EQ(first.size(), 100u);
  EXPECT_EQ(big.drawn(), 100u);
  EXPECT_LE(big.held(), 100u);
}

// Up to kExactDrawRecords records: the order of every earlier version (seeded_permutation of the
// whole file per record), so files drawn before give the same bytes.
TEST(QaDistractorDraw, SmallFilesDrawAsBefore) {
  const size_t n = 2000, k = 5;
  const auto rs = distinct_records(n);
  const auto items = build_qa_items(rs, k, 3);
  ASSERT_EQ(items.size(), n);
  for (size_t r = 0; r < n; r += 97) {
    std::vector<std::string> want;
    for (size_t j : seeded_permutation(n, splitmix64_mix(3 ^ fnv1a64(rs[r].id)))) {
      if (want.size() == k - 1) break;
      if (j != r) want.push_back(rs[j].ctxs[0].text);
    }
    ASSERT_EQ(items[r].distractors.size(), k - 1);
    for (size_t i = 0; i < k - 1; ++i) EXPECT_EQ(items[r].distractors[i].text, want[i]) << r;
  }
}

// 100,000 records: the quadratic draw was 10^10 permutation steps and 100,000 allocations of
// 800 KB (minutes); the lazy one draws about k per record (1.5 s on a loaded machine). The bound
// below is far above that and far under what the quadratic draw needs.
TEST(QaDistractorDraw, LargeFilesDrawInNearLinearTime) {
  const size_t n = 100000, k = 4;
  const auto rs = distinct_records(n);
  const auto t0 = std::chrono::steady_clock::now();
  const auto items = build_qa_items(rs, k, 11);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 60.0);
  ASSERT_EQ(items.size(), n);
  std::set<std::string> firsts;
  for (size_t r = 0; r < n; ++r) {
    ASSERT_EQ(items[r].distractors.size(), k - 1);
    std::set<std::string> texts;
    for (const auto& d : items[r].distractors) {
      EXPECT_NE(d.text, rs[r].ctxs[0].text);  // never its own gold
      texts.insert(d.text);
    }
    EXPECT_EQ(texts.size(), k - 1);  // no passage twice
    firsts.insert(items[r].distractors[0].text);
  }
  EXPECT_GT(firsts.size(), n / 2);  // spread over the file, not the same few passages
  // Deterministic in the seed, as --seed promises.
  const auto again = build_qa_items(rs, k, 11);
  for (size_t r = 0; r < n; r += 1009)
    EXPECT_EQ(again[r].distractors[2].text, items[r].distractors[2].text);
}

// A record whose answer is in nearly every passage reads at most kMaxDrawnPassages of them, then
// is left out as having too few distractors (it read the whole file).
TEST(QaDistractorDraw, AnAnswerInEveryPassageStopsAfterTheBound) {
  const size_t n = kExactDrawRecords + 2000, k = 3;
  std::vector<eval::QaRecord> rs;
  for (size_t i = 0; i < n; ++i)
    rs.push_back(one_passage(i, i < 3 ? "zebra" : "a" + std::to_string(i),
                             "zebra passage a" + std::to_string(i) + "."));
  std::vector<std::string> skipped;
  const auto items = build_qa_items(rs, k, 1, &skipped);
  EXPECT_EQ(skipped, (std::vector<std::string>{"r0", "r1", "r2"}));
  EXPECT_EQ(items.size(), n - 3);
}

}  // namespace
}  // namespace ragform::cnorm
