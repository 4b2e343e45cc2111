// Attention steering: an intervention on the attention weights of chosen layers and heads, applied
// by the attention kernel (attention.h) between the softmax and P V, so taps report the weights
// after steering and the values read are the steered mixture. Three rules, each a row still
// summing to 1:
//
//   rescale:F    PASTA (Zhang et al. 2023, arXiv 2311.02262, eq. 2): every key of the prompt
//                outside the spans is scaled by alpha and the row renormalised, here with
//                alpha = 1/F (the same weights: w_j <- w_j * (j in span ? F : 1) / Z). As PASTA's
//                reference code (pastalib, edit_multisection_attention) does, every query row is
//                steered, the rows inside a span too (the span keys it can see count), and keys at
//                or past the prompt's end (generated tokens, Steering::prompt_end) are not
//                down-weighted: they take F like the span's keys. Rows before every span are
//                unchanged (all their keys are outside, so alpha cancels). Spans are one union:
//                pastalib scales a key by alpha once per section it is outside of, which equals
//                the union unless two spans overlap (there pastalib gives the overlap F^2).
//   reallocate:S the span's total weight set to the share S, the rest scaled to 1 - S
//                (ragform's variant of found-in-the-middle's reallocation): span weights times
//                S / span, the others times (1 - S) / rest, on query rows after the span.
//   redistribute:W1,W2,...
//                Found in the Middle (Hsieh et al. 2024, arXiv 2406.16008, section 4, eq. 5-6):
//                the documents' total attention C of the row is kept and split among them in
//                proportion to the weights (the paper's alpha_k = softmax(rel_k / t), computed by
//                the caller: cnorm::softmax_allocation), each span's keys scaled by
//                alpha_k C / m_k; keys outside every span are not touched (their bits stay). On
//                query rows after a span: a row sees the spans that ended at or before it, and
//                their weights are renormalised among those with mass.
// Spans that apply to one query row are one union (sorted and merged when resolved), so a key is
// scaled once. A row whose span mass or rest mass is 0 (every key in the span, or the span outside
// a sliding window) is left as it is: no share can be moved there.
//
// Per-span shares, reallocate:S1,S2,... (one share per span, in the order the spans are given):
// each span i with mass m_i > 0 is scaled by S_i / m_i, the keys outside every applicable span by
// (1 - sum S_i) / rest, the sum over the spans that took their share; with no rest mass the row is
// left as it is. The spans are kept apart (not merged); a token in two of them belongs to the
// earlier one. reallocate:S (one value) is the union form. redistribute's weights are per span in
// the same way.
//
// Exactness: with the rule off, or rescale:1, nothing is steered and the kernel's path is the one
// it runs without steering (active() is false; no extra arithmetic), so the bits are those of a
// run without --steer. Steering is per sequence and per row, so it keeps batch invariance.
//
// Two forms: SteeringSpec is what a user writes (character spans of the prompt, layer indices that
// may count from the end); Steering is resolved against a model and a tokenised prompt (token
// spans, layer and head indices), what the engine applies.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace ragform::tok {
class Tokenizer;
}

namespace ragform::runtime {

// A steering request that cannot be applied, named by the key of the steering object it is about
// (reader/steering_object.h: "rule", "spans", "layers", "heads"; "" = the object itself), so each
// front end says it its own way: the CLI as its flag (--steer-spans), the server as the request's
// field (steer.spans), Python as the dict's key (steering['spans']). `why` may name another key
// as {key} ("give one share per {spans} span"), spelled the same way. what() is the plain form:
// "spans: span 0:40 ends past the prompt's 12 bytes".
class SteerError : public UsageError {
 public:
  // A bad value, a wrong type, a key not given, a key the object does not have.
  enum class Problem { value, type, missing, unknown };
  SteerError(std::string key, std::string why, Problem problem = Problem::value);
  const std::string& key() const { return key_; }
  Problem problem() const { return problem_; }
  // "<key>: <why>" with the key and every {key} in why written by `spell`.
  std::string spelled(const std::function<std::string(const std::string& key)>& spell) const;

 private:
  std::string key_, why_;
  Problem problem_;
};

// Token positions [begin, end) of a sequence.
struct TokenSpan {
  int begin = 0, end = 0;
  bool operator==(const TokenSpan&) const = default;
};

// Byte offsets [begin, end) into the user's prompt text (before any chat template).
struct CharSpan {
  size_t begin = 0, end = 0;
  bool operator==(const CharSpan&) const = default;
};

// An inclusive layer range as written: negative indices count from the end (-1 = last layer).
struct LayerRange {
  int first = 0, last = 0;
  bool operator==(const LayerRange&) const = default;
};

struct Steering {
  enum Rule { Off, Rescale, Reallocate, Redistribute };
  Rule rule = Off;
  float value = 1.0f;            // rescale: the factor (>= 0); reallocate: the share (0..1)
  std::vector<TokenSpan> spans;  // sorted, disjoint, non-empty
  // Reallocate per span: shares[i] is spans[i]'s share (the spans then not merged); empty = value
  // for the union of the spans. Redistribute: spans[i]'s weight (always per span).
  std::vector<float> shares;
  // Tokens of the sequence the steering was resolved for: keys at or past it are generated tokens,
  // which rescale (PASTA) does not down-weight. Part of key() for rescale.
  int prompt_end = std::numeric_limits<int>::max();
  std::vector<int> layers;  // sorted, distinct; default_layers(n_layer) unless chosen
  std::vector<int> heads;   // sorted, distinct; empty = every head

