// A `ragform serve --truncate left` server, through a real process on loopback (issue 40, pass 22):
// - W1: /v1/score of a continuation after a prompt too long for the context scored most of the
//   prompt as the continuation (prompt_tokens 1, 31 tokens for a 6-token continuation); it now
//   scores the continuation after the prompt cut to make room for it, as NativeReader::score does.
// - W4: echo repeated the whole prompt beside the kept tokens (the listing's tokens did not spell
//   the text, every text_offset off); it now repeats what the kept tokens spell, streamed or not.
#include <string>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include "server/serve_harness.h"

namespace ragform::testing {
namespace {

using nlohmann::json;

const std::string kLong =
    "Once upon a time there was a little girl named Lily. She loved to play outside in the park "
    "with her friends. One day she saw a bird";

json post_json(int port, const std::string& path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  auto r = c.Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  return r && r->status == 200 ? json::parse(r->body) : json();
}

TEST(ServeTruncateLeft, ScoreAndEchoKeepTheContinuationAndSpellTheKeptPrompt) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess cut({"-m", model.string(), "--ctx", "32", "--truncate", "left"});
  ServeProcess full({"-m", model.string(), "--ctx", "256"});

  // /v1/score: the continuation's tokens, as the untruncated server scores them.
  const json body = {{"prompt", kLong}, {"continuation", " she saw a bird"}};
  const json whole = post_json(full.port(), "/v1/score", body);
  const json s = post_json(cut.port(), "/v1/score", body);
  ASSERT_FALSE(whole.is_null());
  ASSERT_FALSE(s.is_null());
  ASSERT_EQ(s["tokens"].size(), whole["tokens"].size()) << s.dump();
  EXPECT_LE(s["tokens"].size(), 6u);
  for (size_t i = 0; i < s["tokens"].size(); ++i)
    EXPECT_EQ(s["tokens"][i]["id"], whole["tokens"][i]["id"]) << i;
  EXPECT_EQ(s["prompt_tokens"].get<size_t>() + s["tokens"].size(), 32u) << s.dump();

  // echo: the text is what the kept tokens spell, and the listing spells and indexes it.
  const json c = post_json(
      cut.port(), "/v1/completions",
      {{"prompt", kLong}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 3}, {"temperature", 0}});
  ASSERT_FALSE(c.is_null());
  const json& choice = c["choices"][0];
  const std::string text = choice["text"];
  EXPECT_NE(text, kLong.substr(0, text.size())) << "the whole prompt echoed";
  expect_listing_spells_text(choice);
  EXPECT_EQ(c["usage"]["prompt_tokens"].get<int>() + c["usage"]["completion_tokens"].get<int>(),
            32);
  // The kept text is the prompt's end, and a streamed echo is the same text.
  EXPECT_NE(kLong.find(text.substr(0, 20)), std::string::npos) << text;
  httplib::Client h("127.0.0.1", cut.port());
  auto st =
      h.Post("/v1/completions",
             json({{"prompt", kLong}, {"echo", true}, {"max_tokens", 3}, {"stream", true}}).dump(),
             "application/json");
  ASSERT_TRUE(st && st->status == 200);
  const std::string first = st->body.substr(6, st->body.find('\n') - 6);  // "data: {...}"
  const std::string echoed = json::parse(first)["choices"][0]["text"];
  EXPECT_EQ(text.rfind(echoed, 0), 0u) << echoed;
  EXPECT_NE(echoed, kLong);
}

// Pass 24: a chat server (--chat) feeds /v1/completions' prompt as its rendered turn; echo repeats
// that rendering, which the listing's tokens spell (it repeated the raw prompt beside the
// template's tokens, offsets past its end: an echo-based score of " Paris" summed the template).
TEST(ServeTruncateLeft, AChatServersEchoIsTheRenderedTurn) {
  REQUIRE_SHARED(model, "fixtures/models/stories260K.gguf");
  ServeProcess chat({"-m", model.string(), "--ctx", "256", "--chat", "--chat-template", "chatml",
                     "--system", "Be brief."});
  const json c = post_json(
      chat.port(), "/v1/completions",
      {{"prompt", "Lily had a ball"}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 0}});
  ASSERT_FALSE(c.is_null());
  const json& choice = c["choices"][0];
  const std::string text = choice["text"];
  EXPECT_NE(text.find("<|im_start|>user\nLily had a ball<|im_end|>"), std::string::npos) << text;
  EXPECT_NE(text.find("Be brief."), std::string::npos) << text;
  expect_listing_spells_text(choice);
}

}  // namespace
}  // namespace ragform::testing
