#include "store/run_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <mutex>
#include <unordered_map>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/file_identity.h"
#include "base/json_file.h"
#include "base/paths.h"
#include "store/sha256.h"

namespace ragform::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "ragform-run-store";

constexpr const char* kSchema = R"sql(
CREATE TABLE ragform_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  config_key TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  pipeline TEXT NOT NULL,
  config TEXT NOT NULL,
  tool_version TEXT NOT NULL,
  model_path TEXT NOT NULL,
  model_sha256 TEXT NOT NULL,
  reader TEXT NOT NULL,
  chat_mode TEXT NOT NULL,
  seed INTEGER NOT NULL);
CREATE TABLE results(
  run INTEGER NOT NULL REFERENCES runs(id),
  instance TEXT NOT NULL,
  variant TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('ok', 'unmeasured')),
  error TEXT NOT NULL,
  prompt TEXT NOT NULL,
  prompt_tokens INTEGER,
  output TEXT NOT NULL,
  correct INTEGER CHECK(correct IN (0, 1)),
  scores TEXT NOT NULL,
  timings_ms TEXT NOT NULL,
  extra TEXT NOT NULL,
  UNIQUE(run, instance, variant));
)sql";

constexpr const char* kResultColumns =
    "run, instance, variant, status, error, prompt, prompt_tokens, output, correct, scores, "
    "timings_ms, extra";

