// `ragform tune` end to end on stories260K's story-needle task (dev and held-out records from
// disjoint seeds), capped to the model's 512-token training context: the --json object and its
// types, the profile file, the rerun that runs nothing, and the budget usage error.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "store/run_store.h"
#include "support/test_support.h"

namespace {

using namespace ragform::testing;

std::string tune_args(const std::filesystem::path& model, const std::filesystem::path& dir,
                      int budget, const std::string& ks = "all,3") {
  return "tune -m " + quoted(model) +
         " --task needle --ctx 512 --needle-slots 12 --dev-items 8 --holdout-items 12"
         " --delims original,- --p 1 --formats plain,json --orders retrieved,edges --k " +
         ks + " --budget " + std::to_string(budget) + " --store " + quoted(dir / "s.sqlite") +
         " -o " + quoted(dir / "p.json");
}

bool is_fraction(const nlohmann::json& v) {
  return v.is_number() && v.get<double>() >= 0 && v.get<double>() <= 1;
}

TEST(TuneCli, NeedleEndToEnd) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("tune_cli");
  RunResult r = run_ragform(tune_args(model, dir, 80) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json& j = lines[0];
  for (const char* k : {"profile", "budget", "spent", "grid", "holdout"})
    ASSERT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j["budget"].is_number_integer());
  EXPECT_TRUE(j["spent"].is_number_integer());
  EXPECT_TRUE(j["grid"].is_number_integer());
  EXPECT_EQ(j["budget"], 80);
  EXPECT_LE(j["spent"].get<int>(), 80);
  EXPECT_GT(j["grid"].get<int>(), j["spent"].get<int>());
  // json documents of 12 slots do not fit 512 tokens: the cap dropped them and says so.
  EXPECT_GT(j["dropped_for_context"].get<int>(), 0);
  EXPECT_NE(r.err.find("exceed the 512-token context"), std::string::npos) << r.err;
  const nlohmann::json& h = j["holdout"];
  for (const char* side : {"original", "tuned"}) {
    EXPECT_TRUE(is_fraction(h[side]["accuracy"])) << side;
    EXPECT_TRUE(is_fraction(h[side]["robustness"])) << side;
    EXPECT_TRUE(h[side]["tokens"].is_number()) << side;
  }
  ASSERT_TRUE(h["diff_ci95"].is_array());
  ASSERT_EQ(h["diff_ci95"].size(), 2u);
  EXPECT_LE(h["diff_ci95"][0].get<double>(), h["diff_ci95"][1].get<double>());
  EXPECT_TRUE(is_fraction(h["mcnemar_p"]));
  EXPECT_EQ(h["items"], 12);
  // The profile names every searched dimension's winner, the model, the task and the run.
  const nlohmann::json& p = j["profile"];
  EXPECT_EQ(p["task"], "needle");
  EXPECT_EQ(p["searched"], nlohmann::json({"delimiter", "format", "order", "k"}));
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "p.json")), p);

  // The same store and budget: no new prompt, the same object.
  RunResult again = run_ragform(tune_args(model, dir, 80) + " --json");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
  EXPECT_NE(again.err.find("tune: 0 new prompts"), std::string::npos) << again.err;

  // Too small a budget is a usage error naming the minimum.
  RunResult small = run_ragform(tune_args(model, dir, 10));
  EXPECT_EQ(small.exit_code, 2);
  EXPECT_NE(small.err.find("the minimum is --budget"), std::string::npos) << small.err;
}

// "tune: N new prompts run by this invocation" of a run's stderr.
long new_prompts(const std::string& err) {
  const size_t at = err.find(" new prompts run by this invocation");
  if (at == std::string::npos) return -1;
  const size_t from = err.rfind("tune: ", at);
  return std::stol(err.substr(from + 6, at - from - 6));
}

// Every row of a store by (pipeline, instance, variant), without its timings.
std::map<std::tuple<std::string, std::string, std::string>, ragform::store::Result> rows_of(
    const std::filesystem::path& path) {
  ragform::store::RunStore st(path, ragform::store::RunStore::Mode::read_only);
  std::map<int64_t, std::string> pipeline;
  for (const auto& run : st.runs()) pipeline[run.id] = run.pipeline;
  std::map<std::tuple<std::string, std::string, std::string>, ragform::store::Result> out;
  for (ragform::store::Result r : st.results(std::nullopt)) {
    const std::string of = pipeline.at(r.run);
    r.timings_ms.clear();
    r.run = 0;  // matched by pipeline
    out[{of, r.instance, r.variant}] = r;
  }
  return out;
}

