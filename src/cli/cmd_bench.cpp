// ragform bench: prompt-processing and generation throughput, like llama-bench: each test runs
// -r times and reports the median with min and max tokens/s. --taps attention also measures what
// the attention tap costs: the same prefill capturing the final token's
// last-layer attention (ppN+attn), run interleaved with the plain prefill, and prints the median
// time ratio on stderr. --steer RULE likewise measures attention steering (runtime/steering.h;
// the rule read as every verb's --steer, cli/steer_flags.h steer_rule_params): ppN+steer steers
// toward the prompt's first half in the default layers, interleaved with ppN; tgN+steer decodes
// after a steered first token, interleaved with tgN. --depth D first fills each test's sequence
// with D random tokens, untimed (llama-bench's -d): ppN@dD times N prompt tokens after D, tgN@dD
// decodes N tokens after a D-token prompt (attention over a long cache).
//
// Prefill runs in batches of 2048 tokens (llama-bench's default n_batch), so a long ppN shows
// progress (tokens evaluated, base/progress.h) and holds one batch's scratch; a pp or tg longer
// than the model's training context gets one warning line on stderr.
//
// --parallel LIST measures N sequences at once, like llama-batched-bench: N distinct random prompts
// of P tokens prefilled together (passes of at most 2048 tokens), then T decode steps in which
// every sequence takes one token (one pass of N tokens per step, so the matrix products see N
// rows). No prefix cache and no sampling, so nothing stops early: each sequence decodes exactly T
// tokens. The ppP and tgT entries then carry "parallel": N and aggregate tokens/s over the N
// sequences.
//
// --workload cnorm-sweep|sure-pairs measures the prefix cache on a study's prompt shape,
// random token ids standing in for text: cnorm-sweep moves one gold passage through k positions of
// a fixed passage list (k prompts per question); sure-pairs has per question one original prompt
// and --perturbations prompts in which one passage is replaced. Every repetition runs the workload
// with a fresh prefix cache and without one, alternately; printed: prompt tokens/s submitted
// (what a study asks for) and the share of tokens computed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <set>

#include "base/error.h"
#include "base/options.h"
#include "base/progress.h"
#include "base/thread_pool.h"
#include "cli/args.h"
#include "cli/command.h"
#include "cli/engine_env.h"
#include "cli/json_out.h"
#include "cli/reader_flags.h"
#include "cli/steer_flags.h"
#include "engine/model/model.h"
#include "engine/runtime/context.h"
#include "reader/engine_settings.h"

namespace ragform::cli {
namespace {

struct Sample {
  std::string test;
  std::vector<double> tps;
  // --parallel only: sequences decoded together (0 = a plain pp/tg test), the prompt and
  // generation lengths of the run, the tokens and forward passes of one repetition.
  int parallel = 0;
  int n_prompt = 0, n_gen = 0;
  int64_t tokens = 0, passes = 0;
};

// One repetition of a --parallel run: aggregate tokens/s, tokens and passes of each phase.
struct ParallelRun {
  double pp_tps = 0, tg_tps = 0;
  int64_t pp_tokens = 0, tg_tokens = 0, pp_passes = 0, tg_passes = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The sequences of one --parallel run, freed on every exit (also on an exception).
struct SequenceSet {
  SequenceSet(runtime::Context& c, int n) : ctx(c) {
    for (int i = 0; i < n; ++i) ids.push_back(ctx.new_sequence());
  }
  ~SequenceSet() {
    for (int id : ids) ctx.free_sequence(id);
  }
  SequenceSet(const SequenceSet&) = delete;
  SequenceSet& operator=(const SequenceSet&) = delete;
  runtime::Context& ctx;
  std::vector<int> ids;
};

// The sequences' new positions since `before`, checked against what every one of them had to
// take: a bench that decoded fewer tokens for some sequence would report a false throughput.
int64_t tokens_taken(const SequenceSet& s, const std::vector<int>& before, int expected) {
  int64_t total = 0;
  for (size_t i = 0; i < s.ids.size(); ++i) {
    const int got = s.ctx.n_past(s.ids[i]) - before[i];
    if (got != expected)
      throw Error("bench", "--parallel: sequence " + std::to_string(i) + " took " +
                               std::to_string(got) + " tokens, expected " +
                               std::to_string(expected));
    total += got;
  }
  return total;
}

// One context over the model, fed random token ids (as llama-bench) from one seeded generator.
struct Bench {
  Bench(const model::Model& model, const runtime::ContextParams& cp)
      : m(model), ctx(model, cp), rng(42), tok(0, model.hp().n_vocab - 1) {}
  static constexpr int kBatch = 2048;
  const model::Model& m;
  runtime::Context ctx;
  std::mt19937 rng;
  std::uniform_int_distribution<int32_t> tok;
  runtime::Steering steer;  // --steer: rule, value and layers; spans set per test
  int depth = 0;            // --depth: tokens in each test's sequence before the timed part
  using clock = std::chrono::steady_clock;

