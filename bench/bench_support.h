// What the benchmarks share: files under ../shared (all but the kernel benchmarks), wall-clock
// seconds, and the random-weight model bench_cnorm, bench_spotlight and bench_sure_eval measure,
// written once.
#pragma once
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/model/random_model.h"
#include "engine/runtime/context.h"

namespace ragform::bench {

using clock_type = std::chrono::steady_clock;

// A file under ../shared ($RAGFORM_SHARED when set, else the folder recorded at configure time).
inline std::string shared(const std::string& rel) {
  const char* env = std::getenv("RAGFORM_SHARED");
  return std::string(env && *env ? env : RAGFORM_SHARED_DIR) + "/" + rel;
}

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// The path of <working dir>/file_name, a random-weight model of `o`'s shape, arch, type and layers
// with the GPT-2 byte-level BPE vocabulary of ../shared/fixtures/vocab (so token counts are those
// of a real BPE tokenizer). Written by write_random_model the first time; a file already there is
// reused as it is. Throws what write_random_model throws.
inline std::string bench_model(const std::string& file_name, model::RandomModelOptions o) {
  std::string path = (std::filesystem::current_path() / file_name).string();
  if (!std::filesystem::exists(path)) {
    o.out = path;
    o.vocab_from = shared("fixtures/vocab/ggml-vocab-gpt-2.gguf");
    model::write_random_model(o);
  }
  return path;
}

// A context of n_ctx tokens per sequence, its own pool, F32 KV cache.
inline runtime::ContextParams context_params(int n_ctx) {
  runtime::ContextParams p;
  p.n_ctx = n_ctx;
  return p;
}

}  // namespace ragform::bench
