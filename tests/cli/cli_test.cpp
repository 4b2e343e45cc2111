// The command-line contract: exit codes, one-line errors, --help and --version.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <thread>

#include "support/test_support.h"

using ragform::testing::run_ragform;

TEST(Cli, HelpListsCommandsAndExitsZero) {
  auto r = run_ragform("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("commands:"), std::string::npos);
}

TEST(Cli, VersionComesFromGit) {
  auto r = run_ragform("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("ragform "), std::string::npos);
  EXPECT_NE(r.out.find("git "), std::string::npos);
}

TEST(Cli, UnknownCommandIsUsageErrorOnOneLine) {
  auto r = run_ragform("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ragform: frobnicate: unknown command (see ragform --help)\n");
}

namespace {
std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) out.push_back(l);
  return out;
}

// The commands (and group verbs) listed by `ragform --help` / `ragform GROUP --help`.
std::vector<std::string> all_commands() {
  std::vector<std::string> cmds;
  bool in = false;
  for (const auto& l : lines_of(run_ragform("--help").out)) {
    if (l == "commands:") {
      in = true;
      continue;
    }
    if (in && l.empty()) break;
    if (in) cmds.push_back(l.substr(2, l.find(' ', 2) - 2));
  }
  std::vector<std::string> out;
  for (const auto& c : cmds) {
    auto help = run_ragform(c + " --help").out;
    if (help.find("\nverbs:\n") == std::string::npos) {
      out.push_back(c);
      continue;
    }
    bool verbs = false;
    for (const auto& l : lines_of(help)) {
      if (l == "verbs:") {
        verbs = true;
        continue;
      }
      if (verbs && l.empty()) break;
      if (verbs) out.push_back(c + " " + l.substr(2, l.find(' ', 2) - 2));
    }
  }
  return out;
}

// The long names of a command's options whose default is a number.
std::vector<std::string> numeric_flags(const std::string& cmd) {
  std::vector<std::string> out;
  for (const auto& l : lines_of(run_ragform(cmd + " --help").out)) {
    size_t d = l.find("[default: ");
    if (l.rfind("  -", 0) != 0 || d == std::string::npos) continue;
    std::string def = l.substr(d + 10, l.find_first_of("];", d) - d - 10);  // "0.5; 0..1]"
    char* end = nullptr;
    std::strtod(def.c_str(), &end);
    if (def.empty() || *end != '\0') continue;
    std::string name;
    std::stringstream ss(l);
    std::string tok;
    while (ss >> tok && tok[0] == '-')
      name = tok.back() == ',' ? tok.substr(0, tok.size() - 1) : tok;
    if (tok != "LIST") out.push_back(name);  // lists (bench --pp 512) are checked after -m
  }
  return out;
}
}  // namespace

// Issue 24 defect 3: every numeric flag of every command refuses non-finite values (exit 2, the
// flag named), through the one parsing rule of cli/args.
TEST(Cli, EveryNumericFlagOfEveryCommandRefusesNanAndInf) {
  auto cmds = all_commands();
  ASSERT_GT(cmds.size(), 20u);
  size_t checked = 0;
  for (const auto& c : cmds)
    for (const auto& f : numeric_flags(c))
      for (const char* bad : {"nan", "inf"}) {
        auto r = run_ragform(c + " " + f + " " + bad);
        EXPECT_EQ(r.exit_code, 2) << c << " " << f << " " << bad << ": " << r.err;
        EXPECT_EQ(r.err.rfind("ragform: " + f + ": ", 0), 0u) << c << " " << f << ": " << r.err;
        ++checked;
      }
  EXPECT_GT(checked, 100u);
}

// The cases named in issue 24, each refused before any model is opened.
TEST(Cli, IssueCasesOfBadNumbersAreUsageErrors) {
  struct Case {
    std::string args, err;
  };
  const std::string th = std::to_string(4 * std::max(1u, std::thread::hardware_concurrency()));
  for (const auto& c : std::vector<Case>{
           {"generate -m x.gguf -p hi --temp nan", "--temp: expected a finite number, got 'nan'"},
           {"generate -m x.gguf -p hi --temp inf", "--temp: expected a finite number, got 'inf'"},
           {"generate -m x.gguf -p hi --top-p nan", "--top-p: expected a finite number, got 'nan'"},
           {"generate -m x.gguf -p hi --temp -1",
            "--temp: value out of range: -1 (accepted: 0..100)"},
           {"generate -m x.gguf -p hi -n -5", "-n: value out of range: -5 (accepted: 0 or more)"},
           {"generate -m x.gguf -p hi --stop ''", "--stop: 'stop' strings must not be empty"},
           {"generate -m x.gguf -p hi --stop " + std::string(1025, 'z'),
            "--stop: 'stop' string 0 is 1025 bytes, longer than the limit of 1024"},
           {"spotlight select --lambda nan", "--lambda: expected a finite number, got 'nan'"},
           {"cnorm eval --limit -1", "--limit: value out of range: -1 (accepted: 0 or more)"},
           {"spotlight eval --limit -1", "--limit: value out of range: -1 (accepted: 0 or more)"},
           {"kv generate -n 0", "-n: value out of range: 0 (accepted: 1 or more)"},
           {"kv generate --format modified --delimiter " + std::string(17, 'z'),
            "--delimiter: delimiter '" + std::string(17, 'z') + "' is longer than 16 bytes"},
           {"bench -m x.gguf --pp -5", "--pp: value out of range: -5 (accepted: 0..16777216)"},
           {"bench -m x.gguf --pp 0 --tg 0", "bench: --pp and --tg are both 0: nothing to measure"},
           {"generate -m x.gguf -p hi --threads 100000",
            "--threads: value too large: 100000 (largest accepted: " + th + ")"},
       }) {
    auto r = run_ragform(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_EQ(r.err, "ragform: " + c.err + "\n") << c.args;
  }
}

// Issue 24 defect 6: empty input is an error for every reading command (exit 1), sure filter and
// sure eval included; parser internals stay out of messages.
TEST(Cli, EmptyInputAndBadJsonAreRuntimeErrors) {
  auto r = run_ragform("sure filter --nli none", "");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "ragform: stdin: empty input: no pairs\n");
  r = run_ragform("sure eval -m x.gguf --store x.sqlite", "\n\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "ragform: stdin: empty input: no pairs\n");
  r = run_ragform("sure filter --nli none", "{\"id\": \n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad JSON: parse error"), std::string::npos) << r.err;
}