  // Fills `seq` with n random tokens in batches of kBatch, untimed, no logits.
  void fill(int seq, int n) {
    for (int b = 0; b < n; b += kBatch) {
      runtime::SeqInput in;
      in.seq = seq;
      for (int i = b; i < std::min(n, b + kBatch); ++i) in.tokens.push_back(tok(rng));
      in.logits = runtime::LogitsMode::None;
      ctx.eval({in});
    }
  }
  // A test's name: llama-bench's, with "@dD" after it under --depth.
  std::string named(const std::string& test) const {
    return depth > 0 ? test + "@d" + std::to_string(depth) : test;
  }

  // Steers `seq` toward tokens [begin, end) (nothing without --steer or when !on).
  void steer_seq(int seq, bool on, int begin, int end) {
    if (!on || !steer.active()) return;
    runtime::Steering s = steer;
    s.spans = {{begin, end}};
    ctx.set_steering(seq, s);
  }

  // Tokens/s of one prefill of n tokens in a fresh sequence, in batches of kBatch tokens (as
  // llama-bench's default n_batch; a long prompt then shows progress and needs the scratch of one
  // batch only). tap: capture the final token's last-layer attention (what an attention read-out
  // captures).
  double prefill(int n, bool tap, Progress* progress = nullptr, bool steered = false) {
    std::vector<int32_t> tokens;
    for (int i = 0; i < n; ++i) tokens.push_back(tok(rng));
    runtime::ScopedSequence seq(ctx);
    fill(seq.id(), depth);
    steer_seq(seq.id(), steered, depth, depth + std::max(1, n / 2));
    auto t0 = clock::now();
    for (int b = 0; b < n; b += kBatch) {
      runtime::SeqInput in;
      in.seq = seq.id();
      in.tokens.assign(tokens.begin() + b, tokens.begin() + std::min(n, b + kBatch));
      const bool last = b + kBatch >= n;
      in.logits = last ? runtime::LogitsMode::Last : runtime::LogitsMode::None;
      if (tap && last) in.attn_layers = {m.hp().n_layer - 1};  // no attn_queries = final token
      ctx.eval({in});
      if (progress) progress->add(in.tokens.size());
    }
    return n / std::chrono::duration<double>(clock::now() - t0).count();
  }

  // ppN (and ppN+attn with the tap), reps runs each.
  std::vector<Sample> prompt_processing(int n, int reps, bool with_tap, Progress& progress) {
    prefill(std::min(n, 16), false);  // warm-up
    std::vector<int> modes{0};        // 0 plain, 1 +attn, 2 +steer
    if (with_tap) modes.push_back(1);
    if (steer.active()) modes.push_back(2);
    const char* suffix[] = {"", "+attn", "+steer"};
    const char* what[] = {"", "attention tap", "steering"};
    std::vector<Sample> ss;
    for (int mode : modes) ss.push_back({named("pp" + std::to_string(n)) + suffix[mode], {}});
    // Interleaved, so the tap's cost is measured against the same machine state.
    for (int r = 0; r < reps; ++r)
      for (size_t k = 0; k < modes.size(); ++k)
        ss[k].tps.push_back(prefill(n, modes[k] == 1, &progress, modes[k] == 2));
    for (size_t k = 1; k < modes.size(); ++k)
      std::fprintf(stderr, "%s: %s adds %+.2f%% to prefill time (median vs %s)\n",
                   ss[k].test.c_str(), what[modes[k]],
                   100.0 * (median(ss[0].tps) / median(ss[k].tps) - 1.0), ss[0].test.c_str());
    return ss;
  }