// The summary without the store's path (each worker has its own).
nlohmann::json without_store(nlohmann::json j) {
  j.erase("store");
  if (j.contains("profile")) j["profile"]["run"].erase("store");
  return j;
}

// --shard i/n splits each phase by what it measures (a record's prompt); after merging the
// workers' stores a rerun continues with the next phase, the held-out evaluation included, and
// the merged run is the unsharded one: the same rows (timings aside), the same summary (spent
// included), every prompt sent once over all workers, and no merge sees a conflict. With k 2,
// perturbing a gold document the first two do not show leaves the prompt as it was: those
// robustness pairs share the measured answer (under the variant-name split they landed on
// another shard, were sent twice and charged: spent 47 against 45; the held-out evaluation ran
// in full on both workers and merge called its 34 identical answers conflicting).
TEST(TuneCli, ShardsMergeIntoTheUnshardedRun) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("tune_cli_shards");
  const std::string ks = "all,2,3";
  RunResult whole = run_ragform(tune_args(model, dir, 80, ks) + " --json");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const nlohmann::json want = json_lines(whole.out).at(0);
  ASSERT_TRUE(want["complete"].get<bool>());
  const long sent_whole = new_prompts(whole.err);
  ASSERT_GT(sent_whole, 0) << whole.err;
  std::vector<nlohmann::json> last(2, nlohmann::json::object());
  long sent = 0;
  int rounds = 0;
  for (; rounds < 12 && !(last[0].value("complete", false) && last[1].value("complete", false));
       ++rounds) {
    for (int w = 0; w < 2; ++w) {
      auto wdir = dir / ("w" + std::to_string(w));
      std::filesystem::create_directories(wdir);
      RunResult r = run_ragform(tune_args(model, wdir, 80, ks) + " --json --shard " +
                                std::to_string(w) + "/2");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      sent += new_prompts(r.err);
      last[w] = json_lines(r.out).at(0);
      if (!last[w]["complete"].get<bool>()) {
        EXPECT_NE(last[w]["pending"].get<std::string>().find("ragform merge"), std::string::npos);
      }
    }
    for (int w = 0; w < 2; ++w) {
      RunResult m =
          run_ragform("merge --json " + quoted(dir / ("w" + std::to_string(w)) / "s.sqlite") + " " +
                      quoted(dir / ("w" + std::to_string(1 - w)) / "s.sqlite"));
      ASSERT_EQ(m.exit_code, 0) << m.err;
      EXPECT_EQ(json_lines(m.out).at(0)["rows_conflicting"], 0) << m.out;
    }
  }
  EXPECT_GT(rounds, 1);  // the first round stopped at a phase boundary
  ASSERT_TRUE(last[0]["complete"].get<bool>());
  ASSERT_TRUE(last[1]["complete"].get<bool>());
  EXPECT_EQ(last[0]["spent"], want["spent"]);
  EXPECT_EQ(without_store(last[0]), without_store(want));
  EXPECT_EQ(without_store(last[1]), without_store(want));
  EXPECT_EQ(sent, sent_whole);  // the search and the held-out evaluation each sent once
  const auto rows = rows_of(dir / "s.sqlite");
  for (int w = 0; w < 2; ++w) {
    const auto merged = rows_of(dir / ("w" + std::to_string(w)) / "s.sqlite");
    EXPECT_EQ(merged.size(), rows.size()) << w;
    for (const auto& [key, row] : rows) {
      auto it = merged.find(key);
      if (it == merged.end()) {
        ADD_FAILURE() << "worker " << w << " lacks " << std::get<2>(key);
        continue;
      }
      EXPECT_EQ(it->second, row) << "worker " << w << ": " << std::get<0>(key) << " "
                                 << std::get<1>(key) << " " << std::get<2>(key) << ": "
                                 << it->second.extra.dump() << " vs " << row.extra.dump();
    }
  }
}

