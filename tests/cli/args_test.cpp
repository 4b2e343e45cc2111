#include "cli/args.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "base/error.h"

namespace ragform::cli {

TEST(Args, ParsesDeclaredFlagsWithDefaults) {
  Args a("x", "test");
  auto& m = a.opt<std::string>("-m,--model", "FILE", "model").required();
  auto& n = a.opt<int>("-n", "N", "count", 32).range(kAnyInt, kMaxInt);
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

// Issue 24 defect 3: non-finite and out-of-range numbers were accepted (--temp nan gave garbage
// text, --temp -1 silently meant greedy, --lambda nan nulled every score).
std::string usage_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

TEST(Args, NonFiniteNumbersAreRefusedNamingTheFlag) {
  for (const char* bad : {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e999", "-1e999"}) {
    Args a("x", "test");
    a.opt<double>("--temp", "T", "temperature", 0.1).range(-1e9, 1e9);
    std::string msg = usage_message([&] { a.parse({"--temp", bad}); });
    EXPECT_EQ(msg, std::string("--temp: expected a finite number, got '") + bad + "'") << bad;
  }
  Args a("x", "test");
  a.opt<double>("--top-p", "P", "nucleus mass", 1.0).range(0.0, 1.0);
  EXPECT_EQ(usage_message([&] { a.parse({"--top-p=nan"}); }),
            "--top-p: expected a finite number, got 'nan'");
}

// Issue 40, item 13: one decimal grammar, so a float flag refuses hex as integer flags do.
TEST(Args, HexAndSpacedNumbersAreRefused) {
  for (const char* bad : {"0x10", "0x1p3", " 2", "2 ", "1e"}) {
    Args a("x", "test");
    a.opt<double>("--temp", "T", "temperature", 0.1).range(-1e9, 1e9);
    EXPECT_EQ(usage_message([&] {
                a.parse({"--temp", bad});
              }),
              std::string("--temp: expected a number, got '") + bad + "'")
        << bad;
  }
}

TEST(Args, NumbersOutsideTheDeclaredRangeAreRefused) {
  auto make = [] {
    auto a = std::make_unique<Args>("x", "test");
    a->opt<double>("--temp", "T", "temperature", 0.1);  // default range: 0 or more
    a->opt<double>("--lambda", "W", "weight", 0.5).range(0.0, 1.0);
    a->opt<int>("-n", "N", "count", 16);
    a->opt<int>("--limit", "N", "limit", 0);
    a->opt<long long>("--seed", "S", "seed", 0);
    a->opt<int>("--samples", "N", "samples", 10).range(1, kMaxInt);
    return a;
  };
  EXPECT_EQ(usage_message([&] {
              make()->parse({"--temp", "-1"});
            }),
            "--temp: value out of range: -1 (accepted: 0 or more)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"--lambda", "1.5"});
            }),
            "--lambda: value too large: 1.5 (largest accepted: 1)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"-n", "-5"});
            }),
            "-n: value out of range: -5 (accepted: 0 or more)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"--limit", "-1"});
            }),
            "--limit: value out of range: -1 (accepted: 0 or more)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"--seed", "-3"});
            }),
            "--seed: value out of range: -3 (accepted: 0 or more)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"--samples", "0"});
            }),
            "--samples: value out of range: 0 (accepted: 1 or more)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"-n", "99999999999"});
            }),
            "-n: value too large: 99999999999 (largest accepted: 2147483647)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"-n", " 5"});
            }),
            "-n: expected an integer, got ' 5'");
  // A value too large for the type (even for strtoll) names the largest one accepted, for every
  // integer type; a value too far below stays out of the "0 or more" range.
  EXPECT_EQ(usage_message([&] {
              make()->parse({"-n", "99999999999999999999"});
            }),
            "-n: value too large: 99999999999999999999 (largest accepted: 2147483647)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"--seed", "99999999999999999999"});
            }),
            "--seed: value too large: 99999999999999999999 (largest accepted: "
            "9223372036854775807)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"--samples", "2147483648"});
            }),
            "--samples: value too large: 2147483648 (largest accepted: 2147483647)");
  EXPECT_EQ(usage_message([&] {
              make()->parse({"-n", "-99999999999999999999"});
            }),
            "-n: value out of range: -99999999999999999999 (accepted: 0 or more)");
  // The ends of a range are accepted.
  auto a = make();
  ASSERT_TRUE(a->parse({"--lambda", "1", "--temp", "0", "--samples", "1"}));
}

TEST(Args, ListsFollowTheSameRule) {
  EXPECT_EQ(parse_int_list("--pp", "1,2,3"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(usage_message([] { parse_int_list("--pp", "512,-5"); }),
            "--pp: value out of range: -5 (accepted: 0 or more)");
  EXPECT_EQ(usage_message([] { parse_int_list("--pp", "512,99999999999999999999"); }),
            "--pp: value too large: 99999999999999999999 (largest accepted: 2147483647)");
  EXPECT_EQ(parse_number_list("--p-grid", "0,0.5,1", 0, 1), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(usage_message([] { parse_number_list("--p-grid", "0.5,nan", 0, 1); }),
            "--p-grid: expected a finite number, got 'nan'");
}

TEST(Args, ThreadCapIsFourTimesTheCores) {
  EXPECT_EQ(max_threads(), 4 * int(std::max(1u, std::thread::hardware_concurrency())));
}

TEST(Args, HelpListsEveryFlagWithDefault) {
  Args a("gen", "Generate text.");
  a.opt<int>("-n", "N", "tokens to generate", 32);
  std::string h = a.help_text();
  EXPECT_NE(h.find("usage: ragform gen"), std::string::npos);
  EXPECT_NE(h.find("tokens to generate [default: 32]"), std::string::npos);
}

}  // namespace ragform::cli
