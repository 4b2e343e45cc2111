// Private to retrieval/: a SQLite connection and prepared statements with RAII, every failure a
// ragform::Error naming the database file and SQLite's message.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace ragform::retrieval::sql {

class Db {
 public:
  // readonly: SQLITE_OPEN_READONLY (the file must exist); else read-write, created when missing.
  Db(const std::string& path, bool readonly);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  void exec(const std::string& sql);
  sqlite3* raw() const { return db_; }
  int64_t last_rowid() const;
  const std::string& path() const { return path_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void check_readable() const;  // throws Error "<path>: cannot read: <reason>"
  sqlite3* db_ = nullptr;
  std::string path_;
};

class Stmt {
 public:
  Stmt(const Db& db, const std::string& sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, std::string_view s);
  Stmt& bind(int i, int64_t v);
  // Steps once: true when a row is available, false when done. Throws on error.
  bool step();
  void reset();  // reset and clear bindings
  int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  bool is_null(int col) const;

 private:
  const Db& db_;
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace ragform::retrieval::sql
