#include "support/test_support.h"

#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

namespace ragform::testing {
namespace fs = std::filesystem;

fs::path shared_dir() {
  if (const char* env = std::getenv("RAGFORM_SHARED"); env && *env) return fs::path(env);
  return fs::path(RAGFORM_SHARED_DIR);
}

fs::path shared_path(const std::string& rel) { return shared_dir() / rel; }

namespace {
// The directories temp_dir made in this process. They are removed when every test of the process
// passed (ctest runs one test per process): a full CI run left ~1.5 GB behind per preset and filled
// the CI machine's disk. A failed test keeps its files to be read; RAGFORM_KEEP_TEST_TMP=1 keeps
// all. Removed at the program's end, not the test's: some tests cache a model in a function-local
// static that later tests of the same process reuse.
std::mutex made_mutex;  // run_ragform (and so temp_dir) is called from tests' threads
std::vector<fs::path>& made_dirs() {
  static std::vector<fs::path> dirs;
  return dirs;
}

class RemoveTempDirsOnPass : public ::testing::EmptyTestEventListener {
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    const char* keep = std::getenv("RAGFORM_KEEP_TEST_TMP");
    if (!unit.Passed() || (keep && *keep && std::string(keep) != "0")) return;
    std::lock_guard lock(made_mutex);
    for (const auto& d : made_dirs()) {
      std::error_code ec;  // a directory a test removed itself, or one still busy: left as is
      fs::remove_all(d, ec);
    }
  }
};

[[maybe_unused]] const bool kRemoverInstalled = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new RemoveTempDirsOnPass);
  return true;
}();
}  // namespace

fs::path temp_dir(const std::string& tag) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = tag;
  if (info) name += std::string("-") + info->test_suite_name() + "-" + info->name();
  for (auto& c : name)
    if (c == '/') c = '_';
  fs::path p = fs::path(RAGFORM_BINARY_DIR) / "test-tmp" / (name + "-" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  std::lock_guard lock(made_mutex);
  made_dirs().push_back(p);
  return p;
}

fs::path ragform_bin() {
  if (const char* env = std::getenv("RAGFORM_BIN"); env && *env) return fs::path(env);
  return fs::path(RAGFORM_BINARY_DIR) / "bin" / "ragform";
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

RunResult run_ragform(const std::string& args, const std::string& stdin_text) {
  fs::path dir = temp_dir("run");
  fs::path in = dir / "stdin", out = dir / "stdout", err = dir / "stderr";
  write_file(in, stdin_text);
  std::string cmd = "'" + ragform_bin().string() + "' " + args + " <'" + in.string() + "' >'" +
                    out.string() + "' 2>'" + err.string() + "'";
  int status = std::system(cmd.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(nlohmann::json::parse(l));
  return out;
}

std::filesystem::path python_module() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(RAGFORM_BINARY_DIR) / "python";
  if (!fs::is_directory(dir)) return {};
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("_ragform", 0) == 0 && e.path().extension() == ".so")
      return e.path();
  return {};
}

RunResult run_python(const std::string& tag, const std::filesystem::path& module,
                     const std::string& script, const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  const fs::path dir = temp_dir(tag);
  fs::create_directories(dir / "ragform");
  // The package's .py files, its subpackages (ragform.readers) included.
  const fs::path pkg = fs::path(RAGFORM_SOURCE_DIR) / "python" / "ragform";
  for (const auto& e : fs::recursive_directory_iterator(pkg))
    if (e.path().extension() == ".py") {
      const fs::path to = dir / "ragform" / fs::relative(e.path(), pkg);
      fs::create_directories(to.parent_path());
      fs::copy_file(e.path(), to);
    }
  fs::copy_file(module, dir / "ragform" / module.filename());
  write_file(dir / "script.py", script);
  std::string cmd =
      "cd " + quoted(dir) + " && PYTHONPATH=" + quoted(dir) + " /usr/bin/python3 script.py";
  for (const auto& a : args) cmd += " " + quoted(fs::path(a));
  RunResult r;
  const fs::path err = dir / "stderr";
  FILE* p = popen(("(" + cmd + ") 2>" + quoted(err)).c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = read_file(err);
  return r;
}

}  // namespace ragform::testing
