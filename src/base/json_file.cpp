#include "base/json_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unordered_set>
#include <vector>

#include "base/excerpt.h"
#include "base/json_error.h"
#include "base/json_release.h"
#include "base/paths.h"

namespace ragform {

namespace {

// A SAX consumer that builds nothing and keeps where the parser gave up: nlohmann::json's DOM
// parser passes that position to its error handler and then drops it from the out_of_range
// exception it throws, so a failed text is parsed a second time with this to find it.
struct ErrorPosition : nlohmann::json_sax<nlohmann::json> {
  size_t chars_read = 0;  // characters the lexer had read when it failed (the last one is bad)
  bool failed = false;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception&) override {
    chars_read = position;
    failed = true;
    return false;
  }
};

// 1-based line and column of byte `offset` of `text`.
std::pair<size_t, size_t> line_and_column(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, start = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') {
      ++line;
      start = i + 1;
    }
  return {line, offset - start + 1};
}

// nlohmann's parse_error text after its "parse error at line L, column C: " (or after the tag
// alone when there is no position).
std::string parse_error_detail(const std::string& what) {
  std::string m = json_error_text(what);
  const size_t col = m.find(", column ");
  if (col != std::string::npos) {
    const size_t colon = m.find(": ", col);
    if (colon != std::string::npos) return m.substr(colon + 2);
  }
  const std::string prefix = "parse error: ";
  return m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m;
}

// The token nlohmann names in "number overflow parsing '1e309'".
std::string overflow_token(const std::string& what) {
  const size_t a = what.find('\''), b = what.rfind('\'');
  return a != std::string::npos && b > a ? what.substr(a + 1, b - a - 1) : std::string();
}

[[noreturn]] void throw_at(std::string_view text, const ErrorPosition& pos, std::string kind,
                           std::string detail) {
  // The lexer stops on the bad character, which is the last one it read.
  size_t bad = pos.chars_read > 0 ? pos.chars_read - 1 : 0;
  // At the end of the text the error is on its last line, not on the empty "line" after a final
  // newline (a one-line file "{\n" was reported at :2:).
  if (!text.empty() && text.back() == '\n' && bad >= text.size() - 1) bad = text.size() - 1;
  auto [line, column] = line_and_column(text, bad);
  throw JsonTextError(std::move(kind), std::move(detail), line, column,
                      pos.failed && pos.chars_read >= text.size());
}

// Where the n-th key (0-based, document order) of a text that parsed up to it starts: the n-th
// string followed by ':' (after whitespace). Only for a duplicate key's message.
size_t key_offset(std::string_view text, size_t n) {
  size_t seen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') continue;
    const size_t start = i;
    for (++i; i < text.size() && text[i] != '"'; ++i)
      if (text[i] == '\\') ++i;
    size_t j = i + 1;
    while (j < text.size() && std::strchr(" \t\r\n", text[j]) != nullptr && text[j] != '\0') ++j;
    if (j < text.size() && text[j] == ':' && seen++ == n) return start;
  }
  return 0;
}

// Forwards every event to the caller's consumer and keeps where and why the parser gave up, so a
// streamed text's errors read as parse_json_text's. It also refuses a key its object already has
// (nlohmann keeps the last: `{"max_tokens":600,"max_tokens":1}` ran with 1, while a gateway or a
// validator reading the first saw 600; issue 40, pass 10).
struct Forward : nlohmann::json_sax<nlohmann::json> {
  Forward(nlohmann::json_sax<nlohmann::json>& consumer, std::string_view text)
      : to(consumer), text_(text) {}
  nlohmann::json_sax<nlohmann::json>& to;
  std::string_view text_;
  ErrorPosition pos;
  int id = 0;
  std::string what;
  std::vector<std::unordered_set<std::string>> keys;  // per open object (word vectors: 400k)
  size_t n_keys = 0;                                  // keys so far, in document order
  bool null() override { return to.null(); }
  bool boolean(bool b) override { return to.boolean(b); }
  bool number_integer(number_integer_t n) override { return to.number_integer(n); }
  bool number_unsigned(number_unsigned_t n) override { return to.number_unsigned(n); }
  bool number_float(number_float_t x, const string_t& s) override { return to.number_float(x, s); }
  bool string(string_t& s) override { return to.string(s); }
  bool binary(binary_t& b) override { return to.binary(b); }
  bool start_object(std::size_t n) override {
    keys.emplace_back();
    return to.start_object(n);
  }
  bool key(string_t& k) override {
    if (!keys.empty() && !keys.back().insert(k).second) {
      auto [line, column] = line_and_column(text_, key_offset(text_, n_keys));
      throw JsonTextError("duplicate key", "'" + excerpt(printable(k)) + "' twice in one object",
                          line, column, false);
    }
    ++n_keys;
    return to.key(k);
  }
  bool end_object() override {
    if (!keys.empty()) keys.pop_back();
    return to.end_object();
  }
  bool start_array(std::size_t n) override { return to.start_array(n); }
  bool end_array() override { return to.end_array(); }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& e) override {
    pos.parse_error(position, token, e);
    id = e.id;
    what = e.what();
    return false;
  }
};

