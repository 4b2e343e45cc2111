#include "retrieval/corpus.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "eval/jsonl.h"

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

CorpusReader::CorpusReader(std::string path) : impl_(std::make_unique<Impl>()) {
  impl_->path = std::move(path);
  std::error_code ec;
  impl_->size = std::filesystem::file_size(impl_->path, ec);
  if (ec) impl_->size = 0;
  // The first bytes decide: gzip or '{' -> JSONL, anything else -> TSV.
  std::ifstream probe(impl_->path, std::ios::binary);
  if (!probe) throw eval::DataError(impl_->path, 0, "cannot open");
  std::string first;
  char c;
  bool gzip = false;
  unsigned char m[2] = {0, 0};
  if (probe.get(c)) m[0] = static_cast<unsigned char>(c);
  if (probe.get(c)) m[1] = static_cast<unsigned char>(c);
  gzip = m[0] == 0x1f && m[1] == 0x8b;
  probe.clear();
  probe.seekg(0);
  char first_char = 0;
  while (probe.get(c))
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      first_char = c;
      break;
    }
  if (!gzip && first_char == 0) throw eval::DataError(impl_->path, 0, "empty file");
  if (gzip || first_char == '{') {
    impl_->format = CorpusFormat::Jsonl;
    impl_->json = std::make_unique<eval::JsonRecordReader>(impl_->path);
    if (impl_->json->layout() != eval::JsonLayout::Lines)
      throw eval::DataError(impl_->path, 0,
                            std::string("expected JSONL (one passage per line), got ") +
                                eval::layout_name(impl_->json->layout()));
  } else {
    impl_->format = CorpusFormat::Tsv;
    impl_->tsv.open(impl_->path, std::ios::binary);
    if (!impl_->tsv) throw eval::DataError(impl_->path, 0, "cannot open");
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
    if (blank(s)) continue;
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
