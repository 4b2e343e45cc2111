#include "retrieval/corpus.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "eval/jsonl.h"
#include "text/utf8.h"

namespace ragform::retrieval {

namespace {

std::string chomp_cr(std::string_view s) {
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return std::string(s);
}

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

// One field of a JSON corpus record: a string (or, for the id, an integer as DPR writes it).
std::string string_field(const nlohmann::json& row, const char* name, bool required,
                         bool integer_ok) {
  auto it = row.find(name);
  if (it == row.end() || it->is_null()) {
    if (required) throw eval::RowError(std::string("missing field '") + name + "'");
    return {};
  }
  if (it->is_string()) return it->get<std::string>();
  if (integer_ok && it->is_number_integer()) return it->dump();
  throw eval::RowError(std::string("field '") + name + "': expected string, got " +
                       it->type_name());
}

void check_passage(const Passage& p) {
  if (p.id.empty()) throw eval::RowError("empty id");
  if (p.text.empty() && p.title.empty()) throw eval::RowError("empty title and text");
}

}  // namespace

bool is_tsv_header(std::string_view line) { return chomp_cr(line) == "id\ttext\ttitle"; }

Passage parse_tsv_line(std::string_view line) {
  const std::string s = chomp_cr(line);
  size_t t1 = s.find('\t');
  size_t t2 = t1 == std::string::npos ? t1 : s.find('\t', t1 + 1);
  size_t n_tabs = 0;
  for (char c : s) n_tabs += c == '\t';
  if (n_tabs != 2)
    throw Error("expected 3 tab-separated fields (id, text, title), got " +
                std::to_string(n_tabs + 1));
  Passage p;
  p.id = s.substr(0, t1);
  p.text = s.substr(t1 + 1, t2 - t1 - 1);
  p.title = s.substr(t2 + 1);
  // DPR's TSV quotes a text that holds quotes or tabs CSV-style ("..." with "" inside).
  if (p.text.size() >= 2 && p.text.front() == '"' && p.text.back() == '"') {
    std::string u;
    for (size_t i = 1; i + 1 < p.text.size(); ++i) {
      u += p.text[i];
      if (p.text[i] == '"' && p.text[i + 1] == '"') ++i;
    }
    p.text = std::move(u);
  }
  if (p.id.empty()) throw Error("empty id");
  if (p.text.empty() && p.title.empty()) throw Error("empty title and text");
  return p;
}

struct CorpusReader::Impl {
  std::string path;
  CorpusFormat format = CorpusFormat::Jsonl;
  uint64_t size = 0;
  std::unique_ptr<eval::JsonRecordReader> json;
  std::ifstream tsv;
  size_t line = 0;
};

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// The first bytes of a corpus, enough to decide its format.
struct Probe {
  bool gzip = false;
  std::string first_line;  // the first non-blank line, without a UTF-8 BOM (may be cut short)
  size_t first_line_no = 0;
};

Probe probe_corpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw eval::DataError(path, 0, std::string("cannot open: ") + std::strerror(errno));
  std::string head(64 << 10, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  Probe p;
  p.gzip = head.size() >= 2 && head[0] == '\x1f' && head[1] == '\x8b';
  if (p.gzip) return p;
  if (head.rfind(kBom, 0) == 0) head.erase(0, kBom.size());
  size_t at = 0, line = 1;
  while (at < head.size()) {
    size_t nl = head.find('\n', at);
    std::string_view l = std::string_view(head).substr(at, nl == std::string::npos ? nl : nl - at);
    if (!blank(l)) {
      p.first_line = std::string(l);
      p.first_line_no = line;
      break;
    }
    if (nl == std::string::npos) break;
    at = nl + 1;
    ++line;
  }
  return p;
}

bool ends_with(const std::string& s, std::string_view tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Why the line is not UTF-8 (as the JSON reader says it), or "".
std::string utf8_problem(std::string_view line) {
  size_t bad = 0;
  return text::is_valid_utf8(line, &bad) ? std::string() : text::describe_invalid_utf8(line, bad);
}

}  // namespace

CorpusReader::CorpusReader(std::string path) : impl_(std::make_unique<Impl>()) {
  impl_->path = std::move(path);
  const std::string& file = impl_->path;
  std::error_code ec;
  impl_->size = std::filesystem::file_size(file, ec);
  if (ec) impl_->size = 0;
  // The bytes decide, never the name: gzip, or a first line that starts as JSON does, is JSONL;
  // anything else is DPR TSV. A JSONL corpus is read line by line from its first line on, so a
  // bad first line gets the message the same line would get further down.
  const Probe p = probe_corpus(file);
  if (!p.gzip && ends_with(file, ".gz"))
    throw eval::DataError(file, 0,
                          "not gzip data: the name ends in .gz, but the file does not start with "
                          "gzip's magic bytes 1F 8B (a broken download or copy?)");
  if (!p.gzip && p.first_line_no == 0 && impl_->size < (64 << 10))
    throw eval::DataError(file, 0, "empty file");
  const size_t b = p.first_line.find_first_not_of(" \t");
  const char c0 = b == std::string::npos ? 0 : p.first_line[b];
  if (p.gzip || c0 == '{' || c0 == '[') {
    const std::string rest = b == std::string::npos ? "" : chomp_cr(p.first_line.substr(b + 1));
    if (!p.gzip && blank(rest))
      throw eval::DataError(file, p.first_line_no,
                            std::string("expected JSONL (one passage per line), got a JSON "
                                        "document spread over lines (a lone '") +
                                c0 + "' opens it)");
    eval::ReadOptions ro;
    ro.lines_only = true;
    impl_->format = CorpusFormat::Jsonl;
    impl_->json = std::make_unique<eval::JsonRecordReader>(file, ro);
  } else {
    impl_->format = CorpusFormat::Tsv;
    impl_->tsv.open(file, std::ios::binary);
    if (!impl_->tsv)
      throw eval::DataError(file, 0, std::string("cannot open: ") + std::strerror(errno));
  }
}

CorpusReader::~CorpusReader() = default;

bool CorpusReader::next(Passage& p) {
  auto& im = *impl_;
  if (im.format == CorpusFormat::Jsonl) {
    eval::JsonRow row;
    if (!im.json->next(row)) return false;
    try {
      p.id = string_field(row.value, "id", true, true);
      p.title = string_field(row.value, "title", false, false);
      p.text = string_field(row.value, "text", true, false);
      check_passage(p);
    } catch (const eval::RowError& e) {
      im.json->reject(row, e.what());
    }
    p.line = row.line;
    return true;
  }
  std::string s;
  while (std::getline(im.tsv, s)) {
    ++im.line;
    if (im.line == 1 && s.rfind(kBom, 0) == 0) s.erase(0, kBom.size());
    if (blank(s)) continue;
    // Binary data or another encoding: said as such, not as a count of tab-separated fields.
    if (std::string why = utf8_problem(s); !why.empty())
      throw eval::DataError(im.path, im.line, why);
    if (im.line == 1 && is_tsv_header(s)) continue;
    try {
      p = parse_tsv_line(s);
    } catch (const Error& e) {
      throw eval::DataError(im.path, im.line, e.what());
    }
    p.line = im.line;
    return true;
  }
  if (im.tsv.bad()) throw eval::DataError(im.path, im.line, "read error");
  return false;
}

CorpusFormat CorpusReader::format() const { return impl_->format; }
const std::string& CorpusReader::path() const { return impl_->path; }
uint64_t CorpusReader::file_size() const { return impl_->size; }

}  // namespace ragform::retrieval
