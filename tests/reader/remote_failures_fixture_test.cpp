// Runs over a remote reader that measures nothing fail (reader/measured.h): `sure eval`, `sure
// prepare` and `reproduce` against `ragform serve --api-key K` without the key (401) and against a
// port with nothing listening exit 1 with the server's reason on one line; a run with some rows
// measured and others failed exits 0 with the unmeasured count. `embed` / `classify --base-url`
// send the key by the readers' rule (--api-key-env, OPENAI_API_KEY, RAGFORM_API_KEY).
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "nq_head.h"
#include "server/serve_harness.h"
#include "store/run_store.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

// The environment variables of the key rule, set for one scope (every key variable is cleared
// first, so the machine's own cannot leak into a test).
class KeyEnv {
 public:
  explicit KeyEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* v : {"OPENAI_API_KEY", "RAGFORM_API_KEY", "MY_KEY"}) unsetenv(v);
    for (const auto& [k, v] : vars) setenv(k, v, 1);
  }
  ~KeyEnv() {
    for (const char* v : {"OPENAI_API_KEY", "RAGFORM_API_KEY", "MY_KEY"}) unsetenv(v);
  }
};

// A loopback port with nothing listening: bound by the kernel's choice, then closed.
int closed_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t n = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  close(fd);
  return ntohs(a.sin_port);
}

// Three NQ questions with their gold passage cut to `sentences` sentences; the third one's passage
// repeated `long_times` times (a prompt over a small server context).
fs::path qa_file(const fs::path& dir, size_t long_times) {
  return nq_head_qa(dir, [&](int i, std::string t) {
    const size_t dot = t.find(". ");
    if (dot != std::string::npos) t = t.substr(0, dot + 1);
    if (i == 2) {
      const std::string one = t;
      for (size_t k = 1; k < long_times; ++k) t += " " + one;
    }
    return t;
  });
}

// Rule-based pairs (two kinds) of qa_file's questions.
fs::path pairs_file(const fs::path& dir, size_t long_times) {
  auto r = run_ragform("sure perturb --input " + quoted(qa_file(dir, long_times)) +
                       " --kinds format/json,metadata/datasource-wiki");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_lines(r.out).size(), 6u);
  write_file(dir / "pairs.jsonl", r.out);
  return dir / "pairs.jsonl";
}

std::string url(int port) { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }

// The error is the last stderr line, one line "ragform: <what>: <why>".
void expect_one_line_error(const RunResult& r, const std::string& what, const std::string& why) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  ASSERT_FALSE(r.err.empty());
  std::string last = r.err.substr(0, r.err.size() - 1);
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  EXPECT_EQ(last.rfind("ragform: " + what + ": ", 0), 0u) << r.err;
  EXPECT_NE(last.find(why), std::string::npos) << r.err;
}

class RemoteFailures : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path model = shared_path("fixtures/models/stories260K.gguf");
    KeyEnv none({});
    srv_ = new ServeProcess({"-m", model.string(), "--ctx", "2048", "--api-key", "K"});
  }
  static void TearDownTestSuite() {
    delete srv_;
    srv_ = nullptr;
  }
  static ServeProcess* srv_;
};
ServeProcess* RemoteFailures::srv_ = nullptr;

TEST_F(RemoteFailures, SureEvalWithoutTheKeyExits1WithTheServersReason) {
  auto dir = temp_dir("remote-fail-eval");
  auto pairs = pairs_file(dir, 1);
  const std::string args = "sure eval --input " + quoted(pairs) +
                           " --reader openai --retries 0 --base-url " + url(srv_->port()) +
                           " --store " + quoted(dir / "run.sqlite");
  {
    KeyEnv none({});
    auto r = run_ragform(args);
    expect_one_line_error(r, "sure eval", "HTTP 401");
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find("rows unmeasured"), std::string::npos) << r.err;
    // The rows are stored as unmeasured, with the reason, for a resume with the key.
    store::RunStore st(dir / "run.sqlite", store::RunStore::Mode::read_only);
    ASSERT_EQ(st.runs().size(), 1u);
    EXPECT_GT(st.counts(st.runs()[0].id).unmeasured, 0);
    EXPECT_EQ(st.counts(st.runs()[0].id).ok, 0);
  }
  // The same run resumed with the key (from RAGFORM_API_KEY alone: the variable serve reads)
  // measures every row.
  KeyEnv key({{"RAGFORM_API_KEY", "K"}});
  auto r = run_ragform(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(" 0 unmeasured"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("6 pairs measured, 0 not"), std::string::npos) << r.err;
}

TEST_F(RemoteFailures, SureEvalAgainstNothingListeningExits1) {
  auto dir = temp_dir("remote-fail-closed");
  auto pairs = pairs_file(dir, 1);
  auto r = run_ragform("sure eval --input " + quoted(pairs) +
                       " --reader openai --retries 0 --base-url " + url(closed_port()) +
                       " --store " + quoted(dir / "run.sqlite"));
  expect_one_line_error(r, "sure eval", "no answer from");
}

// Some rows measured, others refused (a prompt over the server's context): success, with the
// unmeasured count on stderr.
TEST_F(RemoteFailures, SureEvalWithSomeRowsMeasuredExits0WithTheCount) {
  auto dir = temp_dir("remote-fail-partial");
  auto pairs = pairs_file(dir, 60);
  KeyEnv key({{"OPENAI_API_KEY", "K"}});
  auto r = run_ragform("sure eval --input " + quoted(pairs) +
                       " --reader openai --retries 0 --base-url " + url(srv_->port()) +
                       " --store " + quoted(dir / "run.sqlite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find(" 0 unmeasured"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4 pairs measured, 2 not"), std::string::npos) << r.err;
  EXPECT_FALSE(json_lines(r.out).empty());
}

