// GenerateParams::stop_after_line through an OpenAI-compatible server, whose API has no such rule:
// the request carries no stop string (a "\n" stop would end a base model's answer before its
// first word), and the reader cuts the returned text at runtime::line_stop_at, finish "stop".
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "reader/openai_reader.h"

namespace ragform::reader {
namespace {

TEST(OpenAIReaderLineStop, TextIsCutAfterTheFirstNonEmptyLine) {
  httplib::Server fake;
  std::string text;
  nlohmann::json last;
  fake.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"object":"list","data":[{"id":"m","object":"model","owned_by":"x"}]})",
                    "application/json");
  });
  fake.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
    last = nlohmann::json::parse(req.body);
    res.set_content(
        nlohmann::json{{"choices", {{{"index", 0}, {"text", text}, {"finish_reason", "length"}}}},
                       {"usage", {{"prompt_tokens", 7}}}}
            .dump(),
        "application/json");
  });
  const int port = fake.bind_to_any_port("127.0.0.1");
  std::thread th([&] { fake.listen_after_bind(); });
  for (int i = 0; i < 200 && !fake.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  OpenAIOptions oo;
  oo.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  oo.retries = 0;
  OpenAIReader r(oo);

  GenerateParams line;
  line.max_tokens = 16;
  line.stop_after_line = true;
  text = "\n\nParis\nThe capital";
  Generation g = r.generate("Question: q\nAnswer:", line);
  EXPECT_FALSE(last.contains("stop")) << last.dump();
  EXPECT_EQ(g.text, "\n\nParis");
  EXPECT_EQ(g.finish_reason, "stop");
  EXPECT_EQ(g.prompt_tokens, 7);

  // No newline after text yet: the server's text and reason as they are.
  text = "\n Paris";
  g = r.generate("Question: q\nAnswer:", line);
  EXPECT_EQ(g.text, "\n Paris");
  EXPECT_EQ(g.finish_reason, "length");

  // Without the rule nothing is cut.
  text = "\n\nParis\nThe capital";
  g = r.generate("Question: q\nAnswer:", GenerateParams{});
  EXPECT_EQ(g.text, text);
  fake.stop();
  th.join();
}

}  // namespace
}  // namespace ragform::reader
