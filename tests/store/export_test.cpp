// Export of a small run store to JSONL and CSV, checked against hand-written text, and the
// `ragform export` command.
#include "store/export.h"

#include <sstream>

#include <gtest/gtest.h>

#include "base/error.h"
#include "support/test_support.h"

namespace ragform::store {
namespace {

namespace fs = std::filesystem;

RunConfig config(const std::string& dataset) {
  RunConfig c;
  c.pipeline = "sure eval";
  c.config = {{"dataset", dataset}, {"k", 2}};
  c.tool_version = "0.1.0 (git abc1234)";
  c.model_path = "m.gguf";
  c.model_sha256 = std::string(64, '0');
  c.reader = "native";
  c.chat_mode = "chat";
  c.seed = 3;
  return c;
}

// Three rows of run 1 (correct / wrong with awkward text / unmeasured) and one row of run 2.
fs::path make_store(const fs::path& dir) {
  fs::path p = dir / "run.sqlite";
  RunStore st(p);
  auto id = st.begin_run(config("nq"));
  Result a;
  a.run = id;
  a.instance = "q1";
  a.variant = "gold-first";
  a.correct = true;
  a.scores = {{"em", 1}, {"f1", 1}};
  a.output = "Paris";
  a.prompt = "Q: capital of France?\nA:";
  a.prompt_tokens = 9;
  a.timings_ms = {{"total", 12.5}};
  a.extra = {{"pos", 0}};
  st.put(a);
  Result b;
  b.run = id;
  b.instance = "q2";
  b.variant = "gold-last";
  b.correct = false;
  b.scores = {{"em", 0}, {"f1", 0.5}, {"sub", 1}};
  b.output = "He said \"no\", twice";
  b.prompt = "line1\nline2";
  b.extra = {{"pos", 4}, {"tags", {"a", "b"}}};
  st.put(b);
  Result c;
  c.run = id;
  c.instance = "q3";
  c.variant = "gold-first";
  c.status = Status::unmeasured;
  c.error = "HTTP 503";
  c.prompt = "p3";
  c.timings_ms = {{"total", 3}};
  st.put(c);
  Result d;
  d.run = st.begin_run(config("hotpot"));
  d.instance = "h1";
  d.variant = "v";
  d.output = "x";
  st.put(d);
  return p;
}

const char* kRun1Jsonl =
    R"({"run":1,"instance":"q1","variant":"gold-first","status":"ok","error":null,"correct":true,"scores":{"em":1.0,"f1":1.0},"output":"Paris","prompt":"Q: capital of France?\nA:","prompt_tokens":9,"timings_ms":{"total":12.5},"extra":{"pos":0}})"
    "\n"
    R"({"run":1,"instance":"q2","variant":"gold-last","status":"ok","error":null,"correct":false,"scores":{"em":0.0,"f1":0.5,"sub":1.0},"output":"He said \"no\", twice","prompt":"line1\nline2","prompt_tokens":null,"timings_ms":{},"extra":{"pos":4,"tags":["a","b"]}})"
    "\n"
    R"({"run":1,"instance":"q3","variant":"gold-first","status":"unmeasured","error":"HTTP 503","correct":null,"scores":{},"output":"","prompt":"p3","prompt_tokens":null,"timings_ms":{"total":3.0},"extra":{}})"
    "\n";

const char* kRun1Csv =
    "run,instance,variant,status,error,correct,score.em,score.f1,score.sub,output,prompt,"
    "prompt_tokens,timing_ms.total,extra.pos,extra.tags\r\n"
    "1,q1,gold-first,ok,,1,1,1,,Paris,\"Q: capital of France?\nA:\",9,12.5,0,\r\n"
    "1,q2,gold-last,ok,,0,0,0.5,1,\"He said \"\"no\"\", twice\",\"line1\nline2\",,,4,"
    "\"[\"\"a\"\",\"\"b\"\"]\"\r\n"
    "1,q3,gold-first,unmeasured,HTTP 503,,,,,,p3,,3,,\r\n";

std::string export_text(const RunStore& st, std::optional<std::int64_t> run, ExportTable t,
                        ExportFormat f) {
  std::ostringstream out;
  export_store(st, run, t, f, out);
  return out.str();
}

