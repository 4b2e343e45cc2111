// OpenAIReader against `ragform serve` on loopback gives the same greedy text and the same scores
// (within 1e-4) as NativeReader on the fixture models; failures are typed (RequestFailed,
// NotSupported).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "reader/native_reader.h"
#include "reader/openai_reader.h"
#include "server/serve_harness.h"

namespace ragform::reader {
namespace {

using testing::ServeProcess;

const std::vector<std::string> kPrompts = {"Once upon a time", "Lily and Tom went to the park.",
                                           "The little dog", "One day, a girl named"};

void expect_same_scores(Reader& native, Reader& remote, const std::string& p,
                        const std::string& c) {
  auto a = native.score(p, c);
  auto b = remote.score(p, c);
  ASSERT_EQ(a.tokens.size(), b.tokens.size()) << p << " | " << c;
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  for (size_t i = 0; i < a.tokens.size(); ++i) {
    EXPECT_EQ(a.tokens[i].piece, b.tokens[i].piece);
    EXPECT_NEAR(a.tokens[i].logprob, b.tokens[i].logprob, 1e-4) << "token " << i;
  }
  EXPECT_NEAR(a.sum, b.sum, 1e-4);
  EXPECT_LT(a.sum, 0.0);
}

TEST(OpenAIReaderFixture, MatchesNativeOnStories260K) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess srv({"-m", model.string(), "--ctx", "256", "--batch", "4"});
  NativeOptions no;
  no.n_ctx = 256;
  NativeReader native(model.string(), no);
  OpenAIOptions oo;
  oo.base_url = srv.url() + "/v1";
  oo.model = "stories260K";
  oo.concurrency = 4;
  OpenAIReader remote(oo);
  // The run identity names the model, never a server: one study over any servers is one run.
  EXPECT_EQ(remote.describe(), "openai:stories260K");
  OpenAIOptions unnamed = oo;
  unnamed.model = "";  // the servers' own model, as their /models names it
  // Two servers (one server named twice is refused: base_url_list_test.cpp).
  ServeProcess srv2({"-m", model.string(), "--ctx", "256", "--batch", "4"});
  unnamed.base_url = srv.url() + "," + srv2.url() + "/v1";
  EXPECT_EQ(OpenAIReader(unnamed).describe(), "openai:stories260K");

  GenerateParams gp;
  gp.max_tokens = 24;
  for (auto& p : kPrompts) {
    auto a = native.generate(p, gp);
    auto b = remote.generate(p, gp);
    EXPECT_EQ(a.text, b.text) << p;
    EXPECT_FALSE(b.text.empty());
    EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  }
  // Batched on both sides (the server shares forward passes between the concurrent requests).
  auto na = native.generate_batch(kPrompts, gp);
  auto nb = remote.generate_batch(kPrompts, gp);
  ASSERT_EQ(na.size(), nb.size());
  for (size_t i = 0; i < na.size(); ++i) EXPECT_EQ(na[i].text, nb[i].text) << kPrompts[i];
  // Stop strings cut the text the same way.
  gp.stop = {"."};
  EXPECT_EQ(native.generate(kPrompts[0], gp).text, remote.generate(kPrompts[0], gp).text);

  // ragform serve is recognised (GET /v1/models, owned_by "ragform"): attention is offered and
  // score goes through /v1/score, which also gives the token ids.
  EXPECT_TRUE(remote.is_ragform_server());
  EXPECT_TRUE(remote.capabilities().attention);
  {
    auto a = native.score("Once upon a time", " there was a little girl");
    auto b = remote.score("Once upon a time", " there was a little girl");
    ASSERT_EQ(a.tokens.size(), b.tokens.size());
    for (size_t i = 0; i < a.tokens.size(); ++i) EXPECT_EQ(a.tokens[i].id, b.tokens[i].id);
  }
  expect_same_scores(native, remote, "Once upon a time", " there was a little girl");
  expect_same_scores(native, remote, "Lily and Tom went to the park.", "");
  EXPECT_EQ(native.count_tokens(kPrompts[1]), remote.count_tokens(kPrompts[1]));

