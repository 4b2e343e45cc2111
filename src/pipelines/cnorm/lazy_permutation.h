// A seeded random permutation of 0..n-1 drawn one item at a time, for a caller that needs only its
// first few items: each draw is O(1) time and memory (Fisher-Yates from the front, with only the
// positions a swap has touched kept in a hash map), where seeded_permutation (format.h) builds
// all n. build_qa_items (tasks.h) draws a record's distractors from a permutation of every record
// of a file: building n of them for n records was quadratic (200,000 records: 4 x 10^10 steps).
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <unordered_map>

namespace ragform::cnorm {

class LazyPermutation {
 public:
  LazyPermutation(size_t n, uint64_t seed) : n_(n), rng_(seed) {}

  // Whether every item has been drawn.
  bool done() const { return i_ == n_; }
  // The next item (call only while !done()): position i takes the item at a uniform position
  // j in [i, n), which takes position i's.
  size_t next() {
    const size_t j = i_ + size_t(rng_() % uint64_t(n_ - i_));
    const size_t at_j = item_at(j);
    if (j != i_) moved_[j] = item_at(i_);
    moved_.erase(i_);
    ++i_;
    return at_j;
  }
  // Items drawn so far, and positions held in memory (at most that many): what a test counts.
  size_t drawn() const { return i_; }
  size_t held() const { return moved_.size(); }

 private:
  size_t item_at(size_t p) const {
    const auto it = moved_.find(p);
    return it == moved_.end() ? p : it->second;
  }
  size_t n_, i_ = 0;
  std::mt19937_64 rng_;
  std::unordered_map<size_t, size_t> moved_;  // position -> item, where they differ
};

}  // namespace ragform::cnorm