// A strict RFC 4180 reader, to check that any text survives the CSV round trip.
std::vector<std::vector<std::string>> parse_csv(const std::string& s) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '"') {
      for (++i;; ++i) {
        if (i >= s.size()) throw std::runtime_error("unterminated quote");
        if (s[i] == '"') {
          if (i + 1 < s.size() && s[i + 1] == '"') {
            field += '"';
            ++i;
          } else {
            ++i;
            break;
          }
        } else {
          field += s[i];
        }
      }
    } else {
      while (i < s.size() && s[i] != ',' && s[i] != '\r') {
        if (s[i] == '"' || s[i] == '\n') throw std::runtime_error("bare quote or LF");
        field += s[i++];
      }
    }
    rows.back().push_back(field);
    field.clear();
    if (i < s.size() && s[i] == ',') {
      ++i;
    } else if (s.compare(i, 2, "\r\n") == 0) {
      i += 2;
      if (i < s.size()) rows.emplace_back();
    } else {
      throw std::runtime_error("expected , or CRLF at byte " + std::to_string(i));
    }
  }
  return rows;
}

TEST(Export, ResultsAsJsonlExactly) {
  auto dir = testing::temp_dir("export");
  RunStore st(make_store(dir), RunStore::Mode::read_only);
  EXPECT_EQ(export_text(st, 1, ExportTable::results, ExportFormat::jsonl), kRun1Jsonl);
  std::string all = export_text(st, std::nullopt, ExportTable::results, ExportFormat::jsonl);
  EXPECT_EQ(all, std::string(kRun1Jsonl) +
                     R"({"run":2,"instance":"h1","variant":"v","status":"ok","error":null,)"
                     R"("correct":null,"scores":{},"output":"x","prompt":"","prompt_tokens":null,)"
                     R"("timings_ms":{},"extra":{}})"
                     "\n");
}

TEST(Export, ResultsAsCsvExactly) {
  auto dir = testing::temp_dir("export");
  RunStore st(make_store(dir), RunStore::Mode::read_only);
  EXPECT_EQ(export_text(st, 1, ExportTable::results, ExportFormat::csv), kRun1Csv);
  // Run 2 alone has none of run 1's score, timing or extra columns.
  EXPECT_EQ(export_text(st, 2, ExportTable::results, ExportFormat::csv),
            "run,instance,variant,status,error,correct,output,prompt,prompt_tokens\r\n"
            "2,h1,v,ok,,,x,,\r\n");
}

TEST(Export, CsvQuotingFollowsRfc4180) {
  EXPECT_EQ(csv_field("plain text"), "plain text");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("cr\rlf\n"), "\"cr\rlf\n\"");

  auto dir = testing::temp_dir("export");
  RunStore st(dir / "odd.sqlite");
  auto id = st.begin_run(config("odd"));
  const std::vector<std::string> texts = {"",      "\"",  "\"\"",         ",", "a\r\nb", "\n",
                                          " lead", "é€😀", "x,\"y\"\r\n,z"};
  for (size_t i = 0; i < texts.size(); ++i) {
    Result r;
    r.run = id;
    r.instance = texts[i] + "#" + std::to_string(i);
    r.variant = "v";
    r.output = texts[i];
    r.prompt = texts[texts.size() - 1 - i];
    r.extra = {{"note", texts[i]}};
    st.put(r);
  }
  auto rows = parse_csv(export_text(st, id, ExportTable::results, ExportFormat::csv));
  ASSERT_EQ(rows.size(), texts.size() + 1);
  ASSERT_EQ(rows[0],
            (std::vector<std::string>{"run", "instance", "variant", "status", "error", "correct",
                                      "output", "prompt", "prompt_tokens", "extra.note"}));
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_EQ(rows[i + 1].size(), rows[0].size()) << i;
    EXPECT_EQ(rows[i + 1][1], texts[i] + "#" + std::to_string(i));
    EXPECT_EQ(rows[i + 1][6], texts[i]);
    EXPECT_EQ(rows[i + 1][7], texts[texts.size() - 1 - i]);
    EXPECT_EQ(rows[i + 1][9], texts[i]);
  }
}

TEST(Export, InvalidUtf8BecomesReplacementCharacterInJson) {
  auto dir = testing::temp_dir("export");
  RunStore st(dir / "u.sqlite");
  Result r;
  r.run = st.begin_run(config("u"));
  r.instance = "q";
  r.variant = "v";
  r.output = "caf\xFF";  // a model can stop in the middle of a multi-byte character
  st.put(r);
  std::string line = export_text(st, r.run, ExportTable::results, ExportFormat::jsonl);
  EXPECT_NE(line.find(R"("output":"caf)"
                      "\xEF\xBF\xBD\""),
            std::string::npos)
      << line;
  EXPECT_EQ(st.results(r.run)[0].output, "caf\xFF");  // the store keeps the exact bytes
}

