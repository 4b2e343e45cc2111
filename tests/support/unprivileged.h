// Running the CLI as an unprivileged user, for tests of file permissions. As root (who passes every
// permission check) commands run as uid/gid 65534 through setpriv; as anyone else, as that user.
// The checkout may sit under a folder only root can enter (a clone in `mktemp -d`), so neither the
// build tree's temp folders nor its binary are assumed reachable: the tests work in a fresh
// world-searchable folder under the system temp directory, and run a copy of the binary there
// when uid 65534 cannot execute the built one.
#pragma once
#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace ragform::testing {

class UnprivilegedWorld {
 public:
  // A fresh folder (mode 0777) under the system temp directory, named for this test, removed
  // again by the destructor (modes that deny the owner are undone first). ok() is false, with
  // why(), when the test cannot drop privileges (root without setpriv) or uid 65534 can run
  // neither the built binary nor a copy: the caller skips with that reason.
  explicit UnprivilegedWorld(const std::string& tag);
  ~UnprivilegedWorld();
  UnprivilegedWorld(const UnprivilegedWorld&) = delete;
  UnprivilegedWorld& operator=(const UnprivilegedWorld&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  const std::filesystem::path& dir() const { return dir_; }

  // Runs `ragform ARGS` (quoted by the caller) as the unprivileged user in `cwd` (dir() when
  // empty), stdin from /dev/null; stdout and stderr are captured through files in dir().
  RunResult run(const std::string& args, const std::filesystem::path& cwd = {}) const;

 private:
  std::filesystem::path dir_, bin_;
  std::string why_;
};

}  // namespace ragform::testing
