#include "server/http.h"

// Debian's cpp-httplib is a compiled library built with OpenSSL, zlib and brotli support; the
// build passes its pkg-config flags (CPPHTTPLIB_*_SUPPORT) so this header matches the library.
#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "base/error.h"

namespace ragform::server {

namespace {

using Clock = std::chrono::steady_clock;

// The request line and headers of one request together (cpp-httplib 0.11 bounds each line at 8 KiB
// but neither their number nor their sum: a million `X:y` lines held 100 MB per request, and 30
// such requests at once ended the server under `ulimit -v`). Past either limit the request is a
// 431 and the connection closes. 64 KiB and 256 lines leave room for long cookies and tokens.
constexpr size_t kMaxHeaderBytes = size_t(64) << 10;
constexpr int kMaxHeaderLines = 256;
// A chunked body's size line, its extensions included (the size itself is at most 16 hex digits).
constexpr size_t kMaxChunkLine = 4096;
// The request target (path and query). The library matches routes with std::regex, whose
// recursion grows with the path: a 4,000-byte path overflowed a connection thread's 2 MiB stack
// (SIGSEGV, issue 40 pass 9). No route of this server is longer than a few dozen bytes.
constexpr size_t kMaxTarget = 2048;

// A connection thread's stack. The default 8 MiB is address space each thread holds, counted by
// `ulimit -v`: 190 threads left by connections that had closed held 1.5 GB of it, and a valid
// request then got 503 out_of_memory. Handlers recurse little (JSON and YAML nesting is bounded at
// 128 levels; PCRE2 keeps its backtracking on the heap), so 2 MiB is room enough; sanitizer
// builds, whose frames are larger, keep the default.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr size_t kConnectionStack = 0;  // the default
#else
constexpr size_t kConnectionStack = size_t(2) << 20;
#endif
// How long an idle connection thread waits for another connection before it ends.
constexpr std::chrono::seconds kIdleThreadLife{10};

// httplib's connection threads (its TaskQueue): one per connection being served, started when no
// idle thread can take it, up to `max`; beyond that, connections wait in arrival order. (A fixed
// pool the size of the engine's queue let some 68 stalled clients starve every other client,
// /health included.) A thread idle for kIdleThreadLife ends, so a burst leaves no crowd of
// threads; each has a kConnectionStack stack.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max) : max_(std::max<size_t>(1, max)) {}
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::list<pthread_t> done;
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(fn));
      if (jobs_.size() > idle_ && threads_.size() < max_) {
        auto it = threads_.emplace(threads_.end());
        if (!start(it)) {
          // The process's thread limit: the connection waits for a running thread instead.
          threads_.erase(it);
          cv_.notify_one();
        }
      } else {
        cv_.notify_one();
      }
      done.swap(finished_);
    }
    for (pthread_t t : done) pthread_join(t, nullptr);
  }

  // Runs the connections already queued (each ends at once: the listening socket is closed),
  // then joins every thread.
  void shutdown() override {
    std::list<pthread_t> done;
    {
      std::unique_lock<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_all();
      exited_.wait(lock, [&] { return threads_.empty(); });
      done.swap(finished_);
    }
    for (pthread_t t : done) pthread_join(t, nullptr);
  }

 private:
  using Self = std::list<pthread_t>::iterator;
  // A thread running work(it) with a kConnectionStack stack, its id in *it (called under mu_,
  // which work() takes first, so *it is set before the thread can move it).
  bool start(Self it) {
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return false;
    if (kConnectionStack > 0) pthread_attr_setstacksize(&attr, kConnectionStack);
    auto* arg = new std::pair<ConnectionThreads*, Self>(this, it);
    const int rc = pthread_create(
        &*it, &attr,
        [](void* p) -> void* {
          std::unique_ptr<std::pair<ConnectionThreads*, Self>> a(
              static_cast<std::pair<ConnectionThreads*, Self>*>(p));
          a->first->work(a->second);
          return nullptr;
        },
        arg);
    pthread_attr_destroy(&attr);
    if (rc != 0) delete arg;
    return rc == 0;
  }

  void work(Self self) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      ++idle_;
      const bool woken =
          cv_.wait_for(lock, kIdleThreadLife, [&] { return !jobs_.empty() || stopping_; });
      --idle_;
      if (jobs_.empty()) {
        if (stopping_ || !woken) break;
        continue;
      }
      std::function<void()> fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
    // A thread cannot join itself: its handle goes to whoever joins next (enqueue or shutdown).
    finished_.splice(finished_.end(), threads_, self);
    exited_.notify_all();
  }

  const size_t max_;
  std::mutex mu_;
  std::condition_variable cv_, exited_;
  std::deque<std::function<void()>> jobs_;
  std::list<pthread_t> threads_, finished_;
  size_t idle_ = 0;
  bool stopping_ = false;
};