// The reader-made perturbations and the NLI filter follow the same rule.
TEST_F(RemoteFailures, SurePerturbAndFilterWithoutTheKeyExit1) {
  auto dir = temp_dir("remote-fail-perturb");
  auto qa = qa_file(dir, 1);
  const std::string remote = " --reader openai --retries 0 --base-url " + url(srv_->port());
  KeyEnv none({});
  auto r = run_ragform("sure perturb --input " + quoted(qa) + " --kinds style/simple" + remote);
  expect_one_line_error(r, "sure perturb", "HTTP 401");
  EXPECT_TRUE(r.out.empty()) << r.out;
  auto pairs = pairs_file(dir, 1);
  r = run_ragform("sure filter --input " + quoted(pairs) + " --nli all" + remote);
  expect_one_line_error(r, "sure filter", "HTTP 401");
  EXPECT_TRUE(r.out.empty()) << r.out;
  // With the key both run (the story model's NLI verdicts keep few pairs, if any: mechanics).
  KeyEnv key({{"OPENAI_API_KEY", "K"}});
  r = run_ragform("sure perturb --input " + quoted(qa) + " --kinds style/simple" + remote);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_ragform("sure filter --input " + quoted(pairs) + " --nli all" + remote);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(RemoteFailures, SurePrepareWithoutTheKeyExits1) {
  auto dir = temp_dir("remote-fail-prepare");
  write_file(dir / "corpus.jsonl",
             "{\"id\": \"a\", \"title\": \"Physics\", \"text\": \"The first Nobel Prize in "
             "Physics went to Wilhelm Conrad Roentgen.\"}\n"
             "{\"id\": \"b\", \"title\": \"Cats\", \"text\": \"Cats sleep a lot.\"}\n");
  auto r = run_ragform("index build --corpus " + quoted(dir / "corpus.jsonl") + " -o " +
                       quoted(dir / "ix"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto q = qa_file(dir, 1);
  const std::string args = "sure prepare --index " + quoted(dir / "ix") + " --input " + quoted(q) +
                           " --reader openai --retries 0 --base-url " + url(srv_->port()) +
                           " --store " + quoted(dir / "run.sqlite");
  KeyEnv none({});
  r = run_ragform(args);
  expect_one_line_error(r, "sure prepare", "HTTP 401");
  EXPECT_TRUE(r.out.empty()) << r.out;
  // --api-key-env names the variable; then every closed-book row is measured.
  KeyEnv mine({{"MY_KEY", "K"}});
  r = run_ragform(args + " --api-key-env MY_KEY");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(RemoteFailures, ReproduceWithoutTheKeyOrAServerExits1) {
  auto dir = temp_dir("remote-fail-reproduce");
  KeyEnv none({});
  for (const char* paper : {"spotlight", "sure"}) {
    auto r = run_ragform(std::string("reproduce ") + paper +
                         " --reader openai --retries 0 -m stories260K --base-url " +
                         url(srv_->port()) + " --store " + quoted(dir / "run.sqlite") + " -o " +
                         quoted(dir / "report.html"));
    expect_one_line_error(r, "openai reader", "HTTP 401");
    EXPECT_TRUE(r.out.empty()) << r.out;  // no figure, least of all a 0.0
  }
  auto r =
      run_ragform("reproduce spotlight --reader openai --retries 0 -m stories260K --base-url " +
                  url(closed_port()) + " --store " + quoted(dir / "run2.sqlite") + " -o " +
                  quoted(dir / "report2.html"));
  expect_one_line_error(r, "openai reader", "no answer from");
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// embed / classify --base-url take the key as the readers do.
TEST(RemoteEncoderKey, EmbedAndClassifySendTheKey) {
  REQUIRE_SHARED(bert, "fixtures/models/tiny-bert.gguf");
  REQUIRE_SHARED(nli, "fixtures/models/tiny-bert-nli.gguf");
  auto dir = temp_dir("remote-encoder-key");
  write_file(dir / "a.txt", "a man sleeps");
  write_file(dir / "b.txt", "a person rests");
  KeyEnv none({});
  ServeProcess emb({"-m", bert.string(), "--api-key", "K"});
  ServeProcess cls({"-m", nli.string(), "--api-key", "K"});
  const std::string embed =
      "embed --json -f " + quoted(dir / "a.txt") + " --base-url " + url(emb.port());
  const std::string classify = "classify --json -f " + quoted(dir / "a.txt") + " --pair-file " +
                               quoted(dir / "b.txt") + " --base-url " + url(cls.port());
  for (const std::string& cmd : {embed, classify}) {
    auto r = run_ragform(cmd);
    expect_one_line_error(r, "remote encoder", "HTTP 401");
    for (auto env : {std::pair{"OPENAI_API_KEY", ""}, std::pair{"RAGFORM_API_KEY", ""},
                     std::pair{"MY_KEY", " --api-key-env MY_KEY"}}) {
      KeyEnv key({{env.first, "K"}});
      r = run_ragform(cmd + env.second);
      EXPECT_EQ(r.exit_code, 0) << cmd << env.second << " with " << env.first << "\n" << r.err;
      EXPECT_FALSE(json_lines(r.out).empty());
    }
  }
}

}  // namespace
}  // namespace ragform::testing
