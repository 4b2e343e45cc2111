// `ragform bench --steer RULE`: steered prefill and decode rows beside the plain ones, the cost on
// stderr; a rule that steers nothing is a usage error.
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

TEST(BenchSteer, SteeredRowsBesideThePlainOnes) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto r = run_ragform("bench -m " + quoted(model) +
                             " --pp 64 --tg 8 -r 1 -t 1 --steer reallocate:0.5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto arr = json_lines(r.out).at(0);
  std::vector<std::string> tests;
  for (const auto& e : arr) tests.push_back(e["test"]);
  EXPECT_EQ(tests, (std::vector<std::string>{"pp64", "pp64+steer", "tg8", "tg8+steer"}));
  for (const auto& e : arr) EXPECT_GT(e["t_s_median"].get<double>(), 0.0);
  EXPECT_NE(r.err.find("pp64+steer: steering adds"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tg8+steer: steering adds"), std::string::npos) << r.err;

  const auto one =
      run_ragform("bench -m " + quoted(model) + " --pp 8 --tg 0 -r 1 --steer rescale:1");
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("ragform: --steer: 'rescale:1' changes nothing"), std::string::npos)
      << one.err;
}

}  // namespace
}  // namespace ragform::testing
