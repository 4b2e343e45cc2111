// Internal: the vocabulary as llama.cpp's llama_vocab::impl holds it after load(), and the three
// tokenisation algorithms over it (spm.cpp, bpe.cpp, wpm.cpp). Not a public header.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/pretokenize.h"

namespace ragform::tok {

// Token attributes, llama.h's llama_token_attr bits.
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrNormalized = 1u << 6,
  kAttrLstrip = 1u << 7,
  kAttrRstrip = 1u << 8,
  kAttrSingleWord = 1u << 9,
};

enum class VocabKind { kSpm, kBpe, kWpm };

// Hash for heterogeneous (string_view) lookups, so finding a token never allocates.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocab {
  VocabKind kind = VocabKind::kSpm;
  std::string pre_name;  // as in the file ("default" when absent)
  std::vector<std::string> text;
  std::vector<float> score;
  std::vector<uint32_t> attr;
  std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> to_id;
  int max_token_len = 0;

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1, pad = -1, mask = -1;
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
  bool add_bos = false, add_eos = false, add_sep = false;
  bool add_space_prefix = false, clean_spaces = false, ignore_merges = false;
  bool lowercase = true, strip_accents = true;  // WordPiece normaliser
  std::set<int32_t> eog;
  std::vector<int32_t> special_cache;    // control/user-defined/unknown ids, longest text first
  std::vector<std::string> piece_cache;  // token_to_piece(id, special = true)

  // BPE: (left id, right id) -> rank and the id of the merged text (-1 if not a token).
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  std::unordered_map<uint64_t, Merge> merges;
  std::unique_ptr<PreTokenizer> pre;

  int32_t find(std::string_view s) const {
    auto it = to_id.find(s);
    return it == to_id.end() ? -1 : it->second;
  }
  int32_t n() const { return int32_t(text.size()); }
};

inline uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t(uint32_t(a)) << 32) | uint32_t(b);
}

// Each appends the tokens of one raw-text fragment to `out`.
void spm_tokenize(const Vocab& v, const std::string& text, std::vector<int32_t>* out);
void wpm_tokenize(const Vocab& v, std::string_view text, std::vector<int32_t>* out);

// BPE keeps a per-call word cache: natural text repeats its words, so each distinct word is
// merged once per encode() call.
class BpeSession {
 public:
  explicit BpeSession(const Vocab& v) : v_(v) {}
  void tokenize(std::string_view text, std::vector<int32_t>* out);

 private:
  void tokenize_word(const std::string& word, std::vector<int32_t>* out);
  const Vocab& v_;
  std::unordered_map<std::string, std::vector<int32_t>> cache_;
  std::vector<std::string> words_;
};

}  // namespace ragform::tok
