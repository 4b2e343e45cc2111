// JsonRecordReader on input written by the test: layouts, gzip, and every kind of broken input,
// each of which must name the file, the line and the reason (strict) or be counted (skip mode).
#include "eval/jsonl.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/gzip_bytes.h"
#include "support/test_support.h"

namespace {

using namespace ragform::eval;
using ragform::testing::gzip_bytes;
using ragform::testing::temp_dir;
using ragform::testing::write_file;

std::string write(const std::string& name, const std::string& bytes) {
  auto p = temp_dir("jsonl") / name;
  write_file(p, bytes);
  return p.string();
}

struct Read {
  std::vector<JsonRow> rows;
  ReadStats stats;
  JsonLayout layout = JsonLayout::Lines;
  bool gzip = false;
};
Read read_all(const std::string& path, bool skip = false, size_t keep = 10) {
  JsonRecordReader r(path, ReadOptions{skip, keep});
  Read out;
  JsonRow row;
  while (r.next(row)) out.rows.push_back(row);
  out.stats = r.stats();
  out.layout = r.layout();
  out.gzip = r.gzip();
  return out;
}

// The DataError thrown by a strict read, or a failure if none is thrown.
DataError strict_error(const std::string& path) {
  try {
    read_all(path);
  } catch (const DataError& e) {
    return e;
  }
  ADD_FAILURE() << "no DataError for " << path;
  return DataError(path, 0, "none");
}

const std::string kThree =
    "{\"q\": \"a\", \"n\": 1}\n"
    "\n"
    "{\"q\": \"b\", \"n\": 2}\r\n"
    "{\"q\": \"c\", \"n\": 3}";  // no newline at the end: still a complete record

TEST(Jsonl, ReadsLinesWithLineNumbersSkippingBlankLinesAndCR) {
  auto r = read_all(write("three.jsonl", kThree));
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.layout, JsonLayout::Lines);
  EXPECT_FALSE(r.gzip);
  EXPECT_EQ(r.rows[0].line, 1u);
  EXPECT_EQ(r.rows[1].line, 3u);
  EXPECT_EQ(r.rows[2].line, 4u);
  EXPECT_EQ(r.rows[1].value["q"], "b");
  EXPECT_EQ(r.rows[2].value["n"], 3);
  EXPECT_EQ(r.rows[2].index, 2u);
  EXPECT_EQ(r.stats.rows_ok, 3u);
  EXPECT_EQ(r.stats.blank_lines, 1u);
}

TEST(Jsonl, Utf8ByteOrderMarkIsIgnored) {
  auto r = read_all(write("bom.jsonl", "\xEF\xBB\xBF{\"q\": \"a\"}\n{\"q\": \"b\"}\n"));
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].value["q"], "a");
  auto d = read_all(write("bom.json", "\xEF\xBB\xBF[\n{\"q\": \"a\"}\n]\n"));
  EXPECT_EQ(d.layout, JsonLayout::Array);
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].line, 2u);
}

TEST(Jsonl, GzipIsDetectedByMagicBytesNotByName) {
  // A gzip file without .gz, and a plain file named .gz.
  auto r = read_all(write("three.data", gzip_bytes(kThree)));
  EXPECT_TRUE(r.gzip);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[2].line, 4u);
  EXPECT_EQ(r.rows[2].value["q"], "c");
  auto p = read_all(write("plain.jsonl.gz", kThree));
  EXPECT_FALSE(p.gzip);
  EXPECT_EQ(p.rows.size(), 3u);
}

TEST(Jsonl, ConcatenatedGzipMembersAreOneStream) {
  auto r = read_all(write("two.gz", gzip_bytes("{\"a\": 1}\n") + gzip_bytes("{\"a\": 2}\n")));
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].value["a"], 2);
  EXPECT_EQ(r.rows[1].line, 2u);
}

