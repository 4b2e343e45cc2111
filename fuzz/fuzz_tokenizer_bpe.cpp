// Fuzz target: the byte-level BPE tokenizer (Qwen2's regex pre-tokeniser and GPT-2's scanner) on
// arbitrary bytes (fuzz/tokenizer_fuzz.h).
#include "tokenizer_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto vocabs = ragform::fuzz::load_vocabs(
      {"/fixtures/models/tiny-qwen2.gguf", "/fixtures/vocab/ggml-vocab-gpt-2.gguf"});
  return ragform::fuzz::fuzz_tokenizers(vocabs, data, size);
}
