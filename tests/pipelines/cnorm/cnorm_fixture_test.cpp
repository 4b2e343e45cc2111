// C-NORM end to end on the one real trained model (stories260K) through the CLI: calibrate on the
// story needle (profile fields, argmax, cache reuse, ABS equal to `ragform attention`), apply, and
// a resumable gold-position eval; the lost-in-the-middle templates from ../shared.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "eval/datasets.h"
#include "pipelines/cnorm/calibrate.h"
#include "pipelines/cnorm/cnorm_cli.h"
#include "pipelines/cnorm/tasks.h"
#include "store/run_store.h"
#include "store/sha256.h"
#include "support/test_support.h"
#include "text/metrics.h"

namespace ragform::cnorm {
namespace {

using ragform::testing::cnorm_calibrate;
using ragform::testing::cnorm_eval;
using ragform::testing::quoted;
using ragform::testing::read_file;
using ragform::testing::run_ragform;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

}  // namespace

TEST(CnormFixture, CalibrateApplyEvalOnStories260K) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_e2e");
  std::string calib =
      cnorm_calibrate(model,
                      "--task needle -S 3 -k 4 --delims 'none,-,&' --ctx 512 --cache-dir " +
                          quoted(dir / "cache") + " --dump-prompts " + quoted(dir / "prompts"),
                      dir / "p.json");
  auto r = run_ragform(calib);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("reusing"), std::string::npos);
  nlohmann::json prof = nlohmann::json::parse(read_file(dir / "p.json"));
  EXPECT_EQ(nlohmann::json::parse(r.out), prof);
  EXPECT_EQ(prof["model_sha256"], store::sha256_file(model));
  EXPECT_EQ(prof["task"], "needle");
  EXPECT_EQ(prof["S"], 3);
  EXPECT_EQ(prof["p"], 0.5);
  EXPECT_EQ(prof["seed"], 0);
  ASSERT_EQ(prof["candidates"].size(), 3u);
  size_t best = 0;
  for (size_t i = 0; i < 3; ++i) {
    const auto& c = prof["candidates"][i];
    ASSERT_EQ(c["abs"].size(), 3u);
    double m = 0;
    for (const auto& a : c["abs"]) {
      EXPECT_GE(a.get<double>(), 0.0);
      EXPECT_LE(a.get<double>(), 1.0);
      m += a.get<double>() / 3;
    }
    EXPECT_NEAR(c["abs_mean"].get<double>(), m, 1e-8);
    if (c["abs_mean"].get<double>() > prof["candidates"][best]["abs_mean"].get<double>()) best = i;
  }
  EXPECT_EQ(prof["best"], prof["candidates"][best]["delimiter"]);
  // The three candidates do not all score alike (the formatting changes the attention).
  EXPECT_NE(prof["candidates"][0]["abs"][0], prof["candidates"][2]["abs"][0]);

  // The ABS of a scored prompt equals the one `ragform attention` computes for the same text.
  auto att = run_ragform("attention -m " + quoted(model) + " --ctx 512 --json --file " +
                         quoted(dir / "prompts" / "f2-s1.txt"));
  ASSERT_EQ(att.exit_code, 0) << att.err;
  EXPECT_NEAR(nlohmann::json::parse(att.out)["abs"].get<double>(),
              prof["candidates"][2]["abs"][1].get<double>(), 1e-8);
  EXPECT_NE(read_file(dir / "prompts" / "f2-s1.txt").find('&'), std::string::npos);

  // Same configuration: the cached profile is reused and says so.
  auto again = run_ragform(calib);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("reusing cached profile"), std::string::npos) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out), prof);
  // A different p is a different configuration.
  auto other = run_ragform(
      cnorm_calibrate(model,
                      "--task needle -S 3 -k 4 -p 1 --delims 'none,-,&' --ctx 512 --cache-dir " +
                          quoted(dir / "cache"),
                      dir / "p1.json"));
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(other.err.find("reusing"), std::string::npos);

  // apply: ctxs records and plain text lines, every other field kept.
  Profile pr = load_profile((dir / "p.json").string());
  write_file(dir / "docs.jsonl",
             "{\"id\": \"a\", \"ctxs\": [{\"title\": \"T\", \"text\": \"One two three. Four five "
             "six.\"}], \"x\": 1}\n"
             "{\"text\": \"Seven eight. Nine ten.\"}\n");
  auto ap = run_ragform("cnorm apply --profile " + quoted(dir / "p.json") + " --input " +
                        quoted(dir / "docs.jsonl"));
  ASSERT_EQ(ap.exit_code, 0) << ap.err;
  std::istringstream lines(ap.out);
  std::string l1, l2;
  std::getline(lines, l1);
  std::getline(lines, l2);
  Format f{pr.best, pr.p, pr.seed};
  auto j1 = nlohmann::json::parse(l1), j2 = nlohmann::json::parse(l2);
  EXPECT_EQ(j1["ctxs"][0]["text"], format_text(Task::Needle, "One two three. Four five six.", f));
  EXPECT_EQ(j1["x"], 1);
  EXPECT_EQ(j1["ctxs"][0]["title"], "T");
  EXPECT_EQ(j2["text"], format_text(Task::Needle, "Seven eight. Nine ten.", f));
  write_file(dir / "bad.jsonl", "{\"text\": \"ok.\"}\n{\"title\": 3}\n");
  auto bad = run_ragform("cnorm apply --profile " + quoted(dir / "p.json") + " --input " +
                         quoted(dir / "bad.jsonl"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad.jsonl:2:"), std::string::npos) << bad.err;

  // eval: 2 needle items x 3 positions x 3 variants, stored; a rerun resumes and recomputes
  // nothing.
  std::string ev =
      cnorm_eval(model, dir / "p.json",
                 "--task needle -k 3 --limit 2 --ctx 512 --store " + quoted(dir / "run.sqlite"));
  auto e1 = run_ragform(ev);
  ASSERT_EQ(e1.exit_code, 0) << e1.err;
  auto s1 = nlohmann::json::parse(e1.out);
  EXPECT_EQ(s1["k"], 3);
  EXPECT_EQ(s1["items"], 2);
  ASSERT_EQ(s1["variants"].size(), 3u);
  for (const auto& v : s1["variants"]) {
    EXPECT_EQ(v["n"], nlohmann::json({2, 2, 2}));
    double m = 0, mx = 0;
    for (const auto& a : v["accuracy"]) {
      m += a.get<double>() / 3;
      mx = std::max(mx, a.get<double>());
    }
    EXPECT_NEAR(v["oaa"].get<double>(), m, 1e-8);
    EXPECT_DOUBLE_EQ(v["opa"].get<double>(), mx);
  }
  EXPECT_EQ(s1["variants"][1]["delimiter"], prof["best"]);
  {
    store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::read_only);
    auto rows = st.results(std::nullopt);
    ASSERT_EQ(rows.size(), 18u);
    for (const auto& row : rows) {
      EXPECT_FALSE(row.prompt.empty());
      EXPECT_TRUE(row.correct.has_value());
      EXPECT_NE(row.prompt.find("'s name was"), std::string::npos);
    }
  }
  auto e2 = run_ragform(ev);
  ASSERT_EQ(e2.exit_code, 0) << e2.err;
  EXPECT_NE(e2.err.find("resuming"), std::string::npos) << e2.err;
  EXPECT_EQ(nlohmann::json::parse(e2.out)["variants"], s1["variants"]);

  // Two seeds: one run each; the first (the profile's seed 0) answers exactly as above, and the
  // summary averages the two.
  auto e3 = run_ragform(cnorm_eval(
      model, dir / "p.json",
      "--task needle -k 3 --limit 2 --ctx 512 --seeds 0,5 --store " + quoted(dir / "run2.sqlite")));
  ASSERT_EQ(e3.exit_code, 0) << e3.err;
  auto s3 = nlohmann::json::parse(e3.out);
  ASSERT_EQ(s3["per_seed"].size(), 2u);
  EXPECT_EQ(s3["per_seed"][0]["variants"], s1["variants"]);
  for (size_t v = 0; v < 3; ++v) {
    EXPECT_EQ(s3["variants"][v]["n"], nlohmann::json({4, 4, 4}));
    EXPECT_NEAR(s3["variants"][v]["oaa"].get<double>(),
                (s3["per_seed"][0]["variants"][v]["oaa"].get<double>() +
                 s3["per_seed"][1]["variants"][v]["oaa"].get<double>()) /
                    2,
                1e-8);
  }
}

