// Issue 40, third pass: the retry backoff doubles up to a bound. It grew as 0.5 s x 2^16 (9 hours
// before one retry), so `--retries 100` against a closed port would have waited a month.
#include <gtest/gtest.h>

#include "reader/http_json.h"

namespace ragform::reader {
namespace {

TEST(RetryDelay, DoublesFromTheFirstDelayUpToTheBound) {
  EXPECT_DOUBLE_EQ(retry_delay_s(0.5, 1), 0.5);
  EXPECT_DOUBLE_EQ(retry_delay_s(0.5, 2), 1.0);
  EXPECT_DOUBLE_EQ(retry_delay_s(0.5, 5), 8.0);
  EXPECT_DOUBLE_EQ(retry_delay_s(0.5, 8), kMaxRetryDelayS);
  EXPECT_DOUBLE_EQ(retry_delay_s(0.5, 100), kMaxRetryDelayS);
  EXPECT_DOUBLE_EQ(retry_delay_s(0.5, 1 << 30), kMaxRetryDelayS);
  EXPECT_DOUBLE_EQ(retry_delay_s(0, 7), 0.0);  // tests' zero backoff stays zero
}

}  // namespace
}  // namespace ragform::reader
