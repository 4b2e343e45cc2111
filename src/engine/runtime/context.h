// An inference context over a Model: per-sequence KV caches, batched prefill of several sequences
// in one pass, incremental decode, and the taps (attention rows, hidden states, logits only where
// someone reads them).
//
// One eval() call appends tokens to one or more sequences. All new tokens of all sequences go
// through every matmul together (one [n_tokens][n_embd] activation matrix); attention is per
// sequence over that sequence's cache. Nothing is computed for a tap nobody asked for: logits are
// projected only for requested rows, and a pass with no logits skips the vocabulary projection.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "engine/model/engine_options.h"
#include "engine/model/model.h"
#include "engine/runtime/prefix_cache.h"
#include "engine/runtime/steering.h"

namespace ragform::runtime {

enum class KvType { F32, F16 };

// ContextParams::max_pass_tokens' default, llama.cpp's n_ubatch. Measured on Gemma 3 270M Q4_K_M
// (docs/performance.md, "Memory at long context"): pp4096 1,061 / 1,040 / 1,049 t/s with passes of
// 512 / 1,024 / 2,048 tokens, resident memory at a 32k prompt 444 / 470 / 545 MB.
inline constexpr int kDefaultPassTokens = 512;

struct ContextParams {
  int n_ctx = kDefaultContext;  // tokens per sequence
  KvType kv_type = KvType::F32;
  // The pool the context runs on, shared with its other holders (EngineOptions::pool). Null: the
  // context creates its own pool of `threads` threads (0 = all cores), by the engine's one rule
  // (shared_pool, engine_options.h).
  std::shared_ptr<ThreadPool> pool;
  int threads = 0;
  // Shared prefix cache (prefix_cache.h), or null: no reuse across sequences.
  std::shared_ptr<PrefixCache> prefix_cache = nullptr;
  // Sliding-window layers (Gemma 3's local layers) keep only the KV rows a query can still see:
  // the window plus one batch, instead of every position (forward.h, SeqCache). Same outputs, to
  // the bit; what is lost is truncate() to a point whose window was dropped. true keeps every
  // row; a context with a prefix cache keeps every row in any case (its entries are prefixes).
  bool keep_all_rows = false;
  // The most tokens one forward pass takes (llama.cpp's n_ubatch): eval() runs a larger batch as
  // several passes in order, so its activations, and the rows a sliding-window layer holds, are
  // those of this many tokens however long the prompt (a 32k-token prompt in one pass held 1.1 GB
  // of activations, and kept every row of the local layers). The outputs are the same bits
  // (passes are batch-invariant). At least 1. `ragform bench --ubatch N` sets it.
  int max_pass_tokens = kDefaultPassTokens;
};

// Prompt tokens submitted to reuse_prefix() and how many of them had to be computed.
struct PrefillCounts {
  int64_t submitted = 0;
  int64_t computed = 0;
};

enum class LogitsMode { None, Last, All };

// What to compute for one sequence's new tokens.
struct SeqInput {
  int seq = 0;                  // sequence id from Context::new_sequence()
  std::vector<int32_t> tokens;  // appended at positions n_past(seq) ...
  LogitsMode logits = LogitsMode::Last;
  // Attention tap: layers (empty = none), query rows as indices into `tokens` (empty = last).
  // Rows hold the softmax weights after masking for every head, over keys 0..query position.
  std::vector<int> attn_layers;
  std::vector<int> attn_queries;
  // Hidden-state tap: the residual stream after block `hidden_layer` (0-based; n_layer means the
  // final RMSNorm output), for every new token. -1 = none.
  int hidden_layer = -1;
};

struct AttentionRow {
  int layer = 0;
  int query_pos = 0;                      // absolute position in the sequence
  std::vector<std::vector<float>> heads;  // [n_head][query_pos + 1]
};

struct SeqOutput {
  std::vector<int> logit_positions;  // absolute positions of the rows in `logits`
  std::vector<float> logits;         // [rows][n_vocab]
  std::vector<AttentionRow> attention;
  std::vector<float> hidden;  // [n_tokens][n_embd] when requested
};

class Context {
 public:
  Context(const model::Model& m, ContextParams p = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int new_sequence();
  void free_sequence(int seq);
  // Drops the cache after the first n tokens (to reuse a shared prefix). Throws Error when a
  // sliding-window layer no longer holds the rows the window of position n shows (see
  // ContextParams::keep_all_rows).
  void truncate(int seq, int n);
  int n_past(int seq) const;
  // Attention steering (steering.h) of every token evaluated from now on in `seq` (prefill and
  // decode); an inactive Steering turns it off. The prefix cache keys the sequence's rows on
  // Steering::key(), so steered rows are only ever reused under the same setting. Throws Error
  // for a layer, head or span outside the model.
  void set_steering(int seq, const Steering& s);
  const Steering& steering(int seq) const;
  int n_ctx() const { return params_.n_ctx; }
  ThreadPool& pool() const { return *params_.pool; }
  const model::Model& model() const { return m_; }
  // Starts the empty sequence `seq` on a prompt: copies the KV rows of the longest cached prefix
  // of `tokens` (never the last token, whose outputs the caller reads, and at most max_reuse
  // tokens) and returns how many positions are now filled; the caller evaluates the rest,
  // tokens[returned..]. Counts the prompt in prefill_counts(). Without a cache: 0.
  int reuse_prefix(int seq, const std::vector<int32_t>& tokens, int max_reuse = 1 << 30);
  // Offers the sequence's rows 0..n_past-1 (and their tokens) to the prefix cache.
  void cache_prefix(int seq);
  // A whole prompt on its empty sequence, through the prefix cache: reuse_prefix of in.tokens
  // (only rows whose outputs `in` does not read: none when it asks for every row's logits or
  // hidden states, only those before the first attention query), eval of the rest (attention
  // query indices shifted to match), then cache_prefix. Outputs are what eval({in}) returns.
  SeqOutput eval_prompt(SeqInput in);
  PrefixCache* prefix_cache() const { return params_.prefix_cache.get(); }
  PrefillCounts prefill_counts() const { return counts_; }
  // Bytes held by the KV caches of live sequences.
  size_t kv_bytes() const;

  // Runs the new tokens of every input through the model, in passes of at most max_pass_tokens
  // tokens. Throws Error when a sequence would exceed n_ctx or a token id is out of range (before
  // anything runs), or when a requested output (logits, attention weights, hidden states) holds
  // NaN or infinity (a model with non-finite weights); the caches are unchanged then, except that
  // a sequence whose later pass failed after a sliding-window layer dropped rows it held before
  // the call is emptied (its n_past is 0).
  std::vector<SeqOutput> eval(const std::vector<SeqInput>& inputs);

 private:
  // Whether new sequences drop their sliding-window layers' unseeable rows.
  bool window_rows() const { return !params_.keep_all_rows && !params_.prefix_cache; }
  // One forward pass over inputs already checked (eval splits larger batches into these).
  std::vector<SeqOutput> eval_pass(const std::vector<SeqInput>& inputs);
  // Back to n tokens after a failed pass: truncate, or empty when the rows are gone.
  void roll_back(int seq, int n);
  struct Impl;
  const model::Model& m_;
  ContextParams params_;
  PrefillCounts counts_;
  std::unique_ptr<Impl> impl_;
};

// A sequence that frees itself when it goes out of scope, for callers that evaluate one prompt and
// then discard its cache (also on an exception).
class ScopedSequence {
 public:
  explicit ScopedSequence(Context& c) : ctx_(c), id_(c.new_sequence()) {}
  ~ScopedSequence() { ctx_.free_sequence(id_); }
  ScopedSequence(const ScopedSequence&) = delete;
  ScopedSequence& operator=(const ScopedSequence&) = delete;
  int id() const { return id_; }

 private:
  Context& ctx_;
  int id_;
};

}  // namespace ragform::runtime
