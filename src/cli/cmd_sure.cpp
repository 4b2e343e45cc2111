// ragform sure perturb|filter|eval: SURE (sure-spurious-features.txt) as a tool — inject spurious
// features into documents (3.2-3.3), keep pairs whose causal features survive (3.4), and measure
// instance-level robustness RR/WR/LR (3.5). The logic lives in src/pipelines/sure; this file reads
// flags and files and prints. See docs/sure.md.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "base/error.h"
#include "base/paths.h"
#include "base/progress.h"
#include "cli/command.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "cli/remote_flags.h"
#include "cli/shard.h"
#include "cli/sure_prepare.h"
#include "eval/datasets.h"
#include "pipelines/common/common.h"
#include "pipelines/sure/sure.h"
#include "reader/native_encoder.h"
#include "store/run_store.h"
#include "store/sha256.h"
#include "text/metrics.h"

namespace ragform::cli {
namespace {

using namespace ragform::sure;

void note(const std::string& s) { std::fprintf(stderr, "%s\n", s.c_str()); }

// The pairs of `path` whose instance (QA record id) is in `shard`: all documents and perturbations
// of one question go to the same worker, so its closed-book row is computed once. `whole_sha256`
// (when given) receives the identity of the whole input (pairs_sha256), shared by every shard.
std::vector<Pair> read_shard(const std::string& path, const Shard& shard,
                             std::string* whole_sha256 = nullptr) {
  std::vector<Pair> pairs = read_pairs(path);
  // An empty input is an error (exit 1), as for every other command that reads records; an empty
  // shard of a non-empty input is not.
  if (pairs.empty()) throw Error(path == "-" ? "stdin" : path, "empty input: no pairs");
  if (whole_sha256) *whole_sha256 = pairs_sha256(pairs);
  std::erase_if(pairs, [&](const Pair& p) { return !shard.keeps(p.instance); });
  return pairs;
}

// The set-up every reader-using verb shares: the reader under test from -m and the native flags
// (ReaderFlags) or from --reader openai --base-url URL [-m NAME] (RemoteFlags), a second reader of
// the same kind (perturber, judge), and the prompt directory.
struct SureSetup {
  explicit SureSetup(Args& a)
      : rf(a, false),
        xf(a),
        prompts_dir(
            a.opt<std::string>("--prompts", "DIR",
                               "prompt directory (default: <bin>/../share/ragform/prompts/sure of "
                               "an installed binary, else the source tree's prompts/sure)",
                               "")) {}
  ReaderFlags rf;
  RemoteFlags xf;
  Opt<std::string>& prompts_dir;

