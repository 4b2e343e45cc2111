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

// Where the authority of a "scheme://" URL starting at `from` (just past "://") ends.
size_t authority_end(std::string_view s, size_t from) {
  size_t e = from;
  while (e < s.size() && s[e] != '/' && s[e] != '?' && s[e] != '#' && s[e] != ' ' && s[e] != '\'' &&
         s[e] != '"' && s[e] != '\n' && s[e] != '\t')
    ++e;
  return e;
}

}  // namespace

std::string redact_urls_in(std::string_view s) {
  std::string out;
  size_t from = 0;
  for (;;) {
    const size_t sep = s.find("://", from);
    if (sep == std::string_view::npos) break;
    const size_t host = sep + 3, end = authority_end(s, host);
    const size_t at = s.substr(host, end - host).rfind('@');
    out += s.substr(from, host - from);
    if (at != std::string_view::npos) {
      out += "***";
      from = host + at;  // keeps "@host..."
    } else {
      from = host;
    }
  }
  out += s.substr(from);
  return out;
}

std::string redact_url(std::string_view url) { return redact_urls_in(url); }

std::string bounded_message(std::string_view msg) {
  return excerpt(redact_urls_in(excerpt(msg, 4 * kMessageBytes)), kMessageBytes);
}

}  // namespace ragform