// --objective abs is C-NORM's calibration: every candidate on 6 prompts (calibrate's -S) unless
// --abs-prompts says otherwise, and nothing is generated.
// The search of issue 43's report: stories260K, the default needle space (216 candidates), a
// budget of 600. Before the deploy rule it wrote a winner whose held-out accuracy was below the
// original's. Now the plan narrows the field so the finalists are judged on 20+ dev records, the
// original presentation is a finalist (the control arm), and the profile holds the original
// because the held-out split does not confirm the winner, with the reason in the output, the
// profile and `present`'s stderr. --deploy best on the same store measures nothing and writes
// the winner.
TEST(TuneCli, AnUnconfirmedWinnerIsNotDeployed) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("tune_cli_deploy");
  const std::string args = "tune -m " + quoted(model) + " --task needle --budget 600 --store " +
                           quoted(dir / "s.sqlite") + " -o " + quoted(dir / "p.json") + " --json";
  RunResult r = run_ragform(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["deployed"], "original");
  EXPECT_EQ(j["deploy"], "confirmed");
  EXPECT_NE(j["winner"], j["control"]);
  EXPECT_NE(j["why"].get<std::string>().find("does not confirm the winner"), std::string::npos)
      << j["why"];
  EXPECT_NE(j["why"].get<std::string>().find("95% CI of the difference ["), std::string::npos);
  EXPECT_GE(j["final_n"].get<int>(), 20);
  EXPECT_TRUE(j["plan"]["narrowed"].get<bool>());
  bool control_final = false;
  for (const auto& c : j["trajectory"])
    if (c["control"].get<bool>())
      control_final = c["dropped_at"] == "final" || c["dropped_at"] == "";
  EXPECT_TRUE(control_final);
  const nlohmann::json p = nlohmann::json::parse(read_file(dir / "p.json"));
  EXPECT_EQ(p["deployed"], "original");
  EXPECT_EQ(p["why"], j["why"]);
  EXPECT_EQ(p["winner"], j["winner"]);
  EXPECT_EQ(p["presentation"]["delimiter"], "original");
  EXPECT_EQ(p["presentation"]["format"], "plain");
  EXPECT_EQ(p["presentation"]["order"], "retrieved");
  EXPECT_EQ(p["presentation"]["k"], 0);
  EXPECT_EQ(p["presentation"]["spotlight"], 0);

  // present says once which presentation the profile holds and why.
  write_file(dir / "r.jsonl",
             "{\"id\": \"a\", \"question\": \"q?\", \"answers\": [\"x\"], \"ctxs\": "
             "[{\"title\": \"t\", \"text\": \"x is here.\"}]}\n"
             "{\"id\": \"b\", \"question\": \"r?\", \"answers\": [\"y\"], \"ctxs\": "
             "[{\"title\": \"u\", \"text\": \"y is there.\"}]}\n");
  RunResult pr = run_ragform("present --profile " + quoted(dir / "p.json") + " --input " +
                             quoted(dir / "r.jsonl"));
  ASSERT_EQ(pr.exit_code, 0) << pr.err;
  const std::string said =
      "present: profile: deployed the original presentation: the held-out split does not confirm";
  const size_t at = pr.err.find(said);
  EXPECT_NE(at, std::string::npos) << pr.err;
  EXPECT_EQ(pr.err.find(said, at + 1), std::string::npos) << "said once: " << pr.err;

  // The other rule on the same store: nothing new is measured, the winner is written.
  RunResult best = run_ragform(args + " --deploy best");
  ASSERT_EQ(best.exit_code, 0) << best.err;
  EXPECT_NE(best.err.find("tune: 0 new prompts"), std::string::npos) << best.err;
  const nlohmann::json jb = nlohmann::json::parse(best.out);
  EXPECT_EQ(jb["deployed"], "tuned");
  EXPECT_EQ(jb["winner"], j["winner"]);
  EXPECT_EQ(jb["holdout"], j["holdout"]);
  nlohmann::json winner;
  for (const auto& c : jb["trajectory"])
    if (c["label"] == jb["winner"]) winner = c["presentation"];
  EXPECT_EQ(nlohmann::json::parse(read_file(dir / "p.json"))["presentation"], winner);
}

TEST(TuneCli, AbsObjectiveScoresSixPromptsPerCandidate) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("tune_cli_abs");
  const std::string args = "tune -m " + quoted(model) +
                           " --task needle --dev-items 8 --holdout-items 4 --delims original,-,_"
                           " --p 1 --formats plain --orders retrieved --k all --objective abs"
                           " --store " +
                           quoted(dir / "s.sqlite") + " --json --budget ";
  RunResult small = run_ragform(args + "17");
  EXPECT_EQ(small.exit_code, 2);
  EXPECT_NE(small.err.find("the minimum is --budget 18"), std::string::npos) << small.err;
  RunResult r = run_ragform(args + "18");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = json_lines(r.out).at(0);
  EXPECT_EQ(j["spent"], 18);
  EXPECT_EQ(j["plan"]["abs_prompts"], 6);
  EXPECT_EQ(j["profile"]["objective"], "abs");
  for (const auto& t : j["trajectory"]) EXPECT_TRUE(t["abs"].is_number()) << t.dump();
}

