// Document relevance read from the reader's attention, raw and calibrated for positional bias
// (Hsieh et al. 2024, "Found in the Middle", arXiv 2406.16008, section 3).
//
// A prompt holds K documents at character spans of its text. A document's attention is read from
// one attention row (the final token's, mean over heads, of one layer) over the tokens of its
// span: the paper's Attn(x_k) is the mean over those tokens (section 2.1, Attn = sum attn / N_k,
// Measure::Mean); ragform's earlier form, the sum (the mass, Measure::Sum), is kept for curves
// measured with it. A token belongs to a span when any of its characters does; BOS and
// chat-template tokens belong to none. The paper models the attention a document gets as relevance
// plus a prior that depends only on its slot, Attn(x_k, k) = rel(x_k) + bias(k), and estimates the
// prior with an uninformative document placed at slot k (position_bias.h measures that curve).
// Calibrated relevance is eq. 4, rel(x_k, k) = Attn(x_k, k) - Attn(x_dum, k); ranking documents
// by it removes the U shape that makes a document at the start or the end of the context look
// relevant wherever it is. With the mean, documents and fillers of other lengths compare; with
// the sum, a long document at a slot measured with a short filler looks relevant for its length.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reader/reader.h"

namespace ragform::cnorm {

// [begin, end) of something: bytes of a prompt (CharSpan) or positions of its tokens (TokenSpan).
struct CharSpan {
  size_t begin = 0, end = 0;
  bool operator==(const CharSpan&) const = default;
};
struct TokenSpan {
  size_t begin = 0, end = 0;  // empty (begin == end) when no token covers the characters
  bool operator==(const TokenSpan&) const = default;
};

// How a document's attention is summarised over its tokens (see above).
enum class Measure { Mean, Sum };
// "mean" or "sum"; UsageError naming `flag` otherwise.
Measure parse_measure(const std::string& s, const std::string& flag);
const char* measure_name(Measure m);

// Found in the Middle's temperature t of eq. 5 (App. B: 5e-5 in all of its experiments).
inline constexpr double kPaperTemperature = 5e-5;
// The paper's allocation, eq. 5: alpha_k = softmax(rel_k / t), computed stably (shifted by the
// largest). UsageError when t is not above 0 or finite; empty for no documents.
std::vector<double> softmax_allocation(const std::vector<double>& relevance, double t);

// How much document-relevance work one request may ask for (`attention --doc-spans`,
// /v1/attention's doc_spans, docs/server.md "Security"). Each span is resolved and summed over
// every attention row, and the report holds one entry per span per row: 100,000 spans x 20 rows
// took 210 s and 878 MB. A retrieval prompt holds tens of documents, so these are far above use.
inline constexpr size_t kMaxDocSpans = 1024;                // spans in one request
inline constexpr size_t kMaxDocSpanRows = 65536;            // spans x attention rows
inline constexpr size_t kMaxDocSpanWork = size_t(1) << 27;  // spans x rows x positions

// UsageError naming `field` and the limit when `spans` spans over `rows` attention rows of
// `positions` positions each exceed kMaxDocSpanRows or kMaxDocSpanWork.
void check_document_work(size_t spans, size_t rows, size_t positions, const std::string& field);

// "START:END,START:END,..." (byte offsets into the prompt, END exclusive). UsageError naming
// `flag` for a malformed list, an empty span, END before START or more than kMaxDocSpans spans.
std::vector<CharSpan> parse_char_spans(std::string_view text, const std::string& flag);
// The same spans from JSON, [[start, end], ...]; UsageError naming `field` otherwise.
std::vector<CharSpan> char_spans_from_json(const nlohmann::json& j, const std::string& field);

// Where each token's characters lie in `prompt`: the pieces, concatenated, spell the rendered
// prompt, in which the prompt's text is the last occurrence; a token's range is its part of that
// occurrence, empty for tokens outside it (BOS, a chat template's markers) and without the
// SentencePiece dummy-prefix space the text lacks. Throws Error when the pieces do not spell the
// prompt (a truncated prompt).
// `at`: where the reader says the prompt starts in the concatenated pieces (AttentionResult::
// prompt_at), taken when the text is there (a chat prompt "model" is also in Gemma's reply header,
// its last occurrence).
std::vector<CharSpan> token_chars(const std::string& prompt, const std::vector<std::string>& pieces,
                                  std::optional<size_t> at = std::nullopt);
// The tokens of each span, by the any-character rule. UsageError when a span ends past the prompt.
std::vector<TokenSpan> resolve_spans(const std::string& prompt,
                                     const std::vector<std::string>& pieces,
                                     const std::vector<CharSpan>& spans,
                                     std::optional<size_t> at = std::nullopt);

// Sum of row[t] over each span's tokens (a span past the row's end counts what the row has).
std::vector<double> span_masses(const std::vector<float>& row, const std::vector<TokenSpan>& spans);
// Each span's attention under `m`: its mass, or its mass over its token count (0 for a span no
// token covers).
std::vector<double> span_attention(const std::vector<float>& row,
                                   const std::vector<TokenSpan>& spans, Measure m);
// Each span's attention (under `m`) from the prompt's final token, the head mean of each of
// `layers` averaged over the layers: what the calibrated uses read (ranking, scores, the sweep's
// allocations, Spotlight's calibrated prior).
std::vector<double> layer_mean_attention(reader::Reader& r, const std::string& prompt,
                                         const std::vector<CharSpan>& spans,
                                         const std::vector<int>& layers, Measure m);
// attention[k] - bias[k]: the paper's calibrated attention (eq. 4), both under one measure. Error
// when the sizes differ.
std::vector<double> calibrated_relevance(const std::vector<double>& attention,
                                         const std::vector<double>& bias);
// Document indices, most relevant first; ties keep slot order (a stable sort).
std::vector<size_t> rank_documents(const std::vector<double>& scores);

// One document of a prompt: its spans, attention mass and, with a bias curve, the curve's value at
// its slot and the calibrated relevance.
struct DocumentRelevance {
  size_t slot = 0;
  CharSpan chars;
  TokenSpan tokens;
  double mass = 0;        // the sum over its tokens
  double mean = 0;        // the mean over its tokens (0 without tokens)
  double bias = 0;        // 0 without a curve
  double calibrated = 0;  // attention (under the curve's measure) - bias; mass without a curve
};

// The documents of `spans` under one attention row of `r` (computed for `prompt`). With `bias`
// (one value per slot, the curve of the row's layer, measured under `m`) every document is
// calibrated; without it, bias is 0 and calibrated = mass. Error when bias has another size than
// spans.
std::vector<DocumentRelevance> document_relevance(const std::string& prompt,
                                                  const reader::AttentionResult& r,
                                                  const reader::AttentionRows& row,
                                                  const std::vector<CharSpan>& spans,
                                                  const std::vector<double>* bias, Measure m);
// [{"slot","start","end","token_start","token_end","mass","mean"[,"bias","calibrated"]}],
// "ranking" (slots by calibrated relevance, or by mass without a curve) and, calibrated,
// "measure": what `ragform attention`, /v1/attention and Python report.
nlohmann::json document_relevance_json(const std::vector<DocumentRelevance>& docs, bool calibrated,
                                       Measure m);

}  // namespace ragform::cnorm
