// Freeing a JSON value without allocating. nlohmann's destructor of a non-empty array or object
// first moves its children onto a heap-allocated stack; it is noexcept, so when memory has just
// run out (a bad_alloc unwinding through a half-built or whole document) that allocation ends the
// process with std::terminate instead of letting the bad_alloc reach its handler (issue 40,
// pass 11: `data check` of a 26 MB record under `ulimit -v` aborted, and 8 concurrent 1 MB bodies
// killed a server under a memory limit).
#pragma once
#include <exception>

#include <nlohmann/json.hpp>

namespace ragform {

// Empties `v` from its leaves up, so that no value destroyed on the way owns children; `v` is
// then null. Recursion as deep as the value's nesting (bounded at parse: kMaxJsonDepth).
void release_json(nlohmann::json& v) noexcept;

// Releases a value when the scope it guards ends, however it ends, before the value's own
// destructor runs (declare it after the value). Releasing costs what the destructor would. For a
// request's body in the server: the largest values a process holds from a client, destroyed while
// other requests may have taken the memory left.
class ReleaseAtExit {
 public:
  explicit ReleaseAtExit(nlohmann::json& v) : v_(v) {}
  ~ReleaseAtExit() { release_json(v_); }
  ReleaseAtExit(const ReleaseAtExit&) = delete;
  ReleaseAtExit& operator=(const ReleaseAtExit&) = delete;

 private:
  nlohmann::json& v_;
};

// The same, only when the scope is left by an exception (a value being built, to be returned).
class ReleaseOnUnwind {
 public:
  explicit ReleaseOnUnwind(nlohmann::json& v) : v_(v), exceptions_(std::uncaught_exceptions()) {}
  ~ReleaseOnUnwind() {
    if (std::uncaught_exceptions() > exceptions_) release_json(v_);
  }
  ReleaseOnUnwind(const ReleaseOnUnwind&) = delete;
  ReleaseOnUnwind& operator=(const ReleaseOnUnwind&) = delete;

 private:
  nlohmann::json& v_;
  int exceptions_;
};

}  // namespace ragform
