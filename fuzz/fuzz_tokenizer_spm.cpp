// Fuzz target: the SentencePiece tokenizer (llama-spm vocabulary) on arbitrary bytes
// (fuzz/tokenizer_fuzz.h).
#include "tokenizer_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto vocabs =
      ragform::fuzz::load_vocabs({"/fixtures/vocab/ggml-vocab-llama-spm.gguf"});
  return ragform::fuzz::fuzz_tokenizers(vocabs, data, size);
}
