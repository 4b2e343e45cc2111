#include "server/connection.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ragform::server {

namespace {
// The numeric address of one end of the socket (get: ::getpeername or ::getsockname).
void address(int (*get)(int, sockaddr*, socklen_t*), socket_t fd, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  char host[NI_MAXHOST] = "", serv[NI_MAXSERV] = "";
  if (get(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
      ::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host;
    port = std::atoi(serv);
  }
}
}  // namespace

bool Connection::next_request(size_t left) {
  timed_out_ = false;
  left_ = left;
  persistent_ = http10_ = may_continue_ = false;
  written_ = 0;
  empty_lines_ = 0;
  request_line_ = true;
  if (pos_ == end_ && !wait(POLLIN, Clock::now() + std::chrono::seconds(opt_.keep_alive_timeout_s)))
    return false;
  deadline_ = Clock::now() + std::chrono::seconds(opt_.request_timeout_s);
  in_head_ = true;
  head_.clear();
  head_lines_ = 0;
  line_len_ = 0;
  refused_ = Refusal::none;
  chunk_ = Chunk::none;
  after_cr_ = false;
  return true;
}

bool Connection::fill(ssize_t& got) {
  if (pos_ < end_) return true;
  got = -1;
  if (!wait_to_read()) return false;
  do {
    got = ::recv(fd_, buf_, sizeof buf_, 0);
  } while (got < 0 && errno == EINTR);
  if (got <= 0) return false;
  pos_ = 0;
  end_ = size_t(got);
  return true;
}

bool Connection::skip_empty_lines(ssize_t& got) {
  while (in_head_ && head_.empty()) {
    if (!fill(got)) return false;
    const char c = buf_[pos_];
    if (c == '\r' && !after_cr_) {
      after_cr_ = true;
    } else if (c == '\n' && after_cr_) {
      after_cr_ = false;
      if (++empty_lines_ > kMaxHeaderLines) {
        refuse(Refusal::head_too_large);
        got = -1;
        return false;
      }
    } else {
      return true;  // the request line's first byte (or a bare CR or LF, which head_part refuses)
    }
    ++pos_;
  }
  return true;
}

ssize_t Connection::read(char* ptr, size_t size) {
  ssize_t got = 0;
  if (!skip_empty_lines(got) || !fill(got)) return got;
  size_t n = std::min(size, end_ - pos_);
  if (in_head_) {
    n = head_part(n);
    if (n == 0) return -1;  // refused: the library answers 400, error_handler says why
  } else if (chunk_ != Chunk::none) {
    n = chunk_part(n);
    if (n == 0) return -1;  // the body's reading fails: read_body says why
  }
  std::memcpy(ptr, buf_ + pos_, n);
  pos_ += n;
  return ssize_t(n);
}

ssize_t Connection::write(const char* ptr, size_t size) {
  // The library answers every "Expect: 100-continue" with a 100, which RFC 9110 section 10.1.1
  // forbids to an HTTP/1.0 client (it MUST ignore the expectation); a request without content
  // needs none either (pass 10). It writes the interim response in one call, before anything
  // else of the request, so it is dropped here.
  static constexpr char kContinue[] = "HTTP/1.1 100 ";
  if (written_ == 0 && !may_continue_ && size >= sizeof kContinue - 1 &&
      std::memcmp(ptr, kContinue, sizeof kContinue - 1) == 0)
    return ssize_t(size);
  if (!is_writable()) return -1;
  ssize_t n;
  do {
    n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n > 0) written_ += size_t(n);
  return n;
}

void Connection::get_remote_ip_and_port(std::string& ip, int& port) const {
  address(::getpeername, fd_, ip, port);
}

void Connection::get_local_ip_and_port(std::string& ip, int& port) const {
  address(::getsockname, fd_, ip, port);
}

bool Connection::wait_to_read() const {
  const auto idle_end = Clock::now() + std::chrono::seconds(opt_.read_timeout_s);
  if (wait(POLLIN, std::min(idle_end, deadline_))) return true;
  timed_out_ = listener_ != INVALID_SOCKET;  // (not when the server stops)
  return false;
}

bool Connection::crlf_discipline(char c) {
  const bool was_cr = after_cr_;
  after_cr_ = c == '\r';
  if (was_cr) return c == '\n';
  return c != '\n' && c != '\0';
}

size_t Connection::head_part(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const char c = buf_[pos_ + i];
    if (head_.size() >= kMaxHeaderBytes) return refuse(Refusal::head_too_large);
    head_ += c;
    if (!crlf_discipline(c)) return refuse(Refusal::line_end);
    if (c == '\r') continue;
    if (c != '\n') {
      if (++line_len_ > kMaxRequestLine && request_line_) return refuse(Refusal::target_too_long);
      if (line_len_ > kMaxHeaderLine) return refuse(Refusal::head_too_large);
      continue;
    }
    request_line_ = false;
    if (line_len_ == 0) {
      in_head_ = false;
      return head_ended() ? i + 1 : 0;
    }
    line_len_ = 0;
    if (++head_lines_ > kMaxHeaderLines) return refuse(Refusal::head_too_large);
  }
  return n;
}

