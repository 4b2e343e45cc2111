// The bounds every outside input passes (issue 40, security 1, 3 and 5): JSON and YAML nested
// deeper than kMaxJsonDepth refused at parse time (75,000 levels crashed a recursive dump), YAML
// aliases refused (a 465-byte alias bomb grew to gigabytes), and quotes of input in messages cut
// to an excerpt with URL credentials redacted.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/excerpt.h"
#include "base/json_file.h"
#include "base/yaml_text.h"

namespace ragform {
namespace {

std::string nested(int depth, const std::string& open = "[", const std::string& close = "]") {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  s += "1";
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(InputBounds, JsonNestedDeeperThanTheLimitIsRefusedWithItsPosition) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    parse_json_text(nested(75000));
    FAIL() << "75,000 levels parsed";
  } catch (const JsonTextError& e) {
    EXPECT_EQ(e.kind(), "too deep");
    EXPECT_NE(std::string(e.what()).find("nesting deeper than 128 levels"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.line(), 1u);
    EXPECT_EQ(e.column(), 129u);  // the 129th '['
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // Objects count alike, and brackets inside strings do not count.
  EXPECT_THROW(parse_json_text(nested(200, "{\"a\":", "}")), JsonTextError);
  EXPECT_EQ(parse_json_text("[\"" + std::string(500, '[') + "\"]")[0].get<std::string>().size(),
            500u);
  // The limit itself parses.
  EXPECT_NO_THROW(parse_json_text(nested(kMaxJsonDepth)));
  EXPECT_THROW(parse_json_text(nested(kMaxJsonDepth + 1)), JsonTextError);
  EXPECT_TRUE(parse_json_or_discarded(nested(75000)).is_discarded());
  EXPECT_FALSE(parse_json_or_discarded(nested(3)).is_discarded());
}

TEST(InputBounds, AJsonFileNestedTooDeepNamesTheFile) {
  const auto path = std::string(::testing::TempDir()) + "/deep_profile.json";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_TRUE(f);
  const std::string text = "{\"a\":\n" + nested(75000) + "}";
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
  try {
    read_json_file(path, "profile");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(path + ":2: profile is not valid JSON: too deep at column 128: nesting "
                             "deeper than 128 levels",
                      0),
              0u)
        << m;
  }
}

TEST(InputBounds, YamlAliasesAndDeepNestingAreRefused) {
  // The classic bomb: each level repeats the one before nine times.
  const std::string bomb =
      "a: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n"
      "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
      "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
      "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
      "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
      "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
      "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n";
  try {
    load_yaml_text(bomb);
    FAIL() << "an alias bomb loaded";
  } catch (const YAML::ParserException& e) {
    EXPECT_EQ(e.msg, "aliases (*name) are not accepted");
    EXPECT_EQ(e.mark.line, 1);  // 0-based: the first alias is on line 2
  }
  try {
    load_yaml_text("k: " + nested(5000));
    FAIL() << "5,000 levels of YAML loaded";
  } catch (const YAML::ParserException& e) {
    EXPECT_EQ(e.msg, "nesting deeper than 128 levels");
  }
  // Issue 40, D8: a list as a key, refused where it stands (line 2, 0-based 1).
  try {
    load_yaml_text("a: 1\n? [a, b]\n: c\n");
    FAIL() << "a complex key loaded";
  } catch (const YAML::ParserException& e) {
    EXPECT_EQ(e.msg, "complex keys (a list or a map as a key) are not accepted");
    EXPECT_EQ(e.mark.line, 1);
  }
  // Fifth pass, D8: an unclosed nested flow sequence is the syntax error it is, not a complex key
  // (yaml-cpp reads the inner "[" as a key before it finds the end missing).
  for (const char* text : {"k: [[2, 3\n", "k: [2, [3\n", "k: [[[[[[[[[[\n", "k: [2, 3\n"}) {
    try {
      load_yaml_text(text);
      ADD_FAILURE() << text << " loaded";
    } catch (const YAML::ParserException& e) {
      EXPECT_EQ(e.msg.find("complex keys"), std::string::npos) << text << ": " << e.msg;
      EXPECT_NE(e.msg.find("end of sequence flow not found"), std::string::npos)
          << text << ": " << e.msg;
    }
  }
  EXPECT_EQ(load_yaml_text("m: {a: [1, {b: 2}], c: 3}\n")["m"]["c"].as<int>(), 3);
  const YAML::Node n = load_yaml_text("k: [1, 2]\nanchored: &x 3\n");
  EXPECT_EQ(n["k"].size(), 2u);
  EXPECT_EQ(n["anchored"].as<int>(), 3);  // an anchor alone is harmless
}

// Pass 6: a second document and a key given twice were silently ignored (yaml-cpp builds the first
// document, and keeps both keys with a lookup finding the first); both are refused where they are.
TEST(InputBounds, YamlRefusesASecondDocumentAndDuplicateKeys) {
  struct Case {
    const char* text;
    int line;  // 0-based
    std::string msg;
  };
  const std::string second = "only one document is read; a second starts here";
  for (const Case& c : std::vector<Case>{
           {"a: 1\n---\nb: 2\n", 1, second},
           {"a: 1\n...\n\nb: 2\n", 3, second},
           {"a: 1\n--- x\n", 1, second},
           {"a: 1\nb: 2\na: 3\n", 2, "duplicate key 'a'"},
           {"m: {x: 1, y: [1], \"x\": 2}\n", 0, "duplicate key 'x'"},
           {"m:\n  - {k: 1}\n  - n:\n      k: 2\n      k: 3\n", 4, "duplicate key 'k'"}}) {
    try {
      load_yaml_text(c.text);
      ADD_FAILURE() << c.text << " loaded";
    } catch (const YAML::ParserException& e) {
      EXPECT_EQ(e.msg, c.msg) << c.text;
      EXPECT_EQ(e.mark.line, c.line) << c.text;
    }
  }
  // One document, its markers, comments after it; the same key in different maps.
  for (const char* text : {"---\na: 1\n...\n# done\n\n", "a: 1\n# trailing\n",
                           "m: [{k: 1}, {k: 2}]\nk: 3\n", "", "# only a comment\n"})
    EXPECT_NO_THROW(load_yaml_text(text)) << text;
}

// A mutation of the SURE formats' seed (fuzz/corpus/fuzz_sure_formats/hang-trailing-brace.yaml)
// on which reading every document never ended (yaml-cpp 0.7's HandleNextDocument kept returning
// true): run in a child with an alarm, so a hang is a failure, not a stalled test run.
TEST(InputBounds, YamlAfterItsFirstDocumentIsNotReadForever) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);
    try {
      load_yaml_text(" \"Rivers\",\n  \"text\": \"The Nile flows north.\"\n}");
    } catch (const std::exception&) {
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << " (14: a hang)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A NUL quoted from input is written \0: the message stays whole where it is read as a C string.
TEST(InputBounds, ExcerptsWriteANulAsEscape) {
  EXPECT_EQ(excerpt(std::string("f3\0x", 4)), "f3\\0x");
  const std::string e = excerpt(std::string(300, '\0'));
  EXPECT_EQ(e.find('\0'), std::string::npos);
  EXPECT_EQ(e.substr(0, 4), "\\0\\0");
}

TEST(InputBounds, ExcerptsAreBoundedAndCutOnACharacter) {
  EXPECT_EQ(excerpt("short"), "short");
  const std::string big(50 << 20, 'x');
  const std::string e = excerpt(big);
  EXPECT_LT(e.size(), kExcerptBytes + 40);
  EXPECT_NE(e.find("... (52428800 bytes)"), std::string::npos) << e;
  // A two-byte character straddling the cut is left out whole.
  const std::string cut = excerpt(std::string(9, 'a') + "\xc3\xa9" + "zzz", 10);
  EXPECT_EQ(cut.substr(0, cut.find("...")), std::string(9, 'a'));
  // A JSON value: a 1 MB string or a 100,000-element array is not dumped whole.
  EXPECT_LT(json_excerpt(nlohmann::json(std::string(1 << 20, 'y'))).size(), 300u);
  EXPECT_LT(json_excerpt(nlohmann::json(std::vector<int>(100000, 7))).size(), 300u);
  EXPECT_EQ(json_excerpt(nlohmann::json::parse("{\"a\":[1,\"b\"]}")), "{\"a\":[1,\"b\"]}");
  // A message as front ends print it.
  EXPECT_LE(bounded_message(big).size(), kMessageBytes + 40);
}

// Terminal controls in a quoted text are written out (issue 40, fourth pass): C0 but newline and
// tab, DEL and the C1 range; other UTF-8 is kept.
TEST(InputBounds, PrintableEscapesTerminalControls) {
  EXPECT_EQ(printable("a\x1b[31mb\x07\r\x7f\x01"), "a\\x1b[31mb\\x07\\x0d\\x7f\\x01");
  EXPECT_EQ(printable("line\n\tcaf\xc3\xa9 \xc2\xa0 \xc2\x9b"
                      "1m \xe2\x80\xa8"),
            "line\n\tcaf\xc3\xa9 \xc2\xa0 \\u009b1m \xe2\x80\xa8");
  EXPECT_EQ(printable("\xc2"), "\xc2");  // a lone lead byte at the end stays as it is
  EXPECT_EQ(bounded_message("record \x1b]0;t\x07 bad"), "record \\x1b]0;t\\x07 bad");
  EXPECT_LE(bounded_message(std::string(100000, '\x1b')).size(), kMessageBytes + 40);
  // A message is one line (pass 10): a newline quoted from a file name is written \n, so it
  // cannot print a forged line of its own; a tab stays.
  EXPECT_EQ(bounded_message("x\nragform: info: model verified OK\ty.gguf: no such file"),
            "x\\nragform: info: model verified OK\ty.gguf: no such file");
}

TEST(InputBounds, UrlCredentialsAreRedacted) {
  EXPECT_EQ(redact_url("http://user:pass@host:8080/v1"), "http://***@host:8080/v1");
  EXPECT_EQ(redact_url("http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1");
  EXPECT_EQ(redact_urls_in("no answer from https://a:b@x/v1/completions (Connection)"),
            "no answer from https://***@x/v1/completions (Connection)");
  // An '@' after the authority (a path, a query) is not userinfo.
  EXPECT_EQ(redact_url("http://host/v1?u=a@b"), "http://host/v1?u=a@b");
  EXPECT_EQ(bounded_message("x: http://u:secret@h/v1"), "x: http://***@h/v1");
  // Userinfo holding '?', '#', a space or a quote is redacted whole (issue 40, D11: the
  // authority stopped at '?' and printed "user:se?cret").
  EXPECT_EQ(redact_url("http://user:se?cret@127.0.0.1:1/v1"), "http://***@127.0.0.1:1/v1");
  EXPECT_EQ(redact_url("http://user:se#cr et@h:1/v1"), "http://***@h:1/v1");
  EXPECT_EQ(redact_url("https://u:a@b@h"), "https://***@h");
  EXPECT_EQ(redact_urls_in("base URL 'http://u:it's?@h:1/v1' names no server"),
            "base URL 'http://***@h:1/v1' names no server");
  EXPECT_EQ(bounded_message("x: http://user:se?cret@127.0.0.1:1/v1 (refused)"),
            "x: http://***@127.0.0.1:1/v1 (refused)");
  // A base URL without a scheme is quoted by the error that refuses it: redacted from its start.
  EXPECT_EQ(redact_url("user:secret@host:1/v1"), "***@host:1/v1");
  EXPECT_EQ(redact_url("host:1/v1"), "host:1/v1");
  EXPECT_EQ(redact_url("host:1/v1?mail=a@b"), "host:1/v1?mail=a@b");
}

}  // namespace
}  // namespace ragform
