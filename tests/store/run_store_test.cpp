// The run store: schema, resume, unmeasured rows, validation, bad files, merge, threads.
#include "store/run_store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "base/error.h"
#include "support/test_support.h"

namespace ragform::store {
namespace {

namespace fs = std::filesystem;

RunConfig config(const std::string& dataset = "nq-open", std::int64_t seed = 7) {
  RunConfig c;
  c.pipeline = "sure eval";
  c.config = {
      {"dataset", dataset}, {"k", 5}, {"temperature", 0.0}, {"orders", {"gold-first", "random"}}};
  c.tool_version = "0.1.0 (git abc1234)";
  c.model_path = "/models/qwen2.5-0.5b-q4_k_m.gguf";
  c.model_sha256 = std::string(64, 'f');
  c.reader = "native";
  c.chat_mode = "chat";
  c.seed = seed;
  return c;
}

Result row(std::int64_t run, const std::string& inst, const std::string& var, bool correct = true) {
  Result r;
  r.run = run;
  r.instance = inst;
  r.variant = var;
  r.prompt = "Question: who wrote " + inst + "?\nAnswer:";
  r.prompt_tokens = 12;
  r.output = "Someone, \"quoted\"";
  r.correct = correct;
  r.scores = {{"em", correct ? 1.0 : 0.0}, {"f1", 0.25}};
  r.timings_ms = {{"prefill", 12.5}, {"decode", 40.0}};
  r.extra = {{"answer_position", 3}};
  return r;
}

// Runs one SQL statement on a raw connection (to build odd files for the error tests).
void raw_sql(const fs::path& p, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RunStore, CreatesSchemaInWalModeAndRecordsTheRun) {
  auto dir = testing::temp_dir("store");
  fs::path p = dir / "run.sqlite";
  std::int64_t id;
  {
    RunStore st(p);
    id = st.begin_run(config());
    EXPECT_EQ(id, 1);
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sql;
    std::string v;
    if (sqlite3_step(s) == SQLITE_ROW) v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(one("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(one("SELECT value FROM ragform_meta WHERE key='schema_version'"), "1");
  EXPECT_EQ(one("SELECT value FROM ragform_meta WHERE key='format'"), "ragform-run-store");
  EXPECT_EQ(one("SELECT config FROM runs WHERE id=1"),
            R"({"dataset":"nq-open","k":5,"orders":["gold-first","random"],"temperature":0.0})");
  EXPECT_EQ(one("SELECT reader || '/' || chat_mode || '/' || seed FROM runs"), "native/chat/7");
  sqlite3_close(db);

  RunStore st(p, RunStore::Mode::read_only);
  auto info = st.run(id);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->pipeline, "sure eval");
  EXPECT_EQ(info->config, config().config);
  EXPECT_EQ(info->tool_version, "0.1.0 (git abc1234)");
  EXPECT_EQ(info->model_path, "/models/qwen2.5-0.5b-q4_k_m.gguf");
  EXPECT_EQ(info->model_sha256, std::string(64, 'f'));
  EXPECT_EQ(info->config_key.size(), 64u);
  ASSERT_EQ(info->created_at.size(), 20u);  // 2026-11-22T01:04:13Z
  EXPECT_EQ(info->created_at[10], 'T');
  EXPECT_EQ(info->created_at.back(), 'Z');
  EXPECT_FALSE(st.run(id + 1));
}

TEST(RunStore, SameConfigResumesTheSameRun) {
  auto dir = testing::temp_dir("store");
  fs::path p = dir / "run.sqlite";
  std::int64_t a, b;
  {
    RunStore st(p);
    a = st.begin_run(config());
    st.put(row(a, "q1", "gold-first"));
    st.put(row(a, "q2", "gold-first", false));
  }
  RunStore st(p);
  RunConfig same = config();
  same.tool_version = "0.2.0 (git fff0000)";  // rebuilt binary, moved model: still the same run
  same.model_path = "/elsewhere/model.gguf";
  // The same config written with another key order and as integer vs. same text is identical.
  same.config = nlohmann::json::parse(
      R"({"orders":["gold-first","random"],"temperature":0.0,"k":5,"dataset":"nq-open"})");
  b = st.begin_run(same);
  EXPECT_EQ(a, b);
  EXPECT_EQ(st.runs().size(), 1u);
  EXPECT_EQ(st.find_run(same), a);
  EXPECT_EQ(st.run(a)->config_key, run_key(same));
  EXPECT_FALSE(st.find_run(config("trivia-qa")));
  EXPECT_EQ(st.run(b)->tool_version, "0.1.0 (git abc1234)");  // first writer's record kept

  // Anything in the identity makes a new run.
  RunConfig other_model = config();
  other_model.model_sha256 = std::string(64, 'e');
  RunConfig other_seed = config("nq-open", 8);
  RunConfig other_data = config("hotpotqa");
  RunConfig other_chat = config();
  other_chat.chat_mode = "raw";
  std::set<std::int64_t> ids = {a, st.begin_run(other_model), st.begin_run(other_seed),
                                st.begin_run(other_data), st.begin_run(other_chat)};
  EXPECT_EQ(ids.size(), 5u);

  // Resume: the finished rows are skipped, the rest are written.
  std::set<Key> done = st.done_keys(a);
  EXPECT_EQ(done, (std::set<Key>{{"q1", "gold-first"}, {"q2", "gold-first"}}));
  EXPECT_TRUE(st.is_done(a, "q2", "gold-first"));
  EXPECT_FALSE(st.is_done(a, "q2", "random"));
  EXPECT_FALSE(st.is_done(ids.count(a + 1) ? a + 1 : a + 2, "q1", "gold-first"));
  int written = 0;
  for (const char* q : {"q1", "q2", "q3"})
    for (const char* v : {"gold-first", "random"})
      if (!done.count({q, v})) {
        st.put(row(a, q, v));
        ++written;
      }
  EXPECT_EQ(written, 4);
  EXPECT_EQ(st.done_keys(a).size(), 6u);
  // A finished row is never rewritten.
  EXPECT_NE(error_of([&] {
              st.put(row(a, "q1", "gold-first", false));
            }).find("row ('q1', 'gold-first'): already stored"),
            std::string::npos);
  EXPECT_EQ(*st.results(a)[0].correct, true);
}

TEST(RunStore, RowsRoundTripExactly) {
  auto dir = testing::temp_dir("store");
  RunStore st(dir / "run.sqlite");
  auto id = st.begin_run(config());
  Result r = row(id, "q\"1,\n", "v\xC3\xA9");
  r.prompt = std::string("binary\0zero and \xFF invalid", 24);
  r.scores = {{"em", 1.0}, {"f1", 0.1 + 0.2}, {"neg", -1e-300}};
  r.extra = {{"nested", {{"a", {1, 2, 3}}}}, {"s", "x"}};
  r.prompt_tokens.reset();
  Result ungraded = row(id, "q2", "v");
  ungraded.correct.reset();
  st.put(r);
  st.put(ungraded);
  auto back = st.results(id);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0], r);
  EXPECT_EQ(back[0].prompt.size(), 24u);
  EXPECT_EQ(back[0].scores.at("f1"), 0.1 + 0.2);  // bit-exact through the JSON text
  EXPECT_EQ(back[1], ungraded);
  Counts c = st.counts(id);
  EXPECT_EQ(c.rows, 2);
  EXPECT_EQ(c.correct, 1);
  EXPECT_EQ(c.ungraded, 1);
}

TEST(RunStore, UnmeasuredRowsAreNeverWrongAndAreRetried) {
  auto dir = testing::temp_dir("store");
  RunStore st(dir / "run.sqlite");
  auto id = st.begin_run(config());
  st.put(row(id, "q1", "v", true));
  st.put(row(id, "q2", "v", false));
  Result failed;
  failed.run = id;
  failed.instance = "q3";
  failed.variant = "v";
  failed.status = Status::unmeasured;
  failed.error = "openai: POST /v1/completions: HTTP 503";
  failed.prompt = "the prompt";
  st.put(failed);

  Counts c = st.counts(id);
  EXPECT_EQ(c.rows, 3);
  EXPECT_EQ(c.ok, 2);
  EXPECT_EQ(c.unmeasured, 1);
  EXPECT_EQ(c.correct, 1);
  EXPECT_EQ(c.wrong, 1);  // the failed request is not a wrong answer
  EXPECT_EQ(c.ungraded, 0);
  EXPECT_FALSE(st.is_done(id, "q3", "v"));  // resume retries it
  EXPECT_EQ(st.done_keys(id).count({"q3", "v"}), 0u);
  auto back = st.results(id);
  EXPECT_EQ(back[2].status, Status::unmeasured);
  EXPECT_EQ(back[2].error, failed.error);
  EXPECT_FALSE(back[2].correct);

  // The retry succeeds and replaces the unmeasured row in place.
  st.put(row(id, "q3", "v", true));
  c = st.counts(id);
  EXPECT_EQ(c.rows, 3);
  EXPECT_EQ(c.unmeasured, 0);
  EXPECT_EQ(c.correct, 2);
  EXPECT_EQ(st.results(id)[2], row(id, "q3", "v", true));
}

TEST(RunStore, InvalidRowsAreRejectedWithTheReason) {
  auto dir = testing::temp_dir("store");
  RunStore st(dir / "run.sqlite");
  auto id = st.begin_run(config());
  Result r = row(id, "q1", "v");
  r.status = Status::unmeasured;
  r.correct.reset();
  EXPECT_NE(error_of([&] { st.put(r); }).find("an unmeasured row needs its error text"),
            std::string::npos);
  r.error = "timeout";
  r.correct = false;
  EXPECT_NE(error_of([&] { st.put(r); }).find("an unmeasured row cannot be graded"),
            std::string::npos);
  r = row(id, "q1", "v");
  r.scores["f1"] = std::nan("");
  EXPECT_NE(error_of([&] { st.put(r); }).find("score 'f1' is not a finite number"),
            std::string::npos);
  r = row(id, "q1", "v");
  r.extra = nlohmann::json::array({1});
  EXPECT_NE(error_of([&] { st.put(r); }).find("extra must be a JSON object"), std::string::npos);
  r = row(id + 41, "q1", "v");
  EXPECT_NE(error_of([&] { st.put(r); }).find("run 42 does not exist"), std::string::npos)
      << error_of([&] { st.put(r); });
  EXPECT_NE(error_of([&] { st.put(row(id, "", "v")); }).find("empty instance id"),
            std::string::npos);
  RunConfig c = config();
  c.pipeline.clear();
  EXPECT_NE(error_of([&] { st.begin_run(c); }).find("empty pipeline name"), std::string::npos);
  EXPECT_EQ(st.counts(id).rows, 0);
}

TEST(RunStore, BadFilesGiveClearErrors) {
  auto dir = testing::temp_dir("store");
  const std::string d = dir.string();
  // Missing file (read or write an existing store).
  EXPECT_EQ(error_of([&] { RunStore(dir / "none.sqlite", RunStore::Mode::read_only); }),
            d + "/none.sqlite: no such file");
  EXPECT_EQ(error_of([&] { RunStore(dir / "none.sqlite", RunStore::Mode::write); }),
            d + "/none.sqlite: no such file");
  // Not SQLite at all.
  testing::write_file(dir / "text.sqlite", std::string(4096, 'x'));
  EXPECT_EQ(error_of([&] { RunStore(dir / "text.sqlite"); }),
            d + "/text.sqlite: not an SQLite database");
  EXPECT_EQ(error_of([&] { RunStore(dir / "text.sqlite", RunStore::Mode::read_only); }),
            d + "/text.sqlite: not an SQLite database");
  EXPECT_EQ(testing::read_file(dir / "text.sqlite"), std::string(4096, 'x'));  // untouched
  // Some other SQLite database.
  raw_sql(dir / "other.sqlite", "CREATE TABLE t(x)");
  EXPECT_EQ(error_of([&] { RunStore(dir / "other.sqlite"); }),
            d + "/other.sqlite: an SQLite database, but not a ragform run store (no ragform_meta "
                "table)");
  // A newer schema, and a garbled one.
  { RunStore(dir / "new.sqlite").begin_run(config()); }
  raw_sql(dir / "new.sqlite", "UPDATE ragform_meta SET value='2' WHERE key='schema_version'");
  EXPECT_EQ(error_of([&] { RunStore(dir / "new.sqlite", RunStore::Mode::read_only); }),
            d + "/new.sqlite: schema version 2 is newer than this ragform supports (1); use a "
                "newer ragform");
  raw_sql(dir / "new.sqlite", "UPDATE ragform_meta SET value='one' WHERE key='schema_version'");
  EXPECT_EQ(error_of([&] { RunStore(dir / "new.sqlite"); }),
            d + "/new.sqlite: unknown schema version 'one'");
  // Issue 40, fifth pass (D9): a long stored value is quoted as an excerpt, with its true size.
  for (const char* key : {"format", "schema_version"}) {
    { RunStore(dir / "long.sqlite").begin_run(config()); }
    const std::string sql =
        std::string("UPDATE ragform_meta SET value=printf('%.*c', 100000, 'x') WHERE key='") + key +
        "'";
    raw_sql(dir / "long.sqlite", sql.c_str());
    const std::string m =
        error_of([&] { RunStore(dir / "long.sqlite", RunStore::Mode::read_only); });
    EXPECT_LT(m.size(), 400u) << key << ": " << m.substr(0, 500);
    EXPECT_NE(m.find("(100000 bytes)"), std::string::npos) << key << ": " << m.substr(0, 500);
    std::filesystem::remove(dir / "long.sqlite");
  }
  // An empty file is an empty SQLite database: a writer initialises it, a reader refuses it.
  testing::write_file(dir / "empty.sqlite", "");
  EXPECT_EQ(error_of([&] { RunStore(dir / "empty.sqlite", RunStore::Mode::read_only); }),
            d + "/empty.sqlite: empty database, not a ragform run store");
  EXPECT_EQ(RunStore(dir / "empty.sqlite").begin_run(config()), 1);
  // A directory, and a missing parent directory.
  EXPECT_EQ(error_of([&] { RunStore{dir}; }), d + ": is a directory");
  EXPECT_EQ(error_of([&] { RunStore(dir / "no" / "run.sqlite"); }),
            d + "/no/run.sqlite: cannot create: directory '" + d + "/no' does not exist");
}

// Pass 11, K3: a run's metadata that does not parse was taken as absent (a damaged tune summary
// made the report say the search had not completed, and merge dropped it without a count). It
// is refused as a row's damaged field is, naming the run and the name.
TEST(RunStore, DamagedRunMetadataIsSaidNotTakenAsAbsent) {
  auto dir = testing::temp_dir("store_meta");
  const fs::path p = dir / "meta.sqlite", out = dir / "merged.sqlite";
  {
    RunStore st(p);
    st.set_run_meta(st.begin_run(config()), "tune_summary", {{"complete", true}});
  }
  EXPECT_TRUE(RunStore(p, RunStore::Mode::read_only).run_meta(1, "tune_summary"));
  EXPECT_FALSE(RunStore(p, RunStore::Mode::read_only).run_meta(1, "absent"));
  raw_sql(p, "UPDATE ragform_meta SET value='{\"budget\":' WHERE key='run/1/tune_summary'");
  std::string m =
      error_of([&] { RunStore(p, RunStore::Mode::read_only).run_meta(1, "tune_summary"); });
  EXPECT_NE(m.find("run 1: metadata 'tune_summary' is not valid JSON: parse error"),
            std::string::npos)
      << m;
  m = error_of([&] { RunStore(out).merge({p}); });
  EXPECT_NE(m.find(p.string() + ": run 1: metadata 'tune_summary' is not valid JSON"),
            std::string::npos)
      << m;
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  raw_sql(p,
          ("UPDATE ragform_meta SET value='" + deep + "' WHERE key='run/1/tune_summary'").c_str());
  m = error_of([&] { RunStore(p, RunStore::Mode::read_only).run_meta(1, "tune_summary"); });
  EXPECT_NE(m.find("run 1: metadata 'tune_summary': too deep"), std::string::npos) << m;
}

// Pass 6, E4: a stored JSON column that does not parse, or nests deeper than 128 levels, says so
// (it was "extra is not a JSON object" / "config is not valid JSON" whatever the reason).
TEST(RunStore, StoredJsonColumnsNameTheRealReason) {
  auto dir = testing::temp_dir("store");
  const fs::path p = dir / "deep.sqlite";
  {
    RunStore st(p);
    st.put(row(st.begin_run(config()), "q1", "v"));
  }
  const std::string deep = "{\"x\":" + std::string(128, '[') + "1" + std::string(128, ']') + "}";
  const std::string nesting = "nesting deeper than 128 levels";
  raw_sql(p, ("UPDATE results SET extra='" + deep + "'").c_str());
  std::string m = error_of([&] { RunStore(p, RunStore::Mode::read_only).results(std::nullopt); });
  EXPECT_NE(m.find("row ('q1', 'v'): extra: too deep at line 1, column 133: " + nesting),
            std::string::npos)
      << m;
  raw_sql(p, "UPDATE results SET extra='{\"a\": tru}'");
  m = error_of([&] { RunStore(p, RunStore::Mode::read_only).results(std::nullopt); });
  EXPECT_NE(m.find("extra is not valid JSON: parse error at line 1, column"), std::string::npos)
      << m;
  raw_sql(p, "UPDATE results SET extra='[1]'");
  m = error_of([&] { RunStore(p, RunStore::Mode::read_only).results(std::nullopt); });
  EXPECT_NE(m.find("extra is not a JSON object"), std::string::npos) << m;
  raw_sql(p, "UPDATE results SET extra='{}'");
  raw_sql(p, ("UPDATE results SET scores='" + deep + "'").c_str());
  m = error_of([&] { RunStore(p, RunStore::Mode::read_only).results(std::nullopt); });
  EXPECT_NE(m.find("scores: too deep at line 1, column 133: " + nesting), std::string::npos) << m;
  raw_sql(p, ("UPDATE runs SET config='" + deep + "'").c_str());
  m = error_of([&] { RunStore(p, RunStore::Mode::read_only).runs(); });
  EXPECT_NE(m.find("run 1: config: too deep at line 1, column 133: " + nesting), std::string::npos)
      << m;
}

// Issue 40, pass 22: an integer column holding text or a real number is an error naming the row
// ('abc' tokens were read as 0 and 159.9 as 159), and a run found by its key is resumed only
// when its stored configuration parses and still gives that key (tune resumed a run whose config
// was not JSON, or had max_tokens edited, where report and export refused it).
TEST(RunStore, EditedColumnsAndConfigurationsAreRefusedNotRead) {
  auto dir = testing::temp_dir("store");
  const fs::path p = dir / "edited.sqlite";
  {
    RunStore st(p);
    st.put(row(st.begin_run(config()), "q1", "v"));
  }
  const auto results = [&] { RunStore(p, RunStore::Mode::read_only).results(std::nullopt); };
  raw_sql(p, "UPDATE results SET prompt_tokens='abc'");
  EXPECT_NE(error_of(results).find("row ('q1', 'v'): prompt_tokens is abc, not an integer"),
            std::string::npos)
      << error_of(results);
  raw_sql(p, "UPDATE results SET prompt_tokens=159.9");
  EXPECT_NE(error_of(results).find("prompt_tokens is 159.9, not an integer"), std::string::npos)
      << error_of(results);
  raw_sql(p, "UPDATE results SET prompt_tokens='159'");  // an integer column's affinity: 159
  EXPECT_EQ(error_of(results), "(no error)");
  raw_sql(p, "UPDATE results SET prompt_tokens=NULL");
  EXPECT_EQ(error_of(results), "(no error)");

  const std::string edited = p.string() +
                             ": run 1: config_key does not match its configuration (edited by "
                             "hand?)";
  raw_sql(p, "UPDATE runs SET config='[1,2' WHERE id = 1");
  EXPECT_NE(error_of([&] { RunStore(p).begin_run(config()); }).find("run 1: config is not valid"),
            std::string::npos);
  raw_sql(p, "UPDATE runs SET config='{\"dataset\":\"nq-open\",\"k\":6}' WHERE id = 1");
  EXPECT_EQ(error_of([&] { RunStore(p).begin_run(config()); }), edited);
  EXPECT_EQ(error_of([&] { RunStore(p, RunStore::Mode::read_only).find_run(config()); }), edited);
  // Another configuration is another run, as ever.
  EXPECT_EQ(error_of([&] { RunStore(p).begin_run(config("hotpotqa")); }), "(no error)");
}

TEST(RunStore, ReadOnlyPlaces) {
  // /proc refuses new files even for root.
  std::string e = error_of([] { RunStore("/proc/ragform-run.sqlite"); });
  EXPECT_EQ(e.rfind("/proc/ragform-run.sqlite: cannot create: ", 0), 0u) << e;

  auto dir = testing::temp_dir("store");
  fs::path p = dir / "ro" / "run.sqlite";
  fs::create_directories(p.parent_path());
  {
    RunStore st(p);
    st.put(row(st.begin_run(config()), "q1", "v"));
  }
  // A store opened read-only cannot be written.
  {
    RunStore ro(p, RunStore::Mode::read_only);
    EXPECT_EQ(ro.results(std::nullopt).size(), 1u);
    EXPECT_NE(error_of([&] { ro.put(row(1, "q2", "v")); }).find("readonly database"),
              std::string::npos);
  }
}

// A store that cannot be created is an error naming it, whoever runs the test: a parent that is a
// file fails for root too (the read-only directory below does not stop root).
TEST(RunStore, CannotCreateUnderAFile) {
  auto dir = testing::temp_dir("store");
  testing::write_file(dir / "plain", "not a directory");
  const fs::path p = dir / "plain" / "new.sqlite";
  std::string e = error_of([&] { RunStore{p}; });
  EXPECT_NE(e.find("cannot create"), std::string::npos) << e;
  EXPECT_NE(e.find(p.string()), std::string::npos) << e;
}

TEST(RunStore, ReadOnlyDirectory) {
  auto dir = testing::temp_dir("store");
  fs::path p = dir / "ro" / "run.sqlite";
  fs::create_directories(p.parent_path());
  fs::permissions(p.parent_path(), fs::perms::owner_read | fs::perms::owner_exec);
  if (access(p.parent_path().c_str(), W_OK) == 0) {
    fs::permissions(p.parent_path(), fs::perms::owner_all);
    GTEST_SKIP() << "running as root: directory permissions are not enforced";
  }
  std::string e = error_of([&] { RunStore(p.parent_path() / "new.sqlite"); });
  fs::permissions(p.parent_path(), fs::perms::owner_all);
  EXPECT_NE(e.find("cannot create"), std::string::npos) << e;
}

TEST(RunStore, MergeCombinesStoresByRunIdentity) {
  auto dir = testing::temp_dir("store");
  RunStore a(dir / "a.sqlite"), b(dir / "b.sqlite"), c(dir / "c.sqlite");
  auto a1 = a.begin_run(config());
  a.put(row(a1, "q1", "v"));
  Result failed = row(a1, "q2", "v");
  failed.status = Status::unmeasured;
  failed.error = "HTTP 500";
  failed.correct.reset();
  a.put(failed);
  a.put(row(a1, "q3", "v", true));

  auto b0 = b.begin_run(config("hotpotqa"));  // a run that a does not have: id 1 in b
  b.put(row(b0, "h1", "v"));
  auto b1 = b.begin_run(config());   // the same run as a1, id 2 in b
  b.put(row(b1, "q1", "v"));         // identical
  b.put(row(b1, "q2", "v"));         // measured where a failed: replaces
  b.put(row(b1, "q3", "v", false));  // conflicting: a's row is kept
  b.put(row(b1, "q4", "v"));         // new
  a.put(row(a1, "q5", "v"));
  Result timed = row(b1, "q5", "v");  // the same answer measured again: only its timings differ
  timed.timings_ms = {{"total", 7.0}};
  b.put(timed);

  MergeStats s = a.merge({b.path()});
  EXPECT_EQ(s.runs_added, 1);
  EXPECT_EQ(s.rows_added, 2);
  EXPECT_EQ(s.rows_replaced, 1);
  EXPECT_EQ(s.rows_identical, 2);  // q1, and q5: timings are not content
  EXPECT_EQ(s.rows_conflicting, 1);
  for (const Result& r : a.results(a1))  // a's row is kept
    if (r.instance == "q5") {
      EXPECT_EQ(r.timings_ms, row(a1, "q5", "v").timings_ms);
    }
  ASSERT_EQ(a.runs().size(), 2u);
  auto hot = a.runs()[1];
  EXPECT_EQ(hot.config, config("hotpotqa").config);
  EXPECT_EQ(hot.config_key, b.run(b0)->config_key);
  EXPECT_EQ(hot.created_at, b.run(b0)->created_at);
  EXPECT_EQ(a.results(hot.id).size(), 1u);
  EXPECT_EQ(a.done_keys(a1),
            (std::set<Key>{{"q1", "v"}, {"q2", "v"}, {"q3", "v"}, {"q4", "v"}, {"q5", "v"}}));
  Counts k = a.counts(a1);
  EXPECT_EQ(k.correct, 5);  // q3 stayed correct
  EXPECT_EQ(k.unmeasured, 0);

  // Merging again changes nothing; an empty store merges too; a store cannot merge itself.
  s = a.merge({b.path(), c.path()});
  EXPECT_EQ(s.runs_added + s.rows_added + s.rows_replaced, 0);
  EXPECT_EQ(s.rows_identical, 5);
  EXPECT_NE(error_of([&] { a.merge({a.path()}); }).find("cannot merge a store into itself"),
            std::string::npos);
  // A bad source is reported by name and leaves the target unchanged.
  testing::write_file(dir / "bad.sqlite", "not a database, not at all, no");
  EXPECT_EQ(error_of([&] { a.merge({dir / "bad.sqlite"}); }),
            (dir / "bad.sqlite").string() + ": not an SQLite database");
  EXPECT_EQ(a.results(std::nullopt).size(), 6u);
  // A run whose stored config no longer matches its key (edited by hand) is refused.
  { RunStore(dir / "edited.sqlite").begin_run(config("edited")); }
  raw_sql(dir / "edited.sqlite", "UPDATE runs SET config = '{\"k\":6}' WHERE id = 1");
  EXPECT_EQ(error_of([&] { a.merge({dir / "edited.sqlite"}); }),
            (dir / "edited.sqlite").string() +
                ": run 1: config_key does not match its configuration (edited by hand?)");
  EXPECT_EQ(a.results(std::nullopt).size(), 6u);
}

// Shards of one run each record their own prefill counters; the merged run carries their sum,
// and merging a shard a second time adds nothing (it brings no new row).
TEST(RunStore, MergeAddsShardPrefillCountersAndCopiesOtherMetadata) {
  auto dir = testing::temp_dir("store");
  RunStore out(dir / "out.sqlite"), s1(dir / "s1.sqlite"), s2(dir / "s2.sqlite");
  auto r1 = s1.begin_run(config());
  s1.put(row(r1, "q1", "v"));
  s1.set_run_meta(r1, "prefill", {{"submitted", 100}, {"computed", 40}});
  s1.set_run_meta(r1, "note", "first");
  auto r2 = s2.begin_run(config());
  s2.put(row(r2, "q2", "v"));
  s2.set_run_meta(r2, "prefill", {{"submitted", 50}, {"computed", 30}});
  s2.set_run_meta(r2, "note", "second");
  s2.set_run_meta(r2, "only_in_s2", {{"x", 1}});

  MergeStats st = out.merge({s1.path(), s2.path()});
  ASSERT_EQ(out.runs().size(), 1u);
  const auto id = out.runs()[0].id;
  EXPECT_EQ(out.run_meta(id, "prefill"), (nlohmann::json{{"submitted", 150}, {"computed", 70}}));
  EXPECT_EQ(out.run_meta(id, "note"), nlohmann::json("first"));  // the first value is kept
  EXPECT_EQ(out.run_meta(id, "only_in_s2"), (nlohmann::json{{"x", 1}}));
  EXPECT_EQ(st.meta_added, 3);  // prefill and note from s1, only_in_s2 from s2
  EXPECT_EQ(st.meta_summed, 1);
  EXPECT_EQ(st.meta_conflicting, 1);

  st = out.merge({s2.path()});
  EXPECT_EQ(st.rows_added + st.meta_added + st.meta_summed, 0);
  EXPECT_EQ(out.run_meta(id, "prefill"), (nlohmann::json{{"submitted", 150}, {"computed", 70}}));
}

TEST(RunStore, ConcurrentWritersFromThreads) {
  auto dir = testing::temp_dir("store");
  RunStore st(dir / "run.sqlite", RunStore::Mode::create, RunStore::Durability::normal);
  auto id = st.begin_run(config());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        st.put(row(id, "q" + std::to_string(i), "t" + std::to_string(t)));
        (void)st.is_done(id, "q0", "t0");
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(st.done_keys(id).size(), 200u);
  EXPECT_EQ(st.counts(id).rows, 200);
}

}  // namespace
}  // namespace ragform::store
