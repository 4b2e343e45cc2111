#include "retrieval/sqlite_db.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace ragform::retrieval::sql {

Db::Db(const std::string& path, bool readonly) : path_(path) {
  int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // NOMUTEX: one connection per thread (the retriever opens one per worker).
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    // The system's reason ("Permission denied") rather than SQLite's "unable to open database
    // file".
    const int sys = db_ ? sqlite3_system_errno(db_) : 0;
    std::string msg = sys ? std::strerror(sys) : db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(path, "cannot open: " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);
  if (readonly) check_readable();
}

void Db::check_readable() const {
  // The schema is read at the first statement; a failure there would otherwise surface as a
  // "prepare" error of whatever statement came first.
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, "SELECT count(*) FROM sqlite_schema", nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc == SQLITE_OK) return;
  const int base = rc & 0xff;
  const std::filesystem::path file(path_);
  const std::filesystem::path dir = file.parent_path().empty() ? "." : file.parent_path();
  // An index left in WAL mode (a killed build, or one built before builds ended in rollback
  // mode) is read through an -shm file that SQLite must create beside it.
  if ((base == SQLITE_READONLY || base == SQLITE_CANTOPEN) && access(dir.c_str(), W_OK) != 0)
    throw Error(path_, "cannot read: the index is in write-ahead-log mode and SQLite must write " +
                           file.filename().string() +
                           "-shm beside it, but the directory is not "
                           "writable (finish the build with --append as a user who can write "
                           "there)");
  if (base == SQLITE_NOTADB) throw Error(path_, "cannot read: not an SQLite database");
  fail("cannot read");
}

Db::~Db() { sqlite3_close(db_); }
int64_t Db::last_rowid() const { return sqlite3_last_insert_rowid(db_); }

void Db::fail(const std::string& what) const {
  throw Error(path_, what + ": " + sqlite3_errmsg(db_));
}

void Db::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error(path_, msg);
  }
}

Stmt::Stmt(const Db& db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db.raw(), sql.c_str(), int(sql.size()), &s_, nullptr) != SQLITE_OK)
    db.fail("prepare");
}
Stmt::~Stmt() { sqlite3_finalize(s_); }

Stmt& Stmt::bind(int i, std::string_view s) {
  if (sqlite3_bind_text(s_, i, s.data(), int(s.size()), SQLITE_TRANSIENT) != SQLITE_OK)
    db_.fail("bind");
  return *this;
}
Stmt& Stmt::bind(int i, int64_t v) {
  if (sqlite3_bind_int64(s_, i, v) != SQLITE_OK) db_.fail("bind");
  return *this;
}
bool Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail("query");
}
void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}
int64_t Stmt::int64(int col) const { return sqlite3_column_int64(s_, col); }
double Stmt::real(int col) const { return sqlite3_column_double(s_, col); }
std::string Stmt::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  return p ? std::string(p, size_t(sqlite3_column_bytes(s_, col))) : std::string();
}
bool Stmt::is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

}  // namespace ragform::retrieval::sql
