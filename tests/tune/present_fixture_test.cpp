// One tuned profile applied to the same records by the three front ends of tune::present:
// `ragform present --json`, serve's POST /v1/rag/present and Python's ragform.present give the
// same bytes (prompts, and the token counts of the same model), and refuse the same bad record
// with the same reason, each naming where it came from in its own way.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "server/serve_harness.h"
#include "store/sha256.h"

namespace ragform::testing {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;
namespace fs = std::filesystem;

json profile(const json& presentation, const std::string& task = "qa") {
  return {{"format", "ragform-tune-profile"},
          {"schema_version", 1},
          {"presentation", presentation},
          {"searched", {"delimiter", "p", "format", "order", "k", "spotlight"}},
          {"model", "stories260K.gguf"},
          {"model_sha256", ""},
          {"reader", "native"},
          {"task", task},
          {"objective", "accuracy"},
          {"run", {{"store", "tune.sqlite"}, {"id", 1}}}};
}

// Three records: plain ASCII, a retriever's scores, and non-ASCII text with odd whitespace.
const std::vector<json> kRecords = {
    {{"id", "r1"},
     {"question", "Who played with Max?"},
     {"answers", {"Lily"}},
     {"ctxs",
      {{{"title", "Park"},
        {"text",
         "Lily went to the park. She saw a big dog. The dog was named Max. Lily and Max played."},
        {"isgold", true}},
       {{"title", "Ball"}, {"text", "Tom had a red ball.  He threw it\thigh in the sky."}},
       {{"title", "Pond"}, {"text", "The ball fell into the pond. A duck swam to it."}}}}},
    {{"id", "r2"},
     {"question", "What did Tom throw?"},
     {"answers", {"ball"}},
     {"ctxs",
      {{{"title", "Ball"}, {"text", "Tom had a red ball. He threw it high."}, {"score", 0.2}},
       {{"title", "Park"}, {"text", "Lily went to the park."}, {"score", 0.9}},
       {{"title", "Sun"}, {"text", "The sun went down. It was late."}, {"score", 0.5}}}}},
    {{"id", "r3"},
     {"question", "Where is the caf\xC3\xA9?"},
     {"answers",
      {"Z\xC3\xBC"
       "rich"}},
     {"ctxs",
      {{{"title", "Caf\xC3\xA9"},
        {"text",
         "Z\xC3\xBC"
         "rich has a caf\xC3\xA9. Its coffee is strong \"and\" hot."}},
       {{"title", "Tea"}, {"text", "Tea is <hot> & green. It is sold in Bern."}}}}}};

RunResult python_present(const fs::path& module, const fs::path& profile_file,
                         const fs::path& records, const fs::path& model) {
  return run_python("present-py", module, R"(import json, sys
import ragform
m = ragform.Model(sys.argv[3], ctx=1024)
with open(sys.argv[2], encoding="utf-8") as f:
    for line in f:
        try:
            got = ragform.present(json.loads(line), sys.argv[1], model=m)
        except ValueError as e:
            sys.stdout.write("ValueError: %s\n" % e)
            break
        sys.stdout.write(json.dumps(got, ensure_ascii=False, separators=(",", ":")) + "\n")
)",
                    {profile_file.string(), records.string(), model.string()});
}

httplib::Result post_present(int port, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  return c.Post("/v1/rag/present", body.dump(), "application/json");
}

// The server's objects, one compact line each as the CLI prints them (keys in the server's order).
std::string server_lines(const httplib::Result& r) {
  if (!r || r->status != 200) return r ? r->body : "no answer";
  std::string out;
  const ordered_json j = ordered_json::parse(r->body);
  for (const auto& o : j["data"]) out += o.dump() + "\n";
  return out;
}

class PresentFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
    model_ = model;
    module_ = python_module();
    if (module_.empty()) GTEST_SKIP() << "no Python module in " << RAGFORM_BINARY_DIR << "/python";
    dir_ = temp_dir("present");
    std::string lines;
    for (const auto& r : kRecords) lines += r.dump() + "\n";
    write_file(dir_ / "records.jsonl", lines);
  }
  fs::path write_profile(const std::string& name, const json& prof) {
    write_file(dir_ / name, prof.dump(2));
    return dir_ / name;
  }
  RunResult cli(const fs::path& pf, const fs::path& records) {
    return run_ragform("present --json --profile " + quoted(pf) + " --input " + quoted(records) +
                       " -m " + quoted(model_) + " --ctx 1024");
  }
  fs::path model_, module_, dir_;
};

