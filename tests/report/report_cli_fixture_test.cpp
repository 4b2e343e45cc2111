// `ragform report` on bad input: each error names the file or flag and exits 1 (runtime) or 2
// (usage), and never leaves a partial report behind.
#include <gtest/gtest.h>

#include <algorithm>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "store/run_store.h"
#include "support/test_support.h"
#include "support/unprivileged.h"

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
  EXPECT_NE(r.err.find("--instances: value out of range: -1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(ReportCli, UnwritableOutputIsAnError) {
  fs::path dir = ragform::testing::temp_dir("report-cli-out");
  fs::path db = dir / "empty.sqlite";
  { ragform::store::RunStore st(db); }  // a valid store without runs
  auto r =
      run_ragform("report '" + db.string() + "' -o '" + (dir / "no/such/r.html").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  // The error names the user's path and the reason, not the temporary file.
  EXPECT_EQ(r.err, "ragform: " + (dir / "no/such/r.html").string() +
                       ": cannot write the report: no such file or directory\n");
  // The same store renders, and says it holds no runs.
  r = run_ragform("report '" + db.string() + "' -o '" + (dir / "r.html").string() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(ragform::testing::read_file(dir / "r.html").find("holds no runs"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "r.html.tmp"));
}

namespace {
// A closed store with one run and one row in `dir`.
fs::path small_store(const fs::path& dir) {
  fs::path db = dir / "run.sqlite";
  ragform::store::RunStore st(db);
  ragform::store::RunConfig rc;
  rc.pipeline = "sure eval";
  rc.config = {{"temperature", 0.1}};
  ragform::store::Result row;
  row.run = st.begin_run(rc);
  row.instance = "q1";
  row.variant = "closed-book";
  row.prompt = "Q: ?";
  row.output = "A";
  row.correct = true;
  st.put(row);
  return db;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

// Issue 24 defect 5: `report` needed write access to the store's directory ("attempt to write a
// readonly database") and left -wal/-shm files beside the store.
TEST(ReportCli, ReadsAStoreInAReadOnlyDirectoryAndWritesNothingBesideIt) {
  ragform::testing::UnprivilegedWorld world("report-ro");
  if (!world.ok()) GTEST_SKIP() << world.why();
  const fs::path& base = world.dir();
  fs::path dir = base / "store";
  fs::create_directories(dir);
  fs::path db = small_store(dir);
  ASSERT_EQ(names_in(dir), std::vector<std::string>{"run.sqlite"});
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                           fs::perms::group_exec | fs::perms::others_read |
                           fs::perms::others_exec);  // 0555
  fs::path out = base / "r.html";
  auto r =
      world.run("report " + ragform::testing::quoted(db) + " -o " + ragform::testing::quoted(out));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"run.sqlite"});
  // As the owner (who may write there), nothing is left beside the store either.
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
  r = ragform::testing::run_ragform("report " + ragform::testing::quoted(db) + " -o " +
                                    ragform::testing::quoted(base / "r2.html"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(names_in(dir), std::vector<std::string>{"run.sqlite"});
}

// A store the user may not reach says "permission denied", not "no such file".
TEST(ReportCli, UnreachableStoreIsPermissionDenied) {
  // The owner can always reach their own directory: the case needs a second user.
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run the report as another user (setpriv)";
  ragform::testing::UnprivilegedWorld world("report-denied");
  if (!world.ok()) GTEST_SKIP() << world.why();
  fs::path dir = world.dir() / "private";
  fs::create_directories(dir);
  fs::path db = small_store(dir);
  fs::permissions(dir, fs::perms::owner_all);  // 0700: others cannot search it
  auto r = world.run("report " + ragform::testing::quoted(db) + " -o " +
                     ragform::testing::quoted(world.dir() / "r.html"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("run.sqlite: permission denied"), std::string::npos) << r.err;
}
