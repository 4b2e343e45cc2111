// cli/engine_env.h: the F16 product path from --f16-gemm, else RAGFORM_F16_GEMM, else exact (the
// default is part of the contract, issue 23: a test fails if it changes).
#include "cli/engine_env.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "base/error.h"

namespace ragform::cli {
namespace {

TEST(EngineEnv, F16GemmFlagThenVariableThenExact) {
  ::unsetenv("RAGFORM_F16_GEMM");
  EXPECT_EQ(engine_options_from_env(1).f16_gemm, ops::F16Gemm::exact);
  EXPECT_EQ(engine_options_from_env(1, "int16").f16_gemm, ops::F16Gemm::int16);
  EXPECT_EQ(engine_options_from_env(1, "exact").f16_gemm, ops::F16Gemm::exact);
  EXPECT_THROW(engine_options_from_env(1, "fast"), UsageError);
  ::setenv("RAGFORM_F16_GEMM", "int16", 1);
  EXPECT_EQ(engine_options_from_env(1).f16_gemm, ops::F16Gemm::int16);
  EXPECT_EQ(engine_options_from_env(1, "exact").f16_gemm, ops::F16Gemm::exact);
  ::setenv("RAGFORM_F16_GEMM", "fp32", 1);  // the old name of exact
  EXPECT_EQ(engine_options_from_env(1).f16_gemm, ops::F16Gemm::exact);
  ::setenv("RAGFORM_F16_GEMM", "fast", 1);
  EXPECT_THROW(engine_options_from_env(1), UsageError);
  EXPECT_EQ(engine_options_from_env(1, "int16").f16_gemm, ops::F16Gemm::int16);
  ::unsetenv("RAGFORM_F16_GEMM");
  EXPECT_EQ(ops::f16_gemm_name(ops::F16Gemm::exact), std::string("exact"));
  EXPECT_EQ(ops::f16_gemm_name(ops::F16Gemm::int16), std::string("int16"));
}

}  // namespace
}  // namespace ragform::cli
