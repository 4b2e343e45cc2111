// SpotlightRAG selection cost against the prefill it feeds (paper section 3.6: "overhead below 5%
// for N = 1, 5, 10 contexts of up to 512 tokens"). Measured in the same run:
//   BM_Select/N     score_question + select_and_annotate with GloVe 50d static vectors over N
//                   passages of 512 words each (HotpotQA dev paragraphs, concatenated).
//   BM_Overhead/N   per iteration: selection time and the prefill time of the resulting prompt
//                   (question + K = 6 annotated sentences) on a Qwen2.5-0.5B-shape Q8_0 random-
//                   weight model through runtime::Context::eval; counters select_ms, prefill_ms,
//                   overhead_pct = 100 * select / prefill, and full_tokens (the size of the
//                   baseline RAG prompt with all N passages, for reference; not prefilled).
//   BM_Hidden/1     the hidden-state encoder (HiddenEncoder, layer 12 of the same model) over the
//                   question and one passage: its cost as a percentage of the resulting prompt's
//                   prefill (counter overhead_pct). Encoding is itself a prefill of every passage,
//                   so it grows linearly with N; N = 5, 10 take minutes on a shared CPU and are
//                   left out.
// The model is written once into <build>/bench/spotlight-qwen2.5-0.5b-q8_0.gguf by
// write_random_model (tokenizer copied from ../shared/fixtures/vocab/ggml-vocab-gpt-2.gguf, a
// byte-level BPE like Qwen's, so token counts are realistic); if that fails the model benchmarks
// are skipped with the reason.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "bench_support.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/runtime/context.h"
#include "engine/tokenizer/tokenizer.h"
#include "eval/datasets.h"
#include "pipelines/spotlight/encoder.h"
#include "pipelines/spotlight/select.h"
#include "reader/native_reader.h"

