// `ragform generate` checks its sampling settings by their declaration
// (reader/generate_options.h) and names the flag: --top-p 0 (an empty nucleus) is a usage error
// about --top-p, not the sampler's message about its own field.
#include <gtest/gtest.h>

#include "support/test_support.h"

using ragform::testing::run_ragform;

TEST(GenerateParams, AnEmptyNucleusNamesTheFlag) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto r = run_ragform("generate -m '" + model.string() + "' -p Once -n 2 --top-p 0");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("ragform: --top-p: must be above 0: an empty nucleus holds no token\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("sampler"), std::string::npos) << r.err;
  auto ok = run_ragform("generate -m '" + model.string() + "' -p Once -n 2 --top-p 1 --temp 1");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}