  bool remote() const { return xf.reader.value == "openai"; }
  // A reader under test was given: -m FILE (native), or --reader openai (-m names the served model,
  // and may be left out for the server's own).
  bool given() const { return remote() || !rf.model.value.empty(); }
  // UsageError unless a reader under test was given (call right after parsing, before any input
  // is read).
  void require(const std::string& verb) const {
    if (!given())
      throw UsageError(verb, "needs a reader: -m MODEL.gguf, or --reader openai --base-url URL");
    xf.check();
  }
  std::unique_ptr<reader::Reader> open(const std::string& verb) const {
    require(verb);
    return xf.open(rf);
  }
  // A second reader of the same kind: native -> the GGUF file `model` with the same engine flags;
  // openai -> the served model `model` at `url` (default: --base-url) with the same HTTP flags.
  std::unique_ptr<reader::Reader> open_other(const std::string& model,
                                             const std::string& url) const {
    if (!remote()) {
      if (xf.reader.value != "native")
        throw UsageError("--reader", "'" + xf.reader.value + "' is not native or openai");
      return std::make_unique<reader::NativeReader>(model, rf.native_options());
    }
    return xf.open_other(rf, model, url);
  }
  PromptSet prompts() const {
    return load_prompts(prompts_dir.value.empty()
                            ? find_data_dir("prompts/sure", RAGFORM_SOURCE_PROMPTS)
                            : prompts_dir.value);
  }
  // The model file's hash for the run store; a remote reader names a served model, not a file.
  std::string model_sha256() const {
    return remote() ? std::string() : store::sha256_file(rf.model.value);
  }
};

// ---------------------------------------------------------------- perturb

// The readers `sure perturb` uses: the reader under test (source/self-generated, and the
// perturber when --perturb-model is not given) and the perturber (style, llm-generated,
// llm-ranked). Kinds whose reader was not given are left out with a note.
struct PerturbReaders {
  std::unique_ptr<reader::Reader> under_test, perturber_own;
  reader::Reader* perturber = nullptr;
  std::vector<Kind> active;             // the kinds that run
  std::vector<std::string> skip_notes;  // printed once the input has loaded: errors come first
};

PerturbReaders open_perturb_readers(const SureSetup& su, const std::vector<Kind>& kinds,
                                    const std::string& pmodel, const std::string& pbase) {
  PerturbReaders pr;
  bool need_test = false, need_pert = false;
  for (Kind k : kinds) {
    need_test |= info(k).needs == NeedsReader::UnderTest;
    need_pert |= info(k).needs == NeedsReader::Perturber;
  }
  if ((need_test || (need_pert && pmodel.empty())) && su.given())
    pr.under_test = su.open("sure perturb");
  if (need_pert) {
    if (!pmodel.empty()) {
      pr.perturber_own = su.open_other(pmodel, pbase);
      pr.perturber = pr.perturber_own.get();
    } else {
      pr.perturber = pr.under_test.get();
    }
  }
  for (Kind k : kinds) {
    NeedsReader n = info(k).needs;
    if ((n == NeedsReader::UnderTest && !pr.under_test) ||
        (n == NeedsReader::Perturber && !pr.perturber)) {
      pr.skip_notes.push_back(
          std::string("sure perturb: skipping ") + info(k).name + ": needs a reader (" +
          (n == NeedsReader::UnderTest ? "-m or --reader openai"
                                       : "--perturb-model, -m or --reader openai") +
          ")");
      continue;
    }
    pr.active.push_back(k);
  }
  return pr;
}

// The LLM-written perturbations of `reqs` (none: nothing to do), with a progress bar.
void apply_llm_with_progress(reader::Reader* rd, const PromptSet& prompts, const LlmOptions& lopt,
                             const std::vector<LlmRequest>& reqs, const std::vector<size_t>& idx,
                             std::vector<Pair>& pairs) {
  if (reqs.empty()) return;
  Progress prog("perturb", reqs.size());
  size_t last = 0;
  apply_llm(*rd, prompts, lopt, reqs, idx, pairs, [&](size_t done) {
    prog.add(done - last);
    last = done;
  });
}

int run_perturb(const std::vector<std::string>& argv) {
  Args a(
      "sure perturb", "Inject spurious features into each document (SURE 3.2-3.3).",
      "Writes one JSON line per (instance, document, perturbation) on stdout: id, instance, doc,\n"
      "perturbation, category, question, answers, title, original, perturbed, embeds_title,\n"
      "note, failed. Rule-based kinds (logic/reverse, logic/random, format, metadata) need no\n"
      "reader. style, source/llm-generated and logic/llm-ranked use --perturb-model (default:\n"
      "the reader under test); source/self-generated uses the reader under test (-m, or\n"
      "--reader openai). Kinds whose reader is not given are skipped with a note on stderr.");
  SureSetup su(a);
  auto& input =
      a.opt<std::string>("--input", "FILE", "QA records with ctxs (JSONL, gzip ok)").required();
  auto& kinds_s = a.opt<std::string>("--kinds", "LIST", "categories and/or names, or all", "all");
  auto& pmodel = a.opt<std::string>(
      "--perturb-model", "MODEL",
      "reader for style, llm-generated and llm-ranked: a GGUF file, or with --reader openai a "
      "served model name (default: the reader under test)",
      "");
  auto& pbase = a.opt<std::string>(
      "--perturb-base-url", "URL",
      "server of --perturb-model with --reader openai (default: --base-url)", "");
  auto& seed = a.opt<long long>("--seed", "N", "seed of random order, timestamps and URLs", 0);
  auto& cutoff =
      a.opt<std::string>("--cutoff", "DATE", "knowledge cutoff for timestamps", "2023-10-01");
  auto& limit = a.opt<int>("--limit", "N", "first N records (0 = all)", 0);
  auto& max_docs = a.opt<int>("--docs", "N", "first N documents of each record (0 = all)", 0);
  auto& max_tokens =
      a.opt<int>("--max-tokens", "N", "tokens per LLM rewrite", 512).range(1, kMaxInt);
  auto& batch = a.opt<int>("--batch", "N", "prompts per batched generation", 8).range(1, kMaxInt);
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  const Shard shard = shard_f.shard();
  if (limit.value < 0 || max_docs.value < 0 || batch.value < 1 || max_tokens.value < 1)
    throw UsageError("sure perturb", "--limit/--docs must be >= 0, --batch/--max-tokens >= 1");

  std::vector<Kind> kinds = select_kinds(kinds_s.value);
  RuleOptions ro;
  ro.seed = static_cast<uint64_t>(seed.value);
  ro.knowledge_cutoff = cutoff.value;
  parse_date(cutoff.value);  // fail early on a bad date

  PerturbReaders pr = open_perturb_readers(su, kinds, pmodel.value, pbase.value);
  PromptSet prompts;
  bool any_llm = false;
  for (Kind k : pr.active) any_llm |= info(k).needs != NeedsReader::None;
  if (any_llm) prompts = su.prompts();

  eval::LoadOptions lo;
  lo.limit = static_cast<size_t>(limit.value);
  auto recs = eval::load_qa_file(input.value, lo).records;
  for (const auto& n : pr.skip_notes) note(n);
  // --shard: whole records (every document and perturbation of an instance stay together).
  std::erase_if(recs, [&](const eval::QaRecord& r) { return !shard.keeps(r.id); });
  PerturbPlan pl = plan_pairs(recs, pr.active, max_docs.value, ro);
  if (pl.no_ctx)
    note("sure perturb: " + std::to_string(pl.no_ctx) + " records without documents skipped");
  LlmOptions lopt;
  lopt.max_tokens = max_tokens.value;
  lopt.batch = static_cast<size_t>(batch.value);
  lopt.seed = ro.seed;
  apply_llm_with_progress(pr.perturber, prompts, lopt, pl.pert_reqs, pl.pert_idx, pl.pairs);
  apply_llm_with_progress(pr.under_test.get(), prompts, lopt, pl.test_reqs, pl.test_idx, pl.pairs);
  size_t failed = 0;
  for (const auto& p : pl.pairs) {
    failed += p.failed;
    print_json_line(pair_to_json(p));
  }
  note("sure perturb: " + std::to_string(pl.pairs.size()) + " pairs (" + std::to_string(failed) +
       " failed) from " + std::to_string(recs.size()) + " records");
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
  auto& input = a.opt<std::string>("--input", "FILE", "pairs JSONL ('-' = stdin)", "-");
  auto& nli_s = a.opt<std::string>(
      "--nli", "SCOPE", "kinds NLI checks: all, llm (reader-made kinds only) or none", "all");
  auto& nli_model = a.opt<std::string>(
      "--nli-model", "FILE",
      "NLI cross-encoder GGUF (bert with an entailment label) instead of the reader prompt", "");
  auto& batch = a.opt<int>("--batch", "N", "prompts per batched generation", 8).range(1, kMaxInt);
  auto& counts_path = a.opt<std::string>("--counts", "FILE", "also write the counts JSON here", "");
  auto& rejected_path =
      a.opt<std::string>("--rejected", "FILE", "write dropped pairs with reasons", "");
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  if (batch.value < 1) throw UsageError("--batch", "must be >= 1");
  FilterOptions fo;
  fo.nli = parse_nli_scope(nli_s.value);
  fo.batch = static_cast<size_t>(batch.value);
  std::vector<Pair> pairs = read_shard(input.value, shard_f.shard());
  std::unique_ptr<reader::Reader> rd;
  bool need = false;
  for (const auto& p : pairs) {
    auto k = parse_kind(p.perturbation);
    if (fo.nli == NliScope::All ||
        (fo.nli == NliScope::ReaderMade && info(*k).needs != NeedsReader::None))
      need = true;
  }
  std::unique_ptr<reader::NativeEncoder> nli_enc;
  if (need && !nli_model.value.empty()) {
    reader::NativeEncoderOptions no;
    no.engine = su.rf.native_options().engine;
    nli_enc = std::make_unique<reader::NativeEncoder>(nli_model.value, no);
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
  std::FILE* rej = nullptr;
  if (!rejected_path.value.empty()) {
    rej = std::fopen(rejected_path.value.c_str(), "wb");
    if (!rej) throw Error(rejected_path.value, "cannot write");
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto j = pair_to_json(pairs[i]);
    if (!verdicts[i].nli_forward.empty()) {
      j["nli_forward"] = verdicts[i].nli_forward;
      j["nli_backward"] = verdicts[i].nli_backward;
    }
    if (verdicts[i].keep) {
      print_json_line(j);
    } else if (rej) {
      j["reason"] = verdicts[i].reason;
      std::string s =
          j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
      std::fwrite(s.data(), 1, s.size(), rej);
    }
  }
  if (rej) std::fclose(rej);
  std::string c = counts.to_json().dump();
  note("sure filter: " + c);
  if (!counts_path.value.empty()) {
    std::FILE* f = std::fopen(counts_path.value.c_str(), "wb");
    if (!f) throw Error(counts_path.value, "cannot write");
    std::fprintf(f, "%s\n", c.c_str());
    std::fclose(f);
  }
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
  auto& input = a.opt<std::string>("--input", "FILE", "pairs JSONL ('-' = stdin)", "-");
  auto& store_path = a.opt<std::string>("--store", "FILE", "run store (SQLite)").required();
  auto& temp =
      a.opt<double>("--temp", "T", "sampling temperature (paper: 0.1)", 0.1).range(0.0, 100.0);
  auto& max_tokens = a.opt<int>("-n,--max-tokens", "N", "answer tokens", 32).range(1, kMaxInt);
  auto& seed = a.opt<long long>("--seed", "N", "sampling seed", 0);
  auto& batch = a.opt<int>("--batch", "N", "prompts per batched generation", 8).range(1, kMaxInt);
  auto& con = a.flag("--chain-of-note", "Chain-of-Note instruction (Table 5 baseline)");
  auto& resamples = a.opt<int>("--resamples", "N", "bootstrap resamples", 2000).range(1, kMaxInt);
  auto& judge_model = a.opt<std::string>(
      "--judge-model", "MODEL",
      "LLM-as-judge reader for Y: a GGUF file, or with --reader openai a served model name "
      "(default: string containment)",
      "");
  auto& judge_base =
      a.opt<std::string>("--judge-base-url", "URL",
                         "server of --judge-model with --reader openai (default: --base-url)", "");
  ShardFlag shard_f(a);
  if (!a.parse(argv)) return 0;
  if (batch.value < 1 || max_tokens.value < 1 || resamples.value < 1)
    throw UsageError("sure eval", "--batch, --max-tokens and --resamples must be >= 1");
  su.require("sure eval");
  std::string input_sha256;
  std::vector<Pair> pairs = read_shard(input.value, shard_f.shard(), &input_sha256);
  PromptSet prompts = su.prompts();
  auto reader = su.open("sure eval");
  EvalOptions eo;
  eo.temperature = temp.value;
  eo.max_tokens = max_tokens.value;
  eo.seed = static_cast<uint64_t>(seed.value);
  eo.batch = static_cast<size_t>(batch.value);
  eo.chain_of_note = con.value;
  std::unique_ptr<reader::Reader> judge;
  if (!judge_model.value.empty()) {
    judge = su.open_other(judge_model.value, judge_base.value);
    eo.judge = judge.get();
  }
  // synchronous=NORMAL (WAL): a committed row survives a crash of the process; a power loss may
  // lose the last rows, which a resume recomputes. A sync per row (FULL) cost 8-20% of evaluation
  // throughput (bench/bench_sure_eval.cpp, docs/sure.md).
  store::RunStore st(store_path.value, store::RunStore::Mode::create,
                     store::RunStore::Durability::normal);
  store::RunConfig rc =
      eval_run_config(eo, prompts, input_sha256,
                      judge && !su.remote() ? store::sha256_file(judge_model.value) : "");
  rc.tool_version = common::tool_version();
  rc.model_path = su.rf.model.value;
  rc.model_sha256 = su.model_sha256();
  rc.reader = reader->describe();
  rc.chat_mode = reader->chat_mode();
  rc.seed = seed.value;
  int64_t run = st.begin_run(rc);
  EvalStats stats;
  Progress prog("sure eval", 0);
  size_t last = 0;
  auto outcomes =
      evaluate_pairs(*reader, st, run, prompts, pairs, eo, stats, [&](size_t d, size_t t) {
        prog.set_total(t);
        prog.add(d - last);
        last = d;
      });
  for (const auto& row : robustness_report(outcomes, eo.seed, static_cast<size_t>(resamples.value)))
    print_json_line(row.to_json());
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "sure eval: run %lld: %lld generated, %lld already done, %lld unmeasured, %lld "
                "deferred; %lld pairs "
                "measured, %lld not; %.1f s generating, %.0f prompt tok/s",
                static_cast<long long>(run), static_cast<long long>(stats.generated),
                static_cast<long long>(stats.skipped_done),
                static_cast<long long>(stats.unmeasured), static_cast<long long>(stats.deferred),
                static_cast<long long>(stats.pairs_measured),
                static_cast<long long>(stats.pairs_unmeasured), stats.generate_seconds,
                stats.generate_seconds > 0 ? stats.prompt_tokens / stats.generate_seconds : 0.0);
  note(buf);
  note_prefill(*reader);
  return 0;
}

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

int64_t one_eval_run(const store::RunStore& st, long long run) {
  auto ids = eval_runs(st, run);
  if (ids.size() != 1)
    throw UsageError("--run", st.path().string() + " holds " + std::to_string(ids.size()) +
                                  " 'sure eval' runs; choose one with --run ID");
  return ids[0];
}

std::FILE* open_out(const std::string& path) {
  if (path.empty() || path == "-") return stdout;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error(path, "cannot write");
  return f;
}

void write_line(std::FILE* f, const nlohmann::ordered_json& j) {
  std::string s = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  std::fwrite(s.data(), 1, s.size(), f);
}

// ---------------------------------------------------------------- sig

int run_sig(const std::vector<std::string>& argv) {
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
  std::vector<std::vector<Outcome>> runs;
  for (const auto& path : split_list(stores.value)) {
    store::RunStore st(path, store::RunStore::Mode::read_only);
    for (int64_t id : eval_runs(st, 0)) runs.push_back(outcomes_from_store(st, id));
  }
  auto chosen = select_sig(runs, static_cast<size_t>(n.value), static_cast<uint64_t>(seed.value));
  std::map<std::pair<std::string, std::string>, Pair> by_key;
  for (auto& p : read_pairs(pairs_path.value)) by_key[{p.perturbation, p.id}] = p;
  std::FILE* f = open_out(out.value);
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
      write_line(f, pair_to_json(p->second));
      ++total;
    }
  }
  if (f != stdout) std::fclose(f);
  note("sure sig: " + std::to_string(total) + " pairs from " + std::to_string(runs.size()) +
       " readers");
  return 0;
}

