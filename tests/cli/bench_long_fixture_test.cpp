// `ragform bench` on runs longer than the model was trained for: one warning line on stderr, and
// progress (tokens evaluated) as other long commands show it (RAGFORM_PROGRESS=always here, since
// a test's stderr is not a terminal).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "support/test_support.h"

namespace {
using ragform::testing::run_ragform;

ragform::testing::RunResult run_with_progress(const std::string& args, const char* mode) {
  if (mode)
    setenv("RAGFORM_PROGRESS", mode, 1);
  else
    unsetenv("RAGFORM_PROGRESS");
  auto r = run_ragform(args);
  unsetenv("RAGFORM_PROGRESS");
  return r;
}

size_t lines_with(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(BenchLong, WarnsOncePastTheTrainingContext) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");  // trained on 2048 positions
  const std::string m = "bench -m '" + model.string() + "' -r 1 ";
  auto pp = run_with_progress(m + "--pp 2100 --tg 0", nullptr);
  ASSERT_EQ(pp.exit_code, 0) << pp.err;
  EXPECT_EQ(lines_with(pp.err, "ragform: warning: bench:"), 1u) << pp.err;
  EXPECT_NE(pp.err.find("context of 2100 tokens, more than the model's training context 2048"),
            std::string::npos)
      << pp.err;
  // tgN decodes N tokens after a one-token prompt: N + 1 positions.
  auto tg = run_with_progress(m + "--pp 0 --tg 2048", nullptr);
  ASSERT_EQ(tg.exit_code, 0) << tg.err;
  EXPECT_NE(tg.err.find("context of 2049 tokens"), std::string::npos) << tg.err;
  // Within the training context: nothing.
  auto ok = run_with_progress(m + "--pp 2048 --tg 2047", nullptr);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("warning"), std::string::npos) << ok.err;
}

TEST(BenchLong, ShowsProgressOfTheTokensEvaluated) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const std::string args =
      "bench -m '" + model.string() + "' -r 2 --pp 3000 --tg 4 --taps attention";
  auto r = run_with_progress(args, "always");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 2 repetitions of pp3000 and pp3000+attn, and of tg4: 2 * (2 * 3000 + 4) tokens.
  EXPECT_NE(r.err.find("bench  12008/12008"), std::string::npos) << r.err;
  // The results on stdout are unchanged by it.
  EXPECT_NE(r.out.find("pp3000+attn"), std::string::npos) << r.out;
  auto quiet = run_with_progress(args, "never");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("12008"), std::string::npos) << quiet.err;
}

}  // namespace

// --depth D: each test's sequence holds D untimed tokens first (llama-bench's -d); the tests are
// named ppN@dD and tgN@dD, the context counts the depth, and it does not go with --parallel.
TEST(BenchLong, DepthFillsTheSequenceBeforeEachTest) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const std::string m = "bench -m '" + model.string() + "' -r 1 ";
  auto r = run_with_progress(m + "--pp 8 --tg 4 --depth 16 --json", nullptr);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"test\":\"pp8@d16\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"test\":\"tg4@d16\""), std::string::npos) << r.out;
  auto past = run_with_progress(m + "--pp 16 --tg 0 --depth 2040", nullptr);
  ASSERT_EQ(past.exit_code, 0) << past.err;
  EXPECT_NE(past.err.find("context of 2056 tokens"), std::string::npos) << past.err;
  auto par = run_with_progress(m + "--pp 8 --tg 4 --depth 4 --parallel 2", nullptr);
  EXPECT_EQ(par.exit_code, 2) << par.err;
  EXPECT_NE(par.err.find("--depth"), std::string::npos) << par.err;
}
