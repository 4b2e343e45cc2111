// read_json_file (base/json_file.h): a JSON document from a file, or an error that names the file
// and says what is wrong with it — missing, a directory, or not JSON at a line and column.
#include "base/json_file.h"

#include <gtest/gtest.h>

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
        m.rfind(bad.string() + ": dense index metadata is not valid JSON: parse error at line 3",
                0),
        0u)
        << m;
    EXPECT_EQ(m.find("[json.exception"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace ragform
