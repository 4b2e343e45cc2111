// Files and directories the user may not read or write, as the CLI reports them: one line
// `ragform: <path>: <reason>` with the real reason. The commands run as an unprivileged user
// (uid 65534 through setpriv when the tests run as root, who passes every permission check; as
// the user running the tests otherwise), on files whose modes deny everyone but root.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>

#include <gtest/gtest.h>

#include "store/run_store.h"
#include "support/test_support.h"
#include "support/unprivileged.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

void expect_one_line(const RunResult& r, const std::string& line) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "ragform: " + line + "\n");
}

class Permissions : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = std::make_unique<UnprivilegedWorld>("perm");
    if (!world_->ok()) GTEST_SKIP() << world_->why();
    dir_ = world_->dir();
    write_file(dir_ / "c.jsonl", "{\"id\": \"a\", \"text\": \"alpha beta\"}\n");
    write_file(dir_ / "q.jsonl", "{\"question\": \"alpha?\"}\n");
    fs::permissions(dir_ / "c.jsonl",
                    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    fs::permissions(dir_ / "q.jsonl",
                    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  }
  // `ragform ARGS` as the unprivileged user, in `dir`.
  RunResult run_unprivileged(const fs::path& dir, const std::string& args) const {
    return world_->run(args, dir);
  }
  // A directory nobody but root may write in.
  fs::path read_only_dir(const std::string& name) {
    fs::create_directories(dir_ / name);
    fs::permissions(dir_ / name, fs::perms::owner_read | fs::perms::owner_exec |
                                     fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
    return dir_ / name;
  }
  void build_index(const fs::path& ix) {
    auto r = run_ragform("index build --corpus " + quoted(dir_ / "c.jsonl") + " -o " + quoted(ix));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::unique_ptr<UnprivilegedWorld> world_;  // removes the tree, modes undone, at the end
  fs::path dir_;
};

TEST_F(Permissions, IndexInANonWritableDirectory) {
  read_only_dir("ro");
  expect_one_line(run_unprivileged(dir_, "index build --corpus c.jsonl -o ro/ix"),
                  "ro/ix: cannot create the directory: Permission denied");
  expect_one_line(run_unprivileged(dir_, "index build --corpus c.jsonl -o ro/a/ix"),
                  "ro/a: cannot create the directory: Permission denied");
}

TEST_F(Permissions, IndexThatCannotBeSearchedOrRead) {
  build_index(dir_ / "hidden" / "ix");
  fs::permissions(dir_ / "hidden", fs::perms::none);
  expect_one_line(run_unprivileged(dir_, "retrieve --index hidden/ix --input q.jsonl"),
                  "hidden/ix: cannot look for an index: Permission denied");
  build_index(dir_ / "ix");
  fs::permissions(dir_ / "ix" / "index.sqlite", fs::perms::none);
  expect_one_line(run_unprivileged(dir_, "retrieve --index ix --input q.jsonl"),
                  "ix/index.sqlite: cannot open: Permission denied");
  fs::permissions(dir_ / "c.jsonl", fs::perms::none);
  expect_one_line(run_unprivileged(dir_, "index build --corpus c.jsonl -o new"),
                  "c.jsonl: cannot open: Permission denied");
}

// A finished index is read without writing beside it (a shared index, a read-only mount).
TEST_F(Permissions, IndexInAReadOnlyDirectoryIsRead) {
  build_index(dir_ / "ro" / "ix");
  read_only_dir("ro/ix");
  read_only_dir("ro");
  auto r = run_unprivileged(dir_, "retrieve --index ro/ix --input q.jsonl");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Permissions, StoreInANonWritableDirectory) {
  { store::RunStore src(dir_ / "src.sqlite"); }
  fs::permissions(dir_ / "src.sqlite", fs::perms::all);
  read_only_dir("ro");
  expect_one_line(run_unprivileged(dir_, "merge ro/new.sqlite src.sqlite"),
                  "ro/new.sqlite: cannot create: directory 'ro' is not writable: Permission "
                  "denied");
}

TEST_F(Permissions, ReadOnlyStoreOpenedForWriting) {
  fs::create_directories(dir_ / "w");
  fs::permissions(dir_ / "w", fs::perms::all);
  { store::RunStore st(dir_ / "w" / "run.sqlite"); }
  { store::RunStore src(dir_ / "src.sqlite"); }
  fs::permissions(dir_ / "src.sqlite", fs::perms::all);
  fs::permissions(dir_ / "w" / "run.sqlite",
                  fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  expect_one_line(run_unprivileged(dir_, "merge w/run.sqlite src.sqlite"),
                  "w/run.sqlite: read-only: cannot write the store: Permission denied");
  // A read-only store is read, by the commands that only read.
  auto r = run_unprivileged(dir_, "export w/run.sqlite");
  EXPECT_EQ(r.err.find("readonly"), std::string::npos) << r.err;
}

// A store with a write-ahead log (its writer running or killed) in a directory the reader may
// not write: SQLite must create the log's index (-shm) beside it.
TEST_F(Permissions, StoreWithALogInANonWritableDirectory) {
  fs::create_directories(dir_ / "ro");
  { store::RunStore st(dir_ / "ro" / "run.sqlite"); }
  write_file(dir_ / "ro" / "run.sqlite-wal", "");
  for (const char* f : {"run.sqlite", "run.sqlite-wal"})
    fs::permissions(dir_ / "ro" / f,
                    fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  read_only_dir("ro");
  expect_one_line(
      run_unprivileged(dir_, "report ro/run.sqlite -o out.html"),
      "ro/run.sqlite: cannot read: the store has a write-ahead log, run.sqlite-wal, that reading "
      "must index beside it, and its directory is not writable (a writer is running or was "
      "killed: let it finish, or open the store once with write access)");
}

}  // namespace
}  // namespace ragform::testing