  // Tokens/s of n decode steps after a one-token prompt, or a --depth one (steered toward its
  // first token when asked).
  double decode(int n, Progress& progress, bool steered) {
    runtime::SeqInput in;
    in.seq = ctx.new_sequence();
    steer_seq(in.seq, steered, 0, 1);
    fill(in.seq, std::max(0, depth - 1));
    in.tokens = {tok(rng)};
    ctx.eval({in});
    auto t0 = clock::now();
    for (int i = 0; i < n; ++i) {
      in.tokens = {tok(rng)};
      ctx.eval({in});
      progress.add(1);
    }
    const double tps = n / std::chrono::duration<double>(clock::now() - t0).count();
    ctx.free_sequence(in.seq);
    return tps;
  }

  // tgN (and tgN+steer with --steer, interleaved as ppN+steer), reps runs each.
  std::vector<Sample> generation(int n, int reps, Progress& progress) {
    const size_t n_modes = steer.active() ? 2 : 1;
    std::vector<Sample> ss;
    for (size_t mode = 0; mode < n_modes; ++mode)
      ss.push_back({named("tg" + std::to_string(n)) + (mode == 1 ? "+steer" : ""), {}});
    for (int r = 0; r < reps; ++r)
      for (size_t mode = 0; mode < n_modes; ++mode)
        ss[mode].tps.push_back(decode(n, progress, mode == 1));
    if (n_modes == 2)
      std::fprintf(stderr, "%s: steering adds %+.2f%% to decode time (median vs %s)\n",
                   ss[1].test.c_str(), 100.0 * (median(ss[0].tps) / median(ss[1].tps) - 1.0),
                   ss[0].test.c_str());
    return ss;
  }

  // n distinct random prompts of len tokens (distinct, so no two sequences compute the same).
  std::vector<std::vector<int32_t>> distinct_prompts(int n, int len) {
    std::set<std::vector<int32_t>> seen;
    std::vector<std::vector<int32_t>> out;
    while (int(out.size()) < n) {
      std::vector<int32_t> p(static_cast<size_t>(len));
      for (auto& t : p) t = tok(rng);
      if (seen.insert(p).second) out.push_back(std::move(p));
    }
    return out;
  }

  // Prefills every sequence on its prompt in passes of at most kBatch tokens (several sequences
  // per pass, a long prompt over several passes); logits of each prompt's last token, as a
  // generation's first step. Returns the number of passes.
  int64_t prefill_together(const SequenceSet& s, const std::vector<std::vector<int32_t>>& prompts,
                           Progress* progress) {
    int64_t passes = 0;
    size_t seq = 0, done = 0;  // the sequence being filled and its tokens so far
    while (seq < prompts.size()) {
      std::vector<runtime::SeqInput> pass;
      size_t room = kBatch;
      while (room > 0 && seq < prompts.size()) {
        const auto& p = prompts[seq];
        const size_t take = std::min(room, p.size() - done);
        runtime::SeqInput in;
        in.seq = s.ids[seq];
        in.tokens.assign(p.begin() + long(done), p.begin() + long(done + take));
        done += take;
        room -= take;
        in.logits = done == p.size() ? runtime::LogitsMode::Last : runtime::LogitsMode::None;
        pass.push_back(std::move(in));
        if (done == p.size()) ++seq, done = 0;
      }
      ctx.eval(pass);
      ++passes;
      if (progress) progress->add(kBatch - room);
    }
    return passes;
  }

