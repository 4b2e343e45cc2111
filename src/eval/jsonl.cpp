// Streaming JSON record reader: byte source (plain or gzip via zlib), line splitter, layout
// detection, and a small scanner that cuts JSON documents into records. See jsonl.h.
#include "eval/jsonl.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include "base/json_file.h"
#include "base/json_release.h"
#include "base/paths.h"
#include "text/utf8.h"

namespace ragform::eval {

DataError::DataError(std::string file, size_t line, std::string reason, bool stream_error)
    : Error(line ? file + ":" + std::to_string(line) : file, reason),
      file_(std::move(file)),
      line_(line),
      reason_(std::move(reason)),
      stream_error_(stream_error) {}

const char* layout_name(JsonLayout l) {
  switch (l) {
    case JsonLayout::Lines:
      return "jsonl";
    case JsonLayout::Array:
      return "json-array";
    case JsonLayout::Object:
      return "json-object";
    case JsonLayout::Single:
      return "json";
  }
  return "?";
}

std::pair<size_t, size_t> line_col_of(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  size_t nl = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  size_t col = (nl == std::string_view::npos || nl >= offset) ? offset + 1 : offset - nl;
  return {line, col};
}

namespace {

// The input itself is broken; the reader adds the line.
struct StreamFailure {
  std::string reason;
};

constexpr size_t kChunk = 1 << 20;

// Bytes of a file, gunzipped when it starts with the gzip magic bytes.
class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    check_path(path);
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) throw DataError(path, 0, std::string("cannot open: ") + std::strerror(errno), true);
    in_.resize(1 << 16);
    try {
      fill();  // a directory opens, and fails here (EISDIR): that was an uncaught throw, SIGABRT
    } catch (const StreamFailure& f) {
      std::fclose(f_);
      f_ = nullptr;
      throw DataError(path, 0, f.reason, true);
    }
    gzip_ = avail_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_) {
      std::memset(&zs_, 0, sizeof(zs_));
      if (inflateInit2(&zs_, 15 + 16) != Z_OK)
        throw DataError(path, 0, "zlib initialisation failed");
      zinit_ = true;
    }
  }
  ~ByteSource() {
    if (zinit_) inflateEnd(&zs_);
    if (f_) std::fclose(f_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  bool gzip() const { return gzip_; }
  uint64_t file_bytes() const { return file_bytes_; }

  // Decompresses the rest of the stream into nowhere; the gzip failure, if there is one. Used when
  // a decoded line is bad: deflate corruption often decodes silently to garbage and is only
  // detected later (bad code, CRC-32), so the gzip error is the real reason.
  std::optional<std::string> verify_rest() {
    std::vector<char> sink(kGzipStep);
    try {
      while (read(sink.data(), sink.size()) > 0) {
      }
    } catch (const StreamFailure& f) {
      return f.reason;
    }
    return std::nullopt;
  }

  // Up to `cap` bytes into `out`; 0 at the end. Throws StreamFailure for I/O and gzip errors.
  size_t read(char* out, size_t cap) {
    if (!gzip_) return read_plain(out, cap);
    // Small steps, so that the lines decoded before a corrupt spot are delivered before the error;
    // the output of the step that fails is dropped (it may already be garbage).
    return read_gzip(out, std::min(cap, kGzipStep));
  }
  static constexpr size_t kGzipStep = 16 << 10;

 private:
  // Reads more of the file into in_ (after any unconsumed bytes); false at EOF.
  bool fill() {
    if (eof_) return false;
    if (start_ > 0 && avail_ > 0) std::memmove(in_.data(), in_.data() + start_, avail_);
    start_ = 0;
    size_t got = std::fread(in_.data() + avail_, 1, in_.size() - avail_, f_);
    if (got == 0) {
      if (std::ferror(f_)) throw StreamFailure{std::string("read error: ") + std::strerror(errno)};
      eof_ = true;
      return false;
    }
    avail_ += got;
    file_bytes_ += got;
    return true;
  }

  size_t read_plain(char* out, size_t cap) {
    if (avail_ == 0 && !fill()) return 0;
    size_t n = std::min(cap, avail_);
    std::memcpy(out, in_.data() + start_, n);
    start_ += n;
    avail_ -= n;
    return n;
  }

  size_t read_gzip(char* out, size_t cap) {
    if (finished_) return 0;
    zs_.next_out = reinterpret_cast<Bytef*>(out);
    zs_.avail_out = static_cast<uInt>(cap);
    while (zs_.avail_out == cap) {
      if (avail_ == 0) fill();
      zs_.next_in = in_.data() + start_;
      zs_.avail_in = static_cast<uInt>(avail_);
      int ret = inflate(&zs_, Z_NO_FLUSH);
      size_t used = avail_ - zs_.avail_in;
      start_ += used;
      avail_ -= used;
      if (ret == Z_STREAM_END) {
        // One gzip member done (zlib checked its CRC-32 and length). Another may follow.
        if (avail_ < 2) fill();
        if (avail_ < 2) fill();
        if (avail_ == 0) {
          finished_ = true;
          break;
        }
        size_t at = consumed_before_member_ + zs_.total_in;
        if (avail_ < 2 || in_[start_] != 0x1f || in_[start_ + 1] != 0x8b)
          throw StreamFailure{
              "corrupt gzip: unexpected data after the gzip stream at compressed byte " +
              std::to_string(at)};
        consumed_before_member_ = at;
        inflateReset(&zs_);
        continue;
      }
      if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT || ret == Z_STREAM_ERROR) {
        throw StreamFailure{"corrupt gzip data (detected at compressed byte " +
                            std::to_string(consumed_before_member_ + zs_.total_in) + " of " +
                            std::to_string(file_bytes_) + (eof_ ? "" : "+") +
                            "): " + (zs_.msg ? zs_.msg : "zlib error " + std::to_string(ret))};
      }
      if (ret == Z_MEM_ERROR) throw StreamFailure{"gzip: out of memory"};
      if (ret == Z_BUF_ERROR && eof_ && avail_ == 0) {
        throw StreamFailure{"truncated gzip stream: the file ends after " +
                            std::to_string(file_bytes_) +
                            " bytes, inside a gzip member (incomplete download or copy?)"};
      }
    }
    return cap - zs_.avail_out;
  }

  std::string path_;
  FILE* f_ = nullptr;
  std::vector<unsigned char> in_;
  size_t start_ = 0, avail_ = 0;  // unconsumed bytes are in_[start_, start_ + avail_)
  bool eof_ = false;
  uint64_t file_bytes_ = 0;
  bool gzip_ = false, zinit_ = false, finished_ = false;
  z_stream zs_{};
  uint64_t consumed_before_member_ = 0;
};

