// The run store: every run writes one SQLite file so that a killed run
// resumes where it stopped, loses nothing, and never recomputes a finished row.
//
// File layout (schema version 1; WAL journal, synchronous=FULL by default):
//   ragform_meta(key TEXT PRIMARY KEY, value TEXT)     'format' = 'ragform-run-store',
//                                                       'schema_version' = '1'
//   runs(id INTEGER PRIMARY KEY, config_key TEXT UNIQUE, created_at TEXT (ISO 8601 UTC),
//        pipeline TEXT, config TEXT (canonical JSON), tool_version TEXT, model_path TEXT,
//        model_sha256 TEXT, reader TEXT, chat_mode TEXT, seed INTEGER)
//   results(run INTEGER REFERENCES runs, instance TEXT, variant TEXT, status TEXT ('ok' or
//        'unmeasured'), error TEXT, prompt TEXT, prompt_tokens INTEGER NULL, output TEXT,
//        correct INTEGER NULL (1/0; NULL = not graded or unmeasured), scores TEXT (JSON object of
//        numbers), timings_ms TEXT (JSON object of numbers), extra TEXT (JSON object),
//        UNIQUE(run, instance, variant))
//
// Identity and resume: a run is identified by config_key = SHA-256 of the canonical JSON of
// {pipeline, config, model_sha256, reader, chat_mode, seed} (keys sorted, compact). begin_run()
// with the same identity returns the existing id; the tool version and model path are recorded
// but are not part of the identity (a rebuilt binary resumes the same run).
//
// Durability: each put() is its own transaction, so a crash loses at most the row in flight.
// WAL with synchronous=NORMAL already survives SIGKILL, OOM kills and crashes of the process (a
// committed transaction is in the OS page cache once write() returns); it can lose the last
// commits (never consistency) on power loss or a kernel crash. The default, FULL, also fsyncs the
// WAL at every commit, so a committed row survives those too. Its cost, one fdatasync per row
// (~7 ms on this project's VM disk, far less on most SSDs), is small next to the model call that
// produced the row (a 2k-token prompt takes seconds on the native reader, 100+ ms remotely).
// Durability::normal is for bulk writers and tests that write thousands of rows per second.
//
// Unmeasured rows: a failed remote request is stored with status 'unmeasured' and its error text;
// it is never counted as wrong, is not "done" (resume retries it), and a later put() of the same
// key replaces it.
//
// Thread-safety: a RunStore owns one SQLite connection guarded by a mutex; every method may be
// called from any thread. Several processes may open the same file (SQLite locking, 10 s busy
// timeout), but one run should have one writer.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ragform::store {

inline constexpr int kSchemaVersion = 1;

// What begin_run() records about a run. Everything but tool_version and model_path is identity.
struct RunConfig {
  std::string pipeline;                              // command, e.g. "sure eval"
  nlohmann::json config = nlohmann::json::object();  // the full configuration
  std::string tool_version;                          // RAGFORM_VERSION " (git " RAGFORM_GIT ")"
  std::string model_path;                            // as given by the user
  std::string model_sha256;                          // sha256_file(model); empty for remote
  std::string reader;                                // "native", "openai", ...
  std::string chat_mode;                             // "chat", "raw", ...
  std::int64_t seed = 0;
};

struct RunInfo : RunConfig {
  std::int64_t id = 0;
  std::string created_at;  // "2026-11-22T01:04:13Z"
  std::string config_key;  // hex SHA-256 of the identity JSON
};

enum class Status { ok, unmeasured };
const char* to_string(Status s);

// One row: the result of one (instance, variant) of one run.
struct Result {
  std::int64_t run = 0;
  std::string instance;  // the QA instance id
  std::string variant;   // the presentation variant (ordering, perturbation, ...)
  Status status = Status::ok;
  std::string error;   // required (non-empty) when unmeasured, empty when ok
  std::string prompt;  // the exact prompt text sent to the reader
  std::optional<std::int64_t> prompt_tokens;
  std::string output;
  std::optional<bool> correct;  // nullopt: not graded, or unmeasured (never counted as wrong)
  std::map<std::string, double> scores;      // finite numbers only (em, f1, ...)
  std::map<std::string, double> timings_ms;  // finite numbers only (prefill, decode, total, ...)
  nlohmann::json extra = nlohmann::json::object();  // any further fields (a JSON object)

  bool operator==(const Result&) const = default;
};

using Key = std::pair<std::string, std::string>;  // (instance, variant)

