// The options every part of the engine takes from its caller, in one place: the thread pool, the
// CPU tier cap, how F16 weights are multiplied and how model files are loaded. The library never
// reads the environment; front ends fill this struct (the CLI from --threads and the RAGFORM_*
// variables, cli/engine_env.h) and pass it to Model::load and to the contexts and readers built
// over the model.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "engine/ops/ops.h"

namespace ragform {

// The one pool-or-threads rule of the engine (EngineOptions, runtime::ContextParams): `pool` when
// the caller shares one, else a new pool of `threads` threads (0 = all cores) that lives as long
// as its last holder.
inline std::shared_ptr<ThreadPool> shared_pool(const std::shared_ptr<ThreadPool>& pool,
                                               int threads) {
  return pool ? pool : std::make_shared<ThreadPool>(threads);
}

// The context length a reader or context gets when none is asked for: kDefaultContext, or the
// model's training context when that is smaller (positions past it are ones the model never saw).
// training_context <= 0 (unknown) gives kDefaultContext. The one place this is decided.
inline constexpr int kDefaultContext = 4096;
inline int default_context(int training_context) {
  return training_context > 0 && training_context < kDefaultContext ? training_context
                                                                    : kDefaultContext;
}

// Whose float rounding the decoder's forward pass follows where llama.cpp's CPU backend and
// Hugging Face transformers (float32, eager attention) compute the same formula differently
// enough to show on long prompts (docs/engine.md, "Against Hugging Face transformers"):
//   ggml          the default: llama.cpp's numbers. RoPE angle of pair i at position p is
//                 p * theta_scale^i by repeated float products (the rounding grows with i and p);
//                 GELU is read from the F16 table (model::gelu).
//   transformers  transformers' numbers, for comparing with it on the same float weights: the
//                 angle is float(p) * inv_freq[i] with inv_freq[i] = 1 / powf(base, 2i / n_rot),
//                 each one float rounding; GELU is the tanh form in float (model::gelu_tanh).
// Everything else (norms, products, softmax) is the same code in both. The BERT encoder: ggml's
// GELU table, or under transformers the erf form (BERT's "gelu" there, model::gelu_erf).
enum class Numerics : uint8_t { ggml, transformers };
inline const char* numerics_name(Numerics n) {
  return n == Numerics::transformers ? "transformers" : "ggml";
}
// "ggml" / "transformers"; anything else is a UsageError(where, ...).
inline Numerics parse_numerics(const std::string& name, const char* where) {
  if (name == "ggml") return Numerics::ggml;
  if (name == "transformers") return Numerics::transformers;
  throw UsageError(where, "expected ggml or transformers, got '" + name + "'");
}

// What loading a model file takes (Model::load, BertModel::load): how its weights are held and
// multiplied. The pool is no part of it: a model computes nothing by itself.
struct LoadOptions {
  // Kernel choice for every weight of a model loaded with these options (ops::MatmulPolicy):
  // the CPU tier cap (never above what the CPU has) and the F16 prefill path (exact products
  // unless int16 is asked for: it is approximate and not batch-invariant, ops.h).
  ops::CpuTier cpu_tier = ops::CpuTier::Avx512;
  ops::F16Gemm f16_gemm = ops::F16Gemm::exact;
  // How model files are held: memory_if_room reads files of 64 MB+ into huge pages where there is
  // room (decode streams every weight per token), map always maps, memory always reads. Files whose
  // bytes are mostly F16/BF16 matrices are mapped under memory_if_room: their matrices are packed
  // into huge-page panels at load and the file's pages released (model/packed_weights.h).
  MappedFile::Load load = MappedFile::Load::memory_if_room;
  // Whose rounding of RoPE angles and GELU the forward pass follows (see Numerics).
  Numerics numerics = Numerics::ggml;

  ops::MatmulPolicy matmul_policy() const { return {cpu_tier, f16_gemm}; }
};

// Everything a reader or encoder takes: the load options of its model and the pool it runs on.
struct EngineOptions : LoadOptions {
  // The pool that runs the engine's parallel loops, shared by whoever holds it (a pool lives as
  // long as its last holder, so a context never outlives its pool). Null: the reader or context
  // creates its own pool of `threads` threads (0 = all cores).
  std::shared_ptr<ThreadPool> pool;
  int threads = 0;

  // `pool` if set, else a new pool of `threads` threads (shared_pool).
  std::shared_ptr<ThreadPool> pool_or_new() const { return shared_pool(pool, threads); }
};

}  // namespace ragform
