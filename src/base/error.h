// One error policy for the library layers: internal code throws a typed
// exception whose message names the operation and the bad value; front ends (cli/, server/) catch
// it and turn it into an exit code or an HTTP status. Library code never calls exit().
#pragma once
#include <stdexcept>
#include <string>

namespace ragform {

// A runtime failure: bad input file, unsupported model, I/O error. CLI exit code 1.
// what() is "<where>: <why>", e.g. "gguf: model.gguf: tensor 'blk.3.attn_q.weight' offset ...".
class Error : public std::runtime_error {
 public:
  Error(const std::string& where, const std::string& why)
      : std::runtime_error(where + ": " + why) {}
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// A file that cannot be opened or read (missing, no permission, a directory). `err` is the errno
// value when there is one (0 otherwise), so a front end can tell "no such file" from the rest (the
// Python module raises FileNotFoundError / PermissionError / OSError from it).
class FileError : public Error {
 public:
  FileError(const std::string& where, const std::string& why, int err = 0)
      : Error(where, why), err_(err) {}
  int error_code() const { return err_; }

 private:
  int err_;
};

// The caller asked for something impossible (bad flag value, missing argument). CLI exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A prompt longer than the reader's context (n_ctx): a property of the prompt, not a failure of
// the reader, so a caller that fits prompts to a context (tune's cap) can tell it from the rest.
class ContextOverflow : public Error {
 public:
  using Error::Error;
};

// A capability the current Reader/backend does not have (e.g. attention over HTTP).
class NotSupported : public Error {
 public:
  using Error::Error;
};

}  // namespace ragform
