// The corpus reader and the index build's input checks: every bad line is "<file>:<line>:
// <reason>".
#include <gtest/gtest.h>

#include "eval/jsonl.h"
#include "retrieval/bm25_index.h"
#include "retrieval/corpus.h"
#include "retrieval/corpus_helpers.h"
#include "retrieval/index_build.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;
using retrieval::CorpusReader;
using retrieval::Passage;

TEST(Corpus, ReadsJsonlWithNumericIdsAndOptionalTitle) {
  auto d = temp_dir("corpus");
  write_file(
      d / "c.jsonl",
      "{\"id\": \"a\", \"title\": \"T\", \"text\": \"x y\"}\n\n{\"id\": 7, \"text\": \"z\"}\n");
  auto ps = read_all(d / "c.jsonl");
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].id, "a");
  EXPECT_EQ(ps[0].title, "T");
  EXPECT_EQ(ps[0].line, 1u);
  EXPECT_EQ(ps[1].id, "7");
  EXPECT_EQ(ps[1].title, "");
  EXPECT_EQ(ps[1].line, 3u);
}

TEST(Corpus, JsonlErrorsNameFileLineAndReason) {
  auto d = temp_dir("corpus");
  const std::string f = (d / "c.jsonl").string();
  write_file(f, "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"title\": \"t\"}\n");
  EXPECT_EQ(error_of([&] { read_all(f); }), f + ":2: missing field 'text'");
  write_file(f, "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\": [1]}\n");
  EXPECT_EQ(error_of([&] { read_all(f); }), f + ":2: field 'text': expected string, got array");
  write_file(f, "{\"text\": \"x\"}\n");
  EXPECT_EQ(error_of([&] { read_all(f); }), f + ":1: missing field 'id'");
  write_file(f, "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\": \"x\"\n");
  EXPECT_NE(error_of([&] { read_all(f); }).find(f + ":2: "), std::string::npos);
  write_file(f, "{\"id\": \"\", \"text\": \"x\"}\n");
  EXPECT_EQ(error_of([&] { read_all(f); }), f + ":1: empty id");
}

TEST(Corpus, ReadsDprTsvWithHeaderAndQuotedText) {
  auto d = temp_dir("corpus");
  write_file(d / "c.tsv", "id\ttext\ttitle\n1\t\"He said \"\"hi\"\"\"\tAaron\n2\tplain text\tB\n");
  auto ps = read_all(d / "c.tsv");
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].id, "1");
  EXPECT_EQ(ps[0].text, "He said \"hi\"");
  EXPECT_EQ(ps[0].title, "Aaron");
  EXPECT_EQ(ps[1].line, 3u);
  EXPECT_EQ(ps[1].text, "plain text");
}

TEST(Corpus, TsvErrorsNameFileLineAndReason) {
  auto d = temp_dir("corpus");
  const std::string f = (d / "c.tsv").string();
  write_file(f, "1\ta\tb\n2\tonly two\n");
  EXPECT_EQ(error_of([&] { read_all(f); }),
            f + ":2: expected 3 tab-separated fields (id, text, title), got 2");
  write_file(f, "1\ta\tb\tc\n");
  EXPECT_EQ(error_of([&] { read_all(f); }),
            f + ":1: expected 3 tab-separated fields (id, text, title), got 4");
  EXPECT_EQ(error_of([&] { CorpusReader r((d / "missing.tsv").string()); }),
            (d / "missing.tsv").string() + ": cannot open: No such file or directory");
  write_file(d / "empty", "\n\n");
  EXPECT_EQ(error_of([&] { CorpusReader r((d / "empty").string()); }),
            (d / "empty").string() + ": empty file");
}

TEST(IndexBuild, DuplicateIdIsAnErrorNamingBothLines) {
  auto d = temp_dir("corpus");
  const std::string f = (d / "c.jsonl").string();
  write_file(f,
             "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"b\", \"text\": \"y\"}\n{\"id\": \"a\", "
             "\"text\": \"x\"}\n");
  retrieval::BuildOptions o;
  o.corpus = f;
  o.dir = (d / "ix").string();
  EXPECT_EQ(error_of([&] { retrieval::build_index(o); }),
            f + ":3: duplicate id 'a' (first at line 1)");
}

