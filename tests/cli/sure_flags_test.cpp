// The flags several `ragform sure` verbs share are declared once (cli/sure_verbs.h): --batch reads
// the same in prepare, perturb, filter and eval, --input the same in filter and eval, and the two
// second readers (perturb's perturber, eval's judge) take their server the same way.
#include <gtest/gtest.h>

#include <string>

#include "support/test_support.h"

using ragform::testing::run_ragform;

namespace {

// The help line of `flag` in `ragform <verb> --help` ("" when it has none).
std::string help_line(const std::string& verb, const std::string& flag) {
  const auto r = run_ragform(verb + " --help");
  const std::string help = r.out + r.err;
  const size_t at = help.find("\n  " + flag + " ");
  if (at == std::string::npos) return "";
  return help.substr(at + 1, help.find('\n', at + 1) - at - 1);
}

}  // namespace

TEST(SureFlags, SharedFlagsReadAlike) {
  const std::string batch = help_line("sure eval", "--batch");
  ASSERT_NE(batch.find("prompts per batched generation"), std::string::npos) << batch;
  for (const char* verb : {"sure prepare", "sure perturb", "sure filter"})
    EXPECT_EQ(help_line(verb, "--batch"), batch) << verb;
  const std::string input = help_line("sure eval", "--input");
  ASSERT_NE(input.find("pairs JSONL ('-' = stdin)"), std::string::npos) << input;
  EXPECT_EQ(help_line("sure filter", "--input"), input);
  // The help after the column padding, the reader's own flag named as <role>.
  auto described = [](std::string line, const std::string& role) {
    line = line.substr(line.find("server of "));
    return line.replace(line.find(role), role.size(), "<role>");
  };
  EXPECT_EQ(described(help_line("sure perturb", "--perturb-base-url"), "--perturb-model"),
            described(help_line("sure eval", "--judge-base-url"), "--judge-model"));
}