// Issue 24 defect 4: the real error comes first (it was printed after five "skipping ...: needs a
// reader" notes); notes appear only when the run goes on.
TEST(Cli, ErrorComesBeforeNotes) {
  auto r = run_ragform("sure perturb --input /nonexistent/in.jsonl");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("ragform: /nonexistent/in.jsonl: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find("skipping"), std::string::npos) << r.err;
}

// Issue 40, D8 and D12: a YAML space file with a list as a key is a bad space file (exit 2 with
// FILE:LINE, was exit 1 "yaml-cpp: ... bad conversion"), and whole-file reads are bounded: an
// endless API key file, prompt file or template is refused at once (it was read for 2 GB, or
// ended in std::bad_alloc). All before any model is opened.
TEST(Cli, EndlessFilesAndComplexYamlKeysAreRefusedAtOnce) {
  const auto dir = ragform::testing::temp_dir("cli_bounded_files");
  ragform::testing::write_file(dir / "dev.jsonl",
                               R"({"id": "a", "question": "q?", "answers": ["x"], )"
                               R"("ctxs": [{"title": "t", "text": "x"}]})"
                               "\n");
  ragform::testing::write_file(dir / "space.yaml", "? [a, b]\n: c\ndelimiter: [\"-\"]\n");
  const std::string tune = "tune -m /nonexistent.gguf --task qa --budget 5 --input " +
                           (dir / "dev.jsonl").string() + " --store " + (dir / "s.sqlite").string();
  auto r = run_ragform(tune + " --space " + (dir / "space.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err, "ragform: " + (dir / "space.yaml").string() +
                       ":1: not a YAML space: complex keys (a list or a map as a key) are not "
                       "accepted\n");
  r = run_ragform(tune + " --template /dev/zero");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("ragform: /dev/zero: the prompt template is over the limit of 67108864 "
                        "bytes",
                        0),
            0u)
      << r.err;
  r = run_ragform("generate -m /nonexistent.gguf -n 1 -f /dev/zero");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("/dev/zero: the prompt file is over the limit"), std::string::npos) << r.err;
  r = run_ragform("serve -m /nonexistent.gguf --api-key-file /dev/zero");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "ragform: /dev/zero: the API key file's first line is longer than 4096 bytes\n");
  // Issue 40, pass 19: a key file an editor saved with a UTF-8 byte order mark gave a key no
  // client could send (every request 401, nothing said why).
  ragform::testing::write_file(dir / "bom.key", "\xEF\xBB\xBFs3cret\n");
  r = run_ragform("serve -m /nonexistent.gguf --api-key-file " +
                  ragform::testing::quoted(dir / "bom.key"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("a byte past ASCII (a UTF-8 byte order mark"), std::string::npos) << r.err;
  // Third pass: JSON files too (read_json_file), and serve's --cnorm-profile (read twice).
  r = run_ragform("serve -m /nonexistent.gguf --cnorm-profile /dev/zero");
  EXPECT_EQ(r.exit_code, 2) << r.err;  // a file of settings: every fault a usage error
  EXPECT_EQ(r.err.rfind("ragform: /dev/zero: the profile is over the limit of 67108864 bytes", 0),
            0u)
      << r.err;
  r = run_ragform("present --profile /dev/zero --input " + (dir / "dev.jsonl").string());
  EXPECT_NE(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("/dev/zero: the profile is over the limit of 67108864 bytes"),
            std::string::npos)
      << r.err;
  // A YAML space file (any name but *.json) was read whole with no bound.
  r = run_ragform(tune + " --space /dev/zero");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("/dev/zero: the space file is over the limit of 67108864 bytes"),
            std::string::npos)
      << r.err;
}

