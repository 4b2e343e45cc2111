// `ragform tune --reader openai` against `ragform serve`: the same search natively and through a
// served stories260K measures the same prompts with the same answers (accuracy through generation,
// the ABS filter through the server's /v1/attention) and ends with the same profile.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "server/serve_harness.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace {

using namespace ragform::testing;

std::string tune_args(const std::filesystem::path& dir) {
  return " --task needle --ctx 512 --needle-slots 8 --dev-items 8 --holdout-items 6"
         " --delims original,- --p 1 --formats plain,json --orders retrieved,reversed --k all"
         " --abs-prompts 2 --budget 60 --json --store " +
         quoted(dir / "s.sqlite");
}

// The search's rows: (instance, variant) -> (prompt, answer, correct, prompt tokens).
using Rows = std::map<std::pair<std::string, std::string>,
                      std::tuple<std::string, std::string, int, int64_t>>;
Rows search_rows(const std::filesystem::path& db) {
  ragform::store::RunStore st(db, ragform::store::RunStore::Mode::read_only);
  Rows out;
  for (const auto& r : st.results(std::nullopt))
    if (r.variant.rfind("acc ", 0) == 0 || r.variant.rfind("rob ", 0) == 0)
      out[{r.instance, r.variant}] = {r.prompt, r.output, r.correct ? int(*r.correct) : -1,
                                      r.prompt_tokens.value_or(-1)};
  return out;
}

TEST(TuneServed, SameProfileAndRowsNativelyAndThroughRagformServe) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto native_dir = temp_dir("tune_served_native"), served_dir = temp_dir("tune_served_openai");
  RunResult native = run_ragform("tune -m " + quoted(model) + tune_args(native_dir));
  ASSERT_EQ(native.exit_code, 0) << native.err;

  ServeProcess srv({"-m", model.string(), "--ctx", "512"});
  RunResult served = run_ragform("tune --reader openai --base-url " + srv.url() +
                                 "/v1 -m stories260K" + tune_args(served_dir));
  ASSERT_EQ(served.exit_code, 0) << served.err;

  const nlohmann::json a = json_lines(native.out).at(0), b = json_lines(served.out).at(0);
  EXPECT_EQ(a["abs_filter"], "on");
  EXPECT_EQ(b["abs_filter"], "on");  // ragform serve gives attention
  EXPECT_EQ(a["profile"]["presentation"], b["profile"]["presentation"]);
  EXPECT_EQ(a["winner"], b["winner"]);
  EXPECT_EQ(a["spent"], b["spent"]);
  EXPECT_EQ(a["finalists"], b["finalists"]);
  ASSERT_EQ(a["trajectory"].size(), b["trajectory"].size());
  for (size_t i = 0; i < a["trajectory"].size(); ++i) {
    const auto &x = a["trajectory"][i], &y = b["trajectory"][i];
    EXPECT_EQ(x["label"], y["label"]);
    EXPECT_EQ(x["dropped_at"], y["dropped_at"]) << x["label"];
    EXPECT_EQ(x["accuracy"], y["accuracy"]) << x["label"];
    EXPECT_EQ(x["n"], y["n"]) << x["label"];
    if (x["dropped_at"] != "abs") {
      EXPECT_GT(x["n"].get<int>(), 0) << x["label"];  // answered, not its ABS row
    }
    EXPECT_EQ(x["tokens"], y["tokens"]) << x["label"];
    ASSERT_EQ(x["abs"].is_number(), y["abs"].is_number()) << x["label"];
    if (x["abs"].is_number()) {
      EXPECT_NEAR(x["abs"].get<double>(), y["abs"].get<double>(), 1e-4) << x["label"];
    }
  }
  EXPECT_EQ(a["holdout"]["original"]["accuracy"], b["holdout"]["original"]["accuracy"]);
  EXPECT_EQ(a["holdout"]["tuned"]["accuracy"], b["holdout"]["tuned"]["accuracy"]);
  const Rows ra = search_rows(native_dir / "s.sqlite"), rb = search_rows(served_dir / "s.sqlite");
  EXPECT_GT(ra.size(), 0u);
  EXPECT_EQ(ra, rb);
}

}  // namespace
