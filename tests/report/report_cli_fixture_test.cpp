// `ragform report` on bad input: each error names the file or flag and exits 1 (runtime) or 2
// (usage), and never leaves a partial report behind.
#include <gtest/gtest.h>

#include "store/run_store.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ragform::testing::run_ragform;

TEST(ReportCli, ErrorsNameTheProblem) {
  fs::path dir = ragform::testing::temp_dir("report-cli");
  fs::path out = dir / "r.html";
  auto r =
      run_ragform("report '" + (dir / "missing.sqlite").string() + "' -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.sqlite: no such file"), std::string::npos) << r.err;

  ragform::testing::write_file(dir / "bad.sqlite", "not a database\n");
  r = run_ragform("report '" + (dir / "bad.sqlite").string() + "' -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.sqlite: not an SQLite database"), std::string::npos) << r.err;

  r = run_ragform("report -o '" + out.string() + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing argument RUN.sqlite"), std::string::npos) << r.err;

  r = run_ragform("report x.sqlite -o '" + out.string() + "' --instances -1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--instances: must be >= 0"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(ReportCli, UnwritableOutputIsAnError) {
  fs::path dir = ragform::testing::temp_dir("report-cli-out");
  fs::path db = dir / "empty.sqlite";
  { ragform::store::RunStore st(db); }  // a valid store without runs
  auto r =
      run_ragform("report '" + db.string() + "' -o '" + (dir / "no/such/r.html").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("report: cannot write"), std::string::npos) << r.err;
  // The same store renders, and says it holds no runs.
  r = run_ragform("report '" + db.string() + "' -o '" + (dir / "r.html").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ragform::testing::read_file(dir / "r.html").find("holds no runs"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "r.html.tmp"));
}