TEST(IndexBuild, CreateRefusesAnExistingIndexAndAppendResumes) {
  auto d = temp_dir("corpus");
  const std::string f = (d / "c.jsonl").string();
  write_file(f,
             "{\"id\": \"a\", \"text\": \"alpha beta\"}\n{\"id\": \"b\", \"text\": \"gamma\"}\n");
  retrieval::BuildOptions o;
  o.corpus = f;
  o.dir = (d / "ix").string();
  auto s1 = retrieval::build_index(o);
  EXPECT_EQ(s1.added, 2u);
  EXPECT_NE(
      error_of([&] { retrieval::build_index(o); }).find("already holds an index (use --append"),
      std::string::npos);
  // The same corpus plus one passage: the first two are skipped, the third added.
  write_file(f,
             "{\"id\": \"a\", \"text\": \"alpha beta\"}\n{\"id\": \"b\", \"text\": \"gamma\"}\n"
             "{\"id\": \"c\", \"title\": \"Delta\", \"text\": \"delta\"}\n");
  o.append = true;
  auto s2 = retrieval::build_index(o);
  EXPECT_EQ(s2.added, 1u);
  EXPECT_EQ(s2.already_indexed, 2u);
  EXPECT_EQ(s2.total, 3u);
  // Same id, other text: refused.
  write_file(f, "{\"id\": \"b\", \"text\": \"not gamma\"}\n");
  EXPECT_EQ(error_of([&] { retrieval::build_index(o); }),
            f + ":1: id 'b' is already in the index with a different text");
  retrieval::Bm25Index ix(o.dir, retrieval::Bm25Index::Open::Read);
  auto hits = ix.search("delta?", 5);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(ix.passage(hits[0].rowid).id, "c");
}

TEST(Fts5Query, OrOfQuotedWordsWithQuotesDoubled) {
  EXPECT_EQ(retrieval::fts5_query("who wrote \"Hamlet\"?"),
            "\"who\" OR \"wrote\" OR \"\"\"Hamlet\"\"?\"");
  EXPECT_EQ(retrieval::fts5_query("  x  x ?? NEAR(x) "), "\"x\" OR \"NEAR(x)\"");
  EXPECT_EQ(retrieval::fts5_query("?! ..."), "");
}

TEST(Fts5Query, StopWordsLeftOutUnlessTheQuestionHasNothingElse) {
  // "The", "of" and "is?" are stop words (case and surrounding punctuation ignored); "who" and
  // "U.S." are not.
  EXPECT_EQ(retrieval::fts5_query("Who is the president of the U.S.?"),
            "\"Who\" OR \"president\" OR \"U.S.?\"");
  EXPECT_EQ(retrieval::fts5_query("The capital of France is?"), "\"capital\" OR \"France\"");
  // Only stop words: they are kept, so the query still finds something.
  EXPECT_EQ(retrieval::fts5_query("to be or not to be"), "\"to\" OR \"be\" OR \"or\" OR \"not\"");
  EXPECT_EQ(retrieval::fts5_query("The capital of France is?", retrieval::StopWords::keep),
            "\"The\" OR \"capital\" OR \"of\" OR \"France\" OR \"is?\"");
}

TEST(Bm25Index, RanksByBm25AndSurvivesQuerySyntax) {
  auto d = temp_dir("corpus");
  const std::string f = (d / "c.jsonl").string();
  // Passage 1 mentions "fox" twice in a short text; passage 2 once in a longer one; 3 never.
  write_file(f,
             "{\"id\": \"p1\", \"title\": \"Fox\", \"text\": \"the fox\"}\n"
             "{\"id\": \"p2\", \"title\": \"Dogs\", \"text\": \"a fox and many many other animals "
             "here\"}\n"
             "{\"id\": \"p3\", \"title\": \"Cats\", \"text\": \"cats sleep\"}\n");
  retrieval::BuildOptions o;
  o.corpus = f;
  o.dir = (d / "ix").string();
  retrieval::build_index(o);
  retrieval::Bm25Index ix(o.dir, retrieval::Bm25Index::Open::Read);
  auto hits = ix.search("Fox", 10);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(ix.passage(hits[0].rowid).id, "p1");
  EXPECT_EQ(ix.passage(hits[1].rowid).id, "p2");
  EXPECT_GT(hits[0].score, hits[1].score);
  // FTS5 operators and quotes in a question are plain words.
  EXPECT_NO_THROW(ix.search("\"fox\" AND NOT (cats* OR ^sleep) NEAR", 10));
  EXPECT_EQ(ix.search("sleeping cats", 10).size(), 1u);  // Porter stemming: sleeping -> sleep
}

}  // namespace
}  // namespace ragform::testing
