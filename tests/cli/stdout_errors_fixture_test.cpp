// Issue 40, pass 22: output the CLI could not write out is a failure. `retrieve --json >
// /dev/full`, `generate` with stdout closed and a dozen other verbs exited 0 with nothing written
// (only export and data checked their writes): a script took the lost output for success. Every
// verb's stdout is now flushed and checked once it returns (cli/main.cpp): exit 1 and one line.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

struct Exit {
  int code = -1;
  std::string err;
};

// `ragform args` with stdout sent to `redirect` ("> /dev/full", ">&-").
Exit run_with_stdout(const std::string& args, const std::string& redirect) {
  const fs::path err = temp_dir("stdout_errors") / "stderr";
  const std::string cmd =
      "'" + ragform_bin().string() + "' " + args + " " + redirect + " 2>'" + err.string() + "'";
  const int st = std::system(cmd.c_str());
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, read_file(err)};
}

TEST(StdoutErrors, OutputThatCannotBeWrittenIsExit1) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const std::string m = "-m " + quoted(model);
  for (const std::string& args :
       {std::string("--help"), std::string("version"), "tokenize " + m + " --text hello --json",
        "generate " + m + " -p Once -n 4", "score " + m + " -p Once -c ' upon' --json",
        std::string("serve --openapi")}) {
    for (const std::string& redirect : {std::string("> /dev/full"), std::string(">&-")}) {
      SCOPED_TRACE(args + " " + redirect);
      const Exit e = run_with_stdout(args, redirect);
      EXPECT_EQ(e.code, 1) << e.err;
      EXPECT_NE(e.err.find("ragform: stdout: the output could not be written"), std::string::npos)
          << e.err;
    }
    // Written, it is 0 as before.
    EXPECT_EQ(run_with_stdout(args, "> /dev/null").code, 0) << args;
  }
}

}  // namespace
}  // namespace ragform::testing