// The context cap and its source are stated: stories260K's file states a context_length of 2048
// (a llama2.c export; it was trained on 512), which is the cap unless --ctx is given.
TEST(TuneCli, ContextCapAndItsSourceAreStated) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("tune_cli_context");
  const std::string args = "tune -m " + quoted(model) +
                           " --task needle --needle-slots 4 --dev-items 2 --holdout-items 2"
                           " --delims original --formats plain,json --orders retrieved --k all"
                           " --abs-filter off --budget 8 --store " +
                           quoted(dir / "s.sqlite");
  RunResult file = run_ragform(args + " --json");
  ASSERT_EQ(file.exit_code, 0) << file.err;
  const nlohmann::json a = json_lines(file.out).at(0)["context"];
  EXPECT_EQ(a["tokens"], 2048) << a.dump();
  EXPECT_NE(a["from"].get<std::string>().find("context_length 2048"), std::string::npos)
      << a.dump();
  RunResult capped = run_ragform(args + " --ctx 512");
  ASSERT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_NE(capped.out.find("context cap: 512 tokens of prompt and answer (--ctx)"),
            std::string::npos)
      << capped.out;
}

// Issue 40, items 6 and 16: a record that cannot be rendered is named with FILE:LINE (it used to
// be "N of N candidates dropped: their prompts exceed the context"), and a held-out split that
// overlaps dev is told apart.
TEST(TuneCli, ContextFitFailuresNameTheRecordAndOverlapIsDropped) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto dir = temp_dir("tune_cli_fit");
  const std::string a =
      R"({"id": "a", "question": "Who had a dog?", "answers": ["Lily"], "ctxs": [{"title": "Park", "text": "Lily had a dog."}]})";
  const std::string b =
      R"({"id": "b", "question": "Who had a cat?", "answers": ["Tom"], "ctxs": [{"title": "Home", "text": "Tom had a cat."}]})";
  const std::string bare = R"({"id": "c", "question": "Who?", "answers": ["x"]})";
  write_file(dir / "dev.jsonl", a + "\n" + bare + "\n");
  write_file(dir / "held.jsonl", b + "\n");
  const std::string base = "tune -m " + quoted(model) +
                           " --task qa --ctx 512 --delims original,- --p 1 --formats plain"
                           " --orders retrieved --k all --spotlight off --abs-filter off"
                           " --budget 40 --store " +
                           quoted(dir / "s.sqlite");
  RunResult r = run_ragform(base + " --input " + quoted(dir / "dev.jsonl") + " --holdout " +
                            quoted(dir / "held.jsonl"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find((dir / "dev.jsonl").string() + ":2: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no documents"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("exceed the"), std::string::npos) << r.err;

  write_file(dir / "dev.jsonl", a + "\n" + b + "\n");
  write_file(dir / "held2.jsonl", b + "\n" + a + "\n");
  r = run_ragform(base + " --input " + quoted(dir / "dev.jsonl") + " --holdout " +
                  quoted(dir / "held2.jsonl"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("all 2 held-out records are also in the dev split"), std::string::npos)
      << r.err;

  // Issue 40, D6: copies that differ only where the prompt cannot tell are dropped with the note
  // (flags, ids, answers as a normalised set, documents' order, spacing and case).
  const std::string c =
      R"({"id": "c", "question": "Who had a fish?", "answers": ["Ann"], "ctxs": [{"title": "Pond", "text": "Ann had a fish."}]})";
  const std::string variants =
      R"({"id": "v1", "question": "Who had a dog?", "answers": ["Lily"], "ctxs": [{"title": "Park", "text": "Lily had a dog.", "hasanswer": true, "isgold": true}]})"
      "\n"
      R"({"id": "v2", "question": "who  had a DOG? ", "answers": ["Lily", "lily", "Lily"], "ctxs": [{"title": "Park", "text": "Lily had a dog.\n", "id": "z", "score": 3}]})"
      "\n";
  write_file(dir / "held3.jsonl", variants + c + "\n");
  r = run_ragform(base + " --input " + quoted(dir / "dev.jsonl") + " --holdout " +
                  quoted(dir / "held3.jsonl"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tune: note: 2 held-out records also in the dev split were dropped from "
                       "the held-out split (1 left)"),
            std::string::npos)
      << r.err;
}

}  // namespace
