// The forward pass of a BERT-family encoder (model/bert.h) over a batch of independent inputs,
// and the tokenisation of texts and text pairs into those inputs.
//
// All tokens of all inputs of a batch go through every matmul together ([n_tokens][n_embd]
// activations, ops::matmul on the caller's thread pool, any weight type); attention is per input
// and bidirectional (no mask, no KV cache). Numerics follow llama.cpp's CPU graph for `bert`
// (llm_build_bert): embeddings (token + token_type row + position) -> LayerNorm; per layer
// x = LN(x + Wo softmax(Q K^T / sqrt(d)) V + bo), x = LN(x + W_down GELU(W_up x + b_up) + b_down),
// with GELU as ggml's CPU table (model::gelu); no final norm. Pooling as llama.cpp: mean over the
// input's tokens, the first (CLS) or last token, or rank = cls.output(tanh(cls(CLS state))).
//
// One difference from llama.cpp, on purpose: llama.cpp adds token-type row 0 to every token, also
// for a pair; here the second segment of a pair gets row 1 when the model has a 2-row table, as
// BERT and HF transformers do (cross-encoders are trained that way). Single texts are identical.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/thread_pool.h"
#include "engine/model/bert.h"

namespace ragform::tok {
class Tokenizer;
}

namespace ragform::runtime {

struct EncoderInput {
  std::vector<int32_t> tokens;
  std::vector<int32_t> types;  // token-type row per token; empty = all 0
  bool truncated = false;      // set by encoder_input when pieces were dropped
};

// The encoder setting "truncate" (reader/encoder_settings.h) parses its name.
enum class Truncate { Right, Error };

// `[CLS] a [SEP]` as the tokenizer adds its specials. Inputs longer than n_max tokens:
// Truncate::Right drops word-pieces at the end (keeping [SEP]) and sets `truncated`;
// Truncate::Error throws Error("encoder", ...). n_max <= 0: no limit.
EncoderInput encoder_input(const tok::Tokenizer& tok, std::string_view a, int n_max,
                           Truncate trunc);
// `[CLS] a [SEP] b [SEP]`, with type 1 on b's pieces and its [SEP] when the model has
// n_token_types >= 2 (else all 0). Truncation trims the longer segment first (HF's longest_first).
EncoderInput encoder_pair_input(const tok::Tokenizer& tok, std::string_view a, std::string_view b,
                                int n_max, Truncate trunc, int n_token_types);

// A text's word-pieces without specials, as encoder_input and encoder_pair_input tokenise it: one
// text paired with many (a rerank query with each document) is tokenised once.
std::vector<int32_t> encoder_pieces(const tok::Tokenizer& tok, std::string_view text);
// encoder_pair_input of two texts' pieces (encoder_pieces).
EncoderInput encoder_pair_input(const tok::Tokenizer& tok, std::span<const int32_t> a,
                                std::span<const int32_t> b, int n_max, Truncate trunc,
                                int n_token_types);
// How many pieces of each segment a pair keeps within `budget` pieces (HF's longest_first:
// pieces dropped one at a time from the end of the longer segment, the first on a tie), computed
// without the loop, so a 100,000-piece query costs nothing per document.
struct PairLengths {
  size_t a = 0, b = 0;
};
PairLengths longest_first(size_t la, size_t lb, size_t budget);

struct EncoderOutput {
  int n_tokens = 0;
  std::vector<float> states;  // [n_tokens][n_embd], pooling none only
  std::vector<float> pooled;  // [n_embd] (mean/cls/last) or [n_labels] raw scores (rank)
};

struct EncodeOptions {
  model::Pooling pooling = model::Pooling::None;
  // Inputs are grouped into passes of at most this many tokens (a longer input is a pass alone):
  // bounds the activation scratch at max_batch_tokens * n_ff floats.
  int max_batch_tokens = 4096;
};

class Encoder {
 public:
  // The encoder holds a share of `pool` (as a runtime::Context does), so the pool lives as long as
  // any encoder running on it. Null: a pool of all cores of its own.
  Encoder(const model::BertModel& m, std::shared_ptr<ThreadPool> pool);
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  const model::BertModel& model() const { return m_; }
  // Throws Error when an input is empty, longer than the position table, or has an out-of-range
  // token / type id, or when rank pooling is asked of a model without a classification head.
  std::vector<EncoderOutput> encode(const std::vector<EncoderInput>& inputs,
                                    const EncodeOptions& opt);

 private:
  struct Impl;
  void run_pass(const std::vector<const EncoderInput*>& batch, const EncodeOptions& opt,
                EncoderOutput* out);
  const model::BertModel& m_;
  std::shared_ptr<ThreadPool> pool_;
  std::unique_ptr<Impl> impl_;
};

// In-place L2 normalisation (a zero vector stays zero).
void l2_normalize(std::vector<float>& v);

}  // namespace ragform::runtime