  // One --parallel repetition: n_seq prompts of n_prompt tokens prefilled together (timed when
  // n_prompt > 0; otherwise one untimed token each, as tgN), then n_gen decode steps of one token
  // per sequence, all sequences in one pass per step. The fed tokens are random, as tgN's.
  ParallelRun parallel(int n_seq, int n_prompt, int n_gen, Progress* progress) {
    SequenceSet s(ctx, n_seq);
    const auto prompts = distinct_prompts(n_seq, std::max(1, n_prompt));
    const std::vector<int> start(size_t(n_seq), 0);
    ParallelRun r;
    auto t0 = clock::now();
    r.pp_passes = prefill_together(s, prompts, n_prompt > 0 ? progress : nullptr);
    const double pp_sec = std::chrono::duration<double>(clock::now() - t0).count();
    r.pp_tokens = tokens_taken(s, start, std::max(1, n_prompt));
    r.pp_tps = double(r.pp_tokens) / pp_sec;
    std::vector<int> before;
    for (int id : s.ids) before.push_back(ctx.n_past(id));
    std::vector<runtime::SeqInput> step(static_cast<size_t>(n_seq));
    for (int i = 0; i < n_seq; ++i) step[size_t(i)].seq = s.ids[size_t(i)];
    t0 = clock::now();
    for (int g = 0; g < n_gen; ++g) {
      for (auto& in : step) in.tokens = {tok(rng)};
      ctx.eval(step);
      ++r.tg_passes;
      if (progress) progress->add(uint64_t(n_seq));
    }
    const double tg_sec = std::chrono::duration<double>(clock::now() - t0).count();
    r.tg_tokens = tokens_taken(s, before, n_gen);
    r.tg_tps = n_gen > 0 ? double(r.tg_tokens) / tg_sec : 0.0;
    return r;
  }

  // ppP and tgT with "parallel": N for every N, P and T of the lists (a ppP entry per N and P,
  // its runs pooled over the T values; a tgT entry per N, P and T), reps runs each.
  std::vector<Sample> parallel_tests(const std::vector<int>& ns, const std::vector<int>& pps,
                                     const std::vector<int>& tgs, int reps, Progress& progress) {
    std::vector<Sample> out;
    for (int n : ns)
      for (int p : pps) {
        Sample pp{"pp" + std::to_string(p), {}, n, p, 0, 0, 0};
        std::vector<Sample> tg_samples;
        parallel(n, std::min(std::max(p, 1), 16), std::min(tgs.front(), 2), nullptr);  // warm-up
        for (int t : tgs) {
          Sample tg{"tg" + std::to_string(t), {}, n, p, t, 0, 0};
          for (int r = 0; r < reps; ++r) {
            const ParallelRun run = parallel(n, p, t, &progress);
            if (p > 0) pp.tps.push_back(run.pp_tps);
            pp.tokens = run.pp_tokens, pp.passes = run.pp_passes;
            if (t > 0) tg.tps.push_back(run.tg_tps);
            tg.tokens = run.tg_tokens, tg.passes = run.tg_passes;
          }
          if (t > 0) tg_samples.push_back(std::move(tg));
        }
        if (p > 0) out.push_back(std::move(pp));
        out.insert(out.end(), tg_samples.begin(), tg_samples.end());
      }
    return out;
  }
};

// The table (or with --json one array): median, min and max tokens/s of every test.
// With --parallel, the entries also say N, the run's prompt and generation lengths and the tokens
// and passes of one repetition; their tokens/s are aggregate over the N sequences.
void print_results(const std::vector<Sample>& results, int n_threads, bool json) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  const bool par = !results.empty() && results.front().parallel > 0;
  if (!json && par)
    std::printf("%-14s %8s %8s %8s %8s %12s %12s %12s\n", "test", "parallel", "n_prompt", "n_gen",
                "threads", "t/s median", "min", "max");
  else if (!json)
    std::printf("%-14s %8s %12s %12s %12s\n", "test", "threads", "t/s median", "min", "max");
  for (auto& s : results) {
    auto v = s.tps;
    std::sort(v.begin(), v.end());
    const double med = median(v);
    if (json) {
      nlohmann::ordered_json e{{"test", s.test}};
      if (par)
        e.update({{"parallel", s.parallel},
                  {"n_prompt", s.n_prompt},
                  {"n_gen", s.n_gen},
                  {"tokens", s.tokens},
                  {"passes", s.passes}});
      e.update({{"threads", n_threads},
                {"t_s_median", f9(med)},
                {"t_s_min", f9(v.front())},
                {"t_s_max", f9(v.back())}});
      arr.push_back(std::move(e));
    } else if (par) {
      std::printf("%-14s %8d %8d %8d %8d %12.2f %12.2f %12.2f\n", s.test.c_str(), s.parallel,
                  s.n_prompt, s.n_gen, n_threads, med, v.front(), v.back());
    } else {
      std::printf("%-14s %8d %12.2f %12.2f %12.2f\n", s.test.c_str(), n_threads, med, v.front(),
                  v.back());
    }
  }
  if (json) print_json_line(arr);
}

struct WorkloadShape {
  int questions, docs, doc_tokens, head_tokens, tail_tokens, perturbations;
};

// The prompts of one question of a workload, in the order a study submits them.
std::vector<std::vector<int32_t>> workload_prompts(const std::string& kind, const WorkloadShape& w,
                                                   std::mt19937& rng, int n_vocab) {
  std::uniform_int_distribution<int32_t> tok(1, n_vocab - 1);
  auto span = [&](int n) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& t : v) t = tok(rng);
    return v;
  };
  const auto head = span(w.head_tokens), tail = span(w.tail_tokens);
  std::vector<std::vector<int32_t>> docs;
  for (int d = 0; d < w.docs; ++d) docs.push_back(span(w.doc_tokens));
  auto prompt = [&](const std::vector<std::vector<int32_t>>& ds) {
    std::vector<int32_t> p = head;
    for (const auto& d : ds) p.insert(p.end(), d.begin(), d.end());
    p.insert(p.end(), tail.begin(), tail.end());
    return p;
  };
  std::vector<std::vector<int32_t>> out;
  if (kind == "cnorm-sweep") {
    // docs[0] is the gold passage; the distractors keep their order.
    for (int g = 0; g < w.docs; ++g) {
      std::vector<std::vector<int32_t>> ds(docs.begin() + 1, docs.end());
      ds.insert(ds.begin() + g, docs[0]);
      out.push_back(prompt(ds));
    }
  } else {
    out.push_back(prompt(docs));
    const int at = std::uniform_int_distribution<int>(0, w.docs - 1)(rng);
    for (int j = 0; j < w.perturbations; ++j) {
      auto ds = docs;
      ds[size_t(at)] = span(w.doc_tokens);
      out.push_back(prompt(ds));
    }
  }
  return out;
}

