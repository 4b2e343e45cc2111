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
#include "server/connection.h"

namespace ragform::server {

namespace {

using Clock = std::chrono::steady_clock;

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

// The connection this thread serves, for the handlers httplib calls on it (which see only the
// request): whether a read timed out, and to close it after a refused body.
thread_local Connection* t_connection = nullptr;

// The reason phrase of a status this file writes itself.
const char* reason(int status) {
  switch (status) {
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Bad Request";
  }
}

// A request refused while its request line was read gets its answer here: the library's first
// read of the line fails, and it closes the connection without a word (pass 10: a NUL or a bare
// CR in the request line, a 70 KB line).
void answer_unread(Connection& conn) {
  const Connection::Answer a = Connection::answer(conn.refused());
  const Response r = error_response(a.status, a.message, "invalid_request_error");
  const std::string out = "HTTP/1.1 " + std::to_string(a.status) + " " + reason(a.status) +
                          "\r\nContent-Type: " + r.content_type +
                          "\r\nContent-Length: " + std::to_string(r.body.size()) +
                          "\r\nConnection: close\r\n\r\n" + r.body;
  for (size_t at = 0; at < out.size();) {
    const ssize_t n = conn.write(out.data() + at, out.size() - at);
    if (n <= 0) return;
    at += size_t(n);
  }
}

// httplib::Server serving each connection through Connection. process_and_close_socket is the
// library's per-connection entry (virtual, called from its accept loop); this one keeps its
// keep-alive rule (at most keep_alive_max_count_ requests, the last answered with
// "Connection: close"), but whether a connection persists is Connection's to say (must_close):
// the library read HTTP/1.0's "keep-alive" in any other case than "Keep-Alive" as close.
class ConnectionServer : public httplib::Server {
 public:
  explicit ConnectionServer(const HttpOptions& opt) : opt_(opt) {}

