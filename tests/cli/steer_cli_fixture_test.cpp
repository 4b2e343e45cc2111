// The --steer flags of generate, score, attention and logits (cli/steer_flags.h) on stories260K:
// rescale:1 gives the unsteered bytes; reallocate:S gives the spans' tokens exactly S of the
// final token's attention in a steered layer (the weights reported are the steered ones); bad
// values are usage errors.
#include <gtest/gtest.h>

#include <numeric>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

const std::string kPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun.";

std::string model_args() {
  return "-m " + quoted(shared_path("fixtures/models/stories260K.gguf")) + " -p '" + kPrompt + "'";
}

TEST(SteerCli, RescaleOneIsTheUnsteeredOutput) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto plain = run_ragform("generate " + model_args() + " -n 16 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto one = run_ragform("generate " + model_args() +
                               " -n 16 --json --steer rescale:1 --steer-spans 0:20");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, plain.out);
  const auto dir = temp_dir("steer-cli");
  const auto a =
      run_ragform("logits " + model_args() + " --positions all -o " + quoted(dir / "a.bin"));
  const auto b = run_ragform("logits " + model_args() +
                             " --positions all --steer rescale:1 --steer-spans 0:20 -o " +
                             quoted(dir / "b.bin"));
  const auto c = run_ragform("logits " + model_args() +
                             " --positions all --steer rescale:4 --steer-spans 0:20 -o " +
                             quoted(dir / "c.bin"));
  ASSERT_EQ(a.exit_code + b.exit_code + c.exit_code, 0) << a.err << b.err << c.err;
  EXPECT_EQ(read_file(dir / "a.bin"), read_file(dir / "b.bin"));
  EXPECT_NE(read_file(dir / "a.bin"), read_file(dir / "c.bin"));
  // score takes it too: steered log-probs differ, rescale:1 does not.
  const auto s0 = run_ragform("score " + model_args() + " -c ' Lily was happy.' --json");
  const auto s1 = run_ragform("score " + model_args() +
                              " -c ' Lily was happy.' --json --steer rescale:1 --steer-spans 0:20");
  const auto s2 = run_ragform("score " + model_args() +
                              " -c ' Lily was happy.' --json --steer rescale:4 --steer-spans 0:20");
  ASSERT_EQ(s0.exit_code + s1.exit_code + s2.exit_code, 0) << s0.err << s1.err << s2.err;
  EXPECT_EQ(s1.out, s0.out);
  EXPECT_NE(s2.out, s0.out);
}

TEST(SteerCli, ReallocateGivesTheSpanItsShareOfTheReportedAttention) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  // Bytes 48..57 are "Lily. She" -> the tokens holding any of those bytes.
  const auto r = run_ragform("attention " + model_args() +
                             " --json --steer reallocate:0.75 --steer-spans 48:57");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json_lines(r.out).at(0);
  const auto pieces = j["pieces"].get<std::vector<std::string>>();
  // SentencePiece: the pieces after BOS spell " " + the prompt (the dummy prefix space).
  double span = 0.0, total = 0.0;
  size_t at = 0;
  for (size_t t = 1; t < pieces.size(); ++t) {
    const size_t b = t == 1 ? 0 : at, e = at + pieces[t].size() - (t == 1 ? 1 : 0);
    at = e;
    const double w = j["mean"][t].get<double>();
    if (b < 57 && 48 < e) span += w;
  }
  for (const auto& w : j["mean"]) total += w.get<double>();
  ASSERT_EQ(at, kPrompt.size());  // the pieces did spell the prompt
  EXPECT_NEAR(span, 0.75, 1e-5);
  EXPECT_NEAR(total, 1.0, 1e-5);
  // Layer 0 is outside the default layers (the last half): not steered there.
  const auto l0 = run_ragform("attention " + model_args() +
                              " --json --layer 0 --steer reallocate:0.75 --steer-spans 48:57");
  const auto p0 = run_ragform("attention " + model_args() + " --json --layer 0");
  ASSERT_EQ(l0.exit_code + p0.exit_code, 0);
  EXPECT_EQ(l0.out, p0.out);
}

TEST(SteerCli, UsageErrors) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  struct Bad {
    const char* flags;
    const char* message;
  };
  for (const Bad& b :
       {Bad{"--steer-spans 0:4", "ragform: --steer-spans: needs --steer"},
        Bad{"--steer rescale:2", "ragform: --steer: needs --steer-spans"},
        Bad{"--steer boost:2 --steer-spans 0:4", "ragform: --steer: expected rescale:FACTOR"},
        Bad{"--steer rescale:2 --steer-spans 0:4000",
            "ragform: --steer-spans: span 0:4000 ends "
            "past the prompt's 91 bytes"},
        Bad{"--steer rescale:2 --steer-spans 0:4 --steer-layers 9",
            "ragform: --steer-layers: "
            "layer 9 is outside"},
        Bad{"--steer rescale:2 --steer-spans 0:4 --steer-heads 99",
            "ragform: --steer-heads: head "
            "99 is outside"}}) {
    SCOPED_TRACE(b.flags);
    const auto r = run_ragform("generate " + model_args() + " -n 2 " + b.flags);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(b.message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ragform::testing
