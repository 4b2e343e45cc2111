// `ragform bench --parallel LIST` through the real binary on a random-weight model: the JSON
// entries (their keys, order and types), that N sequences are prefilled and then decode exactly T
// tokens each in T passes of N tokens, the packing of long prompts into passes of at most 2048
// tokens, and the usage errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_support.h"

namespace {
using json = nlohmann::ordered_json;
using ragform::testing::quoted;
using ragform::testing::run_ragform;

// One tiny random-weight model per test binary (a second of work, shared by the tests).
const std::string& tiny_model() {
  static const std::string path = [] {
    const auto dir = ragform::testing::temp_dir("bench_parallel");
    const auto out = dir / "tiny-q8_0.gguf";
    auto r = run_ragform("make-test-model --shape tiny --type q8_0 -o " + quoted(out));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out.string();
  }();
  return path;
}

json bench_json(const std::string& args) {
  auto r = run_ragform("bench -m '" + tiny_model() + "' --json " + args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

std::vector<std::string> keys_of(const json& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
  return out;
}

TEST(BenchParallel, EntriesCarryNAndAggregateTokensPerSecond) {
  const json arr = bench_json("--pp 8 --tg 5 --parallel 1,4 -r 2 -t 2");
  ASSERT_TRUE(arr.is_array());
  ASSERT_EQ(arr.size(), 4u) << arr.dump();
  const std::vector<std::string> keys = {"test",   "parallel", "n_prompt",   "n_gen",   "tokens",
                                         "passes", "threads",  "t_s_median", "t_s_min", "t_s_max"};
  const std::vector<std::pair<std::string, int>> want = {
      {"pp8", 1}, {"tg5", 1}, {"pp8", 4}, {"tg5", 4}};
  for (size_t i = 0; i < arr.size(); ++i) {
    const json& e = arr[i];
    EXPECT_EQ(keys_of(e), keys) << e.dump();
    EXPECT_EQ(e["test"], want[i].first);
    EXPECT_EQ(e["parallel"], want[i].second);
    EXPECT_EQ(e["threads"], 2);
    EXPECT_EQ(e["n_prompt"], 8);
    for (const char* k : {"parallel", "n_prompt", "n_gen", "tokens", "passes", "threads"})
      EXPECT_TRUE(e[k].is_number_integer()) << k << " in " << e.dump();
    for (const char* k : {"t_s_median", "t_s_min", "t_s_max"})
      EXPECT_TRUE(e[k].is_number()) << k << " in " << e.dump();
    EXPECT_GT(e["t_s_min"].get<double>(), 0.0);
    EXPECT_LE(e["t_s_min"].get<double>(), e["t_s_median"].get<double>());
    EXPECT_LE(e["t_s_median"].get<double>(), e["t_s_max"].get<double>());
  }
  // Prefill: the N prompts of 8 tokens in one pass; decode: 5 passes, one token per sequence.
  EXPECT_EQ(arr[2]["n_gen"], 0);
  EXPECT_EQ(arr[2]["tokens"], 4 * 8);
  EXPECT_EQ(arr[2]["passes"], 1);
  EXPECT_EQ(arr[3]["n_gen"], 5);
  EXPECT_EQ(arr[3]["tokens"], 4 * 5);
  EXPECT_EQ(arr[3]["passes"], 5);
  EXPECT_EQ(arr[1]["tokens"], 5);
}

TEST(BenchParallel, EverySequenceDecodesTTokensAfterItsPrefill) {
  // 3 x 700 prompt tokens: two passes (2048 + 52); each of the 3 then takes 6 and 2 tokens (a tg
  // entry per T). The context holds prompt + T positions per sequence: 706 > the model's 512.
  auto r =
      run_ragform("bench -m '" + tiny_model() + "' --json --pp 700 --tg 6,2 --parallel 3 -r 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("context of 706 tokens"), std::string::npos) << r.err;
  const json arr = json::parse(r.out);
  ASSERT_EQ(arr.size(), 3u) << arr.dump();
  EXPECT_EQ(arr[0]["test"], "pp700");
  EXPECT_EQ(arr[0]["tokens"], 3 * 700);
  EXPECT_EQ(arr[0]["passes"], 2);
  EXPECT_EQ(arr[1]["test"], "tg6");
  EXPECT_EQ(arr[1]["tokens"], 3 * 6);
  EXPECT_EQ(arr[1]["passes"], 6);
  EXPECT_EQ(arr[2]["test"], "tg2");
  EXPECT_EQ(arr[2]["tokens"], 3 * 2);
  EXPECT_EQ(arr[2]["n_prompt"], 700);
  // --pp 0: a one-token prompt each (untimed, no pp entry), then the decode.
  const json tg_only = bench_json("--pp 0 --tg 3 --parallel 16 -r 1");
  ASSERT_EQ(tg_only.size(), 1u) << tg_only.dump();
  EXPECT_EQ(tg_only[0]["test"], "tg3");
  EXPECT_EQ(tg_only[0]["parallel"], 16);
  EXPECT_EQ(tg_only[0]["tokens"], 16 * 3);
  EXPECT_EQ(tg_only[0]["passes"], 3);
}

TEST(BenchParallel, WithoutItTheEntriesAreUnchanged) {
  const json arr = bench_json("--pp 4 --tg 2 -r 1");
  ASSERT_EQ(arr.size(), 2u);
  EXPECT_EQ(keys_of(arr[0]),
            (std::vector<std::string>{"test", "threads", "t_s_median", "t_s_min", "t_s_max"}));
}

std::vector<std::string> fields(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string f; in >> f;) out.push_back(f);
  return out;
}

TEST(BenchParallel, TableNamesTheColumns) {
  auto r = run_ragform("bench -m '" + tiny_model() + "' --pp 4 --tg 2 --parallel 2 -r 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header, pp, tg;
  std::getline(lines, header);
  std::getline(lines, pp);
  std::getline(lines, tg);
  EXPECT_EQ(fields(header).at(1), "parallel") << r.out;
  EXPECT_EQ(fields(header).at(2), "n_prompt") << r.out;
  EXPECT_EQ(fields(header).at(3), "n_gen") << r.out;
  const auto t = fields(tg);
  ASSERT_GE(t.size(), 4u) << r.out;
  EXPECT_EQ(t[0], "tg2");
  EXPECT_EQ(t[1], "2");  // parallel
  EXPECT_EQ(t[2], "4");  // n_prompt
  EXPECT_EQ(t[3], "2");  // n_gen
}

TEST(BenchParallel, BadListsAreUsageErrors) {
  const std::string m = "bench -m '" + tiny_model() + "' --pp 4 --tg 2 -r 1 ";
  auto zero = run_ragform(m + "--parallel 0");
  EXPECT_EQ(zero.exit_code, 2) << zero.err;
  EXPECT_NE(zero.err.find("--parallel"), std::string::npos) << zero.err;
  auto word = run_ragform(m + "--parallel four");
  EXPECT_EQ(word.exit_code, 2) << word.err;
  auto tap = run_ragform(m + "--parallel 2 --taps attention");
  EXPECT_EQ(tap.exit_code, 2) << tap.err;
  EXPECT_NE(tap.err.find("--taps"), std::string::npos) << tap.err;
}

}  // namespace
