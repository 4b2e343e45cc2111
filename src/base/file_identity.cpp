#include "base/file_identity.h"

#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <utility>

#include "base/error.h"
#include "base/excerpt.h"

namespace ragform {

namespace {
using Id = std::pair<unsigned long long, unsigned long long>;  // device, inode

bool identity(const std::string& path, Id& id) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  id = {static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino)};
  return true;
}

std::mutex g_mu;
// How many times each store is open (a process may open one store twice).
std::map<Id, int>& open_stores() {
  static std::map<Id, int> s;
  return s;
}

// Where `path` leads once every symlink on the way is followed, a dangling one included (a name
// linked to a store not yet created is that store: pass 12), absolute and normal.
std::filesystem::path resolved(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  for (int hops = 0; hops < 40 && fs::is_symlink(p, ec); ++hops) {
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) break;
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  const fs::path c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : c;
}
}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  Id ia, ib;
  if (identity(a, ia) && identity(b, ib)) return ia == ib;
  return resolved(a) == resolved(b);
}

OpenStoreMark::OpenStoreMark(const std::string& path) {
  Id id;
  if (!identity(path, id)) return;
  dev_ = id.first;
  ino_ = id.second;
  std::lock_guard<std::mutex> lock(g_mu);
  ++open_stores()[Id{dev_, ino_}];
  marked_ = true;
}

OpenStoreMark::~OpenStoreMark() {
  if (!marked_) return;
  std::lock_guard<std::mutex> lock(g_mu);
  auto& s = open_stores();
  if (auto it = s.find(Id{dev_, ino_}); it != s.end() && --it->second == 0) s.erase(it);
}

void refuse_open_store(const std::string& path, const std::string& what) {
  // The store itself, or one of SQLite's files beside it (its write-ahead log, shared memory or
  // journal: a profile written as STORE-wal was deleted with the log when the store closed, and
  // a second writer would read it as the log: pass 15).
  std::string store = path;
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    if (store.ends_with(suffix)) {
      store.resize(store.size() - std::strlen(suffix));
      break;
    }
  Id id;
  if (!identity(store, id)) return;
  std::lock_guard<std::mutex> lock(g_mu);
  if (open_stores().count(id))
    throw UsageError(what, excerpt(path) +
                               (store == path ? ": is the run store this command uses"
                                              : ": is a file of the run store this command uses") +
                               "; write the output elsewhere (replacing it would lose the "
                               "store's measurements)");
}

}  // namespace ragform
