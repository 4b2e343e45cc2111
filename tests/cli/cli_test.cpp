// The command-line contract: exit codes, one-line errors, --help and --version.
#include <gtest/gtest.h>

#include "support/test_support.h"

using ragform::testing::run_ragform;

TEST(Cli, HelpListsCommandsAndExitsZero) {
  auto r = run_ragform("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("commands:"), std::string::npos);
}

TEST(Cli, VersionComesFromGit) {
  auto r = run_ragform("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("ragform "), std::string::npos);
  EXPECT_NE(r.out.find("git "), std::string::npos);
}

TEST(Cli, UnknownCommandIsUsageErrorOnOneLine) {
  auto r = run_ragform("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ragform: frobnicate: unknown command (see ragform --help)\n");
}
