// A server-wide bound on the memory replies hold at once (docs/server.md "Security"). Each reply
// is bounded on its own (kMaxAttentionValues, kMaxResponseBytes, kMaxEmbeddingValues, ...), but
// every request built its whole reply at once: 8 concurrent /v1/attention requests of 39 MB replies
// peaked at 1.1 GB, and --max-connections 256 of them could ask for 40 GB (issue 40). A handler
// whose reply can be large reserves its estimate of the memory it will build before building it;
// once built, the hold shrinks to the body's size and goes with the Response (Response::hold)
// until the HTTP layer has written the body out. A request that does not fit waits, in arrival
// order, for earlier replies to be written; after `wait` it gets 503 server_busy. A reservation
// larger than the whole budget is cut to it: such a reply is built alone.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "server/message.h"

namespace ragform::server {

// The budget of a server (`ragform serve`): 256 MiB of replies under construction or being written
// (three /v1/attention replies of the largest size at once).
inline constexpr size_t kReplyBudgetBytes = size_t(256) << 20;
// How long a request waits for room before its 503.
inline constexpr std::chrono::seconds kReplyBudgetWait{60};
// What one number of a reply (an attention weight, an embedding's component) takes while the reply
// is built: the float the engine returned (4 B), its JSON value (16 B and its array's share), its
// text (up to 22 B) and the allocator's slack. Measured with /v1/attention on stories260K:
// 2,093,220 weights took the server from 18 to 121 MB, 49 B each.
inline constexpr size_t kReplyBytesPerNumber = 64;
// What one token of a log-prob listing takes while built (/v1/completions' logprobs, /v1/score):
// its piece, log-prob and offset or id, as JSON values and as text. 64 prompts of 2,040 control
// characters with echo and logprobs made a 784 KB request a 5.1 MB reply (issue 40, pass 8).
inline constexpr size_t kReplyBytesPerToken = 4 * kReplyBytesPerNumber;
// A string echoed from the request: held as itself and as JSON text, which may write a byte as six
// (\u0001).
inline constexpr size_t kReplyBytesPerEchoedByte = 1 + 6;
// Replies estimated below this are not counted: they never wait, so clients that hold the budget
// (by reading their large replies slowly, up to the write timeout) delay only large replies.
inline constexpr size_t kSmallReplyBytes = size_t(1) << 20;
// A hold given back from this size on returns the free memory to the system (malloc_trim).
inline constexpr size_t kTrimAfterBytes = size_t(8) << 20;

class ReplyBudget {
 public:
  // what: who holds it, for the 503's message ("replies being built or sent").
  explicit ReplyBudget(size_t bytes, std::string what = "replies being built or sent")
      : limit_(bytes < 1 ? 1 : bytes), what_(std::move(what)) {}
  ReplyBudget(const ReplyBudget&) = delete;
  ReplyBudget& operator=(const ReplyBudget&) = delete;

  // Bytes of the budget, released when destroyed (or shrunk).
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.budget_ = nullptr; }
    Hold& operator=(Hold&& o) noexcept;
    ~Hold() { release(); }
    size_t bytes() const { return budget_ ? bytes_ : 0; }
    // Gives back what is held above `bytes` (the reply turned out smaller than its estimate).
    void shrink(size_t bytes);

