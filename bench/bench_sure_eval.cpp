// SURE evaluation throughput against the engine's raw batched prefill (issue 8: "evaluating N
// instance pairs reaches at least 0.8x the engine's raw prefill throughput on the same prompts").
// Measured in the same process, alternating in each iteration so that machine load hits both:
//   eval  sure::evaluate_pairs over N pairs (NQ oracle passages, rule-based perturbations
//         logic/reverse, logic/random, format/json, metadata/datasource-wiki) with a NativeReader:
//         tokenising, the three stages (closed-book, original, perturbed), batches of 8 through
//         runtime::generate, grading and every row written to a fresh SQLite run store;
//   raw   the very prompts eval sent (read back from its store), tokenised beforehand (not
//         timed), prefilled by runtime::Context::eval in batches of 8 sequences with the last
//         row's logits (what generation needs for its first token), nothing else.
// Counters: eval_tok_s and raw_tok_s (prompt tokens per wall second), ratio = eval / raw,
// in_generate = share of eval's time inside Reader::generate_batch, beyond_prefill = share of
// eval's time that raw prefill does not account for. One warm-up round first (not counted).
// Arguments:
//   max_tokens 1   answers of 1 token: the pipeline's own cost against prefill (the criterion);
//   max_tokens 32  answers of up to 32 tokens (the CLI default; random weights never stop early):
//                  decoding is in eval's time, eval_tok_s still counts prompt tokens only;
//   fsync 0 / 1    the run store with synchronous=NORMAL (what `sure eval` uses) or FULL (a sync
//                  per row).
// Model: make-test-model's "small" shape (llama, n_embd 256, 4 layers, Q8_0, random weights) with
// the GPT-2 byte-level BPE vocabulary from ../shared/fixtures/vocab (so token counts are those of
// a real BPE), written once to <working dir>/sure-eval-small-q8_0.gguf; benchmarks are skipped
// with the reason when that fails.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "bench_support.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/runtime/context.h"
#include "eval/datasets.h"
#include "pipelines/sure/evaluate.h"
#include "pipelines/sure/perturb_rules.h"
#include "pipelines/sure/taxonomy.h"
#include "reader/native_reader.h"
#include "store/run_store.h"