  // Attention through ragform's /v1/attention.
  AttentionQuery q;
  q.layers = {-1};
  auto aa = native.attention(kPrompts[1], q);
  auto ab = remote.attention(kPrompts[1], q);
  ASSERT_EQ(aa.rows.size(), ab.rows.size());
  EXPECT_EQ(aa.ids, ab.ids);
  for (size_t r = 0; r < aa.rows.size(); ++r) {
    ASSERT_EQ(aa.rows[r].mean.size(), ab.rows[r].mean.size());
    for (size_t k = 0; k < aa.rows[r].mean.size(); ++k)
      EXPECT_NEAR(aa.rows[r].mean[k], ab.rows[r].mean[k], 1e-6);
  }
  EXPECT_THROW(remote.hidden(kPrompts[0], 0), NotSupported);
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

TEST(OpenAIReaderFixture, RawMatchesNativeAndChatRunsOnTinyQwen2) {
  REQUIRE_SHARED(model, "fixtures/models/tiny-qwen2.gguf");
  ServeProcess srv(
      {"-m", model.string(), "--ctx", "256", "--alias", "tq", "--chat-template", "chatml"});
  NativeOptions no;
  no.n_ctx = 256;
  NativeReader raw(model.string(), no);
  OpenAIOptions oo;
  oo.base_url = srv.url();  // no path: /v1 is assumed
  oo.model = "tq";
  OpenAIReader rraw(oo);
  oo.chat = true;
  oo.system_prompt = "You are terse.";
  OpenAIReader rchat(oo);
  GenerateParams gp;
  gp.max_tokens = 12;
  gp.ignore_eos = false;
  for (auto& p : kPrompts) {
    EXPECT_EQ(raw.generate(p, gp).text, rraw.generate(p, gp).text) << p;
    // Chat mode (the fixture has no template of its own, so NativeReader cannot open it in chat
    // mode): greedy chat text is deterministic and differs from the raw continuation.
    auto c1 = rchat.generate(p, gp), c2 = rchat.generate(p, gp);
    EXPECT_EQ(c1.text, c2.text);
    EXPECT_GT(c1.prompt_tokens, raw.count_tokens(p));  // the ChatML markup and system turn
  }
  expect_same_scores(raw, rraw, "Hello world, this is", " a test");
  EXPECT_THROW(rchat.score("a", "b"), NotSupported);
  // A model id the server does not serve: a typed failure, not retried.
  oo.model = "other";
  oo.chat = false;
  OpenAIReader wrong(oo);
  try {
    wrong.generate("x", gp);
    ADD_FAILURE() << "expected RequestFailed";
  } catch (const RequestFailed& e) {
    EXPECT_EQ(e.status(), 404);
    EXPECT_EQ(e.attempts(), 1);
  }
  EXPECT_EQ(srv.stop(), 0) << srv.log();
}

// Another OpenAI-compatible server (models owned by someone else): attention is refused without a
// request, score uses the echoed prompt log-probs of /v1/completions (never /v1/score).
TEST(OpenAIReaderFixture, OtherServerHasNoAttentionAndScoresByEcho) {
  httplib::Server fake;
  std::atomic<int> attention_calls{0}, score_calls{0};
  fake.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm"}]})",
                    "application/json");
  });
  fake.Post("/v1/attention", [&](const httplib::Request&, httplib::Response& res) {
    ++attention_calls;
    res.status = 404;
  });
  fake.Post("/v1/score", [&](const httplib::Request&, httplib::Response& res) {
    ++score_calls;
    res.status = 404;
  });
  fake.Post("/v1/completions", [](const httplib::Request& req, httplib::Response& res) {
    auto j = nlohmann::json::parse(req.body);
    EXPECT_TRUE(j["echo"].get<bool>());
    EXPECT_EQ(j["prompt"], nlohmann::json::array({"a b", "a b c"}));
    res.set_content(R"({"choices":[
      {"index":0,"text":"a b","logprobs":{"tokens":["a"," b"],"token_logprobs":[null,-1.0]}},
      {"index":1,"text":"a b c","logprobs":{"tokens":["a"," b"," c"],
       "token_logprobs":[null,-1.0,-0.5]}}]})",
                    "application/json");
  });
  int port = fake.bind_to_any_port("127.0.0.1");
  std::thread th([&] { fake.listen_after_bind(); });
  for (int i = 0; i < 200 && !fake.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  OpenAIOptions oo;
  oo.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  OpenAIReader r(oo);
  EXPECT_FALSE(r.is_ragform_server());
  EXPECT_FALSE(r.capabilities().attention);
  try {
    r.attention("x", {});
    ADD_FAILURE() << "expected NotSupported";
  } catch (const NotSupported& e) {
    EXPECT_NE(std::string(e.what()).find("not supported by this server"), std::string::npos)
        << e.what();
  }
  auto sr = r.score("a b", " c");
  ASSERT_EQ(sr.tokens.size(), 1u);
  EXPECT_EQ(sr.tokens[0].piece, " c");
  EXPECT_DOUBLE_EQ(sr.sum, -0.5);
  EXPECT_EQ(sr.prompt_tokens, 2);
  EXPECT_EQ(attention_calls.load(), 0);
  EXPECT_EQ(score_calls.load(), 0);
  fake.stop();
  th.join();
}