// One connection's socket as httplib reads and writes it. httplib's own stream (internal to the
// compiled library) only bounds each read; this one also ends a read at the request's deadline
// and when the server stops, so a client that sends a byte now and then cannot hold its thread.
class Connection : public httplib::Stream {
 public:
  Connection(socket_t fd, const HttpOptions& opt, const std::atomic<socket_t>& listener)
      : fd_(fd), opt_(opt), listener_(listener) {}

  // Waits for the next request's first byte (up to the keep-alive timeout); its clock starts then.
  bool next_request() {
    timed_out_ = false;
    if (pos_ == end_ &&
        !wait(POLLIN, Clock::now() + std::chrono::seconds(opt_.keep_alive_timeout_s)))
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
    target,           // a request target that is not a path of this server's form
    target_too_long,  // kMaxTarget
    version,          // not HTTP/1.0 or HTTP/1.1
  };
  Refusal refused() const { return refused_; }
  // The request line and headers passed kMaxHeaderBytes or kMaxHeaderLines.
  bool head_too_large() const { return refused_ == Refusal::head_too_large; }
  // A read of this request ran out of time (the read timeout or the request's deadline).
  bool timed_out() const { return timed_out_; }
  // The request was refused before its body was read to the end: what follows is not a request.
  void close_after_response() { close_ = true; }
  bool must_close() const { return close_ || timed_out_; }

