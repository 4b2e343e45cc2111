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
// boundary) followed by "... (N bytes)", so the reader sees both the start and the size. A NUL
// byte is written \0 (a message is read as a C string where it is shown).
std::string excerpt(std::string_view s, size_t max = kExcerptBytes);

// The position of the '@' that ends the userinfo ("user:password@") of the authority starting at
// `from` in `s`, npos when it has none. A password is any text — '?', '#', a space, a quote, even
// a '/' ("http://bob:s3cr/et@h:9/v1": RFC 3986 forbids it, users type it) — so the userinfo is
// everything up to the last '@' before the first '/' that follows the first '@'. The search
// stops at a query or fragment ('?' or '#') that follows a '/' ("http://host/v1?mail=a@b" has no
// userinfo) and at the next "://" (another URL in a message). Redacting too much, never too
// little: an '@' later in a path is taken as userinfo's.
size_t userinfo_end(std::string_view s, size_t from);

// `url` with any userinfo (userinfo_end) replaced by "***@": http://u:p@host/v1 ->
// http://***@host/v1, http://bob:s3cr/et@host/v1 -> http://***@host/v1. A URL without a scheme
// ("u:p@host:1/v1") is redacted from its start. Anything without such an '@' is unchanged.
std::string redact_url(std::string_view url);

// `msg` with the userinfo of every "scheme://user@host" inside it redacted as redact_url does,
// for messages built by code that quoted a URL (a library's error text). An '@' later in the
// message (before a query, a fragment or the next URL) is taken as its userinfo's: redacting too
// much, never too little.
std::string redact_urls_in(std::string_view msg);

// `text` with every occurrence of `secret` (a client's own API key) replaced by "***", so a server
// that quotes the request's "Authorization: Bearer KEY" back in its error ("bad key: Bearer KEY")
// cannot make the client print, raise or store its key. An empty `secret` changes nothing. Redact
// before cutting a quote with excerpt(): a cut through the key would leave its first bytes.
std::string redact_secret(std::string_view text, std::string_view secret);

// `s` with the characters that drive a terminal written out as escapes: C0 controls other than
// newline and tab (ESC, CR, BEL, backspace, ...) and DEL as \x1b, the C1 controls U+0080..U+009F
// (CSI is U+009B) as \u009b. A file's or a client's text quoted on stderr cannot clear the
// screen, retitle the window or overwrite the line it is on.
std::string printable(std::string_view s);

// The most bytes of one error message a front end prints or sends.
inline constexpr size_t kMessageBytes = 4096;

// A message as a front end shows it (the CLI's stderr line, an HTTP error reply): URL
// credentials redacted (redact_urls_in), terminal controls escaped (printable), a newline written
// \n (a message is one line: a file name holding "\nragform: ... OK" printed a forged line of its
// own, issue 40 pass 10) and the whole cut to kMessageBytes, a last bound behind the quotes each
// message makes itself.
std::string bounded_message(std::string_view msg);

}  // namespace ragform
