// --f16-gemm exact|int16 on the commands that load a model (issue 23): bad values are one-line
// usage errors naming the flag or RAGFORM_F16_GEMM, the flag wins over the variable, and the
// default is the exact path (the same logits as asking for it).
#include <gtest/gtest.h>
#include <stdlib.h>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

TEST(F16GemmFlagFixture, ValuesErrorsAndDefault) {
  REQUIRE_SHARED(model, "fixtures/models/tinyq-f16.gguf");
  const auto dir = temp_dir("f16gemm");
  const std::string base = "logits -m " + quoted(model) + " -p 'Once upon a time' -t 1 -o ";

  auto r = run_ragform(base + quoted(dir / "x.f32") + " --f16-gemm fast");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ragform: --f16-gemm: expected exact or int16, got 'fast'\n");

  ::setenv("RAGFORM_F16_GEMM", "fast", 1);
  r = run_ragform(base + quoted(dir / "x.f32"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ragform: RAGFORM_F16_GEMM: expected exact or int16, got 'fast'\n");
  // The flag overrides the variable.
  r = run_ragform(base + quoted(dir / "flag.f32") + " --f16-gemm exact");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ::unsetenv("RAGFORM_F16_GEMM");

  r = run_ragform(base + quoted(dir / "default.f32"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string def = read_file(dir / "default.f32");
  EXPECT_FALSE(def.empty());
  EXPECT_EQ(def, read_file(dir / "flag.f32")) << "the default is not the exact path";

  // Every model-loading command takes the flag, bench (which loads without a reader) included.
  r = run_ragform("bench -m " + quoted(model) + " --pp 16 --tg 0 -r 1 -t 1 --f16-gemm int16");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* cmd : {"generate", "score", "attention", "logits", "serve", "bench"}) {
    r = run_ragform(std::string(cmd) + " --help");
    EXPECT_NE(r.out.find("--f16-gemm"), std::string::npos) << cmd;
    EXPECT_NE(r.out.find("approximate"), std::string::npos) << cmd;
  }
}

}  // namespace
}  // namespace ragform::testing
