// `ragform serve` on loopback: the OpenAI-compatible endpoints, every limit's JSON error with its
// status (and the server keeps serving after each), streaming that reassembles to the
// non-streamed text, clean exit on SIGTERM, bad flags as one-line usage errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "server/raw_http.h"
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using nlohmann::json;

struct Client {
  int port;
  std::string key;
  httplib::Result post(const std::string& path, const std::string& body,
                       const std::string& auth = "*") {
    httplib::Client c("127.0.0.1", port);
    c.set_read_timeout(120, 0);
    httplib::Headers h;
    std::string k = auth == "*" ? key : auth;
    if (!k.empty()) h.emplace("Authorization", "Bearer " + k);
    return c.Post(path.c_str(), h, body, "application/json");
  }
  httplib::Result get(const std::string& path) {
    httplib::Client c("127.0.0.1", port);
    httplib::Headers h = {{"Authorization", "Bearer " + key}};
    return c.Get(path.c_str(), h);
  }
};

void expect_serving(Client& c) {
  auto r = c.post("/v1/completions",
                  R"({"prompt": "Once upon a time", "max_tokens": 4, "temperature": 0})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  EXPECT_FALSE(j["choices"][0]["text"].get<std::string>().empty());
}

TEST(ServeFixture, EndpointsLimitsAndErrors) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "128", "--api-key", "sekret", "--max-body",
                    "2000", "--max-prompt-tokens", "40", "--max-tokens", "32"});
  Client c{srv.port(), "sekret"};

  // /health needs no key; /v1/models names the file without .gguf.
  {
    httplib::Client h("127.0.0.1", srv.port());
    auto r = h.Get("/health");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(json::parse(r->body)["status"], "ok");
  }
  auto m = c.get("/v1/models");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "stories260K");
  // GET /v1/models/{model} (the OpenAI SDK's models.retrieve): the list's one object, alone;
  // another id is 404 model_not_found; the key is needed as everywhere (it was 404 "no endpoint").
  for (const char* path : {"/v1/models/stories260K", "/models/stories260K"}) {
    auto one = c.get(path);
    ASSERT_TRUE(one);
    ASSERT_EQ(one->status, 200) << path << one->body;
    EXPECT_EQ(json::parse(one->body), json::parse(m->body)["data"][0]) << path;
  }
  auto other = c.get("/v1/models/stories15M");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_EQ(json::parse(other->body)["error"]["code"], "model_not_found") << other->body;
  {
    httplib::Client h("127.0.0.1", srv.port());
    auto r = h.Get("/v1/models/stories260K");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
  }
  expect_serving(c);

  // Completions: usage counts and explicit model id accepted.
  auto r =
      c.post("/v1/completions",
             R"({"model": "stories260K", "prompt": ["Once upon a time", "The dog"], "max_tokens": 5,
                      "temperature": 0})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["usage"]["completion_tokens"].get<int>(),
            10);  // 5 each: stories260K does not stop this early

  // echo + logprobs with max_tokens 0: the prompt's log-probs, the first token null (OpenAI
  // legacy), equal to /v1/score with an empty continuation.
  r = c.post("/v1/completions",
             R"({"prompt": "Lily and Tom", "max_tokens": 0, "echo": true, "logprobs": 0})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = json::parse(r->body);
  auto lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(j["choices"][0]["text"], "Lily and Tom");
  ASSERT_GE(lp["tokens"].size(), 3u);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  auto s = c.post("/v1/score", R"({"prompt": "Lily and Tom", "continuation": ""})");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200) << s->body;
  auto sj = json::parse(s->body);
  ASSERT_EQ(sj["tokens"].size() + 1, lp["tokens"].size());
  double sum = 0;
  for (size_t i = 1; i < lp["tokens"].size(); ++i) {
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][i].get<double>(),
                     sj["tokens"][i - 1]["logprob"].get<double>());
    sum += lp["token_logprobs"][i].get<double>();
  }
  EXPECT_NEAR(sum, sj["sum"].get<double>(), 1e-9);

  // Attention: rows over the prompt, their mean sums to 1, ABS in [0, 1].
  auto a =
      c.post("/v1/attention", R"({"prompt": "Lily and Tom went to the park", "layers": [-1]})");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->status, 200) << a->body;
  auto aj = json::parse(a->body);
  ASSERT_EQ(aj["rows"].size(), 1u);
  double msum = 0;
  for (auto& v : aj["rows"][0]["mean"]) msum += v.get<double>();
  EXPECT_NEAR(msum, 1.0, 1e-4);
  EXPECT_EQ(aj["rows"][0]["mean"].size(), aj["ids"].size());
  double abs = aj["rows"][0]["abs"].get<double>();
  EXPECT_GE(abs, 0.0);
  EXPECT_LE(abs, 1.0);

  // Errors: each the right status and a JSON error; the server keeps serving after each.
  expect_api_error(c.post("/v1/completions", R"({"prompt": "x", )"), 400);
  expect_serving(c);
  expect_api_error(c.post("/v1/completions", R"({"prompt": 5})"), 400);
  expect_api_error(c.post("/v1/completions", R"({"prompt": "x", "max_tokens": "many"})"), 400);
  expect_api_error(c.post("/v1/completions", R"({"prompt": "x", "temperature": "hot"})"), 400);
  std::string msg =
      expect_api_error(c.post("/v1/completions", R"({"model": "gpt-4", "prompt": "x"})"), 404);
  EXPECT_NE(msg.find("gpt-4"), std::string::npos);
  expect_serving(c);
  expect_api_error(c.post("/v1/completions", json({{"prompt", std::string(5000, 'a')}}).dump()),
                   413);
  expect_serving(c);
  std::string long_prompt;
  for (int i = 0; i < 60; ++i) long_prompt += " the";
  msg = expect_api_error(
      c.post("/v1/completions", json({{"prompt", long_prompt}, {"max_tokens", 1}}).dump()), 400);
  EXPECT_NE(msg.find("limit of 40"), std::string::npos) << msg;
  msg = expect_api_error(c.post("/v1/completions", R"({"prompt": "x", "max_tokens": 33})"), 400);
  EXPECT_NE(msg.find("max_tokens"), std::string::npos) << msg;
  expect_api_error(c.post("/v1/completions", R"({"prompt": "x"})", "wrong"), 401);
  expect_api_error(c.post("/v1/completions", R"({"prompt": "x"})", ""), 401);
  expect_api_error(c.post("/v1/nothing", "{}"), 404);
  // stories260K has no chat template.
  expect_api_error(
      c.post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})"), 400);
  expect_serving(c);

  // /health counts the prompt work the prefix cache saved: the same prompt twice is prefilled
  // once (the second computes at most its last token, which gives the logits).
  auto health = [&] {
    return json::parse(httplib::Client("127.0.0.1", srv.port()).Get("/health")->body);
  };
  const json h0 = health();
  ASSERT_TRUE(h0["prefix_cache"].is_object()) << h0.dump();
  const std::string repeated = R"({"prompt": "Once upon a time there was a dog", "max_tokens": 1})";
  ASSERT_EQ(c.post("/v1/completions", repeated)->status, 200);
  ASSERT_EQ(c.post("/v1/completions", repeated)->status, 200);
  const json h1 = health();
  const int64_t submitted = h1["prompt_tokens"].get<int64_t>() - h0["prompt_tokens"].get<int64_t>();
  const int64_t computed =
      h1["prompt_tokens_computed"].get<int64_t>() - h0["prompt_tokens_computed"].get<int64_t>();
  EXPECT_GT(submitted, 10) << h1.dump();
  EXPECT_LE(computed, submitted / 2 + 1) << h1.dump();
  EXPECT_GT(h1["prefix_cache"]["hits"].get<int64_t>(), h0["prefix_cache"]["hits"].get<int64_t>());
  EXPECT_GT(h1["prefix_cache"]["entries"].get<int64_t>(), 0);
  EXPECT_LE(h1["prefix_cache"]["bytes"].get<int64_t>(),
            h1["prefix_cache"]["max_bytes"].get<int64_t>());

  EXPECT_EQ(srv.stop(), 0) << srv.log();
  EXPECT_NE(srv.log().find("stopping"), std::string::npos);
}

