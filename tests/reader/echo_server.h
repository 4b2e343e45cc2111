// Test helper: a fake OpenAI-compatible server on loopback that quotes the request's
// Authorization header in every POST's answer (issue 40: a server that echoes the client's key),
// for secret_echo_test.cpp and secret_echo_fixture_test.cpp.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <httplib.h>

namespace ragform::testing {

// A fake OpenAI-compatible server answering every POST with `status` and a body quoting the
// request's Authorization header through `quote` (its /models answers 200, naming `model_id`).
class EchoServer {
 public:
  EchoServer(int status, std::function<std::string(const std::string&)> quote,
             const std::string& model_id = "m")
      : status_(status), quote_(std::move(quote)) {
    const std::string models = R"({"object":"list","data":[{"id":")" + model_id +
                               R"(","object":"model","owned_by":"x"}]})";
    srv_.Get("/v1/models", [models](const httplib::Request&, httplib::Response& res) {
      res.set_content(models, "application/json");
    });
    srv_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      res.status = status_;
      res.set_content(quote_(req.get_header_value("Authorization")), "application/json");
    });
    port_ = srv_.bind_to_any_port("127.0.0.1");
    th_ = std::thread([this] { srv_.listen_after_bind(); });
    for (int i = 0; i < 200 && !srv_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~EchoServer() {
    srv_.stop();
    th_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

 private:
  int status_;
  std::function<std::string(const std::string&)> quote_;
  httplib::Server srv_;
  int port_ = 0;
  std::thread th_;
};

}  // namespace ragform::testing
