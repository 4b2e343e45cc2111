// Fuzz target: the WordPiece (bert-bge vocabulary) tokenizer on arbitrary bytes. Each input is
// encoded with parse_special off and on, every id is checked against the vocabulary, and the ids
// are decoded; invalid UTF-8 must never crash or throw. The vocabulary loads once from ../shared.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

struct Loaded {
  std::unique_ptr<ragform::gguf::File> file;
  std::unique_ptr<ragform::tok::Tokenizer> tok;
};

const std::vector<Loaded>& tokenizers() {
  static const std::vector<Loaded> all = [] {
    std::vector<Loaded> v;
    for (const char* rel : {"/fixtures/vocab/ggml-vocab-bert-bge.gguf"}) {
      Loaded l;
      l.file = ragform::gguf::File::open(std::string(RAGFORM_SHARED_DIR_FUZZ) + rel);
      l.tok = ragform::tok::Tokenizer::from_gguf(*l.file);
      v.push_back(std::move(l));
    }
    return v;
  }();
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& l : tokenizers()) {
    for (bool parse_special : {false, true}) {
      const std::vector<int32_t> ids = l.tok->encode(text, true, parse_special);
      for (int32_t id : ids)
        if (id < 0 || id >= l.tok->n_vocab()) __builtin_trap();
      (void)l.tok->decode(ids, parse_special);
    }
  }
  return 0;
}
