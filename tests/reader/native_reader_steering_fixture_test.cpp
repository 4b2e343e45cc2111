// NativeReader's steering (steering_params.h): character spans of the user's prompt become the
// tokens holding any of their bytes, for SentencePiece and BPE vocabularies, in raw and chat mode
// (offsets before the template; the template's tokens and BOS never in a span) and after
// --truncate left, from the tokens the prompt was tokenised into once (TokenizedPrompt); the
// steered call differs from the unsteered one, which it leaves unchanged.
#include <gtest/gtest.h>

#include "base/error.h"
#include "engine/gguf/gguf.h"
#include "engine/tokenizer/tokenizer.h"
#include "reader/native_reader.h"
#include "support/test_support.h"

namespace ragform::reader {
namespace {

const std::string kPrompt = "Once upon a time there was a girl named Lily. She had a red ball.";

SteeringParams steer_on(const std::string& word, const std::string& text = kPrompt) {
  SteeringParams s;
  runtime::parse_steer_rule("reallocate:0.5", s, "test");
  const size_t at = text.find(word);
  s.spans = {{at, at + word.size()}};
  return s;
}

// The pieces of the tokens in the spans, concatenated.
std::string span_text(const NativeReader& r, const std::vector<int32_t>& ids,
                      const runtime::Steering& st) {
  std::string s;
  for (const auto& sp : st.spans)
    for (int t = sp.begin; t < sp.end; ++t) s += r.tokenizer().token_to_piece(ids[size_t(t)]);
  return s;
}

TEST(NativeReaderSteering, SpansBecomeTheTokensOfTheirBytes) {
  for (const char* name : {"stories260K", "tiny-qwen2", "tiny-llama31", "tiny-gemma3"}) {
    SCOPED_TRACE(name);
    REQUIRE_SHARED(path, std::string("fixtures/models/") + name + ".gguf");
    NativeReader r(path.string());
    const TokenizedPrompt t = r.tokenize_prompt(kPrompt);
    const auto& ids = t.ids;
    EXPECT_EQ(ids, r.prompt_tokens(kPrompt));
    const runtime::Steering st = r.resolve_steering(t, steer_on("Lily"), kPrompt.size());
    ASSERT_TRUE(st.active());
    ASSERT_EQ(st.spans.size(), 1u);
    const std::string text = span_text(r, ids, st);
    EXPECT_NE(text.find("Lily"), std::string::npos) << text;
    EXPECT_LE(text.size(), std::string(" Lily").size()) << text;  // no neighbour word
    EXPECT_GT(st.spans[0].begin, 0);                              // never BOS
    // The byte layout holds for every token: the pieces spell the prompt.
    const auto bytes = runtime::token_char_spans(r.tokenizer(), kPrompt, ids);
    EXPECT_EQ(bytes.back().end, kPrompt.size());
  }
}

TEST(NativeReaderSteering, APromptSpellingBosIsText) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  NativeReader r(path.string());
  const std::string p = "<s> Lily ran.";
  const TokenizedPrompt t = r.tokenize_prompt(p);
  const auto& ids = t.ids;
  const runtime::Steering st = r.resolve_steering(t, steer_on("<s>", p), p.size());
  ASSERT_EQ(st.spans.size(), 1u);
  EXPECT_GE(st.spans[0].begin, 1);  // the text's "<s>", not the BOS token
  EXPECT_NE(span_text(r, ids, st).find("<s>"), std::string::npos);
  EXPECT_EQ(span_text(r, ids, st).find("Lily"), std::string::npos);
}

TEST(NativeReaderSteering, ChatModeOffsetsAreIntoTheUserText) {
  REQUIRE_SHARED(src, "fixtures/models/stories260K.gguf");
  const auto dir = ragform::testing::temp_dir("steer-chat");
  auto f = gguf::File::open(src.string());
  auto w = gguf::Writer::copy_of(*f);
  w.set("tokenizer.chat_template",
        gguf::Value::str("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' "
                         "+ message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"));
  const std::string model = (dir / "chatml.gguf").string();
  w.write(model);
  NativeOptions o;
  o.chat = true;
  NativeReader r(model, o);
  const TokenizedPrompt t = r.tokenize_prompt(kPrompt);
  const auto& ids = t.ids;
  EXPECT_EQ(ids, r.prompt_tokens(kPrompt));
  EXPECT_NE(t.spelled.find(kPrompt), std::string::npos);  // the template's text, kept
  EXPECT_EQ(t.spelled.substr(t.prompt_at, kPrompt.size()), kPrompt);
  // The whole prompt: every token of the user text, no template token.
  SteeringParams all = steer_on(kPrompt);
  const runtime::Steering st = r.resolve_steering(t, all, kPrompt.size());
  ASSERT_EQ(st.spans.size(), 1u);
  std::string text = span_text(r, ids, st);
  EXPECT_EQ(text.find("<|im_"), std::string::npos) << text;
  EXPECT_NE(text.find("Once upon"), std::string::npos) << text;
  EXPECT_NE(text.find("red ball."), std::string::npos) << text;
  EXPECT_GT(st.spans[0].begin, 3);  // after "<|im_start|>user\n"
  const runtime::Steering lily = r.resolve_steering(t, steer_on("Lily"), kPrompt.size());
  EXPECT_NE(span_text(r, ids, lily).find("Lily"), std::string::npos);
  // A prompt that the template also writes after it ("assistant" opens the reply) is steered in
  // the user's turn, not in the header (pass 24: the last occurrence was taken).
  const std::string word = "assistant";
  const TokenizedPrompt wt = r.tokenize_prompt(word);
  const runtime::Steering in_turn = r.resolve_steering(wt, steer_on(word, word), word.size());
  ASSERT_EQ(in_turn.spans.size(), 1u);
  EXPECT_LT(in_turn.spans[0].end + 3, int(wt.ids.size())) << "the reply's header was steered";
  // Attention says where the prompt starts in its pieces: the user's turn, not the header.
  const AttentionResult a = r.attention(word, AttentionQuery{});
  ASSERT_TRUE(a.prompt_at.has_value());
  std::string spelt;
  for (const auto& p : a.pieces) spelt += p;
  EXPECT_EQ(spelt.compare(*a.prompt_at, word.size(), word), 0) << spelt;
  EXPECT_LT(*a.prompt_at, spelt.rfind(word)) << spelt;
}

TEST(NativeReaderSteering, TruncateLeftShiftsTheSpans) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  NativeReader full(path.string());
  const auto all = full.prompt_tokens(kPrompt);
  NativeOptions o;
  o.n_ctx = int(all.size()) - 6;
  o.overflow = Overflow::TruncateLeft;
  NativeReader cut(path.string(), o);
  const TokenizedPrompt t = cut.tokenize_prompt(kPrompt, 0);
  const auto& ids = t.ids;
  ASSERT_LT(ids.size(), all.size());
  EXPECT_EQ(t.untruncated, all);  // what the text spells, kept for steering
  EXPECT_TRUE(full.tokenize_prompt(kPrompt).untruncated.empty());
  const runtime::Steering st = cut.resolve_steering(t, steer_on("red ball"), kPrompt.size());
  ASSERT_EQ(st.spans.size(), 1u);
  EXPECT_NE(span_text(cut, ids, st).find("red ball"), std::string::npos);
  // A span wholly in the cut part is refused, not left out (pass 22: generation ran unsteered).
  EXPECT_THROW(cut.resolve_steering(t, steer_on("Once"), kPrompt.size()), runtime::SteerError);
}

