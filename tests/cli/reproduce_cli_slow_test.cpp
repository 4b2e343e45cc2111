// `ragform reproduce cnorm` at smoke scale on stories260K (about 20 s on this project's 2-core VM):
// the controlled NQ sweep and KV retrieval run end to end, and the report puts section 3's OAA
// (0.810 -> 0.102) beside the run's when the model is named as LLaMA-2-7B-Chat.
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace fs = std::filesystem;
using ragform::testing::quoted;
using ragform::testing::run_ragform;

TEST(ReproduceCliSlow, CnormSmokeRun) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  fs::path dir = ragform::testing::temp_dir("reproduce-cli-cnorm");
  fs::path db = dir / "run.sqlite", html = dir / "report.html";
  auto r = run_ragform("reproduce cnorm -m " + quoted(model) +
                       " --paper-model LLaMA-2-7B-Chat --scale smoke --store " + quoted(db) +
                       " -o " + quoted(html));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("reproduce: skipped cnorm longbench: LongBench-v2"), std::string::npos);
  auto lines = ragform::testing::json_lines(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0]["experiment"], "nq-sweep");
  EXPECT_EQ(lines[1]["experiment"], "kv-retrieval");
  std::string page = ragform::testing::read_file(html);
  EXPECT_NE(page.find("cnorm · nq-sweep"), std::string::npos);
  EXPECT_NE(page.find("<td>UUID (-)</td><td>OAA</td><td>0.810"), std::string::npos);
  EXPECT_NE(page.find("<td>Modified UUID (&amp;)</td><td>OAA</td><td>0.102"), std::string::npos);
}