TEST(Jsonl, LongLinesAcrossBufferBoundariesStream) {
  // Lines longer than the 1 MiB read chunk, plain and gzip.
  std::string big(3u << 20, 'x');
  std::string text = "{\"s\": \"" + big + "\"}\n{\"s\": \"tail\"}\n";
  for (const std::string& bytes : {text, gzip_bytes(text)}) {
    auto r = read_all(write("long.jsonl", bytes));
    ASSERT_EQ(r.rows.size(), 2u);
    EXPECT_EQ(r.rows[0].value["s"].get<std::string>().size(), big.size());
    EXPECT_EQ(r.rows[1].value["s"], "tail");
    EXPECT_EQ(r.rows[1].line, 2u);
  }
}

TEST(Jsonl, TruncatedLastLineNamesFileLineAndReason) {
  std::string path = write("trunc.jsonl", "{\"q\": \"a\"}\n{\"q\": \"b\"}\n{\"q\": \"c\", \"ans");
  DataError e = strict_error(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.line(), 3u);
  EXPECT_NE(e.reason().find("truncated record"), std::string::npos) << e.reason();
  EXPECT_NE(e.reason().find("no newline at end of file"), std::string::npos) << e.reason();
  EXPECT_EQ(std::string(e.what()).rfind(path + ":3: truncated record", 0), 0u) << e.what();
  EXPECT_FALSE(e.stream_error());
}

TEST(Jsonl, InvalidJsonCarriesNlohmannMessageAndColumn) {
  std::string path = write("bad.jsonl", "{\"q\": 1}\n{\"q\": 2,, }\n{\"q\": 3}\n");
  DataError e = strict_error(path);
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.reason().rfind("invalid JSON: syntax error while parsing object key", 0),
            std::string::npos)
      << "position must be kept: " << e.reason();
  EXPECT_NE(e.reason().find("invalid JSON: parse error at column 9: syntax error"),
            std::string::npos)
      << e.reason();
}

// nlohmann::json throws a number beyond a double as out_of_range without a position: it is a
// bad row with its line and column like any invalid JSON, strict or skipped.
TEST(Jsonl, NumberOutOfRangeIsABadRowWithItsLine) {
  std::string path = write("range.jsonl", "{\"q\": 1}\n{\"q\": 2}\n{\"q\": 1e309}\n{\"q\": 4}\n");
  DataError e = strict_error(path);
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.reason(),
            "invalid JSON: number out of range at column 11: 1e309 does not fit a double");
  ReadOptions o;
  o.skip_bad = true;
  ReadStats st = for_each_json_record(path, o, [](const JsonRow&) {});
  EXPECT_EQ(st.rows_ok, 3u);
  ASSERT_EQ(st.first_bad.size(), 1u);
  EXPECT_EQ(st.first_bad[0].line, 3u);
  // A pretty-printed array: the line inside the document.
  path = write("range.json", "[\n  {\"q\": 1},\n  {\"q\":\n    -1e400}\n]\n");
  e = strict_error(path);
  EXPECT_EQ(e.line(), 4u);
  EXPECT_NE(e.reason().find("number out of range"), std::string::npos) << e.reason();
}

TEST(Jsonl, InvalidUtf8NamesByteOffset) {
  std::string path = write("utf8.jsonl", "{\"q\": 1}\n{\"q\": \"caf\xC3\x28\"}\n");
  DataError e = strict_error(path);
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.reason(), "invalid UTF-8 at byte offset 10 of the line (byte 0xC3)");
}

// A file saved as "Unicode" (UTF-16 with a byte-order mark) is named for what it is, not as a bad
// byte 0xFF.
TEST(Jsonl, Utf16FileIsNamedAsUtf16) {
  DataError e = strict_error(write("u16.jsonl", std::string("\xFF\xFE{\0}\0\n\0", 7)));
  EXPECT_EQ(e.line(), 1u);
  EXPECT_NE(e.reason().find("UTF-16 text (byte-order mark FF FE), not UTF-8"), std::string::npos)
      << e.reason();
}