namespace {

using namespace ragform;
using bench::clock_type;
using bench::seconds_since;
using bench::shared;

constexpr size_t kBatch = 8;
constexpr size_t kRecords = 12;  // x 4 perturbations = 48 pairs, 72 prompts

struct Setup {
  std::unique_ptr<reader::NativeReader> reader;
  std::vector<sure::Pair> pairs;
  sure::PromptSet prompts;
  std::string error;
};

Setup& setup() {
  static Setup s = [] {
    Setup out;
    try {
      model::RandomModelOptions o;
      o.shape = "small";
      o.type = "q8_0";
      std::string path = bench::bench_model("sure-eval-small-q8_0.gguf", o);
      reader::NativeOptions no;
      no.n_ctx = 2048;
      out.reader = std::make_unique<reader::NativeReader>(path, no);
      out.prompts = sure::load_prompts();
      eval::LoadOptions lo;
      lo.limit = kRecords;
      auto recs =
          eval::load_qa_file(shared("data/lost-in-the-middle/nq-open-oracle.jsonl.gz"), lo).records;
      sure::RuleOptions ro;
      for (const auto& r : recs) {
        const auto& c = r.ctxs.at(0);
        for (const char* name :
             {"logic/reverse", "logic/random", "format/json", "metadata/datasource-wiki"}) {
          sure::Kind k = *sure::parse_kind(name);
          sure::Pair p;
          p.instance = r.id;
          p.id = r.id + "#0";
          p.perturbation = name;
          p.category = sure::info(k).category;
          p.question = r.question;
          p.answers = r.answers;
          p.title = c.title;
          p.original = c.text;
          p.embeds_title = sure::info(k).embeds_title;
          p.perturbed = sure::apply_rule(k, {c.title, c.text}, ro, p.id).text;
          out.pairs.push_back(std::move(p));
        }
      }
    } catch (const std::exception& ex) {
      out.error = std::string("cannot set up the SURE eval benchmark: ") + ex.what();
    }
    return out;
  }();
  return s;
}

// Prefill of `prompts` in batches of kBatch sequences, last-row logits; returns seconds.
double raw_prefill(runtime::Context& ctx, const std::vector<std::vector<int32_t>>& prompts) {
  auto t0 = clock_type::now();
  for (size_t b = 0; b < prompts.size(); b += kBatch) {
    std::vector<runtime::SeqInput> in;
    for (size_t i = b; i < std::min(prompts.size(), b + kBatch); ++i) {
      runtime::SeqInput s;
      s.seq = ctx.new_sequence();
      s.tokens = prompts[i];
      s.logits = runtime::LogitsMode::Last;
      in.push_back(std::move(s));
    }
    auto out = ctx.eval(in);
    benchmark::DoNotOptimize(out.data());
    for (const auto& s : in) ctx.free_sequence(s.seq);
  }
  return seconds_since(t0);
}

void BM_EvalVsPrefill(benchmark::State& state) {
  Setup& s = setup();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  sure::EvalOptions eo;
  eo.temperature = 0.0;
  eo.max_tokens = static_cast<int>(state.range(0));
  const auto durability =
      state.range(1) ? store::RunStore::Durability::full : store::RunStore::Durability::normal;
  eo.batch = kBatch;
  runtime::Context ctx(s.reader->model(), bench::context_params(2048));
  double eval_s = 0, raw_s = 0, tokens = 0, eval_tokens = 0, gen_s = 0;
  int iter = 0;
  // One eval + prefill round: returns false (after SkipWithError) when eval did not measure every
  // pair or the stored prompts are not the ones it counted. `timed` adds to the totals.
  auto round = [&](bool timed) {
    auto db =
        std::filesystem::temp_directory_path() / ("ragform-bench-sure-" + std::to_string(getpid()) +
                                                  "-" + std::to_string(iter++) + ".sqlite");
    std::filesystem::remove(db);
    std::vector<std::vector<int32_t>> toks;
    double it_tokens = 0;
    {
      store::RunStore st(db, store::RunStore::Mode::create, durability);
      store::RunConfig rc;
      rc.pipeline = "sure eval";
      rc.config = {{"bench", true}, {"max_tokens", eo.max_tokens}};
      rc.reader = s.reader->describe();
      int64_t run = st.begin_run(rc);
      sure::EvalStats stats;
      auto t0 = clock_type::now();
      auto outcomes = sure::evaluate_pairs(*s.reader, st, run, s.prompts, s.pairs, eo, stats);
      double e = seconds_since(t0);
      it_tokens = double(stats.prompt_tokens);
      if (timed) {
        eval_s += e;
        eval_tokens += it_tokens;
        gen_s += stats.generate_seconds;
      }
      benchmark::DoNotOptimize(outcomes.data());
      if (outcomes.size() != s.pairs.size() || stats.unmeasured != 0) {
        state.SkipWithError("evaluate_pairs did not measure every pair");
        return false;
      }
      for (const auto& r : st.results(run)) toks.push_back(s.reader->prompt_tokens(r.prompt));
    }
    std::filesystem::remove(db);
    double n = 0;
    for (const auto& t : toks) n += double(t.size());
    if (n != it_tokens) {
      state.SkipWithError("the store's prompts are not the prompts eval counted");
      return false;
    }
    double r = raw_prefill(ctx, toks);
    if (timed) {
      tokens += n;
      raw_s += r;
    }
    return true;
  };
  if (!round(false)) return;  // warm-up: model pages, caches, allocations
  for (auto _ : state)
    if (!round(true)) return;
  --iter;  // the warm-up round
  state.counters["pairs"] = double(s.pairs.size());
  state.counters["prompt_tokens"] = tokens / iter;
  state.counters["eval_tok_s"] = eval_tokens / eval_s;
  state.counters["raw_tok_s"] = tokens / raw_s;
  state.counters["ratio"] = (eval_tokens / eval_s) / (tokens / raw_s);
  // Share of eval's time inside Reader::generate_batch (the rest: prompts, grading, the store).
  state.counters["in_generate"] = gen_s / eval_s;
  state.counters["beyond_prefill"] = eval_s > raw_s ? (eval_s - raw_s) / eval_s : 0.0;
}
BENCHMARK(BM_EvalVsPrefill)
    ->ArgNames({"max_tokens", "fsync"})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({32, 0})
    ->Iterations(4)
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