namespace {
// A Host field's value: uri-host [ ":" port ] (RFC 9112 section 3.2, RFC 3986 section 3.2.2):
// an IP literal in brackets, or a reg-name / IPv4 of unreserved characters, sub-delims and
// percent-escapes; a port of 1-5 digits up to 65535. Empty is allowed (a target without an
// authority). Pass 10: "a b", "evil.com/x@y", control bytes and port 99999999 were served, where a
// proxy routing by the field could read them otherwise.
bool valid_host(const std::string& v) {
  if (v.empty()) return true;
  size_t i = 0;
  if (v[0] == '[') {
    const size_t close = v.find(']');
    if (close == std::string::npos || close == 1) return false;
    for (size_t j = 1; j < close; ++j)
      if (!std::isxdigit(static_cast<unsigned char>(v[j])) && v[j] != ':' && v[j] != '.')
        return false;
    i = close + 1;
  } else {
    for (; i < v.size() && v[i] != ':'; ++i) {
      const auto c = static_cast<unsigned char>(v[i]);
      if (c == '%') {
        if (i + 2 >= v.size() || !std::isxdigit(static_cast<unsigned char>(v[i + 1])) ||
            !std::isxdigit(static_cast<unsigned char>(v[i + 2])))
          return false;
        i += 2;
      } else if (!std::isalnum(c) && std::strchr("-._~!$&'()*+,;=", c) == nullptr) {
        return false;
      }
    }
    if (i == 0) return false;  // ":80" names no host
  }
  if (i == v.size()) return true;
  if (v[i] != ':') return false;
  const std::string port = v.substr(i + 1);
  if (port.empty()) return true;  // "host:" (RFC 3986: port = *DIGIT)
  return port.size() <= 5 &&
         std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         std::stoi(port) <= 65535;
}
}  // namespace

