// `retrieve` returns fewer than k passages when BM25 finds fewer passages holding a question's
// words (none for "zzzqqq xyzzy" or a script the corpus does not use): stdout shows that only as
// short ctxs lists, so stderr counts those questions; stdout stays the same.
#include <gtest/gtest.h>

#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  fs::path dir, ix;
};

Fixture small_index() {
  Fixture f{temp_dir("fewer-than-k"), {}};
  f.ix = f.dir / "ix";
  write_file(
      f.dir / "c.jsonl",
      "{\"id\": \"a\", \"text\": \"alpha beta\"}\n{\"id\": \"b\", \"text\": \"alpha gamma\"}\n"
      "{\"id\": \"c\", \"text\": \"delta epsilon\"}\n");
  auto b = run_ragform("index build --corpus " + quoted(f.dir / "c.jsonl") + " -o " + quoted(f.ix));
  EXPECT_EQ(b.exit_code, 0) << b.err;
  return f;
}

TEST(RetrieveFewerThanK, StderrCountsQuestionsWithFewerOrNoPassages) {
  Fixture f = small_index();
  write_file(f.dir / "q.jsonl",
             "{\"id\": \"q1\", \"question\": \"alpha or delta?\"}\n"
             "{\"id\": \"q2\", \"question\": \"alpha?\"}\n"
             "{\"id\": \"q3\", \"question\": \"zzzqqq xyzzy\"}\n"
             "{\"id\": \"q4\", \"question\": \"\xE5\x8C\x97\xE4\xBA\xAC\"}\n");
  auto r = run_ragform("retrieve --index " + quoted(f.ix) + " --input " +
                       quoted(f.dir / "q.jsonl") + " -k 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = json_lines(r.out);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0]["ctxs"].size(), 3u);
  EXPECT_EQ(rows[1]["ctxs"].size(), 2u);
  EXPECT_EQ(rows[2]["ctxs"].size(), 0u);
  EXPECT_EQ(rows[3]["ctxs"].size(), 0u);
  EXPECT_EQ(r.err,
            "retrieve: 3 of 4 questions got fewer than 3 passages (2 got none): BM25 returns only "
            "passages that hold one of a question's words (stop words aside); see "
            "docs/retrieval.md\n");
}

TEST(RetrieveFewerThanK, NoNoteWhenEveryQuestionGetsK) {
  Fixture f = small_index();
  write_file(f.dir / "q.jsonl", "{\"question\": \"alpha\"}\n");
  auto r = run_ragform("retrieve --index " + quoted(f.ix) + " --input " +
                       quoted(f.dir / "q.jsonl") + " -k 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // An index smaller than k says so.
  r = run_ragform("retrieve --index " + quoted(f.ix) + " --input " + quoted(f.dir / "q.jsonl") +
                  " -k 5");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "retrieve: 1 of 1 questions got fewer than 5 passages (0 got none): the index holds 3 "
            "passages\n");
}

}  // namespace
}  // namespace ragform::testing
