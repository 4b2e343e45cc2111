// `ragform reproduce`: --list --json holds the papers' main-table numbers; SURE and SpotlightRAG
// run end to end at smoke scale on stories260K and the shared data (seconds), write a report with
// the "Paper vs this run" section and resume from the store; an experiment asked for by name whose
// data is missing is a one-line error naming the data set. C-NORM's smoke run (about 20 s) is in
// reproduce_cli_slow_test.cpp.
#include <gtest/gtest.h>

#include "server/serve_harness.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ragform::testing::quoted;
using ragform::testing::run_ragform;

namespace {

TEST(ReproduceCli, ListJsonHoldsTheMainTables) {
  auto r = run_ragform("reproduce --list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto arr = nlohmann::json::parse(r.out);
  ASSERT_TRUE(arr.is_array());
  ASSERT_GT(arr.size(), 350u);
  auto has = [&](const std::string& paper, const std::string& exp, const std::string& model,
                 const std::string& method, const std::string& metric, double v) {
    for (const auto& e : arr)
      if (e["paper"] == paper && e["experiment"] == exp && e["model"] == model &&
          e["method"] == method && e["metric"] == metric)
        return e["value"].get<double>() == v && e["source"].is_string();
    return false;
  };
  EXPECT_TRUE(has("cnorm", "longbench", "Qwen2.5-1.5B-Instruct", "C-NORM", "accuracy hard", 25.7));
  EXPECT_TRUE(has("cnorm", "kv-retrieval", "LLaMA-2-7B-Chat", "UUID (-)", "OAA", 0.810));
  EXPECT_TRUE(has("cnorm", "alpaca-replacement", "Stanford Alpaca 7B", "Top 10%", "OAA", 0.530));
  EXPECT_TRUE(
      has("sure", "sure-wiki", "Mistral-7B-Instruct-v0.3", "JSON", "Known-Golden RR", 88.53));
  EXPECT_TRUE(
      has("sure", "sig-trivial", "Mistral-7B-Instruct-v0.3", "LLM-as-Judge", "RR Meta", 96.0));
  EXPECT_TRUE(has("spotlight", "triviaqa", "generator (not named)", "SpotlightRAG",
                  "EM (w/ training)", 79.1));
  for (const auto& e : arr)
    for (const char* k : {"paper", "experiment", "model", "method", "metric", "value", "source"})
      ASSERT_TRUE(e.contains(k)) << e.dump();
  // Text listing: one line per number and the experiments.
  r = run_ragform("reproduce --list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kv-retrieval"), std::string::npos);
}

// A number printed with significance stars keeps them, and a cell that is no number (SURE Table
// 11's scheduler) is listed as its text: never "nan" in the text listing, null beside the text in
// JSON.
TEST(ReproduceCli, ListShowsStarsAndTextEntries) {
  auto r = run_ragform("reproduce --list --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto arr = nlohmann::json::parse(r.out);
  size_t starred = 0, text = 0;
  for (const auto& e : arr) {
    ASSERT_TRUE(e.contains("stars") && e.contains("text")) << e.dump();
    if (e["stars"] != "") ++starred;
    if (e["text"] != "") {
      ++text;
      EXPECT_TRUE(e["value"].is_null()) << e.dump();
    } else {
      EXPECT_TRUE(e["value"].is_number()) << e.dump();
    }
  }
  EXPECT_GT(starred, 0u);
  EXPECT_GT(text, 0u);
  r = run_ragform("reproduce --list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("nan"), std::string::npos);
  EXPECT_NE(r.out.find("1.01e-05***"), std::string::npos);
  EXPECT_NE(r.out.find("cosine"), std::string::npos);
}

TEST(ReproduceCli, MissingDataAndBadArguments) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  fs::path dir = ragform::testing::temp_dir("reproduce-cli-errors");
  const std::string common = " -m " + quoted(model) + " --store " + quoted(dir / "x.sqlite") +
                             " -o " + quoted(dir / "x.html");
  auto r = run_ragform("reproduce cnorm --experiment longbench" + common);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("LongBench-v2 is not in the shared data: put it at --data DIR/"),
            std::string::npos)
      << r.err;
  r = run_ragform("reproduce sure --experiment sig-trivial" + common);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("SIG_Trivial"), std::string::npos) << r.err;
  r = run_ragform("reproduce other" + common);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown paper 'other'"), std::string::npos) << r.err;
  r = run_ragform("reproduce cnorm --experiment nope" + common);
  EXPECT_EQ(r.exit_code, 2);
  r = run_ragform("reproduce sure --scale huge" + common);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--scale: expected smoke, study or paper, got 'huge'"), std::string::npos)
      << r.err;
  // The study scale's plan: 8 calibration prompts x 11 candidates, then 40 questions x 10
  // positions x 3 variants, one seed.
  r = run_ragform("reproduce cnorm --experiment nq-sweep --scale study --dry-run" + common);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("nq-sweep: 1288 prompts"), std::string::npos) << r.err;
  r = run_ragform("reproduce sure --paper-model GPT-5" + common);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--paper-model"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "x.html"));
}