   private:
    friend class ReplyBudget;
    Hold(ReplyBudget* b, size_t n) : budget_(b), bytes_(n) {}
    void release();
    ReplyBudget* budget_ = nullptr;
    size_t bytes_ = 0;
  };

  // Waits until `bytes` (at most the whole budget) fit beside what is held, behind the requests
  // already waiting. Throws api_json::ApiError 503 server_busy after `wait`. Below
  // kSmallReplyBytes: an empty hold at once.
  Hold reserve(size_t bytes, std::chrono::milliseconds wait = kReplyBudgetWait);
  // Makes `hold` hold `bytes` (at most the whole budget) when the reply turned out larger than
  // its estimate, waiting for the difference as reserve() waits (503 after `wait`; the hold is
  // then unchanged). Below kSmallReplyBytes in all: nothing to do. The difference is counted
  // however small: a reply of 1 MiB or more is held in full.
  void grow(Hold& hold, size_t bytes, std::chrono::milliseconds wait = kReplyBudgetWait);

  struct Stats {
    size_t limit = 0, held = 0, peak = 0;  // bytes
    uint64_t waited = 0, refused = 0;      // requests that waited, that got a 503
  };
  Stats stats() const;

 private:
  // Waits for `bytes` (already capped to the budget) in arrival order; throws the 503.
  void take(size_t bytes, std::chrono::milliseconds wait);
  void give_back(size_t bytes);
  mutable std::mutex mu_;
  std::condition_variable cv_;
  const size_t limit_;
  const std::string what_;
  size_t held_ = 0, peak_ = 0;
  uint64_t waited_ = 0, refused_ = 0, next_ticket_ = 0;
  std::deque<uint64_t> queue_;  // tickets of the waiting requests, in arrival order
};

// The process's budget (one `ragform serve` per process), kReplyBudgetBytes.
ReplyBudget& reply_budget();

// Parsing a request body into JSON takes up to this many bytes per byte of body: 1 MB of empty
// objects (`[{},{},...]`, 3 bytes each) took 27 MB (a JSON value, a map node and the allocator's
// slack per object), and 100 such requests at once ended a server under `ulimit -v 2000000`.
inline constexpr size_t kParseBytesPerBodyByte = 32;
// The bodies being parsed and handled at once hold at most this (the server's default --max-body
// of 1 MiB: 8 at once, others wait in arrival order, 503 after kReplyBudgetWait). A budget apart
// from the replies', taken first: a request that holds its body's room may wait for reply room,
// never the other way round, so the two cannot wait for each other.
inline constexpr size_t kBodyBudgetBytes = size_t(256) << 20;
ReplyBudget& body_budget();
// Router::admit's hook of `ragform serve`: a hold of body_budget() for the request's body
// (kParseBytesPerBodyByte a byte; none below kSmallReplyBytes of that, i.e. bodies under 32 KiB).
std::shared_ptr<void> admit_body(const Request& req);

// The end of a handler whose reply is budgeted: the hold grows to the body when the reply came out
// larger than its estimate (JSON's escapes; 503 when that room does not come), shrinks to it
// otherwise, and goes with the Response until the HTTP layer has written the body.
Response held_reply(Response r, ReplyBudget::Hold hold);

// {"limit", "held", "peak", "waited", "refused"}: the budget's counters as /health reports them
// (peak: the most bytes held at once since start).
nlohmann::json to_json(const ReplyBudget::Stats& s);

// Their schema in the API document (/health of every server), for the reply budget and the body
// budget (the same counters).
#define RAGFORM_BUDGET_SCHEMA(description)                                                                         \
  R"({"type": "object", "required": ["limit", "held", "peak", "waited", "refused"], "description": ")" description \
  R"(", "properties": {"limit": {"type": "integer"}, "held": {"type": "integer"}, "peak": {"type": "integer"}, "waited": {"type": "integer"}, "refused": {"type": "integer"}}})"
#define RAGFORM_REPLY_MEMORY                                                                       \
  RAGFORM_BUDGET_SCHEMA(                                                                           \
      "the reply budget: bytes of replies allowed at once, held now, most held at once; requests " \
      "that waited for room, that got 503 server_busy")
#define RAGFORM_BODY_MEMORY                                                                      \
  RAGFORM_BUDGET_SCHEMA(                                                                         \
      "the body budget: bytes of request bodies allowed to be parsed and handled at once (32 a " \
      "byte of body), held now, most held at once; requests that waited for room, that got 503 " \
      "server_busy")

}  // namespace ragform::server
