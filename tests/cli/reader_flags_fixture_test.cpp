// Issue 24 defect 8: the default --ctx 4096 exceeded stories260K's training context without a
// word. The default is now the training context when that is smaller; a larger --ctx given on the
// command line is kept, with a note.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

using ragform::testing::quoted;
using ragform::testing::run_ragform;

TEST(ReaderFlags, ContextDefaultsToTheTrainingContext) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  // The training context as `ragform info` reads it from the file.
  auto info = run_ragform("info --json " + quoted(model));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const int train = nlohmann::json::parse(info.out)["n_ctx_train"].get<int>();
  ASSERT_GT(train, 0);
  ASSERT_LT(train, 4096);  // the case of the issue

  auto r = run_ragform("generate -m " + quoted(model) + " -p 'Once upon' -n 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: --ctx defaults to " + std::to_string(train) +
                       ", the model's training context"),
            std::string::npos)
      << r.err;

  r = run_ragform("generate -m " + quoted(model) + " -p 'Once upon' -n 2 --ctx 4096");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.err.find("note: --ctx 4096 exceeds the model's training context " + std::to_string(train)),
      std::string::npos)
      << r.err;

  r = run_ragform("generate -m " + quoted(model) + " -p 'Once upon' -n 2 --ctx 64");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("note: --ctx"), std::string::npos) << r.err;
}
