// read_json_file (base/json_file.h): a JSON document from a file, or an error that names the file
// and says what is wrong with it — missing, a directory, or not JSON at a line and column.
#include "base/json_file.h"

#include <gtest/gtest.h>

#include <vector>

#include <cerrno>
#include <string>

#include "base/error.h"
#include "support/test_support.h"

namespace ragform {
namespace {

TEST(JsonFile, ReadsADocument) {
  const auto path = testing::temp_dir("json_file") / "p.json";
  testing::write_file(path, "{\"a\": [1, 2], \"b\": \"x\"}\n");
  const nlohmann::json j = read_json_file(path.string(), "profile");
  EXPECT_EQ(j.at("a"), nlohmann::json::array({1, 2}));
  EXPECT_EQ(j.at("b"), "x");
}

TEST(JsonFile, ErrorsNameTheFileAndTheReason) {
  const auto dir = testing::temp_dir("json_file_bad");
  const std::string missing = (dir / "missing.json").string();
  try {
    read_json_file(missing, "profile");
    FAIL() << "no error for a missing file";
  } catch (const FileError& e) {
    EXPECT_EQ(e.error_code(), ENOENT);
    EXPECT_EQ(std::string(e.what()), missing + ": cannot read profile: No such file or directory");
  }
  try {
    read_json_file(dir.string(), "word vectors");
    FAIL() << "no error for a directory";
  } catch (const FileError& e) {
    EXPECT_EQ(e.error_code(), EISDIR);
    EXPECT_EQ(std::string(e.what()), dir.string() + ": is a directory");
  }
  const auto bad = dir / "bad.json";
  testing::write_file(bad, "{\n  \"a\": 1,\n  \"b\": oops\n}\n");
  try {
    read_json_file(bad.string(), "dense index metadata");
    FAIL() << "no error for text that is not JSON";
  } catch (const FileError&) {
    FAIL() << "a parse error is not a file error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(
        m.rfind(bad.string() + ":3: dense index metadata is not valid JSON: parse error at column ",
                0),
        0u)
        << m;
    EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
  }
}

// A file of settings (profile, bias curve, space) is one class of fault whatever the fault: text
// that is not JSON is a UsageError as a bad key is (pass 20's U8: a profile that did not parse
// exited 1, one with a bad field 2); a file that cannot be read stays a FileError.
TEST(JsonFile, ASettingsFileThatIsNotJsonIsAUsageError) {
  const auto dir = testing::temp_dir("json_file_settings");
  const auto bad = dir / "bad.json";
  testing::write_file(bad, "{\n  \"best\": \n");
  try {
    read_settings_json_file(bad.string(), "profile");
    FAIL() << "no error for text that is not JSON";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(bad.string() + ":2: profile is not valid JSON: ", 0), 0u) << m;
  }
  EXPECT_THROW(read_settings_json_file((dir / "missing.json").string(), "profile"), FileError);
  const auto good = dir / "good.json";
  testing::write_file(good, "{\"a\": 1}");
  EXPECT_EQ(read_settings_json_file(good.string(), "profile"), nlohmann::json({{"a", 1}}));
}

// Issue 40, third pass: a JSON file is read up to a bound (kMaxTextFileBytes unless the caller
// gives another), so /dev/zero as a profile, a bias curve, a space or word vectors is refused at
// once naming the limit; it was read until the memory ran out.
TEST(JsonFile, ReadsAreBounded) {
  try {
    read_json_file("/dev/zero", "profile");
    FAIL() << "no error for /dev/zero";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "/dev/zero: the profile is over the limit of 67108864 bytes (a text file is read "
              "whole; is it the right file?)");
  }
  const auto path = testing::temp_dir("json_file_bound") / "p.json";
  testing::write_file(path, "[1, 2, 3]");
  EXPECT_EQ(read_json_file(path.string(), "curve", 9).size(), 3u);
  EXPECT_THROW(read_json_file(path.string(), "curve", 8), Error);
}

// nlohmann::json throws a number beyond a double's range as out_of_range 406 without a position;
// it is reported as a parse error is, with the line and column of the number.
TEST(JsonFile, ANumberOutOfRangeHasItsLineAndColumn) {
  try {
    parse_json_text("{\n  \"a\": [1,\n    -1e309]}");
    FAIL() << "no error for 1e309";
  } catch (const JsonTextError& e) {
    EXPECT_EQ(e.kind(), "number out of range");
    EXPECT_EQ(e.line(), 3u);
    EXPECT_EQ(e.column(), 10u);  // the number's last character: where the lexer stopped
    EXPECT_EQ(std::string(e.what()),
              "number out of range at line 3, column 10: -1e309 does not fit a double");
  }
  const auto path = testing::temp_dir("json_file_range") / "v.json";
  testing::write_file(path, "{\"alpha\": [1, 0],\n \"beta\": [1e309, 1]}\n");
  try {
    read_json_file(path.string(), "word vectors");
    FAIL() << "no error for 1e309";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.string() +
                                         ":2: word vectors is not valid JSON: number out of range "
                                         "at column 15: 1e309 does not fit a double");
  }
  // Large numbers that a double holds are fine.
  EXPECT_EQ(parse_json_text("[1e308, 18446744073709551616]").size(), 2u);
}

