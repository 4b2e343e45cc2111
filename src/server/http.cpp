#include "server/http.h"

// Debian's cpp-httplib is a compiled library built with OpenSSL, zlib and brotli support; the
// build passes its pkg-config flags (CPPHTTPLIB_*_SUPPORT) so this header matches the library.
#include <httplib.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace ragform::server {

struct HttpServer::Impl {
  HttpOptions opt;
  Handler handler;
  httplib::Server svr;
  int listen_fd = -1;  // the listening socket, seen through the socket-options hook
};

namespace {
void write(const Response& r, httplib::Response& res) {
  res.status = r.status;
  if (!r.stream) {
    res.set_content(r.body, r.content_type.c_str());
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
}  // namespace

HttpServer::HttpServer(HttpOptions opt, Handler h) : impl_(std::make_unique<Impl>()) {
  impl_->opt = std::move(opt);
  impl_->handler = std::move(h);
  auto& svr = impl_->svr;
  int threads = impl_->opt.threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
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
  svr.set_read_timeout(impl_->opt.timeout_s, 0);
  svr.set_write_timeout(impl_->opt.timeout_s, 0);
  auto route = [this](const httplib::Request& req, httplib::Response& res) {
    Request r;
    r.method = req.method;
    r.path = req.path;
    r.authorization = req.get_header_value("Authorization");
    r.body = req.body;
    write(impl_->handler(r), res);
  };
  // Every method reaches the handler, which answers 405 with its JSON error for the wrong one
  // (httplib alone would give 404 to a method without a route).
  svr.Get(".*", route);
  svr.Post(".*", route);
  svr.Put(".*", route);
  svr.Patch(".*", route);
  svr.Delete(".*", route);
  svr.Options(".*", route);
  // Errors raised by the library itself (413 payload too large, 400 unparsable request line):
  // give them a JSON body too.
  svr.set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string msg = res.status == 413 ? "request body too large"
                                            : "HTTP error " + std::to_string(res.status);
        write(error_response(res.status, msg, "invalid_request_error"), res);
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
