// The three tokenisation algorithms, each applied to one raw-text fragment (llama-vocab.cpp's
// llm_tokenizer_{spm,bpe,wpm}_session, re-implemented).
#include <algorithm>
#include <queue>

#include "engine/tokenizer/unicode_props.h"
#include "engine/tokenizer/vocab.h"

namespace ragform::tok {
namespace {

struct Symbol {
  int prev, next;
  const char* text;
  size_t n;
  int32_t id;  // BPE only: vocabulary id of the symbol's text, -1 if none
};

// Splits `s` into one symbol per UTF-8 character (by lead byte, truncated at the end).
void split_chars(const std::string& s, std::vector<Symbol>* syms) {
  syms->clear();
  size_t off = 0;
  int index = 0;
  while (off < s.size()) {
    Symbol sym;
    sym.text = s.data() + off;
    sym.n = std::min(utf8_len_from_lead(uint8_t(s[off])), s.size() - off);
    off += sym.n;
    sym.prev = index - 1;
    sym.next = off == s.size() ? -1 : index + 1;
    sym.id = -1;
    ++index;
    syms->push_back(sym);
  }
}

// SentencePiece byte fallback: <0xXX>, else the byte itself as a token, else <unk>.
void push_byte_spm(const Vocab& v, uint8_t b, std::vector<int32_t>* out) {
  static const char* hex = "0123456789ABCDEF";
  const char buf[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
  int32_t id = v.find(buf);
  if (id < 0) id = v.find(std::string(1, char(b)));
  if (id < 0) id = v.unk;
  if (id >= 0) out->push_back(id);
}

}  // namespace

namespace {

void spm_segment(const Vocab& v, const std::string& text, std::vector<int32_t>* out) {
  struct Bigram {
    int left, right;
    float score;
    size_t size;
  };
  // Highest score first; ties go to the leftmost pair.
  auto lower = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower)> queue(lower);
  std::vector<Symbol> syms;
  split_chars(text, &syms);
  std::string buf;
  auto try_add = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    buf.assign(syms[left].text, syms[left].n + syms[right].n);
    const int32_t id = v.find(buf);
    if (id < 0) return;
    queue.push({left, right, v.score[id], buf.size()});
  };
  for (int i = 1; i < int(syms.size()); ++i) try_add(i - 1, i);
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = syms[b.left];
    Symbol& r = syms[b.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }
  // Every merged symbol is a token; a single character that is not falls back to bytes.
  for (int i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
    const Symbol& s = syms[i];
    const int32_t id = v.find(std::string_view(s.text, s.n));
    if (id >= 0) {
      out->push_back(id);
    } else {
      for (size_t j = 0; j < s.n; ++j) push_byte_spm(v, uint8_t(s.text[j]), out);
    }
  }
}

}  // namespace

// Cuts the text before each U+2581 that no token glues to its preceding character, then runs
// the merge loop on each piece: same result, but the bigram queue stays small and in cache.
void spm_tokenize(const Vocab& v, const std::string& text, std::vector<int32_t>* out) {
  static const std::string space = "\xe2\x96\x81";
  if (!v.spm_can_cut) return spm_segment(v, text, out);
  size_t seg = 0, prev_start = 0, off = 0;
  bool have_prev = false;
  std::string piece;
  while (off < text.size()) {
    const size_t n = std::min(utf8_len_from_lead(uint8_t(text[off])), text.size() - off);
    if (have_prev && n == 3 && text.compare(off, 3, space) == 0 && off > seg) {
      const std::string_view prev(text.data() + prev_start, off - prev_start);
      size_t pos = 0;
      decode_cpt(prev, &pos);
      const bool valid_char = pos == prev.size() && !(prev.size() == 1 && uint8_t(prev[0]) >= 0x80);
      if (valid_char && v.spm_glue.find(prev) == v.spm_glue.end()) {
        piece.assign(text, seg, off - seg);
        spm_segment(v, piece, out);
        seg = off;
      }
    }
    prev_start = off;
    have_prev = true;
    off += n;
  }
  piece.assign(text, seg, std::string::npos);
  spm_segment(v, piece, out);
}

