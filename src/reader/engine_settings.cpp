#include "reader/engine_settings.h"

#include <climits>

#include "base/error.h"

namespace ragform::reader {

const std::vector<Setting>& engine_settings() {
  // The help texts are the CLI's (docs/cli.md is generated from them).
  static const std::vector<Setting> all = {
      {"ctx", "--ctx", "", "N",
       "context size in tokens per sequence (the model's training context when that is smaller "
       "than the default)",
       "4096", 1, INT_MAX},
      {"kv", "--kv", "", "TYPE", "KV cache type: f32 or f16 (half the memory)", "f32"},
      {"threads", "-t,--threads", "", "N", "worker threads (0 = all cores)", "0", 0, kThreadsMax},
      // The errors are the ones measured on the F16 fixtures (docs/engine.md, accuracy table).
      {"f16_gemm", "--f16-gemm", "RAGFORM_F16_GEMM", "HOW",
       "F16/BF16 products: exact (default; a prompt's logits do not depend on its batch) or int16 "
       "(approximate, AVX512-VNNI only: faster prefill, F16 fixture logits 2.1e-3 from llama.cpp's "
       "against 1.4e-3, batch-dependent)",
       ""},
      {"chat", "--chat", "", "", "wrap the prompt as the user turn of the model's chat template",
       ""},
      {"system", "--system", "", "TEXT", "system message in --chat mode", ""},
      {"truncate", "--truncate", "", "POLICY",
       "prompt longer than --ctx: error, or left (keep BOS and the end)", "error"},
      {"prefix_cache", "--prefix-cache", "", "on|off",
       "reuse the KV rows of prompt prefixes prefilled before (exact: same numbers)", "on"},
      {"prefix_cache_mb", "--prefix-cache-mb", "", "N",
       "prefix cache bound in MiB (LRU; 0 = 1/8 of RAM, at most 2048)", "0", 0, 1 << 20},
      // Machine settings rather than a run's: the CLI takes them from its environment.
      {"cpu", "", "RAGFORM_CPU", "TIER", "scalar, avx2 or avx512: cap the kernels' CPU tier", ""},
      {"load", "", "RAGFORM_LOAD", "HOW",
       "mmap: map model files; memory: read them into huge pages", ""},
  };
  return all;
}

const Setting& engine_setting(const std::string& key) {
  for (const Setting& s : engine_settings())
    if (key == s.key) return s;
  throw Error("engine settings", "no setting '" + key + "'");
}

}  // namespace ragform::reader
