// The only file that knows the HTTP library (cpp-httplib 0.11): binds, reads a request into
// server::Request, hands it to a handler that never throws, and writes the server::Response (a
// JSON body, or server-sent events "data: ...\n\n" written one by one as the response producer
// hands them over, for a stream).
//
// Hardening (docs/server.md "Security"):
//  - Bodies over max_body bytes get 413 with a JSON error, whatever their content type (httplib's
//    own 8 KiB cap on form bodies never applies) or transfer encoding (chunked, or read to EOF).
//  - The request line and headers together are at most 64 KiB and 256 lines (431 beyond them);
//    cpp-httplib bounds each line only.
//  - Connections get a thread each, started on demand, up to max_connections (more wait for one
//    in arrival order), so a few stalled clients cannot take the threads /health needs; the
//    engine's concurrency is bounded separately (--batch, --queue).
//  - Reading a request times out after read_timeout_s of silence, and the whole request (line,
//    headers, body) must arrive within request_timeout_s of its first byte (else 408, or a closed
//    connection while the request line is still incomplete); writing has its own long timeout, for
//    streams whose client reads slowly.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "server/message.h"

namespace ragform::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;               // 0 = any free port
  size_t max_body = 1 << 20;     // bytes
  int max_connections = 256;     // connections served at once (a thread each)
  int read_timeout_s = 10;       // longest silence while a request is read
  int request_timeout_s = 30;    // a whole request (line, headers, body), from its first byte
  int write_timeout_s = 600;     // longest wait for the client to take response bytes
  int keep_alive_timeout_s = 5;  // an idle connection waits this long for its next request
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