void BpeSession::tokenize(std::string_view text, std::vector<int32_t>* out) {
  words_.clear();
  v_.pre->split(text, &words_);
  if (cache_.empty()) cache_.reserve(words_.size() / 4 + 16);
  std::string encoded;
  for (const auto& w : words_) {
    auto it = cache_.find(w);  // keyed by the raw word: a hit skips the byte encoding too
    if (it == cache_.end()) {
      encoded.clear();
      for (unsigned char c : w) encoded += byte_to_unicode(c);
      std::vector<int32_t> ids;
      tokenize_word(encoded, &ids);
      it = cache_.emplace(w, std::move(ids)).first;
    }
    out->insert(out->end(), it->second.begin(), it->second.end());
  }
}

void BpeSession::tokenize_word(const std::string& word, std::vector<int32_t>* out) {
  if (v_.ignore_merges) {
    const int32_t id = v_.find(word);
    if (id >= 0) {
      out->push_back(id);
      return;
    }
  }
  struct Bigram {
    int left, right;
    int32_t rank, left_id, right_id, merged;
  };
  // Lowest rank first; ties go to the leftmost pair.
  auto later = [](const Bigram& a, const Bigram& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(later)> queue(later);
  std::vector<Symbol> syms;
  split_chars(word, &syms);
  for (auto& s : syms) s.id = v_.find(std::string_view(s.text, s.n));
  auto try_add = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    const int32_t a = syms[left].id, b = syms[right].id;
    if (a < 0 || b < 0) return;
    const Vocab::Merge* m = v_.merges.find(pair_key(a, b));
    if (!m) return;
    queue.push({left, right, m->rank, a, b, m->merged});
  };
  for (int i = 1; i < int(syms.size()); ++i) try_add(i - 1, i);
  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = syms[b.left];
    Symbol& r = syms[b.right];
    if (l.n == 0 || r.n == 0 || l.id != b.left_id || r.id != b.right_id) continue;  // stale
    l.n += r.n;
    l.id = b.merged;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }
  for (int i = syms.empty() ? -1 : 0; i != -1; i = syms[i].next) {
    const Symbol& s = syms[i];
    if (s.id >= 0) {
      out->push_back(s.id);
      continue;
    }
    const int32_t id = v_.find(std::string_view(s.text, s.n));
    if (id >= 0) {
      out->push_back(id);
      continue;
    }
    for (size_t j = 0; j < s.n; ++j) {  // single bytes that are tokens; others are dropped
      const int32_t bid = v_.find(std::string(1, s.text[j]));
      if (bid >= 0) out->push_back(bid);
    }
  }
}

namespace {

bool is_chinese_char(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||  // as HF's code
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BertNormalizer + BertPreTokenizer as llama.cpp does them: words split at whitespace, each
// punctuation / ASCII symbol / CJK character its own word.
std::vector<std::string> wpm_words(const Vocab& v, std::string_view text) {
  std::vector<uint32_t> cpts = decode_cpts(text);
  if (v.strip_accents)
    for (auto& c : cpts) c = cp_nfd_first(c);
  std::vector<std::string> words(1);
  for (uint32_t c : cpts) {
    const uint16_t f = cp_flags(c);
    if (f & kWhitespace) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (c == 0 || c == 0xFFFD || (f & kControl)) continue;
    const uint32_t folded = text::bert_fold(c, v.lowercase, v.strip_accents);
    if (folded == text::kBertDropped) continue;
    std::string s;
    append_cpt(s, folded);
    if ((f & kPunctuation) || (c < 0x7F && (f & kSymbol)) || is_chinese_char(c)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = s;
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void wpm_tokenize(const Vocab& v, std::string_view text, std::vector<int32_t>* out) {
  for (const std::string& word : wpm_words(v, text)) {
    if (word.empty()) continue;
    const std::string w = "\xe2\x96\x81" + word;  // phantom space marks the word start
    const int n = int(w.size());
    const size_t start = out->size();
    for (int i = 0; i < n; ++i) {
      bool match = false;
      for (int j = std::min(n, i + v.max_token_len + 1); j > i; --j) {
        const int32_t id = v.find(std::string_view(w).substr(size_t(i), size_t(j - i)));
        if (id >= 0) {
          out->push_back(id);
          match = true;
          i = j - 1;
          break;
        }
      }
      if (!match) {  // the word cannot be covered: discard its pieces
        out->resize(start);
        break;
      }
    }
    if (out->size() == start && v.unk >= 0) out->push_back(v.unk);
  }
}

}  // namespace ragform::tok
