// `ragform data check` on files written by the test: exit codes (0 ok, 1 bad data, 2 usage), the
// one-line error of the strict mode, the bad-line listing of --skip-bad, and the --json object.
#include <gtest/gtest.h>

#include <zlib.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace {

using ragform::testing::run_ragform;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

std::string write(const std::string& name, const std::string& bytes) {
  auto p = temp_dir("data_cli") / name;
  write_file(p, bytes);
  return p.string();
}

const std::string kGood =
    "{\"question\": \"q1\", \"answer\": [\"a\"]}\n"
    "{\"question\": \"q2\", \"answer\": [\"b\", \"c\"]}\n"
    "{\"question\": \"q3\", \"answer\": [\"d\", \"e\", \"f\"]}\n";

const std::string kBad =
    "{\"question\": \"q1\", \"answer\": [\"a\"]}\n"
    "{\"question\": \"q2\", \"answer\": \"b\"}\n"
    "{\"question\": \"q3\", \"answer\": [\"c\"]}\n"
    "{\"question\": \"q4\", \"answer\": [\"d\"]\n"
    "{\"question\": \"q5\"}\n";

TEST(DataCli, HelpExplainsTheCheck) {
  auto r = run_ragform("data check --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: ragform data check FILE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--skip-bad"), std::string::npos);
  EXPECT_NE(r.out.find("longbench-v2"), std::string::npos);
  auto g = run_ragform("data --help");
  EXPECT_EQ(g.exit_code, 0);
  EXPECT_NE(g.out.find("check"), std::string::npos);
  auto top = run_ragform("--help");
  EXPECT_NE(top.out.find("  data "), std::string::npos) << top.out;
}

TEST(DataCli, GoodFileExitsZeroWithCounts) {
  std::string path = write("good.jsonl", kGood);
  auto r = run_ragform("data check '" + path + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("format                        nq-open"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3 good, 0 bad, 0 blank lines"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("answers per row               min 1  mean 2.00  max 3"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("OK"), std::string::npos);

  auto j = run_ragform("data check --json '" + path + "'");
  EXPECT_EQ(j.exit_code, 0);
  auto o = nlohmann::json::parse(j.out);
  EXPECT_EQ(o["rows"], 3);
  EXPECT_EQ(o["format"], "nq-open");
  EXPECT_EQ(o["ok"], true);
  EXPECT_EQ(o["fields"]["answer"], 3);
  EXPECT_EQ(o["answers_per_row"]["max"], 3);
  EXPECT_DOUBLE_EQ(o["answers_per_row"]["mean"].get<double>(), 2.0);
}

TEST(DataCli, StrictStopsAtTheFirstBadLineWithOneLineError) {
  std::string path = write("bad.jsonl", kBad);
  auto r = run_ragform("data check '" + path + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "ragform: " + path + ":2: field 'answer': expected array of strings, got string\n");
}

TEST(DataCli, SkipBadListsEveryBadLineAndExitsOne) {
  std::string path = write("bad.jsonl", kBad);
  auto r = run_ragform("data check --skip-bad '" + path + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("2 good, 3 bad"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  line 2: field 'answer': expected array of strings, got string\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("  line 4: truncated record (the JSON ends early): "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("  line 5: missing field 'answer'\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("FAILED"), std::string::npos);

  auto j = run_ragform("data check --skip-bad --json --max-listed 2 '" + path + "'");
  EXPECT_EQ(j.exit_code, 1);
  auto o = nlohmann::json::parse(j.out);
  EXPECT_EQ(o["rows"], 2);
  EXPECT_EQ(o["bad_rows"], 3);
  EXPECT_EQ(o["ok"], false);
  ASSERT_EQ(o["bad_lines"].size(), 2u);
  EXPECT_EQ(o["bad_lines"][0]["line"], 2);
  EXPECT_EQ(o["bad_lines"][1]["line"], 4);
}

TEST(DataCli, ForcedFormat) {
  std::string path = write("good.jsonl", kGood);
  auto r = run_ragform("data check --format litm-qa '" + path + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ragform: " + path + ":1: missing field 'answers'\n");
}

TEST(DataCli, UsageErrorsExitTwo) {
  auto f = run_ragform("data check --format squad x.jsonl");
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_NE(f.err.find("unknown format 'squad'"), std::string::npos) << f.err;
  EXPECT_EQ(run_ragform("data check").exit_code, 2);
  EXPECT_EQ(run_ragform("data").exit_code, 2);
  EXPECT_EQ(run_ragform("data frob").exit_code, 2);
}

TEST(DataCli, MissingAndEmptyFilesExitOne) {
  std::string missing = (temp_dir("data_cli") / "nope.jsonl").string();
  auto m = run_ragform("data check '" + missing + "'");
  EXPECT_EQ(m.exit_code, 1);
  EXPECT_EQ(m.err, "ragform: " + missing + ": cannot open: No such file or directory\n");
  std::string empty = write("empty.jsonl", "");
  auto e = run_ragform("data check '" + empty + "'");
  EXPECT_EQ(e.exit_code, 1);
  EXPECT_EQ(e.err, "ragform: " + empty + ": empty file (0 bytes)\n");
  auto s = run_ragform("data check --skip-bad '" + empty + "'");
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_NE(s.err.find("  file: empty file (0 bytes)"), std::string::npos) << s.err;
}

TEST(DataCli, CorruptGzipWithSkipBadNamesTheStreamError) {
  // A gzip member whose deflate data is cut: the lines before are checked, then reading stops.
  std::string text;
  for (int i = 0; i < 50; ++i)
    text += "{\"question\": \"q" + std::to_string(i) + "\", \"answer\": [\"a\"]}\n";
  z_stream zs{};
  ASSERT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string gz(deflateBound(&zs, static_cast<uLong>(text.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(text.data());
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(gz.data());
  zs.avail_out = static_cast<uInt>(gz.size());
  ASSERT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  gz.resize(zs.total_out - 6);  // lose most of the trailer
  deflateEnd(&zs);
  std::string path = write("cut.jsonl.gz", gz);
  auto r = run_ragform("data check --skip-bad --json '" + path + "'");
  EXPECT_EQ(r.exit_code, 1);
  auto o = nlohmann::json::parse(r.out);
  EXPECT_EQ(o["rows"], 50);
  EXPECT_EQ(o["bad_rows"], 1);
  EXPECT_EQ(o["stream_error"]["line"], 51);
  EXPECT_EQ(o["stream_error"]["reason"].get<std::string>().rfind("truncated gzip stream", 0), 0u);
  auto t = run_ragform("data check --skip-bad '" + path + "'");
  EXPECT_NE(t.err.find("reading stopped (broken file) at line 51: truncated gzip stream"),
            std::string::npos)
      << t.err;
}

}  // namespace
