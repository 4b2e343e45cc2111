// A flag's value quoted in its error is cut to a bounded excerpt (issue 40): a 10,000-byte value
// of --positions, --truncate (the encoder's and the generator's) and quantize --type gives a
// message of a few hundred bytes that still names the flag and the value's size.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/test_support.h"

namespace {
namespace fs = std::filesystem;
using ragform::testing::quoted;
using ragform::testing::run_ragform;

void expect_bounded(const std::string& args, const std::string& flag) {
  const auto r = run_ragform(args);
  EXPECT_EQ(r.exit_code, 2) << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 600u) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find(flag), std::string::npos) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find("(10000 bytes)"), std::string::npos) << r.err.substr(0, 300);
}

TEST(MessageBounds, LongFlagValuesAreQuotedAsExcerpts) {
  const std::string longv(10000, 'x');
  const fs::path dir = ragform::testing::temp_dir("message-bounds");
  ragform::testing::write_file(dir / "in.txt", "hello\n");
  ragform::testing::write_file(dir / "bias.json", R"({"curve":[1,1,1],"measure":"mean"})");
  expect_bounded(
      "quantize " + quoted(dir / "in.gguf") + " " + quoted(dir / "out.gguf") + " --type " + longv,
      "--type");
  expect_bounded("embed -m " + quoted(dir / "m.gguf") + " -f " + quoted(dir / "in.txt") +
                     " --truncate " + longv,
                 "--truncate");
  expect_bounded("generate -m " + quoted(dir / "m.gguf") + " -p hi --truncate " + longv,
                 "--truncate");
  expect_bounded("position-bias --task needle --sweep --bias " + quoted(dir / "bias.json") +
                     " --store " + quoted(dir / "s.sqlite") + " -m " + quoted(dir / "m.gguf") +
                     " --positions " + longv,
                 "--positions");
}

}  // namespace
