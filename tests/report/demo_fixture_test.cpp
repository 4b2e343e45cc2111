// `ragform demo` end to end on the real stories260K model and the shared data, kept small
// (2 story-needle items, 3 documents, 2 NQ questions, 10 HotpotQA questions): it writes one run
// store and one report with all three sections, a rerun reuses every row, and missing inputs give
// a message naming what to provide.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "store/run_store.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using ragform::testing::run_ragform;

namespace {
const char* kSmall = " --needle 2 -k 3 --nq 2 --hotpot 10";
}

TEST(Demo, WritesOneStoreAndOneReportAndResumes) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  REQUIRE_SHARED(nq, "data/lost-in-the-middle/nq-open-oracle.jsonl.gz");
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  fs::path dir = ragform::testing::temp_dir("demo");
  std::string shared = ragform::testing::shared_dir().string();
  auto r = run_ragform("demo --shared '" + shared + "' --out-dir '" + dir.string() + "'" + kSmall);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path db = dir / "ragform-demo.sqlite", html = dir / "ragform-demo.html";
  ASSERT_TRUE(fs::exists(db));
  ASSERT_TRUE(fs::exists(html));
  EXPECT_NE(r.out.find("report " + html.string()), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("C-NORM    calibrated delimiter f* = "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Spotlight 10 HotpotQA questions, recall@6:"), std::string::npos) << r.out;
  // The paper's category robustness (mean of per-perturbation RR on Golden pairs).
  EXPECT_NE(r.out.find("category RR (mean of its perturbations' RR, Golden pairs): logic "),
            std::string::npos)
      << r.out;
  // Each step is shown as the command it runs.
  for (const char* step :
       {"$ ragform cnorm calibrate", "$ ragform cnorm eval", "$ ragform sure perturb",
        "$ ragform sure filter", "$ ragform sure eval", "$ ragform report"})
    EXPECT_NE(r.err.find(step), std::string::npos) << step;

  ragform::store::RunStore st(db, ragform::store::RunStore::Mode::read_only);
  std::map<std::string, int64_t> rows;
  for (const auto& run : st.runs()) rows[run.pipeline] += st.counts(run.id).rows;
  // S = 6 prompts x 11 default candidates (original and the paper's F with both readings of
  // \cdot).
  EXPECT_EQ(rows["cnorm calibrate"], 6 * 11);
  EXPECT_EQ(rows["cnorm eval"], 2 * 3 * 3);  // items x positions x variants
  EXPECT_GT(rows["sure eval"], 0);
  EXPECT_EQ(rows["spotlight eval"], 10 * 5);  // questions x methods
  std::string page = ragform::testing::read_file(html);
  for (const char* id : {"id=\"cnorm\"", "id=\"sure\"", "id=\"spotlight\"", "id=\"runs\""})
    EXPECT_NE(page.find(id), std::string::npos) << id;
  EXPECT_EQ(page.find("<script"), std::string::npos);

  // Rerun: everything is reused, nothing recomputed.
  auto again =
      run_ragform("demo --shared '" + shared + "' --out-dir '" + dir.string() + "'" + kSmall);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("0 rows written, 50 reused"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("18 of 18 answers already stored"), std::string::npos) << again.err;
  ragform::store::RunStore st2(db, ragform::store::RunStore::Mode::read_only);
  EXPECT_EQ(st2.runs().size(), st.runs().size());
}

TEST(Demo, SaysWhatToProvide) {
  auto r = run_ragform("demo -m /nonexistent/model.gguf --out-dir /nonexistent/out");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing input files (give -m MODEL.gguf for the model, --shared DIR"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos);
  auto u = run_ragform("demo --shared /nonexistent/shared");
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_NE(u.err.find("--shared: /nonexistent/shared is not a directory"), std::string::npos)
      << u.err;
}