TEST_F(PresentFixture, CliServerAndPythonGiveTheSameBytes) {
  ServeProcess srv({"-m", model_.string(), "--ctx", "1024"});
  const std::vector<json> profiles = {
      profile(json::object()),  // the original presentation
      profile({{"delimiter", "-"},
               {"p", 0.5},
               {"format_seed", 3},
               {"format", "json"},
               {"order", "reversed"},
               {"k", 2}}),
      profile({{"delimiter", "original"}, {"format", "html"}, {"order", "edges"}}),
      profile({{"format", "yaml"}, {"order", "score"}, {"delimiter", "&"}, {"p", 1.0}}),
      profile({{"spotlight", 2}, {"spotlight_tokens", true}, {"order", "score"}}),
      profile({{"delimiter", "-"}, {"p", 1.0}, {"format", "markdown"}}, "needle")};
  for (size_t i = 0; i < profiles.size(); ++i) {
    SCOPED_TRACE(profiles[i]["presentation"].dump() + " " + profiles[i]["task"].dump());
    const fs::path pf = write_profile("p" + std::to_string(i) + ".json", profiles[i]);
    const RunResult c = cli(pf, dir_ / "records.jsonl");
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const std::vector<json> lines = json_lines(c.out);
    ASSERT_EQ(lines.size(), kRecords.size()) << c.out;
    for (const auto& l : lines) EXPECT_GT(l["prompt_tokens"].get<int>(), 0) << l.dump();

    const RunResult py = python_present(module_, pf, dir_ / "records.jsonl", model_);
    EXPECT_EQ(py.exit_code, 0) << py.err;
    EXPECT_EQ(py.out, c.out);

    json recs = json::array();
    for (const auto& r : kRecords) recs.push_back(r);
    EXPECT_EQ(server_lines(post_present(srv.port(), {{"profile", profiles[i]}, {"records", recs}})),
              c.out);
    // One record alone: the same object, not a list.
    auto one = post_present(srv.port(), {{"profile", profiles[i]}, {"record", kRecords[2]}});
    ASSERT_TRUE(one);
    ASSERT_EQ(one->status, 200) << one->body;
    const size_t third = c.out.find('\n', c.out.find('\n') + 1) + 1;
    EXPECT_EQ(one->body + "\n", c.out.substr(third));
  }
  // Different presentations render different prompts: the profiles were applied, not ignored.
  const RunResult a = cli(write_profile("a.json", profiles[0]), dir_ / "records.jsonl");
  const RunResult b = cli(write_profile("b.json", profiles[1]), dir_ / "records.jsonl");
  EXPECT_NE(json_lines(a.out)[0]["prompt"], json_lines(b.out)[0]["prompt"]);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST_F(PresentFixture, ABadRecordIsRefusedAlike) {
  ServeProcess srv({"-m", model_.string(), "--ctx", "1024"});
  const json prof = profile(json::object());
  const fs::path pf = write_profile("p.json", prof);
  const json closed_book = {{"id", "cb"}, {"question", "Who?"}, {"answers", {"x"}}};
  write_file(dir_ / "bad.jsonl", kRecords[0].dump() + "\n" + closed_book.dump() + "\n");
  const std::string why = "record cb has no documents (ctxs) to present";

  const RunResult c = cli(pf, dir_ / "bad.jsonl");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.err.find("ragform: " + (dir_ / "bad.jsonl").string() + ":2: " + why),
            std::string::npos)
      << c.err;

  const RunResult py = python_present(module_, pf, dir_ / "bad.jsonl", model_);
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out.substr(py.out.find('\n') + 1), "ValueError: " + why + "\n");

  const std::string msg = expect_api_error(
      post_present(srv.port(), {{"profile", prof}, {"records", {kRecords[0], closed_book}}}), 400);
  EXPECT_EQ(msg, "records[1]: " + why);
  // A profile that is not one, and a request without records, name what is wrong.
  json not_profile = prof;
  not_profile["presentation"]["order"] = "sideways";
  EXPECT_NE(expect_api_error(
                post_present(srv.port(), {{"profile", not_profile}, {"record", kRecords[0]}}), 400)
                .find("request 'profile': presentation: order: unknown order 'sideways'"),
            std::string::npos);
  expect_api_error(post_present(srv.port(), {{"profile", prof}}), 400);
  expect_api_error(post_present(srv.port(), {{"record", kRecords[0]}}), 400);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// With a model, a prompt longer than its context is that record's error, named like a bad record.
