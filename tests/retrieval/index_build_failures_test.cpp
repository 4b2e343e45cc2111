// What a failed `index build` leaves behind, and how the corpus reader reports a broken first
// line: a failed new index leaves nothing (so the rerun with a fixed corpus builds), a failed
// append leaves the old index answering as before, an empty index is an error for retrieval, and
// line 1 of a corpus gets the message line 2 would get (no format detection in between).
#include <gtest/gtest.h>

#include "eval/jsonl.h"
#include "retrieval/bm25_index.h"
#include "retrieval/corpus.h"
#include "retrieval/corpus_helpers.h"
#include "retrieval/index_build.h"
#include "retrieval/retriever.h"
#include "support/gzip_bytes.h"
#include "support/test_support.h"

namespace ragform::testing {
namespace {

namespace fs = std::filesystem;
using retrieval::CorpusReader;
using retrieval::Passage;

const std::string kGood =
    "{\"id\": \"a\", \"text\": \"alpha beta\"}\n{\"id\": \"b\", \"text\": \"gamma\"}\n";

size_t passages_in(const std::string& dir) {
  return retrieval::Bm25Index(dir, retrieval::Bm25Index::Open::Read).size();
}

TEST(IndexBuildFailure, ANewIndexThatFailsLeavesNothingAndTheRerunBuilds) {
  auto d = temp_dir("ixfail");
  const std::string f = (d / "c.jsonl").string();
  retrieval::BuildOptions o;
  o.corpus = f;
  o.dir = (d / "ix").string();
  write_file(f, "{\"id\": \"a\", \"text\": \"x\"}\n{\"id\": \"a\", \"text\": \"y\"}\n");
  EXPECT_EQ(error_of([&] { retrieval::build_index(o); }),
            f + ":2: duplicate id 'a' (first at line 1)");
  EXPECT_FALSE(fs::exists(o.dir)) << "the failed build left " << o.dir;
  // A truncated .gz: the stream error comes while passages are being added.
  const std::string gz = (d / "c.jsonl.gz").string();
  std::string z = gzip_bytes(kGood + kGood);
  write_file(gz, z.substr(0, z.size() - 12));
  o.corpus = gz;
  EXPECT_NE(error_of([&] { retrieval::build_index(o); }).find("truncated gzip stream"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(o.dir));
  // A directory that was there before stays, without the index files.
  fs::create_directories(o.dir);
  write_file(fs::path(o.dir) / "notes.txt", "mine");
  EXPECT_NE(error_of([&] { retrieval::build_index(o); }).find("truncated gzip stream"),
            std::string::npos);
  EXPECT_TRUE(fs::exists(fs::path(o.dir) / "notes.txt"));
  EXPECT_FALSE(fs::exists(retrieval::Bm25Index::file_in(o.dir)));
  // The rerun with a fixed corpus is not refused.
  write_file(f, kGood);
  o.corpus = f;
  EXPECT_EQ(retrieval::build_index(o).total, 2u);
  // And a build refused because the directory holds an index leaves that index alone.
  EXPECT_NE(
      error_of([&] { retrieval::build_index(o); }).find("already holds an index (use --append"),
      std::string::npos);
  EXPECT_EQ(passages_in(o.dir), 2u);
}

TEST(IndexBuildFailure, AFailedAppendLeavesTheOldIndexIntact) {
  auto d = temp_dir("ixfail");
  const std::string f = (d / "c.jsonl").string();
  retrieval::BuildOptions o;
  o.corpus = f;
  o.dir = (d / "ix").string();
  write_file(f, kGood);
  retrieval::build_index(o);
  o.append = true;
  write_file(f, "{\"id\": \"c\", \"text\": \"delta\"}\n{\"id\": \"c\", \"text\": \"delta\"}\n");
  EXPECT_EQ(error_of([&] { retrieval::build_index(o); }),
            f + ":2: duplicate id 'c' (first at line 1)");
  ASSERT_TRUE(fs::exists(retrieval::Bm25Index::file_in(o.dir)));
  retrieval::Bm25Index ix(o.dir, retrieval::Bm25Index::Open::Read);
  EXPECT_EQ(ix.size(), 2u);
  EXPECT_EQ(ix.search("gamma", 5).size(), 1u);
  EXPECT_TRUE(ix.search("delta", 5).empty());
}

TEST(IndexBuildFailure, RetrievingFromAnEmptyIndexIsAnError) {
  auto d = temp_dir("ixfail");
  const std::string dir = (d / "ix").string();
  // What a build killed before its first checkpoint leaves: the schema, no passage.
  { retrieval::Bm25Index ix(dir, retrieval::Bm25Index::Open::Create); }
  retrieval::RetrieverOptions ro;
  EXPECT_EQ(error_of([&] { retrieval::Retriever r(dir, ro); }),
            dir +
                ": the index holds no passages (an index build that failed before its first "
                "passage? rebuild it)");
}

// The bytes of a bad line give the same reason on line 1 as on line 2.
void expect_same_reason_on_line_1_and_2(const fs::path& f, const std::string& bad,
                                        const std::string& good, const std::string& reason) {
  write_file(f, bad + "\n" + good + "\n");
  EXPECT_EQ(error_of([&] { read_all(f); }), f.string() + ":1: " + reason);
  write_file(f, good + "\n" + bad + "\n");
  EXPECT_EQ(error_of([&] { read_all(f); }), f.string() + ":2: " + reason);
}

TEST(CorpusFirstLine, JsonlLine1IsReportedAsLine2Is) {
  auto d = temp_dir("corpus1");
  const fs::path f = d / "c.jsonl";
  const std::string good = "{\"id\": \"a\", \"text\": \"x\"}";
  expect_same_reason_on_line_1_and_2(f, "[1,2,3]", good,
                                     "expected a JSON object as record, got array");
  expect_same_reason_on_line_1_and_2(f, "{\"id\": \"b\", \"text\": \"\xff\"}", good,
                                     "invalid UTF-8 at byte offset 21 of the line (byte 0xFF)");
  expect_same_reason_on_line_1_and_2(
      f, "{\"id\": \"b\", \"text\": \"x\", \"n\": 1e309}", good,
      "invalid JSON: number out of range at column 35: 1e309 does not fit a double");
}

TEST(CorpusFirstLine, TsvLine1IsReportedAsLine2Is) {
  auto d = temp_dir("corpus1");
  expect_same_reason_on_line_1_and_2(d / "c.tsv", "1\tt\xc3(\tT", "2\ttext\ttitle",
                                     "invalid UTF-8 at byte offset 3 of the line (byte 0xC3)");
}

TEST(CorpusFirstLine, AByteOrderMarkIsReadPast) {
  auto d = temp_dir("corpus1");
  write_file(d / "c.jsonl", "\xEF\xBB\xBF{\"id\": \"a\", \"text\": \"x\"}\n");
  auto ps = read_all(d / "c.jsonl");
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].id, "a");
  write_file(d / "c.tsv", "\xEF\xBB\xBFid\ttext\ttitle\n1\tx\tT\n");
  ps = read_all(d / "c.tsv");
  ASSERT_EQ(ps.size(), 1u);
  EXPECT_EQ(ps[0].id, "1");
}

TEST(CorpusFirstLine, RandomBytesNamedGzAreNotGzip) {
  auto d = temp_dir("corpus1");
  const fs::path f = d / "c.jsonl.gz";
  std::string junk;
  for (int i = 0; i < 300; ++i) junk += char((i * 73 + 41) & 0xff);
  write_file(f, junk);
  EXPECT_EQ(error_of([&] { read_all(f); }),
            f.string() +
                ": not gzip data: the name ends in .gz, but the file does not start with gzip's "
                "magic bytes 1F 8B (a broken download or copy?)");
}

TEST(CorpusFirstLine, APrettyPrintedDocumentIsNotJsonl) {
  auto d = temp_dir("corpus1");
  const fs::path f = d / "c.json";
  write_file(f, "[\n  {\"id\": \"a\", \"text\": \"x\"}\n]\n");
  EXPECT_EQ(error_of([&] { read_all(f); }),
            f.string() +
                ":1: expected JSONL (one passage per line), got a JSON document spread over "
                "lines (a lone '[' opens it)");
}

}  // namespace
}  // namespace ragform::testing