TEST(Jsonl, RecordMustBeAnObject) {
  DataError e = strict_error(write("arr.jsonl", "{\"q\": 1}\n[1, 2]\n"));
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.reason(), "expected a JSON object as record, got array");
}

TEST(Jsonl, EmptyFilesAreErrors) {
  DataError e0 = strict_error(write("empty.jsonl", ""));
  EXPECT_EQ(e0.line(), 0u);
  EXPECT_EQ(e0.reason(), "empty file (0 bytes)");
  EXPECT_TRUE(e0.stream_error());
  DataError e1 = strict_error(write("blank.jsonl", "\n  \n\t\n"));
  EXPECT_EQ(e1.reason(), "empty file (only blank lines, no records)");
  DataError e2 = strict_error(write("empty.gz", gzip_bytes("")));
  EXPECT_EQ(e2.reason(), "empty file (the gzip stream holds 0 bytes)");
}

TEST(Jsonl, CannotOpenNamesThePath) {
  std::string path = (temp_dir("jsonl") / "missing.jsonl").string();
  try {
    JsonRecordReader r(path, ReadOptions{true, 10});  // even in skip mode
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(std::string(e.what()), path + ": cannot open: No such file or directory");
  }
}

// Issue 40, fourth pass: a directory opened, and its read error (EISDIR) escaped as an uncaught
// exception (SIGABRT, exit 134); /dev/zero was read into one endless line at 400 MB/s until the
// memory ran out. Both are the file's error at once; a NUL byte later in a file names its offset.
TEST(Jsonl, DirectoriesAndNulBytesAreTheFilesErrorAtOnce) {
  const std::string dir = temp_dir("jsonl-dir").string();
  for (bool skip : {false, true}) {
    try {
      JsonRecordReader r(dir, ReadOptions{skip, 10});
      JsonRow row;
      r.next(row);
      FAIL() << "no error";
    } catch (const DataError& e) {
      EXPECT_TRUE(e.stream_error());
      EXPECT_EQ(std::string(e.what()), dir + ": read error: Is a directory");
    }
  }
  DataError z = strict_error("/dev/zero");
  EXPECT_TRUE(z.stream_error());
  EXPECT_EQ(z.reason(), "a NUL byte at byte 0: not a UTF-8 text file (JSON has no NUL bytes)");
  DataError n =
      strict_error(write("nul.jsonl", std::string("{\"q\": 1}\n{\"q\": \"a\0b\"}\n", 20)));
  EXPECT_EQ(n.line(), 2u);
  EXPECT_EQ(n.reason(), "a NUL byte at byte 17: not a UTF-8 text file (JSON has no NUL bytes)");
  // Skip mode stops there too: what follows a NUL byte is not text.
  const Read r =
      read_all(write("nul2.jsonl", std::string("{\"q\": 1}\n\0\n{\"q\": 2}\n", 19)), true);
  EXPECT_EQ(r.rows.size(), 1u);
  EXPECT_TRUE(r.stats.stream_error);
}

// n JSONL lines with pseudo-random padding (so that gzip output is long, many deflate blocks).
std::string many_lines(int n) {
  std::string s;
  uint32_t x = 12345;
  for (int i = 0; i < n; ++i) {
    std::string pad;
    for (int k = 0; k < 64; ++k) {
      x = x * 1664525u + 1013904223u;
      pad += static_cast<char>('a' + (x >> 24) % 26);
    }
    s += "{\"i\": " + std::to_string(i) + ", \"pad\": \"" + pad + "\"}\n";
  }
  return s;
}

