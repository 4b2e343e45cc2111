// ragform sure sig|export|attention: SURE's verbs over stored `sure eval` runs — the SIG benchmark
// (4.3), training data from unrobust pairs (4.4) and the attention shift (4.3, eq. 4). The logic
// lives in src/pipelines/sure (analyses.h); this file reads flags and files and prints.
#include <cstdio>
#include <map>

#include "base/error.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/output_file.h"
#include "cli/sure_verbs.h"
#include "store/run_store.h"

namespace ragform::cli {
namespace {

using namespace ragform::sure;

void note(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

// ---------------------------------------------------------------- helpers for stored runs

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t c = s.find(',', pos);
    if (c == std::string::npos) c = s.size();
    if (c > pos) out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

// The 'sure eval' runs of a store; `run` > 0 picks one.
std::vector<int64_t> eval_runs(const store::RunStore& st, long long run) {
  std::vector<int64_t> ids;
  for (const auto& r : st.runs())
    if (r.pipeline == "sure eval" && (run <= 0 || r.id == run)) ids.push_back(r.id);
  if (ids.empty())
    throw Error(st.path().string(), run > 0 ? "no 'sure eval' run " + std::to_string(run)
                                            : "no 'sure eval' run in this store");
  return ids;
}

// The lines as every SURE output file has them (pipelines/sure/outputs.h).
template <class Lines>
std::string jsonl_text(const Lines& lines) {
  std::string s;
  for (const auto& j : lines) s += json_line(j);
  return s;
}

}  // namespace

// ---------------------------------------------------------------- sig

int run_sure_sig(const std::vector<std::string>& argv) {
  Args a("sure sig",
         "Extract the SIG benchmark: Golden pairs where every reader lacks robustness (4.3).",
         "Each 'sure eval' run in the given stores counts as one reader. For every perturbation,\n"
         "the Golden-document pairs measured by every reader with C != 0 for all of them are\n"
         "sampled (seeded) up to N; the chosen pairs are written from --pairs with sig_labels.");
  auto& stores = a.opt<std::string>("--stores", "LIST", "run stores, comma-separated").required();
  auto& pairs_path =
      a.opt<std::string>("--pairs", "FILE", "the pairs that were evaluated").required();
  auto& n =
      a.opt<int>("-N,--per-perturbation", "N", "pairs per perturbation", 100).range(1, kMaxInt);
  auto& seed = a.opt<long long>("--seed", "N", "sampling seed", 0);
  auto& out = a.opt<std::string>("-o,--output", "FILE", "benchmark JSONL (default stdout)", "");
  if (!a.parse(argv)) return 0;
  if (n.value < 1) throw UsageError("-N", "must be >= 1");
  std::vector<InputFile> inputs = {{"--pairs", pairs_path.value}};
  for (const auto& path : split_list(stores.value)) inputs.push_back({"--stores", path});
  check_not_input(out.value, "-o", inputs);  // before the work, not after it
  std::vector<std::vector<Outcome>> runs;
  for (const auto& path : split_list(stores.value)) {
    store::RunStore st(path, store::RunStore::Mode::read_only);
    for (int64_t id : eval_runs(st, 0)) runs.push_back(outcomes_from_store(st, id));
  }
  auto chosen = select_sig(runs, static_cast<size_t>(n.value), static_cast<uint64_t>(seed.value));
  std::map<std::pair<std::string, std::string>, Pair> by_key;
  for (auto& p : read_pairs(pairs_path.value)) by_key[{p.perturbation, p.id}] = p;
  std::vector<nlohmann::ordered_json> lines;
  size_t total = 0;
  for (const auto& k : all_kinds()) {
    auto it = chosen.find(k.name);
    size_t got = it == chosen.end() ? 0 : it->second.size();
    note(std::string("sure sig: ") + k.name + ": " + std::to_string(got) + " pairs");
    if (!got) continue;
    for (const auto& id : it->second) {
      auto p = by_key.find({k.name, id});
      if (p == by_key.end())
        throw Error(pairs_path.value,
                    "pair " + id + " " + k.name + " is in a store but not in this file");
      lines.push_back(pair_to_json(p->second));
      ++total;
    }
  }
  write_output(out.value, "-o", jsonl_text(lines), inputs);
  note("sure sig: " + std::to_string(total) + " pairs from " + std::to_string(runs.size()) +
       " readers");
  return 0;
}

// ---------------------------------------------------------------- export

int run_sure_export(const std::vector<std::string>& argv) {
  Args a(
      "sure export", "Training data from unrobust Golden pairs: SFT and DPO JSONL (4.4).",
      "SFT lines {prompt, completion}: the correct answer after the original and after the\n"
      "perturbed prompt. DPO lines {prompt, chosen, rejected}: correct vs incorrect answer, for\n"
      "both prompts (TRL's prompt-completion and preference layouts; id/perturbation/document\n"
      "are extra fields).");
  auto& store_path =
      a.opt<std::string>("--store", "FILE", "run store of a 'sure eval' run").required();
  auto& run = a.opt<long long>("--run", "ID", "which run (default: the only one)", 0);
  auto& sft = a.opt<std::string>("--sft", "FILE", "SFT JSONL output", "");
  auto& dpo = a.opt<std::string>("--dpo", "FILE", "DPO JSONL output", "");
  if (!a.parse(argv)) return 0;
  if (sft.value.empty() && dpo.value.empty())
    throw UsageError("sure export", "give --sft and/or --dpo");
  const std::vector<InputFile> store_in = {{"--store", store_path.value}};
  check_not_input(sft.value, "--sft", store_in);
  check_not_input(dpo.value, "--dpo", {{"--store", store_path.value}, {"--sft", sft.value}});
  store::RunStore st(store_path.value, store::RunStore::Mode::read_only);
  int64_t id = 0;
  try {
    id = sure_eval_run(st, run.value);
  } catch (const OptionError& e) {
    throw UsageError("--run", e.why());
  }
  TrainingData td = synthesize_training_data(st, id);
  if (!sft.value.empty()) {
    write_output(sft.value, "--sft", jsonl_text(td.sft), store_in);
  }
  if (!dpo.value.empty()) {
    write_output(dpo.value, "--dpo", jsonl_text(td.dpo), store_in);
  }
  note("sure export: " + std::to_string(td.unrobust_pairs) + " unrobust golden pairs -> " +
       std::to_string(td.sft.size()) + " SFT, " + std::to_string(td.dpo.size()) + " DPO lines");
  return 0;
}

// ---------------------------------------------------------------- attention

int run_sure_attention(const std::vector<std::string>& argv) {
  Args a(
      "sure attention", "Attention shift on the answer span, Robust vs Win vs Lose (4.3, eq. 4).",
      "For Golden pairs evaluated in --store (labels C), samples up to --per-group pairs of each\n"
      "feature category (--sample-by category, the paper's '50 examples ... from each\n"
      "category') or of each Robust/Win/Lose group (--sample-by outcome), seeded; measures the\n"
      "attention of the question's final token (--query prompt: the prompt's final token) on\n"
      "the gold answer span (first whole-word occurrence) in the original and perturbed prompts\n"
      "(A_org, A_pert), and prints per group A_org, A_pert, dA = |A_org - A_pert|, Welch's\n"
      "t-test of dA Robust vs Win+Lose and the sampling (by, per_group, seed, drawn per\n"
      "stratum). Raw prompt mode. The reader: -m MODEL.gguf, or --reader openai against\n"
      "`ragform serve` (/v1/attention).");
  SureSetup su(a);
  auto& input = a.opt<std::string>("--input", "FILE", "pairs JSONL (e.g. the SIG file)").required();
  auto& store_path = a.opt<std::string>("--store", "FILE", "run store with the labels").required();
  AttentionRequest req;
  OptionFlags<AttentionRequest> declared(a, req);
  if (!a.parse(argv)) return 0;
  if (su.rf.chat.value) throw UsageError("--chat", "the answer-span positions need raw prompts");
  su.require("sure attention");
  declared.apply();
  store::RunStore st(store_path.value, store::RunStore::Mode::read_only);
  PromptSet prompts = su.prompts();
  std::vector<Pair> pairs = read_pairs(input.value);
  auto reader = su.open("sure attention");
  nlohmann::ordered_json out;
  try {
    out = run_attention_shift(*reader, st, std::move(pairs), prompts, req);
  } catch (const OptionError& e) {
    throw declared.spell(e);
  }
  print_json_line(out);
  note("sure attention: " + out["pairs_measured"].dump() + " pairs measured, " +
       out["no_span"].dump() + " without a literal answer span");
  return 0;
}

}  // namespace ragform::cli
