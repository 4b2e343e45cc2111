// The engine commands through the real binary: JSON shapes, exact bytes, errors and exit codes.
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {
using nlohmann::json;
using ragform::testing::run_ragform;

std::string model() {
  return "-m '" + ragform::testing::shared_path("fixtures/models/stories260K.gguf").string() + "'";
}

TEST(EngineCommands, GenerateJsonHoldsTheContinuationOnly) {
  auto r = run_ragform("generate " + model() + " -p 'Lily and Tom went to the park' -n 5 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["text"], ". They saw a big");
  EXPECT_EQ(j["ids"].size(), 5u);
  EXPECT_EQ(j["finish_reason"], "length");
}

TEST(EngineCommands, AttentionJsonHasHeadsMeanAndAbs) {
  auto r = run_ragform("attention " + model() + " -p 'Once upon a time' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["layer"], 4);
  EXPECT_EQ(j["query_position"], 4);
  EXPECT_EQ(j["heads"].size(), 8u);
  EXPECT_EQ(j["mean"].size(), 5u);
  double s = 0;
  for (auto& w : j["mean"]) s += w.get<double>();
  EXPECT_NEAR(s, 1.0, 1e-5);
  EXPECT_GE(j["abs"].get<double>(), 0.0);
  EXPECT_LE(j["abs"].get<double>(), 1.0);
}

TEST(EngineCommands, ScoreAndLogitsFiles) {
  auto r = run_ragform("score " + model() + " -p 'Once upon a time' -c ' there was' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["tokens"].size(), 2u);
  auto dir = ragform::testing::temp_dir("logits");
  auto out = (dir / "l.f32").string();
  auto prompt = ragform::testing::shared_path("fixtures/ref/inputs/p1.txt").string();
  r = run_ragform("logits " + model() + " --file '" + prompt + "' --positions all -o '" + out +
                  "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string ours = ragform::testing::read_file(out);
  std::string ref = ragform::testing::read_file(
      ragform::testing::shared_path("fixtures/ref/stories260K/p1/logits_all.f32"));
  ASSERT_EQ(ours.size(), ref.size());
  float maxd = 0;
  for (size_t i = 0; i < ref.size() / 4; ++i) {
    float a, b;
    std::memcpy(&a, ours.data() + 4 * i, 4);
    std::memcpy(&b, ref.data() + 4 * i, 4);
    maxd = std::max(maxd, std::fabs(a - b));
  }
  EXPECT_LE(maxd, 1e-3f);
}

TEST(EngineCommands, ErrorsAreOneLineWithExitCodes) {
  auto r = run_ragform("generate -m /nonexistent.gguf -p hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ragform: /nonexistent.gguf: No such file or directory\n");
  r = run_ragform("generate " + model());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing prompt"), std::string::npos);
  r = run_ragform("generate " + model() + " -p hi --kv q4");
  EXPECT_EQ(r.exit_code, 2);
  r = run_ragform("attention " + model() + " -p hi --layer 9");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("layer 9 is outside 0..4"), std::string::npos) << r.err;
}

// The demo itself is covered by tests/report/demo_fixture_test.cpp.

}  // namespace

namespace {
TEST(EngineCommands, BenchJsonIsOneArrayWithMedians) {
  auto r = run_ragform("bench " + model() + " --pp 32 --tg 4 -r 3 --taps attention --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["test"], "pp32");
  EXPECT_EQ(j[1]["test"], "pp32+attn");
  EXPECT_EQ(j[2]["test"], "tg4");
  for (auto& t : j) {
    EXPECT_LE(t["t_s_min"].get<double>(), t["t_s_median"].get<double>());
    EXPECT_LE(t["t_s_median"].get<double>(), t["t_s_max"].get<double>());
    EXPECT_GT(t["t_s_min"].get<double>(), 0.0);
  }
}
}  // namespace