// Tallies for reports; accuracy is correct / (correct + wrong): unmeasured rows are left out.
struct Counts {
  std::int64_t rows = 0, ok = 0, unmeasured = 0, correct = 0, wrong = 0, ungraded = 0;
};

struct MergeStats {
  std::int64_t runs_added = 0;        // runs not yet in this store
  std::int64_t rows_added = 0;        // rows whose key was new
  std::int64_t rows_replaced = 0;     // unmeasured rows replaced by a measured one
  std::int64_t rows_identical = 0;    // already present with the same content (timings aside)
  std::int64_t rows_conflicting = 0;  // present with other content: the existing row is kept
  std::int64_t meta_added = 0;        // run metadata names copied (see RunStore::merge)
  std::int64_t meta_summed = 0;       // prefill counters of a shard added to the run's
  std::int64_t meta_conflicting = 0;  // other metadata that differs: the existing value is kept
};

class RunStore {
 public:
  enum class Mode {
    create,     // open read-write, creating the file and schema when missing
    write,      // open an existing store read-write
    read_only,  // open an existing store for reading
  };
  enum class Durability {
    full,    // synchronous=FULL: a committed row survives SIGKILL and power loss
    normal,  // synchronous=NORMAL: a committed row survives SIGKILL, maybe not power loss
  };
  // Throws ragform::Error naming the file: missing (write/read_only), cannot be created, not an
  // SQLite database, an SQLite database that is not a run store, or a newer/unknown schema.
  explicit RunStore(const std::filesystem::path& path, Mode mode = Mode::create,
                    Durability durability = Durability::full);
  ~RunStore();
  RunStore(RunStore&&) noexcept;
  RunStore& operator=(RunStore&&) noexcept;
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::filesystem::path& path() const;

  // The id of the run with this identity, creating the runs row when it is new.
  std::int64_t begin_run(const RunConfig& config);
  // The id of the run with this identity, if it exists (never creates one).
  std::optional<std::int64_t> find_run(const RunConfig& config) const;
  std::optional<RunInfo> run(std::int64_t id) const;
  std::vector<RunInfo> runs() const;

  // True when (instance, variant) of `run` has a row with status ok.
  bool is_done(std::int64_t run, const std::string& instance, const std::string& variant) const;
  // All (instance, variant) keys of `run` with status ok: one query, for skipping on resume.
  std::set<Key> done_keys(std::int64_t run) const;

  // Validates and commits one row durably. Throws Error when the run does not exist, the row is
  // invalid (unmeasured without error text or with a correctness, non-finite number, extra not an
  // object), or an ok row for the key already exists (finished rows are never rewritten).
  void put(const Result& r);

  // Rows of one run (or of all runs when run is nullopt) in insertion order.
  void for_each_result(std::optional<std::int64_t> run,
                       const std::function<void(const Result&)>& fn) const;
  std::vector<Result> results(std::optional<std::int64_t> run) const;
  Counts counts(std::int64_t run) const;

  // Facts about a run that are not part of its identity nor a row (e.g. the prefill accounting
  // of its last invocation), as JSON in ragform_meta under the key "run/<id>/<name>".
  void set_run_meta(std::int64_t run, const std::string& name, const nlohmann::json& value);
  std::optional<nlohmann::json> run_meta(std::int64_t run, const std::string& name) const;

  // Copies the runs and rows of other run stores into this one, matching runs by identity
  // (config_key). Each source file is merged in one transaction. On a key present in both, a
  // measured row replaces an unmeasured one; otherwise the existing row is kept and counted as
  // identical when the two differ in nothing but timings_ms, else as conflicting.
  // Run metadata is copied where missing; the prefill counters of shards that each brought rows
  // to a run are added up.
  MergeStats merge(const std::vector<std::filesystem::path>& others);

 private:
  void set_run_meta_locked(std::int64_t run, const std::string& name, const nlohmann::json& value);
  std::optional<nlohmann::json> run_meta_locked(std::int64_t run, const std::string& name) const;
  void merge_run_meta(const RunStore& other, const std::map<std::int64_t, std::int64_t>& id_map,
                      const std::set<std::int64_t>& grew, MergeStats& st);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The identity of a run: hex SHA-256 of canonical_json({pipeline, config, model_sha256, reader,
// chat_mode, seed}).
std::string run_key(const RunConfig& config);

// The canonical JSON text of `j`: object keys sorted, no whitespace, shortest round-trip numbers,
// invalid UTF-8 replaced by U+FFFD. The identity of a run is built from it.
std::string canonical_json(const nlohmann::json& j);

}  // namespace ragform::store
