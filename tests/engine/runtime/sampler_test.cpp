// runtime::top_log_softmax (engine/runtime/sampler.h), the server's top_logprobs: the n likeliest
// tokens, likeliest first, ties toward the lower id, each with exactly log_softmax_at's value; n
// past the vocabulary lists it all; the log-probs of the whole row sum to one.
#include <cmath>

#include <gtest/gtest.h>

#include "engine/runtime/sampler.h"

namespace {

using ragform::runtime::log_softmax_at;
using ragform::runtime::top_log_softmax;

TEST(TopLogSoftmax, ListsTheLikeliestTokensWithTheirOwnLogProbs) {
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, 2.0f, -40.0f};
  const auto top = top_log_softmax(logits.data(), int(logits.size()), 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);  // a tie: the lower id first
  EXPECT_EQ(top[1].first, 3);
  EXPECT_EQ(top[2].first, 4);
  for (const auto& [id, lp] : top)
    EXPECT_EQ(lp, log_softmax_at(logits.data(), int(logits.size()), id)) << id;
  EXPECT_EQ(top[0].second, top[1].second);
  EXPECT_GT(top[1].second, top[2].second);

  const auto all = top_log_softmax(logits.data(), int(logits.size()), 100);
  ASSERT_EQ(all.size(), logits.size());
  EXPECT_EQ(all.back().first, 5);
  double mass = 0;
  for (const auto& [id, lp] : all) mass += std::exp(lp);
  EXPECT_NEAR(mass, 1.0, 1e-12);
  EXPECT_TRUE(top_log_softmax(logits.data(), int(logits.size()), 0).empty());
  // A token's own log-prob from the same pass: log_softmax_at's value, bit for bit.
  for (int32_t id = 0; id < int32_t(logits.size()); ++id) {
    double own = 1.0;
    top_log_softmax(logits.data(), int(logits.size()), 2, id, &own);
    EXPECT_EQ(own, log_softmax_at(logits.data(), int(logits.size()), id)) << id;
  }
}

// Large logits do not overflow: the row's maximum is taken out before exp.
TEST(TopLogSoftmax, IsStableForLargeLogits) {
  const std::vector<float> logits = {1000.0f, 999.0f, 0.0f};
  const auto top = top_log_softmax(logits.data(), 3, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_NEAR(top[0].second, -std::log1p(std::exp(-1.0)), 1e-12);
  EXPECT_NEAR(top[1].second, -1.0 - std::log1p(std::exp(-1.0)), 1e-12);
}

}  // namespace