// `ragform data distractors`: every record gets K documents, the gold once (flagged, holding an
// answer) among other records' gold passages that hold none of its answers; the same flags give
// the same bytes; --gold places it; --skip/--limit are windows of one pool.
TEST(Cli, DataDistractorsGivesEachRecordKDocuments) {
  const auto dir = ragform::testing::temp_dir("cli_data_distractors");
  std::string lines;
  const char* names[] = {"Ann", "Bob", "Cid", "Dee", "Eve", "Fay"};
  for (int i = 0; i < 6; ++i)
    lines += std::string(R"({"id": "q)") + std::to_string(i) + R"(", "question": "who is )" +
             std::to_string(i) + R"(?", "answers": [")" + names[i] +
             R"("], "ctxs": [{"title": "T)" + std::to_string(i) + R"(", "text": ")" + names[i] +
             R"( is the one.", "isgold": true}]})" + "\n";
  ragform::testing::write_file(dir / "in.jsonl", lines);
  const std::string base = "data distractors --input " + (dir / "in.jsonl").string() + " -k 3";
  auto r = run_ragform(base + " --seed 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run_ragform(base + " --seed 4").out, r.out);
  std::istringstream in(r.out);
  size_t n = 0;
  std::set<size_t> slots;
  for (std::string l; std::getline(in, l); ++n) {
    const auto j = nlohmann::json::parse(l);
    ASSERT_EQ(j["ctxs"].size(), 3u) << l;
    const std::string answer = j["answers"][0];
    size_t golds = 0;
    for (size_t c = 0; c < 3; ++c) {
      const auto& x = j["ctxs"][c];
      const bool has = x["text"].get<std::string>().find(answer) != std::string::npos;
      EXPECT_EQ(has, x["isgold"].get<bool>()) << l;
      if (x["isgold"].get<bool>()) ++golds, slots.insert(c);
    }
    EXPECT_EQ(golds, 1u) << l;
  }
  EXPECT_EQ(n, 6u);
  EXPECT_GT(slots.size(), 1u) << "random placement put every gold in one slot";
  auto first = run_ragform(base + " --gold first --skip 2 --limit 3");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::istringstream fin(first.out);
  std::vector<std::string> ids;
  for (std::string l; std::getline(fin, l);) {
    const auto j = nlohmann::json::parse(l);
    EXPECT_TRUE(j["ctxs"][0]["isgold"].get<bool>());
    ids.push_back(j["id"]);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"q2", "q3", "q4"}));
  auto bad = run_ragform(base + " --gold 4");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "ragform: --gold: first, last, random or a position 1..3, got '4'\n");
}

// `spotlight eval` on records without gold sentences (NQ-Open's, no supporting_facts) measured
// nothing and exited 0 ("0 questions (3 without resolvable gold skipped)"): an error now, with
// and without --store.
TEST(Cli, SpotlightEvalWithoutGoldSentencesIsAnError) {
  REQUIRE_SHARED(glove, "data/embeddings/glove-50d-5k.json");
  const auto dir = ragform::testing::temp_dir("cli_spotlight_no_gold");
  ragform::testing::write_file(
      dir / "in.jsonl",
      R"({"id": "a", "question": "who?", "answers": ["Ann"], "ctxs": [{"title": "T", "text": "Ann is here."}]})"
      "\n"
      R"({"id": "b", "question": "what?", "answers": ["Bob"], "ctxs": [{"title": "U", "text": "Bob is there."}]})"
      "\n");
  const std::string base =
      "spotlight eval --input " + (dir / "in.jsonl").string() + " --vectors " + glove.string();
  for (const std::string& extra : {std::string(), " --store " + (dir / "s.sqlite").string()}) {
    auto r = run_ragform(base + extra);
    EXPECT_EQ(r.exit_code, 1) << extra << r.err;
    EXPECT_NE(r.err.find("none of its 2 questions has gold sentences"), std::string::npos) << r.err;
  }
  // With gold sentences, --store prints each method's bootstrap CI as the run without it does
  // (it printed the mean alone).
  REQUIRE_SHARED(hotpot, "data/hotpotqa-distractor/dev.jsonl");
  auto ok =
      run_ragform("spotlight eval --input " + hotpot.string() + " --vectors " + glove.string() +
                  " --limit 5 --store " + (dir / "h.sqlite").string() + " --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  std::istringstream lines(ok.out);
  size_t rows = 0;
  for (std::string l; std::getline(lines, l);) {
    const auto j = nlohmann::json::parse(l);
    if (j["kind"] != "recall") continue;
    ++rows;
    ASSERT_EQ(j["ci95"].size(), 2u) << l;
    EXPECT_EQ(j["questions"], 5) << l;
    EXPECT_LE(j["ci95"][0].get<double>(), j["recall"].get<double>()) << l;
    EXPECT_GE(j["ci95"][1].get<double>(), j["recall"].get<double>()) << l;
  }
  EXPECT_GT(rows, 0u) << ok.out;
  EXPECT_NE(ok.err.find("]  n=5"), std::string::npos) << ok.err;
}
