// Tokenizers built from GGUF metadata, byte-exact with llama.cpp (`llama-vocab.cpp`):
//  - "spm" (tokenizer.ggml.model = llama): SentencePiece-style; spaces escaped to U+2581, a
//    leading space added before text that starts the prompt or follows a special token
//    (tokenizer.ggml.add_space_prefix, default on), greedy bigram merging by token score, byte
//    fallback to <0xXX> tokens;
//  - "bpe" (gpt2): byte-level BPE; text split by the pre-tokeniser named in tokenizer.ggml.pre
//    (pretokenize.h), bytes mapped to GPT-2's printable code points, merges applied by rank
//    (tokenizer.ggml.merges);
//  - "wpm" (bert): WordPiece; NFD + accent stripping + lowercasing, punctuation split, greedy
//    longest match with the U+2581 word-start marker llama.cpp's converter stores, [UNK] per word.
// Special tokens: with parse_special, any occurrence of a control / user-defined token's text
// becomes that token (user-defined ones are always split out, as in HF tokenizers). BOS/EOS
// addition follows tokenizer.ggml.add_bos_token / add_eos_token with llama.cpp's per-kind
// defaults; WordPiece adds [CLS] ... [SEP]. End-of-generation tokens come from the metadata plus
// llama.cpp's text heuristics (<|im_end|>, <|eot_id|>, </s>, ...); those heuristics also mark
// the tokens as control, which is how Qwen's "</s>" becomes a special token.
// A Tokenizer is immutable after loading: encode/decode may run concurrently from many threads.
// Errors in the metadata throw ragform::Error("tokenizer", "<file>: <field>: <why>").
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ragform::gguf {
class File;
}

namespace ragform::tok {

// A byte range [begin, end) of a text.
struct TextSpan {
  size_t begin = 0, end = 0;
};

class Tokenizer {
 public:
  static std::unique_ptr<Tokenizer> from_gguf(const gguf::File& f);
  ~Tokenizer();

  // add_special: BOS/EOS (or [CLS]/[SEP]) as the vocabulary asks; parse_special: special-token
  // text in `text` becomes the special token. Never throws on arbitrary bytes.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // encode(text, add_special, true), except that a control or unknown token's text becomes that
  // token only where it lies wholly inside one of `special_spans` (sorted, disjoint); elsewhere
  // it is text, as with parse_special off. For a chat prompt whose spans are the template's own
  // text (chat_template.h).
  std::vector<int32_t> encode_with_special_spans(std::string_view text,
                                                 const std::vector<TextSpan>& special_spans,
                                                 bool add_special) const;
  // Detokenised bytes of one token (llama_token_to_piece with lstrip 0). Control and unknown
  // tokens render as their text only when render_special. Throws on an out-of-range id.
  std::string token_to_piece(int32_t id, bool render_special = true) const;
  // llama_detokenize(remove_special = false, unparse_special = render_special): the SPM leading
  // space of the first token is dropped and, for vocabularies that ask for it, " ." / " 's"
  // style spaces are cleaned up.
  std::string decode(const std::vector<int32_t>& ids, bool render_special = false) const;

  int32_t n_vocab() const;
  int32_t bos() const;  // -1 if none
  int32_t eos() const;  // -1 if none
  bool is_eog(int32_t id) const;
  bool is_control(int32_t id) const;
  bool add_bos() const;
  bool add_eos() const;
  std::string kind() const;  // "spm", "bpe", "wpm"
  // The longest vocabulary text in bytes. Under spm and bpe no token stands for more bytes of a
  // text than its vocabulary text holds (a space is U+2581 or GPT-2's 'Ġ', a byte token
  // '<0xXX>'), so a text of B bytes is at least B / max(this, 4) tokens; WordPiece drops
  // whitespace and has no such bound.
  size_t max_piece_bytes() const;
  std::string pre() const;  // tokenizer.ggml.pre, or "default" when absent
  std::optional<int32_t> find_token(std::string_view text) const;  // exact vocabulary text
  const std::string& token_text(int32_t id) const;  // raw vocabulary text; throws if out of range

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ragform::tok
