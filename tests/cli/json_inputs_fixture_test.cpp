// Every JSON and JSONL input of the CLI names the file and the line of a number no double can hold
// ({"x": 1e309}), as it does for text that is not JSON: `ragform: FILE:LINE: <why>`. The JSON
// library reports that number with an exception of another kind and no position, which used to
// reach the user as its raw text (or, for a corpus, as "expected JSONL ... got json").
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

// The first line of stderr, which must be the whole message.
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// `code`: 1 for data files, 2 for a file of settings (a profile), whose every fault is a usage
// error (`ragform --help`).
void expect_located(const RunResult& r, const fs::path& file, int line, const std::string& what,
                    int code = 1) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  const std::string e = first_line(r.err);
  const std::string head = "ragform: " + file.string() + ":" + std::to_string(line) + ": ";
  EXPECT_EQ(e.rfind(head, 0), 0u) << e;
  EXPECT_NE(e.find(what), std::string::npos) << e;
  EXPECT_NE(e.find("number out of range"), std::string::npos) << e;
  EXPECT_NE(e.find("1e309 does not fit a double"), std::string::npos) << e;
  EXPECT_EQ(e.find("json.exception"), std::string::npos) << e;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
}

TEST(JsonInputs, NumberOutOfRangeNamesFileAndLine) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto d = temp_dir("json-inputs");
  const std::string big = "1e309";

  // data check (JSONL, line 2).
  const fs::path qa = d / "qa.jsonl";
  write_file(qa,
             "{\"question\": \"q1\", \"answers\": [\"a\"]}\n"
             "{\"question\": \"q2\", \"answers\": [\"a\"], \"score\": " +
                 big + "}\n");
  expect_located(run_ragform("data check " + quoted(qa)), qa, 2, "invalid JSON");

  // index build (the corpus's first line) and retrieve --input (line 2).
  const fs::path corpus = d / "corpus.jsonl";
  write_file(corpus, "{\"id\": \"a\", \"text\": \"alpha\", \"n\": " + big + "}\n");
  expect_located(run_ragform("index build --corpus " + quoted(corpus) + " -o " + quoted(d / "ix")),
                 corpus, 1, "invalid JSON");
  write_file(corpus, "{\"id\": \"a\", \"text\": \"alpha\"}\n");
  auto b = run_ragform("index build --corpus " + quoted(corpus) + " -o " + quoted(d / "ix"));
  ASSERT_EQ(b.exit_code, 0) << b.err;
  expect_located(run_ragform("retrieve --index " + quoted(d / "ix") + " --input " + quoted(qa)), qa,
                 2, "invalid JSON");

  // A C-NORM profile (a pretty-printed document: the line within it).
  const fs::path profile = d / "profile.json";
  write_file(profile, "{\n  \"best\": \"original\",\n  \"abs\": " + big + "\n}\n");
  expect_located(
      run_ragform("cnorm eval -m " + quoted(model) + " --task needle --limit 1 -k 2 " +
                  "--profile " + quoted(profile) + " --store " + quoted(d / "run.sqlite")),
      profile, 3, "profile is not valid JSON", 2);

  // Word vectors for spotlight (--vectors).
  const fs::path vectors = d / "vectors.json";
  write_file(vectors, "{\"alpha\": [1, 0],\n \"beta\": [" + big + ", 1]}\n");
  const fs::path q = d / "q.jsonl";
  write_file(q,
             "{\"question\": \"alpha?\", \"answers\": [\"a\"], \"ctxs\": [{\"title\": \"t\", "
             "\"text\": \"alpha beta\"}]}\n");
  expect_located(
      run_ragform("spotlight select --input " + quoted(q) + " --vectors " + quoted(vectors)),
      vectors, 2, "word vectors is not valid JSON");
}

}  // namespace
}  // namespace ragform::testing