// ---------------------------------------------------------------- export

int run_export(const std::vector<std::string>& argv) {
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
  store::RunStore st(store_path.value, store::RunStore::Mode::read_only);
  TrainingData td = synthesize_training_data(st, one_eval_run(st, run.value));
  if (!sft.value.empty()) {
    std::FILE* f = open_out(sft.value);
    for (const auto& j : td.sft) write_line(f, j);
    if (f != stdout) std::fclose(f);
  }
  if (!dpo.value.empty()) {
    std::FILE* f = open_out(dpo.value);
    for (const auto& j : td.dpo) write_line(f, j);
    if (f != stdout) std::fclose(f);
  }
  note("sure export: " + std::to_string(td.unrobust_pairs) + " unrobust golden pairs -> " +
       std::to_string(td.sft.size()) + " SFT, " + std::to_string(td.dpo.size()) + " DPO lines");
  return 0;
}

// ---------------------------------------------------------------- attention

int run_attention(const std::vector<std::string>& argv) {
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
  auto& run = a.opt<long long>("--run", "ID", "which run (default: the only one)", 0);
  auto& layer = a.opt<int>("--layer", "L", "attention layer (negative from the end)", -1)
                    .range(kAnyInt, kMaxInt);
  auto& heads = a.opt<std::string>("--heads", "LIST", "heads to average (default: all)", "");
  auto& per_group =
      a.opt<int>("--per-group", "N", "pairs per sampled category or outcome group (paper: 50)", 50)
          .range(1, kMaxInt);
  auto& sample_by = a.opt<std::string>(
      "--sample-by", "WHAT",
      "draw --per-group pairs per feature category (category, the paper's reading) or per "
      "Robust/Win/Lose group (outcome)",
      "category");
  auto& query = a.opt<std::string>(
      "--query", "TOKEN", "query token: question (its final token, the paper's t_q) or prompt",
      "question");
  auto& seed = a.opt<long long>("--seed", "N", "sampling seed", 0);
  auto& con = a.flag("--chain-of-note", "the prompts of a Chain-of-Note evaluation");
  if (!a.parse(argv)) return 0;
  if (su.rf.chat.value) throw UsageError("--chat", "the answer-span positions need raw prompts");
  su.require("sure attention");
  AttentionOptions ao;
  ao.layer = layer.value;
  ao.query = parse_attention_query(query.value);
  if (!heads.value.empty()) ao.heads = parse_int_list("--heads", heads.value);
  AttentionSampleOptions so;
  so.by = parse_attention_sampling(sample_by.value);
  so.per_group = static_cast<size_t>(per_group.value);
  so.seed = static_cast<uint64_t>(seed.value);
  store::RunStore st(store_path.value, store::RunStore::Mode::read_only);
  std::map<std::string, size_t> drawn;
  auto sample = sample_attention_pairs(
      labelled_golden_pairs(st, one_eval_run(st, run.value), read_pairs(input.value)), so, &drawn);
  PromptSet prompts = su.prompts();
  auto reader = su.open("sure attention");
  AttentionShift shift = measure_attention_shift(*reader, prompts, sample, ao, con.value);
  auto out = attention_report(shift.rows).to_json();
  out["sampling"] = so.to_json();
  out["sampling"]["drawn"] = drawn;
  print_json_line(out);
  note("sure attention: " + std::to_string(shift.rows.size()) + " pairs measured, " +
       std::to_string(shift.no_span) + " without a literal answer span");
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
  auto& seed = a.opt<long long>("--seed", "N", "control sampling seed", 0);
  if (!a.parse(argv)) return 0;
  su.require("sure oracle");
  PromptSet prompts = su.prompts();
  eval::LoadOptions lo;
  lo.limit = static_cast<size_t>(std::max(0, limit.value));
  auto recs = eval::load_qa_file(input.value, lo).records;
  auto reader = su.open("sure oracle");
  std::vector<std::vector<OracleDoc>> per_query;
  Progress prog("sure oracle", recs.size());
  for (const auto& r : recs) {
    std::vector<OracleDoc> docs;
    for (const auto& c : r.ctxs) {
      if (text::substring_match(c.text, r.answers) == 0) continue;  // A.2: keep answer-bearing docs
      OracleDoc d;
      std::string g = c.title.empty() ? c.text : "(Title: " + c.title + ") " + c.text;
      d.oracle = oracle_score(*reader, rag_prompt(prompts, g, r.question, false), r.answers);
      d.f.flesch = flesch_reading_ease(c.text);
      d.f.distinct1 = distinct_1(c.text);
      d.f.tokens = reader->count_tokens(c.text);
      d.f.ppl = perplexity(*reader, c.text);
      docs.push_back(d);
    }
    per_query.push_back(std::move(docs));
    prog.add();
  }
  for (const auto& row : oracle_ks(per_query, static_cast<uint64_t>(seed.value)))
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
       {"sig", "extract the SIG benchmark from several readers' runs", run_sig},
       {"attention", "attention shift on the answer span per Robust/Win/Lose", run_attention},
       {"oracle", "oracle score and K-S test of semantic-agnostic features", run_oracle},
       {"export", "SFT and DPO training data from unrobust pairs", run_export}},
      args);
}

}  // namespace

RAGFORM_COMMAND("sure",
                "SURE: prepare|perturb|filter|eval|sig|attention|oracle|export (spurious features)",
                run_sure, 60);

}  // namespace ragform::cli
