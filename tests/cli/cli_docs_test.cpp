// docs/cli.md is generated from the binary's --help texts; this test fails when they drift apart.
// Regenerate with: scripts/gen-cli-docs.sh build/release/bin/ragform > docs/cli.md
#include <cstdlib>

#include <gtest/gtest.h>

#include "support/test_support.h"

TEST(CliDocs, ReferenceMatchesTheBinary) {
  namespace fs = std::filesystem;
  const fs::path src(RAGFORM_SOURCE_DIR);
  const fs::path out = ragform::testing::temp_dir("clidocs") / "cli.md";
  std::string cmd = "'" + (src / "scripts/gen-cli-docs.sh").string() + "' '" +
                    ragform::testing::ragform_bin().string() + "' > '" + out.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(ragform::testing::read_file(src / "docs/cli.md") == ragform::testing::read_file(out))
      << "docs/cli.md is out of date: run scripts/gen-cli-docs.sh build/release/bin/ragform > "
         "docs/cli.md";
}

// docs/openapi.json is `ragform serve --openapi` (the API document built from the server's route
// table, server/openapi.h); this test fails when they drift apart.
TEST(CliDocs, OpenApiDocumentMatchesTheBinary) {
  namespace fs = std::filesystem;
  const fs::path src(RAGFORM_SOURCE_DIR);
  const fs::path out = ragform::testing::temp_dir("openapi") / "openapi.json";
  const std::string cmd =
      "'" + ragform::testing::ragform_bin().string() + "' serve --openapi > '" + out.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_TRUE(ragform::testing::read_file(src / "docs/openapi.json") ==
              ragform::testing::read_file(out))
      << "docs/openapi.json is out of date: run build/ci/bin/ragform serve --openapi > "
         "docs/openapi.json";
}