TEST(Jsonl, CorruptGzipIsAStreamError) {
  std::string gz = gzip_bytes(many_lines(2000));
  ASSERT_GT(gz.size(), 40000u);
  for (size_t i = gz.size() / 2; i < gz.size() / 2 + 16; ++i)
    gz[i] = static_cast<char>(gz[i] ^ 0x5A);
  std::string path = write("corrupt.jsonl.gz", gz);
  // Deflate damage may decode to garbage lines before zlib notices; strict mode then still names
  // the gzip corruption as the reason, at the first line that came out broken.
  DataError e = strict_error(path);
  EXPECT_TRUE(e.stream_error());
  EXPECT_GT(e.line(), 100u);
  EXPECT_EQ(e.reason().rfind("corrupt gzip data", 0), 0u) << e.reason();

  // Skip mode: the good lines before the damage are read in order, the gzip error ends the input.
  auto r = read_all(path, true, 1000);
  EXPECT_TRUE(r.stats.stream_error);
  ASSERT_GE(r.stats.rows_bad, 1u);
  EXPECT_EQ(r.stats.first_bad.back().reason.rfind("corrupt gzip data", 0), 0u);
  size_t first_bad_line = r.stats.first_bad.front().line;
  EXPECT_GT(first_bad_line, 100u);
  EXPECT_LT(r.rows.size(), 2000u);
  for (auto& row : r.rows) {
    if (row.line < first_bad_line) {
      EXPECT_EQ(row.value["i"], static_cast<int>(row.line - 1));
    }
  }
}

TEST(Jsonl, CorruptGzipHeader) {
  std::string gz = gzip_bytes(kThree);
  gz[2] = 7;  // compression method must be 8 (deflate)
  DataError e = strict_error(write("hdr.gz", gz));
  EXPECT_EQ(e.line(), 1u);
  EXPECT_NE(e.reason().find("corrupt gzip data"), std::string::npos) << e.reason();
  EXPECT_NE(e.reason().find("unknown compression method"), std::string::npos) << e.reason();
}

TEST(Jsonl, CorruptGzipChecksum) {
  std::string gz = gzip_bytes(kThree);
  gz[gz.size() - 6] = static_cast<char>(gz[gz.size() - 6] ^ 1);  // CRC-32 in the trailer
  DataError e = strict_error(write("crc.gz", gz));
  EXPECT_NE(e.reason().find("incorrect data check"), std::string::npos) << e.reason();
}

TEST(Jsonl, TruncatedGzipIsAStreamError) {
  std::string text = many_lines(2000);
  std::string gz = gzip_bytes(text);
  std::string path = write("cut.jsonl.gz", gz.substr(0, gz.size() / 2));
  DataError e = strict_error(path);
  EXPECT_TRUE(e.stream_error());
  EXPECT_NE(e.reason().find("truncated gzip stream"), std::string::npos) << e.reason();
  EXPECT_NE(e.reason().find(std::to_string(gz.size() / 2) + " bytes"), std::string::npos)
      << e.reason();
  auto r = read_all(path, true);
  EXPECT_EQ(r.stats.rows_bad, 1u);
  EXPECT_TRUE(r.stats.stream_error);
  EXPECT_GT(r.rows.size(), 100u);
  // Only the trailer missing: every line was delivered, then the stream is reported truncated.
  std::string no_trailer = write("notrailer.gz", gz.substr(0, gz.size() - 4));
  auto t = read_all(no_trailer, true);
  EXPECT_EQ(t.rows.size(), 2000u);
  EXPECT_EQ(t.stats.rows_bad, 1u);
  EXPECT_NE(t.stats.first_bad.at(0).reason.find("truncated gzip stream"), std::string::npos);
}

