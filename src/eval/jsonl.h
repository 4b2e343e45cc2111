// Streaming reader of JSON records from data files, where every error names the file, the line and
// the reason: a malformed line is reported with file, line number and reason, never skipped
// silently.
//
// Accepted input (detected from the bytes, never from the file name):
//   - compression: plain, or gzip (magic bytes 1F 8B; decompressed with zlib, concatenated gzip
//     members allowed, CRC and length checked by zlib);
//   - layout, decided from the first non-blank line:
//       Lines   JSONL: one JSON object per line; blank lines are skipped; a trailing "\r" is
//               ignored. Read line by line, so files of any size stream in constant memory.
//       Array   one JSON document `[ {record}, {record}, ... ]` (first non-blank byte is '[').
//       Object  one JSON document `{ "key": {record}, ... }` keyed by id (PoisonedRAG's
//               `nq.json`, pretty-printed, and `hotpotqa.json`, all on one line): either the
//               first line is not a complete JSON value and the first member's value is an
//               object, or the file is a single line holding an object whose members are all
//               objects. JsonRow::key holds the member name.
//       Single  one pretty-printed JSON object that is itself a record.
//     Documents are read into memory and cut into records with a small scanner, so each record
//     still has its own line number and a bad record does not hide the others.
//
// Reasons reported (DataError, "<file>:<line>: <reason>"): cannot open / read error; empty file;
// corrupt gzip data (zlib's message, compressed byte offset); truncated gzip stream; invalid UTF-8
// (byte offset within the line); invalid JSON (nlohmann's message); truncated record (the JSON
// ends early, e.g. a cut-off last line); a record that is not a JSON object; and whatever a caller
// rejects through RowError (wrong field type, missing field, ...).
//
// Skip mode (ReadOptions::skip_bad) counts bad rows instead of throwing, keeping the first few
// reasons. A broken stream (corrupt/truncated gzip, broken document structure, empty file) cannot
// be resynchronised: in skip mode it ends the input and is counted as one more bad row with
// ReadStats::stream_error set.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace ragform::eval {

// The longest line of a JSONL file, or JSON document spread over lines, that is read: 1 GiB
// (HotpotQA's training file is one 566 MB line). Longer is the file's error, naming the limit.
inline constexpr size_t kMaxLineBytes = size_t(1) << 30;

// A bad row or a broken file. what() is "<file>:<line>: <reason>" ("<file>: <reason>" when the
// error is not tied to a line, e.g. the file cannot be opened).
class DataError : public Error {
 public:
  DataError(std::string file, size_t line, std::string reason, bool stream_error = false);
  const std::string& file() const { return file_; }
  size_t line() const { return line_; }  // 1-based; 0 = whole file
  const std::string& reason() const { return reason_; }
  // True when the file itself is broken (I/O, gzip, document structure, empty) and reading
  // cannot continue past this point.
  bool stream_error() const { return stream_error_; }

 private:
  std::string file_;
  size_t line_;
  std::string reason_;
  bool stream_error_;
};

// Thrown by a row consumer (a loader validating fields) to reject the current row; the reader
// adds the file and line. The message is just the reason, e.g. "field 'answers': expected array
// of strings, got string".
class RowError : public Error {
 public:
  explicit RowError(const std::string& reason) : Error(reason) {}
};

enum class JsonLayout { Lines, Array, Object, Single };
const char* layout_name(JsonLayout l);  // "jsonl", "json-array", "json-object", "json"

struct BadRow {
  size_t line = 0;
  std::string reason;
};

struct ReadStats {
  size_t rows_ok = 0;             // records handed to the caller and accepted
  size_t rows_bad = 0;            // bad records (skip mode), including a stream error
  size_t blank_lines = 0;         // JSONL lines holding only whitespace
  bool stream_error = false;      // input ended early because the file itself is broken
  BadRow stream_error_at;         // where and why, when stream_error
  std::vector<BadRow> first_bad;  // the first ReadOptions::keep_reasons bad rows, in order
};

struct ReadOptions {
  bool skip_bad = false;     // count bad rows instead of throwing DataError
  size_t keep_reasons = 10;  // how many bad rows to keep in ReadStats::first_bad
  // JSONL only: every line is a record, whatever the first line looks like. For inputs that
  // accept no other layout (a retrieval corpus), so that a broken first line is reported as
  // the same line further down would be, not as a document of another layout.
  bool lines_only = false;
};

struct JsonRow {
  size_t line = 0;   // 1-based line where the record starts
  size_t index = 0;  // 0-based position among all records of the file, good or bad
  std::string key;   // Object layout: the member name; empty otherwise
  nlohmann::json value;
};

class JsonRecordReader {
 public:
  // Opens `path` and detects compression and layout. Strict mode throws DataError here for an
  // unreadable, empty or broken file; skip mode records it and next() returns false.
  explicit JsonRecordReader(std::string path, ReadOptions opts = {});
  ~JsonRecordReader();
  JsonRecordReader(const JsonRecordReader&) = delete;
  JsonRecordReader& operator=(const JsonRecordReader&) = delete;

  // The next well-formed record (a JSON object); false at the end of the input. A bad row throws
  // DataError (strict) or is counted and passed over (skip mode).
  bool next(JsonRow& row);
  // The caller found the row last returned by next() bad (e.g. a field of the wrong type): throws
  // DataError naming its line (strict) or moves it from rows_ok to rows_bad (skip mode).
  void reject(const JsonRow& row, const std::string& reason);

  const ReadStats& stats() const;
  const std::string& path() const;
  bool gzip() const;
  JsonLayout layout() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Calls fn for every good record. fn may throw RowError to reject a row (counted in skip mode,
// DataError naming the line otherwise). Returns the statistics.
ReadStats for_each_json_record(const std::string& path, const ReadOptions& opts,
                               const std::function<void(const JsonRow&)>& fn);

// Line (1-based) and column (1-based, in bytes) of byte `offset` in `text`.
std::pair<size_t, size_t> line_col_of(std::string_view text, size_t offset);

}  // namespace ragform::eval
