// Raw loopback sockets for the server tests that need what an HTTP client library will not send:
// half a request, a dribbled one, a chunked body, a request without Content-Length. Also
// `ragform serve` run to its exit with a time limit (a server that starts when it should have
// refused its flags is killed, not waited for).
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/test_support.h"

namespace ragform::testing {

// A connected loopback socket, closed on destruction; -1 when the connection failed.
class RawSocket {
 public:
  explicit RawSocket(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;
  RawSocket(RawSocket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

  bool ok() const { return fd_ >= 0; }
  // False when the server has closed the connection (or it broke).
  bool send(const std::string& s) {
    return fd_ >= 0 && ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size());
  }
  // Shuts the sending side (a half-close: the client can still read the answer).
  bool shut_write() { return fd_ >= 0 && ::shutdown(fd_, SHUT_WR) == 0; }
  // Whether the server has sent something (or closed) within timeout_s.
  bool readable(double timeout_s) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, int(timeout_s * 1000)) > 0;
  }
  // Everything the server sends until it closes the connection, or until `timeout_s` passes
  // (then nullopt: the server neither answered in full nor hung up).
  std::optional<std::string> read_until_close(double timeout_s) {
    std::string out;
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(long(timeout_s * 1000));
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            end - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, int(left)) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, size_t(n));
    }
  }
  // The response to a request that asks for "Connection: close", within timeout_s.
  std::optional<std::string> exchange(const std::string& request, double timeout_s) {
    if (!send(request)) return std::nullopt;
    return read_until_close(timeout_s);
  }

 private:
  int fd_ = -1;
};

// The status code of a raw HTTP response ("HTTP/1.1 200 OK..." -> 200), 0 when there is none.
inline int raw_status(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::atoi(response.c_str() + 9);
}

// The body of a raw response (after the blank line).
// How many responses a connection's bytes hold (a smuggled request is answered by a second one).
inline size_t count_responses(const std::string& s) {
  size_t n = 0;
  for (size_t at = s.find("HTTP/1.1 "); at != std::string::npos; at = s.find("HTTP/1.1 ", at + 1))
    ++n;
  return n;
}

inline std::string raw_body(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

// Runs `ragform serve --port 0 ARGS` (with `env` set in its environment) to its exit, stderr
// captured; kills it after timeout_s (a server that started when it should have failed). A
// --port in ARGS comes later and wins. Returns {exit status, or -1 when it had to be killed;
// stderr}.
inline std::pair<int, std::string> serve_to_exit(
    const std::vector<std::string>& args,
    const std::vector<std::pair<std::string, std::string>>& env = {}, int timeout_s = 60) {
  auto log = temp_dir("serve_exit") / "stderr.log";
  std::vector<std::string> argv = {ragform_bin().string(), "serve", "--port", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stderr);
    (void)f;
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  int st = 0;
  for (int i = 0; i < timeout_s * 20; ++i) {
    if (waitpid(pid, &st, WNOHANG) == pid)
      return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), read_file(log)};
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return {-1, read_file(log)};
}

}  // namespace ragform::testing
