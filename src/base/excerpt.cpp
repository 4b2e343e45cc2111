#include "base/excerpt.h"

namespace ragform {

std::string excerpt(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t cut = max;
  // Back off continuation bytes (10xxxxxx) so the quote ends on a whole character.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "... (" + std::to_string(s.size()) + " bytes)";
}

namespace {

// The userinfo of an authority starting at `from`: its last '@' before the first '/' after it
// (npos when none). Userinfo may hold '?', '#', a space or a quote (a password is any text), so
// only the path's '/' ends the search; an '@' in a path or a query after a '/' is not userinfo.
size_t userinfo_at(std::string_view s, size_t from) {
  const size_t slash = s.find('/', from);
  const std::string_view authority =
      s.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from);
  const size_t at = authority.rfind('@');
  return at == std::string_view::npos ? at : from + at;
}

}  // namespace

std::string redact_urls_in(std::string_view s) {
  std::string out;
  size_t from = 0;
  for (;;) {
    const size_t sep = s.find("://", from);
    if (sep == std::string_view::npos) break;
    const size_t host = sep + 3, at = userinfo_at(s, host);
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
  const size_t at = userinfo_at(url, 0);
  if (at == std::string_view::npos) return std::string(url);
  return "***" + std::string(url.substr(at));
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
  return excerpt(printable(redact_urls_in(excerpt(msg, 4 * kMessageBytes))), kMessageBytes);
}

}  // namespace ragform
