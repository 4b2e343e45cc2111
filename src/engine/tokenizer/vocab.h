// Internal: the vocabulary as llama.cpp's llama_vocab::impl holds it after load(), and the three
// tokenisation algorithms over it (spm.cpp, bpe.cpp, wpm.cpp). Not a public header.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
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

  // SPM: characters that some token contains right before a U+2581. A text can be cut before a
  // U+2581 whose preceding character is not in this set: no merge can cross such a cut, so the
  // pieces tokenise independently with the same result (spm_tokenize).
  std::unordered_set<std::string, TextHash, std::equal_to<>> spm_glue;
  bool spm_can_cut = false;

  // BPE: (left id, right id) -> rank and the id of the merged text (-1 if not a token).
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  // Open-addressing table: one probe sequence in a flat array (the merge lookup is the hot loop
  // of BPE; a node-based map costs two cache misses per pair).
  class MergeTable {
   public:
    void reserve(size_t n) { rehash(std::max<size_t>(16, 2 * n)); }
    // Keeps the first rank for a repeated pair, as llama.cpp's map emplace does.
    void insert_if_absent(uint64_t key, Merge m) {
      if (2 * (size_ + 1) > slots_.size()) rehash(std::max<size_t>(16, 2 * slots_.size()));
      size_t i = mix(key) & mask_;
      while (slots_[i].key != kEmpty) {
        if (slots_[i].key == key) return;
        i = (i + 1) & mask_;
      }
      slots_[i] = {key, m};
      ++size_;
    }
    const Merge* find(uint64_t key) const {
      if (slots_.empty()) return nullptr;
      for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
        if (slots_[i].key == key) return &slots_[i].m;
        if (slots_[i].key == kEmpty) return nullptr;
      }
    }
    size_t size() const { return size_; }

   private:
    static constexpr uint64_t kEmpty = ~uint64_t(0);  // never a key: ids are < 2^31
    struct Slot {
      uint64_t key = kEmpty;
      Merge m{};
    };
    static size_t mix(uint64_t k) {
      k ^= k >> 33;
      k *= 0xff51afd7ed558ccdULL;
      k ^= k >> 33;
      return size_t(k);
    }
    void rehash(size_t want) {
      size_t cap = 16;
      while (cap < want) cap *= 2;
      if (cap <= slots_.size()) return;
      std::vector<Slot> old;
      old.swap(slots_);
      slots_.assign(cap, Slot{});
      mask_ = cap - 1;
      size_ = 0;
      for (const Slot& sl : old)
        if (sl.key != kEmpty) insert_if_absent(sl.key, sl.m);
    }
    std::vector<Slot> slots_;
    size_t mask_ = 0, size_ = 0;
  };
  MergeTable merges;
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