TEST(NativeReaderSteering, CallsAreSteeredAndTheMemberDefaultStaysOff) {
  REQUIRE_SHARED(path, "fixtures/models/stories260K.gguf");
  NativeReader r(path.string());
  AttentionQuery q;
  const auto plain = r.attention(kPrompt, q);
  const auto steered = r.attention(kPrompt, q, steer_on("Lily"));
  EXPECT_NE(steered.rows[0].mean, plain.rows[0].mean);
  EXPECT_EQ(r.attention(kPrompt, q).rows[0].mean, plain.rows[0].mean);  // cache not mixed up
  r.steering = steer_on("Lily");
  EXPECT_EQ(r.attention(kPrompt, q).rows[0].mean, steered.rows[0].mean);
  const auto g = r.generate(kPrompt, GenerateParams{});
  r.steering = {};
  EXPECT_NE(r.generate(kPrompt, GenerateParams{}).ids, g.ids);
  SteeringParams past = steer_on("Lily");
  past.spans = {{0, kPrompt.size() + 1}};
  EXPECT_THROW(r.attention(kPrompt, q, past), UsageError);
  // The refusal names the steering object's key, for each front end to spell.
  try {
    r.attention(kPrompt, q, past);
  } catch (const runtime::SteerError& e) {
    EXPECT_EQ(e.key(), "spans");
    const auto flag = [](const std::string& k) { return "--steer-" + k; };
    EXPECT_EQ(e.spelled(flag).rfind("--steer-spans: span 0:", 0), 0u) << e.spelled(flag);
  }
}

}  // namespace
}  // namespace ragform::reader
