// The index build reports its progress through the caller's RunHooks (base/run_hooks.h) and never
// draws on stderr itself: a front end decides how progress is shown (the CLI's line, Python's
// callback, nothing for a server).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/progress.h"
#include "retrieval/index_build.h"
#include "support/recording_hooks.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

std::filesystem::path write_corpus(const std::filesystem::path& dir, int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    text += "{\"id\": \"p" + std::to_string(i) + "\", \"text\": \"passage number " +
            std::to_string(i) + "\"}\n";
  write_file(dir / "corpus.jsonl", text);
  return dir / "corpus.jsonl";
}

TEST(IndexBuildHooks, OneStageAdvancedOncePerPassage) {
  const auto dir = temp_dir("index-hooks");
  retrieval::BuildOptions o;
  o.corpus = write_corpus(dir, 7).string();
  o.dir = (dir / "ix").string();
  o.checkpoint = 3;  // checkpoints in between do not end the stage
  RecordingHooks rec;
  o.hooks = rec.hooks();
  const auto s = retrieval::build_index(o);
  EXPECT_EQ(s.read, 7u);
  EXPECT_EQ(rec.advanced, 7u);
  // One stage, all seven passages inside it, no note.
  EXPECT_EQ(rec.count_prefix("begin "), 1u);
  EXPECT_EQ(rec.count_prefix("end"), 1u);
  EXPECT_EQ(rec.steps("begin index 0"), 7);
  EXPECT_EQ(rec.events.back(), "end");
  EXPECT_EQ(rec.count_prefix("note "), 0u);
}

TEST(IndexBuildHooks, DrawsNothingWithoutHooks) {
  const auto dir = temp_dir("index-nohooks");
  retrieval::BuildOptions o;
  o.corpus = write_corpus(dir, 5).string();
  o.dir = (dir / "ix").string();
  // Progress lines forced on, as RAGFORM_PROGRESS=always does: any line would come from the
  // library itself.
  Progress::set_mode(Progress::Mode::always);
  ::testing::internal::CaptureStderr();
  retrieval::build_index(o);
  const std::string err = ::testing::internal::GetCapturedStderr();
  Progress::set_mode(Progress::Mode::automatic);
  EXPECT_EQ(err, "");
}

}  // namespace
}  // namespace ragform::testing