TEST(Export, RunsTable) {
  auto dir = testing::temp_dir("export");
  RunStore st(make_store(dir), RunStore::Mode::read_only);
  std::istringstream lines(export_text(st, std::nullopt, ExportTable::runs, ExportFormat::jsonl));
  std::string line;
  std::vector<nlohmann::json> runs;
  while (std::getline(lines, line)) runs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["id"], 1);
  EXPECT_EQ(runs[0]["config"], config("nq").config);
  EXPECT_EQ(runs[0]["pipeline"], "sure eval");
  EXPECT_EQ(runs[0]["seed"], 3);
  EXPECT_EQ(runs[0]["rows"], 3);
  EXPECT_EQ(runs[0]["ok"], 2);
  EXPECT_EQ(runs[0]["unmeasured"], 1);
  EXPECT_EQ(runs[0]["correct"], 1);
  EXPECT_EQ(runs[0]["wrong"], 1);
  EXPECT_EQ(runs[1]["config"]["dataset"], "hotpot");

  auto rows = parse_csv(export_text(st, 2, ExportTable::runs, ExportFormat::csv));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"id", "created_at", "pipeline", "tool_version",
                                               "model_path", "model_sha256", "reader", "chat_mode",
                                               "seed", "config_key", "rows", "ok", "unmeasured",
                                               "correct", "wrong", "ungraded", "config"}));
  EXPECT_EQ(rows[1][0], "2");
  EXPECT_EQ(rows[1][2], "sure eval");
  EXPECT_EQ(rows[1][10], "1");
  EXPECT_EQ(rows[1][15], "1");  // ungraded
  EXPECT_EQ(rows[1][16], R"({"dataset":"hotpot","k":2})");
}

TEST(Export, UnknownRunIsAnError) {
  auto dir = testing::temp_dir("export");
  RunStore st(make_store(dir), RunStore::Mode::read_only);
  std::ostringstream out;
  try {
    export_store(st, 7, ExportTable::results, ExportFormat::csv, out);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "export: " + (dir / "run.sqlite").string() + ": no run 7 (runs: 1, 2)");
  }
  EXPECT_EQ(out.str(), "");
}

TEST(ExportCli, WritesStdoutOrFile) {
  auto dir = testing::temp_dir("export-cli");
  fs::path p = make_store(dir);
  auto r = testing::run_ragform("export '" + p.string() + "' --run 1 --format csv");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kRun1Csv);
  r = testing::run_ragform("export '" + p.string() + "' --run 1");  // jsonl is the default
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kRun1Jsonl);
  fs::path out = dir / "out.jsonl";
  r = testing::run_ragform("export '" + p.string() + "' --run 1 --format jsonl -o '" +
                           out.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(testing::read_file(out), kRun1Jsonl);
  EXPECT_FALSE(fs::exists(dir / "out.jsonl.tmp"));
  r = testing::run_ragform("export '" + p.string() + "' --table runs --format csv");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse_csv(r.out).size(), 3u);
  r = testing::run_ragform("export --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--format"), std::string::npos);
}

TEST(ExportCli, ErrorsAreOneLineWithExitCodes) {
  auto dir = testing::temp_dir("export-cli");
  fs::path p = make_store(dir);
  auto r = testing::run_ragform("export '" + (dir / "nope.sqlite").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ragform: " + (dir / "nope.sqlite").string() + ": no such file\n");
  testing::write_file(dir / "junk.sqlite", "junk junk junk junk junk junk junk junk junk junk");
  r = testing::run_ragform("export '" + (dir / "junk.sqlite").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ragform: " + (dir / "junk.sqlite").string() + ": not an SQLite database\n");
  r = testing::run_ragform("export '" + p.string() + "' --run 9");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "ragform: export: " + p.string() + ": no run 9 (runs: 1, 2)\n");
  r = testing::run_ragform("export '" + p.string() + "' --format xml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "ragform: --format: expected jsonl or csv, got 'xml'\n");
  r = testing::run_ragform("export '" + p.string() + "' -o '" + (dir / "no/dir/x.csv").string() +
                           "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot create"), std::string::npos) << r.err;
  r = testing::run_ragform("export");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace ragform::store
