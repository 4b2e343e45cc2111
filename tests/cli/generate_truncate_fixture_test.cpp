// `generate --truncate left`: a prompt longer than the context keeps BOS and its end, cut so the
// -n tokens to generate still fit; -n that leaves no room for the prompt is an error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {
using nlohmann::json;
using ragform::testing::run_ragform;

std::string long_prompt_file(const std::filesystem::path& dir) {
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "Once upon a time there was a girl. ";
  const auto path = dir / "long.txt";
  ragform::testing::write_file(path, prompt);
  return path.string();
}

TEST(GenerateTruncate, LeftKeepsRoomForTheTokensToGenerate) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const std::string file = long_prompt_file(ragform::testing::temp_dir("gen_truncate"));
  const std::string base = "generate -m '" + model.string() + "' --file '" + file +
                           "' --ctx 64 --truncate left --ignore-eos --json";
  auto r = run_ragform(base + " -n 10");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["prompt_tokens"], 54);  // BOS + the last 53 tokens: 64 - 10
  EXPECT_EQ(j["ids"].size(), 10u);
  EXPECT_EQ(j["finish_reason"], "length");

  // The prompt is longer than the context (BOS included).
  auto tok =
      run_ragform("tokenize -m '" + model.string() + "' --file '" + file + "' --no-special --json");
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  const auto all = json::parse(tok.out)["ids"].get<std::vector<int>>();
  ASSERT_GT(all.size(), 64u);

  // -n as large as the context leaves no room for the prompt.
  auto e = run_ragform(base + " -n 64");
  EXPECT_EQ(e.exit_code, 1) << e.err;
  EXPECT_NE(e.err.find("no room for the prompt"), std::string::npos) << e.err;
  EXPECT_EQ(e.err.find('\n'), e.err.size() - 1) << e.err;  // one line
}

TEST(GenerateTruncate, APromptThatFitsWithItsTokensIsKeptWhole) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto r = run_ragform("generate -m '" + model.string() +
                       "' -p 'Once upon a time' --ctx 64 --truncate left -n 5 --ignore-eos --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  auto tok = run_ragform("tokenize -m '" + model.string() + "' --text 'Once upon a time' --json");
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(j["prompt_tokens"], json::parse(tok.out)["ids"].size());
  EXPECT_EQ(j["ids"].size(), 5u);
}

}  // namespace