bool Connection::head_ended() {
  std::string length;
  bool has_length = false, has_encoding = false, chunked = false, keep_alive = false;
  bool expect_other_case =
      false;  // "Expect: 100-Continue": the library answers only "100-continue"
  const std::string request_line = head_.substr(0, head_.find('\r'));
  if (const Refusal why = request_line_problem(request_line); why != Refusal::none)
    return refused(why);
  int hosts = 0;
  bool host_ok = true;
  size_t at = head_.find('\n');  // after the request line
  while (at != std::string::npos && at + 1 < head_.size()) {
    const size_t end = head_.find('\n', at + 1);
    std::string line = head_.substr(at + 1, end == std::string::npos ? end : end - at - 1);
    at = end;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;  // the empty line that ends the head
    // RFC 9112 section 5: a field line is a token, a colon, then its value. A line folded onto
    // the one before (starting with a space or tab), a line without a colon, and a name with
    // whitespace before the colon ("Transfer-Encoding : chunked" was left out of the checks
    // below while the library read it) or any other character outside a token are refused.
    const size_t colon = line.find(':');
    if (line[0] == ' ' || line[0] == '\t' || colon == std::string::npos || colon == 0 ||
        !std::all_of(line.begin(), line.begin() + long(colon), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) ||
                 std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
        }))
      return refused(Refusal::framing);
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    auto trim = [](std::string& v) {
      const size_t b = v.find_first_not_of(" \t\r"), e = v.find_last_not_of(" \t\r");
      v = b == std::string::npos ? "" : v.substr(b, e - b + 1);
    };
    trim(value);
    if (name == "content-length") {
      const bool digits =
          !value.empty() && value.size() <= 19 &&
          std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits || (has_length && value != length)) return refused(Refusal::framing);
      has_length = true;
      length = value;
    } else if (name == "transfer-encoding") {
      if (has_encoding || value != "chunked") return refused(Refusal::framing);
      has_encoding = chunked = true;
    } else if (name == "expect") {
      std::string lower = value;
      for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      expect_other_case = lower == "100-continue" && value != lower;
    } else if (name == "host") {
      ++hosts;
      host_ok = host_ok && valid_host(value);
    } else if (name == "connection") {
      // Its options are case-insensitive tokens (RFC 9110 section 7.6.1); the library honours
      // only the exact values "close" and, in HTTP/1.0, "Keep-Alive" (pass 10: "keep-alive" closed
      // the connection with the second request unanswered).
      for (char& ch : value) ch = char(std::tolower(static_cast<unsigned char>(ch)));
      for (size_t b = 0; b < value.size();) {
        size_t e = value.find(',', b);
        if (e == std::string::npos) e = value.size();
        std::string token = value.substr(b, e - b);
        trim(token);
        if (token == "close") close_ = true;
        if (token == "keep-alive") keep_alive = true;
        b = e + 1;
      }
    }
  }
  if (has_length && has_encoding) return refused(Refusal::framing);
  // RFC 9112 section 3.2: an HTTP/1.1 request has exactly one Host field, and any request with
  // more than one, or without one in 1.1, is answered 400 (this server names no virtual hosts,
  // but a proxy in front of it may route by the field, and must not read it differently).
  const bool http11 = request_line.ends_with(" HTTP/1.1");  // its form is checked above
  if (hosts > 1 || (http11 && hosts == 0) || !host_ok) return refused(Refusal::host);
  // RFC 9112 section 6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing (1.0 has
  // no chunked coding; an intermediary of 1.0 may pass the body on as it is). It was served and
  // the connection kept (pass 10).
  if (!http11 && has_encoding) return refused(Refusal::http10_encoding);
  http10_ = !http11;
  // HTTP/1.1 keeps a connection unless told to close it; HTTP/1.0 only when asked to
  // (RFC 9112 section 9.3).
  persistent_ = http11 || keep_alive;
  may_continue_ = http11 && (chunked || (has_length && std::stoull(length) > 0));
  // The expectation's value is case-insensitive (RFC 9110 section 10.1.1): one the library does
  // not recognise gets its 100 here, or the client waits out its own timeout before the body.
  if (expect_other_case && may_continue_) {
    static constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
    if (write(kContinue, sizeof kContinue - 1) != ssize_t(sizeof kContinue - 1))
      return refused(Refusal::framing);
  }
  if (has_length && std::stoull(length) > opt_.max_body) return refused(Refusal::too_large);
  if (chunked) {
    chunk_ = Chunk::size_line;
    chunk_left_ = 0;
    size_digits_ = true;
    size_ext_ = false;
    line_len_ = 0;
  }
  head_.clear();
  head_.shrink_to_fit();
  return true;
}

bool Connection::refused(Refusal why) {
  refuse(why);
  return false;
}

Connection::Refusal Connection::request_line_problem(const std::string& line) {
  // request-line = method SP request-target SP HTTP-version (RFC 9112 section 3): two single
  // spaces, no tabs. Two spaces, a space in the target or one after the version read the rest as
  // the version and answered 505 (pass 10); a malformed line is a 400, 505 is for a well-formed
  // version this server does not speak.
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == 0 || sp2 == std::string::npos || sp2 == sp1 + 1 ||
      line.find(' ', sp2 + 1) != std::string::npos || line.find('\t') != std::string::npos)
    return Refusal::request_line;
  const std::string method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                    version = line.substr(sp2 + 1);
  if (target.size() > kMaxTarget) return Refusal::target_too_long;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (version.size() != 8 || version.compare(0, 5, "HTTP/") != 0 || !digit(version[5]) ||
      version[6] != '.' || !digit(version[7]))
    return Refusal::request_line;  // HTTP-name is case-sensitive: "http/1.1" is none
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return Refusal::version;
  if (target == "*") return method == "OPTIONS" ? Refusal::none : Refusal::target;
  // A request target has no fragment (RFC 9112 section 3.2): the library cut "#x" off and served
  // "/v1/score#x" as /v1/score, past a proxy that filters by path (pass 12).
  if (target.find('#') != std::string::npos) return Refusal::target;
  const std::string path = target_path(target);
  if (path.empty() || path.find('%') != std::string::npos) return Refusal::target;
  return Refusal::none;
}

