// `sure eval --emphasis-gold FACTOR` on stories260K: every RAG row of the emphasised run is the
// answer `ragform generate --steer rescale:FACTOR --steer-spans B:E` gives on its prompt (B:E being
// the document's bytes in it), closed-book rows are not steered, and the run is another run than
// the unemphasised one, whose rows are plain generations as before (no steering in them).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/nq_pairs_input.h"
#include "store/run_store.h"
#include "support/test_support.h"

using namespace ragform;
using ragform::testing::json_lines;
using ragform::testing::quoted;
using ragform::testing::run_ragform;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

namespace {

// The answer of `ragform generate` on a stored row's prompt with the row's sampling seed,
// steered when `steer` is not empty (the arguments after --steer).
std::string generate_row(const std::filesystem::path& model, const std::filesystem::path& dir,
                         const store::Result& row, const std::string& steer) {
  write_file(dir / "prompt.txt", row.prompt);
  std::string cmd = "generate -m " + quoted(model) + " --ctx 1024 -n 8 --temp 0.1 --json --seed " +
                    std::to_string(sure::row_seed(0, row.instance, row.variant)) + " -f " +
                    quoted(dir / "prompt.txt");
  if (!steer.empty()) cmd += " --steer " + steer;
  auto r = run_ragform(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out)["text"].get<std::string>();
}

std::map<store::Key, store::Result> rows_of(const store::RunStore& st, int64_t run) {
  std::map<store::Key, store::Result> out;
  for (auto& r : st.results(run)) out[{r.instance, r.variant}] = r;
  return out;
}

}  // namespace

TEST(SureEmphasisGold, RowsAreSteeredGenerationsInTheirOwnRun) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  auto dir = temp_dir("sure_emphasis_gold");
  write_file(dir / "qa.jsonl", ragform::testing::nq_pairs_input(nq, 2));
  auto r = run_ragform("sure perturb --input " + quoted(dir / "qa.jsonl") + " --kinds format");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto pairs = json_lines(r.out);
  ASSERT_GE(pairs.size(), 8u);
  // Two pairs of the first document and two of the last (another record's).
  std::string few;
  std::set<std::string> documents;
  for (size_t i : {size_t(0), size_t(1), pairs.size() - 2, pairs.size() - 1}) {
    few += pairs[i].dump() + "\n";
    documents.insert(pairs[i]["id"].get<std::string>());
  }
  ASSERT_EQ(documents.size(), 2u);
  write_file(dir / "pairs.jsonl", few);
  const std::string ev = "sure eval --input " + quoted(dir / "pairs.jsonl") + " -m " +
                         quoted(model) + " --ctx 1024 -n 8 --store " + quoted(dir / "run.sqlite");
  r = run_ragform(ev);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_ragform(ev + " --emphasis-gold 1");  // 1 = off: the same run, nothing recomputed
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(" 0 generated"), std::string::npos) << r.err;
  r = run_ragform(ev + " --emphasis-gold 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::read_only);
  auto runs = st.runs();
  ASSERT_EQ(runs.size(), 2u);  // steered and unsteered never merge
  if (runs[0].config.contains("emphasis_gold")) std::swap(runs[0], runs[1]);
  const auto plain = rows_of(st, runs[0].id), steered = rows_of(st, runs[1].id);
  ASSERT_EQ(plain.size(), steered.size());
  EXPECT_FALSE(runs[0].config.contains("emphasis_gold"));
  EXPECT_EQ(runs[1].config["emphasis_gold"], 8.0);

  int differ = 0, checked = 0;
  for (const auto& [key, row] : steered) {
    const store::Result& before = plain.at(key);
    ASSERT_EQ(row.status, store::Status::ok) << row.error;
    EXPECT_EQ(row.prompt, before.prompt);
    EXPECT_FALSE(before.extra.contains("steer_spans"));
    if (key.second == "closed-book") {  // no document: not steered
      EXPECT_FALSE(row.extra.contains("steer_spans"));
      EXPECT_EQ(row.output, before.output);
      continue;
    }
    // The span is exactly the document, as qa_prompt places it.
    const std::string spans = row.extra.at("steer_spans").get<std::string>();
    const size_t colon = spans.find(':');
    ASSERT_EQ(spans.find(','), std::string::npos) << spans;
    const size_t b = std::stoul(spans.substr(0, colon)), e = std::stoul(spans.substr(colon + 1));
    ASSERT_TRUE(b >= 10 && b < e && e <= row.prompt.size()) << spans;
    EXPECT_EQ(row.prompt.substr(b - 10, 10), "Document: ") << spans;
    EXPECT_EQ(row.prompt.substr(e, 12), "\n\nQuestion: ") << spans;
    EXPECT_EQ(row.output, generate_row(model, dir, row, "rescale:8 --steer-spans " + spans))
        << key.first << " " << key.second;
    EXPECT_EQ(before.output, generate_row(model, dir, before, "")) << key.first << key.second;
    differ += row.output != before.output;
    ++checked;
  }
  EXPECT_EQ(checked, 4 + int(documents.size()));  // the perturbed rows and the originals
  EXPECT_GT(differ, 0);                           // the steering changed some answers
}
