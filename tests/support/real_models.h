// The `real` tier's models: trained weights installed by scripts/models.sh, named by environment
// variables (RAGFORM_GEMMA, RAGFORM_MINILM), never committed. A missing model is a skip that says
// how to install it; a present model that drifts from the committed reference dumps is a failure.
#pragma once
#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace ragform::testing {

// The path in environment variable `var`, or "" when it is unset or names no file.
inline std::string real_model_path(const char* var) {
  const char* p = std::getenv(var);
  if (!p || !*p || !std::filesystem::is_regular_file(p)) return "";
  return p;
}

// Where the real tier's committed reference dumps live (tests/data/real/<name>).
inline std::filesystem::path real_data_dir(const std::string& name) {
  return std::filesystem::path(RAGFORM_SOURCE_DIR) / "tests" / "data" / "real" / name;
}

}  // namespace ragform::testing

// Declares `var` as the model file named by environment variable `env`; skips the test, naming
// the install command, when there is none.
#define REQUIRE_REAL_MODEL(var, env)                                   \
  const std::string var = ::ragform::testing::real_model_path(env);    \
  if (var.empty())                                                     \
  GTEST_SKIP() << env                                                  \
      " is not set or names no file: install the trained models with " \
      "`eval \"$(scripts/models.sh --print)\"` (scripts/models.sh; see README)"
