// The only file that knows the HTTP library (cpp-httplib): binds, reads a request into
// server::Request, hands it to a handler that never throws, and writes the server::Response (a
// JSON body, or server-sent events "data: ...\n\n" written one by one as the response producer
// hands them over, for a stream). Bodies over max_body bytes get 413 with a JSON error before any
// handler runs.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "server/api.h"

namespace ragform::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;            // 0 = any free port
  size_t max_body = 1 << 20;  // bytes
  int threads = 32;           // connection threads (requests in flight)
  int timeout_s = 600;        // read/write timeout of one connection
};

class HttpServer {
 public:
  using Handler = std::function<Response(const Request&)>;  // must not throw
  HttpServer(HttpOptions opt, Handler h);
  ~HttpServer();
  // Binds; returns the bound port. Throws Error when the address cannot be bound.
  int bind();
  // Serves until stop() (from any thread). Returns after the listening socket is closed.
  void serve();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ragform::server
