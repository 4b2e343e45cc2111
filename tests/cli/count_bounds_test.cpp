// Issue 40, third pass: counts that a front end accepted up to 2^31 and then spent as memory or
// overflowed are refused at a stated bound, before any model is opened: bench's --pp/--tg (depth +
// length overflowed an int), the bootstrap's --resamples (2^31 asked for 16 GB), the encoder's
// --batch-tokens (one pass of INT_MAX tokens held 2.4 GB).
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "eval/stats.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

void expect_refused(const std::string& args, const std::string& why) {
  const auto r = run_ragform(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(why), std::string::npos) << args << "\n" << r.err;
}

TEST(CountBounds, RefusedBeforeAnyModelIsOpened) {
  expect_refused("bench -m /nonexistent.gguf --pp 16777217 --tg 0", "--pp");
  expect_refused("bench -m /nonexistent.gguf --pp 0 --tg 2147483647", "--tg");
  expect_refused("report /nonexistent.sqlite --resamples 1000001", "--resamples");
  expect_refused(
      "sure eval -m /nonexistent.gguf --store /nonexistent/s.sqlite --resamples 2147483647",
      "--resamples: value too large: 2147483647 (largest accepted: 1000000)");
  expect_refused("embed -m /nonexistent.gguf --file /dev/null --batch-tokens 65537",
                 "--batch-tokens: value too large: 65537 (largest accepted: 65536)");
}

TEST(CountBounds, TheBootstrapRefusesMoreResamplesThanTheBound) {
  const double x[] = {0, 1, 1, 0};
  EXPECT_NO_THROW(eval::bootstrap_mean_ci(x, 0.95, 1000));
  EXPECT_THROW(eval::bootstrap_mean_ci(x, 0.95, eval::kMaxResamples + 1), ragform::Error);
}

}  // namespace
}  // namespace ragform::testing
