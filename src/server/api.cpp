// OpenAI-compatible handlers of `ragform serve` (api.h). Field handling follows the OpenAI
// legacy completions / chat completions API and llama-server where they differ in detail. The RAG
// endpoints (/v1/rag/normalize, /v1/rag/spotlight) are in api_rag.cpp.
#include "server/api.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/excerpt.h"
#include "base/json_file.h"
#include "base/json_number.h"
#include "base/json_release.h"
#include "engine/model/model.h"
#include "engine/runtime/prefix_cache.h"
#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "pipelines/cnorm/cnorm.h"
#include "reader/generate_params.h"
#include "reader/native_reader.h"
#include "reader/steering_object.h"
#include "server/api_json.h"
#include "server/api_present.h"
#include "server/engine.h"
#include "server/generation_fields.h"
#include "server/reply_budget.h"
#include "server/router.h"

namespace ragform::server {

using namespace api_json;

namespace {

using nlohmann::json;

// What an /v1/attention reply takes while it is built, for the reply budget (reply_budget.h):
// kReplyBytesPerNumber per attention weight; per doc_spans entry of a row, its report (a few
// numbers and a name).
size_t attention_reply_estimate(size_t weights, size_t span_rows) {
  return weights * kReplyBytesPerNumber + span_rows * 256 + (size_t(1) << 16);
}

std::vector<int> get_int_list(const json& j, const char* key) {
  std::vector<int> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array())
    bad(std::string("'") + key + "' must be an array of integers", "invalid_type");
  // An empty list read as the default (pass 21), where the CLI refuses an empty flag.
  if (j[key].empty())
    bad(std::string("'") + key + "' must hold at least one integer (leave it out for the default)");
  for (auto& v : j[key]) {
    long long x = 0;
    if (!json_whole_number(v, x))
      bad(std::string("'") + key + "' must be an array of integers", "invalid_type");
    // A cast to int would wrap a larger value into another, valid-looking index (2^32 -> 0).
    if (x < INT_MIN || x > INT_MAX)
      bad(std::string("'") + key + "' holds " + json_excerpt(v) + ", outside the int range");
    out.push_back(int(x));
  }
  return out;
}

// The name a client gave a steering key: the request's "steer" object and its fields.
std::string steer_field_name(const std::string& key) {
  return key.empty() ? "steer" : "steer." + key;
}

// A steering refusal (runtime::SteerError, naming the steering object's key) as the request's
// fields say it: a 400 naming steer.spans, steer.layers, ... whether the object was malformed or
// does not fit the prompt and the model. The CLI says its flags instead (cli/steer_flags.h).
[[noreturn]] void bad_steer(const runtime::SteerError& e) {
  using P = runtime::SteerError::Problem;
  bad(e.spelled(steer_field_name), e.problem() == P::type      ? "invalid_type"
                                   : e.problem() == P::missing ? "missing_field"
                                   : e.problem() == P::unknown ? "unknown_field"
                                                               : "invalid_value");
}

// A request's "steer" object (absent or null = off), read by the parser every front end uses
// (reader/steering_object.h): {"rule", "spans": [[start, end], ...], "layers", "heads"}.
reader::SteeringParams steer_field(const json& j) {
  try {
    return reader::parse_steering(j.value("steer", json()));
  } catch (const runtime::SteerError& e) {
    bad_steer(e);
  }
}

// Runs f (which resolves a request's steer object against its prompt and the model) with the
// engine's steering refusals said in the request's field names.
template <class F>
decltype(auto) naming_steer_fields(F&& f) {
  try {
    return f();
  } catch (const runtime::SteerError& e) {
    bad_steer(e);
  }
}

std::string finish(const std::string& r) { return r == "length" ? "length" : "stop"; }

// The events of one streamed request, pushed by the engine thread (engine.h CompletionHooks) and
// popped by the HTTP thread that writes them.
struct Channel {
  struct Event {
    size_t index = 0;   // the prompt the event belongs to
    std::string delta;  // new text
    bool finished = false;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Event> q;
  std::atomic<bool> gone{false};  // the client went away: the engine cancels the generations