// Reassembles an SSE body into the concatenated delta contents; counts chunks; checks [DONE].
std::string reassemble(const std::string& body, size_t* chunks, std::string* finish) {
  std::string text;
  size_t pos = 0;
  bool done = false;
  *chunks = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    size_t end = body.find("\n\n", pos);
    std::string payload = body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (payload == "[DONE]") {
      done = true;
      continue;
    }
    auto j = json::parse(payload);
    EXPECT_EQ(j["object"], "chat.completion.chunk");
    auto& ch = j["choices"][0];
    if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    if (!ch["finish_reason"].is_null()) *finish = ch["finish_reason"];
    ++*chunks;
  }
  EXPECT_TRUE(done);
  return text;
}

TEST(ServeFixture, ChatStreamingReassemblesToTheSameText) {
  REQUIRE_SHARED(model, "fixtures/models/tiny-qwen2.gguf");
  // No fixture model carries a chat template: give the family by name.
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--chat-template", "chatml"});
  Client c{srv.port(), ""};
  json req = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello!"}}}},
      {"max_tokens", 20},
      {"temperature", 0}};
  auto r = c.post("/v1/chat/completions", req.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = json::parse(r->body);
  EXPECT_EQ(j["model"], "tiny-qwen2");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  std::string text = j["choices"][0]["message"]["content"];
  ASSERT_FALSE(text.empty());
  req["stream"] = true;
  auto s = c.post("/v1/chat/completions", req.dump());
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200);
  EXPECT_NE(s->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  size_t chunks = 0;
  std::string finish;
  EXPECT_EQ(reassemble(s->body, &chunks, &finish), text);
  EXPECT_GT(chunks, 3u);  // role chunk, several content chunks, the finish chunk
  EXPECT_EQ(finish, j["choices"][0]["finish_reason"]);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// Issue 24 defect 2: a second server on a port already served started anyway (cpp-httplib's
// SO_REUSEPORT) and the kernel split the connections between the two.
TEST(ServeFixture, SecondServerOnABusyPortFails) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess first({"-m", model.string(), "--ctx", "64", "--alias", "first"});
  const std::string port = std::to_string(first.port());
  auto [code, err] =
      serve_to_exit({"-m", model.string(), "--ctx", "64", "--alias", "second", "--port", port});
  EXPECT_EQ(code, 1) << err;
  EXPECT_EQ(err, "ragform: serve: 127.0.0.1:" + port + ": address already in use\n");
  // Every request still reaches the first server.
  for (int i = 0; i < 8; ++i) {
    httplib::Client c("127.0.0.1", first.port());
    auto r = c.Get("/v1/models");
    ASSERT_TRUE(r);
    EXPECT_EQ(json::parse(r->body)["data"][0]["id"], "first");
  }
  EXPECT_EQ(first.stop(), 0) << first.log();
}

