// One C-NORM profile applied to one record, three front ends, one rule (cnorm::apply_profile):
// `ragform cnorm apply`, Python's ragform.cnorm.apply and serve's POST /v1/rag/normalize give the
// same bytes, and refuse the same profiles — the server follows the profile's own format (its best
// candidate), not a field of the profile's JSON read on the side. And one calibration set-up
// (cnorm::calibration_plan): `cnorm calibrate` and ragform.cnorm.calibrate refuse the same
// settings with the same reason, each naming its own argument.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A profile as `ragform cnorm calibrate` writes it; `extra` candidates are appended.
json profile(const std::string& best, double p, uint64_t seed, const json& extra = json::array()) {
  json cands = {{{"delimiter", "none"}, {"abs_mean", 0.5}, {"abs_std", 0.1}},
                {{"delimiter", "-"}, {"abs_mean", 0.6}, {"abs_std", 0.1}},
                {{"delimiter", "&"}, {"abs_mean", 0.7}, {"abs_std", 0.1}}};
  for (const auto& c : extra) cands.push_back(c);
  return {{"model_sha256", std::string(64, '0')},
          {"task", "qa"},
          {"p", p},
          {"seed", seed},
          {"S", 6},
          {"best", best},
          {"candidates", cands}};
}

const json kRecord = {
    {"id", "r1"},
    {"question", "Who played with Max?"},
    {"answers", {"Lily"}},
    {"ctxs",
     {{{"title", "Park"},
       {"text",
        "Lily went to the park. She saw a big dog. The dog was named Max. Max liked to run and "
        "play. Lily and Max played all day until the sun went down."}},
      {{"title", "Ball"},
       {"text", "Tom had a red ball.  He threw it\thigh in the sky. The ball fell into the pond."}},
      {{"title", "Caf\xC3\xA9"},
       {"text",
        "Z\xC3\xBC"
        "rich has a caf\xC3\xA9. Its coffee is strong and hot. One more."}}}}};

// Python's ragform.cnorm.apply of the profile file to the one record of record_file, printed as
// the CLI prints JSON (compact, UTF-8), or "ValueError: <message>"; by Debian's python3 with the
// package of this checkout and the built module copied into a temporary directory.
RunResult python_apply(const fs::path& module, const fs::path& profile_file,
                       const fs::path& record_file) {
  return run_python("cnorm-apply-py", module, R"(import json, sys
import ragform.cnorm
with open(sys.argv[1], encoding="utf-8") as f:
    prof = json.load(f)
with open(sys.argv[2], encoding="utf-8") as f:
    rec = json.loads(f.readline())
try:
    got = ragform.cnorm.apply(prof, rec)
except ValueError as e:
    sys.stdout.write("ValueError: %s\n" % e)
else:
    sys.stdout.write(json.dumps(got, ensure_ascii=False, separators=(",", ":")) + "\n")
)",
                    {profile_file.string(), record_file.string()});
}

httplib::Result normalize(int port, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(120, 0);
  return c.Post("/v1/rag/normalize", body.dump(), "application/json");
}

// The record's document texts, as the server takes them.
json documents(const json& record) {
  json out = json::array();
  for (const auto& c : record["ctxs"]) out.push_back(c["text"]);
  return out;
}

class CnormApplyFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
    model_ = model;
    module_ = python_module();
    if (module_.empty()) GTEST_SKIP() << "no Python module in " << RAGFORM_BINARY_DIR << "/python";
    dir_ = temp_dir("cnorm-apply");
    write_file(dir_ / "one.jsonl", kRecord.dump() + "\n");
  }
  fs::path write_profile(const std::string& name, const json& prof) {
    write_file(dir_ / name, prof.dump(2));
    return dir_ / name;
  }
  fs::path model_, module_, dir_;
};