TEST(ReproduceCli, SureAndSpotlightSmokeRunsWriteThePaperSection) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  fs::path dir = ragform::testing::temp_dir("reproduce-cli-smoke");
  fs::path db = dir / "run.sqlite", html = dir / "report.html";
  auto r = run_ragform("reproduce sure -m " + quoted(model) + " --scale smoke --store " +
                       quoted(db) + " -o " + quoted(html));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The skipped experiment is named on one line, the work and ETA are printed before the run.
  EXPECT_NE(r.err.find("reproduce: skipped sure sig-trivial: SIG_Trivial"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("reproduce sure sure-wiki: 104 prompts of ~"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ETA"), std::string::npos) << r.err;
  auto lines = ragform::testing::json_lines(r.out);
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(lines[0]["experiment"], "sure-wiki");
  EXPECT_GT(lines[0]["values"].size(), 10u);
  std::string page = ragform::testing::read_file(html);
  EXPECT_NE(page.find("<h2>Paper vs this run</h2>"), std::string::npos);
  EXPECT_NE(page.find("sure · sure-wiki"), std::string::npos);
  // stories260K is none of the paper's models: the paper's value of the same cell as reference
  // (it answers no question closed-book, so every pair is Unknown-Golden: JSON's U-G RR).
  EXPECT_NE(
      page.find("88.920 <span class=\"muted\">(reference: Mistral-7B-Instruct-v0.3, Table 1)"),
      std::string::npos);

  // Named as the paper's model, the difference column is filled in.
  r = run_ragform("reproduce spotlight -m " + quoted(model) +
                  " --paper-model 'generator (not named)' --store " + quoted(db) + " -o " +
                  quoted(html));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  page = ragform::testing::read_file(html);
  EXPECT_NE(page.find("spotlight · multihopqa"), std::string::npos);
  EXPECT_NE(page.find("<td>SpotlightRAG</td><td>EM (w/o training)</td><td>51.300"),
            std::string::npos);

  // A rerun resumes: no row is added.
  size_t rows = 0;
  {
    ragform::store::RunStore st(db, ragform::store::RunStore::Mode::read_only);
    rows = st.results(std::nullopt).size();
  }
  r = run_ragform("reproduce sure -m " + quoted(model) + " --store " + quoted(db) + " -o " +
                  quoted(html));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ragform::store::RunStore st(db, ragform::store::RunStore::Mode::read_only);
  EXPECT_EQ(st.results(std::nullopt).size(), rows);
}

// LongBench-v2 is brought with --data: three questions in its data.json schema (written here) run
// the calibration and the three methods, and the report puts Table 1 beside them.
TEST(ReproduceCli, LongbenchFromData) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  fs::path dir = ragform::testing::temp_dir("reproduce-cli-longbench");
  nlohmann::json rows = nlohmann::json::array();
  const char* cells[3][2] = {{"easy", "short"}, {"hard", "medium"}, {"hard", "long"}};
  for (int i = 0; i < 3; ++i)
    rows.push_back(
        {{"_id", "q" + std::to_string(i)},
         {"domain", "Single-Document QA"},
         {"sub_domain", "story"},
         {"difficulty", cells[i][0]},
         {"length", cells[i][1]},
         {"question", "What pet does Tom have?"},
         {"choice_A", "a dog"},
         {"choice_B", "a cat"},
         {"choice_C", "a bird"},
         {"choice_D", "a fish"},
         {"answer", "B"},
         {"context", "Tom had a cat. The cat was small. Tom played with it every day."}});
  ragform::testing::write_file(dir / "longbench-v2.json", rows.dump());
  fs::path db = dir / "run.sqlite", html = dir / "report.html";
  auto r = run_ragform("reproduce cnorm --experiment longbench --data " + quoted(dir) + " -m " +
                       quoted(model) + " --paper-model Qwen2.5-1.5B-Instruct --store " +
                       quoted(db) + " -o " + quoted(html));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ragform::testing::json_lines(r.out);
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(lines[0]["experiment"], "longbench");
  bool hard = false;
  for (const auto& v : lines[0]["values"])
    if (v["method"] == "C-NORM" && v["metric"] == "accuracy hard") hard = v["n"] == 2;
  EXPECT_TRUE(hard) << lines[0].dump();
  std::string page = ragform::testing::read_file(html);
  EXPECT_NE(page.find("<td>C-NORM</td><td>accuracy hard</td><td>25.700"), std::string::npos);
}

// --reader openai: the same SURE smoke run against `ragform serve` (an OpenAI-compatible server);
// -m names the served model, which is matched by name (stories260K is none of the papers').
TEST(ReproduceCli, SureThroughAnOpenAiServer) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ragform::testing::ServeProcess srv({"-m", model.string(), "--ctx", "2048"});
  fs::path dir = ragform::testing::temp_dir("reproduce-cli-openai");
  fs::path db = dir / "run.sqlite", html = dir / "report.html";
  auto r = run_ragform(
      "reproduce sure --reader openai --base-url http://127.0.0.1:" + std::to_string(srv.port()) +
      "/v1 -m stories260K --store " + quoted(db) + " -o " + quoted(html));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = ragform::testing::json_lines(r.out);
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(lines[0]["experiment"], "sure-wiki");
  EXPECT_GT(lines[0]["values"].size(), 10u);
  ragform::store::RunStore st(db, ragform::store::RunStore::Mode::read_only);
  bool remote = false;
  for (const auto& run : st.runs())
    if (run.pipeline == "reproduce") remote = run.model_sha256.empty() && run.reader != "native";
  EXPECT_TRUE(remote);
  EXPECT_NE(ragform::testing::read_file(html).find("sure · sure-wiki"), std::string::npos);
}

}  // namespace
