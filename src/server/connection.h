// One connection of `ragform serve` as cpp-httplib reads and writes it (server/http.cpp serves
// each connection through it): the request's deadline and the server's stop end a read, and the
// request's head and chunked framing are checked on their way to the library (RFC 9112), which
// is lenient where a lenient reader lets a second request be smuggled in (issue 40).
#pragma once
// Debian's cpp-httplib is a compiled library built with OpenSSL, zlib and brotli support; the
// build passes its pkg-config flags (CPPHTTPLIB_*_SUPPORT) so this header matches the library.
#include <httplib.h>
#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/http.h"

namespace ragform::server {

// The request line and headers of one request together (cpp-httplib 0.11 bounds each line at 8 KiB
// but neither their number nor their sum: a million `X:y` lines held 100 MB per request, and 30
// such requests at once ended the server under `ulimit -v`). Past either limit the request is a
// 431 and the connection closes. 64 KiB and 256 lines leave room for long cookies and tokens.
inline constexpr size_t kMaxHeaderBytes = size_t(64) << 10;
inline constexpr int kMaxHeaderLines = 256;
// One header line, its CRLF aside: the library refuses a longer one (8,192 bytes with its CRLF) as
// a bare 400 "HTTP error 400", after reading all of it; here it is a 431 like the limits above.
inline constexpr size_t kMaxHeaderLine = 8190;
// A chunked body's size line, its extensions included (the size itself is at most 16 hex digits).
inline constexpr size_t kMaxChunkLine = 4096;
// The request target (path and query). The library matches routes with std::regex, whose
// recursion grows with the path: a 4,000-byte path overflowed a connection thread's 2 MiB stack
// (SIGSEGV, issue 40 pass 9). No route of this server is longer than a few dozen bytes.
inline constexpr size_t kMaxTarget = 2048;
// The request line: the target, a method and a version. Past it the line is refused while it is
// read (the library would read all of it, up to the head's 64 KiB, before its own 414).
inline constexpr size_t kMaxRequestLine = kMaxTarget + 64;

// One connection's socket as httplib reads and writes it. httplib's own stream (internal to the
// compiled library) only bounds each read; this one also ends a read at the request's deadline
// and when the server stops, so a client that sends a byte now and then cannot hold its thread.
class Connection : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;
  Connection(socket_t fd, const HttpOptions& opt, const std::atomic<socket_t>& listener)
      : fd_(fd), opt_(opt), listener_(listener) {}

  // Waits for the next request's first byte (up to the keep-alive timeout); its clock starts then.
  // `left`: how many requests the connection may still serve, this one included (the last is
  // answered with "Connection: close").
  bool next_request(size_t left);
  // Why the request's framing was refused while it was read (its reading stopped there).
  enum class Refusal {
    none,
    head_too_large,
    framing,
    too_large,
    chunk_line_too_long,
    trailer,
    line_end,         // a line of the head or of chunked framing not ending in CRLF, a NUL
    chunk_framing,    // a chunk's data not followed by CRLF
    chunk_size,       // a chunk-size line not starting with a hex digit
    target,           // a request target that is not a path of this server's form
    target_too_long,  // kMaxTarget
    version,          // a well-formed HTTP version other than 1.0 and 1.1
    request_line,     // not 'method SP target SP HTTP/x.y'
    host,             // HTTP/1.1 without a Host field, or two Host fields
    http10_encoding,  // Transfer-Encoding in an HTTP/1.0 request
  };
  // The answer to a refusal: its status and message (Refusal::none: a body that could not be
  // read, 400).
  struct Answer {
    int status;
    std::string message;
  };
  static Answer answer(Refusal why);
  Refusal refused() const { return refused_; }
  // The request line and headers passed kMaxHeaderBytes or kMaxHeaderLines.
  bool head_too_large() const { return refused_ == Refusal::head_too_large; }
  // A read of this request ran out of time (the read timeout or the request's deadline).
  bool timed_out() const { return timed_out_; }
  // The peer closed the connection, shut its sending side, or the connection failed: a look at
  // the socket without reading or waiting. Bytes of a next, pipelined request count as a client
  // still there. For long non-streamed work (server/message.h client_gone).
  bool peer_gone() const;
  // The request was refused before its body was read to the end: what follows is not a request.
  void close_after_response() { close_ = true; }
  // Whether the connection ends after this request's response: refused, timed out, asked by the
  // client ("Connection: close" in any case; HTTP/1.0 without "keep-alive"), or the last one it
  // may serve. The response's Connection and Keep-Alive fields say so (http.cpp).
  bool must_close() const { return close_ || timed_out_ || !persistent_ || left_ <= 1; }
  size_t requests_left() const { return left_; }
  bool http10() const { return http10_; }
  // Bytes written since the request began (0: it has had no answer yet).
  size_t written() const { return written_; }

  bool is_readable() const override { return pos_ < end_ || wait_to_read(); }
  bool is_writable() const override {
    return wait(POLLOUT, Clock::now() + std::chrono::seconds(opt_.write_timeout_s)) && alive();
  }

  ssize_t read(char* ptr, size_t size) override;

  ssize_t write(const char* ptr, size_t size) override;

  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