TEST(Jsonl, SkipModeCountsBadRowsAndKeepsTheFirstReasons) {
  std::string text =
      "{\"i\": 0}\n"
      "{\"i\": 1,}\n"  // 2: invalid JSON
      "{\"i\": 2}\n"
      "\"just a string\"\n"  // 4: not an object
      "{\"s\": \"\xFF\"}\n"  // 5: invalid UTF-8
      "{\"i\": 5}\n"
      "{\"i\": 6";  // 7: truncated
  auto r = read_all(write("mixed.jsonl", text), true, 2);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[2].value["i"], 5);
  EXPECT_EQ(r.rows[2].line, 6u);
  EXPECT_EQ(r.stats.rows_ok, 3u);
  EXPECT_EQ(r.stats.rows_bad, 4u);
  EXPECT_FALSE(r.stats.stream_error);
  ASSERT_EQ(r.stats.first_bad.size(), 2u);  // keep = 2
  EXPECT_EQ(r.stats.first_bad[0].line, 2u);
  EXPECT_NE(r.stats.first_bad[0].reason.find("invalid JSON"), std::string::npos);
  EXPECT_EQ(r.stats.first_bad[1].line, 4u);
  EXPECT_EQ(r.stats.first_bad[1].reason, "expected a JSON object as record, got string");
}

TEST(Jsonl, BrokenFirstLineFallsBackToLines) {
  auto r = read_all(write("first.jsonl", "{\"i\": 0\n{\"i\": 1}\n{\"i\": 2}\n"), true);
  EXPECT_EQ(r.layout, JsonLayout::Lines);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].line, 2u);
  EXPECT_EQ(r.stats.rows_bad, 1u);
  EXPECT_EQ(r.stats.first_bad[0].line, 1u);
}

TEST(Jsonl, RejectTurnsARowBad) {
  std::string path = write("rej.jsonl", "{\"i\": 0}\n{\"i\": \"x\"}\n{\"i\": 2}\n");
  auto fn = [](const JsonRow& row) {
    if (!row.value["i"].is_number()) throw RowError("field 'i': expected integer, got string");
  };
  try {
    for_each_json_record(path, ReadOptions{}, fn);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), path + ":2: field 'i': expected integer, got string");
  }
  ReadStats s = for_each_json_record(path, ReadOptions{true, 10}, fn);
  EXPECT_EQ(s.rows_ok, 2u);
  EXPECT_EQ(s.rows_bad, 1u);
  EXPECT_EQ(s.first_bad.at(0).line, 2u);
}

TEST(Jsonl, JsonArrayDocumentHasPerRecordLines) {
  std::string doc = "\n[\n  {\"i\": 0},\n  {\n    \"i\": 1\n  }, {\"i\": 2}\n]\n";
  auto r = read_all(write("arr.json", doc));
  EXPECT_EQ(r.layout, JsonLayout::Array);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].line, 3u);
  EXPECT_EQ(r.rows[1].line, 4u);
  EXPECT_EQ(r.rows[2].line, 6u);
  EXPECT_EQ(r.rows[2].value["i"], 2);
  auto one = read_all(write("arr1.json", "[{\"i\": 0}, {\"i\": 1}]"));
  EXPECT_EQ(one.layout, JsonLayout::Array);
  EXPECT_EQ(one.rows.size(), 2u);
  auto none = read_all(write("arr0.json", "[ ]\n"));
  EXPECT_EQ(none.rows.size(), 0u);
}

TEST(Jsonl, KeyedObjectDocumentPrettyAndOneLine) {
  std::string pretty = "{\n  \"k1\": {\n    \"v\": 1\n  },\n  \"k2\": {\"v\": 2}\n}\n";
  auto r = read_all(write("keyed.json", pretty));
  EXPECT_EQ(r.layout, JsonLayout::Object);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].key, "k1");
  EXPECT_EQ(r.rows[0].line, 2u);
  EXPECT_EQ(r.rows[1].key, "k2");
  EXPECT_EQ(r.rows[1].line, 5u);
  EXPECT_EQ(r.rows[1].value["v"], 2);
  auto one = read_all(write("keyed1.json", "{\"a\": {\"v\": 1}, \"b\": {\"v\": 2}}"));
  EXPECT_EQ(one.layout, JsonLayout::Object);
  ASSERT_EQ(one.rows.size(), 2u);
  EXPECT_EQ(one.rows[1].key, "b");
}