  bool is_readable() const override { return pos_ < end_ || wait_to_read(); }
  bool is_writable() const override {
    return wait(POLLOUT, Clock::now() + std::chrono::seconds(opt_.write_timeout_s)) && alive();
  }

  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == end_) {
      if (!wait_to_read()) return -1;
      ssize_t got;
      do {
        got = ::recv(fd_, buf_, sizeof buf_, 0);
      } while (got < 0 && errno == EINTR);
      if (got <= 0) return got;
      pos_ = 0;
      end_ = size_t(got);
    }
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

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address(::getsockname, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  // Data to read within the read timeout and before the request's deadline.
  bool wait_to_read() const {
    const auto idle_end = Clock::now() + std::chrono::seconds(opt_.read_timeout_s);
    if (wait(POLLIN, std::min(idle_end, deadline_))) return true;
    timed_out_ = listener_ != INVALID_SOCKET;  // (not when the server stops)
    return false;
  }

  // RFC 9112 section 2.2: every line of the head and of chunked framing ends in CRLF. A bare LF
  // ended the head for these checks but not for the library, which skips such a line, so the
  // headers after it were never checked (a smuggled request, the header limits bypassed: pass 9);
  // a bare CR, and a NUL (RFC 9110 section 5.5), are refused likewise. Called on each byte.
  bool crlf_discipline(char c) {
    const bool was_cr = after_cr_;
    after_cr_ = c == '\r';
    if (was_cr) return c == '\n';
    return c != '\n' && c != '\0';
  }

  // How many of the next n buffered bytes may be handed out while the request's head is read:
  // keeps its bytes (at most kMaxHeaderBytes) and counts its lines (a line ends at LF; an empty
  // one, CR aside, ends the head), and stops at the head's end, so the body after it is never
  // counted. 0 once refused.
  size_t head_part(size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const char c = buf_[pos_ + i];
      if (head_.size() >= kMaxHeaderBytes) return refuse(Refusal::head_too_large);
      head_ += c;
      if (!crlf_discipline(c)) return refuse(Refusal::line_end);
      if (c == '\r') continue;
      if (c != '\n') {
        ++line_len_;
        continue;
      }
      if (line_len_ == 0) {
        in_head_ = false;
        return head_ended() ? i + 1 : 0;
      }
      line_len_ = 0;
      if (++head_lines_ > kMaxHeaderLines) return refuse(Refusal::head_too_large);
    }
    return n;
  }

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
  bool head_ended() {
    std::string length;
    bool has_length = false, has_encoding = false, chunked = false;
    if (const Refusal why = request_line_problem(head_.substr(0, head_.find('\r')));
        why != Refusal::none)
      return refused(why);
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
      } else if (name == "connection") {
        // Its options are case-insensitive tokens (RFC 9110 section 7.6.1); the library honours
        // only the exact value "close".
        for (char& ch : value) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        for (size_t b = 0; b < value.size();) {
          size_t e = value.find(',', b);
          if (e == std::string::npos) e = value.size();
          std::string token = value.substr(b, e - b);
          trim(token);
          if (token == "close") close_ = true;
          b = e + 1;
        }
      }
    }
    if (has_length && has_encoding) return refused(Refusal::framing);
    if (has_length && std::stoull(length) > opt_.max_body) return refused(Refusal::too_large);
    if (chunked) {
      chunk_ = Chunk::size_line;
      chunk_left_ = 0;
      size_digits_ = true;
      line_len_ = 0;
    }
    head_.clear();
    head_.shrink_to_fit();
    return true;
  }
  bool refused(Refusal why) {
    refuse(why);
    return false;
  }

 public:
  // The request line "METHOD SP target SP HTTP/1.x" (RFC 9112 section 3): the target a path of
  // this server's form, "/..." without percent-escapes (the library routed on the decoded path,
  // so "/v1%2Fattention" and "%2Fv1%2Fcompletions" reached /v1/attention, past any proxy that
  // filters routes by path; no route here has an escape), or "*"; at most kMaxTarget bytes; the
  // version HTTP/1.0 or HTTP/1.1 (HTTP/2.0, HTTP/9.9 and none at all were served as 1.1). The
  // method is the library's to judge (a 405 or 400 as before).
  static Refusal request_line_problem(const std::string& line) {
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string::npos) return Refusal::version;
    const std::string target = line.substr(sp1 + 1, sp2 - sp1 - 1), version = line.substr(sp2 + 1);
    if (target.size() > kMaxTarget) return Refusal::target_too_long;
    if (version != "HTTP/1.1" && version != "HTTP/1.0") return Refusal::version;
    if (target == "*") return Refusal::none;
    if (target.empty() || target[0] != '/') return Refusal::target;
    const std::string path = target.substr(0, target.find('?'));
    if (path.find('%') != std::string::npos) return Refusal::target;
    return Refusal::none;
  }

 private:
  // How many of the next n bytes of a chunked body may be handed out: follows its framing (a size
  // line, that many bytes and CRLF, ..., a zero size, the empty line) so that a size line (its
  // extensions included) stays within kMaxChunkLine (cpp-httplib read it whole: a 200 MB
  // extension was buffered and answered 200) and a trailer field, which the library refuses
  // anyway, is refused in words. 0 once refused. Malformed framing is left to the library.
  size_t chunk_part(size_t n) {
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
          } else if (size_digits_ && std::isxdigit(static_cast<unsigned char>(c))) {
            if (chunk_left_ > (uint64_t(1) << 40)) break;  // absurd: the library refuses it
            chunk_left_ = chunk_left_ * 16 + uint64_t(std::isdigit(static_cast<unsigned char>(c))
                                                          ? c - '0'
                                                          : std::tolower(c) - 'a' + 10);
          } else {
            size_digits_ = false;  // an extension, or whitespace, follows the size
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

  size_t refuse(Refusal why) {
    refused_ = why;
    close_ = true;
    return 0;
  }

  // poll() for `events` until `until`, in short slices so that a stopping server (its listening
  // socket closed) stops reading at once; a response already under way is still written out.
  bool wait(short events, Clock::time_point until) const {
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

  // Whether the client is still there (as httplib checks before each write): a hung-up client
  // reads as end of file, so a stream stops at its next event.
  bool alive() const {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) == 0) return true;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  }

  template <typename F>
  void address(F get, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    char host[NI_MAXHOST] = "", serv[NI_MAXSERV] = "";
    if (get(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0 &&
        ::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                      NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host;
      port = std::atoi(serv);
    }
  }

  socket_t fd_;
  const HttpOptions& opt_;
  const std::atomic<socket_t>& listener_;
  Clock::time_point deadline_ = Clock::time_point::max();
  mutable bool timed_out_ = false;
  bool close_ = false;
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
  bool after_cr_ = false;  // the last byte of the head or of chunked framing was a CR
  char buf_[16384];
  size_t pos_ = 0, end_ = 0;
};

