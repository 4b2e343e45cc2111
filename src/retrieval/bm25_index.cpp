#include "retrieval/bm25_index.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "base/error.h"
#include "eval/jsonl.h"
#include "retrieval/sqlite_db.h"

namespace ragform::retrieval {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormatVersion = "1";

bool has_word_char(std::string_view w) {
  for (unsigned char c : w)
    if (c >= 0x80 || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'))
      return true;
  return false;
}

bool is_stop_word(std::string_view w) {
  // The word without its surrounding ASCII punctuation, lower-cased ("The" and "is?" are stop
  // words; "U.S." is not one).
  size_t a = 0, b = w.size();
  auto punct = [](unsigned char c) { return c < 0x80 && !std::isalnum(c); };
  while (a < b && punct(static_cast<unsigned char>(w[a]))) ++a;
  while (b > a && punct(static_cast<unsigned char>(w[b - 1]))) --b;
  std::string low(w.substr(a, b - a));
  for (auto& c : low) c = char(std::tolower(static_cast<unsigned char>(c)));
  static const std::unordered_set<std::string> stop(std::begin(kStopWords), std::end(kStopWords));
  return stop.count(low) > 0;
}

// A byte that separates words: whitespace, and NUL, which FTS5's query parser takes for the
// query's end (a NUL inside a quoted word left it "unterminated string", a 500 on /v1/retrieve).
bool separates(char c) { return c == '\0' || std::isspace(static_cast<unsigned char>(c)); }

// The OR of the quoted words of `question`; stop words left out when `drop_stop` is set.
std::string or_query(std::string_view question, bool drop_stop) {
  std::string out;
  std::unordered_set<std::string> seen;
  size_t i = 0;
  while (i < question.size()) {
    while (i < question.size() && separates(question[i])) ++i;
    size_t j = i;
    while (j < question.size() && !separates(question[j])) ++j;
    std::string_view w = question.substr(i, j - i);
    i = j;
    if (w.empty() || !has_word_char(w) || (drop_stop && is_stop_word(w)) ||
        !seen.insert(std::string(w)).second)
      continue;
    if (!out.empty()) out += " OR ";
    out += '"';
    for (char c : w) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
  }
  return out;
}

}  // namespace

std::string fts5_query(std::string_view question, StopWords stop) {
  if (stop == StopWords::keep) return or_query(question, false);
  std::string q = or_query(question, true);
  return q.empty() ? or_query(question, false) : q;  // a question of stop words only keeps them
}

struct Bm25Index::Impl {
  std::unique_ptr<sql::Db> db;
  std::unique_ptr<sql::Stmt> find_id, insert, insert_fts, search, get;
  int64_t build = 0;
};

std::string Bm25Index::file_in(const std::string& dir) {
  return (fs::path(dir) / "index.sqlite").string();
}

namespace {

// Creates DIR and its missing parents, a failure naming the directory that could not be made
// (create_directories names only the path it was given).
void make_dirs(const fs::path& p) {
  std::error_code ec;
  if (fs::is_directory(p, ec)) return;
  const fs::path parent = p.parent_path();
  if (!parent.empty() && parent != p) make_dirs(parent);
  if (fs::create_directory(p, ec) || !ec) return;
  throw Error(p.string(), "cannot create the directory: " + ec.message());
}

void make_index_dir(const std::string& dir) {
  make_dirs(dir);
  // SQLite says only "unable to open database file" for a directory it cannot write in.
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error(dir, std::string("cannot write an index here: ") + std::strerror(errno));
}

}  // namespace

bool Bm25Index::exists_in(const std::string& dir) {
  std::error_code ec;
  const bool exists = fs::exists(file_in(dir), ec);
  // A directory on the way that cannot be searched: the reason, not filesystem_error's text.
  if (ec) throw Error(dir, "cannot look for an index: " + ec.message());
  return exists;
}

void Bm25Index::require_no_index(const std::string& dir) {
  if (exists_in(dir)) throw Error(dir, "already holds an index (use --append to add to it)");
}

Bm25Index::Bm25Index(const std::string& dir, Open mode) : impl_(std::make_unique<Impl>()) {
  const std::string file = file_in(dir);
  const bool exists = exists_in(dir);
  if (mode == Open::Read && !exists)
    throw Error(dir, "no index here (missing index.sqlite; build one with ragform index build)");
  if (mode == Open::Create) require_no_index(dir);
  if (mode != Open::Read) make_index_dir(dir);
  impl_->db = std::make_unique<sql::Db>(file, mode == Open::Read);
  auto& db = *impl_->db;
  if (mode != Open::Read) {
    db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    db.exec(
        "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE IF NOT EXISTS passages(rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,"
        " title TEXT NOT NULL, text TEXT NOT NULL, line INTEGER, build INTEGER NOT NULL);"
        "CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(title, text,"
        " content='passages', content_rowid='rowid', tokenize='" +
        std::string(kFts5Tokenizer) + "');");
    std::string version = meta("format");
    if (!version.empty() && version != kFormatVersion)
      throw Error("index", file + ": format " + version + ", this ragform reads " + kFormatVersion);
    std::string builds = meta("builds");
    impl_->build = builds.empty() ? 1 : std::stoll(builds) + 1;
    sql::Stmt put(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)");
    for (auto [k, v] : {std::pair<std::string, std::string>{"format", kFormatVersion},
                        {"tokenizer", kFts5Tokenizer},
                        {"builds", std::to_string(impl_->build)}}) {
      put.bind(1, k).bind(2, v);
      put.step();
      put.reset();
    }
    impl_->find_id = std::make_unique<sql::Stmt>(
        db, "SELECT rowid, title, text, line, build FROM passages WHERE id = ?1");
    impl_->insert = std::make_unique<sql::Stmt>(
        db, "INSERT INTO passages(id, title, text, line, build) VALUES(?1, ?2, ?3, ?4, ?5)");
    impl_->insert_fts = std::make_unique<sql::Stmt>(
        db, "INSERT INTO passages_fts(rowid, title, text) VALUES(?1, ?2, ?3)");
  } else {
    std::string version = meta("format");
    if (version != kFormatVersion)
      throw Error("index", file + ": not a ragform index of format " + std::string(kFormatVersion) +
                               (version.empty() ? "" : " (format " + version + ")"));
  }
  // ORDER BY rank with a LIMIT lets FTS5 keep only the best k rows (rank = bm25() by default).
  impl_->search = std::make_unique<sql::Stmt>(
      db,
      "SELECT rowid, rank FROM passages_fts WHERE passages_fts MATCH ?1 ORDER BY rank LIMIT ?2");
  impl_->get =
      std::make_unique<sql::Stmt>(db, "SELECT id, title, text FROM passages WHERE rowid = ?1");
}

Bm25Index::~Bm25Index() = default;

std::string Bm25Index::meta(const std::string& key) const {
  sql::Stmt s(*impl_->db, "SELECT value FROM meta WHERE key = ?1");
  s.bind(1, key);
  try {
    return s.step() ? s.text(0) : std::string();
  } catch (const Error&) {
    return {};
  }
}

std::pair<Bm25Index::Added, int64_t> Bm25Index::add(const Passage& p, const std::string& source) {
  auto& im = *impl_;
  if (!im.insert) throw Error("index", "opened for reading");
  auto& f = *im.find_id;
  f.bind(1, p.id);
  if (f.step()) {
    const int64_t rowid = f.int64(0);
    const std::string title = f.text(1), text = f.text(2);
    const int64_t line = f.int64(3), build = f.int64(4);
    f.reset();
    if (build == im.build)
      throw eval::DataError(
          source, p.line,
          "duplicate id '" + p.id + "' (first at line " + std::to_string(line) + ")");
    if (title != p.title || text != p.text)
      throw eval::DataError(source, p.line,
                            "id '" + p.id + "' is already in the index with a different " +
                                (title != p.title ? "title" : "text"));
    return {Added::AlreadyIndexed, rowid};
  }
  f.reset();
  auto& ins = *im.insert;
  ins.bind(1, p.id).bind(2, p.title).bind(3, p.text).bind(4, int64_t(p.line)).bind(5, im.build);
  ins.step();
  ins.reset();
  const int64_t rowid = im.db->last_rowid();
  auto& fts = *im.insert_fts;
  fts.bind(1, rowid).bind(2, p.title).bind(3, p.text);
  fts.step();
  fts.reset();
  return {Added::New, rowid};
}

void Bm25Index::settle() {
  // A WAL-mode database is read through an -shm file that SQLite creates beside it, so a
  // read-only directory (an index shared by another user, a read-only mount) could not be read.
  // A finished build goes back to a rollback journal; the next --append turns WAL on again.
  try {
    impl_->db->exec("PRAGMA journal_mode=DELETE");
  } catch (const Error&) {
    // Another connection has the file open (a server reading it): it stays in WAL mode, which
    // reads fine wherever the directory is writable.
  }
}

void Bm25Index::begin() { impl_->db->exec("BEGIN"); }
void Bm25Index::commit() { impl_->db->exec("COMMIT"); }
void Bm25Index::optimize() {
  impl_->db->exec("INSERT INTO passages_fts(passages_fts) VALUES('optimize')");
}

size_t Bm25Index::size() const {
  sql::Stmt s(*impl_->db, "SELECT count(*) FROM passages");
  s.step();
  return size_t(s.int64(0));
}

std::vector<Hit> Bm25Index::search_match(const std::string& match, int k) const {
  std::vector<Hit> hits;
  if (match.empty() || k <= 0) return hits;
  auto& s = *impl_->search;
  s.bind(1, match).bind(2, int64_t(k));
  try {
    while (s.step()) hits.push_back({s.int64(0), -s.real(1)});
  } catch (...) {
    s.reset();
    throw;
  }
  s.reset();
  return hits;
}

StoredPassage Bm25Index::passage(int64_t rowid) const {
  auto& g = *impl_->get;
  g.bind(1, rowid);
  if (!g.step()) {
    g.reset();
    throw Error("index", impl_->db->path() + ": no passage at row " + std::to_string(rowid));
  }
  StoredPassage p{g.text(0), g.text(1), g.text(2)};
  g.reset();
  return p;
}

std::optional<int64_t> Bm25Index::rowid_of(const std::string& id) const {
  sql::Stmt s(*impl_->db, "SELECT rowid FROM passages WHERE id = ?1");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return s.int64(0);
}

void Bm25Index::for_each(const std::function<void(int64_t, const StoredPassage&)>& fn) const {
  sql::Stmt s(*impl_->db, "SELECT rowid, id, title, text FROM passages ORDER BY rowid");
  while (s.step()) fn(s.int64(0), StoredPassage{s.text(1), s.text(2), s.text(3)});
}

}  // namespace ragform::retrieval
