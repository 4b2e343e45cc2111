// Encoder models (engine/runtime/encoder.h) on random-weight BGE shapes (make-test-model --arch
// bert, WordPiece vocabulary copied from ../shared/fixtures/models/tiny-bert.gguf):
//   BM_EncodePassages/<shape>/<type>  64 passages x 256 tokens ([CLS] 254 word-pieces [SEP], cut
//                   from HotpotQA dev text) in one Encoder::encode call (batched passes of 4096
//                   tokens) on kThreads threads, pooling cls. Counters: tokens/s, GFLOP/s (the
//                   matmuls' 2 * n_params_matmul per token plus attention's 4 n^2 E per layer and
//                   passage) and peak_fp32 / peak_int8 = GFLOP/s over the machine's measured
//                   peak for the kernel the weight type runs on (machine_peak.h; float weights'
//                   exact products run on fp32 FMAs).
//   BM_SpotlightOverhead/N   SpotlightRAG with --encoder model (bge-small F16): encoding the
//                   question and N HotpotQA paragraphs plus selection, against the prefill of the
//                   prompt it builds and of the baseline prompt with all N paragraphs, on the
//                   Qwen2.5-0.5B-shape Q8_0 reader of bench_spotlight (paper section 3.6).
//                   Counters encode_select_ms, prefill_selected_ms, prefill_full_ms and the
//                   overheads in percent of each.
// Models are written once into the working directory and reused.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <string>

#include "bench_support.h"
#include "engine/model/bert.h"
#include "engine/model/model.h"
#include "engine/model/random_model.h"
#include "engine/runtime/context.h"
#include "engine/runtime/encoder.h"
#include "engine/tokenizer/tokenizer.h"
#include "eval/datasets.h"
#include "machine_peak.h"
#include "pipelines/spotlight/model_encoder.h"
#include "pipelines/spotlight/select.h"
#include "reader/native_encoder.h"

namespace {

using namespace ragform;
using bench::clock_type;
using bench::seconds_since;
using bench::shared;

constexpr int kThreads = 2;

struct Peaks {
  double fp32, int8;
};
const Peaks& peaks() {
  static const Peaks p{bench::arithmetic_peak(bench::PeakKind::Fp32Fma, kThreads),
                       bench::arithmetic_peak(bench::PeakKind::Int8Vnni, kThreads)};
  return p;
}

std::string bert_model(const std::string& shape, const std::string& type) {
  const std::string path =
      (std::filesystem::current_path() / ("encoder-" + shape + "-" + type + ".gguf")).string();
  if (!std::filesystem::exists(path)) {
    model::RandomModelOptions o;
    o.shape = shape;
    o.arch = "bert";
    o.type = type;
    o.out = path;
    o.vocab_from = shared("fixtures/models/tiny-bert.gguf");
    model::write_random_model(o);
  }
  return path;
}

// HotpotQA dev paragraphs (question of record 0, then every context paragraph in order).
struct Text {
  std::string question;
  std::vector<spotlight::Document> paragraphs;
};
const Text& text() {
  static const Text t = [] {
    Text out;
    auto recs = eval::load_qa_file(shared("data/hotpotqa-distractor/dev.jsonl")).records;
    out.question = recs.at(0).question;
    for (const auto& r : recs)
      for (const auto& c : r.ctxs) {
        spotlight::Document d{c.title, c.title, "", {}};
        for (const auto& s : c.sentences) {
          const size_t b = d.text.size() + (d.text.empty() ? 0 : 1);
          d.text += (d.text.empty() ? "" : " ") + s;
          d.sentences.push_back({b, b + s.size()});
        }
        out.paragraphs.push_back(std::move(d));
        if (out.paragraphs.size() >= 2000) return out;
      }
    return out;
  }();
  return t;
}

void BM_EncodePassages(benchmark::State& state, const std::string& shape, const std::string& type) {
  std::unique_ptr<model::BertModel> m;
  try {
    peaks();
    m = model::BertModel::load(bert_model(shape, type));
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  auto tok = tok::Tokenizer::from_gguf(m->file());
  // 64 x 256 tokens from the paragraphs' word-pieces.
  std::vector<int32_t> stream;
  for (const auto& p : text().paragraphs) {
    auto ids = tok->encode(p.text, false, false);
    stream.insert(stream.end(), ids.begin(), ids.end());
    if (stream.size() >= 64 * 254) break;
  }
  if (stream.size() < 64 * 254) return state.SkipWithError("not enough HotpotQA text");
  std::vector<runtime::EncoderInput> ins(64);
  for (size_t i = 0; i < 64; ++i) {
    ins[i].tokens.push_back(101);
    ins[i].tokens.insert(ins[i].tokens.end(), stream.begin() + std::ptrdiff_t(i * 254),
                         stream.begin() + std::ptrdiff_t((i + 1) * 254));
    ins[i].tokens.push_back(102);
  }
  runtime::Encoder enc(*m, std::make_shared<ThreadPool>(kThreads));
  const auto t0 = clock_type::now();
  for (auto _ : state) benchmark::DoNotOptimize(enc.encode(ins, {model::Pooling::Cls, 4096}));
  const double secs = seconds_since(t0) / double(state.iterations());
  const auto& hp = m->hp();
  const double E = hp.n_embd, FF = hp.n_ff, T = 64.0 * 256, n = 256;
  const double flops = hp.n_layer * (T * 2 * (4 * E * E + 2 * E * FF) + 64 * 4 * n * n * E);
  const double gflops = flops / secs * 1e-9;
  state.counters["tokens/s"] = T / secs;
  state.counters["GFLOP/s"] = gflops;
  const auto wt = m->layers[0].wq.type;
  // F32, F16 and BF16 (exact products, the default) all run on fp32 FMAs.
  const bool float_weights =
      wt == gguf::TensorType::F32 || wt == gguf::TensorType::F16 || wt == gguf::TensorType::BF16;
  if (float_weights && peaks().fp32 > 0) state.counters["peak_fp32"] = gflops * 1e9 / peaks().fp32;
  if (wt == gguf::TensorType::Q8_0 && peaks().int8 > 0)
    state.counters["peak_int8"] = gflops * 1e9 / peaks().int8;
}
BENCHMARK_CAPTURE(BM_EncodePassages, bge_small_f32, std::string("bge-small"), std::string("f32"))
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EncodePassages, bge_small_f16, std::string("bge-small"), std::string("f16"))
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EncodePassages, bge_small_q8_0, std::string("bge-small"), std::string("q8_0"))
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EncodePassages, bge_base_f16, std::string("bge-base"), std::string("f16"))
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

