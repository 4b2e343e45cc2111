// `ragform spotlight eval --generate --store` (issue 43): the recall rows and one answer row per
// question and variant go to the run store, the EM/F1 lines carry bootstrap intervals, prompt
// tokens and generation time, a second call resumes and generates nothing, `ragform export`
// reads the answer rows; `--store` with `--sweeps` is refused.
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

namespace rt = ragform::testing;
using nlohmann::json;

std::vector<json> json_lines(const std::string& out) {
  std::vector<json> v;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) v.push_back(json::parse(line));
  return v;
}

TEST(SpotlightGenerateStoreCli, StoresAnswersPerVariantAndResumes) {
  REQUIRE_SHARED(dev, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  const auto dir = rt::temp_dir("spotlight-generate-store");
  const std::string store = (dir / "s.sqlite").string();
  const std::string cmd = "spotlight eval --input " + rt::quoted(dev) + " --vectors " +
                          rt::quoted(glove) + " --limit 3 --generate -m " + rt::quoted(model) +
                          " -n 6 --store " + rt::quoted(store) + " --json";
  const auto first = rt::run_ragform(cmd);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::set<std::string> variants;
  for (const json& j : json_lines(first.out)) {
    if (j["kind"] != "answer") continue;
    variants.insert(j["variant"].get<std::string>());
    EXPECT_EQ(j["questions"], 3);
    EXPECT_GT(j["prompt_tokens"].get<long long>(), 3 * 20);
    EXPECT_GE(j["generate_seconds"].get<double>(), 0.0);
    ASSERT_EQ(j["em_ci95"].size(), 2u);
    ASSERT_EQ(j["f1_ci95"].size(), 2u);
    EXPECT_LE(j["em_ci95"][0].get<double>(), j["em"].get<double>());
    EXPECT_GE(j["f1_ci95"][1].get<double>(), j["f1"].get<double>());
  }
  EXPECT_EQ(variants, (std::set<std::string>{"spotlight", "spotlight-no-tokens"}));

  // Resumed: nothing written, nothing generated, the same answer lines.
  const auto again = rt::run_ragform(cmd);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("0 rows written, 15 reused"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("spotlight generate: resuming run 2: 6 of 6 answers already stored"),
            std::string::npos)
      << again.err;
  EXPECT_NE(again.err.find("prefill: computed 0 of 0 prompt tokens"), std::string::npos)
      << again.err;
  auto answers = [](const std::string& out) {
    std::vector<json> v;
    for (const json& j : json_lines(out))
      if (j["kind"] == "answer") v.push_back(j);
    return v;
  };
  EXPECT_EQ(answers(again.out), answers(first.out));

  // The answer rows, as export reads them: prompt tokens, the generation time, EM/F1.
  const auto ex = rt::run_ragform("export " + rt::quoted(store) + " --format jsonl");
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  size_t answer_rows = 0;
  for (const json& j : json_lines(ex.out)) {
    if (j.value("variant", "") != "spotlight" && j.value("variant", "") != "spotlight-no-tokens")
      continue;
    if (!j.contains("scores") || !j["scores"].contains("f1")) continue;
    ++answer_rows;
    EXPECT_GT(j["prompt_tokens"].get<long long>(), 20) << j.dump();
    EXPECT_TRUE(j["timings_ms"].contains("total")) << j.dump();
  }
  EXPECT_EQ(answer_rows, 6u) << ex.out;
}

TEST(SpotlightGenerateStoreCli, StoreWithSweepsIsRefused) {
  REQUIRE_SHARED(dev, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  const auto dir = rt::temp_dir("spotlight-generate-store-sweeps");
  const auto r = rt::run_ragform("spotlight eval --input " + rt::quoted(dev) + " --vectors " +
                                 rt::quoted(glove) + " --limit 2 --sweeps --store " +
                                 rt::quoted(dir / "s.sqlite"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--store: stores the main comparison and its answers: leave out --sweeps"),
            std::string::npos)
      << r.err;
}

}  // namespace
