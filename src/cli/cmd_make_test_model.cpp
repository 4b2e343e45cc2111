// `ragform make-test-model`: write a random-weight GGUF of a real model's shape
// (engine/model/random_model.h) for benchmarks and memory tests.
#include <cstdio>
#include <iostream>

#include "base/progress.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/output_file.h"
#include "cli/reader_flags.h"
#include "engine/model/random_model.h"
#include "engine/model/random_model_bert.h"

namespace ragform::cli {
namespace {

std::string details() {
  std::string shapes, types;
  for (const auto& s : model::model_shapes()) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "  %-13s %-6s n_embd %4d, %2d layers, %2d/%d heads, n_ff %5d, vocab %6d%s\n",
                  s.name.c_str(), s.arch.c_str(), s.n_embd, s.n_layer, s.n_head, s.n_head_kv,
                  s.n_ff, s.n_vocab, s.tied ? ", tied output" : "");
    shapes += line;
  }
  for (const auto& s : model::bert_shapes()) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "  %-13s %-6s n_embd %4d, %2d layers, %2d heads, n_ff %5d, vocab %6d (encoder)\n",
                  s.name.c_str(), s.arch.c_str(), s.n_embd, s.n_layer, s.n_head, s.n_ff, s.n_vocab);
    shapes += line;
  }
  for (const auto& t : model::scheme_names()) types += (types.empty() ? "" : ", ") + t;
  return "Shapes:\n" + shapes + "Types: " + types +
         "\n(plain types apply to every 2-D weight, as llama-quantize --pure; the _s and _m\n"
         "mixtures follow llama-quantize's per-tensor rules and fallbacks, as `ragform quantize`;\n"
         "norms and biases stay F32.)\n"
         "The vocabulary is copied from --vocab-from, else a synthetic SentencePiece vocabulary of "
         "the\n"
         "shape's size. With --json one object {\"file\", \"arch\", \"shape\", \"type\", "
         "\"n_params\",\n"
         "\"n_layer\", \"n_vocab\", \"file_bytes\", \"tensor_types\"} goes to stdout.";
}

int run_make_test_model(const std::vector<std::string>& argv) {
  Args a("make-test-model", "Write a random-weight model of a real shape (benchmarks, tests).",
         details());
  // The help prints the Shapes and Types lists before the options.
  auto& shape =
      a.opt<std::string>("--shape", "S", "model shape (one of the Shapes listed above)").required();
  auto& type = a.opt<std::string>("--type", "T",
                                  "weight type or llama-quantize mixture (Types listed above)")
                   .required();
  auto& out = a.opt<std::string>("-o,--output", "FILE", "output GGUF file").required();
  std::string archs;
  for (const auto& n : model::random_model_archs()) archs += (archs.empty() ? "" : ", ") + n;
  auto& arch = a.opt<std::string>("--arch", "A", archs + ", bert (default: the shape's)");
  auto& seed = a.opt<long long>("--seed", "N", "random seed (same seed, same bytes)", 1);
  auto& vocab = a.opt<std::string>("--vocab-from", "FILE", "copy the tokenizer of this GGUF");
  auto& layers = a.opt<int>("--layers", "N", "override the number of layers (0 = the shape's)", 0)
                     .range(0, 4096);
  auto& threads = threads_flag(a);  // reader/engine_settings.h's
  auto& json = a.flag("--json", "print a JSON summary on stdout");
  if (!a.parse(argv)) return 0;
  check_not_input(out.value, "-o", {{"--vocab-from", vocab.value}});

  model::RandomModelOptions o;
  o.shape = shape.value;
  o.arch = arch.value;
  o.type = type.value;
  o.out = out.value;
  o.seed = uint64_t(seed.value);
  o.vocab_from = vocab.value;
  o.layers = layers.value;
  o.threads = threads.value;
  Progress progress("make-test-model " + shape.value + " " + type.value, 0);
  uint64_t reported = 0;
  o.progress = [&](uint64_t done, uint64_t total) {
    progress.set_total(total);
    progress.add(done - reported);
    reported = done;
  };
  model::RandomModelSummary s = model::write_random_model(o);

  nlohmann::json types = nlohmann::json::object();
  for (const auto& [k, v] : s.type_counts) types[k] = v;
  if (json.value) {
    print_json_line({{"file", o.out},
                     {"arch", s.arch},
                     {"shape", s.shape.name},
                     {"type", o.type},
                     {"n_params", s.n_params},
                     {"n_layer", s.shape.n_layer},
                     {"n_vocab", s.shape.n_vocab},
                     {"file_bytes", s.file_bytes},
                     {"tensor_types", types}});
  } else {
    std::fprintf(stderr,
                 "make-test-model: wrote %s: %s %s, %d layers, vocab %d, %.1fM parameters, %.1f "
                 "MB, tensors %s\n",
                 o.out.c_str(), s.arch.c_str(), s.shape.name.c_str(), s.shape.n_layer,
                 s.shape.n_vocab, double(s.n_params) / 1e6, double(s.file_bytes) / 1e6,
                 types.dump().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace ragform::cli

RAGFORM_COMMAND("make-test-model",
                "write a random-weight model of a real shape (benchmarks, tests)",
                ragform::cli::run_make_test_model, 60);
