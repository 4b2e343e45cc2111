// The issue-40 reproduction of a key echoed by a server: `sure eval --reader openai` against a fake
// OpenAI-compatible server whose 401 quotes the request's Authorization header printed the key on
// stderr and stored it in every unmeasured row (so `export` and `report` showed it), and `embed
// --base-url` printed it too. The key is now nowhere: stderr, the store's files, the export, the
// report. A base URL with a query string is refused (exit 2) without printing it.
#include <stdlib.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "echo_server.h"
#include "nq_head.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

const std::string kKey = "sk-TOPSECRET-123";

// OPENAI_API_KEY set to the key for one scope (the other key variables cleared).
class KeyEnv {
 public:
  KeyEnv() {
    unsetenv("RAGFORM_API_KEY");
    setenv("OPENAI_API_KEY", kKey.c_str(), 1);
  }
  ~KeyEnv() { unsetenv("OPENAI_API_KEY"); }
};

// A 401 quoting the Authorization header, as the server answered every POST.
std::string bad_key(const std::string& auth) {
  return nlohmann::json{{"error", {{"message", "bad key: " + auth}}}}.dump();
}

// Three NQ questions with their gold passage, and their rule-based pairs.
fs::path pairs_file(const fs::path& dir) {
  auto r = run_ragform("sure perturb --input " + quoted(nq_head_qa(dir)) +
                       " --kinds format/json,metadata/datasource-wiki");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  write_file(dir / "pairs.jsonl", r.out);
  return dir / "pairs.jsonl";
}

void expect_no_key(const std::string& text, const std::string& where) {
  EXPECT_EQ(text.find(kKey.substr(0, 8)), std::string::npos) << where << ":\n" << text;
}

TEST(SecretEchoCli, AnEchoedKeyIsNotPrintedStoredExportedOrReported) {
  const fs::path dir = temp_dir("secret-echo-cli");
  const fs::path pairs = pairs_file(dir);
  EchoServer srv(401, bad_key, "x");  // /v1/models names model "x"
  KeyEnv key;
  const fs::path store = dir / "sk.sqlite";
  auto r = run_ragform("sure eval --reader openai --base-url " + srv.url() + " -m x --store " +
                       quoted(store) + " --input " + quoted(pairs) + " --retries 0");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("HTTP 401"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad key: Bearer ***"), std::string::npos) << r.err;
  expect_no_key(r.err, "stderr");
  expect_no_key(r.out, "stdout");
  // The store's files, byte for byte (the rows hold the reason they are unmeasured).
  ASSERT_TRUE(fs::exists(store));
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("sk.sqlite", 0) == 0)
      expect_no_key(read_file(e.path()), e.path().string());
  auto ex = run_ragform("export " + quoted(store));
  EXPECT_EQ(ex.exit_code, 0) << ex.err;
  EXPECT_NE(ex.out.find("Bearer ***"), std::string::npos) << ex.out;
  expect_no_key(ex.out, "export");
  auto rep = run_ragform("report " + quoted(store) + " -o " + quoted(dir / "r.html"));
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  expect_no_key(read_file(dir / "r.html"), "report");

  // The remote encoder shares the client.
  write_file(dir / "a.txt", "a man sleeps");
  r = run_ragform("embed --json -f " + quoted(dir / "a.txt") + " --base-url " + srv.url());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("HTTP 401"), std::string::npos) << r.err;
  expect_no_key(r.err, "embed stderr");
}

TEST(SecretEchoCli, ABaseUrlWithAQueryIsRefusedWithoutPrintingIt) {
  const fs::path dir = temp_dir("secret-echo-query");
  write_file(dir / "a.txt", "a man sleeps");
  auto r = run_ragform("embed --json -f " + quoted(dir / "a.txt") +
                       " --base-url 'http://127.0.0.1:9/v1?api_key=sk-QUERYSECRET'");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--base-url"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("QUERYSECRET"), std::string::npos) << r.err;
  const fs::path pairs = pairs_file(dir);
  r = run_ragform(
      "sure eval --reader openai --base-url 'http://127.0.0.1:9/v1?api_key=sk-QUERYSECRET'"
      " -m x --input " +
      quoted(pairs) + " --retries 0 --store " + quoted(dir / "q.sqlite"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--base-url"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("QUERYSECRET"), std::string::npos) << r.err;
  // A password holding a '/' is not printed either.
  r = run_ragform(
      "sure eval --reader openai --base-url 'http://bob:s3cr/et@127.0.0.1:9/v1'"
      " -m x --input " +
      quoted(pairs) + " --retries 0 --timeout 2 --store " + quoted(dir / "b.sqlite"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.find("s3cr"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ragform::testing