constexpr const char* kRunColumns =
    "id, config_key, created_at, pipeline, config, tool_version, model_path, model_sha256, reader, "
    "chat_mode, seed";

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// One prepared statement; reset and unbound when a Use goes out of scope.
class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, const std::string& sql, const std::string& where) {
    if (sqlite3_prepare_v2(db, sql.c_str(), int(sql.size()), &s_, nullptr) != SQLITE_OK)
      throw Error(where, std::string("SQL error: ") + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(Stmt&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  sqlite3_stmt* get() const { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

json numbers_to_json(const std::map<std::string, double>& m) {
  json j = json::object();
  for (auto& [k, v] : m) j[k] = v;
  return j;
}

std::string text_col(sqlite3_stmt* s, int i) {
  const auto* p = sqlite3_column_text(s, i);
  return p ? std::string(reinterpret_cast<const char*>(p), size_t(sqlite3_column_bytes(s, i)))
           : std::string();
}

// A JSON column's value (a run's config, a row's scores, timings_ms, extra). A text that does not
// parse, or nests deeper than kMaxJsonDepth, is Error "<owner>: <name> is not valid JSON: <why>" /
// "<owner>: <name>: too deep at ...: nesting deeper than 128 levels", the reason every other
// input gives (pass 6, E4: a deep object was reported as "extra is not a JSON object").
json json_col(sqlite3_stmt* s, int i, const std::string& where, const std::string& owner,
              const std::string& name) {
  try {
    return parse_json_text(text_col(s, i));
  } catch (const JsonTextError& e) {
    throw Error(where, owner + ": " + name +
                           (e.kind() == "too deep" ? ": " : " is not valid JSON: ") + e.what());
  }
}

// An integer column's value (a row's prompt_tokens and correct, a run's seed), nullopt for NULL.
// Text or a real number is an Error naming the row (issue 40, pass 22: an edited 'abc' was read
// as 0 tokens and 159.9 as 159, and tune's held-out token counts were 0 without a word).
std::optional<std::int64_t> int_col(sqlite3_stmt* s, int i, const std::string& where,
                                    const std::string& owner, const std::string& name) {
  switch (sqlite3_column_type(s, i)) {
    case SQLITE_NULL:
      return std::nullopt;
    case SQLITE_INTEGER:
      return sqlite3_column_int64(s, i);
    default:
      throw Error(where,
                  owner + ": " + name + " is " + excerpt(text_col(s, i)) + ", not an integer");
  }
}

}  // namespace

const char* to_string(Status s) { return s == Status::ok ? "ok" : "unmeasured"; }

std::string canonical_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string run_key(const RunConfig& c) {
  json identity = {{"pipeline", c.pipeline},         {"config", c.config},
                   {"model_sha256", c.model_sha256}, {"reader", c.reader},
                   {"chat_mode", c.chat_mode},       {"seed", c.seed}};
  return sha256_hex(canonical_json(identity));
}

struct RunStore::Impl {
  fs::path path;
  // Declared first, so it outlives the connection: no whole-file writer of this process replaces
  // the store while it is open (base/file_identity.h).
  std::unique_ptr<OpenStoreMark> mark;
  std::string where;     // "<path>", prefix of every error
  bool has_wal = false;  // read-only: a -wal file was there (reading indexes it beside the store)
  sqlite3* db = nullptr;
  bool read_only = false;
  mutable std::recursive_mutex mu;
  mutable std::unordered_map<std::string, Stmt> cache;

  ~Impl() {
    cache.clear();
    if (db) sqlite3_close_v2(db);
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where, what + ": " + sqlite3_errmsg(db));
  }

  void exec(const char* sql) const {
    char* msg = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
      std::string m = msg ? msg : sqlite3_errmsg(db);
      sqlite3_free(msg);
      throw Error(where, m);
    }
  }

  // A cached prepared statement, reset for a new use.
  sqlite3_stmt* stmt(const std::string& sql) const {
    auto it = cache.find(sql);
    if (it == cache.end()) it = cache.emplace(sql, Stmt(db, sql, where)).first;
    sqlite3_stmt* s = it->second.get();
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
  }

  // sqlite3_step with errors turned into Error; returns true for a row, false when done.
  bool step(sqlite3_stmt* s, const char* what) const {
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    std::string msg = sqlite3_errmsg(db);
    sqlite3_reset(s);
    throw Error(where, std::string(what) + ": " + msg);
  }

  void bind(sqlite3_stmt* s, int i, const std::string& v) const {
    sqlite3_bind_text(s, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
  }

  void open(Mode mode, Durability durability);
  void require_writable(const fs::path& parent) const;
  void check_schema(Mode mode);
  std::optional<std::int64_t> find_run(const std::string& key) const;
  std::int64_t insert_run(const RunInfo& r) const;
  RunInfo read_run(sqlite3_stmt* s) const;
  Result read_result(sqlite3_stmt* s) const;
  std::optional<Result> get(std::int64_t run, const std::string& inst,
                            const std::string& var) const;
  void bind_result(sqlite3_stmt* s, const Result& r) const;
  void validate(const Result& r) const;
};

namespace {
// "file:" + the path percent-encoded (RFC 3986 unreserved characters and '/' stay) + "?" + query.
std::string sqlite_uri(const fs::path& p, const std::string& query) {
  static const char* hex = "0123456789ABCDEF";
  std::string out = "file:";
  for (unsigned char c : p.string()) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "?" + query;
}
}  // namespace

void RunStore::Impl::open(Mode mode, Durability durability) {
  std::error_code ec;
  bool exists = fs::exists(path, ec);
  if (ec == std::errc::permission_denied)
    throw Error(where, "permission denied (a directory on the way cannot be searched)");
  if (exists && fs::is_directory(path, ec)) throw Error(where, "is a directory");
  if (!exists && mode != Mode::create) throw Error(where, "no such file");
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!exists) {
    if (!fs::is_directory(parent, ec))
      throw Error(where, "cannot create: directory '" + parent.string() + "' does not exist");
    // SQLite reports a directory it may not write in as "No such file or directory" (its last
    // try opens the missing file read-only).
    if (access(parent.c_str(), W_OK | X_OK) != 0)
      throw Error(where, "cannot create: directory '" + parent.string() +
                             "' is not writable: " + std::strerror(errno));
  }
  if (exists && mode != Mode::read_only) require_writable(parent);
  read_only = mode == Mode::read_only;
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (mode == Mode::create) flags |= SQLITE_OPEN_CREATE;
  std::string name = path.string();
  // Reading never writes beside the store. A store whose writers have all closed has no -wal file
  // (the last connection checkpoints it into the database and deletes it): it is opened
  // immutable=1, so SQLite creates no -wal/-shm file and takes no lock, and a store in a
  // read-only directory reads. A store with a -wal file (a writer running, or killed) holds rows
  // only the log has: it is opened mode=ro, which reads the log through the -shm index (SQLite
  // creates that file when it is missing, so it needs a writable directory then).
  if (read_only) {
    has_wal = fs::exists(name + "-wal", ec);
    name = sqlite_uri(fs::absolute(path, ec), has_wal ? "mode=ro" : "immutable=1");
    flags |= SQLITE_OPEN_URI;
  }
  int rc = sqlite3_open_v2(name.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    int sys = db ? sqlite3_system_errno(db) : 0;
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    if (sys) msg = std::strerror(sys);
    if (sys == EACCES || sys == EPERM || sys == EROFS) {
      msg = "permission denied";
      if (has_wal)
        msg += " (the store has a write-ahead log, " + path.filename().string() +
               "-wal, that reading needs to index beside it)";
    }
    throw Error(where, (exists ? "cannot open: " : "cannot create: ") + msg);
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 10000);
  check_schema(mode);
  if (!read_only) {
    // WAL: readers (reports) never block the writer; FULL: see the header on durability.
    sqlite3_stmt* s = stmt("PRAGMA journal_mode=WAL");
    std::string jm = step(s, "setting WAL mode") ? text_col(s, 0) : "";
    sqlite3_reset(s);
    if (jm != "wal") throw Error(where, "cannot switch to WAL journal mode (got '" + jm + "')");
    exec(durability == Durability::full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  }
  exec("PRAGMA foreign_keys=ON");
}

// A writer needs the store file and its directory (SQLite's -wal and -shm files go beside it);
// SQLite itself would say "attempt to write a readonly database" at the first statement.
void RunStore::Impl::require_writable(const fs::path& parent) const {
  if (access(path.c_str(), W_OK) != 0)
    throw Error(where, std::string("read-only: cannot write the store: ") + std::strerror(errno));
  if (access(parent.c_str(), W_OK | X_OK) != 0)
    throw Error(where,
                "read-only: cannot write beside the store (SQLite keeps its -wal and -shm "
                "files there): directory '" +
                    parent.string() + "': " + std::strerror(errno));
}

void RunStore::Impl::check_schema(Mode mode) {
  // Counts all tables and the ragform_meta table. The first read of a file that is not SQLite
  // fails here with SQLITE_NOTADB.
  auto probe = [&](std::int64_t& tables, std::int64_t& meta) {
    const char* sql =
        "SELECT count(*), sum(name = 'ragform_meta') FROM sqlite_schema WHERE type='table'";
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);  // reads the schema page
    if (rc == SQLITE_OK) rc = sqlite3_step(raw);
    if (rc == SQLITE_ROW) {
      tables = sqlite3_column_int64(raw, 0);
      meta = sqlite3_column_int64(raw, 1);
    }
    sqlite3_finalize(raw);
    if ((rc & 0xff) == SQLITE_NOTADB) throw Error(where, "not an SQLite database");
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    if (rc != SQLITE_ROW && read_only && has_wal && access(dir.c_str(), W_OK) != 0)
      throw Error(where, "cannot read: the store has a write-ahead log, " +
                             path.filename().string() +
                             "-wal, that reading must index beside it, and its directory is not "
                             "writable (a writer is running or was killed: let it finish, or "
                             "open the store once with write access)");
    if (rc != SQLITE_ROW) fail("cannot read");
  };
  std::int64_t tables = 0, meta = 0;
  probe(tables, meta);
  if (meta == 0 && tables == 0) {
    if (mode == Mode::read_only) throw Error(where, "empty database, not a ragform run store");
    exec("BEGIN IMMEDIATE");
    try {
      probe(tables, meta);  // another process may have created it meanwhile
      if (meta == 0 && tables == 0) {
        exec(kSchema);
        for (auto [k, v] : {std::pair<std::string, std::string>{"format", kFormat},
                            {"schema_version", std::to_string(kSchemaVersion)}}) {
          sqlite3_stmt* s = stmt("INSERT INTO ragform_meta(key, value) VALUES (?, ?)");
          bind(s, 1, k);
          bind(s, 2, v);
          step(s, "writing schema");
        }
      }
      exec("COMMIT");
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    probe(tables, meta);
  }
  if (meta == 0)
    throw Error(where, "an SQLite database, but not a ragform run store (no ragform_meta table)");
  std::map<std::string, std::string> kv;
  Stmt s(db, "SELECT key, value FROM ragform_meta", where);
  while (step(s.get(), "reading ragform_meta")) kv[text_col(s.get(), 0)] = text_col(s.get(), 1);
  if (kv["format"] != kFormat)
    throw Error(where, "not a ragform run store (format '" + excerpt(kv["format"]) + "')");
  const std::string& v = kv["schema_version"];
  int version = 0;
  try {
    size_t used = 0;
    version = std::stoi(v, &used);
    if (used != v.size()) version = 0;
  } catch (const std::exception&) {
    version = 0;
  }
  if (version <= 0) throw Error(where, "unknown schema version '" + excerpt(v) + "'");
  if (version > kSchemaVersion)
    throw Error(where, "schema version " + excerpt(v) + " is newer than this ragform supports (" +
                           std::to_string(kSchemaVersion) + "); use a newer ragform");
}

std::optional<std::int64_t> RunStore::Impl::find_run(const std::string& key) const {
  sqlite3_stmt* s = stmt(std::string("SELECT ") + kRunColumns + " FROM runs WHERE config_key = ?");
  bind(s, 1, key);
  if (!step(s, "finding run")) return std::nullopt;
  // The run a pipeline resumes (or a merge joins) is the one its configuration describes: a
  // stored configuration that does not parse, or no longer gives the key (edited by hand), is
  // refused as report and export refuse it (issue 40, pass 22: tune resumed such a run, and one
  // whose max_tokens was edited, silently).
  const RunInfo r = read_run(s);
  if (run_key(r) != key)
    throw Error(where, "run " + std::to_string(r.id) +
                           ": config_key does not match its configuration (edited by hand?)");
  return r.id;
}

std::int64_t RunStore::Impl::insert_run(const RunInfo& r) const {
  sqlite3_stmt* s = stmt(std::string("INSERT INTO runs(") + kRunColumns +
                         ") VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  bind(s, 1, r.config_key);
  bind(s, 2, r.created_at);
  bind(s, 3, r.pipeline);
  bind(s, 4, canonical_json(r.config));
  bind(s, 5, r.tool_version);
  bind(s, 6, r.model_path);
  bind(s, 7, r.model_sha256);
  bind(s, 8, r.reader);
  bind(s, 9, r.chat_mode);
  sqlite3_bind_int64(s, 10, r.seed);
  step(s, "creating run");
  return sqlite3_last_insert_rowid(db);
}

RunInfo RunStore::Impl::read_run(sqlite3_stmt* s) const {
  RunInfo r;
  r.id = sqlite3_column_int64(s, 0);
  r.config_key = text_col(s, 1);
  r.created_at = text_col(s, 2);
  r.pipeline = text_col(s, 3);
  r.config = json_col(s, 4, where, "run " + std::to_string(r.id), "config");
  r.tool_version = text_col(s, 5);
  r.model_path = text_col(s, 6);
  r.model_sha256 = text_col(s, 7);
  r.reader = text_col(s, 8);
  r.chat_mode = text_col(s, 9);
  r.seed = int_col(s, 10, where, "run " + std::to_string(r.id), "seed").value_or(0);
  return r;
}

Result RunStore::Impl::read_result(sqlite3_stmt* s) const {
  Result r;
  r.run = sqlite3_column_int64(s, 0);
  r.instance = text_col(s, 1);
  r.variant = text_col(s, 2);
  const std::string row =
      "run " + std::to_string(r.run) + " row ('" + r.instance + "', '" + r.variant + "')";
  std::string st = text_col(s, 3);
  if (st == "ok") {
    r.status = Status::ok;
  } else if (st == "unmeasured") {
    r.status = Status::unmeasured;
  } else {
    throw Error(where, row + ": unknown status '" + st + "'");
  }
  r.error = text_col(s, 4);
  r.prompt = text_col(s, 5);
  if (auto n = int_col(s, 6, where, row, "prompt_tokens")) r.prompt_tokens = *n;
  r.output = text_col(s, 7);
  if (auto c = int_col(s, 8, where, row, "correct")) r.correct = *c != 0;
  auto numbers = [&](int col, const char* name) {
    std::map<std::string, double> m;
    json j = json_col(s, col, where, row, name);
    if (!j.is_object()) throw Error(where, row + ": " + name + " is not a JSON object");
    for (auto& [k, v] : j.items()) {
      if (!v.is_number()) throw Error(where, row + ": " + name + "." + k + " is not a number");
      m[k] = v.get<double>();
    }
    return m;
  };
  r.scores = numbers(9, "scores");
  r.timings_ms = numbers(10, "timings_ms");
  r.extra = json_col(s, 11, where, row, "extra");
  if (!r.extra.is_object()) throw Error(where, row + ": extra is not a JSON object");
  return r;
}

std::optional<Result> RunStore::Impl::get(std::int64_t run, const std::string& inst,
                                          const std::string& var) const {
  sqlite3_stmt* s = stmt(std::string("SELECT ") + kResultColumns +
                         " FROM results WHERE run = ? AND instance = ? AND variant = ?");
  sqlite3_bind_int64(s, 1, run);
  bind(s, 2, inst);
  bind(s, 3, var);
  if (!step(s, "reading row")) return std::nullopt;
  return read_result(s);
}

void RunStore::Impl::validate(const Result& r) const {
  const std::string row =
      "run " + std::to_string(r.run) + " row ('" + r.instance + "', '" + r.variant + "')";
  if (r.instance.empty()) throw Error(where, row + ": empty instance id");
  if (r.status == Status::unmeasured) {
    if (r.error.empty()) throw Error(where, row + ": an unmeasured row needs its error text");
    if (r.correct) throw Error(where, row + ": an unmeasured row cannot be graded");
  } else if (!r.error.empty()) {
    throw Error(where, row + ": an ok row has error text '" + r.error + "'");
  }
  for (auto* m : {&r.scores, &r.timings_ms})
    for (auto& [k, v] : *m)
      if (!std::isfinite(v))
        throw Error(where, row + ": " + (m == &r.scores ? "score" : "timing") + " '" + k +
                               "' is not a finite number");
  if (!r.extra.is_object()) throw Error(where, row + ": extra must be a JSON object");
}

void RunStore::Impl::bind_result(sqlite3_stmt* s, const Result& r) const {
  sqlite3_bind_int64(s, 1, r.run);
  bind(s, 2, r.instance);
  bind(s, 3, r.variant);
  bind(s, 4, to_string(r.status));
  bind(s, 5, r.error);
  bind(s, 6, r.prompt);
  if (r.prompt_tokens) sqlite3_bind_int64(s, 7, *r.prompt_tokens);
  bind(s, 8, r.output);
  if (r.correct) sqlite3_bind_int(s, 9, *r.correct ? 1 : 0);
  bind(s, 10, canonical_json(numbers_to_json(r.scores)));
  bind(s, 11, canonical_json(numbers_to_json(r.timings_ms)));
  bind(s, 12, canonical_json(r.extra));
}

// ---------------------------------------------------------------------------------------------

RunStore::RunStore(const fs::path& path, Mode mode, Durability durability)
    : impl_(std::make_unique<Impl>()) {
  check_path(path.string());
  impl_->path = path;
  // Every message is "<path>: <reason>", as for any other file the CLI names.
  impl_->where = path.string();
  impl_->open(mode, durability);
  impl_->mark = std::make_unique<OpenStoreMark>(path.string());
}

RunStore::~RunStore() = default;
RunStore::RunStore(RunStore&&) noexcept = default;
RunStore& RunStore::operator=(RunStore&&) noexcept = default;

const fs::path& RunStore::path() const { return impl_->path; }

std::int64_t RunStore::begin_run(const RunConfig& c) {
  std::lock_guard lock(impl_->mu);
  if (c.pipeline.empty()) throw Error(impl_->where, "begin_run: empty pipeline name");
  RunInfo info;
  static_cast<RunConfig&>(info) = c;
  info.config_key = run_key(c);
  info.created_at = now_utc();
  // IMMEDIATE takes the write lock first, so two processes cannot both create the same run.
  impl_->exec("BEGIN IMMEDIATE");
  try {
    std::int64_t id;
    if (auto found = impl_->find_run(info.config_key)) {
      id = *found;
    } else {
      id = impl_->insert_run(info);
    }
    impl_->exec("COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::optional<std::int64_t> RunStore::find_run(const RunConfig& config) const {
  std::lock_guard lock(impl_->mu);
  return impl_->find_run(run_key(config));
}

std::optional<RunInfo> RunStore::run(std::int64_t id) const {
  std::lock_guard lock(impl_->mu);
  sqlite3_stmt* s = impl_->stmt(std::string("SELECT ") + kRunColumns + " FROM runs WHERE id = ?");
  sqlite3_bind_int64(s, 1, id);
  if (!impl_->step(s, "reading run")) return std::nullopt;
  return impl_->read_run(s);
}

void RunStore::set_run_meta(std::int64_t run, const std::string& name, const json& value) {
  std::lock_guard lock(impl_->mu);
  set_run_meta_locked(run, name, value);
}

void RunStore::set_run_meta_locked(std::int64_t run, const std::string& name, const json& value) {
  sqlite3_stmt* s = impl_->stmt("INSERT OR REPLACE INTO ragform_meta(key, value) VALUES (?, ?)");
  impl_->bind(s, 1, "run/" + std::to_string(run) + "/" + name);
  impl_->bind(s, 2, value.dump());
  impl_->step(s, "writing run metadata");
}

std::optional<json> RunStore::run_meta(std::int64_t run, const std::string& name) const {
  std::lock_guard lock(impl_->mu);
  return run_meta_locked(run, name);
}

std::optional<json> RunStore::run_meta_locked(std::int64_t run, const std::string& name) const {
  sqlite3_stmt* s = impl_->stmt("SELECT value FROM ragform_meta WHERE key = ?");
  impl_->bind(s, 1, "run/" + std::to_string(run) + "/" + name);
  if (!impl_->step(s, "reading run metadata")) return std::nullopt;
  // A damaged value is said, as a damaged row field is: taken as absent, a tune summary made the
  // report say the search had not completed, and sent the user to rerun (issue 40, pass 11).
  return json_col(s, 0, impl_->where, "run " + std::to_string(run), "metadata '" + name + "'");
}

std::vector<RunInfo> RunStore::runs() const {
  std::lock_guard lock(impl_->mu);
  std::vector<RunInfo> out;
  sqlite3_stmt* s = impl_->stmt(std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id");
  while (impl_->step(s, "reading runs")) out.push_back(impl_->read_run(s));
  return out;
}

bool RunStore::is_done(std::int64_t run, const std::string& instance,
                       const std::string& variant) const {
  std::lock_guard lock(impl_->mu);
  sqlite3_stmt* s = impl_->stmt(
      "SELECT 1 FROM results WHERE run = ? AND instance = ? AND variant = ? AND status = 'ok'");
  sqlite3_bind_int64(s, 1, run);
  impl_->bind(s, 2, instance);
  impl_->bind(s, 3, variant);
  return impl_->step(s, "checking row");
}

std::set<Key> RunStore::done_keys(std::int64_t run) const {
  std::lock_guard lock(impl_->mu);
  std::set<Key> out;
  sqlite3_stmt* s =
      impl_->stmt("SELECT instance, variant FROM results WHERE run = ? AND status = 'ok'");
  sqlite3_bind_int64(s, 1, run);
  while (impl_->step(s, "reading done rows"))
    out.emplace_hint(out.end(), text_col(s, 0), text_col(s, 1));
  return out;
}

void RunStore::put(const Result& r) {
  std::lock_guard lock(impl_->mu);
  impl_->validate(r);
  // One statement = one transaction: the row is durable when sqlite3_step returns. An existing
  // unmeasured row is replaced; an existing ok row is left alone and reported below.
  sqlite3_stmt* s = impl_->stmt(
      std::string("INSERT INTO results(") + kResultColumns +
      ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
      "ON CONFLICT(run, instance, variant) DO UPDATE SET status = excluded.status, "
      "error = excluded.error, prompt = excluded.prompt, prompt_tokens = excluded.prompt_tokens, "
      "output = excluded.output, correct = excluded.correct, scores = excluded.scores, "
      "timings_ms = excluded.timings_ms, extra = excluded.extra "
      "WHERE results.status = 'unmeasured'");
  impl_->bind_result(s, r);
  int rc = sqlite3_step(s);
  const std::string row =
      "run " + std::to_string(r.run) + " row ('" + r.instance + "', '" + r.variant + "')";
  if (rc == SQLITE_CONSTRAINT_FOREIGNKEY)
    throw Error(impl_->where, row + ": run " + std::to_string(r.run) + " does not exist");
  if (rc != SQLITE_DONE) impl_->fail(row + ": cannot write");
  if (sqlite3_changes(impl_->db) == 0)
    throw Error(impl_->where, row + ": already stored (finished rows are never rewritten)");
}

void RunStore::for_each_result(std::optional<std::int64_t> run,
                               const std::function<void(const Result&)>& fn) const {
  std::lock_guard lock(impl_->mu);
  // A statement of its own, so that `fn` may call other methods of this store.
  Stmt s(impl_->db,
         std::string("SELECT ") + kResultColumns + " FROM results" + (run ? " WHERE run = ?" : "") +
             " ORDER BY run, rowid",
         impl_->where);
  if (run) sqlite3_bind_int64(s.get(), 1, *run);
  while (impl_->step(s.get(), "reading rows")) fn(impl_->read_result(s.get()));
}

std::vector<Result> RunStore::results(std::optional<std::int64_t> run) const {
  std::vector<Result> out;
  for_each_result(run, [&](const Result& r) { out.push_back(r); });
  return out;
}

Counts RunStore::counts(std::int64_t run) const {
  std::lock_guard lock(impl_->mu);
  sqlite3_stmt* s = impl_->stmt(
      "SELECT count(*), coalesce(sum(status = 'ok'), 0), coalesce(sum(status = 'unmeasured'), 0), "
      "coalesce(sum(status = 'ok' AND correct = 1), 0), "
      "coalesce(sum(status = 'ok' AND correct = 0), 0), "
      "coalesce(sum(status = 'ok' AND correct IS NULL), 0) FROM results WHERE run = ?");
  sqlite3_bind_int64(s, 1, run);
  impl_->step(s, "counting rows");
  Counts c;
  c.rows = sqlite3_column_int64(s, 0);
  c.ok = sqlite3_column_int64(s, 1);
  c.unmeasured = sqlite3_column_int64(s, 2);
  c.correct = sqlite3_column_int64(s, 3);
  c.wrong = sqlite3_column_int64(s, 4);
  c.ungraded = sqlite3_column_int64(s, 5);
  return c;
}

// Run metadata follows the rows it describes. A name this store lacks for the run is copied.
// The prefill accounting is a pair of counters over invocations, so shards of one run add up:
// a source's counts are added when that source brought new rows to the run (merging the same
// store twice brings none, and adds nothing). Any other name present in both keeps this store's
// value, as a conflicting row does.
void RunStore::merge_run_meta(const RunStore& other,
                              const std::map<std::int64_t, std::int64_t>& id_map,
                              const std::set<std::int64_t>& grew, MergeStats& st) {
  for (const auto& [oid, id] : id_map) {
    const std::string from = "run/" + std::to_string(oid) + "/";
    std::vector<std::pair<std::string, std::string>> kv;
    sqlite3_stmt* q = other.impl_->stmt(
        "SELECT key, value FROM ragform_meta WHERE substr(key, 1, length(?1)) = ?1 ORDER BY key");
    other.impl_->bind(q, 1, from);
    while (other.impl_->step(q, "reading run metadata"))
      kv.emplace_back(text_col(q, 0).substr(from.size()), text_col(q, 1));
    for (const auto& [name, text] : kv) {
      json in;
      try {
        in = parse_json_text(text);
      } catch (const JsonTextError& e) {  // refused as run_meta() refuses it, not dropped
        throw Error(other.impl_->where, "run " + std::to_string(oid) + ": metadata '" + name +
                                            "' is not valid JSON: " + e.what());
      }
      std::optional<json> have = run_meta_locked(id, name);
      if (!have) {
        set_run_meta_locked(id, name, in);
        ++st.meta_added;
      } else if (*have == in) {
        continue;
      } else if (name == "prefill" && grew.count(oid) && have->is_object() && in.is_object()) {
        json sum = *have;
        for (const char* c : {"submitted", "computed"})
          sum[c] = have->value(c, std::int64_t{0}) + in.value(c, std::int64_t{0});
        set_run_meta_locked(id, name, sum);
        ++st.meta_summed;
      } else {
        ++st.meta_conflicting;
      }
    }
  }
}

namespace {

// Two rows that differ only in their timings (one prompt answered by two workers, or twice) are
// one measurement: a merge keeps the existing row and does not call it a conflict.
bool same_but_timings(Result a, Result b) {
  a.timings_ms.clear();
  b.timings_ms.clear();
  return a == b;
}

}  // namespace

MergeStats RunStore::merge(const std::vector<fs::path>& others) {
  std::lock_guard lock(impl_->mu);
  if (impl_->read_only) throw Error(impl_->where, "merge: store is open read-only");
  MergeStats st;
  for (const auto& other_path : others) {
    std::error_code ec;
    if (fs::equivalent(other_path, impl_->path, ec))
      throw Error(impl_->where, "merge: cannot merge a store into itself");
    RunStore other(other_path, Mode::read_only);
    impl_->exec("BEGIN IMMEDIATE");
    try {
      std::map<std::int64_t, std::int64_t> id_map;  // other's run id -> ours
      for (const RunInfo& r : other.runs()) {
        if (run_key(r) != r.config_key)
          throw Error(other_path.string(),
                      "run " + std::to_string(r.id) +
                          ": config_key does not match its configuration (edited by hand?)");
        if (auto found = impl_->find_run(r.config_key)) {
          id_map[r.id] = *found;
        } else {
          id_map[r.id] = impl_->insert_run(r);
          ++st.runs_added;
        }
      }
      std::set<std::int64_t> grew;  // other's runs that brought at least one new row
      other.for_each_result(std::nullopt, [&](const Result& in) {
        Result r = in;
        r.run = id_map.at(in.run);
        std::optional<Result> have = impl_->get(r.run, r.instance, r.variant);
        if (!have) {
          sqlite3_stmt* s = impl_->stmt(std::string("INSERT INTO results(") + kResultColumns +
                                        ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
          impl_->bind_result(s, r);
          impl_->step(s, "merging row");
          grew.insert(in.run);
          ++st.rows_added;
        } else if (same_but_timings(*have, r)) {
          ++st.rows_identical;
        } else if (have->status == Status::unmeasured && r.status == Status::ok) {
          sqlite3_stmt* s = impl_->stmt(
              "UPDATE results SET status = ?4, error = ?5, prompt = ?6, prompt_tokens = ?7, "
              "output = ?8, correct = ?9, scores = ?10, timings_ms = ?11, extra = ?12 "
              "WHERE run = ?1 AND instance = ?2 AND variant = ?3");
          impl_->bind_result(s, r);
          impl_->step(s, "merging row");
          ++st.rows_replaced;
        } else {
          ++st.rows_conflicting;
        }
      });
      merge_run_meta(other, id_map, grew, st);
      impl_->exec("COMMIT");
    } catch (...) {
      sqlite3_exec(impl_->db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  return st;
}

}  // namespace ragform::store
