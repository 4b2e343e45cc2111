// `ragform quantize IN OUT --type T`: llama-quantize's job done with the engine's own quantisers.
// Every tensor of IN gets the type the recipe chooses (quant_recipe.h: llama-quantize's rules for
// the mixtures, `--pure` for the plain types), read, dequantised to F32 (ops::dequantize_row) and
// quantised to its target (ops::quantize_row, ggml's reference arithmetic: a tensor quantised from
// the same F32 values has llama-quantize's bytes). A tensor already of its target type is copied
// byte for byte, so F32 -> f32 and T -> T reproduce the tensors exactly.
//
// OUT is a GGUF v3 file with IN's metadata (tokenizer, chat template, hyper-parameters: every key,
// in order, values unchanged) except general.file_type, set to the scheme's llama_ftype, and
// general.quantization_version, set to 2 (ggml's current block layouts) when OUT holds a
// block-quantised tensor; tensors in IN's order. It is written streaming (gguf::StreamWriter):
// memory is IN's mapping plus one batch of rows (about 32 MB of F32 and its converted bytes), to a
// temporary file beside OUT renamed at the end, so a failure never leaves a half-written OUT.
//
// Errors: IN == OUT, a missing or unreadable IN (its tensor types are checked when it is opened:
// a type the engine cannot read is an error naming the tensor), an unknown type (UsageError
// listing the accepted ones), a non-finite value where a block type needs a scale (naming tensor
// and row), an OUT that cannot be written.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/gguf/types.h"
#include "engine/model/quant_recipe.h"

namespace ragform::model {

struct QuantizeOptions {
  std::string in, out;
  std::string type;      // a WeightScheme name (scheme_names())
  int threads = 0;       // 0 = all cores
  bool dry_run = false;  // plan only: nothing is written, `out` may be empty
  // Called after each batch with (elements done, total elements); may be empty.
  std::function<void(uint64_t, uint64_t)> progress;
};

struct TensorConversion {
  std::string name;
  std::vector<int64_t> ne;
  gguf::TensorType from, to;
  uint64_t bytes_in = 0, bytes_out = 0;
  bool copied() const { return from == to; }
};

struct QuantizeSummary {
  WeightScheme scheme;
  std::vector<TensorConversion> tensors;  // IN's order
  uint64_t file_bytes_in = 0;
  uint64_t file_bytes_out = 0;  // what OUT holds (computed, not written, in a dry run)
  int n_converted = 0, n_copied = 0;
  std::map<std::string, int> type_counts;  // OUT's ggml type name -> tensors
};

QuantizeSummary quantize_model(const QuantizeOptions& o);

}  // namespace ragform::model