namespace {

using namespace ragform;
using namespace ragform::spotlight;
using bench::clock_type;
using bench::seconds_since;
using bench::shared;

struct Data {
  std::unique_ptr<WordVectors> vectors;
  std::string question;
  std::vector<Document> passages;  // 10 passages of 512 words
  std::string error;
};

const Data& data() {
  static const Data d = [] {
    Data out;
    try {
      out.vectors = std::make_unique<WordVectors>(
          WordVectors::load(shared("data/embeddings/glove-50d-5k.json")));
      auto recs = eval::load_qa_file(shared("data/hotpotqa-distractor/dev.jsonl")).records;
      out.question = recs.at(0).question;
      Document cur{"p0", "passage 0", "", {}};
      size_t words = 0;
      for (const auto& r : recs) {
        for (const auto& c : r.ctxs)
          for (const auto& s : c.sentences) {
            size_t n = text::words(s).size();
            if (words + n > 512) {
              out.passages.push_back(cur);
              if (out.passages.size() == 10) return out;
              cur = {"p" + std::to_string(out.passages.size()), "passage", "", {}};
              words = 0;
            }
            std::string t = s;
            size_t b = cur.text.size() + (cur.text.empty() ? 0 : 1);
            cur.text += (cur.text.empty() ? "" : " ") + t;
            cur.sentences.push_back({b, b + t.size()});
            words += n;
          }
      }
      out.error = "not enough HotpotQA text for 10 passages";
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    return out;
  }();
  return d;
}

struct Engine {
  std::string path, error;
  std::unique_ptr<model::Model> m;
  std::unique_ptr<tok::Tokenizer> tok;
  std::unique_ptr<runtime::Context> ctx;
};

Engine& engine() {
  static Engine e = [] {
    Engine out;
    try {
      model::RandomModelOptions o;
      o.shape = "qwen2.5-0.5b";
      o.arch = "qwen2";
      o.type = "q8_0";
      out.path = bench::bench_model("spotlight-qwen2.5-0.5b-q8_0.gguf", o);
      out.m = model::Model::load(out.path);
      out.tok = tok::Tokenizer::from_gguf(out.m->file());
      out.ctx = std::make_unique<runtime::Context>(*out.m, bench::context_params(8192));
    } catch (const std::exception& ex) {
      out.error = std::string("cannot write or load the Qwen2.5-0.5B-shape model: ") + ex.what();
    }
    return out;
  }();
  return e;
}

Selection run_select(int n, TokenEncoder& enc) {
  const Data& d = data();
  std::vector<Document> docs(d.passages.begin(), d.passages.begin() + n);
  ScoredQuestion sq = score_question(enc, d.question, docs, ScoreParams{});
  return select_and_annotate(d.question, docs, sq, SelectParams{});
}

double prefill_seconds(Engine& e, const std::string& prompt, int* n_tokens) {
  runtime::SeqInput in;
  in.seq = e.ctx->new_sequence();
  in.tokens = e.tok->encode(prompt, true, false);
  in.logits = runtime::LogitsMode::Last;
  *n_tokens = static_cast<int>(in.tokens.size());
  auto t0 = clock_type::now();
  e.ctx->eval({in});
  double s = seconds_since(t0);
  e.ctx->free_sequence(in.seq);
  return s;
}

// Mean seconds per benchmark iteration of the selection over the first n passages with `enc`,
// and of the prefill of the prompt it builds; the prompt's token count.
struct SelectAndPrefill {
  double select_s = 0, prefill_s = 0;
  int prompt_tokens = 0;
};

SelectAndPrefill time_select_and_prefill(benchmark::State& state, Engine& e, int n,
                                         TokenEncoder& enc) {
  SelectAndPrefill t;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    Selection s = run_select(n, enc);
    t.select_s += seconds_since(t0);
    t.prefill_s += prefill_seconds(e, s.prompt, &t.prompt_tokens);
  }
  const double it = static_cast<double>(state.iterations());
  t.select_s /= it;
  t.prefill_s /= it;
  return t;
}

void BM_Select(benchmark::State& state) {
  const Data& d = data();
  if (!d.error.empty()) return state.SkipWithError(d.error.c_str());
  StaticEncoder enc(*d.vectors);
  for (auto _ : state) benchmark::DoNotOptimize(run_select(static_cast<int>(state.range(0)), enc));
}
BENCHMARK(BM_Select)->Arg(1)->Arg(5)->Arg(10)->Unit(benchmark::kMillisecond);

void BM_Overhead(benchmark::State& state) {
  const Data& d = data();
  if (!d.error.empty()) return state.SkipWithError(d.error.c_str());
  Engine& e = engine();
  if (!e.error.empty()) return state.SkipWithError(e.error.c_str());
  const int n = static_cast<int>(state.range(0));
  StaticEncoder enc(*d.vectors);
  const SelectAndPrefill t = time_select_and_prefill(state, e, n, enc);
  state.counters["select_ms"] = 1e3 * t.select_s;
  state.counters["prefill_ms"] = 1e3 * t.prefill_s;
  state.counters["prompt_tokens"] = t.prompt_tokens;
  state.counters["overhead_pct"] = 100.0 * t.select_s / t.prefill_s;
  // The baseline RAG prompt (all N passages) in tokens, for reference (not prefilled: minutes).
  std::string all = "Question: " + d.question + "\nContext:\n";
  for (int i = 0; i < n; ++i) all += d.passages[i].text + "\n";
  state.counters["full_tokens"] =
      static_cast<double>(e.tok->encode(all + "Answer:", true, false).size());
}
BENCHMARK(BM_Overhead)->Arg(1)->Arg(5)->Arg(10)->Iterations(2)->Unit(benchmark::kMillisecond);

void BM_Hidden(benchmark::State& state) {
  const Data& d = data();
  if (!d.error.empty()) return state.SkipWithError(d.error.c_str());
  Engine& e = engine();
  if (!e.error.empty()) return state.SkipWithError(e.error.c_str());
  static std::unique_ptr<reader::NativeReader> rd;
  if (!rd) {
    reader::NativeOptions o;
    o.n_ctx = 1024;
    rd = std::make_unique<reader::NativeReader>(e.path, o);
  }
  const int n = static_cast<int>(state.range(0));
  HiddenEncoder enc(*rd, 12);
  const SelectAndPrefill t = time_select_and_prefill(state, e, n, enc);
  state.counters["encode_select_ms"] = 1e3 * t.select_s;
  state.counters["prefill_ms"] = 1e3 * t.prefill_s;
  state.counters["overhead_pct"] = 100.0 * t.select_s / t.prefill_s;
}
BENCHMARK(BM_Hidden)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