  void push(Event e) {
    {
      std::lock_guard<std::mutex> lock(mu);
      q.push_back(std::move(e));
    }
    cv.notify_one();
  }
  Event pop() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return !q.empty(); });
    Event e = std::move(q.front());
    q.pop_front();
    return e;
  }
  CompletionHooks hooks(std::shared_ptr<Channel> self, size_t index) {
    CompletionHooks h;
    h.on_text = [self, index](const std::string& delta) {
      if (self->gone) return false;
      self->push({index, delta, false});
      return true;
    };
    h.on_finish = [self, index] { self->push({index, "", true}); };
    return h;
  }
};

// The error event of a stream that failed after it started.
std::string stream_error(const std::exception& e) {
  return json({{"error",
                {{"message", e.what()}, {"type", "server_error"}, {"code", error_code(500)}}}})
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

long now_s() {
  return long(std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count());
}

std::string next_id(const char* prefix) {
  static std::atomic<uint64_t> n{0};
  return std::string(prefix) + std::to_string(now_s()) + "-" + std::to_string(++n);
}

}  // namespace

Api::Api(reader::NativeReader& reader, Engine& engine, ApiOptions opt)
    : reader_(reader), engine_(engine), opt_(std::move(opt)), created_(now_s()) {
  if (opt_.max_prompt_tokens <= 0 || opt_.max_prompt_tokens > opt_.n_ctx)
    opt_.max_prompt_tokens = opt_.n_ctx;
  chat_family_ = int(tok::chat_family_of(
      reader_.model().file().get_string("tokenizer.chat_template", ""), opt_.chat_template));
  own_ = std::make_unique<Router>();
  add_routes(*own_);
}

Api::~Api() = default;

Response Api::handle(const Request& req) noexcept { return own_->handle(req); }

Response Api::health() {
  EngineStats st = engine_.stats();
  // The prefix cache's counters (engine/runtime/prefix_cache.h): how much prompt work the
  // shared prefixes saved since start, and what the cache holds now (null when it is off).
  json cache = nullptr;
  if (auto pc = reader_.prefix_cache()) cache = runtime::to_json(pc->stats());
  return ok({{"status", "ok"},
             {"active", st.active},
             {"pending", engine_.pending()},
             {"steps", st.steps},
             {"sequences", st.sequences},
             {"jobs", st.jobs},
             {"largest_batch", st.largest_batch},
             {"prompt_tokens", st.prompt_tokens},
             {"prompt_tokens_computed", st.prompt_tokens_computed},
             {"prefix_cache", cache},
             {"reply_memory", to_json(reply_budget().stats())},
             {"body_memory", to_json(body_budget().stats())}});
}

Response Api::models() { return models_reply(opt_.model_id, created_, opt_.model_sha256); }
Response Api::model(RequestBody& body) {
  return model_reply(body.path_parameter, opt_.model_id, created_, opt_.model_sha256);
}

static void check_prompt_len(size_t n, int max_tokens, const ApiOptions& opt) {
  if (int(n) > opt.max_prompt_tokens)
    bad("the prompt has " + std::to_string(n) + " tokens, more than this server's limit of " +
            std::to_string(opt.max_prompt_tokens),
        "context_length_exceeded");
  if (int(n) + max_tokens > opt.n_ctx)
    bad("prompt (" + std::to_string(n) + " tokens) + max_tokens (" + std::to_string(max_tokens) +
            ") exceeds the context size " + std::to_string(opt.n_ctx),
        "context_length_exceeded");
}

