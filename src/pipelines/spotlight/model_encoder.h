// SpotlightRAG's token encoder E(.) (paper section 3.3, equations 3-4) over a real encoder model
// (reader/encoder.h: a BERT-family GGUF on the engine, or an embedding server): the final hidden
// state of every word-piece (pooling none), as in ColBERT-style late interaction.
//
// Words: BERT's pre-tokeniser splits text into words and punctuation marks, and WordPiece splits a
// word into pieces, the first marked as a word start. A word's vector is the mean of its pieces'
// states, unit-normalised, so one row of the match matrix (and one highlighted span of the
// <Rel>-token display) is one word, as for the static encoder; equations 5-8 are unchanged.
// Pure-punctuation words and the [CLS] / [SEP] tokens are dropped.
// Alignment: each word's text (its pieces joined) is searched for in the original text from a
// byte cursor, ignoring ASCII case (uncased models lowercase); a word that is not found (an
// accent the tokenizer stripped, a character it dropped) gets no span and is dropped, counted in
// EncodedText::oov. Text past the model's longest input is truncated by the encoder (those words
// are not encoded; `truncated_texts` counts them).
// encode_batch sends the question and all passages through the encoder in one call, so the engine
// encodes them in batched passes; seconds() and pieces() accumulate the cost for the overhead
// report (paper section 3.6).
#pragma once
#include <string>

#include "pipelines/spotlight/encoder.h"
#include "reader/encoder.h"

namespace ragform::spotlight {

class ModelEncoder : public TokenEncoder {
 public:
  explicit ModelEncoder(reader::Encoder& enc);
  EncodedText encode(std::string_view text) override;
  std::vector<EncodedText> encode_batch(const std::vector<std::string_view>& texts) override;
  std::string describe() const override;

  double seconds() const { return seconds_; }  // wall time inside the encoder
  size_t pieces() const { return pieces_; }    // word-pieces encoded
  size_t truncated_texts() const { return truncated_; }

 private:
  reader::Encoder& enc_;
  double seconds_ = 0;
  size_t pieces_ = 0, truncated_ = 0;
};

// The words of a word-piece sequence with their byte spans in `text` (ModelEncoder's rule above):
// for each word, the indices of its pieces. Pieces are token_text forms: a word start begins with
// U+2581 or a space (llama.cpp's converter marks them so), "[CLS]"-style specials are skipped.
// An unaligned word has an empty span. Exposed for tests.
struct PieceWord {
  std::string text;  // the pieces joined, without the marker
  text::TextSpan span;
  std::vector<int> pieces;
};
std::vector<PieceWord> group_pieces(std::string_view text, const std::vector<std::string>& pieces);

}  // namespace ragform::spotlight