// Prefills every prompt (logits of the last token, as generation's first step), through the
// prefix cache when the context has one: sorted order within a question, as runtime::generate.
void prefill_all(runtime::Context& ctx, std::vector<std::vector<int32_t>> prompts) {
  if (ctx.prefix_cache()) std::sort(prompts.begin(), prompts.end());
  for (const auto& p : prompts) {
    runtime::ScopedSequence seq(ctx);
    runtime::SeqInput in;
    in.seq = seq.id();
    in.tokens = p;
    ctx.eval_prompt(std::move(in));
  }
}

int run_workload(const std::string& kind, const std::string& model_path, const EngineOptions& eo,
                 const WorkloadShape& w, int reps, runtime::KvType kv, size_t cache_bytes,
                 bool json) {
  auto m = model::Model::load(model_path, eo);
  std::mt19937 rng(42);
  std::vector<std::vector<std::vector<int32_t>>> questions;
  size_t longest = 0;
  for (int q = 0; q < w.questions; ++q) {
    questions.push_back(workload_prompts(kind, w, rng, m->hp().n_vocab));
    for (const auto& p : questions.back()) longest = std::max(longest, p.size());
  }
  Sample on{kind + "+cache", {}}, off{kind, {}};
  double share = 0;
  using clock = std::chrono::steady_clock;
  for (int r = 0; r < reps; ++r)
    for (bool cached : {true, false}) {
      runtime::ContextParams cp;
      cp.n_ctx = int(longest);
      cp.kv_type = kv;
      cp.pool = eo.pool;
      if (cached) cp.prefix_cache = std::make_shared<runtime::PrefixCache>(cache_bytes);
      runtime::Context ctx(*m, cp);
      auto t0 = clock::now();
      for (const auto& qs : questions) prefill_all(ctx, qs);
      const double sec = std::chrono::duration<double>(clock::now() - t0).count();
      const runtime::PrefillCounts c = ctx.prefill_counts();
      (cached ? on : off).tps.push_back(double(c.submitted) / sec);
      if (cached) share = double(c.computed) / double(c.submitted);
    }
  const double speedup = median(on.tps) / median(off.tps);
  std::fprintf(stderr,
               "%s: prefix cache computes %.1f%% of the submitted prompt tokens; %.2fx the "
               "submitted tokens/s of no cache (medians of %d alternated runs)\n",
               kind.c_str(), 100.0 * share, speedup, reps);
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  if (!json)
    std::printf("%-22s %14s %14s %12s %12s\n", "test", "submitted t/s", "computed t/s", "min",
                "max");
  for (const Sample* s : {&on, &off}) {
    auto v = s->tps;
    std::sort(v.begin(), v.end());
    const double f = s == &on ? share : 1.0, med = median(v);
    if (json)
      arr.push_back(nlohmann::ordered_json{{"test", s->test},
                                           {"threads", eo.pool->size()},
                                           {"t_s_median", f9(med)},
                                           {"computed_t_s_median", f9(med * f)},
                                           {"computed_share", f9(f)},
                                           {"t_s_min", f9(v.front())},
                                           {"t_s_max", f9(v.back())}});
    else
      std::printf("%-22s %14.2f %14.2f %12.2f %12.2f\n", s->test.c_str(), med, med * f, v.front(),
                  v.back());
  }
  if (json) print_json_line(arr);
  return 0;
}

