// SpotlightRAG's verbs on the runner contract (pipelines/common/common.h): run_eval,
// run_generate and run_sweeps report begin/advance/end through the caller's RunHooks and note a
// resume; the stored runs carry the origin the caller filled (no reader for run_eval, the
// generator's for run_generate); the spotlight rows' selection names the normalised score R and
// the raw one R_raw (selection_json.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "eval/datasets.h"
#include "pipelines/spotlight/spotlight.h"
#include "support/fake_reader.h"
#include "support/recording_hooks.h"
#include "support/test_support.h"

namespace ragform::spotlight {
namespace {

using Recorder = ragform::testing::RecordingHooks;

struct Data {
  std::vector<eval::QaRecord> recs;
  WordVectors wv;
};

Data hotpot(size_t n) {
  eval::LoadOptions lo;
  lo.limit = n;
  return {eval::load_qa_file(
              ragform::testing::shared_path("data/hotpotqa-distractor/dev.jsonl").string(), lo)
              .records,
          WordVectors::load(
              ragform::testing::shared_path("data/embeddings/glove-50d-5k.json").string())};
}

TEST(SpotlightContract, EvalReportsProgressStoresItsOriginAndResumes) {
  REQUIRE_SHARED(hotpot_path, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  Data d = hotpot(8);
  StaticEncoder enc(d.wv);
  store::RunStore st(ragform::testing::temp_dir("spotlight-contract") / "runs.sqlite",
                     store::RunStore::Mode::create, store::RunStore::Durability::normal);
  Recorder rec;
  RunOptions o;
  o.recall_ks = {6};
  o.origin.tool_version = "contract-test";
  o.hooks = rec.hooks();
  const RunSummary first = run_eval(enc, st, d.recs, o);
  EXPECT_EQ(rec.events.front(), "begin spotlight eval 8");
  EXPECT_EQ(rec.steps("begin spotlight eval 8"), 8);
  EXPECT_EQ(rec.events.back(), "end");
  EXPECT_EQ(rec.count_prefix("note "), 0u);

  const auto info = st.run(first.run);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->pipeline, "spotlight eval");
  EXPECT_EQ(info->tool_version, "contract-test");
  EXPECT_EQ(info->reader, "none");
  EXPECT_EQ(info->chat_mode, "none");
  EXPECT_EQ(info->model_path, "");
  EXPECT_EQ(info->model_sha256, "");

  // The spotlight rows: R is the normalised score (the best sentence of a question is 1), R_raw
  // the raw one; no other name for either.
  size_t rows = 0;
  for (const store::Result& row : st.results(first.run)) {
    if (row.variant != "spotlight") continue;
    ++rows;
    double best = 0;
    for (const auto& s : row.extra.at("selected")) {
      ASSERT_TRUE(s.contains("R_raw")) << s.dump();
      EXPECT_FALSE(s.contains("R_norm")) << s.dump();
      const double r = s.at("R").get<double>();
      EXPECT_GE(r, 0.0);
      EXPECT_LE(r, 1.0);
      best = std::max(best, r);
      // The prefix token of the prompt is the normalised score.
      EXPECT_NE(row.prompt.find(rel_token(r)), std::string::npos) << rel_token(r);
    }
    EXPECT_DOUBLE_EQ(best, 1.0) << row.instance;
  }
  EXPECT_EQ(rows, first.questions);

  // A second call resumes: one note, every row reused.
  rec.events.clear();
  const RunSummary again = run_eval(enc, st, d.recs, o);
  EXPECT_EQ(again.run, first.run);
  EXPECT_EQ(again.written, 0u);
  ASSERT_EQ(rec.count_prefix("note "), 1u);
  EXPECT_EQ(rec.events.front(), "note spotlight eval: resuming run " + std::to_string(first.run) +
                                    ": " + std::to_string(first.written) +
                                    " of 40 rows already stored");
  EXPECT_EQ(rec.steps("begin spotlight eval 8"), 8);
}

TEST(SpotlightContract, GenerateRecordsTheGeneratorsOrigin) {
  REQUIRE_SHARED(hotpot_path, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  Data d = hotpot(4);
  StaticEncoder enc(d.wv);
  store::RunStore st(ragform::testing::temp_dir("spotlight-contract-gen") / "runs.sqlite",
                     store::RunStore::Mode::create, store::RunStore::Durability::normal);
  RunOptions o;
  o.origin.tool_version = "contract-test";
  const RunSummary sel = run_eval(enc, st, d.recs, o);

  ragform::testing::FakeReader rd;
  rd.name = "fake:gen.gguf";
  rd.mode = "chatml";
  rd.answer = [&](const std::string&) { return std::string("no idea\nmore"); };
  Recorder rec;
  GenerateOptions g;
  g.spotlight_run = sel.run;
  g.origin = common::origin_of(rd, "contract-test", "/models/gen.gguf", std::string(64, 'b'));
  g.hooks = rec.hooks();
  const GenerateSummary sum = run_generate(rd, st, d.recs, g);
  EXPECT_EQ(rd.generate_calls, int(sel.questions));
  EXPECT_EQ(sum.graded, double(sel.questions));
  EXPECT_EQ(rec.steps("begin spotlight generate " + std::to_string(sel.questions)),
            (long long)sel.questions);
  const auto info = st.run(sum.run);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->pipeline, "spotlight generate");
  EXPECT_EQ(info->tool_version, "contract-test");
  EXPECT_EQ(info->model_path, "/models/gen.gguf");
  EXPECT_EQ(info->model_sha256, std::string(64, 'b'));
  EXPECT_EQ(info->reader, "fake:gen.gguf");
  EXPECT_EQ(info->chat_mode, "chatml");
  EXPECT_EQ(info->config.at("spotlight_run"), sel.run);

  // Resumed: nothing generated again, a note says so.
  rec.events.clear();
  const GenerateSummary again = run_generate(rd, st, d.recs, g);
  EXPECT_EQ(again.run, sum.run);
  EXPECT_EQ(rd.generate_calls, int(sel.questions));
  EXPECT_EQ(rec.count_prefix("note spotlight generate: resuming run "), 1u);
}

TEST(SpotlightContract, SweepsReportOneStepPerQuestion) {
  REQUIRE_SHARED(hotpot_path, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  Data d = hotpot(5);
  StaticEncoder enc(d.wv);
  Recorder rec;
  SweepOptions so;
  so.sweeps = true;
  so.hooks = rec.hooks();
  const SweepSummary t = run_sweeps(enc, d.recs, so);
  EXPECT_EQ(rec.steps("begin spotlight eval 5"), 5);
  // Main + 3 ablations + 4 k + 3 lambda; 5 methods x K in {2,4,6,8}; 2 x 4 context lengths.
  EXPECT_EQ(t.rows.size(), 11u);
  EXPECT_EQ(t.krows.size(), 20u);
  EXPECT_EQ(t.crows.size(), 8u);
  for (const auto& r : t.rows) EXPECT_EQ(r.recalls.size() + t.skipped, 5u) << r.method;
}

}  // namespace
}  // namespace ragform::spotlight
