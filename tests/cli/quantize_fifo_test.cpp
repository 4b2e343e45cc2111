// `ragform quantize IN OUT` with IN a FIFO (issue 40): refused at once as not a regular file,
// where it used to block for ever opening the FIFO for reading. Run under `timeout 10`, so the
// test ends either way (exit 124 when it hangs).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace {
namespace fs = std::filesystem;
using ragform::testing::quoted;

TEST(QuantizeFifo, AFifoInputIsRefusedNotWaitedOn) {
  const fs::path dir = ragform::testing::temp_dir("quantize-fifo");
  const fs::path fifo = dir / "in.gguf", err = dir / "stderr";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& rest : {quoted(dir / "out.gguf"), std::string("--dry-run")}) {
    const std::string cmd = "timeout 10 " + quoted(ragform::testing::ragform_bin()) + " quantize " +
                            quoted(fifo) + " " + rest + " --type q8_0 </dev/null" +
                            " >/dev/null 2>" + quoted(err);
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status));
    const int code = WEXITSTATUS(status);
    const std::string text = ragform::testing::read_file(err);
    EXPECT_NE(code, 124) << "quantize waited on the FIFO: " << rest;
    EXPECT_NE(code, 0) << text;
    EXPECT_NE(text.find("not a regular file"), std::string::npos) << text;
    EXPECT_NE(text.find(fifo.string()), std::string::npos) << text;
    EXPECT_FALSE(fs::exists(dir / "out.gguf"));
  }
}

}  // namespace
