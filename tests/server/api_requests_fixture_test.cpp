// Request bodies that fuzz/fuzz_server_api found mishandled, replayed through Api::handle in
// process (no sockets) on the stories260K fixture: each must be refused with a 400 naming the
// field, never answered with a wrong value or a 500.
#include <climits>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reader/native_reader.h"
#include "server/api.h"
#include "server/engine.h"
#include "support/test_support.h"

namespace {

using namespace ragform;

class ApiRequests : public ::testing::Test {
 protected:
  void SetUp() override { open("fixtures/models/stories260K.gguf"); }
  void open(const std::string& rel) {
    REQUIRE_SHARED(model, rel);
    reader::NativeOptions ro;
    ro.n_ctx = 128;
    ro.engine.threads = 1;
    reader_ = std::make_unique<reader::NativeReader>(model.string(), ro);
    server::SchedulerOptions eo;
    eo.n_ctx = 128;
    engine_ = std::make_unique<server::Engine>(*reader_, eo);
    server::ApiOptions ao;
    ao.model_id = std::filesystem::path(rel).stem().string();
    ao.n_ctx = 128;
    ao.max_tokens = 4;
    api_ = std::make_unique<server::Api>(*reader_, *engine_, ao);
  }
  server::Response post(const std::string& path, const std::string& body) {
    return api_->handle({"POST", path, "", body});
  }
  // The response is a 400 whose message contains `part`.
  void expect_400(const server::Response& r, const std::string& part) {
    EXPECT_EQ(r.status, 400) << r.body;
    auto j = nlohmann::json::parse(r.body);
    EXPECT_NE(j["error"]["message"].get<std::string>().find(part), std::string::npos) << r.body;
  }
  std::unique_ptr<reader::NativeReader> reader_;
  std::unique_ptr<server::Engine> engine_;
  std::unique_ptr<server::Api> api_;
};

// get<int> wrapped 2^32 to layer 0, and the attention of layer 0 came back for it.
TEST_F(ApiRequests, AttentionIndexOutsideIntIsRefused) {
  expect_400(post("/v1/attention", R"({"prompt": "Lily", "layers": [4294967296]})"),
             "'layers' holds 4294967296");
  expect_400(post("/v1/attention", R"({"prompt": "Lily", "heads": [-2147483649]})"),
             "'heads' holds -2147483649");
  expect_400(
      post("/v1/attention", R"({"prompt": "Lily", "query_positions": [18446744073709551615]})"),
      "'query_positions' holds 18446744073709551615");
  EXPECT_EQ(post("/v1/attention", R"({"prompt": "Lily", "layers": [0], "heads": [0]})").status,
            200);
}

// An unsigned value above LLONG_MAX was reported as a negative number.
TEST_F(ApiRequests, HugeUnsignedFieldIsNamedAsSent) {
  expect_400(post("/v1/completions", R"({"prompt": "Lily", "max_tokens": 18446744073709551615})"),
             "'max_tokens' = 18446744073709551615 is outside [0, 1073741824]");
}

}  // namespace
