// Tokeniser throughput on 1 MiB of English prose (HotpotQA distractor paragraphs from
// ../shared/data), single thread. The target (issue 3): the Qwen2 vocabulary must tokenise 1 MB in
// under 0.5 s. Baselines measured in the same run: the Qwen2 pre-tokeniser alone (regex split,
// no merges), GPT-2's scanner-based BPE, and SentencePiece on the same text.
// Counters: "s_per_MiB" (seconds per MiB) and "tokens".
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "base/mapped_file.h"
#include "bench_support.h"
#include "engine/gguf/gguf.h"
#include "engine/tokenizer/pretokenize.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

using ragform::tok::Tokenizer;

using ragform::bench::shared;

// Distinct paragraphs (by title) of HotpotQA dev + train, concatenated up to exactly 1 MiB
// (cut back to a character boundary).
const std::string& prose() {
  static const std::string text = [] {
    std::string out;
    std::set<std::string> seen;
    for (const char* f :
         {"data/hotpotqa-distractor/dev.jsonl", "data/hotpotqa-distractor/train.jsonl"}) {
      std::istringstream lines(ragform::read_file_bytes(shared(f)));
      for (std::string line; std::getline(lines, line) && out.size() < (1u << 20);) {
        const auto row = nlohmann::json::parse(line);
        const auto& titles = row.at("context").at("title");
        const auto& sents = row.at("context").at("sentences");
        for (size_t i = 0; i < titles.size(); ++i) {
          if (!seen.insert(titles[i].get<std::string>()).second) continue;
          for (const auto& s : sents[i]) out += s.get<std::string>();
          out += "\n\n";
        }
      }
    }
    if (out.size() < (1u << 20)) {
      std::fprintf(stderr, "bench_tokenizer: only %zu bytes of prose found\n", out.size());
      std::exit(1);
    }
    out.resize(1u << 20);
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    return out;
  }();
  return text;
}

struct Loaded {
  std::unique_ptr<ragform::gguf::File> file;
  std::unique_ptr<Tokenizer> tok;
};

const Tokenizer& tokenizer(const std::string& rel) {
  static std::map<std::string, Loaded> cache;
  auto it = cache.find(rel);
  if (it == cache.end()) {
    Loaded l;
    l.file = ragform::gguf::File::open(shared(rel));
    l.tok = Tokenizer::from_gguf(*l.file);
    it = cache.emplace(rel, std::move(l)).first;
  }
  return *it->second.tok;
}

void report(benchmark::State& state, size_t n_tokens) {
  const double mib = double(prose().size()) / double(1u << 20);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(prose().size()));
  state.counters["tokens"] = double(n_tokens);
  state.counters["s_per_MiB"] = benchmark::Counter(
      double(state.iterations()) * mib, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void run_encode(benchmark::State& state, const std::string& rel) {
  const Tokenizer& tok = tokenizer(rel);
  const std::string& text = prose();
  size_t n = 0;
  for (auto _ : state) {
    auto ids = tok.encode(text, false, false);
    n = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  report(state, n);
}

void BM_Qwen2Encode1MiB(benchmark::State& state) {
  run_encode(state, "fixtures/models/tiny-qwen2.gguf");
}
void BM_Gpt2Encode1MiB(benchmark::State& state) {
  run_encode(state, "fixtures/vocab/ggml-vocab-gpt-2.gguf");
}
void BM_LlamaSpmEncode1MiB(benchmark::State& state) {
  run_encode(state, "fixtures/vocab/ggml-vocab-llama-spm.gguf");
}

// Baseline: the Qwen2 pre-tokeniser alone (regex split into words, no merges).
void BM_Qwen2PreTokenizeOnly1MiB(benchmark::State& state) {
  const auto spec = ragform::tok::find_pre_tokenizer("qwen2");
  ragform::tok::PreTokenizer pre(spec->regexes);
  std::vector<std::string> words;
  for (auto _ : state) {
    words.clear();
    pre.split(prose(), &words);
    benchmark::DoNotOptimize(words.data());
  }
  report(state, words.size());
}

BENCHMARK(BM_Qwen2Encode1MiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Qwen2PreTokenizeOnly1MiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Gpt2Encode1MiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LlamaSpmEncode1MiB)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
