// ragform kv generate: synthetic key-value extraction data (C-NORM section 2, Appendix B) in
// lost-in-the-middle's KV shape, for `cnorm calibrate|eval --task kv`. The generator lives in
// src/pipelines/cnorm/kvgen.h; this file reads flags and writes JSONL.
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/output_file.h"
#include "pipelines/cnorm/cnorm.h"

namespace ragform::cli {
namespace {

int run_generate(const std::vector<std::string>& argv) {
  Args a("kv generate", "Write synthetic key-value extraction samples (C-NORM Appendix B).",
         "Keys and values are random version-4 UUIDs (uuid), the same digits without '-' (plain), "
         "or with\n"
         "every '-' replaced by --delimiter (modified). low density: 40 pairs of 32-digit ids; "
         "high: 10\n"
         "pairs of 128-digit ids (four UUIDs joined). Each sample is written once per gold "
         "position\n"
         "(--positions all) or once with a seeded gold position (one). One JSON object per line:\n"
         "{id, ordered_kv_records, key, value, gold_index, format, density}.");
  auto& fmt = a.opt<std::string>("--format", "F", "uuid, plain or modified", "uuid");
  auto& delim = a.opt<std::string>("--delimiter", "D", "delimiter of modified UUIDs", "&");
  auto& density = a.opt<std::string>("--density", "D", "low (40 x 32) or high (10 x 128)", "low");
  auto& n = a.opt<int>("-n,--samples", "N", "samples (sets of pairs)", 10).range(1, kMaxInt);
  auto& positions =
      a.opt<std::string>("--positions", "MODE", "all (gold at every position) or one", "all");
  auto& seed = a.opt<long long>("--seed", "N", "random seed", 0);
  auto& out = a.opt<std::string>("-o,--output", "FILE", "JSONL to write (default: stdout)", "");
  if (!a.parse(argv)) return 0;

  cnorm::KvSpec spec;
  spec.format = cnorm::parse_kv_format(fmt.value);
  spec.delimiter = delim.value;
  if (delim.seen && spec.format != cnorm::KvFormat::Modified)
    throw UsageError("--delimiter", "only modified UUIDs take a delimiter");
  cnorm::apply_density(spec, density.value);
  spec.samples = size_t(n.value);
  if (positions.value != "all" && positions.value != "one")
    throw UsageError("--positions", "expected all or one, got '" + positions.value + "'");
  spec.all_positions = positions.value == "all";
  spec.seed = uint64_t(seed.value);

  auto rows = cnorm::generate_kv(spec);
  std::string text;
  for (const auto& r : rows) text += r.dump() + "\n";
  write_output(out.value, "-o", text, {});
  std::fprintf(stderr, "kv generate: %zu rows (%zu samples, %zu pairs each, %s, %s density)\n",
               rows.size(), spec.samples, spec.pairs, cnorm::kv_format_name(spec.format),
               spec.density_name.c_str());
  return 0;
}

int run_kv(const std::vector<std::string>& args) {
  return run_verbs(
      "kv", "Synthetic key-value extraction data (C-NORM Appendix B).",
      {{"generate", "write UUID / plain / modified-UUID key-value samples", run_generate}}, args);
}

RAGFORM_COMMAND("kv", "key-value extraction data: generate (C-NORM Appendix B)", run_kv, 62);

}  // namespace
}  // namespace ragform::cli