namespace {

// 'prompt': a string or a non-empty array of strings.
std::vector<std::string> completion_prompts(const json& j) {
  if (!j.contains("prompt")) bad("'prompt' is required", "missing_field");
  std::vector<std::string> prompts;
  if (j["prompt"].is_string()) {
    prompts.push_back(j["prompt"].get<std::string>());
  } else if (j["prompt"].is_array() && !j["prompt"].empty()) {
    for (auto& v : j["prompt"]) {
      if (!v.is_string()) bad("'prompt' must be a string or an array of strings", "invalid_type");
      prompts.push_back(v.get<std::string>());
    }
  } else {
    bad("'prompt' must be a string or a non-empty array of strings", "invalid_type");
  }
  return prompts;
}

// One streamed text_completion chunk: choice i's new text, or its finish reason.
using ChunkFn = std::function<json(size_t, const std::string&, json)>;

// The streamed reply: every prompt is queued before the stream starts, so a full queue is still a
// 503; then the echoed prompts, each generation's text as it comes and its finish, and [DONE].
Response stream_completions(Engine& engine, const std::vector<std::vector<int32_t>>& ids,
                            const std::function<runtime::GenerateOptions(size_t)>& gen_for,
                            const std::vector<std::string>& prompts, bool echo,
                            const ChunkFn& base) {
  auto ch = std::make_shared<Channel>();
  auto futs = std::make_shared<std::vector<std::future<runtime::GenerateOutput>>>();
  try {
    for (size_t i = 0; i < ids.size(); ++i)
      futs->push_back(engine.complete(ids[i], gen_for(i), ch->hooks(ch, i)));
  } catch (...) {
    ch->gone = true;  // the prompts already queued are dropped at their first token
    throw;
  }
  Response r;
  r.stream = true;
  r.content_type = "text/event-stream";
  r.producer = [ch, futs, prompts, echo,
                base](const std::function<bool(const std::string&)>& send) {
    if (echo)
      for (size_t i = 0; i < prompts.size(); ++i)
        if (!send(dump(base(i, prompts[i], nullptr)))) {
          ch->gone = true;
          return;
        }
    for (size_t finished = 0; finished < futs->size();) {
      Channel::Event e = ch->pop();
      if (!e.finished) {
        if (!send(dump(base(e.index, e.delta, nullptr)))) {
          ch->gone = true;
          return;
        }
        continue;
      }
      ++finished;
      try {
        runtime::GenerateOutput g = (*futs)[e.index].get();
        if (!send(dump(base(e.index, "", finish(g.finish_reason))))) {
          ch->gone = true;
          return;
        }
      } catch (const std::exception& ex) {
        ch->gone = true;
        send(stream_error(ex));
        return;
      }
    }
    send("[DONE]");
  };
  return r;
}

// What a handler throws when its client has gone (server/message.h client_gone): nobody reads
// the reply; the status is nginx's for it.
ApiError client_closed() {
  return ApiError{499, "the client closed the connection", "invalid_request_error",
                  "client_closed_request"};
}

// The 'logprobs' object of one choice: with echo the prompt's tokens (the first without a
// log-prob, as in OpenAI's legacy API), then the generated tokens, each scored as the id it is
// after the prompt's ids, under the request's steering (`steer`, resolved on the prompt, as the
// generation ran): the listing is of what was generated (pass 20: the text tokenised again after
// an empty prompt listed a leading-space token never generated, and a steered generation's
// log-probs were computed unsteered). The tokens spell the choice's text and text_offset indexes
// it: the BOS the tokenizer adds is an empty piece and the prompt's first word is spelled as the
// text spells it (the OpenAI SDK's check found "<s>" listed and every offset three characters
// off); a generated token whose piece starts past a stop string's cut is not listed. `top` > 0
// (the request's logprobs = N): top_logprobs lists, per token, the N most likely pieces at its
// position, spelled as that position's token is (pass 20: " Once" beside "Once"), with their
// log-probs (null for the first prompt token); 0: top_logprobs is null. Scoring runs on the
// engine's thread, between its steps.
// The text `ids` spell as completion_logprobs lists them: the BOS the tokenizer adds is empty, the
// first text token is decoded alone (a SentencePiece word without the space its piece carries),
// the others are their pieces.
std::string spelled_prompt(const tok::Tokenizer& tk, const std::vector<int32_t>& ids) {
  const size_t first = tk.add_bos() && !ids.empty() && ids[0] == tk.bos() ? 1 : 0;
  std::string s;
  for (size_t i = first; i < ids.size(); ++i)
    s += i == first ? tk.decode({ids[i]}, true) : tk.token_to_piece(ids[i], true);
  return s;
}

json completion_logprobs(reader::NativeReader& reader, Engine& engine,
                         const std::vector<int32_t>& prompt_ids,
                         const std::vector<int32_t>& gen_ids, const std::string& text,
                         const runtime::Steering& steer, bool echo, int top) {
  const auto& tk = reader.tokenizer();
  json toks = json::array(), lps = json::array(), offs = json::array(), tops = json::array();
  size_t off = 0;
  // `starts_text`: a token that begins the prompt's text, spelled as decoded alone.
  const auto spell = [&](int32_t id, bool starts_text) {
    return starts_text ? tk.decode({id}, true) : tk.token_to_piece(id, true);
  };
  auto add = [&](const std::string& piece, json v,
                 const std::vector<std::pair<int32_t, double>>* alts, bool starts_text) {
    toks.push_back(piece);
    lps.push_back(v);
    offs.push_back(off);
    // text_offset counts characters (code points) of the choice's text, as OpenAI's does, so
    // text[offset:] slices it in Python (pass 16: bytes were counted). A piece that starts
    // inside a character (a byte-level token) counts from the character after it.
    for (char c : piece) off += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    json alt = nullptr;
    if (alts) {
      // Pieces are the keys (OpenAI's shape): two tokens spelled alike keep the likelier one.
      alt = json::object();
      for (const auto& [id, lp] : *alts) {
        const std::string p = spell(id, starts_text);
        if (!alt.contains(p)) alt[p] = lp;
      }
    }
    tops.push_back(std::move(alt));
  };
  // The generated tokens the text holds: a stop string cuts the text, not the ids.
  size_t n_gen = 0;
  for (size_t covered = 0; n_gen < gen_ids.size() && covered < text.size(); ++n_gen)
    covered += tk.token_to_piece(gen_ids[n_gen], true).size();
  std::vector<int32_t> all = prompt_ids;
  all.insert(all.end(), gen_ids.begin(), gen_ids.begin() + long(n_gen));
  const bool added_bos = tk.add_bos() && !prompt_ids.empty() && prompt_ids[0] == tk.bos();
  if (echo) add(added_bos ? std::string() : spell(prompt_ids[0], true), nullptr, nullptr, false);
  const size_t split = echo ? 1 : prompt_ids.size();
  if (split < all.size()) {
    if (client_gone()) throw client_closed();
    reader::ScoreResult sr;
    engine.run([&] { sr = reader.score_ids(all, split, steer, top); }).get();
    for (size_t i = 0; i < sr.tokens.size(); ++i) {
      const size_t t = split + i;  // the position of this token in `all`
      const bool starts_text = added_bos && t == 1 && t < prompt_ids.size();
      const auto& x = sr.tokens[i];
      add(spell(x.id, starts_text), x.logprob, top > 0 ? &x.top : nullptr, starts_text);
    }
  }
  return {{"tokens", toks},
          {"token_logprobs", lps},
          {"top_logprobs", top > 0 ? tops : json(nullptr)},
          {"text_offset", offs}};
}

}  // namespace