// nlohmann's own value builder behind the SAX interface, so the value parse_json_text returns is
// built by the same checked parse as a streamed one.
class DomBuilder : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit DomBuilder(nlohmann::json& out) : dom_(out, false) {}
  bool null() override { return dom_.null(); }
  bool boolean(bool b) override { return dom_.boolean(b); }
  bool number_integer(number_integer_t n) override { return dom_.number_integer(n); }
  bool number_unsigned(number_unsigned_t n) override { return dom_.number_unsigned(n); }
  bool number_float(number_float_t x, const string_t& t) override {
    return dom_.number_float(x, t);
  }
  bool string(string_t& t) override { return dom_.string(t); }
  bool binary(binary_t& b) override { return dom_.binary(b); }
  bool start_object(std::size_t n) override { return dom_.start_object(n); }
  bool key(string_t& k) override { return dom_.key(k); }
  bool end_object() override { return dom_.end_object(); }
  bool start_array(std::size_t n) override { return dom_.start_array(n); }
  bool end_array() override { return dom_.end_array(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;  // Forward keeps the position and parse_json_text reports it
  }

 private:
  nlohmann::detail::json_sax_dom_parser<nlohmann::json> dom_;
};

// Refuses a text nesting deeper than kMaxJsonDepth before nlohmann builds it (its parser is
// iterative, but dump(), copies and every conversion of the value recurse), and a text holding a
// NUL byte, where nlohmann's lexer ends the input: `{...}\0{...}` was read as its first value, the
// rest ignored, where a space gave "expected end of input" (issue 40, pass 9). One pass over the
// bytes, skipping strings, so a refused text costs no allocation.
void check_text(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\0') {
      auto [line, column] = line_and_column(text, i);
      throw JsonTextError("parse error",
                          "a NUL byte (JSON text holds none: a string writes it as \\u0000)", line,
                          column, false);
    }
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        auto [line, column] = line_and_column(text, i);
        throw JsonTextError("too deep",
                            "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                            line, column, false);
      }
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    }
  }
}

// json_excerpt's writer: appends `v` to `out` until `out` holds about `budget` bytes. Containers
// below `depth` 16 are elided, so the walk is shallow whatever the value.
void append_excerpt(const nlohmann::json& v, std::string& out, size_t budget, int depth = 0) {
  if (out.size() >= budget) return;
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    const size_t room = budget - out.size();
    out += nlohmann::json(excerpt(s, room))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  if (!v.is_structured()) {
    out += v.dump();
    return;
  }
  const bool object = v.is_object();
  if (depth >= 16) {
    out += object ? "{...}" : "[...]";
    return;
  }
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (out.size() >= budget) {
      out += first ? "..." : ",...";
      break;
    }
    if (!first) out += ',';
    first = false;
    if (object) {
      append_excerpt(nlohmann::json(it.key()), out, budget, depth + 1);
      out += ':';
    }
    append_excerpt(*it, out, budget, depth + 1);
  }
  out += object ? '}' : ']';
}

}  // namespace

JsonTextError::JsonTextError(std::string kind, std::string detail, size_t line, size_t column,
                             bool at_end)
    // The parser's detail quotes the token it stopped in ("last read: '...'"), which can be a
    // whole 900 KB string: cut it like any quote of input.
    : Error(kind + " at line " + std::to_string(line) + ", column " + std::to_string(column) +
            ": " + excerpt(detail)),
      kind_(std::move(kind)),
      detail_(excerpt(detail)),
      line_(line),
      column_(column),
      at_end_(at_end) {}

std::string JsonTextError::without_line() const {
  return kind_ + " at column " + std::to_string(column_) + ": " + detail_;
}

nlohmann::json parse_json_text(std::string_view text) {
  nlohmann::json j;
  DomBuilder dom(j);
  {
    // Out of memory half-way, the half-built value is freed without allocating, so the bad_alloc
    // reaches its handler instead of ending the process (base/json_release.h).
    ReleaseOnUnwind release(j);
    parse_json_text(text, dom);
  }
  return j;
}

void parse_json_text(std::string_view text, nlohmann::json_sax<nlohmann::json>& sax) {
  check_text(text);
  Forward f(sax, text);
  if (nlohmann::json::sax_parse(text.begin(), text.end(), &f)) return;
  // A consumer refuses by throwing; one that returned false would leave its value half-built.
  if (!f.pos.failed) throw Error("JSON", "a consumer stopped the parse without saying why");
  if (f.id == 406) {  // a number beyond a double, as parse_json_text says it
    const std::string token = overflow_token(f.what);
    throw_at(text, f.pos, "number out of range",
             token.empty() ? json_error_text(f.what) : token + " does not fit a double");
  }
  throw_at(text, f.pos, "parse error", parse_error_detail(f.what));
}

nlohmann::json parse_json_or_discarded(std::string_view text) {
  try {
    return parse_json_text(text);
  } catch (const JsonTextError&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

std::string json_excerpt(const nlohmann::json& v) {
  std::string out;
  append_excerpt(v, out, kExcerptBytes);
  return out;
}

namespace {
// read_json_file's reading and naming, around `parse` of the file's text.
template <class F>
auto with_json_file(const std::string& path, const std::string& what, size_t max, F&& parse) {
  check_path(path);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw FileError(path, "is a directory", EISDIR);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    throw FileError(path, std::string("cannot read ") + what + ": " + std::strerror(e), e);
  }
  in.close();
  const std::string text = read_file_bytes(path, max, what);
  try {
    return parse(text);
  } catch (const JsonTextError& e) {
    throw Error(path + ":" + std::to_string(e.line()),
                what + " is not valid JSON: " + e.without_line());
  }
}
}  // namespace

nlohmann::json read_json_file(const std::string& path, const std::string& what, size_t max) {
  return with_json_file(path, what, max,
                        [](const std::string& text) { return parse_json_text(text); });
}

nlohmann::json read_settings_json_file(const std::string& path, const std::string& what) {
  try {
    return read_json_file(path, what);
  } catch (const FileError&) {
    throw;
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

void read_json_file(const std::string& path, const std::string& what,
                    nlohmann::json_sax<nlohmann::json>& sax, size_t max) {
  with_json_file(path, what, max, [&](const std::string& text) { parse_json_text(text, sax); });
}

}  // namespace ragform
