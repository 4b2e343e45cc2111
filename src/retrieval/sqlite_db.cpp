#include "retrieval/sqlite_db.h"

#include <sqlite3.h>

#include "base/error.h"

namespace ragform::retrieval::sql {

Db::Db(const std::string& path, bool readonly) : path_(path) {
  int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  // NOMUTEX: one connection per thread (the retriever opens one per worker).
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error("index", path + ": cannot open: " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);
}

Db::~Db() { sqlite3_close(db_); }
int64_t Db::last_rowid() const { return sqlite3_last_insert_rowid(db_); }

void Db::fail(const std::string& what) const {
  throw Error("index", path_ + ": " + what + ": " + sqlite3_errmsg(db_));
}

void Db::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw Error("index", path_ + ": " + msg);
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
