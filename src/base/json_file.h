// JSON text and whole JSON documents read from files (a calibration profile, word vectors, an
// index's metadata), with every failure a user can act on named the same way everywhere:
//   - the file cannot be read: FileError "<path>: <strerror>" (so the Python module raises
//     FileNotFoundError / PermissionError);
//   - the text is not JSON, or holds a number no double can hold ({"x": 1e309}): the position
//     (line and column) and the reason, without the JSON library's internal tag. nlohmann::json
//     reports the second case as out_of_range 406 with no position at all, so a caller that caught
//     only parse_error printed the library's raw text; parse_json_text() finds the position of
//     both and throws one JsonTextError.
//   - the text nests arrays and objects deeper than kMaxJsonDepth: refused before it is parsed
//     ("nesting deeper than 128 levels"), so no later recursion over the value (dump, copy,
//     conversion) can overflow a stack: ~75,000 levels in a 150 KB body crashed the server;
// What the document must hold is the caller's to check. Every JSON text that comes from outside
// the process (files, request bodies, records, answers of remote servers, the run store) is
// parsed here, never with nlohmann::json::parse directly.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"

namespace ragform {

// A JSON text that does not parse. what() is "<kind> at line L, column C: <detail>", e.g.
// "parse error at line 3, column 8: syntax error while parsing value - invalid literal; last read:
// '"b": o'" or "number out of range at line 1, column 10: 1e309 does not fit a double".
class JsonTextError : public Error {
 public:
  JsonTextError(std::string kind, std::string detail, size_t line, size_t column, bool at_end);
  const std::string& kind() const { return kind_; }      // "parse error", "number out of range"
  const std::string& detail() const { return detail_; }  // the reason without the position
  size_t line() const { return line_; }                  // 1-based, within the parsed text
  size_t column() const { return column_; }              // 1-based, in bytes
  // The parser ran out of text (a cut-off document or record).
  bool at_end() const { return at_end_; }
  // "<kind> at column C: <detail>", for callers that name the line themselves.
  std::string without_line() const;

 private:
  std::string kind_, detail_;
  size_t line_, column_;
  bool at_end_;
};

// How deep arrays and objects may nest in any JSON (or YAML) input. ragform's own documents nest
// at most ~6 levels; 128 leaves room for metadata a user carries along, and is far below the
// depth at which a recursive walk of the value exhausts a thread's stack (~10^4 levels).
inline constexpr int kMaxJsonDepth = 128;

// Parses `text`; throws JsonTextError (kind "too deep" when it nests deeper than kMaxJsonDepth).
nlohmann::json parse_json_text(std::string_view text);

// Parses `text` through `sax` (nlohmann's SAX interface) without building a value: for a document
// too big to hold as a tree (100 MB of word vectors took 5.1 GB as one). Errors as above; what
// the consumer refuses is its own exception: its callbacks return true or throw.
void parse_json_text(std::string_view text, nlohmann::json_sax<nlohmann::json>& sax);

// Parses `text`, or returns a discarded value (is_discarded()) when it is not JSON or nests too
// deep: for callers that treat any bad text alike (json::parse(text, nullptr, false)).
nlohmann::json parse_json_or_discarded(std::string_view text);

// A compact rendering of `v` for an error message, at most about kExcerptBytes (base/excerpt.h):
// long strings and big containers are cut ("... (N bytes)" / "..."), never dumped whole.
std::string json_excerpt(const nlohmann::json& v);

// `what` names the document in the message ("profile", "word vectors", "dense index metadata").
// A text that is not JSON is Error "<path>:<line>: <what> is not valid JSON: <kind> at column C:
// <detail>". At most `max` bytes are read (base/mapped_file.h read_file_bytes): a bigger file, or
// one without end (/dev/zero), is refused naming the limit instead of filling the memory.
nlohmann::json read_json_file(const std::string& path, const std::string& what,
                              size_t max = kMaxTextFileBytes);
// The same for a file of settings that requests also take inline (C-NORM and tune profiles, bias
// curves, tune spaces): a text that is not JSON is a UsageError (CLI exit 2), as the document's
// other faults are, so each format stays one class (`ragform --help`). A file that cannot be
// read stays a FileError.
nlohmann::json read_settings_json_file(const std::string& path, const std::string& what);
// The same, the text parsed through `sax` (parse_json_text above).
void read_json_file(const std::string& path, const std::string& what,
                    nlohmann::json_sax<nlohmann::json>& sax, size_t max = kMaxTextFileBytes);

}  // namespace ragform
