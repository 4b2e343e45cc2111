// Starts `ragform serve` on a free loopback port for a test (fork/exec of the built binary, port 0,
// the bound port read from its stderr), and stops it with SIGTERM. Loopback only. Also the check
// every server test makes of an error reply (expect_api_error).
#pragma once
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

// Debian's cpp-httplib is a compiled library (libcpp-httplib.so) built with these options; its
// header must see the same ones or the class layouts differ.
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif
#include <httplib.h>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_support.h"

namespace ragform::testing {

class ServeProcess {
 public:
  // args: the arguments after "serve" (model, limits, ...). Throws std::runtime_error when the
  // server does not come up within timeout_s. in_child: run in the forked child before exec (a
  // resource limit, an environment variable for the server alone).
  explicit ServeProcess(std::vector<std::string> args, int timeout_s = 120,
                        const std::function<void()>& in_child = {}) {
    log_ = temp_dir("serve") / "stderr.log";
    std::vector<std::string> argv = {
        ragform_bin().string(), "serve", "--host", "127.0.0.1", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      FILE* f = std::freopen(log_.c_str(), "w", stderr);
      (void)f;
      if (in_child) in_child();
      std::vector<char*> cargv;
      for (auto& s : argv) cargv.push_back(s.data());
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    auto t0 = std::chrono::steady_clock::now();
    const std::string marker = "listening on http://127.0.0.1:";
    while (port_ == 0) {
      std::ifstream in(log_);
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      // (No std::regex: GCC 12 warns inside it under the sanitizer build's -Werror.)
      size_t at = text.find(marker);
      if (at != std::string::npos) {
        size_t b = at + marker.size(), e = b;
        while (e < text.size() && text[e] >= '0' && text[e] <= '9') ++e;
        if (e > b && e < text.size()) port_ = std::stoi(text.substr(b, e - b));
      }
      int st = 0;
      if (port_ == 0 && waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("ragform serve exited early: " + text);
      }
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(timeout_s)) {
        stop();
        throw std::runtime_error("ragform serve did not start: " + text);
      }
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    // Wait for /health.
    for (;;) {
      httplib::Client c("127.0.0.1", port_);
      auto r = c.Get("/health");
      if (r && r->status == 200) break;
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(timeout_s)) {
        stop();
        throw std::runtime_error("ragform serve /health never answered");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~ServeProcess() { stop(); }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return read_file(log_); }

  // SIGTERM and wait; returns the exit status (-1 when not running, 128+sig when killed).
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int st = 0;
    for (int i = 0; i < 600; ++i) {
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &st, 0);
    pid_ = -1;
    return 128 + SIGKILL;
  }

  // Address space of the server in KiB (VmSize: what `ulimit -v` counts), 0 when unknown.
  long vm_kib() const { return status_kib("VmSize:"); }
  // Resident memory of the server in KiB (VmRSS), 0 when unknown.
  long rss_kib() const { return status_kib("VmRSS:"); }
  // The most resident memory the server has had in KiB (VmHWM), 0 when unknown.
  long peak_rss_kib() const { return status_kib("VmHWM:"); }

 private:
  long status_kib(const std::string& key) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
    return 0;
  }
  std::filesystem::path log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// A tune profile as `ragform tune -o` writes it (edges order, stories260K), for the requests of
// /v1/rag/present.
inline nlohmann::json sample_tune_profile() {
  return {{"format", "ragform-tune-profile"},
          {"schema_version", 1},
          {"presentation", {{"delimiter", "original"}, {"order", "edges"}}},
          {"searched", {"delimiter", "order"}},
          {"model", "stories260K.gguf"},
          {"model_sha256", ""},
          {"reader", "native"},
          {"task", "qa"},
          {"objective", "accuracy"},
          {"run", {{"store", "tune.sqlite"}, {"id", 1}}}};
}

// Checks the reply's status and its OpenAI error shape {"error": {"message", "type", "code"}};
// returns the message ("" when there is none, after a failure).
// A completion choice's log-prob listing spells its text, and each text_offset is where its token
// starts in it, in characters (code points), as docs/server.md says of echo.
inline void expect_listing_spells_text(const nlohmann::json& choice) {
  const nlohmann::json& lp = choice["logprobs"];
  std::string spelled;
  long offset = 0;
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    EXPECT_EQ(lp["text_offset"][i].get<long>(), offset) << i;
    const std::string piece = lp["tokens"][i];
    for (char ch : piece) offset += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    spelled += piece;
  }
  EXPECT_EQ(spelled, choice["text"].get<std::string>()) << lp.dump();
}

inline std::string expect_api_error(const httplib::Result& r, int status) {
  EXPECT_TRUE(r) << "no answer";
  if (!r) return "";
  EXPECT_EQ(r->status, status) << r->body;
  const nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r->body;
  if (j.is_discarded() || !j.contains("error")) {
    ADD_FAILURE() << "no error object: " << r->body;
    return "";
  }
  const nlohmann::json& e = j["error"];
  const bool has_message = e.contains("message") && e["message"].is_string();
  EXPECT_TRUE(has_message) << r->body;
  EXPECT_TRUE(e.contains("type") && e["type"].is_string()) << r->body;
  EXPECT_TRUE(e.contains("code")) << r->body;
  return has_message ? e["message"].get<std::string>() : "";
}

// A ServeProcess in_child: the server's address space limited to `kib` KiB (`ulimit -v`), with
// glibc's own arena count (MALLOC_ARENA_MAX unset), as the memory tests' servers run.
inline std::function<void()> address_space_limit(rlim_t kib) {
  return [kib] {
    unsetenv("MALLOC_ARENA_MAX");
    rlimit rl{kib * 1024, kib * 1024};
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(126);
  };
}

// The statuses of n clients POSTing `body` to `path` at once (-1: no answer).
inline std::vector<int> post_at_once(int port, const std::string& path, const std::string& body,
                                     size_t n) {
  std::vector<int> status(n, 0);
  std::vector<std::thread> clients;
  for (size_t i = 0; i < n; ++i)
    clients.emplace_back([&, i] {
      httplib::Client c("127.0.0.1", port);
      c.set_read_timeout(300, 0);
      c.set_write_timeout(60, 0);
      auto r = c.Post(path, body, "application/json");
      status[i] = r ? r->status : -1;
    });
  for (auto& t : clients) t.join();
  return status;
}

// The server still answers /health with 200 (else the start of its log).
inline void expect_alive(const ServeProcess& srv) {
  httplib::Client c("127.0.0.1", srv.port());
  auto h = c.Get("/health");
  ASSERT_TRUE(h) << "the server died: " << srv.log().substr(0, 2000);
  EXPECT_EQ(h->status, 200);
}

}  // namespace ragform::testing