// One line when a test runs past the positions the model was trained on: its speed is still
// measured, but such a run may take very long (attention grows with the position) and measures
// positions the model never saw.
void warn_past_training_context(const model::Model& m, const std::vector<int>& pps,
                                const std::vector<int>& tgs) {
  const int train = m.hp().n_ctx_train;
  if (train <= 0) return;
  int pp = 0, tg = 0;
  for (int n : pps) pp = std::max(pp, n);
  for (int n : tgs) tg = std::max(tg, n + 1);  // tgN decodes after a one-token prompt
  if (std::max(pp, tg) <= train) return;
  std::fprintf(stderr,
               "ragform: warning: bench: --pp/--tg need a context of %d tokens, more than the "
               "model's training context %d (positions it never saw; attention slows with each)\n",
               std::max(pp, tg), train);
}

// Tokens the whole pp/tg run evaluates after its warm-up (the progress total).
uint64_t bench_tokens(const std::vector<int>& pps, const std::vector<int>& tgs, int reps,
                      bool tap) {
  uint64_t n = 0;
  for (int p : pps) n += uint64_t(std::max(0, p)) * uint64_t(tap ? 2 : 1);
  for (int t : tgs) n += uint64_t(std::max(0, t));
  return n * uint64_t(reps);
}

// The same for --parallel: every N, P and T of the lists, N sequences each.
uint64_t parallel_tokens(const std::vector<int>& ns, const std::vector<int>& pps,
                         const std::vector<int>& tgs, int reps) {
  uint64_t n = 0;
  for (int seqs : ns)
    for (int p : pps)
      for (int t : tgs) n += uint64_t(seqs) * uint64_t(std::max(0, p) + std::max(0, t));
  return n * uint64_t(reps);
}

