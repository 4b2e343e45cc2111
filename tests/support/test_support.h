// Helpers shared by the tests: where ../shared is, temporary directories, running the CLI.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ragform::testing {

// The ../shared folder ($RAGFORM_SHARED, else the one recorded at configure time).
std::filesystem::path shared_dir();
// A file under ../shared (the path only; it may not exist). A test that needs the file uses the
// REQUIRE_SHARED macro below, which FAILS the test when it is missing: CI always has ../shared.
std::filesystem::path shared_path(const std::string& rel);
// A fresh, empty directory under the build tree, unique to this test. Removed when the process
// ends with every test passed (kept after a failure, or with RAGFORM_KEEP_TEST_TMP=1).
std::filesystem::path temp_dir(const std::string& tag);
// Path of the built `ragform` binary.
std::filesystem::path ragform_bin();

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs `ragform <args>` through /bin/sh (args are passed verbatim: quote them yourself).
RunResult run_ragform(const std::string& args, const std::string& stdin_text = "");
// `p` in single quotes, for the command lines of run_ragform (test paths hold no quote).
std::string quoted(const std::filesystem::path& p);
// The non-empty lines of `text` (a command's stdout, a JSONL file), each parsed as JSON.
std::vector<nlohmann::json> json_lines(const std::string& text);

// The Python module built in this tree (<build>/python/_ragform*.so), or "" when there is none.
std::filesystem::path python_module();
// Runs the Python source `script` with Debian's /usr/bin/python3 in a fresh directory that holds
// this checkout's package (python/ragform's .py files, subpackages too) with `module` beside it, so
// `import ragform` is this tree's; `args` are passed quoted. For tests that compare a front end's
// bytes with Python's.
RunResult run_python(const std::string& tag, const std::filesystem::path& module,
                     const std::string& script, const std::vector<std::string>& args);

std::string read_file(const std::filesystem::path& p);
void write_file(const std::filesystem::path& p, const std::string& bytes);

}  // namespace ragform::testing

// Fails the test (not skips) when a shared file is missing: CI always has ../shared beside it.
#define REQUIRE_SHARED(var, rel)                                          \
  const std::filesystem::path var = ::ragform::testing::shared_path(rel); \
  ASSERT_TRUE(std::filesystem::exists(var)) << "missing shared file: " << var.string()