TEST(Jsonl, SinglePrettyPrintedRecord) {
  auto r = read_all(write("single.json", "{\n  \"question\": \"q\",\n  \"answers\": [\"a\"]\n}\n"));
  EXPECT_EQ(r.layout, JsonLayout::Single);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].value["question"], "q");
  EXPECT_EQ(r.rows[0].line, 1u);
}

TEST(Jsonl, BadRecordInsideADocumentNamesItsLine) {
  std::string doc = "[\n  {\"i\": 0},\n  {\"i\": \n    tru},\n  {\"i\": 2}\n]\n";
  std::string path = write("doc_bad.json", doc);
  DataError e = strict_error(path);
  EXPECT_EQ(e.line(), 4u);
  EXPECT_NE(e.reason().find("invalid JSON"), std::string::npos) << e.reason();
  auto r = read_all(path, true);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].value["i"], 2);
  EXPECT_EQ(r.rows[1].line, 5u);
  EXPECT_EQ(r.stats.rows_bad, 1u);
}

TEST(Jsonl, BrokenDocumentStructure) {
  DataError trunc = strict_error(write("doc_trunc.json", "[\n  {\"i\": 0},\n  {\"i\": 1"));
  EXPECT_TRUE(trunc.stream_error());
  EXPECT_EQ(trunc.line(), 3u);
  EXPECT_NE(trunc.reason().find("truncated JSON document"), std::string::npos) << trunc.reason();
  DataError comma = strict_error(write("doc_comma.json", "[\n  {\"i\": 0},\n]\n"));
  EXPECT_EQ(comma.line(), 3u);
  EXPECT_NE(comma.reason().find("trailing comma"), std::string::npos) << comma.reason();
  DataError sep = strict_error(write("doc_sep.json", "[{\"i\": 0} {\"i\": 1}]"));
  EXPECT_NE(sep.reason().find("expected ',' or ']'"), std::string::npos) << sep.reason();
  DataError keyed = strict_error(write("keyed_trunc.json", "{\n  \"k1\": {\n    \"v\": 1\n"));
  EXPECT_EQ(keyed.line(), 1u);
  EXPECT_NE(keyed.reason().find("truncated JSON document"), std::string::npos) << keyed.reason();
  DataError tail = strict_error(write("doc_tail.json", "[{\"i\": 0}]\n[{\"i\": 1}]\n"));
  EXPECT_EQ(tail.line(), 2u);
  EXPECT_NE(tail.reason().find("unexpected text after its end"), std::string::npos)
      << tail.reason();
}

// Found by fuzz/fuzz_jsonl: the separator message quoted the raw byte, so a non-ASCII byte made
// the reason invalid UTF-8 and `data check --json` threw nlohmann's type_error 316 dumping it.
TEST(Jsonl, BrokenSeparatorByteIsShownAsHex) {
  DataError sep = strict_error(write("doc_sep_byte.json", "[{\"i\": 0} \xB1{\"i\": 1}]"));
  EXPECT_NE(sep.reason().find("found byte 0xB1"), std::string::npos) << sep.reason();
  EXPECT_NO_THROW((void)nlohmann::json(sep.reason()).dump());
  DataError ascii = strict_error(write("doc_sep_ascii.json", "[{\"i\": 0} x{\"i\": 1}]"));
  EXPECT_NE(ascii.reason().find("found 'x'"), std::string::npos) << ascii.reason();
}

TEST(Jsonl, LineColOf) {
  EXPECT_EQ(line_col_of("ab\ncd", 0), (std::pair<size_t, size_t>{1, 1}));
  EXPECT_EQ(line_col_of("ab\ncd", 1), (std::pair<size_t, size_t>{1, 2}));
  EXPECT_EQ(line_col_of("ab\ncd", 3), (std::pair<size_t, size_t>{2, 1}));
  EXPECT_EQ(line_col_of("ab\ncd", 4), (std::pair<size_t, size_t>{2, 2}));
}

}  // namespace
