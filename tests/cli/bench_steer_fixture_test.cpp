// `ragform bench --steer RULE`: steered prefill and decode rows beside the plain ones, the cost on
// stderr; a rule that steers nothing is a usage error; the rule is read by the one steering parser
// (reader/steering_object.h), so a bad one is refused in generate's words.
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

// The error line of a run's stderr ("ragform: ..."; notes may come before it).
std::string error_line(const std::string& err) {
  const size_t at = err.rfind("ragform: ");
  return at == std::string::npos ? "" : err.substr(at, err.find('\n', at) - at);
}

TEST(BenchSteer, ARuleIsReadAsEveryVerbsSteer) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  for (const char* rule : {"boost:2", "rescale:-1", "reallocate:2", "rescale:x",
                           "reallocate:0.7,0.6", "redistribute:0,0"}) {
    SCOPED_TRACE(rule);
    const auto bench =
        run_ragform("bench -m " + quoted(model) + " --pp 8 --tg 0 -r 1 --steer " + quoted(rule));
    const auto generate = run_ragform("generate -m " + quoted(model) + " -p 'Once upon' -n 1 " +
                                      "--steer " + quoted(rule) + " --steer-spans 0:4");
    EXPECT_EQ(bench.exit_code, 2) << bench.err;
    EXPECT_EQ(generate.exit_code, 2) << generate.err;
    EXPECT_EQ(error_line(bench.err), error_line(generate.err));
    EXPECT_EQ(error_line(bench.err).rfind("ragform: --steer: ", 0), 0u) << bench.err;
  }
  // bench picks its own spans: --steer-spans is not one of its flags.
  const auto spans = run_ragform("bench -m " + quoted(model) +
                                 " --pp 8 --tg 0 -r 1 --steer rescale:2 --steer-spans 0:1");
  EXPECT_EQ(spans.exit_code, 2) << spans.err;
}

}  // namespace
}  // namespace ragform::testing