// The connection this thread serves, for the handlers httplib calls on it (which see only the
// request): whether a read timed out, and to close it after a refused body.
thread_local Connection* t_connection = nullptr;

// httplib::Server serving each connection through Connection. process_and_close_socket is the
// library's per-connection entry (virtual, called from its accept loop); this one keeps its
// keep-alive rule (at most keep_alive_max_count_ requests, the last answered with
// "Connection: close").
class ConnectionServer : public httplib::Server {
 public:
  explicit ConnectionServer(const HttpOptions& opt) : opt_(opt) {}

 private:
  bool process_and_close_socket(socket_t sock) override {
    bool ret = false;
    {
      Connection conn(sock, opt_, svr_sock_);
      t_connection = &conn;
      for (size_t left = keep_alive_max_count_; left > 0 && conn.next_request(); --left) {
        bool closed = false;
        ret = process_request(conn, left == 1, closed, nullptr);
        if (!ret || closed || conn.must_close()) break;
      }
      t_connection = nullptr;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  const HttpOptions& opt_;
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(HttpOptions o) : opt(std::move(o)), svr(opt) {}
  HttpOptions opt;
  Handler handler;
  ConnectionServer svr;
  int listen_fd = -1;  // the listening socket, seen through the socket-options hook
};

namespace {
void write(Response&& r, httplib::Response& res) {
  res.status = r.status;
  for (const auto& [name, value] : r.headers) res.set_header(name.c_str(), value);
  if (!r.stream) {
    // The body is moved into the library's response, not copied (set_content copies: a 39 MB
    // /v1/attention reply was in memory twice), nor handed over as a content provider: the
    // library's providers write nothing once the listening socket is closed, so a reply under
    // way at SIGTERM went out as its headers alone. The reply budget's hold (Response::hold) is
    // given back when the library destroys its response, after writing it (or failing to): the
    // releaser is a public field of httplib::Response, called by its destructor.
    res.body = std::move(r.body);
    res.set_header("Content-Type", r.content_type);
    if (r.hold) res.content_provider_resource_releaser_ = [hold = std::move(r.hold)](bool) {};
    return;
  }
  auto producer = r.producer;
  res.set_header("Cache-Control", "no-cache");
  // httplib calls the provider on this connection's thread once the headers are written; the
  // producer blocks between events, and each event is written (and flushed to the socket) as soon
  // as the engine has it.
  res.set_chunked_content_provider(r.content_type.c_str(),
                                   [producer](size_t, httplib::DataSink& sink) {
                                     bool open = true;
                                     if (producer)
                                       producer([&](const std::string& e) {
                                         if (!open) return false;
                                         std::string line = "data: " + e + "\n\n";
                                         open = sink.write(line.data(), line.size());
                                         return open;
                                       });
                                     if (open) sink.done();
                                     return open;
                                   });
}

const char* const kTimeoutMessage =
    "request timeout: the request did not arrive in time (--read-timeout, --request-timeout)";

// Reads the body through `content`, at most `max` bytes: the library's own limit
// (set_payload_max_length) covers only a declared Content-Length, not a chunked body. Returns 0, or
// the status that refuses the request: 413 too large, 408 too slow, 400 broken off. A multipart
// body is counted and dropped: no endpoint takes one, and the empty body then fails as JSON like
// any other non-JSON body.
int read_body(const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader& content, size_t max, std::string& body) {
  // A request with neither Content-Length nor chunked encoding has no body (RFC 9112 section
  // 6.3); httplib would read one until the client closes, keeping it waiting for an answer.
  if (!req.has_header("Content-Length") &&
      req.get_header_value("Transfer-Encoding").find("chunked") == std::string::npos)
    return 0;
  bool too_large = false;
  bool ok;
  if (req.is_multipart_form_data()) {
    size_t seen = 0;
    ok = content([](const httplib::MultipartFormData&) { return true; },
                 [&](const char*, size_t n) {
                   seen += n;
                   too_large = seen > max;
                   return !too_large;
                 });
  } else {
    ok = content([&](const char* data, size_t n) {
      too_large = body.size() + n > max;
      if (!too_large) body.append(data, n);
      return !too_large;
    });
  }
  if (ok) return 0;
  if (too_large || res.status == 413) return 413;
  if (t_connection && t_connection->timed_out()) return 408;
  return 400;
}
}  // namespace

HttpServer::HttpServer(HttpOptions opt, Handler h) : impl_(std::make_unique<Impl>(std::move(opt))) {
  impl_->handler = std::move(h);
  auto& svr = impl_->svr;
  const size_t max_connections = size_t(std::max(1, impl_->opt.max_connections));
  svr.new_task_queue = [max_connections] { return new ConnectionThreads(max_connections); };
  svr.set_payload_max_length(impl_->opt.max_body);
  // cpp-httplib's default options set SO_REUSEPORT, which lets a second server bind a port that
  // one is already listening on (the kernel then splits connections between them). SO_REUSEADDR
  // alone only allows rebinding a port whose old connections linger in TIME_WAIT; a port with a
  // live listener stays refused (EADDRINUSE).
  svr.set_socket_options([this](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    impl_->listen_fd = int(sock);
  });
  svr.set_read_timeout(impl_->opt.read_timeout_s, 0);
  svr.set_write_timeout(impl_->opt.write_timeout_s, 0);
  svr.set_keep_alive_timeout(impl_->opt.keep_alive_timeout_s);
  auto serve = [this](const httplib::Request& req, std::string body, httplib::Response& res) {
    Request r;
    r.method = req.method;
    r.path = req.path;
    r.authorization = req.get_header_value("Authorization");
    r.body = std::move(body);
    write(impl_->handler(r), res);
  };
  // Every method reaches the handler, which answers 405 with its JSON error for the wrong one
  // (httplib alone would give 404 to a method without a route).
  // cpp-httplib reads no body for GET or OPTIONS: one sent anyway would be read as the next
  // request on the connection (a 400 to a valid request after it), so the connection closes.
  httplib::Server::Handler without_body = [serve](const httplib::Request& req,
                                                  httplib::Response& res) {
    serve(req, req.body, res);
    if ((req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0") ||
        req.get_header_value("Transfer-Encoding").find("chunked") != std::string::npos) {
      res.set_header("Connection", "close");
      if (t_connection) t_connection->close_after_response();
    }
  };
  // Methods with a body read it here rather than in httplib, whose own reading caps a
  // form-encoded body (application/x-www-form-urlencoded, as `curl -d` sends) at 8 KiB whatever
  // the payload limit (CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH, fixed in the compiled
  // library); every endpoint reads its body as JSON whatever the content type says.
  httplib::Server::HandlerWithContentReader with_body =
      [this, serve](const httplib::Request& req, httplib::Response& res,
                    const httplib::ContentReader& content) {
        std::string body;
        const int refused = read_body(req, res, content, impl_->opt.max_body, body);
        if (refused == 0) return serve(req, std::move(body), res);
        if (t_connection) t_connection->close_after_response();
        const Connection::Refusal why =
            t_connection ? t_connection->refused() : Connection::Refusal::none;
        const char* msg = refused == 413   ? "request body too large"
                          : refused == 408 ? kTimeoutMessage
                          : why == Connection::Refusal::chunk_line_too_long
                              ? "a chunk's size line (with its extensions) over 4096 bytes"
                          : why == Connection::Refusal::trailer
                              ? "trailer fields after a chunked body are not "
                                "accepted"
                          : why == Connection::Refusal::chunk_framing
                              ? "a chunk's data not followed by CRLF (RFC 9112 section 7.1)"
                          : why == Connection::Refusal::line_end
                              ? "a line of the chunked framing that does not end in CRLF"
                              : "the request body could not be read";
        write(error_response(refused, msg, "invalid_request_error"), res);
      };
  svr.Get(".*", without_body);
  svr.Options(".*", without_body);
  svr.Post(".*", with_body);
  svr.Put(".*", with_body);
  svr.Patch(".*", with_body);
  svr.Delete(".*", with_body);
  // Errors raised by the library itself (400 unparsable request line or headers, 414 URI too
  // long): give them a JSON body too. Headers cut off by a timeout are a 408.
  svr.set_error_handler(httplib::Server::HandlerWithResponse([serve](const httplib::Request& req,
                                                                     httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    // The request's head was refused while it was read (Connection::Refusal): its answer
    // first, whatever the method.
    using Refusal = Connection::Refusal;
    // A request line the library refused before its headers were read (a version it does not
    // know, none at all) is judged here as the head's checks judge it.
    Refusal why = t_connection ? t_connection->refused() : Refusal::none;
    if (res.status == 400 && why == Refusal::none && !req.method.empty() && req.path.empty()) {
      why = Connection::request_line_problem(req.method + " " + req.target + " " + req.version);
      if (why != Refusal::none && t_connection) t_connection->close_after_response();
    }
    if (res.status == 400 && why != Refusal::none) {
      const auto answer = [&](int status, const std::string& msg) {
        write(error_response(status, msg, "invalid_request_error"), res);
      };
      if (why == Refusal::head_too_large)
        answer(431, "request headers too large: at most " + std::to_string(kMaxHeaderBytes >> 10) +
                        " KiB and " + std::to_string(kMaxHeaderLines) +
                        " lines for the request line and headers together");
      else if (why == Refusal::too_large)
        answer(413, "request body too large");
      else if (why == Refusal::target_too_long)
        answer(414, "request target over " + std::to_string(kMaxTarget) + " bytes");
      else if (why == Refusal::version)
        answer(505, "the request's HTTP version must be 1.1 or 1.0");
      else if (why == Refusal::target)
        answer(400,
               "the request target must be a path starting with '/' without percent-escapes "
               "(no route of this server has one), or '*'");
      else if (why == Refusal::line_end)
        answer(400,
               "a line of the request's head that does not end in CRLF, a bare CR, or a NUL "
               "byte (RFC 9112 section 2.2)");
      else
        answer(400,
               "conflicting framing: a Content-Length that is not one decimal "
               "number, two different ones, Content-Length beside "
               "Transfer-Encoding, a Transfer-Encoding other than chunked, or a "
               "header line that is not 'name: value' (RFC 9112 sections 5 and "
               "6.3)");
      res.set_header("Connection", "close");
      return httplib::Server::HandlerResponse::Handled;
    }
    // A method no route takes (TRACE, CONNECT: httplib's 400; QUERY or any other token: a
    // request line httplib refuses, headers unread): the router's answer, a 405 with the
    // path's method in Allow, or the 401 / 404 of any request, never a bare 400.
    const bool token =
        !req.method.empty() && std::all_of(req.method.begin(), req.method.end(), [](char c) {
          return (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
        });
    // Any body such a request carries is left unread: the connection closes after the
    // answer (else those bytes were read as the next request, a 400 to a valid one).
    if (res.status == 400 && token && !(t_connection && t_connection->timed_out())) {
      const bool line_only = req.path.empty() && !req.target.empty() && req.target[0] == '/';
      if (req.method == "TRACE" || req.method == "CONNECT" || line_only) {
        httplib::Request line = req;
        if (line_only) line.path = req.target.substr(0, req.target.find('?'));
        serve(line, "", res);
        res.set_header("Connection", "close");
        if (t_connection) t_connection->close_after_response();
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (res.status == 400 && t_connection && t_connection->timed_out()) {
      write(error_response(408, kTimeoutMessage, "invalid_request_error"), res);
      return httplib::Server::HandlerResponse::Handled;
    }
    std::string msg =
        res.status == 413 ? "request body too large" : "HTTP error " + std::to_string(res.status);
    write(error_response(res.status, msg, "invalid_request_error"), res);
    // What follows a request the library refused (a header line over 8 KiB, a bad one, a
    // declared body too large) is not a request: read as one, it was answered on its own (a
    // request smuggled in the refused one's body).
    res.set_header("Connection", "close");
    if (t_connection) t_connection->close_after_response();
    return httplib::Server::HandlerResponse::Handled;
  }));
}

HttpServer::~HttpServer() { stop(); }

namespace {
// Why bind() failed, in the words of the error policy ("address already in use").
std::string bind_failure(int err) {
  switch (err) {
    case EADDRINUSE:
      return "address already in use";
    case EACCES:
      return "permission denied (ports below 1024 need privileges)";
    case EADDRNOTAVAIL:
      return "not an address of this machine";
    case 0:
      return "cannot bind (unknown host?)";
    default: {
      std::string s = std::strerror(err);
      if (!s.empty()) s[0] = char(std::tolower(static_cast<unsigned char>(s[0])));
      return s;
    }
  }
}
}  // namespace

int HttpServer::bind() {
  auto& o = impl_->opt;
  int port = o.port;
  // httplib tries each address of the host, closing the socket after a failed bind or listen;
  // errno still holds the bind's error afterwards (close and freeaddrinfo do not set it on
  // success).
  errno = 0;
  if (port == 0) {
    port = impl_->svr.bind_to_any_port(o.host);
    if (port < 0) throw Error("serve", o.host + ":0: " + bind_failure(errno));
  } else if (!impl_->svr.bind_to_port(o.host, port)) {
    throw Error("serve", o.host + ":" + std::to_string(port) + ": " + bind_failure(errno));
  }
  // cpp-httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed in the compiled
  // library). With many clients opening connections at once the kernel then drops handshakes and
  // those clients wait for 1 s SYN retransmits (or see a reset connection). Calling listen() again
  // on the bound socket only raises the backlog.
  if (impl_->listen_fd >= 0 && ::listen(impl_->listen_fd, SOMAXCONN) != 0)
    throw Error("serve", "cannot raise the listen backlog");
  return port;
}

void HttpServer::serve() { impl_->svr.listen_after_bind(); }

void HttpServer::stop() {
  if (impl_->svr.is_running()) impl_->svr.stop();
}

}  // namespace ragform::server