  // Whether anything changes: a rule other than Off and rescale:1, at least one span and layer.
  bool active() const;
  bool steers_layer(int layer) const;
  bool steers_head(int head) const;
  // A stable one-line text of the resolved setting, "" when inactive: the prefix cache keys its
  // entries on it (steered KV rows are never reused by another setting).
  // "rescale:2|spans=3:9,12:20|layers=2,3|heads=all|prompt=40" (floats in shortest round-trip
  // form); per-span shares are listed as "reallocate:0.25,0.5|spans=...", weights as
  // "redistribute:0.25,0.75|spans=...".
  std::string key() const;
  // Human-readable: "off" or key().
  std::string describe() const;
};

// The default layers: the last half, floor(L/2) .. L-1.
std::vector<int> default_layers(int n_layer);

// Steering as a user gives it (CLI flags, a request's "steer" object, Python keywords).
struct SteeringSpec {
  Steering::Rule rule = Steering::Off;
  float value = 1.0f;
  std::vector<CharSpan> spans;
  // reallocate:S1,S2,...: one share per span, in the spans' order (empty = value for their union);
  // redistribute:W1,W2,...: one weight per span.
  std::vector<float> shares;
  std::vector<LayerRange> layers;  // empty = default_layers
  std::vector<int> heads;          // empty = every head

  // Whether it asks for a change: a rule other than Off and rescale:1, with at least one span.
  bool active() const;
  // Stable text of the request ("off" when inactive), for run identities:
  // "rescale:2|chars=10:40|layers=default|heads=all|rows=pasta" (rescale names PASTA's rows).
  std::string describe() const;
};

// Parsers of the CLI syntax; each throws SteerError(key, why) naming the bad part by `key` (the
// steering object's key whose value `text` is: "rule", "spans", "layers", "heads").
// "rescale:FACTOR" (FACTOR >= 0, finite), "reallocate:SHARE" (0 <= SHARE <= 1) or "off";
// "reallocate:S1,S2,..." gives each span its own share (each within 0..1, summing to at most 1);
// "redistribute:W1,W2,..." one weight per span (each >= 0, at least one above 0).
void parse_steer_rule(const std::string& text, SteeringSpec& into, const std::string& key);
// "START:END,..." byte offsets, START < END.
std::vector<CharSpan> parse_char_spans(const std::string& text, const std::string& key);
// "I,J,A..B,-2..-1,A-B": indices (negative from the end) and inclusive ranges.
std::vector<LayerRange> parse_layer_list(const std::string& text, const std::string& key);
// "H,H,..." non-negative head indices.
std::vector<int> parse_head_list(const std::string& text, const std::string& key);

// Layer indices for ranges (empty = default_layers), sorted and distinct; SteerError("layers")
// for an index outside the model's -L .. L-1.
std::vector<int> resolve_layers(const std::vector<LayerRange>& ranges, int n_layer);

// The byte range of each token of `ids` within `text`, the text they were tokenised from
// (raw prompt, or a rendered chat prompt): pieces are matched in order; control tokens (BOS, a
// template's markers when not found at that point) and a dummy-prefix space take no bytes.
// Throws Error("steering", ...) when a token's piece cannot be found where it should be.
std::vector<CharSpan> token_char_spans(const tok::Tokenizer& tk, std::string_view text,
                                       const std::vector<int32_t>& ids);

// The tokens with any byte in each of `spans` (offsets into the user's prompt, which starts at byte
// `prompt_offset` of the tokenised text): one token span per character span, in their order, {0, 0}
// when no token has a byte in it (resolve_steering merges them, or pairs them with per-span
// shares). Zero-width tokens (BOS, control tokens) are never in a span.
std::vector<TokenSpan> token_spans_for(const std::vector<CharSpan>& token_bytes,
                                       const std::vector<CharSpan>& spans, size_t prompt_offset);

// The Steering a spec means for a model (n_layer, n_head) and a sequence of `prompt_tokens` tokens
// whose tokens cover the given token spans (one per character span of the spec); validates head
// indices, the rule and that per-span shares and weights have one span each (SteerError naming
// "heads", "layers" or "rule"). Inactive specs give an Off Steering.
Steering resolve_steering(const SteeringSpec& spec, int n_layer, int n_head,
                          std::vector<TokenSpan> token_spans, int prompt_tokens);

// Sorted, merged, empty spans dropped.
std::vector<TokenSpan> merge_spans(std::vector<TokenSpan> spans);

// Whether per-span shares can be applied as they are: one share per span, spans non-empty,
// sorted and disjoint (what resolve_steering gives).
bool shares_fit_spans(const Steering& s);

// The rule applied to one softmax row of the query at position `pos` over keys 0..n-1: for
// rescale the spans it can see, for the others the spans that end at or before pos. w[j - first]
// is key j's weight for keys first..n-1; the keys before `first` (outside a sliding window) have
// weight 0 and are not stored, which changes no sum and no factor (their terms are exact zeros),
// so a row given from `first` is steered to the same bits as the whole row. The engine's kernel
// calls it on its rows, which start at the first key tile the window shows.
void steer_row(const Steering& s, int pos, float* w, int n, int first = 0);

}  // namespace ragform::runtime