 private:
  bool process_and_close_socket(socket_t sock) override {
    bool ret = false;
    {
      Connection conn(sock, opt_, svr_sock_);
      t_connection = &conn;
      for (size_t left = keep_alive_max_count_; left > 0 && conn.next_request(left); --left) {
        bool closed = false;  // the library's own reading of the Connection field: not used
        ret = process_request(conn, left == 1, closed, nullptr);
        if (!ret && conn.refused() != Connection::Refusal::none && conn.written() == 0)
          answer_unread(conn);
        if (!ret || conn.must_close()) break;
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
  // nginx's status for a client that left (server/message.h client_gone) ends the connection
  // (pass 18: a request pipelined behind it was still served). The compiled library writes its
  // own reason phrase for a status it does not know ("Internal Server Error"); the JSON body's
  // code says client_closed_request.
  if (r.status == 499 && t_connection) t_connection->close_after_response();
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
// the status that refuses the request: 413 too large, 408 too slow, 400 broken off.
// Whether a Content-Type names a multipart type (multipart/form-data, multipart/mixed, ...): its
// media type, in any case (RFC 9110 section 8.3.1), whatever its parameters (pass 17:
// "Multipart/Form-Data" was read as JSON; pass 18: multipart/mixed was "malformed JSON").
bool multipart(const std::string& content_type) {
  std::string type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.pop_back();
  const size_t start = type.find_first_not_of(" \t");
  type = start == std::string::npos ? "" : type.substr(start);
  for (char& c : type) c = char(std::tolower(static_cast<unsigned char>(c)));
  return type.rfind("multipart/", 0) == 0;
}

int read_body(const httplib::Request& req, httplib::Response& res,
              const httplib::ContentReader& content, size_t max, std::string& body) {
  // A request with neither Content-Length nor chunked encoding has no body (RFC 9112 section
  // 6.3); httplib would read one until the client closes, keeping it waiting for an answer.
  if (!req.has_header("Content-Length") &&
      req.get_header_value("Transfer-Encoding").find("chunked") == std::string::npos)
    return 0;
  bool too_large = false;
  bool ok;
  // A body the library takes for multipart ("multipart/form-data" in lower case) must be read
  // through its multipart parser (the plain reader hands it to receivers that are not there):
  // counted and dropped, the router refuses it by its media type (Request::multipart).
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
    // The path as the target gives it (an absolute-form target's authority cut; no escapes to
    // decode, Connection refuses them); "*" and a target the library could not split as it was.
    const std::string path = Connection::target_path(req.target);
    r.path = path.empty() ? req.path : path;
    r.authorization = req.get_header_value("Authorization");
    r.multipart = multipart(req.get_header_value("Content-Type"));
    r.body = std::move(body);
    Connection* const conn = t_connection;
    const ClientWatch watch([conn] { return conn && conn->peer_gone(); });
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
      if (t_connection) t_connection->close_after_response();
    }
  };
  // Methods with a body read it here rather than in httplib, whose own reading caps a
  // form-encoded body (application/x-www-form-urlencoded, as `curl -d` sends) at 8 KiB whatever
  // the payload limit (CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH, fixed in the compiled
  // library); every endpoint reads its body as JSON whatever the content type says.
  httplib::Server::HandlerWithContentReader with_body = [this, serve](
                                                            const httplib::Request& req,
                                                            httplib::Response& res,
                                                            const httplib::ContentReader& content) {
    std::string body;
    const int refused = read_body(req, res, content, impl_->opt.max_body, body);
    if (refused == 0) return serve(req, std::move(body), res);
    if (t_connection) t_connection->close_after_response();
    const Connection::Refusal why =
        t_connection ? t_connection->refused() : Connection::Refusal::none;
    // The library's multipart parser fails a body without a boundary (pass 17: "could not
    // be read" did not say why).
    const bool form = refused == 400 && multipart(req.get_header_value("Content-Type"));
    const std::string msg = refused == 413   ? "request body too large"
                            : refused == 408 ? kTimeoutMessage
                            : form           ? kMultipartRefusal
                                             : Connection::answer(why).message;
    // One code for a multipart body, whichever layer refuses it (router.cpp; pass 18).
    write(error_response(refused, msg, "invalid_request_error", form ? "invalid_json" : ""), res);
  };
  // Whether the connection persists after a response is Connection's to say (must_close), not
  // the library's: it advertised "Keep-Alive" on responses after which it closed (every HTTP/1.0
  // reply, a refused body) and wrote "Connection: close" twice on some (pass 10). Called after
  // the library has set its own fields, on every response it writes.
  svr.set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    res.headers.erase("Connection");  // the library's header map compares names in any case
    res.headers.erase("Keep-Alive");
    if (!t_connection || t_connection->must_close()) {
      res.set_header("Connection", "close");
      return;
    }
    // An HTTP/1.0 client keeps the connection only when the response says so (RFC 9112 C.2.2).
    if (t_connection->http10()) res.set_header("Connection", "keep-alive");
    res.set_header("Keep-Alive", "timeout=" + std::to_string(impl_->opt.keep_alive_timeout_s) +
                                     ", max=" + std::to_string(t_connection->requests_left() - 1));
  });
  svr.Get(".*", without_body);
  svr.Options(".*", without_body);
  svr.Post(".*", with_body);
  svr.Put(".*", with_body);
  svr.Patch(".*", with_body);
  svr.Delete(".*", with_body);
  // Errors raised by the library itself (400 unparsable request line or headers, 414 URI too
  // long): give them a JSON body too. Headers cut off by a timeout are a 408.
  svr.set_error_handler(httplib::Server::HandlerWithResponse(
      [serve](const httplib::Request& req, httplib::Response& res) {
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
          const Connection::Answer a = Connection::answer(why);
          write(error_response(a.status, a.message, "invalid_request_error"), res);
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
          const bool line_only = req.path.empty() && !Connection::target_path(req.target).empty();
          if (req.method == "TRACE" || req.method == "CONNECT" || line_only) {
            serve(req, "", res);
            if (t_connection) t_connection->close_after_response();
            return httplib::Server::HandlerResponse::Handled;
          }
        }
        if (res.status == 400 && t_connection && t_connection->timed_out()) {
          write(error_response(408, kTimeoutMessage, "invalid_request_error"), res);
          return httplib::Server::HandlerResponse::Handled;
        }
        std::string msg = res.status == 413 ? "request body too large"
                                            : "HTTP error " + std::to_string(res.status);
        write(error_response(res.status, msg, "invalid_request_error"), res);
        // What follows a request the library refused (a header line over 8 KiB, a bad one, a
        // declared body too large) is not a request: read as one, it was answered on its own (a
        // request smuggled in the refused one's body).
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
