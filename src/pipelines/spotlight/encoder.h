// SpotlightRAG token encoders (paper section 3.3, E(.) of equations 3-4): text -> one vector per
// token, each token carrying its byte span in the text so that scores can be mapped back to
// sentences and shown as highlighted spans (the match matrix).
//
// Encoders behind one interface:
//  * StaticEncoder — static word vectors from a JSON file `{word: [d floats], ...}` (GloVe
//    vectors exported to JSON, or any file in that format). Tokens are the words of
//    text::split_words. Out-of-vocabulary rule, applied in order:
//      1. the word as written;
//      2. lowercased (ASCII);
//      3. lowercased with leading/trailing punctuation stripped ("Paris," -> "paris",
//         "(1998)" -> "1998"), and, failing that, with a trailing possessive "'s" removed;
//      4. otherwise the word is out of vocabulary. With OovPolicy::Skip it is dropped (no vector,
//         counted in `oov`); with OovPolicy::Match (default) it is kept as an *identity token*: a
//         token without a vector whose similarity is 1 to an identity token with the same key
//         (the step-3 form) and 0 to everything else. A 5,000-word GloVe vocabulary misses most
//         names ("Tulsa"), which are exactly what multi-hop questions hinge on; Match keeps exact
//         name overlap without inventing vectors. Pure punctuation is always dropped.
//    EncodedText::oov counts step-4 words, so the OOV ratio is oov / (tokens kept + skipped).
//  * ModelEncoder (model_encoder.h) — the final states of an encoder model's word-pieces.
//  * HiddenEncoder — the reader's own hidden states of a chosen layer (Reader::hidden), i.e.
//    contextual embeddings. Alignment: the reader's token pieces are matched left to right
//    against the text (a piece is searched for from the current byte cursor after stripping a
//    leading space / SentencePiece "▁" / byte-level "Ġ" marker); a token whose piece is found
//    gets that byte span, a token whose piece is not found (BOS, byte-fallback fragments of a
//    multi-byte character) gets an empty span at the cursor and is dropped. Tokens made only of
//    whitespace or punctuation are dropped. A kept token belongs to the sentence containing its
//    first byte. Nothing is OOV.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>
#include "reader/reader.h"
#include "text/sentences.h"

namespace ragform::spotlight {

struct Token {
  std::string text;     // the surface form as written
  std::string key;      // the normalised form (vocabulary key, or identity key when OOV)
  text::TextSpan span;  // bytes of `text` in the encoded string
  int vec = -1;         // row in EncodedText::vectors, -1 = identity token (no vector)
};

struct EncodedText {
  std::vector<Token> tokens;
  int dim = 0;
  std::vector<float> vectors;  // [rows][dim], unit-normalised (so cosine = dot product)
  size_t oov = 0;              // words with no vector (kept as identity tokens or skipped)
  size_t words = 0;            // words considered (excluding pure punctuation)
  const float* row(int r) const { return vectors.data() + static_cast<size_t>(r) * dim; }
};

class TokenEncoder {
 public:
  virtual ~TokenEncoder() = default;
  virtual EncodedText encode(std::string_view text) = 0;
  // Several texts at once (an encoder model batches them into shared forward passes); the
  // default encodes them one by one.
  virtual std::vector<EncodedText> encode_batch(const std::vector<std::string_view>& texts) {
    std::vector<EncodedText> out;
    out.reserve(texts.size());
    for (std::string_view t : texts) out.push_back(encode(t));
    return out;
  }
  virtual std::string describe() const = 0;
};

enum class OovPolicy { Match, Skip };

// The largest word-vector file read (1 GiB: GloVe 300d's 400,000 words are about that as JSON);
// other JSON files are bounded at kMaxTextFileBytes (base/mapped_file.h).
inline constexpr size_t kMaxWordVectorsBytes = size_t(1) << 30;

// A word-vector table loaded from `{word: [floats]}` JSON (or a map of the same). Throws Error
// naming the file and the bad entry (not an object, non-numeric value, inconsistent dimension,
// empty file or map). A default-constructed table holds no words: every word is its own identity
// token.
class WordVectors {
 public:
  static WordVectors load(const std::string& path);
  // The same reader over JSON text (Python's dict, written as JSON), its errors naming `source`.
  static WordVectors parse(std::string_view json_text, const std::string& source);
  static WordVectors from_map(const std::unordered_map<std::string, std::vector<float>>& m);
  int dim() const { return dim_; }
  size_t size() const { return index_.size(); }
  // Row of `word`, or -1.
  int find(const std::string& word) const;
  const float* row(int r) const { return data_.data() + static_cast<size_t>(r) * dim_; }
  const std::string& source() const { return source_; }

 private:
  int dim_ = 0;
  std::unordered_map<std::string, int> index_;
  std::vector<float> data_;  // [size][dim], unit-normalised
  std::string source_;
};

class StaticEncoder : public TokenEncoder {
 public:
  StaticEncoder(const WordVectors& vectors, OovPolicy oov = OovPolicy::Match);
  EncodedText encode(std::string_view text) override;
  std::string describe() const override;

 private:
  const WordVectors& v_;
  OovPolicy oov_;
};

class HiddenEncoder : public TokenEncoder {
 public:
  // layer: as Reader::hidden (0..n_layer).
  HiddenEncoder(reader::Reader& r, int layer);
  EncodedText encode(std::string_view text) override;
  std::string describe() const override;

 private:
  reader::Reader& r_;
  int layer_;
};

// Step 1-3 of the OOV rule: candidate keys for a word, in lookup order; the last is the identity
// key. Empty when the word is pure punctuation.
std::vector<std::string> word_keys(std::string_view word);

// Aligns reader pieces to `text` (HiddenEncoder's rule above): one span per piece; an empty span
// means "not found". Exposed for tests.
std::vector<text::TextSpan> align_pieces(std::string_view text,
                                         const std::vector<std::string>& pieces);

}  // namespace ragform::spotlight