std::string Connection::target_path(const std::string& target) {
  std::string rest = target.substr(0, target.find('?'));
  if (!rest.empty() && rest[0] == '/') return rest;
  // absolute-form: "http" or "https" (a scheme is case-insensitive), "://", an authority that is
  // a host[:port] as a Host field's value (no userinfo: RFC 9110 section 4.2.4), then the path.
  for (const char* scheme : {"http://", "https://"}) {
    const size_t n = std::strlen(scheme);
    if (rest.size() <= n || !std::equal(scheme, scheme + n, rest.begin(), [](char a, char b) {
          return a == std::tolower(static_cast<unsigned char>(b));
        }))
      continue;
    const size_t slash = rest.find('/', n);
    const std::string authority = rest.substr(n, slash == std::string::npos ? slash : slash - n);
    if (authority.empty() || !valid_host(authority)) return "";
    return slash == std::string::npos ? "/" : rest.substr(slash);
  }
  return "";
}

Connection::Answer Connection::answer(Refusal why) {
  switch (why) {
    case Refusal::none:
      return {400, "the request body could not be read"};
    case Refusal::head_too_large:
      return {431, "request headers too large: at most " + std::to_string(kMaxHeaderBytes >> 10) +
                       " KiB and " + std::to_string(kMaxHeaderLines) +
                       " lines for the request line and headers together, " +
                       std::to_string(kMaxHeaderLine) + " bytes a line"};
    case Refusal::too_large:
      return {413, "request body too large"};
    case Refusal::target_too_long:
      return {414, "request target over " + std::to_string(kMaxTarget) +
                       " bytes, or request line over " + std::to_string(kMaxRequestLine)};
    case Refusal::request_line:
      return {400,
              "a request line that is not 'METHOD SP target SP HTTP/x.y' (single spaces, no "
              "tabs; RFC 9112 section 3)"};
    case Refusal::version:
      return {505, "the request's HTTP version must be 1.1 or 1.0"};
    case Refusal::target:
      return {400,
              "the request target must be a path starting with '/' (or an absolute http URI) "
              "without percent-escapes in the path (no route of this server has one) and without "
              "a fragment ('#'), or '*' for OPTIONS"};
    case Refusal::host:
      return {400,
              "a request of HTTP version 1.1 needs exactly one Host header field, no request may "
              "have two, and its value is host[:port] (RFC 9112 section 3.2)"};
    case Refusal::http10_encoding:
      return {400,
              "an HTTP/1.0 request cannot have a Transfer-Encoding; give its body a "
              "Content-Length (RFC 9112 section 6.1)"};
    case Refusal::line_end:
      return {400,
              "a line of the request's head or of its chunked framing that does not end in CRLF, "
              "a bare CR, or a NUL byte (RFC 9112 section 2.2)"};
    case Refusal::chunk_line_too_long:
      return {400, "a chunk's size line (with its extensions) over " +
                       std::to_string(kMaxChunkLine) + " bytes"};
    case Refusal::trailer:
      return {400, "trailer fields after a chunked body are not accepted"};
    case Refusal::chunk_size:
      return {400,
              "a chunk's size line that does not start with a hex digit, or has more than "
              "whitespace or ';' after its digits (RFC 9112 section 7.1)"};
    case Refusal::chunk_framing:
      return {400, "a chunk's data not followed by CRLF (RFC 9112 section 7.1)"};
    case Refusal::framing:
      break;
  }
  return {400,
          "conflicting framing: a Content-Length that is not one decimal number, two different "
          "ones, Content-Length beside Transfer-Encoding, a Transfer-Encoding other than chunked, "
          "or a header line that is not 'name: value' (RFC 9112 sections 5 and 6.3)"};
}

