#include "base/excerpt.h"

#include <algorithm>

namespace ragform {

namespace {
// A NUL written as the two characters \0: a message is read as a C string wherever it is shown
// (what(), PyErr_SetString), so a NUL quoted from input cut the message there ("expected f32 or
// f16, got 'f3": issue 40, pass 9).
std::string without_nul(std::string s) {
  for (size_t at = s.find('\0'); at != std::string::npos; at = s.find('\0', at + 2))
    s.replace(at, 1, "\\0");
  return s;
}
}  // namespace

std::string excerpt(std::string_view s, size_t max) {
  if (s.size() <= max) return without_nul(std::string(s));
  size_t cut = max;
  // Back off continuation bytes (10xxxxxx) so the quote ends on a whole character.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return without_nul(std::string(s.substr(0, cut))) + "... (" + std::to_string(s.size()) +
         " bytes)";
}

namespace {

// A search in `s` from `from` to `end` (npos when the text has none there).
size_t find_before(std::string_view s, std::string_view what, size_t from, size_t end) {
  const size_t at = s.find(what, from);
  return at < end ? at : std::string_view::npos;
}

}  // namespace

size_t userinfo_end(std::string_view s, size_t from) {
  constexpr size_t npos = std::string_view::npos;
  // The search ends at the next URL of a message, and at a query or fragment that follows a
  // path: "http://host/v1?mail=a@b" has no userinfo.
  size_t end = std::min(s.find("://", from), s.size());
  const size_t slash = find_before(s, "/", from, end);
  if (slash != npos) end = std::min(end, std::min(s.find_first_of("?#", slash), s.size()));
  // Userinfo may hold '?', '#', a space, a quote or even a '/' ("http://bob:s3cr/et@h:9/v1";
  // RFC 3986 says it cannot, users type it anyway): it ends at the last '@' before the first
  // '/' after the first '@'.
  const size_t first = find_before(s, "@", from, end);
  if (first == npos) return npos;
  const size_t path = std::min(s.find('/', first), end);
  return s.substr(0, path).rfind('@');
}

std::string redact_urls_in(std::string_view s) {
  std::string out;
  size_t from = 0;
  for (;;) {
    const size_t sep = s.find("://", from);
    if (sep == std::string_view::npos) break;
    const size_t host = sep + 3, at = userinfo_end(s, host);
    out += s.substr(from, host - from);
    if (at != std::string_view::npos) {
      out += "***";
      from = at;  // keeps "@host..."
    } else {
      from = host;
    }
  }
  out += s.substr(from);
  return out;
}

std::string redact_url(std::string_view url) {
  if (url.find("://") != std::string_view::npos) return redact_urls_in(url);
  // No scheme ("user:secret@host:1/v1", refused as a base URL by the caller, which quotes it):
  // the authority starts the text.
  const size_t at = userinfo_end(url, 0);
  if (at == std::string_view::npos) return std::string(url);
  return "***" + std::string(url.substr(at));
}

std::string redact_secret(std::string_view text, std::string_view secret) {
  if (secret.empty()) return std::string(text);
  std::string out;
  size_t from = 0;
  for (size_t at; (at = text.find(secret, from)) != std::string_view::npos;
       from = at + secret.size())
    out.append(text.substr(from, at - from)).append("***");
  out.append(text.substr(from));
  return out;
}

std::string printable(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      const auto d = static_cast<unsigned char>(s[++i]);  // U+0080..U+009F: C1 controls
      out += "\\u00";
      out += kHex[d >> 4];
      out += kHex[d & 15];
    } else {
      out += char(c);
    }
  }
  return out;
}

std::string bounded_message(std::string_view msg) {
  std::string one_line;
  for (const char c : printable(redact_urls_in(excerpt(msg, 4 * kMessageBytes))))
    if (c == '\n')
      one_line += "\\n";
    else
      one_line += c;
  return excerpt(one_line, kMessageBytes);
}

}  // namespace ragform