// Issue 40, item 18: a one-line file cut short is reported on its line, not on the empty line
// after its final newline.
TEST(JsonFile, AnErrorAtTheEndIsOnTheLastLine) {
  for (const char* text : {"{\n", "{\"delimiter\": [\"-\"\n"}) {
    try {
      parse_json_text(text);
      FAIL() << "no error for " << text;
    } catch (const JsonTextError& e) {
      EXPECT_EQ(e.line(), 1u) << text;
      EXPECT_TRUE(e.at_end()) << text;
    }
  }
}

TEST(JsonFile, ParseErrorsAreLocatedInTheText) {
  try {
    parse_json_text("[1,\n 2,\n oops]");
    FAIL() << "no error";
  } catch (const JsonTextError& e) {
    EXPECT_EQ(e.kind(), "parse error");
    EXPECT_EQ(e.line(), 3u);
    EXPECT_EQ(e.column(), 2u);
    EXPECT_EQ(e.detail().find("parse error"), std::string::npos) << e.detail();
    EXPECT_FALSE(e.at_end());
  }
  try {
    parse_json_text("{\"a\": \"cut");
    FAIL() << "no error";
  } catch (const JsonTextError& e) {
    EXPECT_TRUE(e.at_end());
  }
}

// nlohmann's lexer ends its input at a NUL byte: `{...}\0{...}` was read as its first value, the
// rest ignored (issue 40, pass 9: a request body, a profile file). Refused, with its place, by
// every parse: the value, the SAX form and a file.
TEST(JsonFile, ANulByteIsRefusedWhereverItIs) {
  const std::string text = std::string(R"({"a": 1})") + '\0' + R"({"b": 2})";
  try {
    (void)parse_json_text(text);
    ADD_FAILURE() << "a NUL byte was read as the end of the text";
  } catch (const JsonTextError& e) {
    EXPECT_NE(std::string(e.what()).find("a NUL byte"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("column 9"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(parse_json_or_discarded(text).is_discarded());
  const auto dir = testing::temp_dir("json_nul");
  testing::write_file(dir / "p.json", text);
  EXPECT_THROW((void)read_json_file((dir / "p.json").string(), "a profile"), Error);
  // Inside a string it is written \u0000, which is no NUL byte of the text.
  EXPECT_EQ(parse_json_text(R"({"a": "x\u0000y"})")["a"].get<std::string>(),
            std::string("x\0y", 3));
}

// A key twice in one object is refused where the second one stands, in every form of the parse
// (issue 40, pass 10: nlohmann kept the last, so `{"max_tokens":600,"max_tokens":1}` ran with 1
// while a gateway reading the first saw 600). The same key in two objects is no duplicate, and
// an escaped spelling of a key is the same key.
TEST(JsonFile, ADuplicateKeyIsRefusedWithItsPosition) {
  struct Case {
    std::string text, key;
    size_t line, column;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"max_tokens": 600, "max_tokens": 1})", "max_tokens", 1, 21},
           {"{\"a\": {\"b\": 1,\n  \"b\": 2}}", "b", 2, 3},
           {R"([{"k": 1}, {"x": {"k": 2}, "k": 3, "\u006b": 4}])", "k", 1, 36},
           {R"({"s": "\"k\": 1", "k": 1, "k": 2})", "k", 1, 27},
       }) {
    try {
      (void)parse_json_text(c.text);
      ADD_FAILURE() << "accepted " << c.text;
    } catch (const JsonTextError& e) {
      EXPECT_EQ(e.kind(), "duplicate key") << c.text;
      EXPECT_EQ(e.detail(), "'" + c.key + "' twice in one object") << c.text;
      EXPECT_EQ(e.line(), c.line) << c.text;
      EXPECT_EQ(e.column(), c.column) << c.text;
    }
    EXPECT_TRUE(parse_json_or_discarded(c.text).is_discarded()) << c.text;
    struct Count : nlohmann::json_sax<nlohmann::json> {
      bool null() override { return true; }
      bool boolean(bool) override { return true; }
      bool number_integer(number_integer_t) override { return true; }
      bool number_unsigned(number_unsigned_t) override { return true; }
      bool number_float(number_float_t, const string_t&) override { return true; }
      bool string(string_t&) override { return true; }
      bool binary(binary_t&) override { return true; }
      bool start_object(std::size_t) override { return true; }
      bool key(string_t&) override { return true; }
      bool end_object() override { return true; }
      bool start_array(std::size_t) override { return true; }
      bool end_array() override { return true; }
      bool parse_error(std::size_t, const std::string&,
                       const nlohmann::detail::exception&) override {
        return false;
      }
    } streamed;
    EXPECT_THROW(parse_json_text(c.text, streamed), JsonTextError) << c.text;
  }
  EXPECT_EQ(parse_json_text(R"([{"k": 1}, {"k": 2, "x": {"k": 3}}])").size(), 2u);
}
}  // namespace
}  // namespace ragform