size_t Connection::chunk_part(size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const char c = buf_[pos_ + i];
    switch (chunk_) {
      case Chunk::size_line:
        if (++line_len_ > kMaxChunkLine) return refuse(Refusal::chunk_line_too_long);
        if (!crlf_discipline(c)) return refuse(Refusal::line_end);
        if (c == '\n') {
          if (chunk_left_ == 0) {
            chunk_ = Chunk::trailers;  // the last chunk
          } else {
            chunk_ = Chunk::data;
            chunk_left_ += 2;  // the CRLF after the data
          }
          line_len_ = 0;
          size_digits_ = true;
          size_ext_ = false;
        } else if (size_digits_ && std::isxdigit(static_cast<unsigned char>(c))) {
          if (chunk_left_ > (uint64_t(1) << 40)) break;  // absurd: the library refuses it
          chunk_left_ = chunk_left_ * 16 + uint64_t(std::isdigit(static_cast<unsigned char>(c))
                                                        ? c - '0'
                                                        : std::tolower(c) - 'a' + 10);
        } else if (line_len_ == 1) {
          // chunk-size = 1*HEXDIG (RFC 9112 section 7.1), from the line's first byte. A line
          // starting otherwise (" 2", "+2") read here as size 0, the last chunk, which ended
          // these checks, while the library's strtoul read 2 and went on: smuggling and unbounded
          // size lines again (pass 10).
          return refuse(Refusal::chunk_size);
        } else if (size_ext_ || c == ';') {
          size_digits_ = false;  // chunk-ext: anything up to the line's end
          size_ext_ = true;
        } else if (c == ' ' || c == '\t' || c == '\r') {
          size_digits_ = false;  // whitespace before an extension, or the line's end
        } else {
          return refuse(Refusal::chunk_size);  // "0x2": strtoul reads a C prefix, 2
        }
        break;
      case Chunk::data:
        // The data's last two bytes are its CRLF: the library took any other line after the
        // data as the body's end, and what followed as a request of its own (pass 9).
        if ((chunk_left_ == 2 && c != '\r') || (chunk_left_ == 1 && c != '\n'))
          return refuse(Refusal::chunk_framing);
        if (--chunk_left_ == 0) chunk_ = Chunk::size_line;
        break;
      case Chunk::trailers:
        // The library refuses every trailer field ("the request body could not be read"):
        // refused here in words, at its first byte. Only the empty line that ends the body.
        if (!crlf_discipline(c)) return refuse(Refusal::line_end);
        if (c == '\r') break;
        if (c != '\n') return refuse(Refusal::trailer);
        chunk_ = Chunk::none;  // the body's end
        return i + 1;
      case Chunk::none:
        return i;
    }
  }
  return n;
}

size_t Connection::refuse(Refusal why) {
  refused_ = why;
  close_ = true;
  return 0;
}

bool Connection::wait(short events, Clock::time_point until) const {
  for (;;) {
    if (events == POLLIN && listener_ == INVALID_SOCKET) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd_, events, 0};
    const int r = ::poll(&p, 1, int(std::min<long long>(left, 100)));
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) return false;
  }
}

bool Connection::alive() const {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) == 0) return true;
  // A reset (or a socket shut both ways) is a client gone. End of file is not: a client may shut
  // its sending side once the request is out and still read the answer (RFC 9112 section 9.6;
  // pass 17: every reply to such a client was dropped, as cpp-httplib's own check drops it). A
  // client that closed fully is found by the first write, whose reset the next check sees.
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) return false;
  char c;
  const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n >= 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

bool Connection::peer_gone() const {
  char b;
  const ssize_t n = ::recv(fd_, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;
  // End of file: closed, or shut for sending only; the two look alike until a write. A long
  // listing takes both for a client gone, as nginx does for a request it proxies (its answer,
  // a 499, is still written: a half-closed client reads why).
  if (n == 0) return true;
  return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace ragform::server
