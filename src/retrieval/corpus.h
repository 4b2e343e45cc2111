// Streaming reader of a retrieval corpus: one passage {id, title, text} at a time, so an index
// build holds one batch, never the corpus.
//
// Accepted formats (detected from the bytes, never from the file name): gzip, or a first
// non-blank line (after a UTF-8 byte order mark) that starts with '{' or '[', is JSONL; anything
// else is DPR TSV.
//   JSONL    one object per line with string fields "id", "title", "text" (a numeric id is
//            accepted and written in decimal, as DPR's JSON files do); plain or gzip, read with
//            eval::JsonRecordReader (eval/jsonl.h) line by line from the first line on, so a bad
//            first line gets the reason the same bytes get on any other line.
//   DPR TSV  `id \t text \t title` per line (psgs_w100.tsv), an optional header line
//            "id\ttext\ttitle"; exactly three tab-separated fields; UTF-8; plain text only.
// A name ending in .gz whose bytes are not gzip is an error of its own (a broken download), as
// is a JSON document spread over lines (a lone '[' or '{' on the first line).
// A passage needs a non-empty id and text (title may be empty). Every bad line throws
// eval::DataError "<file>:<line>: <reason>": missing field, wrong type, bad JSON, wrong number of
// TSV fields. Duplicate ids are found by the index (bm25_index.h), which knows what it holds.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace ragform::retrieval {

struct Passage {
  std::string id;
  std::string title;
  std::string text;
  size_t line = 0;  // 1-based line of the corpus file it came from (0 = not from a file)
};

enum class CorpusFormat { Jsonl, Tsv };

// Parses one DPR TSV line (without its newline; a trailing '\r' is ignored). Throws
// ragform::Error (the reason alone, e.g. "expected 3 tab-separated fields (id, text, title), got
// 2") for a bad line. Exposed for the fuzz target and tests.
Passage parse_tsv_line(std::string_view line);
// True for DPR's header line "id\ttext\ttitle".
bool is_tsv_header(std::string_view line);

class CorpusReader {
 public:
  // Opens `path` and detects its format; throws eval::DataError for an unreadable or empty file.
  explicit CorpusReader(std::string path);
  ~CorpusReader();
  CorpusReader(const CorpusReader&) = delete;
  CorpusReader& operator=(const CorpusReader&) = delete;

  // The next passage; false at the end. Throws eval::DataError "<file>:<line>: <reason>".
  bool next(Passage& p);
  CorpusFormat format() const;
  const std::string& path() const;
  // Bytes of the (uncompressed or compressed) file, for a progress total; 0 when unknown.
  uint64_t file_size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ragform::retrieval
