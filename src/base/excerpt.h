// Bounded quotes of what a caller sent, for error messages. A message that quotes its input whole
// echoes a 50 MB corpus line to stderr or a 900 KB body back to an HTTP client; one that prints a
// URL's user:password@ leaks credentials into logs. Every quote of input goes through here.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ragform {

// The most bytes of input a message quotes.
inline constexpr size_t kExcerptBytes = 200;

// `s` when it is at most `max` bytes; otherwise its first bytes (cut at a UTF-8 character
// boundary) followed by "... (N bytes)", so the reader sees both the start and the size.
std::string excerpt(std::string_view s, size_t max = kExcerptBytes);

// `url` with any userinfo ("user:password@") replaced by "***@": http://u:p@host/v1 ->
// http://***@host/v1. The userinfo is everything up to the last '@' before the first '/' after
// the scheme (a password may hold '?', '#', spaces); a URL without a scheme
// ("u:p@host:1/v1") is redacted from its start. Anything without an '@' there is unchanged.
std::string redact_url(std::string_view url);

// `msg` with the userinfo of every "scheme://user@host" inside it redacted as redact_url does,
// for messages built by code that quoted a URL (a library's error text). When no '/' follows a
// URL, an '@' later in the message is taken as its userinfo's: redacting too much, never too
// little.
std::string redact_urls_in(std::string_view msg);

// `s` with the characters that drive a terminal written out as escapes: C0 controls other than
// newline and tab (ESC, CR, BEL, backspace, ...) and DEL as \x1b, the C1 controls U+0080..U+009F
// (CSI is U+009B) as \u009b. A file's or a client's text quoted on stderr cannot clear the
// screen, retitle the window or overwrite the line it is on.
std::string printable(std::string_view s);

// The most bytes of one error message a front end prints or sends.
inline constexpr size_t kMessageBytes = 4096;

// A message as a front end shows it (the CLI's stderr line, an HTTP error reply): URL
// credentials redacted (redact_urls_in), terminal controls escaped (printable) and the whole cut
// to kMessageBytes, a last bound behind the quotes each message makes itself.
std::string bounded_message(std::string_view msg);

}  // namespace ragform
