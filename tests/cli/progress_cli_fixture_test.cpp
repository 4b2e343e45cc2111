// Issue 24 defect 9: `cnorm eval` and `sure eval` show progress lines (done/total, rate, ETA) on
// stderr; quiet when stderr is not a terminal unless asked (RAGFORM_PROGRESS=always), which then
// appends plain lines instead of redrawing one.
#include <gtest/gtest.h>

#include <cstdlib>

#include "pipelines/cnorm/cnorm_cli.h"
#include "pipelines/sure/nq_pairs_input.h"
#include "support/test_support.h"

using ragform::testing::quoted;
using ragform::testing::run_ragform;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

namespace {
// Runs `args` with RAGFORM_PROGRESS set to `mode` ("" = unset).
ragform::testing::RunResult run_with_progress(const std::string& mode, const std::string& args) {
  if (mode.empty())
    unsetenv("RAGFORM_PROGRESS");
  else
    setenv("RAGFORM_PROGRESS", mode.c_str(), 1);
  auto r = run_ragform(args);
  unsetenv("RAGFORM_PROGRESS");
  return r;
}
}  // namespace

TEST(ProgressCli, CnormEvalAndSureEvalShowProgressWhenAsked) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("progress_cli");

  auto cal = run_ragform(ragform::testing::cnorm_calibrate(
      model, "--task needle -S 2 -k 3 --delims 'none,&' --ctx 512 --no-cache", dir / "p.json"));
  ASSERT_EQ(cal.exit_code, 0) << cal.err;
  std::string ev =
      ragform::testing::cnorm_eval(model, dir / "p.json", "--task needle -k 3 --limit 2 --ctx 512");
  auto quiet = run_with_progress("", ev + " --store " + quoted(dir / "c0.sqlite"));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("ETA"), std::string::npos) << quiet.err;  // not a terminal
  auto loud = run_with_progress("always", ev + " --store " + quoted(dir / "c1.sqlite"));
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  // 2 items x 3 positions x 3 variants, the final line complete.
  EXPECT_NE(loud.err.find("cnorm eval seed 0  18/18  "), std::string::npos) << loud.err;
  EXPECT_NE(loud.err.find("ETA 0m00s\n"), std::string::npos) << loud.err;
  EXPECT_EQ(loud.err.find('\r'), std::string::npos) << "a log gets lines, not redraws";

  write_file(dir / "qa.jsonl", ragform::testing::nq_pairs_input(nq, 2));
  auto p = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") + " --kinds format/json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  write_file(dir / "pairs.jsonl", p.out);
  std::string se = "sure eval --input " + quoted(dir / "pairs.jsonl") + " -m " + quoted(model) +
                   " --ctx 1024 -n 4 --temp 0 --store ";
  quiet = run_with_progress("", se + quoted(dir / "s0.sqlite"));
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err.find("ETA"), std::string::npos) << quiet.err;
  loud = run_with_progress("always", se + quoted(dir / "s1.sqlite"));
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  // Per question: closed-book, 2 originals, 2 perturbed.
  EXPECT_NE(loud.err.find("sure eval  10/10  "), std::string::npos) << loud.err;

  auto bad = run_with_progress("sometimes", "sure eval --help");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "ragform: RAGFORM_PROGRESS: expected always, never or auto, got 'sometimes'\n");
}
