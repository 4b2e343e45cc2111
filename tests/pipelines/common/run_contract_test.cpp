// The runner contract (pipelines/common/common.h): the one version string, the origin a run
// records (filled from a reader, or without one), begin-or-resume over a run store with its note,
// and a Stage that always closes what it began.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "pipelines/common/common.h"
#include "ragform_version.h"
#include "support/fake_reader.h"
#include "support/recording_hooks.h"
#include "support/test_support.h"

namespace ragform::common {
namespace {

TEST(RunContract, ToolVersionIsTheVersionAndGitDescription) {
  EXPECT_EQ(tool_version(), std::string(RAGFORM_VERSION) + " (git " + RAGFORM_GIT + ")");
}

TEST(RunContract, VersionFlagPrintsTheToolVersion) {
  auto r = ragform::testing::run_ragform("--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "ragform " + tool_version());
}

TEST(RunContract, OriginFromAReaderOrWithoutOne) {
  ragform::testing::FakeReader rd;
  rd.name = "fake:model.gguf";
  rd.mode = "chatml";
  const RunOrigin o = origin_of(rd, "v1", "/m/model.gguf", std::string(64, 'a'));
  EXPECT_EQ(o.tool_version, "v1");
  EXPECT_EQ(o.model_path, "/m/model.gguf");
  EXPECT_EQ(o.model_sha256, std::string(64, 'a'));
  EXPECT_EQ(o.reader, "fake:model.gguf");
  EXPECT_EQ(o.chat_mode, "chatml");

  store::RunConfig rc;
  record_origin(rc, o);
  EXPECT_EQ(rc.tool_version, "v1");
  EXPECT_EQ(rc.model_path, "/m/model.gguf");
  EXPECT_EQ(rc.model_sha256, std::string(64, 'a'));
  EXPECT_EQ(rc.reader, "fake:model.gguf");
  EXPECT_EQ(rc.chat_mode, "chatml");

  // Without a reader (an encoder-only run): the tool version, reader and chat mode "none".
  RunOrigin none;
  none.tool_version = "v2";
  record_origin(rc, none);
  EXPECT_EQ(rc.tool_version, "v2");
  EXPECT_EQ(rc.model_path, "");
  EXPECT_EQ(rc.model_sha256, "");
  EXPECT_EQ(rc.reader, "none");
  EXPECT_EQ(rc.chat_mode, "none");
}

TEST(RunContract, BeginOrResumeRecordsTheOriginAndNotesAResume) {
  store::RunStore st(ragform::testing::temp_dir("run-contract") / "runs.sqlite",
                     store::RunStore::Mode::create, store::RunStore::Durability::normal);
  std::vector<std::string> notes;
  RunHooks h;
  h.note = [&](const std::string& s) { notes.push_back(s); };
  store::RunConfig rc;
  rc.pipeline = "test verb";
  rc.config = {{"k", 1}};
  RunOrigin o;
  o.tool_version = "v1";
  o.model_path = "m.gguf";
  o.reader = "fake";
  o.chat_mode = "raw";

  const Resumed first = begin_or_resume(st, rc, o, h, "test verb", 3, "rows");
  EXPECT_TRUE(first.done.empty());
  EXPECT_EQ(notes.size(), 0u);
  const auto info = st.run(first.run);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->pipeline, "test verb");
  EXPECT_EQ(info->tool_version, "v1");
  EXPECT_EQ(info->model_path, "m.gguf");
  EXPECT_EQ(info->reader, "fake");
  EXPECT_EQ(info->chat_mode, "raw");

  store::Result row;
  row.run = first.run;
  row.instance = "q1";
  row.variant = "v";
  st.put(row);
  // A rebuilt binary (another tool version) resumes the same run; its done rows come back.
  o.tool_version = "v2";
  const Resumed again = begin_or_resume(st, rc, o, h, "test verb", 3, "rows");
  EXPECT_EQ(again.run, first.run);
  EXPECT_EQ(again.done, (std::set<store::Key>{{"q1", "v"}}));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], "test verb: resuming run " + std::to_string(first.run) +
                          ": 1 of 3 rows already stored");
  // Another reader is another run.
  o.reader = "fake2";
  EXPECT_NE(begin_or_resume(st, rc, o, h, "test verb", 0, "rows").run, first.run);
}

TEST(RunContract, StageBeginsAdvancesAndEndsEvenOnAnError) {
  ragform::testing::RecordingHooks rec;
  const RunHooks h = rec.hooks();
  try {
    Stage s(h, "work", 2);
    s.add();
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(rec.events, (std::vector<std::string>{"begin work 2", "advance 1", "end"}));
  // Empty hooks are fine.
  RunHooks none;
  Stage quiet(none, "x", 1);
  quiet.add(1);
  none.say("nobody listens");
}

}  // namespace
}  // namespace ragform::common