// Splits a ByteSource into lines without copying each line.
class LineSource {
 public:
  explicit LineSource(ByteSource& src) : src_(src) {}

  // The next line (without "\n"), valid until the next call; false at the end.
  bool next(std::string_view& line, bool& newline) {
    for (;;) {
      size_t p = buf_.find('\n', scan_);
      if (p != std::string::npos) {
        line = std::string_view(buf_).substr(pos_, p - pos_);
        pos_ = scan_ = p + 1;
        newline = true;
        return true;
      }
      scan_ = buf_.size();
      if (!fill()) {
        nul();
        if (pos_ < buf_.size()) {
          line = std::string_view(buf_).substr(pos_);
          pos_ = scan_ = buf_.size();
          newline = false;
          return true;
        }
        return false;
      }
    }
  }
  // Everything not yet returned by next(). Bounded by kMaxLineBytes as a line is.
  std::string rest() {
    while (fill()) {
    }
    nul();
    std::string r = buf_.substr(pos_);
    pos_ = scan_ = buf_.size();
    return r;
  }
  uint64_t bytes_seen() const { return bytes_; }

 private:
  // The line being read ends at a NUL byte: the file's error.
  void nul() const {
    if (nul_at_)
      throw StreamFailure{"a NUL byte at byte " + std::to_string(*nul_at_) +
                          ": not a UTF-8 text file (JSON has no NUL bytes)"};
  }
  bool fill() {
    if (eof_) return false;
    buf_.erase(0, pos_);
    scan_ -= pos_;
    pos_ = 0;
    size_t old = buf_.size();
    buf_.resize(old + kChunk);
    size_t got = 0;
    try {
      got = src_.read(buf_.data() + old, kChunk);
    } catch (...) {
      buf_.resize(old);
      throw;
    }
    buf_.resize(old + got);
    // JSON holds no NUL byte (a string escapes it as \u0000): a file with one is not JSON text
    // (/dev/zero was read into memory at 400 MB/s until it ran out). UTF-16 text has them too;
    // with its byte-order mark it is named as such where the first line is read.
    if (bytes_ == 0 && got >= 2 &&
        ((buf_[old] == '\xFF' && buf_[old + 1] == '\xFE') ||
         (buf_[old] == '\xFE' && buf_[old + 1] == '\xFF')))
      utf16_bom_ = true;
    // The lines before it are delivered; the one holding it is the error (nul()).
    if (const void* z = utf16_bom_ ? nullptr : std::memchr(buf_.data() + old, 0, got)) {
      const size_t at = size_t(static_cast<const char*>(z) - buf_.data());
      nul_at_ = bytes_ + (at - old);
      buf_.resize(at);
      bytes_ += at - old;
      eof_ = true;
      return at > old;
    }
    bytes_ += got;
    // A line (or a JSON document over several lines) that never ends is refused at the bound.
    if (buf_.size() - pos_ > kMaxLineBytes)
      throw StreamFailure{"a line over the limit of " + std::to_string(kMaxLineBytes) +
                          " bytes (after byte " + std::to_string(bytes_ - (buf_.size() - pos_)) +
                          ")"};
    if (got == 0) eof_ = true;
    return got > 0;
  }

