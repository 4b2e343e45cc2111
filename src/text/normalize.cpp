#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/normalize.h"

#include <pcre2.h>

#include <memory>

#include "base/error.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace ragform::text {

namespace {

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
using Code = std::unique_ptr<pcre2_code, CodeDeleter>;

Code compile(const char* pattern) {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (!c) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error("normalize", std::string("cannot compile regex: ") + reinterpret_cast<char*>(msg));
  }
  return Code(c);
}

// Global substitution of `code` matches in valid UTF-8 `s` by `rep`, which must not be longer
// than any match (so the output never outgrows the input).
std::string substitute(const pcre2_code* code, const std::string& s, const char* rep) {
  std::string out(s.size() + 1, '\0');
  PCRE2_SIZE out_len = out.size();
  int rc = pcre2_substitute(code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0,
                            PCRE2_SUBSTITUTE_GLOBAL | PCRE2_NO_UTF_CHECK, nullptr, nullptr,
                            reinterpret_cast<PCRE2_SPTR>(rep), PCRE2_ZERO_TERMINATED,
                            reinterpret_cast<PCRE2_UCHAR*>(out.data()), &out_len);
  if (rc < 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    throw Error("normalize",
                std::string("regex substitution failed: ") + reinterpret_cast<char*>(msg));
  }
  out.resize(out_len);
  return out;
}

// Python's string.punctuation, as a character class body.
constexpr const char* kAsciiPunct = R"(!-\/:-@\[-`{-~)";

const pcre2_code* ascii_punct_re() {
  static const Code c = compile((std::string("[") + kAsciiPunct + "]").c_str());
  return c.get();
}
const pcre2_code* unicode_punct_re() {
  static const Code c = compile((std::string("[\\p{P}") + kAsciiPunct + "]").c_str());
  return c.get();
}
const pcre2_code* articles_re() {
  static const Code c = compile(R"(\b(?:a|an|the)\b)");
  return c.get();
}

}  // namespace

std::string normalize_answer(std::string_view s, const NormalizeOptions& options) {
  // Steps 0-3, code point by code point.
  std::u32string cps;
  {
    std::u32string expanded;
    for (uint32_t cp : decode_utf8(s)) {
      if (options.fold_compat) {
        if (is_default_ignorable(cp)) continue;
        append_fold_compat(expanded, cp);
      } else {
        expanded += char32_t(cp);
      }
    }
    cps.reserve(expanded.size());
    for (char32_t cp : expanded) cps += char32_t(to_lower(cp));
  }
  std::string text;
  text.reserve(s.size());
  for (char32_t cp : cps) {
    if (options.fold_accents) {
      if (is_combining_mark(cp)) continue;
      append_fold_accent(text, cp);
    } else {
      append_utf8(text, cp);
    }
  }
  // Steps 4-5.
  text = substitute(options.unicode_punctuation ? unicode_punct_re() : ascii_punct_re(), text, "");
  text = substitute(articles_re(), text, " ");
  // Step 6.
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len;
    uint32_t cp = decode_utf8_at(text, i, &len);
    if (is_space(cp)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out.append(text, i, len);
    }
    i += len;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::vector<std::string> normalized_tokens(std::string_view s, const NormalizeOptions& options) {
  std::vector<std::string> tokens;
  std::string n = normalize_answer(s, options);
  size_t start = 0;
  while (start < n.size()) {
    size_t sp = n.find(' ', start);
    if (sp == std::string::npos) sp = n.size();
    tokens.push_back(n.substr(start, sp - start));
    start = sp + 1;
  }
  return tokens;
}

}  // namespace ragform::text
