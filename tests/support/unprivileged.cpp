#include "support/unprivileged.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

namespace ragform::testing {

namespace fs = std::filesystem;

namespace {

std::string drop_prefix() {
  return geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
}

// True when the unprivileged user can execute `bin` (every folder above it searchable).
bool can_run(const fs::path& bin) {
  const std::string cmd = drop_prefix() + quoted(bin) + " --version >/dev/null 2>&1 </dev/null";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

UnprivilegedWorld::UnprivilegedWorld(const std::string& tag) {
  if (geteuid() == 0 && std::system("setpriv --version >/dev/null 2>&1") != 0) {
    why_ = "running as root without setpriv: cannot drop privileges";
    return;
  }
  std::string name = tag;
  if (const auto* info = ::testing::UnitTest::GetInstance()->current_test_info())
    name += std::string("-") + info->test_suite_name() + "-" + info->name();
  for (auto& c : name)
    if (c == '/') c = '_';
  dir_ = fs::temp_directory_path() / ("ragform-unpriv-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  fs::permissions(dir_, fs::perms::all);
  bin_ = ragform_bin();
  if (can_run(bin_)) return;
  // The build tree is out of the user's reach: run a copy from the world-searchable folder.
  const fs::path copy = dir_ / ".bin" / "ragform";
  fs::create_directories(copy.parent_path());
  fs::permissions(copy.parent_path(), fs::perms::all);
  fs::copy_file(bin_, copy, fs::copy_options::overwrite_existing);
  fs::permissions(copy, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                            fs::perms::others_read | fs::perms::others_exec);
  bin_ = copy;
  if (!can_run(bin_))
    why_ = "uid 65534 cannot run " + ragform_bin().string() + " nor a copy in " + dir_.string();
}

UnprivilegedWorld::~UnprivilegedWorld() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
  for (auto it = fs::recursive_directory_iterator(
           dir_, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(dir_, ec);
}

RunResult UnprivilegedWorld::run(const std::string& args, const fs::path& cwd) const {
  const fs::path io = dir_ / ".io";
  fs::create_directories(io);
  fs::permissions(io, fs::perms::all);
  const fs::path out = io / "out", err = io / "err";
  fs::remove(out);
  fs::remove(err);
  const std::string cmd = "cd " + quoted(cwd.empty() ? dir_ : cwd) + " && " + drop_prefix() +
                          quoted(bin_) + " " + args + " </dev/null >" + quoted(out) + " 2>" +
                          quoted(err);
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

}  // namespace ragform::testing
