// The steps of one Context::eval pass (context.cpp strings them together): batch bookkeeping,
// embeddings, the attention block, the FFN block, the taps and the output head. Internal to
// runtime/: the public interface is context.h.
//
// Every step works on one [rows][dim] activation matrix for all new tokens of all sequences. The
// block is llama's pre-norm template (RMSNorm, attention, residual; RMSNorm, gated FFN, residual);
// where an architecture leaves it, the step reads the ArchSpec / Hparams field that says how
// (fused projections are row slices made at load time; post-norms, GELU gating, sliding windows,
// scaled embeddings and soft-capping are fields), never the architecture's name.
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "engine/model/blocks.h"
#include "engine/model/model.h"
#include "engine/runtime/attention.h"
#include "engine/runtime/context.h"
#include "engine/runtime/steering.h"

namespace ragform::runtime::detail {

// Per-sequence KV cache: for each layer, K in attention.h's tiled layout (positions transposed in
// tiles of kKeyTile) and V rows [pos][kv_dim], F32 or F16 (stored as the 16-bit pattern). Grows
// in steps of 256 positions up to n_ctx.
//
// Sliding-window layers of a `windowed` sequence keep only the rows a query can still see: their
// row 0 is position swa_base (a multiple of kKeyTile), and when the next tokens would not fit in
// swa_capacity rows, grow() first drops the rows before the tile holding the first key the next
// query sees (position n_past - n_swa + 1), then grows if it must. At long contexts that bounds
// those layers' memory by the window plus one batch (Gemma 3: 15 of 18 layers, window 512), as
// llama.cpp's SWA cache does. Rows are dropped whole tiles at a time, so a key keeps its lane in
// the kernel's tiles and the sums keep their order: the bits are those of a cache that keeps every
// row. Not windowed (every row kept): a context with a prefix cache, whose entries are whole
// prefixes, or ContextParams::keep_all_rows.
struct SeqCache {
  bool live = false;
  bool windowed = false;  // set when the cache is first allocated
  int n_past = 0;
  int capacity = 0;             // rows of every layer but a windowed sequence's sliding ones
  int swa_base = 0;             // a windowed sequence's sliding layers: position of row 0
  int swa_capacity = 0;         // ... and their rows
  std::vector<int32_t> tokens;  // [n_past]: the tokens the cache rows were computed from
  Steering steer;               // active or default (off): Context::set_steering
  std::vector<std::vector<float>> k32, v32;
  std::vector<std::vector<uint16_t>> k16, v16;
};
// Makes room for positions up to need - 1 (dropping a windowed sequence's unseeable rows first).
// window_rows: whether a sequence allocated here is windowed.
void grow(SeqCache& s, int need, const model::Hparams& hp, KvType kt, int n_ctx, bool window_rows);
// The position of layer il's row 0: swa_base on a windowed sequence's sliding layer, else 0.
inline int first_row(const SeqCache& s, const model::Hparams& hp, int il) {
  return s.windowed && hp.is_swa(il) ? s.swa_base : 0;
}

// One row of the batch: which input, sequence, position and token.
struct Row {
  int input;  // index into inputs
  int seq;
  int pos;
  int32_t token;
};

// Buffers reused across calls (grown, never shrunk): no allocation per decode step once warm.
struct Scratch {
  std::vector<float> x, cur, q, k, v, attn, o, gate, up;  // activations [rows][dim]
  AttnScratch attn_scratch;
  std::vector<AttnSeq> attn_seqs;
  std::vector<Row> rows;
  std::vector<model::RopeCache> rope[2];  // [variant][row]: 0 global layers, 1 sliding layers
  std::vector<char> need_final;           // per row: read after the last layer's attention
  std::vector<int32_t> ids;
  std::vector<int64_t> keep, final_rows, lrows;
  std::vector<float> h, logits;
};

// The state of one eval() call.
struct Pass {
  const model::Model& m;
  const model::Hparams& hp;
  ThreadPool& pool;
  const std::vector<SeqInput>& inputs;
  std::vector<SeqCache>& seqs;
  Scratch& s;
  std::vector<SeqOutput>& out;
  bool f16kv = false;
  SimdLevel simd = SimdLevel::Scalar;  // attention and SwiGLU tier (the model's CPU tier cap)
  int64_t T = 0;                       // rows of the batch
  int64_t Tn = 0;  // rows still computed: T, until the last layer keeps only the rows it outputs
};

// f(r) for r in [0, n): on the pool when n * cost_per_row (elements touched) is worth waking the
// workers, else inline (decode rows are too small to split).
template <class F>
void for_rows(ThreadPool& pool, int64_t n, int64_t cost_per_row, const F& f) {
  if (pool.size() == 1 || n * cost_per_row < (int64_t(1) << 14) || n < 2) {
    for (int64_t r = 0; r < n; ++r) f(r);
    return;
  }
  pool.parallel_for(size_t(n), [&](size_t b, size_t e, int) {
    for (size_t r = b; r < e; ++r) f(int64_t(r));
  });
}

SeqCache& get_seq(std::vector<SeqCache>& seqs, int seq);

// batch.cpp: throws Error for any bad input before a cache is touched; fills s.rows.
void check_inputs(const std::vector<SeqInput>& inputs, std::vector<SeqCache>& seqs,
                  const model::Hparams& hp, int n_ctx, std::vector<Row>& rows);
// Marks the rows someone reads after the last layer's attention (logits, final hidden state) and
// sizes the activation buffers.
void plan_rows(Pass& p);

// forward.cpp: the steps, in order.
void embed(Pass& p);                     // x = token embeddings (scaled where the arch says), RoPE
void attention_block(Pass& p, int il);   // q, k, v, RoPE, cache, attention (+ taps) into s.attn
bool keep_output_rows(Pass& p);          // last layer: compacts to the rows read; false = none
void attention_output(Pass& p, int il);  // x += [post-norm] W_o attn
void ffn_block(Pass& p, int il);         // x += [post-norm] W_down act(W_gate h) * W_up h
void collect_hidden(Pass& p, int il);    // hidden-state tap after block il
void output_head(Pass& p);               // final norm, final hidden tap, logits of the rows read

}  // namespace ragform::runtime::detail