TEST_F(CnormApplyFixture, CliPythonAndServerGiveTheSameBytes) {
  ServeProcess srv({"-m", model_.string(), "--ctx", "128"});
  // Delimiters at several ratios and seeds, and 'original' (the text as it came).
  const std::vector<json> profiles = {
      profile("&", 0.5, 1234), profile("-", 1.0, 7), profile("none", 0.25, 3),
      profile("original", 0.5, 0,
              json::array({{{"delimiter", "original"}, {"abs_mean", 0.9}, {"abs_std", 0.1}}}))};
  for (size_t i = 0; i < profiles.size(); ++i) {
    SCOPED_TRACE(profiles[i]["best"].get<std::string>());
    const fs::path pf = write_profile("p" + std::to_string(i) + ".json", profiles[i]);
    auto cli = run_ragform("cnorm apply --profile " + quoted(pf) + " --input " +
                           quoted(dir_ / "one.jsonl"));
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
    const std::string want = cli.out;
    ASSERT_EQ(want.find('\n'), want.size() - 1) << want;  // one line

    auto py = python_apply(module_, pf, dir_ / "one.jsonl");
    ASSERT_EQ(py.exit_code, 0) << py.err;
    EXPECT_EQ(py.out, want);

    auto r = normalize(srv.port(), {{"documents", documents(kRecord)}, {"profile", profiles[i]}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    json rec = kRecord;
    const json got = json::parse(r->body)["documents"];
    ASSERT_EQ(got.size(), rec["ctxs"].size());
    for (size_t d = 0; d < got.size(); ++d) rec["ctxs"][d]["text"] = got[d];
    EXPECT_EQ(rec.dump() + "\n", want);
  }
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// The profile's best candidate decides: a document format is refused by all three, also when the
// profile has no "best_format" field; a delimiter is applied by all three, also when a
// hand-edited profile carries a "best_format" its best candidate does not have.
// Issue 40, pass 13: a profile's integers written 2.0 were refused (the rule everywhere else:
// JSON Schema's integer), and `cnorm apply -o` wrote with a truncating stream, so a bad line left
// half a new file where the old one was.
TEST_F(CnormApplyFixture, IntegersAsWrittenAndAnOutputWrittenWhole) {
  json wrote = profile("&", 0.5, 1234);
  json as_float = wrote;
  as_float["seed"] = 1234.0;
  as_float["S"] = 6.0;
  const fs::path a = write_profile("a.json", wrote), b = write_profile("b.json", as_float);
  const auto ra =
      run_ragform("cnorm apply --profile " + quoted(a) + " --input " + quoted(dir_ / "one.jsonl"));
  const auto rb =
      run_ragform("cnorm apply --profile " + quoted(b) + " --input " + quoted(dir_ / "one.jsonl"));
  ASSERT_EQ(ra.exit_code, 0) << ra.err;
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(ra.out, rb.out);
  as_float["S"] = 6.5;
  const auto bad =
      run_ragform("cnorm apply --profile " + quoted(write_profile("c.json", as_float)) +
                  " --input " + quoted(dir_ / "one.jsonl"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("S"), std::string::npos) << bad.err;
  // The third line is no JSON: the run fails and the old output is as it was.
  write_file(dir_ / "three.jsonl", kRecord.dump() + "\n" + kRecord.dump() + "\n{broken\n");
  write_file(dir_ / "out.jsonl", "the old output\n");
  const auto r = run_ragform("cnorm apply --profile " + quoted(a) + " --input " +
                             quoted(dir_ / "three.jsonl") + " -o " + quoted(dir_ / "out.jsonl"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(read_file(dir_ / "out.jsonl"), "the old output\n");
}

TEST_F(CnormApplyFixture, TheBestCandidateDecidesForAll) {
  ServeProcess srv({"-m", model_.string(), "--ctx", "128"});
  const json json_cand = {{"delimiter", "none"}, {"format", "json"}, {"name", "json"}, {"p", 0},
                          {"abs_mean", 0.9},     {"abs_std", 0.1}};
  const json wrapped = profile("json", 0.5, 0, json::array({json_cand}));
  const fs::path pf = write_profile("wrapped.json", wrapped);
  const std::string why =
      "cnorm apply: the profile's best candidate is the document format 'json'; apply writes "
      "text fields, wrap documents when building the prompt instead";
  auto cli =
      run_ragform("cnorm apply --profile " + quoted(pf) + " --input " + quoted(dir_ / "one.jsonl"));
  EXPECT_EQ(cli.exit_code, 2);
  EXPECT_NE(cli.err.find(why), std::string::npos) << cli.err;
  auto py = python_apply(module_, pf, dir_ / "one.jsonl");
  ASSERT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, "ValueError: " + why + "\n");
  auto r = normalize(srv.port(), {{"documents", documents(kRecord)}, {"profile", wrapped}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("request 'profile': " + why), std::string::npos) << r->body;

  json stray = profile("-", 1.0, 7);
  stray["best_format"] = "json";
  const fs::path sf = write_profile("stray.json", stray);
  auto cli2 =
      run_ragform("cnorm apply --profile " + quoted(sf) + " --input " + quoted(dir_ / "one.jsonl"));
  ASSERT_EQ(cli2.exit_code, 0) << cli2.err;
  auto py2 = python_apply(module_, sf, dir_ / "one.jsonl");
  EXPECT_EQ(py2.out, cli2.out);
  auto r2 = normalize(srv.port(), {{"documents", documents(kRecord)}, {"profile", stray}});
  ASSERT_TRUE(r2);
  ASSERT_EQ(r2->status, 200) << r2->body;
  EXPECT_EQ(json::parse(r2->body)["documents"], documents(json::parse(cli2.out)));
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// A refused calibration setting: the CLI's reason after "ragform: <flag>: ", Python's after
// "<keyword>: " — the same words from the one set-up.
TEST_F(CnormApplyFixture, CalibrationSetUpRefusesAlikeInCliAndPython) {
  struct Case {
    std::string flags, kwargs, flag, keyword;
  };
  const std::vector<Case> cases = {
      {"--heads x", "heads='x'", "--heads", "heads"},
      {"--heads -1", "heads='-1'", "--heads", "heads"},
      {"--heads 1,2", "heads='1,2'", "--heads", "heads"},
      {"--delims ''", "delims=''", "--delims", "delims"},
      {"--p-grid 0.5,2", "p_grid='0.5,2'", "--p-grid", "p_grid"},
      {"--task kv --formats json", "task='kv', formats='json'", "--formats", "formats"},
      {"--search random", "search='random'", "--search", "search"},
      {"--task xx", "task='xx'", "--task", "task"},
      {"-p 2", "p=2", "-p", "p"},
      {"-S 0", "S=0", "-S", "S"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.flags);
    auto cli = run_ragform("cnorm calibrate -m " + quoted(model_) + " " + c.flags + " -o " +
                           quoted(dir_ / "x.json"));
    EXPECT_EQ(cli.exit_code, 2);
    const std::string cli_prefix = "ragform: " + c.flag + ": ";
    ASSERT_EQ(cli.err.rfind(cli_prefix, 0), 0u) << cli.err;
    const std::string why =
        cli.err.substr(cli_prefix.size(), cli.err.find('\n') - cli_prefix.size());
    auto py = run_python("cnorm-setup-py", module_,
                         "import sys, ragform\n"
                         "m = ragform.Model(sys.argv[1], ctx=256)\n"
                         "try:\n"
                         "    ragform.cnorm.calibrate(m, None, progress=False, " +
                             c.kwargs +
                             ")\n"
                             "except ValueError as e:\n"
                             "    print(e)\n",
                         {model_.string()});
    ASSERT_EQ(py.exit_code, 0) << py.err;
    EXPECT_EQ(py.out, c.keyword + ": " + why + "\n");
  }
}

}  // namespace
}  // namespace ragform::testing