// A server's answers are checked where the reader reads them (issue 40, D7, D9, D5): a value out
// of its range, of another type or of another length than the prompt's tokens is RequestFailed
// naming the reader (its base URL), the method and the field, never a positive log-prob, a wrapped
// count or an ABS of 1.0 from a row of the wrong length; an answer over kMaxAnswerBytes is refused
// without being read.
TEST(OpenAIReaderFixture, ServerAnswersAreCheckedNamingReaderMethodAndField) {
  httplib::Server fake;
  std::mutex mu;
  std::string mode;
  auto get_mode = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return mode;
  };
  using nlohmann::json;
  // /v1 is `ragform serve` (/score, /attention), /other an echo-scoring server.
  fake.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"data":[{"id":"m","owned_by":"ragform"}]})", "application/json");
  });
  fake.Get("/other/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"data":[{"id":"m","owned_by":"vllm"}]})", "application/json");
  });
  fake.Post("/v1/score", [&](const httplib::Request&, httplib::Response& res) {
    const std::string m = get_mode();
    const double lp = m == "rs_pos" ? 2.0 : m == "rs_huge" ? -1e308 : -0.5;
    json toks = json::array({{{"id", 1}, {"piece", "a"}, {"logprob", lp}},
                             {{"id", 2}, {"piece", "b"}, {"logprob", lp}}});
    json j = {{"prompt_tokens", m == "rs_negpt" ? -3 : 2},
              {"tokens", toks},
              {"sum", m == "rs_sum" ? -1234.0 : 2 * lp}};
    res.set_content(j.dump(), "application/json");
  });
  fake.Post("/v1/attention", [&](const httplib::Request&, httplib::Response& res) {
    const std::string m = get_mode();
    json mean = json::array({0.2, 0.2, 0.2, 0.2, 0.2});
    if (m == "at_short") mean = {1.0};
    if (m == "at_long") mean = std::vector<double>(100000, 0.00001);
    if (m == "at_big") mean = std::vector<double>(5, 1e30);
    json rows = json::array({{{"layer", 1},
                              {"query_position", 4},
                              {"head_ids", {0}},
                              {"heads", {mean}},
                              {"mean", mean}}});
    if (m == "at_norows") rows = json::array();
    json j = {{"ids", {1, 2, 3, 4, 5}}, {"pieces", {"a", "b", "c", "d", "e"}}, {"rows", rows}};
    res.set_content(j.dump(), "application/json");
  });
  auto completions = [&](const httplib::Request& req, httplib::Response& res) {
    const std::string m = get_mode();
    if (m == "huge_length") {  // announces 1.5 GB
      res.set_content_provider(size_t(1536) << 20, "application/json",
                               [](size_t, size_t n, httplib::DataSink& sink) {
                                 std::string chunk(std::min<size_t>(n, 1 << 20), ' ');
                                 return sink.write(chunk.data(), chunk.size());
                               });
      return;
    }
    if (m == "huge_chunked") {  // no length, 1 MiB chunks without end
      res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
        std::string chunk(size_t(1) << 20, ' ');
        return sink.write(chunk.data(), chunk.size());
      });
      return;
    }
    auto j = json::parse(req.body);
    json usage = {{"prompt_tokens", 5}};
    if (m == "negusage") usage["prompt_tokens"] = -5;
    if (m == "bigusage") usage["prompt_tokens"] = 1000000000000LL;
    if (m == "floatusage") usage["prompt_tokens"] = 3.7;
    if (m == "strusage") usage["prompt_tokens"] = "12";
    if (!j.contains("echo")) {
      json c = {{"index", 0}, {"text", "Lily"}, {"finish_reason", "stop"}};
      if (m == "gen_textnum") c["text"] = 5;
      json cs = json::array({c});
      // F10 (pass 7): choices checked as score's are, the text taken by index.
      if (m == "gen_order")
        cs = json::array({{{"index", 1}, {"text", "WRONG"}, {"finish_reason", "stop"}},
                          {{"index", 0}, {"text", "right"}, {"finish_reason", "length"}}});
      if (m == "gen_idx1") cs[0]["index"] = 1;
      if (m == "gen_idxhuge") cs[0]["index"] = 1000000000000LL;
      if (m == "gen_idxbool") cs[0]["index"] = true;
      if (m == "gen_more") cs = json::array({c, c, c, c});
      if (m == "gen_none") cs = json::array();
      res.set_content(json({{"choices", cs}, {"usage", usage}}).dump(), "application/json");
      return;
    }
    json choices = json::array();
    const json prompts = j["prompt"].is_array() ? j["prompt"] : json::array({j["prompt"]});
    for (size_t i = 0; i < prompts.size(); ++i) {
      json toks = json::array(), lps = json::array({nullptr});
      for (char ch : prompts[i].get<std::string>()) toks.push_back(std::string(1, ch));
      for (size_t t = 1; t < toks.size(); ++t)
        lps.push_back(m == "poslp" ? 3.0 : m == "hugelp" ? -1e308 : -0.5);
      if (m == "badtok") toks = std::vector<int>(toks.size(), 1);
      choices.push_back({{"index", i}, {"logprobs", {{"tokens", toks}, {"token_logprobs", lps}}}});
    }
    res.set_content(json({{"choices", choices}, {"usage", usage}}).dump(), "application/json");
  };
  fake.Post("/v1/completions", completions);
  fake.Post("/other/completions", completions);
  int port = fake.bind_to_any_port("127.0.0.1");
  std::thread th([&] { fake.listen_after_bind(); });
  for (int i = 0; i < 200 && !fake.is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string host = "http://127.0.0.1:" + std::to_string(port);
  OpenAIOptions oo;
  oo.base_url = host + "/v1";
  oo.retries = 0;
  oo.timeout_s = 20;
  OpenAIReader rf(oo);  // ragform serve
  oo.base_url = host + "/other";
  OpenAIReader other(oo);
  ASSERT_TRUE(rf.is_ragform_server());
  ASSERT_FALSE(other.is_ragform_server());

  // Each case: the mode, the call, the base URL's path and what its message begins with after
  // "openai reader: " (it ends naming the base URL).
  auto refused = [&](const std::string& m, const std::function<void()>& call, const char* url,
                     const std::string& says) {
    {
      std::lock_guard<std::mutex> lock(mu);
      mode = m;
    }
    try {
      call();
      ADD_FAILURE() << m << ": accepted";
    } catch (const RequestFailed& e) {
      const std::string w = e.what();
      EXPECT_EQ(w.rfind("openai reader: " + says, 0), 0u) << m << ": " << w;
      EXPECT_NE(w.find(" (from " + host + url + ")"), std::string::npos) << m << ": " << w;
      EXPECT_EQ(w.find("json.exception"), std::string::npos) << m << ": " << w;
    }
  };
  auto score_rf = [&] { rf.score("ab", "cd"); };
  auto score_other = [&] { other.score("ab", "cd"); };
  auto attention = [&] { rf.attention("abcde", {}); };
  auto count = [&] { other.count_tokens("abcde"); };
  auto gen = [&] { other.generate("Once", {}); };
  // D7: score.
  refused("poslp", score_other, "/other",
          "score: choices[1].logprobs.token_logprobs[2]: 3 is positive: not a log-probability");
  refused("hugelp", score_other, "/other",
          "score: choices[1].logprobs.token_logprobs sum to -inf, not a finite log-probability");
  refused("rs_pos", score_rf, "/v1", "score: tokens[0].logprob: 2 is positive");
  refused("rs_huge", score_rf, "/v1", "score: tokens' log-probs sum to -inf");
  refused("rs_sum", score_rf, "/v1",
          "score: sum -1234 is not the sum of the tokens' log-probs (-1)");
  refused("rs_negpt", score_rf, "/v1", "score: prompt_tokens: -3 is out of range (0..2147483647)");
  // D7: attention.
  refused("at_short", attention, "/v1",
          "attention: rows[0].heads[0]: the row of query position 4 must be [4 + 1] = 5 long "
          "(keys 0..4), got 1");
  refused("at_long", attention, "/v1", "attention: rows[0].heads[0]: the row of query position 4");
  refused("at_big", attention, "/v1",
          "attention: rows[0].heads[0][0]: weight 1e+30 is outside [0, 1]");
  refused("at_norows", attention, "/v1",
          "attention: rows: expected 1 (layers x query_positions), got 0");
  // D7: counts.
  refused("negusage", count, "/other",
          "count_tokens: usage.prompt_tokens: -5 is out of range (0..2147483647)");
  refused("bigusage", count, "/other", "count_tokens: usage.prompt_tokens: 1000000000000 is out");
  refused("floatusage", count, "/other",
          "count_tokens: usage.prompt_tokens: expected an integer, got number 3.7");
  refused("negusage", gen, "/other", "generate: usage.prompt_tokens: -5 is out of range");
  // D9: a field of another type is named, not nlohmann's words.
  refused("badtok", score_other, "/other",
          "score: choices[0].logprobs.tokens[0]: expected a string, got number 1");
  refused("strusage", count, "/other",
          "count_tokens: usage.prompt_tokens: expected an integer, got string \"12\"");
  refused("gen_textnum", gen, "/other", "generate: choices[0].text: expected a string, got number");
  // F10 (pass 7): generate's choices are checked as score's: one per prompt, each index in range.
  refused("gen_idx1", gen, "/other", "generate: choices[0].index: 1 is out of range (0..0)");
  refused("gen_idxhuge", gen, "/other",
          "generate: choices[0].index: 1000000000000 is out of range (0..0)");
  refused("gen_idxbool", gen, "/other", "generate: choices[0].index: expected an integer, got");
  refused("gen_more", gen, "/other", "generate: choices: expected 1 (one per prompt), got 4");
  refused("gen_order", gen, "/other", "generate: choices: expected 1 (one per prompt), got 2");
  refused("gen_none", gen, "/other", "generate: choices: an empty list");
  // Well-formed answers pass.
  {
    std::lock_guard<std::mutex> lock(mu);
    mode = "ok";
  }
  EXPECT_DOUBLE_EQ(rf.score("ab", "cd").sum, -1.0);
  EXPECT_DOUBLE_EQ(other.score("ab", "cd").sum, -1.0);
  EXPECT_EQ(rf.attention("abcde", {}).rows.at(0).mean.size(), 5u);
  EXPECT_EQ(other.count_tokens("abcde"), 5);
  EXPECT_EQ(other.generate("Once", {}).prompt_tokens, 5);
  // D5: an answer over kMaxAnswerBytes, announced or streamed, is refused naming the limit, once
  // (not retried) and without holding it.
  for (const char* m : {"huge_length", "huge_chunked"}) {
    {
      std::lock_guard<std::mutex> lock(mu);
      mode = m;
    }
    OpenAIOptions ro;
    ro.base_url = host + "/other";
    ro.retries = 2;
    ro.backoff_s = 0.01;
    ro.timeout_s = 20;
    OpenAIReader r(ro);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      r.generate("Once", {});
      ADD_FAILURE() << m << ": accepted";
    } catch (const RequestFailed& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("is larger than 64 MiB, the most a remote answer may hold"),
                std::string::npos)
          << w;
      EXPECT_EQ(e.attempts(), 1) << w;
      if (std::string(m) == "huge_length") {
        EXPECT_NE(w.find("it announces 1610612736 bytes"), std::string::npos) << w;
      }
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << m;
  }
  fake.stop();
  th.join();
}

TEST(OpenAIReaderFixture, UnreachableServerFailsAfterRetries) {
  // A port nobody listens on (bound then closed): connection refused on every attempt.
  int port;
  {
    httplib::Server s;
    port = s.bind_to_any_port("127.0.0.1");
  }
  OpenAIOptions oo;
  oo.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  oo.retries = 2;
  oo.backoff_s = 0.01;
  oo.timeout_s = 2;
  OpenAIReader r(oo);
  try {
    r.generate("x", {});
    ADD_FAILURE() << "expected RequestFailed";
  } catch (const RequestFailed& e) {
    EXPECT_EQ(e.status(), 0);
    EXPECT_EQ(e.attempts(), 3);
  }
  OpenAIOptions ftp;
  ftp.base_url = "ftp://x";
  EXPECT_THROW(OpenAIReader{ftp}, UsageError);
}

}  // namespace
}  // namespace ragform::reader
