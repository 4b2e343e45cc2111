// ragform sure perturb|filter|eval|oracle: SURE (sure-spurious-features.txt) as a tool — inject
// spurious features into documents (3.2-3.3), keep pairs whose causal features survive (3.4),
// measure instance-level robustness RR/WR/LR (3.5) and the oracle K-S test (A.2-A.3); prepare is
// cmd_sure_prepare.cpp, the verbs of stored runs cmd_sure_runs.cpp. The logic lives in
// src/pipelines/sure; this file reads flags and files and prints. See docs/sure.md.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

#include "base/error.h"
#include "base/progress.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/option_flags.h"
#include "cli/output_file.h"
#include "cli/run_hooks.h"
#include "cli/sure_prepare.h"
#include "cli/sure_verbs.h"
#include "eval/datasets.h"
#include "reader/encoder_settings.h"
#include "reader/generate_params.h"
#include "reader/native_encoder.h"
#include "store/run_store.h"
#include "store/sha256.h"

namespace ragform::cli {
namespace {

using namespace ragform::sure;

void note(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

void write_stdout(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

// ---------------------------------------------------------------- perturb

// The readers `sure perturb` opens: the reader under test when a kind needs it (and as the
// perturber when --perturb-model is not given), the perturber from --perturb-model.
struct OpenReaders {
  std::unique_ptr<reader::Reader> under_test, perturber;
  sure::PerturbReaders readers() const { return {under_test.get(), perturber.get()}; }
};

OpenReaders open_perturb_readers(const SureSetup& su, const std::vector<Kind>& kinds,
                                 const OtherReaderFlags& perturber) {
  OpenReaders pr;
  const ReaderNeeds need = reader_needs(kinds);
  if ((need.under_test || (need.perturber && !perturber.given())) && su.given())
    pr.under_test = su.open("sure perturb");
  if (need.perturber && perturber.given()) pr.perturber = perturber.open(su);
  return pr;
}

}  // namespace

namespace {
// The CLI's flags that give kind k its reader.
const char* reader_flags_for(Kind k) {
  return info(k).needs == NeedsReader::UnderTest ? "-m or --reader openai"
                                                 : "--perturb-model, -m or --reader openai";
}
}  // namespace

std::string perturb_skip_note(Kind k) {
  return std::string("sure perturb: skipping ") + info(k).name + ": needs a reader (" +
         reader_flags_for(k) + ")";
}

namespace {

int run_perturb(const std::vector<std::string>& argv) {
  Args a(
      "sure perturb", "Inject spurious features into each document (SURE 3.2-3.3).",
      "Writes one JSON line per (instance, document, perturbation) on stdout: id, instance, doc,\n"
      "perturbation, category, question, answers, title, original, perturbed, embeds_title,\n"
      "note, failed (and known: sure prepare's Known/Unknown verdict, when the input records\n"
      "carry it; sure eval uses it). Rule-based kinds (logic/reverse, logic/random, format,\n"
      "metadata) need no reader. style, source/llm-generated and logic/llm-ranked use\n"
      "--perturb-model (default: the reader under test); source/self-generated uses the reader\n"
      "under test (-m, or --reader openai). Kinds whose reader is not given are skipped with a\n"
      "note on stderr.");
  SureSetup su(a);
  auto& input =
      a.opt<std::string>("--input", "FILE", "QA records with ctxs (JSONL, gzip ok)").required();
  PerturbRequest req;
  OptionFlags<PerturbRequest> declared(a, req);
  OtherReaderFlags perturber(a, "perturb",
                             "reader for style, llm-generated and llm-ranked: a GGUF file, or with "
                             "--reader openai a served model name (default: the reader under "
                             "test)");
  auto& limit = a.opt<int>("--limit", "N", "first N records (0 = all)", 0);
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  declared.apply();
  const Shard shard = shard_f.shard();
  PerturbSetup setup;
  try {
    setup = perturb_options(req);
  } catch (const OptionError& e) {
    throw declared.spell(e);
  }
  std::vector<Kind> kinds = select_kinds(setup.kinds);
  PerturbOptions& po = setup.options;
  std::optional<Progress> progress;
  po.hooks = cli_run_hooks(&progress);

  OpenReaders pr = open_perturb_readers(su, kinds, perturber);
  std::vector<Kind> skipped, active;
  try {
    active = kinds_to_run(setup.kinds, pr.readers(), &skipped);
  } catch (const KindNeedsReader& e) {  // the library's policy, in the CLI's words
    throw UsageError("--kinds", std::string(info(e.kind).name) + " needs a reader: give " +
                                    reader_flags_for(e.kind));
  }
  const PromptSet prompts = any_reader_kind(active) ? su.prompts() : PromptSet{};

  eval::LoadOptions lo;
  lo.limit = static_cast<size_t>(limit.value);
  auto recs = eval::load_qa_file(input.value, lo).records;
  for (Kind k : skipped)
    note(perturb_skip_note(k));  // once the input has loaded: errors come first
  // --shard: whole records (every document and perturbation of an instance stay together).
  std::erase_if(recs, [&](const eval::QaRecord& r) { return !shard.keeps(r.id); });
  const PerturbResult res = run_perturb(recs, active, pr.readers(), prompts, po);
  const std::vector<std::string> notes = perturb_notes(res, recs.size());
  // Records from `sure prepare` carry its Known/Unknown verdict: the pairs keep it, so that
  // `sure eval` does not decide it again with its own closed-book answers.
  std::vector<Pair> pairs = res.pairs;
  carry_known(pairs, prepared_known(input.value));
  // The records without documents are noted before the pairs, the count after them.
  for (size_t i = 0; i + 1 < notes.size(); ++i) note(notes[i]);
  write_stdout(pairs_jsonl(pairs));
  note(notes.back());
  return 0;
}

// ---------------------------------------------------------------- filter

int run_filter(const std::vector<std::string>& argv) {
  Args a(
      "sure filter", "Keep pairs whose causal features are preserved (SURE 3.4).",
      "Reads pairs (sure perturb output), drops failed perturbations, golden documents that lost\n"
      "their answer and noise documents that gained one (normalised substring match), then asks\n"
      "the NLI reader (-m, or --reader openai) the Figure 10 prompt both ways, or classifies both\n"
      "directions with an NLI cross-encoder (--nli-model, its entailment label); kept pairs are\n"
      "printed on stdout with nli_forward / nli_backward, the counts of each filter on stderr\n"
      "(and --counts FILE).");
  SureSetup su(a);
  auto& input = pairs_input_flag(a);
  FilterRequest req;
  OptionFlags<FilterRequest> declared(a, req);
  auto& nli_model = a.opt<std::string>(
      "--nli-model", "FILE",
      "NLI cross-encoder GGUF (bert with an entailment label) instead of the reader prompt", "");
  auto& counts_path = a.opt<std::string>("--counts", "FILE", "also write the counts JSON here", "");
  auto& rejected_path =
      a.opt<std::string>("--rejected", "FILE", "write dropped pairs with reasons", "");
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  declared.apply();
  FilterOptions fo;
  try {
    fo = filter_options(req);
  } catch (const OptionError& e) {
    throw declared.spell(e);
  }
  check_not_input(rejected_path.value, "--rejected", {{"--input", input.value}});
  check_not_input(counts_path.value, "--counts",
                  {{"--input", input.value}, {"--rejected", rejected_path.value}});
  std::vector<Pair> pairs = read_shard(input.value, shard_f.shard());
  std::unique_ptr<reader::Reader> rd;
  const bool need = needs_nli(pairs, fo.nli);
  std::unique_ptr<reader::NativeEncoder> nli_enc;
  if (need && !nli_model.value.empty()) {
    nli_enc = std::make_unique<reader::NativeEncoder>(
        nli_model.value, reader::native_encoder_options({}, su.rf.native_options().engine));
    check_nli_labels(nli_enc->model().labels, nli_model.value);
    fo.judge = encoder_nli_judge(*nli_enc);
  } else if (need) {
    if (!su.given())
      throw UsageError("sure filter",
                       "NLI needs a reader: give -m MODEL, or --reader openai --base-url URL, or "
                       "--nli none");
    rd = su.open("sure filter");
  }
  // The cross-encoder needs no prompt.
  PromptSet prompts = fo.judge ? PromptSet{} : su.prompts();
  FilterCounts counts;
  auto verdicts = filter_pairs(pairs, rd.get(), prompts, fo, counts);
  const FilterLines lines = filter_lines(pairs, verdicts);
  if (!rejected_path.value.empty())
    write_output(rejected_path.value, "--rejected", lines.rejected, {{"--input", input.value}});
  write_stdout(lines.kept);
  std::string c = counts.to_json().dump();
  note("sure filter: " + c);
  if (!counts_path.value.empty())
    write_output(counts_path.value, "--counts", c + "\n", {{"--input", input.value}});
  return 0;
}

// ---------------------------------------------------------------- eval

int run_eval(const std::vector<std::string>& argv) {
  Args a(
      "sure eval", "Measure instance-level robustness RR/WR/LR of a reader (SURE 3.3, 3.5).",
      "For each pair: closed-book answer (Known/Unknown), the original and the perturbed RAG\n"
      "prompt P = (I, G, Q) with the Figure 11 instruction; Y = a normalised gold answer is\n"
      "contained in the response. Every prompt, output and label goes to --store (resumable: a\n"
      "second run with the same configuration only computes missing rows). Prints one JSON line\n"
      "per (scope, key, subset) group: n, lose/robust/win counts, LR, RR, WR, Org, Acc,\n"
      "RR_ci95 (bootstrap), mcnemar_p (exact), as fractions.");
  SureSetup su(a);
  auto& input = pairs_input_flag(a);
  auto& store_path = a.opt<std::string>("--store", "FILE", "run store (SQLite)").required();
  EvalOptions eo;  // its settings, declared once (sure/evaluate.h)
  OptionFlags<EvalOptions> eval_flags(a, eo);
  OtherReaderFlags judge_flags(a, "judge",
                               "LLM-as-judge reader for Y: a GGUF file, or with --reader openai a "
                               "served model name (default: string containment)");
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  eval_flags.apply();
  su.require("sure eval");
  std::string input_sha256;
  std::vector<Pair> pairs = read_shard(input.value, shard_f.shard(), &input_sha256);
  PromptSet prompts = su.prompts();
  auto reader = su.open("sure eval");
  std::unique_ptr<reader::Reader> judge;
  if (judge_flags.given()) {
    judge = judge_flags.open(su);
    eo.judge = judge.get();
  }
  // synchronous=NORMAL (WAL): a committed row survives a crash of the process; a power loss may
  // lose the last rows, which a resume recomputes. A sync per row (FULL) cost 8-20% of evaluation
  // throughput (bench/bench_sure_eval.cpp, docs/sure.md).
  store::RunStore st(store_path.value, store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  EvalRunOptions ro;
  ro.eval = eo;
  ro.pairs_sha256 = input_sha256;
  if (judge && !su.remote()) ro.judge_sha256 = store::sha256_file(judge_flags.model.value);
  ro.origin = su.origin(*reader);
  std::optional<Progress> progress;
  ro.hooks = cli_run_hooks(&progress);
  const EvalSummary sum = run_eval(*reader, st, prompts, pairs, ro);
  write_stdout(report_jsonl(robustness_report(sum.outcomes, eo.seed, eo.resamples)));
  note(eval_note(sum));
  note_prefill(*reader);
  return 0;
}

// ---------------------------------------------------------------- oracle

int run_oracle(const std::vector<std::string>& argv) {
  Args a(
      "sure oracle", "Oracle score and K-S test of semantic-agnostic features (Appendix A.2-A.3).",
      "For each record, the documents that contain a gold answer are scored by the oracle score\n"
      "(eq. 5: summed answer log-probs given P = (I, G, Q), averaged over answers). The first- "
      "and\n"
      "last-ranked documents per query form two sets; two random documents per query the control.\n"
      "Prints one JSON line per feature (Flesch reading ease, Distinct-1, token length, PPL) with\n"
      "the K-S statistic and p-value of both comparisons. Dependency-tree depth is not computed.\n"
      "The reader: -m MODEL.gguf, or --reader openai against a server that scores prompts.");
  SureSetup su(a);
  auto& input = a.opt<std::string>("--input", "FILE", "QA records with several ctxs").required();
  auto& limit = a.opt<int>("--limit", "N", "first N records (0 = all)", 0);
  OracleRequest req;
  OptionFlags<OracleRequest> declared(a, req);
  if (!a.parse(argv)) return 0;
  declared.apply();
  su.require("sure oracle");
  PromptSet prompts = su.prompts();
  eval::LoadOptions lo;
  lo.limit = static_cast<size_t>(std::max(0, limit.value));
  auto recs = eval::load_qa_file(input.value, lo).records;
  auto reader = su.open("sure oracle");
  std::optional<Progress> progress;
  const auto per_query = oracle_documents(*reader, prompts, recs, cli_run_hooks(&progress));
  for (const auto& row : oracle_ks(per_query, static_cast<uint64_t>(req.seed)))
    print_json_line(row.to_json());
  return 0;
}

int run_sure(const std::vector<std::string>& args) {
  return run_verbs(
      "sure", "SURE: robustness of RAG readers to spurious features",
      {{"prepare", "instances K-G/K-N/U-G/U-N from a retrieval index (SURE 3.1)", run_sure_prepare},
       {"perturb", "inject spurious features into documents (15 perturbations)", run_perturb},
       {"filter", "keep pairs with preserved causal features (NLI + answers)", run_filter},
       {"eval", "instance-level robustness RR/WR/LR with a run store", run_eval},
       {"sig", "extract the SIG benchmark from several readers' runs", run_sure_sig},
       {"attention", "attention shift on the answer span per Robust/Win/Lose", run_sure_attention},
       {"oracle", "oracle score and K-S test of semantic-agnostic features", run_oracle},
       {"export", "SFT and DPO training data from unrobust pairs", run_sure_export}},
      args);
}

}  // namespace

RAGFORM_COMMAND("sure",
                "SURE: prepare|perturb|filter|eval|sig|attention|oracle|export (spurious features)",
                run_sure, 60);

}  // namespace ragform::cli