Response Api::completions(RequestBody& body) {
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  std::vector<std::string> prompts = completion_prompts(j);
  // Every prompt of a request is queued at once, so more than the queue holds could never be
  // accepted, however idle the server: a 400, not a 503 inviting a retry.
  if (prompts.size() > size_t(engine_.max_queue()))
    bad("'prompt' holds " + std::to_string(prompts.size()) +
            " prompts, more than this server's limit of " + std::to_string(engine_.max_queue()) +
            " per request (--queue)",
        "too_many_prompts");
  GenerationFields c = generation_fields(j, opt_, 16);
  bool echo = get_bool(j, "echo", false);
  int logprobs = -1;
  if (j.contains("logprobs") && !j["logprobs"].is_null())
    logprobs = get_int(j, "logprobs", 0, 0, 20);
  const reader::SteeringParams steer = steer_field(j);
  std::vector<std::vector<int32_t>> ids;
  std::vector<runtime::Steering> steering;  // per prompt: its spans are its own tokens
  for (auto& p : prompts) {
    reader::TokenizedPrompt t = reader_.tokenize_prompt(p, c.gen.max_tokens);
    check_prompt_len(t.ids.size(), c.gen.max_tokens, opt_);
    try {
      steering.push_back(
          naming_steer_fields([&] { return reader_.resolve_steering(t, steer, p.size()); }));
    } catch (ApiError& e) {
      // Which of several prompts the steering object does not fit (pass 21).
      if (prompts.size() > 1)
        e.message = "prompt[" + std::to_string(ids.size()) + "]: " + e.message;
      throw;
    }
    // What echo repeats: the prompt, or the text a cut prompt's kept tokens spell (--truncate
    // left), which the listing's tokens spell and its offsets index (pass 22: the whole prompt
    // was echoed beside the kept tokens, every offset off).
    // A chat server's prompt is fed as its rendered turn: echo repeats that, which its listing
    // spells (pass 24: the raw prompt beside the template's tokens, offsets past its end).
    if (echo && (!t.untruncated.empty() || reader_.chat_mode() != "raw"))
      p = spelled_prompt(reader_.tokenizer(), t.ids);
    ids.push_back(std::move(t.ids));
  }
  // A listing names every token (the prompt's too with echo) and its `logprobs` likeliest
  // pieces, each scored over the whole vocabulary: bounded before anything runs (pass 16: 64
  // prompts of 2,000 tokens at logprobs 20 with echo held the engine for minutes and the whole
  // reply budget).
  if (logprobs >= 0) {
    size_t entries = 0;
    for (const auto& t : ids)
      entries += ((echo ? t.size() : 0) + size_t(c.gen.max_tokens) + 1) * size_t(1 + logprobs);
    if (entries > kMaxLogprobEntries)
      bad("the log-prob listing could hold " + std::to_string(entries) +
              " entries (tokens x (1 + logprobs)), more than this server's limit of " +
              std::to_string(kMaxLogprobEntries) +
              ": ask for fewer prompts, tokens or top log-probs",
          "response_too_large");
  }
  std::string id = next_id("cmpl-");
  auto base = [this, id](size_t i, const std::string& text, json reason) {
    return json{
        {"id", id},
        {"object", "text_completion"},
        {"created", now_s()},
        {"model", opt_.model_id},
        {"choices",
         {{{"index", i}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", reason}}}}};
  };
  // Prompt i samples with seed + i, as runtime::generate numbers a batch's sequences, so the
  // prompts of one request give what NativeReader::generate_batch gives.
  auto gen_for = [&](size_t i) {
    runtime::GenerateOptions g = c.gen;
    g.sampling.seed += i;
    if (steering[i].active()) g.steering = {steering[i]};
    return g;
  };
  if (c.stream) {
    // The chunks carry no log-probs: asked for, they would be null (issue 40, pass 15).
    if (logprobs >= 0) bad("logprobs is not supported with stream: true", kUnsupported);
    return stream_completions(engine_, ids, gen_for, prompts, echo, base);
  }

  // Queue every prompt before waiting, so the prompts of one request share the engine's steps.
  std::vector<std::future<runtime::GenerateOutput>> futs;
  for (size_t i = 0; i < ids.size(); ++i) futs.push_back(engine_.complete(ids[i], gen_for(i)));
  std::vector<runtime::GenerateOutput> outs(prompts.size());
  for (size_t i = 0; i < futs.size(); ++i) outs[i] = futs[i].get();

  // Log-probs list every token (the prompt's too with echo) and echo repeats each prompt: the
  // reply is reserved in the server-wide budget before it is built, and held until written.
  size_t listed = 0, echoed = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (logprobs >= 0)
      listed += ((echo ? ids[i].size() : 0) + outs[i].ids.size() + 1) *
                (kReplyBytesPerToken + size_t(logprobs) * kReplyBytesPerNumber);
    if (echo) echoed += prompts[i].size();
  }
  ReplyBudget::Hold hold =
      reply_budget().reserve(listed + echoed * kReplyBytesPerEchoedByte + (size_t(1) << 16));
  json choices = json::array();
  int completion_tokens = 0, prompt_tokens = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto& g = outs[i];
    completion_tokens += int(g.ids.size());
    prompt_tokens += int(ids[i].size());
    json lp = nullptr;
    if (logprobs >= 0)
      lp =
          completion_logprobs(reader_, engine_, ids[i], g.ids, g.text, steering[i], echo, logprobs);
    choices.push_back({{"index", i},
                       {"text", echo ? prompts[i] + g.text : g.text},
                       {"logprobs", lp},
                       {"finish_reason", finish(g.finish_reason)}});
  }
  json usage = {{"prompt_tokens", prompt_tokens},
                {"completion_tokens", completion_tokens},
                {"total_tokens", prompt_tokens + completion_tokens}};
  return held_reply(ok({{"id", id},
                        {"object", "text_completion"},
                        {"created", now_s()},
                        {"model", opt_.model_id},
                        {"choices", std::move(choices)},
                        {"usage", usage}}),
                    std::move(hold));
}

Response Api::chat(RequestBody& body) {
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  if (j.contains("steer") && !j["steer"].is_null())
    bad("'steer' is read by /v1/completions, /v1/score and /v1/attention, whose prompt is one text",
        kUnsupported);
  if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty())
    bad("'messages' must be a non-empty array",
        j.contains("messages") ? "invalid_type" : "missing_field");
  if (chat_family_ == int(tok::ChatFamily::None) || chat_family_ == int(tok::ChatFamily::Unknown))
    bad("model '" + opt_.model_id +
            "' has no chat template this server can render; use /v1/completions",
        "no_chat_template");
  std::vector<tok::ChatMessage> msgs;
  for (auto& m : j["messages"]) {
    if (!m.is_object())
      bad("each message must be an object with 'role' and 'content'", "invalid_type");
    // A message is its role and its text: a name, tool calls or a tool call's id would be dropped
    // from the rendered prompt (issue 40, P3), so they are refused; null is absent (pass 17: the
    // SDK's own message objects carry refusal, annotations, ... as null).
    only_keys(m, {"role", "content"}, "message " + std::to_string(msgs.size()));
    std::string role = get_str(m, "role", true), content;
    // The roles every template renders as what they are. Llama 2's and Mistral's formats write any
    // other role as an assistant turn (pass 19: "User", "tool", "developer" became the model's own
    // words); OpenAI's "developer" is its current name for the system message.
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant")
      bad("message " + std::to_string(msgs.size()) + ": role '" + printable(excerpt(role)) +
          "' is not one this server renders (system, user, assistant; developer reads as system)");
    if (m.contains("content") && m["content"].is_array()) {
      // Content parts: only text parts are understood.
      for (auto& part : m["content"]) {
        if (!part.is_object() || get_str(part, "type", true) != "text")
          bad("only text content parts are supported", "invalid_type");
        only_keys(part, {"type", "text"},
                  "message " + std::to_string(msgs.size()) + "'s content part");
        content += get_str(part, "text", true);
      }
    } else {
      // Required: OpenAI allows a null content only beside tool calls, which this server does
      // not take, and a message without one rendered as an empty turn the client never sent.
      content = get_str(m, "content", true);
    }
    msgs.push_back({role, content});
  }
  GenerationFields c = generation_fields(j, opt_, opt_.max_tokens);
  // Chat's log-probs (a boolean, with top_logprobs) are not implemented here; /v1/completions
  // gives them (pass 14: logprobs true was answered with "logprobs": null).
  if (get_bool(j, "logprobs", false))
    bad("logprobs is not supported on chat completions", kUnsupported);
  if (get_int(j, "top_logprobs", 0, 0, 20) != 0)  // 0 is the default (pass 16)
    bad("top_logprobs is not supported on chat completions", kUnsupported);
  // Message contents are text: only the template's own markers become special tokens.
  std::vector<int32_t> ids =
      tok::tokenize_chat(reader_.tokenizer(), tok::ChatFamily(chat_family_), msgs, true).ids;
  int max_tokens = c.gen.max_tokens;
  const auto absent = [&](const char* key) { return !j.contains(key) || j[key].is_null(); };
  if (absent("max_tokens") && absent("max_completion_tokens"))  // null is absent (pass 15)
    max_tokens = std::max(0, std::min(max_tokens, opt_.n_ctx - int(ids.size())));
  c.gen.max_tokens = max_tokens;
  check_prompt_len(ids.size(), max_tokens, opt_);
  std::string id = next_id("chatcmpl-");

  if (c.stream) {
    auto ch = std::make_shared<Channel>();
    auto fut = std::make_shared<std::future<runtime::GenerateOutput>>(
        engine_.complete(ids, c.gen, ch->hooks(ch, 0)));
    Response r;
    r.stream = true;
    r.content_type = "text/event-stream";
    std::string model = opt_.model_id;
    r.producer = [ch, fut, id, model](const std::function<bool(const std::string&)>& send) {
      auto chunk = [&](json delta, json reason) {
        return send(
            dump({{"id", id},
                  {"object", "chat.completion.chunk"},
                  {"created", now_s()},
                  {"model", model},
                  {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", reason}}}}}));
      };
      if (!chunk({{"role", "assistant"}, {"content", ""}}, nullptr)) {
        ch->gone = true;
        return;
      }
      for (;;) {
        Channel::Event e = ch->pop();
        if (!e.finished) {
          if (!chunk({{"content", e.delta}}, nullptr)) {
            ch->gone = true;
            return;
          }
          continue;
        }
        try {
          runtime::GenerateOutput g = fut->get();
          if (chunk(json::object(), finish(g.finish_reason))) send("[DONE]");
        } catch (const std::exception& ex) {
          send(stream_error(ex));
        }
        return;
      }
    };
    return r;
  }

  runtime::GenerateOutput g = engine_.complete(ids, c.gen).get();
  int n = int(g.ids.size());
  return ok({{"id", id},
             {"object", "chat.completion"},
             {"created", now_s()},
             {"model", opt_.model_id},
             {"choices",
              {{{"index", 0},
                {"message", {{"role", "assistant"}, {"content", g.text}}},
                {"logprobs", nullptr},
                {"finish_reason", finish(g.finish_reason)}}}},
             {"usage",
              {{"prompt_tokens", ids.size()},
               {"completion_tokens", n},
               {"total_tokens", int(ids.size()) + n}}}});
}

Response Api::score(RequestBody& body) {
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  std::string model = get_str(j, "model", false);
  if (!model.empty() && model != opt_.model_id)
    throw ApiError{404, "model '" + model + "' is not served here", "invalid_request_error",
                   "model_not_found"};
  std::string prompt = get_str(j, "prompt", true), cont = get_str(j, "continuation", false);
  const reader::SteeringParams steer = steer_field(j);
  const size_t n_tokens = reader_.prompt_tokens(prompt + cont).size();
  check_prompt_len(n_tokens, 0, opt_);
  // Every token is listed: reserved before it is scored (reply_budget.h).
  ReplyBudget::Hold hold =
      reply_budget().reserve(n_tokens * kReplyBytesPerToken + (size_t(1) << 16));
  reader::ScoreResult sr;
  naming_steer_fields([&] { engine_.run([&] { sr = reader_.score(prompt, cont, steer); }).get(); });
  json toks = json::array();
  for (auto& t : sr.tokens)
    toks.push_back({{"id", t.id}, {"piece", t.piece}, {"logprob", t.logprob}});
  return held_reply(ok({{"model", opt_.model_id},
                        {"tokens", std::move(toks)},
                        {"sum", sr.sum},
                        {"prompt_tokens", sr.prompt_tokens}}),
                    std::move(hold));
}

Response Api::attention(RequestBody& body) {
  json& j = body.json;  // parsed by the router (router.h RequestBody)
  std::string model = get_str(j, "model", false);
  if (!model.empty() && model != opt_.model_id)
    throw ApiError{404, "model '" + model + "' is not served here", "invalid_request_error",
                   "model_not_found"};
  std::string prompt = get_str(j, "prompt", true);
  reader::AttentionQuery q;
  q.layers = get_int_list(j, "layers");
  q.query_positions = get_int_list(j, "query_positions");
  q.heads = get_int_list(j, "heads");
  // Calibrated document relevance (pipelines/cnorm/relevance.h): "doc_spans" [[start, end], ...]
  // byte ranges of the prompt, "bias" a curve object from `ragform position-bias`.
  std::vector<cnorm::CharSpan> spans;
  if (j.contains("doc_spans")) spans = cnorm::char_spans_from_json(j["doc_spans"], "doc_spans");
  std::optional<cnorm::BiasCurve> bias;
  if (j.contains("bias") && !j["bias"].is_null()) {
    if (spans.empty()) throw UsageError("bias", "needs doc_spans");
    bias = cnorm::bias_curve_from_json(j["bias"], "bias");
  }
  const size_t n_tokens = reader_.prompt_tokens(prompt).size();
  check_prompt_len(n_tokens, 0, opt_);
  // The reply's size is the request's choice (layers x query_positions rows, each with its heads'
  // and their mean's weights over the prompt's positions, and doc_spans on every row): bounded
  // before anything is computed, since duplicates in the lists multiply it too.
  const size_t n_rows =
      std::max<size_t>(1, q.layers.size()) * std::max<size_t>(1, q.query_positions.size());
  const size_t n_heads =
      q.heads.empty() ? size_t(std::max(0, reader_.model().hp().n_head)) : q.heads.size();
  if (n_rows > kMaxAttentionValues || n_tokens * (n_heads + 1) > kMaxAttentionValues / n_rows)
    bad(std::to_string(n_rows) + " attention rows x " + std::to_string(n_heads + 1) +
            " head rows x " + std::to_string(n_tokens) + " positions exceed the reply's limit of " +
            std::to_string(kMaxAttentionValues) +
            " attention weights (ask for fewer layers, query_positions or heads)",
        "response_too_large");
  if (!spans.empty()) cnorm::check_document_work(spans.size(), n_rows, n_tokens, "doc_spans");
  const reader::SteeringParams steer = steer_field(j);
  // The reply's memory is reserved in the server-wide budget before any of it is built, and held
  // until the body is written (reply_budget.h): concurrent requests cannot each build one at once.
  ReplyBudget::Hold hold = reply_budget().reserve(
      attention_reply_estimate(n_rows * (n_heads + 1) * n_tokens, n_rows * spans.size()));
  reader::AttentionResult ar;
  naming_steer_fields(
      [&] { engine_.run([&] { ar = reader_.attention(prompt, q, steer); }).get(); });
  json rows = json::array();
  for (auto& r : ar.rows) {
    json row = {{"layer", r.layer},
                {"query_position", r.query_position},
                {"head_ids", r.head_ids},
                {"heads", r.heads},
                {"mean", r.mean}};
    // C-NORM's Attention Balance Score of the head-mean row (cnorm paper, section 4.2).
    row["abs"] = r.mean.empty() ? json(nullptr) : json(cnorm::attention_balance_score(r.mean));
    if (!spans.empty())
      row.update(cnorm::document_report(prompt, ar, r, spans, bias ? &*bias : nullptr));
    rows.push_back(std::move(row));
    std::vector<std::vector<float>>().swap(r.heads);  // its weights are in the JSON now
  }
  json reply = {{"model", opt_.model_id}, {"ids", ar.ids}, {"pieces", ar.pieces}};
  ar = {};
  reply["rows"] = std::move(rows);  // moved, not copied: the tree is the reply's largest part
  Response r = ok(reply);
  reply = nullptr;
  if (r.body.size() > kMaxResponseBytes)
    bad("the reply would be " + std::to_string(r.body.size()) + " bytes, above the limit of " +
            std::to_string(kMaxResponseBytes) + " (ask for fewer rows or doc_spans)",
        "response_too_large");
  return held_reply(std::move(r), std::move(hold));
}

}  // namespace ragform::server
