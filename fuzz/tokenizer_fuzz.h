// Shared body of the tokenizer fuzz targets: vocabularies load once from ../shared; each input is
// encoded with parse_special off and on, every id is checked against the vocabulary, and the ids
// are decoded. Invalid UTF-8 must never crash or throw.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf.h"
#include "engine/tokenizer/tokenizer.h"

namespace ragform::fuzz {

struct LoadedVocab {
  std::unique_ptr<gguf::File> file;
  std::unique_ptr<tok::Tokenizer> tok;
};

inline std::vector<LoadedVocab> load_vocabs(std::initializer_list<const char*> rels) {
  std::vector<LoadedVocab> v;
  for (const char* rel : rels) {
    LoadedVocab l;
    l.file = gguf::File::open(std::string(RAGFORM_SHARED_DIR_FUZZ) + rel);
    l.tok = tok::Tokenizer::from_gguf(*l.file);
    v.push_back(std::move(l));
  }
  return v;
}

inline int fuzz_tokenizers(const std::vector<LoadedVocab>& vocabs, const uint8_t* data,
                           size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& l : vocabs) {
    for (bool parse_special : {false, true}) {
      const std::vector<int32_t> ids = l.tok->encode(text, true, parse_special);
      for (int32_t id : ids)
        if (id < 0 || id >= l.tok->n_vocab()) __builtin_trap();
      (void)l.tok->decode(ids, parse_special);
    }
  }
  return 0;
}

}  // namespace ragform::fuzz