TEST_F(PresentFixture, APromptOverTheContextNamesItsRecord) {
  ServeProcess srv({"-m", model_.string(), "--ctx", "64"});
  const json prof = profile(json::object());
  const fs::path pf = write_profile("p.json", prof);
  const RunResult c =
      run_ragform("present --json --profile " + quoted(pf) + " --input " +
                  quoted(dir_ / "records.jsonl") + " -m " + quoted(model_) + " --ctx 64");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.err.find((dir_ / "records.jsonl").string() + ":1: reader: prompt of "),
            std::string::npos)
      << c.err;
  EXPECT_NE(c.err.find("exceeds the context size n_ctx = 64"), std::string::npos) << c.err;
  EXPECT_EQ(c.out, "");
  const std::string msg = expect_api_error(
      post_present(srv.port(), {{"profile", prof}, {"records", {kRecords[1]}}}), 400);
  EXPECT_EQ(msg.rfind("records[0]: reader: prompt of ", 0), 0u) << msg;
  // A prompt longer in bytes than the context can hold is refused before it is tokenised (issue
  // 40, third pass): a 1 MB request rendered to 8.5 MB was counted as 8.5 million tokens (600 MB
  // peak on this model, 6 s and 930 MB on Gemma 3) to be refused.
  std::string text;
  while (text.size() < 900000) text += "a ";
  const json huge = {
      {"id", "huge"}, {"question", "q?"}, {"answers", {"a"}}, {"ctxs", {{{"text", text}}}}};
  const json wide = profile({{"delimiter", "0123456789abcdef"}, {"p", 1.0}});
  const long before = srv.peak_rss_kib();
  const std::string huge_msg =
      expect_api_error(post_present(srv.port(), {{"profile", wide}, {"record", huge}}), 400);
  const long peak = srv.peak_rss_kib();
  std::printf("[measured] present of a 7.6 MB prompt: peak RSS %ld -> %ld KiB\n", before, peak);
  EXPECT_LT(peak, before + 150 * 1024);
  EXPECT_EQ(huge_msg.rfind("record: reader: prompt of 76", 0), 0u) << huge_msg;
  EXPECT_NE(huge_msg.find("bytes exceeds the context size n_ctx = 64 however it is tokenised"),
            std::string::npos)
      << huge_msg;
  // Without a model nothing is counted and every record renders.
  const RunResult bare = run_ragform("present --json --profile " + quoted(pf) + " --input " +
                                     quoted(dir_ / "records.jsonl"));
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(json_lines(bare.out).size(), kRecords.size());
  EXPECT_EQ(bare.out.find("prompt_tokens"), std::string::npos);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// Issue 40, item 12: a profile tuned on another model is applied, and `present -m` says so.
TEST_F(PresentFixture, AProfileOfAnotherModelIsNamedUnderM) {
  json prof = profile(json::object());
  prof["model_sha256"] = std::string(64, 'a');
  const fs::path other = write_profile("other.json", prof);
  RunResult r = cli(other, dir_ / "records.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("present: note: the profile was tuned on stories260K.gguf (sha256 "
                       "aaaaaaaaaaaa...), not on " +
                       model_.string()),
            std::string::npos)
      << r.err;
  prof["model_sha256"] = store::sha256_file(model_);
  r = cli(write_profile("same.json", prof), dir_ / "records.jsonl");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("note:"), std::string::npos) << r.err;
}

// Without --json: the prompts themselves, a blank line between two records; and the endpoint is
// behind the server's API key like every route.
TEST_F(PresentFixture, PlainPromptsAndTheApiKey) {
  const json prof = profile({{"format", "markdown"}, {"order", "edges"}});
  const fs::path pf = write_profile("p.json", prof);
  const RunResult js = run_ragform("present --json --profile " + quoted(pf) + " --input " +
                                   quoted(dir_ / "records.jsonl"));
  const RunResult plain =
      run_ragform("present --profile " + quoted(pf) + " --input " + quoted(dir_ / "records.jsonl"));
  ASSERT_EQ(js.exit_code, 0) << js.err;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::string want;
  for (const auto& l : json_lines(js.out))
    want += (want.empty() ? "" : "\n") + l["prompt"].get<std::string>() + "\n";
  EXPECT_EQ(plain.out, want);
  EXPECT_NE(plain.err.find("present: 3 records rendered with delim=original,format=markdown,"
                           "order=edges,k=all,spotlight=off (task qa)"),
            std::string::npos)
      << plain.err;

  ServeProcess srv({"-m", model_.string(), "--ctx", "1024", "--api-key", "sesame"});
  const json body = {{"profile", prof}, {"record", kRecords[0]}};
  expect_api_error(post_present(srv.port(), body), 401);
  httplib::Client c("127.0.0.1", srv.port());
  c.set_bearer_token_auth("sesame");
  auto r = c.Post("/v1/rag/present", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(json::parse(r->body)["prompt"], json_lines(js.out)[0]["prompt"]);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

}  // namespace
}  // namespace ragform::testing
