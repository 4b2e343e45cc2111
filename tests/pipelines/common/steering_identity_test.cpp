// A reader's attention steering is part of a run's identity (common::origin_of, record_origin):
// steered and unsteered runs, or runs under two settings, never merge in a run store; the same
// setting resumes its run; an unsteered run keeps the identity it had before steering existed.
#include <gtest/gtest.h>

#include "pipelines/common/common.h"
#include "support/fake_reader.h"
#include "support/test_support.h"

namespace ragform::common {
namespace {

int64_t run_of(store::RunStore& st, const reader::Reader& r) {
  store::RunConfig rc;
  rc.pipeline = "test verb";
  rc.config = {{"k", 1}};
  const RunOrigin o = origin_of(r, "v1", "m.gguf", std::string(64, 'a'));
  return begin_or_resume(st, rc, o, RunHooks{}, "test verb", 0, "rows").run;
}

TEST(SteeringIdentity, SteeredAndUnsteeredRunsNeverMerge) {
  store::RunStore st(ragform::testing::temp_dir("steer-identity") / "runs.sqlite",
                     store::RunStore::Mode::create, store::RunStore::Durability::normal);
  ragform::testing::FakeReader rd;
  rd.name = "fake:model.gguf";
  rd.mode = "raw";
  const int64_t plain = run_of(st, rd);
  EXPECT_EQ(st.run(plain)->reader, "fake:model.gguf");  // unchanged when off

  runtime::parse_steer_rule("rescale:2", rd.steering, "--steer");
  rd.steering.spans = {{0, 10}};
  const int64_t steered = run_of(st, rd);
  EXPECT_NE(steered, plain);
  EXPECT_EQ(st.run(steered)->reader,
            "fake:model.gguf#steer=rescale:2|chars=0:10|layers=default|heads=all|rows=pasta");
  EXPECT_EQ(run_of(st, rd), steered);  // the same setting resumes its run

  rd.steering.layers = {{-1, -1}};
  const int64_t other = run_of(st, rd);
  EXPECT_NE(other, steered);
  EXPECT_NE(other, plain);

  // rescale:1 is no steering: the unsteered run.
  runtime::parse_steer_rule("rescale:1", rd.steering, "--steer");
  EXPECT_EQ(run_of(st, rd), plain);
}

}  // namespace
}  // namespace ragform::common
