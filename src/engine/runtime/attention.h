// Causal, GQA-aware scaled dot-product attention over a per-sequence KV cache (F32 or F16), the
// kernel behind Context::eval: out = softmax(scale * q K^T + causal mask) V for every query row
// and head ("Attention Is All You Need", eq. 1), key/value head = query head / (n_head/n_head_kv).
// With AttnShape::causal false the mask is dropped (the BERT encoder's bidirectional attention,
// runtime/encoder.cpp): one kernel for both, so the encoder gets the same SIMD paths.
//
// Why a separate module: attention is the one part of the forward pass whose cost grows with the
// context, and the attention tap must read exact softmax rows out of it.
//   work item = (sequence, kv head, tile of query rows); its query vectors are the tile's rows
//   times the group's query heads, so one K/V head is loaded once for all heads that share it.
//   The cache stores K in tiles of kKeyTile positions transposed ([tile][kv head][dim][position
//   in tile], written once per token by store_key), so each FMA computes a vector of scores with
//   no horizontal sums and no per-call transposition.
// Two kernels:
//   online softmax (the SIMD tiers, F32 cache, unsteered sequences): keys in spans of 1,024, a
//     running max and sum per query vector (attention.cpp online_item), so the score block stays
//     in cache however long the context; a tapped row's weights come from pass one of the
//     two-pass kernel run on that row alone, so they are the exact softmax row;
//   two-pass (the scalar tier, which is the reference's order bit for bit; F16 caches; steered
//     sequences): pass 1 S = scale * Q K^T, then per query row a max-subtracted softmax over keys
//     0..pos (sum in double, as ggml_vec_soft_max_f32), tapped rows copied out here; pass 2
//     O = P V, V rows streamed once per block of query vectors.
// Which kernel a row takes depends only on its sequence (tier, cache type, steering), so a row's
// bits never depend on how rows are cut into items, on the other sequences of the call or on the
// thread count.
// Numerics follow ggml's CPU graph without flash attention: with an F16 cache the query is
// rounded to F16 before Q K^T and the probabilities are rounded to F16 before P V.
//
// Steering (steering.h): a sequence with AttnSeq::steer set has the rule applied to the softmax
// rows of its steered heads after pass 1's softmax, before taps copy them and before P V; without
// it the kernel runs exactly the unsteered path.
//
// Variants: scalar (portable reference order), AVX2+FMA+F16C and AVX-512 (F/BW/VL/DQ), chosen at
// run time from the CPU (one binary for any x86-64); attention_reference() is the plain
// per-(row, head) loop every variant is tested against.
#pragma once
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "engine/ops/cpu_features.h"
#include "engine/runtime/steering.h"

namespace ragform::runtime {

struct AttnShape {
  int n_head = 0;
  int n_head_kv = 0;  // divides n_head
  int head_dim = 0;
  float scale = 1.0f;  // usually 1/sqrt(head_dim)
  // Sliding window (gemma3's local layers): > 0 = a query at position p sees only keys
  // p - window + 1 .. p, as llama.cpp masks them (key j hidden when p - j >= window). The hidden
  // keys get score -inf, so their softmax weights (and tapped weights) are exactly 0. A work item
  // reads keys from the tile holding its first row's first visible key on (steered rows too), so a
  // local layer's cost is O(window) per row, bit-identical to masking whole rows.
  int window = 0;
  // false = bidirectional (BERT encoders): every query row sees all of its sequence's keys,
  // 0 .. pos0 + n_rows - 1, instead of keys 0 .. its own position.
  bool causal = true;

