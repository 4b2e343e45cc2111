// The index build reports its progress through the caller's RunHooks (base/run_hooks.h) and never
// draws on stderr itself: a front end decides how progress is shown (the CLI's line, Python's
// callback, nothing for a server).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/progress.h"
#include "retrieval/index_build.h"
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
  std::vector<std::string> events;
  uint64_t advanced = 0;
  o.hooks.begin = [&](const std::string& label, uint64_t total) {
    events.push_back("begin " + label + " " + std::to_string(total));
  };
  o.hooks.advance = [&](uint64_t n) { advanced += n; };
  o.hooks.end = [&] { events.push_back("end"); };
  const auto s = retrieval::build_index(o);
  EXPECT_EQ(s.read, 7u);
  EXPECT_EQ(advanced, 7u);
  EXPECT_EQ(events, (std::vector<std::string>{"begin index 0", "end"}));
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