  // The request line "METHOD SP target SP HTTP/1.x" (RFC 9112 section 3): the target a path of
  // this server's form, "/..." without percent-escapes (the library routed on the decoded path,
  // so "/v1%2Fattention" and "%2Fv1%2Fcompletions" reached /v1/attention, past any proxy that
  // filters routes by path; no route here has an escape), or "*"; at most kMaxTarget bytes; the
  // version HTTP/1.0 or HTTP/1.1 (HTTP/2.0, HTTP/9.9 and none at all were served as 1.1). The
  // method is the library's to judge (a 405 or 400 as before).
  static Refusal request_line_problem(const std::string& line);

  // The path of a request target, its query cut: "/p" of "/p?q" (origin-form) or of
  // "http://host/p?q" (absolute-form, which a server MUST accept: RFC 9112 section 3.2.2; "/" when
  // its path is empty); "" for any other target.
  static std::string target_path(const std::string& target);

 private:
  // Data to read within the read timeout and before the request's deadline.
  bool wait_to_read() const;
  // Reads into the buffer when it is empty; false (with recv's result in `got`) when nothing came.
  bool fill(ssize_t& got);
  // RFC 9112 section 2.2: empty lines before a request line are skipped (a client may end a body
  // with a CRLF too many; it was read as a malformed request line and the connection closed with
  // no answer: pass 10). At most kMaxHeaderLines of them. False once refused.
  bool skip_empty_lines(ssize_t& got);

  // RFC 9112 section 2.2: every line of the head and of chunked framing ends in CRLF. A bare LF
  // ended the head for these checks but not for the library, which skips such a line, so the
  // headers after it were never checked (a smuggled request, the header limits bypassed: pass 9);
  // a bare CR, and a NUL (RFC 9110 section 5.5), are refused likewise. Called on each byte.
  bool crlf_discipline(char c);

  // How many of the next n buffered bytes may be handed out while the request's head is read:
  // keeps its bytes (at most kMaxHeaderBytes) and counts its lines (a line ends at LF; an empty
  // one, CR aside, ends the head), and stops at the head's end, so the body after it is never
  // counted. 0 once refused.
  size_t head_part(size_t n);

  // The head is complete: its framing headers are checked here, before the library acts on them
  // (RFC 9112 section 6.3; cpp-httplib reads a Content-Length by its leading digits and takes any
  // Transfer-Encoding but exactly "chunked" as no body, so the bytes after it were answered as a
  // request of their own: request smuggling). Refused (Refusal::framing): a Content-Length that is
  // not 1*DIGIT ("0, 36", "0x24", "+0", ""), two that differ, Content-Length beside
  // Transfer-Encoding, and a Transfer-Encoding other than exactly "chunked" (gzip, "Chunked",
  // "gzip, chunked", "chunked, chunked"; the library would hang on them). A Content-Length over
  // max_body is refused here too (Refusal::too_large): the library read and dropped 78 GB of a
  // declared 1 TB body before its 413, and answered "100 Continue" to it. A chunked body's size
  // lines and trailers are followed from here on (chunk_part).
  bool head_ended();
  bool refused(Refusal why);

  // How many of the next n bytes of a chunked body may be handed out: follows its framing (a size
  // line, that many bytes and CRLF, ..., a zero size, the empty line) so that a size line (its
  // extensions included) stays within kMaxChunkLine (cpp-httplib read it whole: a 200 MB
  // extension was buffered and answered 200) and a trailer field, which the library refuses
  // anyway, is refused in words. 0 once refused. Malformed framing is left to the library.
  size_t chunk_part(size_t n);

  size_t refuse(Refusal why);

  // poll() for `events` until `until`, in short slices so that a stopping server (its listening
  // socket closed) stops reading at once; a response already under way is still written out.
  bool wait(short events, Clock::time_point until) const;

  // Whether the client is still there (as httplib checks before each write): no reset. A client
  // that shut only its sending side is still there; one that closed fully is found at the write
  // after its reset, so a stream stops within two events.
  bool alive() const;

  socket_t fd_;
  const HttpOptions& opt_;
  const std::atomic<socket_t>& listener_;
  Clock::time_point deadline_ = Clock::time_point::max();
  mutable bool timed_out_ = false;
  bool close_ = false;
  bool persistent_ = false;  // the head asks to keep the connection (head_ended)
  bool http10_ = false;
  bool may_continue_ = false;  // an "HTTP/1.1 100 Continue" may be sent (head_ended)
  size_t left_ = 1;
  size_t written_ = 0;
  int empty_lines_ = 0;
  bool request_line_ = true;  // the head's first line is being read
  // The request's head (line and headers) as read so far: head_part(); then a chunked body's
  // framing: chunk_part().
  bool in_head_ = false;
  std::string head_;
  size_t line_len_ = 0;
  int head_lines_ = 0;
  Refusal refused_ = Refusal::none;
  enum class Chunk { none, size_line, data, trailers } chunk_ = Chunk::none;
  uint64_t chunk_left_ = 0;
  bool size_digits_ = true;
  bool size_ext_ = false;  // the size line's chunk-ext began (';')
  bool after_cr_ = false;  // the last byte of the head or of chunked framing was a CR
  char buf_[16384];
  size_t pos_ = 0, end_ = 0;
};

}  // namespace ragform::server