TEST(CnormFixture, LostInTheMiddleTemplatesAndNqItems) {
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  std::string shared = ragform::testing::shared_dir().string();
  // The paper's prompts are lost-in-the-middle's files changed only where the paper's text
  // differs: Appendix D's "Search Results: " label before the documents, and no "JSON data:" line
  // before the key-value records (Appendix B).
  const std::string litm = shared + "/data/lost-in-the-middle/";
  std::string qa_file = load_template(Task::Qa, litm + "qa_ordered_randomly.prompt", "");
  std::string kv_file = load_template(Task::Kv, litm + "kv_retrieval.prompt", "");
  std::string qa = load_template(Task::Qa, "", shared);
  std::string kv = load_template(Task::Kv, "", shared);
  qa_file.replace(qa_file.find("{search_results}"), 0, "Search Results: ");
  EXPECT_EQ(qa, qa_file);
  ASSERT_NE(kv_file.find("JSON data:\n"), std::string::npos);
  kv_file.erase(kv_file.find("JSON data:\n"), 11);
  EXPECT_EQ(kv, kv_file);
  EXPECT_EQ(qa.rfind("Write a high-quality answer for the given question using only the provided "
                     "search results (some of which might be irrelevant). The search results are "
                     "ordered randomly.\n\nSearch Results: {search_results}",
                     0),
            0u);  // Appendix D's controlled-setting prompt
  EXPECT_EQ(qa.substr(qa.size() - 7), "Answer:");
  eval::LoadOptions lo;
  lo.limit = 50;
  auto recs = eval::load_qa_file(nq.string(), lo).records;
  ASSERT_EQ(recs.size(), 50u);
  auto items = build_qa_items(recs, 10, 0);
  ASSERT_EQ(items.size(), 50u);
  EXPECT_EQ(items[0].question, "who got the first nobel prize in physics");
  EXPECT_EQ(items[0].gold.title, "List of Nobel laureates in Physics");
  for (const auto& it : items) {
    ASSERT_EQ(it.distractors.size(), 9u);
    for (const auto& d : it.distractors) EXPECT_EQ(text::substring_match(d.text, it.answers), 0.0);
  }
  Prompt p = render(Task::Qa, qa, items[0], arrange(items[0], 10, 4), Format{{"none", ""}, 0.0, 0});
  EXPECT_NE(
      p.text.find("Document [5](Title: List of Nobel laureates in Physics) The first Nobel Prize"),
      std::string::npos);
  EXPECT_NE(p.text.find("Question: who got the first nobel prize in physics\nAnswer:"),
            std::string::npos);
  EXPECT_EQ(p.text.substr(p.ctx_begin, 13), "Document [1](");
  EXPECT_EQ(p.text.rfind("Search Results: Document [1](", p.ctx_begin), p.ctx_begin - 16);
  // A usage error for a missing input.
  auto r = run_ragform("cnorm calibrate -m x.gguf --task qa -o /dev/null");
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(CnormFixture, CalibrateOnNqReducesKToTheContext) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("cnorm_nq");
  // Ten NQ passages are ~5k tokens for stories260K's 512-piece vocabulary: k must shrink to fit.
  auto r = run_ragform(cnorm_calibrate(
      model, "--task qa --input " + quoted(nq) + " -S 2 --delims 'none,&' --ctx 1024 --no-cache",
      dir / "p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("k reduced from 10 to"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("questions left out"), std::string::npos) << r.err;  // NQ's answer "S"
  auto prof = nlohmann::json::parse(read_file(dir / "p.json"));
  EXPECT_EQ(prof["task"], "qa");
  EXPECT_EQ(prof["S"], 2);
  EXPECT_LT(prof["config"]["k"].get<int>(), 10);
  EXPECT_GE(prof["config"]["k"].get<int>(), 1);
  ASSERT_EQ(prof["config"]["samples"].size(), 2u);
  for (const auto& c : prof["candidates"]) EXPECT_EQ(c["abs"].size(), 2u);
}

// The default candidates, the unformatted 'original', profiles bound to one model-task pair and
// LongBench-v2 calibration, through the CLI on stories260K.
TEST(CnormFixture, DefaultCandidatesOriginalAndModelTaskPairs) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("cnorm_pairs");
  auto r = run_ragform(
      cnorm_calibrate(model, "--task needle -S 2 -k 3 --ctx 512 --no-cache", dir / "needle.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto prof = nlohmann::json::parse(read_file(dir / "needle.json"));
  std::vector<std::string> names;
  for (const auto& c : prof["candidates"]) names.push_back(c["delimiter"].get<std::string>());
  for (const char* want : {"original", ".", "\xC2\xB7", "none", "&"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  EXPECT_EQ(names.size(), 11u);
  EXPECT_NE(r.err.find("original"), std::string::npos) << r.err;

  // A profile whose best is 'original': apply leaves the text unchanged.
  auto o = run_ragform(cnorm_calibrate(
      model, "--task needle -S 2 -k 3 --ctx 512 --no-cache --delims original", dir / "orig.json"));
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "orig.json"))["best"], "original");
  const std::string line =
      "{\"ctxs\":[{\"text\":\"One  two three. Four\\tfive six.\",\"title\":\"T\"}],\"id\":\"a\"}";
  write_file(dir / "docs.jsonl", line + "\n");
  auto ap = run_ragform("cnorm apply --profile " + quoted(dir / "orig.json") + " --input " +
                        quoted(dir / "docs.jsonl"));
  ASSERT_EQ(ap.exit_code, 0) << ap.err;
  EXPECT_EQ(nlohmann::json::parse(ap.out), nlohmann::json::parse(line));
  EXPECT_NE(ap.err.find("left unchanged"), std::string::npos) << ap.err;

  // eval refuses a profile of another task (exit 2) unless --force.
  write_file(
      dir / "lb.jsonl",
      "{\"_id\": \"a\", \"domain\": \"d\", \"sub_domain\": \"s\", \"difficulty\": \"easy\", "
      "\"length\": \"short\", \"question\": \"Who was the cat?\", \"choice_A\": \"Tom\", "
      "\"choice_B\": \"Sue\", \"choice_C\": \"Max\", \"choice_D\": \"Lily\", \"answer\": \"A\", "
      "\"context\": \"There was a cat named Tom. Tom liked to play.\"}\n"
      "{\"_id\": \"b\", \"domain\": \"d\", \"sub_domain\": \"s\", \"difficulty\": \"hard\", "
      "\"length\": \"long\", \"question\": \"Who was the dog?\", \"choice_A\": \"Tom\", "
      "\"choice_B\": \"Sue\", \"choice_C\": \"Max\", \"choice_D\": \"Lily\", \"answer\": \"B\", "
      "\"context\": \"There was a dog named Sue. Sue liked to run.\"}\n");
  std::string lb_eval = "--task longbench --input " + quoted(dir / "lb.jsonl") +
                        " --ctx 512 -n 4 --store " + quoted(dir / "lb.sqlite");
  auto refused = run_ragform(cnorm_eval(model, dir / "needle.json", lb_eval));
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("calibrated for task needle, not longbench"), std::string::npos)
      << refused.err;
  auto forced = run_ragform(cnorm_eval(model, dir / "needle.json", lb_eval + " --force"));
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("--force"), std::string::npos) << forced.err;

  // LongBench-v2 calibrated as its own task: the profile says so and eval takes it.
  auto lc = run_ragform(cnorm_calibrate(
      model, "--task longbench --input " + quoted(dir / "lb.jsonl") + " -S 2 --ctx 512 --no-cache",
      dir / "lb.json"));
  ASSERT_EQ(lc.exit_code, 0) << lc.err;
  auto lp = nlohmann::json::parse(read_file(dir / "lb.json"));
  EXPECT_EQ(lp["task"], "longbench");
  EXPECT_EQ(lp["model_sha256"], store::sha256_file(model));
  EXPECT_EQ(lp["config"]["k"], 1);
  ASSERT_EQ(lp["candidates"].size(), 11u);
  for (const auto& c : lp["candidates"]) EXPECT_EQ(c["abs"].size(), 2u);
  auto le = run_ragform(cnorm_eval(model, dir / "lb.json",
                                   "--task longbench --input " + quoted(dir / "lb.jsonl") +
                                       " --ctx 512 -n 4 --store " + quoted(dir / "lb2.sqlite")));
  EXPECT_EQ(le.exit_code, 0) << le.err;
  // ... but not for the needle task, nor on another model file.
  auto other_task = run_ragform(
      cnorm_eval(model, dir / "lb.json",
                 "--task needle -k 3 --limit 1 --ctx 512 --store " + quoted(dir / "n.sqlite")));
  EXPECT_EQ(other_task.exit_code, 2) << other_task.err;
  auto j = lp;
  j["task"] = "needle";
  j["model_sha256"] = std::string(64, '0');
  write_file(dir / "other-model.json", j.dump());
  auto other_model = run_ragform(
      cnorm_eval(model, dir / "other-model.json",
                 "--task needle -k 3 --limit 1 --ctx 512 --store " + quoted(dir / "n.sqlite")));
  EXPECT_EQ(other_model.exit_code, 2) << other_model.err;
  EXPECT_NE(other_model.err.find("another model"), std::string::npos) << other_model.err;

  // Appendix D's LLaMA-2 chat system prompt is a named option for chat readers only.
  auto no_chat = run_ragform(cnorm_calibrate(
      model, "--task needle -S 1 -k 3 --system-preset llama2-chat", dir / "x.json"));
  EXPECT_EQ(no_chat.exit_code, 2) << no_chat.err;
  EXPECT_NE(no_chat.err.find("add --chat"), std::string::npos) << no_chat.err;
  auto unknown = run_ragform(cnorm_calibrate(
      model, "--task needle -S 1 -k 3 --chat --system-preset llama9", dir / "x.json"));
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
}

}  // namespace ragform::cnorm