  int q_dim() const { return n_head * head_dim; }
  int kv_dim() const { return n_head_kv * head_dim; }
};

// Positions per transposed key tile.
constexpr int kKeyTile = 64;

// Elements of a key cache of n_pos positions (whole tiles).
inline size_t key_cache_elems(int n_pos, int kv_dim) {
  return size_t((n_pos + kKeyTile - 1) / kKeyTile) * kKeyTile * size_t(kv_dim);
}
// Index of dimension d of kv head h of the key at position pos in the tiled key layout.
inline size_t key_index(int pos, int h, int d, int n_head_kv, int head_dim) {
  return ((size_t(pos / kKeyTile) * size_t(n_head_kv) + size_t(h)) * size_t(head_dim) + size_t(d)) *
             kKeyTile +
         size_t(pos % kKeyTile);
}
// Writes one key row k[n_head_kv * head_dim] at position pos (F16: rounded to nearest even).
void store_key(float* keys, int pos, const float* k, int n_head_kv, int head_dim);
void store_key(uint16_t* keys, int pos, const float* k, int n_head_kv, int head_dim);

// One layer of one sequence's KV cache: K in the tiled layout above, V rows [pos][kv_dim]; either
// the F32 or the F16 pair is set.
struct KvView {
  const float* k32 = nullptr;
  const float* v32 = nullptr;
  const uint16_t* k16 = nullptr;  // IEEE half bit patterns
  const uint16_t* v16 = nullptr;
  bool f16() const { return k16 != nullptr; }
};

// A tapped query row: heads[h] (n_head vectors, sized by the caller to at least pos + 1) receives
// head h's softmax weights over keys 0..pos (0 for keys outside a sliding window).
struct AttnTap {
  int row = 0;  // index into the sequence's query rows
  std::vector<float>* heads = nullptr;
};

// The new query rows of one sequence, at absolute positions pos0 .. pos0 + n_rows - 1; the cache
// already holds keys/values base .. pos0 + n_rows - 1.
struct AttnSeq {
  KvView kv;
  // The position of the view's first row, a multiple of kKeyTile: 0, or on a sliding-window layer
  // whose cache dropped the rows no query can see any more (Context), at most the first key tile
  // the first row's window shows. Keys before it are never read.
  int base = 0;
  const float* q = nullptr;  // [n_rows][q_dim]
  float* out = nullptr;      // [n_rows][q_dim]
  int pos0 = 0;
  int n_rows = 0;
  std::vector<AttnTap> taps;  // any order
  // Steering of this layer for this sequence (active, and steering this layer), or null: none.
  const Steering* steer = nullptr;
};

enum class SimdLevel { Scalar = 0, Avx2 = 1, Avx512 = 2 };

// The best level this CPU runs (cpuid, once).
SimdLevel cpu_simd_level();
// The level for a CPU tier cap (EngineOptions::cpu_tier): the tier's level, never above the CPU's.
SimdLevel simd_level_for(ops::CpuTier tier);
const char* simd_name(SimdLevel s);
// The level actually used for a head dimension: AVX-512 needs head_dim % 16 == 0, AVX2 % 8 == 0;
// otherwise the next lower level.
SimdLevel usable_simd_level(SimdLevel want, int head_dim);

// Per-thread scratch reused across calls (grown, never shrunk): no allocation per token once warm.
class AttnScratch {
 public:
  struct Thread {
    std::vector<float> scores, q, m;  // m, l, span_keys: the online kernel's running max and
    std::vector<double> l;            // sum, and each vector's keys in the current span
    std::vector<int> n_keys, span_keys;
    std::vector<float*> out;
  };
  std::vector<Thread> threads;
  struct Item {
    int seq, kvh, row0, rows;
    int g0, ng;  // the group's query heads kvh * G + g0 .. + ng - 1
    double cost;
  };
  std::vector<Item> items, cut;  // cut: items cut into head parts (attention())
};

// Runs attention for every sequence, in parallel over (sequence, kv head, query tile) work items,
// largest first, taken dynamically by the pool's threads. level defaults to the CPU's best.
void attention(const AttnShape& shape, const std::vector<AttnSeq>& seqs, ThreadPool& pool,
               AttnScratch& scratch, SimdLevel level = cpu_simd_level());

// The scalar reference: per (row, head) dot products in key order, model-style softmax, the
// steering rule (written out on its own, in double), P V.
void attention_reference(const AttnShape& shape, const AttnSeq& seq);

// Floating-point operations of one call (2 per multiply-add of Q K^T and P V over the keys each
// row sees: its window on a local layer), for benchmarks.
double attention_flops(const AttnShape& shape, const std::vector<AttnSeq>& seqs);

}  // namespace ragform::runtime
