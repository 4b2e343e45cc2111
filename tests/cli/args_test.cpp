#include "cli/args.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace ragform::cli {

TEST(Args, ParsesDeclaredFlagsWithDefaults) {
  Args a("x", "test");
  auto& m = a.opt<std::string>("-m,--model", "FILE", "model").required();
  auto& n = a.opt<int>("-n", "N", "count", 32);
  auto& t = a.opt<double>("--temp", "T", "temperature", 0.8);
  auto& j = a.flag("--json", "json");
  auto& p = a.positional("INPUT", "input", false);
  ASSERT_TRUE(a.parse({"--model=a.gguf", "-n", "-5", "--json", "in.txt"}));
  EXPECT_EQ(m.value, "a.gguf");
  EXPECT_EQ(n.value, -5);
  EXPECT_DOUBLE_EQ(t.value, 0.8);
  EXPECT_TRUE(j.value);
  EXPECT_EQ(p.value.value(), "in.txt");
}

TEST(Args, BadInputIsAUsageError) {
  auto make = [] {
    auto a = std::make_unique<Args>("x", "test");
    a->opt<std::string>("-m", "FILE", "model").required();
    a->opt<int>("-n", "N", "count", 1);
    return a;
  };
  EXPECT_THROW(make()->parse({"-n", "3"}), UsageError);             // missing required
  EXPECT_THROW(make()->parse({"-m", "a", "-n", "x"}), UsageError);  // not a number
  EXPECT_THROW(make()->parse({"-m", "a", "--bogus"}), UsageError);  // unknown flag
  EXPECT_THROW(make()->parse({"-m"}), UsageError);                  // missing value
  EXPECT_THROW(make()->parse({"-m", "a", "extra"}), UsageError);    // unexpected positional
}

TEST(Args, HelpListsEveryFlagWithDefault) {
  Args a("gen", "Generate text.");
  a.opt<int>("-n", "N", "tokens to generate", 32);
  std::string h = a.help_text();
  EXPECT_NE(h.find("usage: ragform gen"), std::string::npos);
  EXPECT_NE(h.find("tokens to generate [default: 32]"), std::string::npos);
}

}  // namespace ragform::cli