  ByteSource& src_;
  std::string buf_;
  size_t pos_ = 0, scan_ = 0;
  bool eof_ = false, utf16_bom_ = false;
  std::optional<uint64_t> nul_at_;  // the file's first NUL byte, where reading stopped
  uint64_t bytes_ = 0;
};

bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}
bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// One past the closing quote of the JSON string starting at s[pos] == '"'; npos if unterminated.
size_t scan_string(std::string_view s, size_t pos) {
  for (size_t i = pos + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return std::string_view::npos;
}

// One past the JSON value starting at s[pos]; npos if the text ends first. Only strings and
// nesting are tracked here; nlohmann validates the value afterwards.
size_t scan_value(std::string_view s, size_t pos) {
  if (pos >= s.size()) return std::string_view::npos;
  char c = s[pos];
  if (c == '"') return scan_string(s, pos);
  if (c == '{' || c == '[') {
    int depth = 0;
    for (size_t i = pos; i < s.size(); ++i) {
      char ch = s[i];
      if (ch == '"') {
        i = scan_string(s, i);
        if (i == std::string_view::npos) return i;
        --i;
      } else if (ch == '{' || ch == '[') {
        ++depth;
      } else if (ch == '}' || ch == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return std::string_view::npos;
  }
  size_t i = pos;
  while (i < s.size() && !is_ws(s[i]) && s[i] != ',' && s[i] != ']' && s[i] != '}') ++i;
  return i;
}

const char* json_type_name(const nlohmann::json& j) { return j.type_name(); }

}  // namespace

struct JsonRecordReader::Impl {
  std::string path;
  ReadOptions opts;
  ReadStats stats;
  std::optional<ByteSource> src;
  std::optional<LineSource> lines;
  JsonLayout layout = JsonLayout::Lines;
  bool done = false;
  size_t line_no = 0;  // JSONL: lines consumed so far
  size_t index = 0;    // records seen (good or bad)

  // JSONL: the first non-blank line, read during detection and not yet handed out.
  std::optional<std::string> pending;
  bool pending_newline = true;

  // Documents: the text from the first non-blank line on, which is line doc_base.
  std::string doc;
  size_t doc_base = 1, doc_pos = 0;
  size_t lc_pos = 0, lc_line = 1;  // incremental line counter over doc
  char doc_close = ']';

  size_t doc_line_at(size_t off) {
    if (off < lc_pos) {
      lc_pos = 0;
      lc_line = 1;
    }
    lc_line += static_cast<size_t>(std::count(doc.begin() + static_cast<long>(lc_pos),
                                              doc.begin() + static_cast<long>(off), '\n'));
    lc_pos = off;
    return doc_base + lc_line - 1;
  }

  void bad(size_t line, const std::string& reason, bool stream = false) {
    if (!opts.skip_bad) {
      if (!stream && src && src->gzip() && !done) {
        if (auto gz = src->verify_rest())
          throw DataError(
              path, line,
              *gz + "; the decompressed text is already garbage on this line (" + reason + ")",
              true);
      }
      throw DataError(path, line, reason, stream);
    }
    ++stats.rows_bad;
    if (stats.first_bad.size() < opts.keep_reasons) stats.first_bad.push_back({line, reason});
    if (stream) {
      stats.stream_error = true;
      stats.stream_error_at = {line, reason};
      done = true;
    }
  }

  // Validates and parses one record's text starting at `line`. False if it was bad (skip mode).
  bool parse_record(std::string_view text, size_t line, bool last_without_newline, JsonRow& row) {
    row.line = line;
    row.index = index++;
    size_t bad_at = 0;
    if (!text::is_valid_utf8(text, &bad_at)) {
      auto [rl, col] = line_col_of(text, bad_at);
      bad(line + rl - 1, text::describe_invalid_utf8(text.substr(bad_at - (col - 1)), col - 1));
      return false;
    }
    try {
      row.value = parse_json_text(text);
    } catch (const JsonTextError& e) {
      const std::string msg = e.without_line();
      // The parser ran out of input: the record was cut off (inside a string or not).
      bool truncated =
          e.detail().find("unexpected end of input") != std::string::npos ||
          (e.at_end() && e.detail().find("missing closing quote") != std::string::npos);
      std::string reason =
          truncated ? "truncated record (the JSON ends early): " + msg : "invalid JSON: " + msg;
      if (truncated && last_without_newline) reason += " [last line, no newline at end of file]";
      bad(line + e.line() - 1, reason);
      return false;
    }
    if (!row.value.is_object()) {
      bad(line, std::string("expected a JSON object as record, got ") + json_type_name(row.value));
      return false;
    }
    ++stats.rows_ok;
    return true;
  }

  static std::string hex(unsigned char c) {
    const char* d = "0123456789ABCDEF";
    return {d[c >> 4], d[c & 15]};
  }
  // A byte for a message: 'x' when printable ASCII, else "byte 0xB1" (the byte alone may be part
  // of a UTF-8 sequence, and a message must stay valid UTF-8 for `data check --json`).
  static std::string shown_byte(char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7F ? std::string("'") + c + "'" : "byte 0x" + hex(u);
  }

  void detect() {
    src.emplace(path);
    lines.emplace(*src);
    std::string_view l;
    bool nl = true;
    try {
      for (;;) {
        if (!lines->next(l, nl)) {
          std::string why = lines->bytes_seen() == 0
                                ? (src->gzip() ? "empty file (the gzip stream holds 0 bytes)"
                                               : "empty file (0 bytes)")
                                : "empty file (only blank lines, no records)";
          bad(0, why, true);
          return;
        }
        ++line_no;
        if (line_no == 1 && l.substr(0, 3) == "\xEF\xBB\xBF") l.remove_prefix(3);  // UTF-8 BOM
        if (!is_blank(l)) break;
        ++stats.blank_lines;
      }
    } catch (const StreamFailure& f) {
      bad(line_no + 1, f.reason, true);
      return;
    }
    std::string first(l);
    if (!first.empty() && first.back() == '\r') first.pop_back();
    if (opts.lines_only) {
      pending = std::move(first);
      pending_newline = nl;
      return;
    }
    size_t b = first.find_first_not_of(" \t");
    char c0 = first[b];
    if (c0 == '{') {
      auto j = parse_json_or_discarded(first);
      // A whole record's value, freed without allocating if memory runs out before it is
      // (base/json_release.h; pass 12: a 14.7 MB record under ulimit -v ended in std::terminate).
      ReleaseAtExit release(j);
      // A one-line object whose members are all objects may be a keyed document written on one
      // line (PoisonedRAG's hotpotqa.json): decided below by whether more lines follow.
      bool maybe_keyed =
          j.is_object() && !j.empty() &&
          std::all_of(j.begin(), j.end(), [](const auto& v) { return v.is_object(); });
      if (!j.is_discarded() && !maybe_keyed) {
        pending = std::move(first);
        pending_newline = nl;
        return;  // JSONL
      }
    }
    if (c0 != '{' && c0 != '[') {
      pending = std::move(first);
      pending_newline = nl;
      return;  // JSONL; its first line will be reported as invalid JSON
    }
    // Possibly one JSON document spanning several lines: read it all.
    std::string rest;
    try {
      rest = lines->rest();
    } catch (const StreamFailure& f) {
      bad(line_no + 1, f.reason, true);
      return;
    }
    doc = first + (nl ? "\n" : "") + rest;
    doc_base = line_no;
    size_t end = scan_value(doc, b);
    bool whole = end != std::string_view::npos &&
                 std::all_of(doc.begin() + static_cast<long>(end), doc.end(), is_ws);
    if (c0 == '{' && !whole) {
      if (end == std::string_view::npos && first.find_last_not_of(" \t") == b) {
        // A lone "{" opening a document that never closes (a cut-off .json file).
        bad(doc_base, "truncated JSON document: the object opened on this line never closes", true);
        return;
      }
      // Not a single document: JSONL whose first line is broken. Serve lines from `doc`.
      doc_pos = first.size() + (nl ? 1 : 0);
      pending = std::move(first);
      pending_newline = nl;
      layout = JsonLayout::Lines;
      from_doc_lines = true;
      return;
    }
    doc_pos = b + 1;
    if (c0 == '[') {
      layout = JsonLayout::Array;
      doc_close = ']';
      return;
    }
    // An object document: keyed records if the first member's value is an object.
    size_t p = doc_pos;
    while (p < doc.size() && is_ws(doc[p])) ++p;
    bool keyed = false;
    if (p < doc.size() && doc[p] == '"') {
      size_t k = scan_string(doc, p);
      if (k != std::string_view::npos) {
        while (k < doc.size() && is_ws(doc[k])) ++k;
        if (k < doc.size() && doc[k] == ':') {
          ++k;
          while (k < doc.size() && is_ws(doc[k])) ++k;
          keyed = k < doc.size() && doc[k] == '{';
        }
      }
    }
    if (keyed) {
      layout = JsonLayout::Object;
      doc_close = '}';
    } else {
      layout = JsonLayout::Single;
      doc_pos = b;
    }
  }

  bool from_doc_lines = false;  // JSONL lines served from `doc` (after a failed document probe)

  // The next JSONL line (from the stream or from `doc`).
  bool next_line(std::string_view& l, bool& nl) {
    if (!from_doc_lines) return lines->next(l, nl);
    if (doc_pos >= doc.size()) return false;
    size_t p = doc.find('\n', doc_pos);
    nl = p != std::string::npos;
    if (!nl) p = doc.size();
    l = std::string_view(doc).substr(doc_pos, p - doc_pos);
    doc_pos = nl ? p + 1 : p;
    return true;
  }

  bool next_jsonl(JsonRow& row) {
    row.key.clear();
    if (pending) {
      std::string first = std::move(*pending);
      pending.reset();
      if (parse_record(first, line_no, !pending_newline, row)) return true;
    }
    std::string_view l;
    bool nl = true;
    while (!done) {
      try {
        if (!next_line(l, nl)) {
          done = true;
          return false;
        }
      } catch (const StreamFailure& f) {
        bad(line_no + 1, f.reason, true);
        return false;
      }
      ++line_no;
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      if (is_blank(l)) {
        ++stats.blank_lines;
        continue;
      }
      if (parse_record(l, line_no, !nl, row)) return true;
    }
    return false;
  }

  bool next_doc(JsonRow& row) {
    std::string_view s(doc);
    while (!done) {
      if (layout == JsonLayout::Single) {
        done = true;
        row.key.clear();
        return parse_record(s.substr(doc_pos, scan_value(s, doc_pos) - doc_pos), doc_base, false,
                            row);
      }
      while (doc_pos < s.size() && is_ws(s[doc_pos])) ++doc_pos;
      if (doc_pos >= s.size()) {
        bad(doc_line_at(s.size()),
            std::string("truncated JSON document: missing closing '") + doc_close + "'", true);
        return false;
      }
      if (s[doc_pos] == doc_close && !after_comma) {
        done = true;
        size_t tail = doc_pos + 1;
        while (tail < s.size() && is_ws(s[tail])) ++tail;
        if (tail < s.size()) {
          bad(doc_line_at(tail), "broken JSON document: unexpected text after its end", true);
        }
        return false;
      }
      if (s[doc_pos] == doc_close) {
        bad(doc_line_at(doc_pos), "broken JSON document: trailing comma after the last record",
            true);
        return false;
      }
      if (index > 0 && !after_comma) {
        if (s[doc_pos] != ',') {
          bad(doc_line_at(doc_pos),
              std::string("broken JSON document: expected ',' or '") + doc_close +
                  "' between records, found " + shown_byte(s[doc_pos]),
              true);
          return false;
        }
        ++doc_pos;
        after_comma = true;
        continue;
      }
      after_comma = false;
      row.key.clear();
      if (layout == JsonLayout::Object) {
        size_t k = s[doc_pos] == '"' ? scan_string(s, doc_pos) : std::string_view::npos;
        if (k == std::string_view::npos) {
          bad(doc_line_at(doc_pos), "broken JSON document: expected a quoted record key", true);
          return false;
        }
        auto key = parse_json_or_discarded(s.substr(doc_pos, k - doc_pos));
        if (!key.is_string()) {
          bad(doc_line_at(doc_pos), "broken JSON document: invalid record key", true);
          return false;
        }
        row.key = key.get<std::string>();
        doc_pos = k;
        while (doc_pos < s.size() && is_ws(s[doc_pos])) ++doc_pos;
        if (doc_pos >= s.size() || s[doc_pos] != ':') {
          bad(doc_line_at(doc_pos),
              "broken JSON document: expected ':' after key \"" + row.key + "\"", true);
          return false;
        }
        ++doc_pos;
        while (doc_pos < s.size() && is_ws(s[doc_pos])) ++doc_pos;
      }
      size_t start = doc_pos;
      size_t end = scan_value(s, start);
      size_t line = doc_line_at(std::min(start, s.size()));
      if (end == std::string_view::npos || end == start) {
        bad(line,
            end == start ? "broken JSON document: expected a record"
                         : "truncated JSON document: the record starting here never ends",
            true);
        return false;
      }
      doc_pos = end;
      if (parse_record(s.substr(start, end - start), line, false, row)) return true;
    }
    return false;
  }
  bool after_comma = false;
};

JsonRecordReader::JsonRecordReader(std::string path, ReadOptions opts) : impl_(new Impl) {
  impl_->path = std::move(path);
  impl_->opts = opts;
  impl_->detect();
}

JsonRecordReader::~JsonRecordReader() = default;

bool JsonRecordReader::next(JsonRow& row) {
  if (impl_->done) return false;
  return impl_->layout == JsonLayout::Lines ? impl_->next_jsonl(row) : impl_->next_doc(row);
}

void JsonRecordReader::reject(const JsonRow& row, const std::string& reason) {
  if (impl_->opts.skip_bad && impl_->stats.rows_ok > 0) --impl_->stats.rows_ok;
  impl_->bad(row.line, reason);  // throws in strict mode
}

const ReadStats& JsonRecordReader::stats() const { return impl_->stats; }
const std::string& JsonRecordReader::path() const { return impl_->path; }
bool JsonRecordReader::gzip() const { return impl_->src && impl_->src->gzip(); }
JsonLayout JsonRecordReader::layout() const { return impl_->layout; }

ReadStats for_each_json_record(const std::string& path, const ReadOptions& opts,
                               const std::function<void(const JsonRow&)>& fn) {
  JsonRecordReader r(path, opts);
  JsonRow row;
  while (r.next(row)) {
    try {
      fn(row);
    } catch (const RowError& e) {
      r.reject(row, e.what());
    }
  }
  return r.stats();
}

}  // namespace ragform::eval