// Issue 24 defect 12: the key can come from a file (not the process list); the right bearer token
// is admitted, any other refused with 401.
TEST(ServeFixture, ApiKeyFromAFileAdmitsOnlyThatKey) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  auto key_file = temp_dir("serve_key") / "key.txt";
  write_file(key_file, "file-secret-1234\n");
  // (with the prefix cache off: /health says so with a null)
  ServeProcess srv({"-m", model.string(), "--ctx", "64", "--api-key-file", key_file.string(),
                    "--prefix-cache", "off"});
  EXPECT_TRUE(
      json::parse(httplib::Client("127.0.0.1", srv.port()).Get("/health")->body)["prefix_cache"]
          .is_null());
  const std::string body = R"({"prompt": "Once", "max_tokens": 2, "temperature": 0})";
  Client right{srv.port(), "file-secret-1234"};
  auto ok = right.post("/v1/completions", body);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  for (const char* wrong : {"file-secret-1235", "file-secret-123", "file-secret-12345", ""}) {
    Client c{srv.port(), wrong};
    expect_api_error(c.post("/v1/completions", body), 401);
  }
  // The key does not appear on the command line.
  std::string cmdline = read_file("/proc/" + std::to_string(srv.pid()) + "/cmdline");
  EXPECT_EQ(cmdline.find("file-secret"), std::string::npos);
  EXPECT_EQ(srv.stop(), 0) << srv.log();

  // A missing key file is a runtime error naming the file.
  auto [code, err] = serve_to_exit(
      {"-m", model.string(), "--api-key-file", (key_file.parent_path() / "none").string()});
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find("none: cannot read the API key file"), std::string::npos) << err;
}

// Issue 24 defect 6: a known endpoint with the wrong method is 405 with the string code.
TEST(ServeFixture, WrongMethodIs405) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "64"});
  httplib::Client c("127.0.0.1", srv.port());
  auto r = c.Delete("/v1/completions");
  expect_api_error(r, 405);
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "method_not_allowed");
  expect_api_error(c.Put("/v1/models", "{}", "application/json"), 405);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// Bad flags are one-line usage errors (exit 2) that name the flag, before any model is loaded.
TEST(ServeFixture, BadFlagsAreUsageErrors) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  for (const char* flags : {"--pace-ms -1", "--pace-ms 20000", "--batch 0", "--port 70000"}) {
    auto r = run_ragform("serve -m " + quoted(model) + " " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << ": " << r.err;
    std::string name = std::string(flags).substr(0, std::string(flags).find(' '));
    EXPECT_NE(r.err.find(name), std::string::npos) << flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace ragform::testing