int run_bench(const std::vector<std::string>& argv) {
  Args a("bench", "Measure prompt processing (ppN) and generation (tgN) speed in tokens/s.",
         "Tokens are random ids (as llama-bench). --json prints one JSON array of\n"
         "{\"test\", \"threads\", \"t_s_median\", \"t_s_min\", \"t_s_max\"}.\n"
         "--parallel N: N sequences prefilled together on distinct prompts, then decoded\n"
         "together (one pass per step, exactly T tokens each), like llama-batched-bench;\n"
         "their entries add \"parallel\", \"n_prompt\", \"n_gen\", \"tokens\" and \"passes\"\n"
         "(of one run), and their t/s are aggregate over the N sequences.");
  auto& model = a.opt<std::string>("-m,--model", "FILE", "GGUF model").required();
  auto& pp =
      a.opt<std::string>("--pp", "LIST", "prompt lengths (comma-separated; 0 = none)", "512");
  auto& tg =
      a.opt<std::string>("--tg", "LIST", "generation lengths (comma-separated; 0 = none)", "32");
  auto& reps = a.opt<int>("-r,--repetitions", "N", "runs per test", 3).range(1, 1000000);
  auto& depth =
      a.opt<int>("-d,--depth", "D",
                 "tokens already in the sequence before each pp/tg test, untimed (llama-bench's "
                 "-d): ppN@dD, tgN@dD",
                 0)
          .range(0, 1 << 24);
  auto& ubatch = a.opt<int>("--ubatch", "N",
                            "most tokens a forward pass takes (llama-bench's -ub); a prefill "
                            "batch of 2048 runs as passes of N",
                            runtime::kDefaultPassTokens)
                     .range(1, 1 << 24);
  auto& threads = threads_flag(a);
  auto& f16_gemm = f16_gemm_flag(a);
  auto& taps = a.opt<std::string>("--taps", "WHICH",
                                  "also measure prefill with a tap: attention, or none", "none");
  auto& parallel =
      a.opt<std::string>("--parallel", "LIST",
                         "sequences decoded together (comma-separated; empty = pp/tg alone)", "");
  auto& kv = kv_flag(a);
  auto& json = a.flag("--json", "print one JSON array on stdout");
  auto& steer = a.opt<std::string>(
      "--steer", "RULE",
      "also measure attention steering (ppN+steer, tgN+steer): RULE as generate's --steer "
      "(rescale:FACTOR, reallocate:SHARE, redistribute:W), toward the prompt's first half (the "
      "decode tests: its first token) in the default layers (the last half); bench picks the "
      "span itself, so there is no --steer-spans",
      "");
  auto& workload =
      a.opt<std::string>("--workload", "KIND",
                         "prefix-cache workload instead of pp/tg: cnorm-sweep or sure-pairs", "");
  auto& questions = a.opt<int>("--questions", "N", "workload: questions", 3).range(1, 1000000);
  auto& docs = a.opt<int>("--docs", "K", "workload: passages per prompt", 10).range(1, 10000);
  auto& doc_tokens =
      a.opt<int>("--doc-tokens", "N", "workload: tokens per passage", 120).range(1, 1000000);
  auto& head_tokens =
      a.opt<int>("--head-tokens", "N", "workload: instruction tokens before the passages", 40)
          .range(0, 1000000);
  auto& tail_tokens =
      a.opt<int>("--tail-tokens", "N", "workload: question tokens after the passages", 20)
          .range(1, 1000000);
  auto& perturbations =
      a.opt<int>("--perturbations", "N", "sure-pairs: perturbed prompts per question", 4)
          .range(1, 1000000);
  // The reader's --prefix-cache-mb (reader/engine_settings.h), for the workload's cache.
  const OptionDecl& mb = reader::engine_setting("prefix_cache_mb").decl;
  auto& cache_mb = a.opt<int>(mb.flag, mb.metavar, "workload: " + mb.help,
                              reader::EngineSettings{}.prefix_cache_mb)
                       .range(int(mb.lo), int(mb.hi), range_words(mb));
  if (!a.parse(argv)) return 0;
  if (taps.value != "none" && taps.value != "attention")
    throw UsageError("--taps", "expected attention or none");
  const runtime::KvType kv_type =
      reader::kv_f16(kv.value) ? runtime::KvType::F16 : runtime::KvType::F32;  // --kv: ...
  if (depth.value > 0 && (!workload.value.empty() || !parallel.value.empty()))
    throw UsageError("--depth", "goes with the pp/tg tests, not with --parallel or --workload");
  EngineOptions eo = engine_options_from_env(threads.value, f16_gemm.value);
  eo.pool = eo.pool_or_new();
  if (!workload.value.empty()) {
    if (workload.value != "cnorm-sweep" && workload.value != "sure-pairs")
      throw UsageError("--workload",
                       "expected cnorm-sweep or sure-pairs, got '" + workload.value + "'");
    WorkloadShape w{questions.value,   docs.value,        doc_tokens.value,
                    head_tokens.value, tail_tokens.value, perturbations.value};
    const size_t bytes = size_t(cache_mb.value) << 20;  // 0: PrefixCache's default bound
    return run_workload(workload.value, model.value, eo, w, reps.value, kv_type, bytes, json.value);
  }
  const int n_threads = eo.pool->size();
  const bool tap = taps.value == "attention";
  runtime::SteeringSpec steer_spec;
  if (steer.seen) {
    // The rule as every verb reads it (reader::parse_steering; its errors say --steer). The span
    // stands for the tests' own: each steers toward its prompt's first half (steer_seq).
    steer_spec = steer_rule_params(steer.value, {{0, 1}});
    if (!steer_spec.active())
      throw UsageError("--steer", "'" + steer.value + "' changes nothing: give a rule that steers");
    if (!parallel.value.empty()) throw UsageError("--steer", "not with --parallel");
  }
  // Each length at most the depth's bound (2^24), so depth + length cannot overflow an int.
  auto pps = parse_int_list("--pp", pp.value, 0, 1 << 24),
       tgs = parse_int_list("--tg", tg.value, 0, 1 << 24);
  if (std::all_of(pps.begin(), pps.end(), [](int n) { return n == 0; }) &&
      std::all_of(tgs.begin(), tgs.end(), [](int n) { return n == 0; }))
    throw UsageError("bench", "--pp and --tg are both 0: nothing to measure");
  std::vector<int> ns;
  if (!parallel.value.empty()) {
    ns = parse_int_list("--parallel", parallel.value, 1, 4096);
    if (tap) throw UsageError("--taps", "not with --parallel");
  }
  auto m = model::Model::load(model.value, eo);
  int max_len = 1;
  for (int n : pps) max_len = std::max(max_len, depth.value + n);
  for (int n : tgs) max_len = std::max(max_len, std::max(1, depth.value) + n);
  if (!ns.empty()) {
    // A sequence holds its prompt (at least one token) and then its T decoded tokens.
    max_len = std::max(1, *std::max_element(pps.begin(), pps.end())) +
              *std::max_element(tgs.begin(), tgs.end());
    warn_past_training_context(*m, {max_len}, {});
  } else if (depth.value > 0) {
    warn_past_training_context(*m, {max_len}, {});  // the longest test with its depth
  } else {
    warn_past_training_context(*m, pps, tgs);
  }
  runtime::ContextParams cp;
  cp.n_ctx = max_len;
  cp.kv_type = kv_type;
  cp.pool = eo.pool;
  cp.max_pass_tokens = ubatch.value;
  Bench b(*m, cp);
  b.depth = depth.value;
  if (steer.seen)
    // The spans are the first token; every key counts as the prompt's (bench has no prompt text).
    b.steer =
        runtime::resolve_steering(steer_spec, m->hp().n_layer, m->hp().n_head, {{0, 1}}, max_len);
  std::vector<Sample> results;
  {
    // Tokens evaluated, on stderr when it is a terminal (or RAGFORM_PROGRESS=always); its final
    // line comes before the results.
    Progress progress("bench", ns.empty()
                                   ? bench_tokens(pps, tgs, reps.value, tap) * (steer.seen ? 2 : 1)
                                   : parallel_tokens(ns, pps, tgs, reps.value));
    if (!ns.empty()) {
      results = b.parallel_tests(ns, pps, tgs, reps.value, progress);
    } else {
      for (int n : pps) {
        if (n <= 0) continue;
        auto ss = b.prompt_processing(n, reps.value, tap, progress);
        results.insert(results.end(), ss.begin(), ss.end());
      }
      for (int n : tgs)
        if (n > 0) {
          auto ss = b.generation(n, reps.value, progress);
          results.insert(results.end(), ss.begin(), ss.end());
        }
    }
  }
  print_results(results, n_threads, json.value);
  return 0;
}

RAGFORM_COMMAND("bench", "prompt-processing and generation speed (tokens/s), like llama-bench",
                run_bench, 50);

}  // namespace
}  // namespace ragform::cli