struct Reader {
  std::unique_ptr<model::Model> m;
  std::unique_ptr<tok::Tokenizer> tok;
  std::unique_ptr<runtime::Context> ctx;
  std::string error;
};
Reader& reader() {
  static Reader r = [] {
    Reader out;
    try {
      model::RandomModelOptions o;
      o.shape = "qwen2.5-0.5b";
      o.arch = "qwen2";
      o.type = "q8_0";
      out.m = model::Model::load(bench::bench_model("spotlight-qwen2.5-0.5b-q8_0.gguf", o));
      out.tok = tok::Tokenizer::from_gguf(out.m->file());
      out.ctx = std::make_unique<runtime::Context>(*out.m, bench::context_params(8192));
    } catch (const std::exception& e) {
      out.error = e.what();
    }
    return out;
  }();
  return r;
}

double prefill_seconds(Reader& r, const std::string& prompt) {
  runtime::SeqInput in;
  in.seq = r.ctx->new_sequence();
  in.tokens = r.tok->encode(prompt, true, false);
  in.logits = runtime::LogitsMode::Last;
  const auto t0 = clock_type::now();
  r.ctx->eval({in});
  const double s = seconds_since(t0);
  r.ctx->free_sequence(in.seq);
  return s;
}

void BM_SpotlightOverhead(benchmark::State& state) {
  Reader& r = reader();
  if (!r.error.empty()) return state.SkipWithError(r.error.c_str());
  std::unique_ptr<reader::NativeEncoder> native;
  try {
    reader::NativeEncoderOptions no;
    no.engine.threads = kThreads;
    native = std::make_unique<reader::NativeEncoder>(bert_model("bge-small", "f16"), no);
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  const int n = int(state.range(0));
  const Text& t = text();
  std::vector<spotlight::Document> docs(t.paragraphs.begin(), t.paragraphs.begin() + n);
  std::string full = "Question: " + t.question + "\nContext:\n";
  for (const auto& d : docs) full += d.text + "\n";
  full += "Answer:";
  double enc_s = 0, sel_s = 0, full_s = 0;
  for (auto _ : state) {
    spotlight::ModelEncoder enc(*native);
    const auto t0 = clock_type::now();
    spotlight::ScoredQuestion sq =
        spotlight::score_question(enc, t.question, docs, spotlight::ScoreParams{});
    spotlight::Selection s =
        spotlight::select_and_annotate(t.question, docs, sq, spotlight::SelectParams{});
    enc_s += seconds_since(t0);
    sel_s += prefill_seconds(r, s.prompt);
    full_s += prefill_seconds(r, full);
  }
  const double it = double(state.iterations());
  state.counters["encode_select_ms"] = 1e3 * enc_s / it;
  state.counters["prefill_selected_ms"] = 1e3 * sel_s / it;
  state.counters["prefill_full_ms"] = 1e3 * full_s / it;
  state.counters["full_tokens"] = double(r.tok->encode(full, true, false).size());
  state.counters["overhead_vs_selected_pct"] = 100.0 * enc_s / sel_s;
  state.counters["overhead_vs_full_pct"] = 100.0 * enc_s / full_s;
}
BENCHMARK(BM_SpotlightOverhead)
    ->Arg(1)
    ->Arg(5)
    ->Arg(10)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
