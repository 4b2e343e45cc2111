// A reproduce value over no item (n = 0) is "not measured", never a 0.0: run_job stores it as an
// unmeasured row (a resume that measures it replaces the row) and the report's "Paper vs this run"
// section shows "not measured" in place of a number and of a difference from the paper's.
#include <gtest/gtest.h>

#include "report/report.h"
#include "reproduce/jobs.h"
#include "reproduce/reproduce.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::reproduce {
namespace {

Job job_with(std::vector<Value> values) {
  Job j;
  j.planned.info = experiments_of("spotlight").at(0);
  j.run = [values](reader::Reader&, store::RunStore&) { return values; };
  return j;
}

TEST(ReproduceNotMeasured, AValueOverNoItemIsStoredAndShownAsNotMeasured) {
  auto dir = testing::temp_dir("reproduce-not-measured");
  store::RunStore st(dir / "run.sqlite");
  testing::FakeReader rd;
  Options opt;
  opt.paper = "spotlight";
  opt.paper_model = "generator (not named)";  // the paper's model: a difference column
  const Value none = detail::proportion("SpotlightRAG", "EM (w/o training)", 0, 0, 100);
  EXPECT_FALSE(none.measured());
  auto res = run_job(rd, st, job_with({none}), opt);
  auto rows = st.results(res.run);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, store::Status::unmeasured);
  EXPECT_NE(rows[0].error.find("not measured"), std::string::npos);

  std::string page = report::render_report(st, {});
  EXPECT_NE(page.find("<td>SpotlightRAG</td><td>EM (w/o training)</td>"), std::string::npos)
      << page;
  EXPECT_NE(page.find("not measured"), std::string::npos);
  EXPECT_EQ(page.find("<td>0.000</td>"), std::string::npos) << "a 0 shown for no item";

  // Measured on a resume: the row is replaced by the value.
  auto again = run_job(
      rd, st, job_with({detail::proportion("SpotlightRAG", "EM (w/o training)", 1, 2, 100)}), opt);
  EXPECT_EQ(again.run, res.run);
  rows = st.results(res.run);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, store::Status::ok);
  EXPECT_DOUBLE_EQ(rows[0].scores.at("value"), 50.0);
}

}  // namespace
}  // namespace ragform::reproduce
