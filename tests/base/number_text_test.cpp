// base/number_text.h: the one grammar of a written number (issue 40, item 13).
#include "base/number_text.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/runtime/steering.h"

namespace {

using namespace ragform;

TEST(NumberText, DecimalGrammarOnly) {
  for (const char* ok : {"0", "-1", "+2", "0.5", ".5", "5.", "1e3", "1E-3", "-2.5e+2"})
    EXPECT_TRUE(is_decimal_number(ok)) << ok;
  for (const char* bad :
       {"", " 1", "1 ", "0x10", "0X1p3", "inf", "nan", "1e", "e3", ".", "-", "1,5", "1e3.5", "--1"})
    EXPECT_FALSE(is_decimal_number(bad)) << bad;
  EXPECT_EQ(parse_decimal("2.5e1"), 25.0);
  EXPECT_FALSE(parse_decimal("1e999"));       // overflows a double
  EXPECT_TRUE(parse_decimal("1e39"));         // a double,
  EXPECT_FALSE(parse_decimal_float("1e39"));  // not a float
  EXPECT_EQ(parse_decimal_float("-3.5"), -3.5f);
  EXPECT_TRUE(is_non_finite_word("-Infinity"));
  EXPECT_FALSE(is_non_finite_word("infinite"));
}

std::string rule_error(const std::string& rule) {
  runtime::SteeringSpec s;
  try {
    runtime::parse_steer_rule(rule, s, "steer");
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// rescale:1e39 was parsed and failed later as "non-finite logits"; rescale:0x10 was accepted.
TEST(NumberText, SteeringRulesUseTheGrammar) {
  EXPECT_EQ(rule_error("rescale:2"), "");
  EXPECT_EQ(rule_error("reallocate:0.25,0.5"), "");
  for (const char* bad : {"rescale:1e39", "rescale:0x10", "rescale: 2", "rescale:inf",
                          "reallocate:0x0.8", "reallocate:0.5,1e40"})
    EXPECT_NE(rule_error(bad).find("is not a finite number"), std::string::npos) << bad;
}

}  // namespace
