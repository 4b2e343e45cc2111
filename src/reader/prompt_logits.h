// The raw logits of a prompt (`ragform logits`, ragform.Model.logits): one use case below both
// front ends, with its one option declared once (base/options.h) — which positions get a row.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "base/options.h"
#include "reader/native_reader.h"
#include "reader/steering_params.h"

namespace ragform::reader {

struct LogitsRequest {
  std::string positions = "last";

  template <class V>
  void visit(V&& v) {
    v(OptionDecl{"positions", "--positions", "WHICH",
                 "last (one row: the last position's) or all (one row per prompt position)"}
          .first(),
      positions);
  }
};

struct PromptLogits {
  std::vector<float> logits;  // [rows][n_vocab]
  size_t rows = 0;
  int n_vocab = 0;
};

// Whether `req` asks for every position (all) or the last; OptionError("positions") for a value
// other than last or all: the one check, before any model is opened.
bool all_positions(const LogitsRequest& req);

// The logits of `prompt` as `r` reads it (chat wrapping, overflow policy), steered by `steer`, in
// a fresh context of the prompt's length with an F16 KV cache when `kv_f16`: no prefix cache, so
// the rows are the prompt's own whatever ran before. OptionError as all_positions.
PromptLogits prompt_logits(const NativeReader& r, const std::string& prompt,
                           const LogitsRequest& req, bool kv_f16, const SteeringParams& steer);

}  // namespace ragform::reader
