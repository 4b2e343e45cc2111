// `ragform quantize IN OUT --type T`: convert a GGUF model's weights to another type or
// llama-quantize mixture with the engine's own quantisers (engine/model/quantize_model.h).
#include <chrono>
#include <cstdio>

#include "base/error.h"
#include "base/progress.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/reader_flags.h"
#include "engine/model/quantize_model.h"

namespace ragform::cli {
namespace {

std::string details() {
  // The type list, wrapped as the rest of the text.
  std::string types = "Types:", line = types;
  for (const auto& t : model::scheme_names()) {
    const std::string item = " " + t + (t == model::scheme_names().back() ? "" : ",");
    if (line.size() + item.size() > 88) {
      types += "\n      ";
      line = "      ";
    }
    types += item;
    line += item;
  }
  return types +
         "\n"
         "Every tensor is dequantised to F32 and quantised to its target with ggml's reference\n"
         "arithmetic (llama-quantize's bytes without an importance matrix); a tensor already of\n"
         "its target type is copied byte for byte. Metadata and tokenizer are copied unchanged\n"
         "but for general.file_type (and general.quantization_version, set when a block type\n"
         "is written).\n"
         "Recipe, as llama-quantize:\n"
         "  - only 2-D weights are converted: norms, biases and other 1-D tensors keep their "
         "type;\n"
         "  - f32, f16, bf16 and the plain block types (q4_0 ... q6_k) give every weight that\n"
         "    type (llama-quantize --pure);\n"
         "  - q3_k_m, q4_k_s, q4_k_m, q5_k_s, q5_k_m: the output matrix (or the tied token\n"
         "    embedding) Q6_K, some layers' attn_v and ffn_down more bits (q4_k_m, q5_k_m: Q6_K\n"
         "    in the first and last eighth of the layers and every third between);\n"
         "  - a row length that is not a multiple of the type's block (256 for K types) falls\n"
         "    back: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0, else F16.\n"
         "The output goes to a new temporary file beside OUT, renamed to OUT when complete.\n"
         "Memory: the input's mapping plus one batch of rows (~32 MB of F32). A one-line\n"
         "summary (tensors, bytes, time) goes to stderr; --dry-run prints each tensor's plan on\n"
         "stdout and writes nothing.";
}

std::string shape_text(const std::vector<int64_t>& ne) {
  std::string s;
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? " x " : "") + std::to_string(ne[i]);
  return s;
}

int run_quantize(const std::vector<std::string>& argv) {
  Args a("quantize",
         "Convert a GGUF model to another weight type or llama-quantize mixture "
         "(llama-quantize's job, with the engine's own quantisers).",
         details());
  auto& in = a.positional("IN", "input GGUF model (any type the engine reads)");
  auto& out = a.positional("OUT", "output GGUF file (not IN; not needed with --dry-run)", false);
  auto& type =
      a.opt<std::string>("--type", "T", "target type or mixture (Types listed above)").required();
  auto& threads = threads_flag(a);  // reader/engine_settings.h's
  auto& dry = a.flag("--dry-run", "print each tensor's type and size, write nothing");
  if (!a.parse(argv)) return 0;

  model::QuantizeOptions o;
  o.in = *in.value;
  o.out = out.value.value_or("");
  o.type = type.value;
  o.threads = threads.value;
  o.dry_run = dry.value;
  if (!o.dry_run && o.out.empty()) throw UsageError("quantize", "missing argument OUT");
  const auto t0 = std::chrono::steady_clock::now();
  model::QuantizeSummary s;
  {
    Progress progress("quantize " + o.type, 0);
    uint64_t reported = 0;
    o.progress = [&](uint64_t done, uint64_t total) {
      progress.set_total(total);
      progress.add(done - reported);
      reported = done;
    };
    s = model::quantize_model(o);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.dry_run) {
    for (const auto& t : s.tensors)
      std::printf("%-36s %-18s %-5s -> %-5s %12llu -> %12llu bytes\n", t.name.c_str(),
                  shape_text(t.ne).c_str(), gguf::type_name(t.from), gguf::type_name(t.to),
                  static_cast<unsigned long long>(t.bytes_in),
                  static_cast<unsigned long long>(t.bytes_out));
  }
  std::string types;
  for (const auto& [k, v] : s.type_counts)
    types += (types.empty() ? "" : ", ") + std::to_string(v) + " " + k;
  std::fprintf(stderr,
               "quantize: %s %s: %s (file type %u), %zu tensors (%d converted, %d copied: %s), "
               "%.1f MB -> %.1f MB, %.1f s\n",
               o.dry_run ? "plan for" : "wrote", o.dry_run ? o.in.c_str() : o.out.c_str(),
               s.scheme.name.c_str(), s.scheme.file_type, s.tensors.size(), s.n_converted,
               s.n_copied, types.c_str(), double(s.file_bytes_in) / 1e6,
               double(s.file_bytes_out) / 1e6, secs);
  return 0;
}

}  // namespace
}  // namespace ragform::cli

RAGFORM_COMMAND("quantize", "convert a GGUF model to another weight type (like llama-quantize)",
                ragform::cli::run_quantize, 55);
