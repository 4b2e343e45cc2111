#include "engine/runtime/steering.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "base/error.h"
#include "base/number_text.h"
#include "engine/tokenizer/tokenizer.h"

namespace ragform::runtime {

namespace {

// `why` with each "{key}" (a word: letters and '_') written by `spell`; other braces are text
// ("an object {rule, spans, layers, heads}").
std::string spell_keys(const std::string& why,
                       const std::function<std::string(const std::string&)>& spell) {
  std::string out;
  size_t at = 0;
  for (size_t open; (open = why.find('{', at)) != std::string::npos;) {
    const size_t close = why.find('}', open);
    if (close == std::string::npos) break;
    const std::string name = why.substr(open + 1, close - open - 1);
    const bool word = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || c == '_';
    });
    out.append(why, at, open - at);
    out += word ? spell(name) : why.substr(open, close - open + 1);
    at = close + 1;
  }
  return out + why.substr(at);
}

std::string plain_key(const std::string& key) { return key.empty() ? "steering" : key; }

}  // namespace

SteerError::SteerError(std::string key, std::string why, Problem problem)
    : UsageError(plain_key(key), spell_keys(why, plain_key)),
      key_(std::move(key)),
      why_(std::move(why)),
      problem_(problem) {}

std::string SteerError::spelled(
    const std::function<std::string(const std::string& key)>& spell) const {
  return spell(key_) + ": " + spell_keys(why_, spell);
}

namespace {

// Shortest text that reads back as the same float, so keys are stable and exact.
std::string float_text(float v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

const char* rule_name(Steering::Rule r) {
  switch (r) {
    case Steering::Rescale:
      return "rescale";
    case Steering::Reallocate:
      return "reallocate";
    case Steering::Redistribute:
      return "redistribute";
    case Steering::Off:
      break;
  }
  return "off";
}

bool rule_changes(Steering::Rule r, float value) {
  return r == Steering::Reallocate || r == Steering::Redistribute ||
         (r == Steering::Rescale && value != 1.0f);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  for (;;) {
    size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    b = e + 1;
  }
}

// A whole decimal integer (optional leading '-'), or nullopt-like false.
bool parse_int(const std::string& s, long long& v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string join_floats(const std::vector<float>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + float_text(v[i]);
  return s;
}

// The rule as text: "rescale:2", "reallocate:0.5", or per span "reallocate:0.25,0.5" and
// "redistribute:0.25,0.75".
std::string rule_text(Steering::Rule r, float value, const std::vector<float>& shares) {
  return std::string(rule_name(r)) + ":" +
         (shares.empty() && r != Steering::Redistribute ? float_text(value) : join_floats(shares));
}

std::string join_ints(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

bool Steering::active() const {
  return rule_changes(rule, value) && !spans.empty() && !layers.empty();
}

bool Steering::steers_layer(int layer) const {
  return std::binary_search(layers.begin(), layers.end(), layer);
}

bool Steering::steers_head(int head) const {
  return heads.empty() || std::binary_search(heads.begin(), heads.end(), head);
}

std::string Steering::key() const {
  if (!active()) return "";
  std::string k = rule_text(rule, value, shares) + "|spans=";
  for (size_t i = 0; i < spans.size(); ++i)
    k += (i ? "," : "") + std::to_string(spans[i].begin) + ":" + std::to_string(spans[i].end);
  k += "|layers=" + join_ints(layers);
  k += "|heads=" + (heads.empty() ? std::string("all") : join_ints(heads));
  // Rescale treats keys at or past the prompt's end apart: the same spans over a longer prompt
  // give other rows.
  if (rule == Rescale && prompt_end != std::numeric_limits<int>::max())
    k += "|prompt=" + std::to_string(prompt_end);
  return k;
}

std::string Steering::describe() const { return active() ? key() : "off"; }

std::vector<int> default_layers(int n_layer) {
  std::vector<int> v;
  for (int l = n_layer / 2; l < n_layer; ++l) v.push_back(l);
  return v;
}

bool SteeringSpec::active() const { return rule_changes(rule, value) && !spans.empty(); }

std::string SteeringSpec::describe() const {
  if (!active()) return "off";
  std::string d = rule_text(rule, value, shares) + "|chars=";
  for (size_t i = 0; i < spans.size(); ++i)
    d += (i ? "," : "") + std::to_string(spans[i].begin) + ":" + std::to_string(spans[i].end);
  d += "|layers=";
  if (layers.empty()) d += "default";
  for (size_t i = 0; i < layers.size(); ++i) {
    d += i ? "," : "";
    d += std::to_string(layers[i].first);
    if (layers[i].last != layers[i].first) d += ".." + std::to_string(layers[i].last);
  }
  d += "|heads=" + (heads.empty() ? std::string("all") : join_ints(heads));
  // Rescale steers rows the PASTA way (every row, generated keys left) since issue 42; runs stored
  // before it steered only rows after the spans, so the identity says which (they never resume
  // into each other).
  if (rule == Steering::Rescale) d += "|rows=pasta";
  return d;
}

namespace {
// "S1,S2,...": per-span shares, each within 0..1 and together at most 1 (a little float slack, so
// shares written to sum to 1 are accepted).
std::vector<float> parse_shares(const std::string& list, const std::string& text,
                                const std::string& key) {
  std::vector<float> out;
  double sum = 0.0;
  for (const std::string& num : split(list, ',')) {
    const std::optional<float> f = parse_decimal_float(num);  // base/number_text.h's grammar
    if (!f) throw SteerError(key, "'" + num + "' in '" + text + "' is not a finite number");
    const double v = *f;
    if (v < 0 || v > 1)
      throw SteerError(key, "each reallocated share must be within 0..1, got " + num);
    sum += double(float(v));
    out.push_back(float(v));
  }
  if (sum > 1.0 + 1e-6)
    throw SteerError(key, "the per-span shares in '" + text + "' sum to more than 1");
  return out;
}

// "W1,W2,...": redistribute's per-span weights, each finite and >= 0, at least one above 0 (only
// their ratios matter: each row renormalises them).
std::vector<float> parse_weights(const std::string& list, const std::string& text,
                                 const std::string& key) {
  std::vector<float> out;
  bool positive = false;
  for (const std::string& num : split(list, ',')) {
    const std::optional<float> f = parse_decimal_float(num);  // base/number_text.h's grammar
    if (!f) throw SteerError(key, "'" + num + "' in '" + text + "' is not a finite number");
    if (*f < 0) throw SteerError(key, "each redistributed weight must be >= 0, got " + num);
    positive |= *f > 0;
    out.push_back(*f);
  }
  if (!positive)
    throw SteerError(key, "the weights in '" + text + "' are all 0: at least one must be above 0");
  return out;
}
}  // namespace

void parse_steer_rule(const std::string& text, SteeringSpec& into, const std::string& key) {
  into.shares.clear();
  if (text == "off") {
    into.rule = Steering::Off;
    into.value = 1.0f;
    return;
  }
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  if (colon == std::string::npos ||
      (name != "rescale" && name != "reallocate" && name != "redistribute"))
    throw SteerError(key,
                     "expected rescale:FACTOR, reallocate:SHARE, redistribute:W1,W2,... or off, "
                     "got '" +
                         text + "'");
  const std::string num = text.substr(colon + 1);
  if (name == "redistribute") {
    into.rule = Steering::Redistribute;
    into.shares = parse_weights(num, text, key);
    into.value = 1.0f;
    return;
  }
  if (num.find(',') != std::string::npos) {
    if (name != "reallocate")
      throw SteerError(key, "only reallocate takes one value per span, got '" + text + "'");
    into.rule = Steering::Reallocate;
    into.shares = parse_shares(num, text, key);
    into.value = 0.0f;
    for (float v : into.shares) into.value += v;
    return;
  }
  // The factor is a float in the kernels: 1e39 is refused here, not later as non-finite logits.
  const std::optional<float> f = parse_decimal_float(num);
  if (!f) throw SteerError(key, "'" + num + "' in '" + text + "' is not a finite number");
  const double v = *f;
  if (name == "rescale" && v < 0)
    throw SteerError(key, "the rescale factor must be >= 0, got " + num);
  if (name == "reallocate" && (v < 0 || v > 1))
    throw SteerError(key, "the reallocated share must be within 0..1, got " + num);
  into.rule = name == "rescale" ? Steering::Rescale : Steering::Reallocate;
  into.value = float(v);
}

std::vector<CharSpan> parse_char_spans(const std::string& text, const std::string& key) {
  std::vector<CharSpan> out;
  for (const std::string& part : split(text, ',')) {
    const size_t colon = part.find(':');
    long long b = 0, e = 0;
    if (colon == std::string::npos || !parse_int(part.substr(0, colon), b) ||
        !parse_int(part.substr(colon + 1), e) || b < 0 || e < 0)
      throw SteerError(key, "expected START:END byte offsets, got '" + part + "'");
    if (b >= e) throw SteerError(key, "span '" + part + "' is empty: START must be below END");
    out.push_back({size_t(b), size_t(e)});
  }
  return out;
}

std::vector<LayerRange> parse_layer_list(const std::string& text, const std::string& key) {
  std::vector<LayerRange> out;
  for (const std::string& part : split(text, ',')) {
    long long a = 0, b = 0;
    const size_t dots = part.find("..");
    // "A-B" with two non-negative numbers is a range too; "-2" alone is an index.
    const size_t dash = part.find('-', 1);
    if (part.empty()) {
      throw SteerError(key, "empty entry in '" + text + "': expected I, A..B or -2..-1");
    } else if (dots != std::string::npos) {
      if (!parse_int(part.substr(0, dots), a) || !parse_int(part.substr(dots + 2), b))
        throw SteerError(key, "expected a layer range A..B, got '" + part + "'");
    } else if (part[0] != '-' && dash != std::string::npos) {
      if (!parse_int(part.substr(0, dash), a) || !parse_int(part.substr(dash + 1), b) || b < 0)
        throw SteerError(key, "expected a layer range A-B, got '" + part + "'");
    } else if (parse_int(part, a)) {
      b = a;
    } else {
      throw SteerError(key,
                       "expected a layer index or range (I, A..B, -2..-1), got '" + part + "'");
    }
    if (a < -(1LL << 30) || a > (1LL << 30) || b < -(1LL << 30) || b > (1LL << 30))
      throw SteerError(key, "layer '" + part + "' is out of range");
    out.push_back({int(a), int(b)});
  }
  return out;
}

std::vector<int> parse_head_list(const std::string& text, const std::string& key) {
  std::vector<int> out;
  for (const std::string& part : split(text, ',')) {
    long long h = 0;
    if (!parse_int(part, h) || h < 0 || h > (1LL << 30))
      throw SteerError(key, "expected a head index (0, 1, ...), got '" + part + "'");
    out.push_back(int(h));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> resolve_layers(const std::vector<LayerRange>& ranges, int n_layer) {
  if (ranges.empty()) return default_layers(n_layer);
  std::vector<int> out;
  for (const LayerRange& r : ranges) {
    const int a = r.first < 0 ? n_layer + r.first : r.first;
    const int b = r.last < 0 ? n_layer + r.last : r.last;
    const std::string text =
        std::to_string(r.first) + (r.first == r.last ? "" : ".." + std::to_string(r.last));
    if (a < 0 || a >= n_layer || b < 0 || b >= n_layer)
      throw SteerError("layers", "layer " + text + " is outside the model's layers 0.." +
                                     std::to_string(n_layer - 1) + " (or -" +
                                     std::to_string(n_layer) + "..-1)");
    if (a > b) throw SteerError("layers", "layer range " + text + " is empty");
    for (int l = a; l <= b; ++l) out.push_back(l);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<CharSpan> token_char_spans(const tok::Tokenizer& tk, std::string_view text,
                                       const std::vector<int32_t>& ids) {
  std::vector<CharSpan> out;
  out.reserve(ids.size());
  size_t at = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    // The BOS the tokenizer adds is not in the text, even when the text starts with its spelling.
    if (i == 0 && id == tk.bos() && tk.add_bos()) {
      out.push_back({at, at});
      continue;
    }
    const std::string piece = tk.token_to_piece(id, true);
    if (!piece.empty() && text.substr(at, piece.size()) == piece) {
      out.push_back({at, at + piece.size()});
      at += piece.size();
      continue;
    }
    // SentencePiece's dummy prefix: the first word's piece starts with a space the text lacks.
    if (!piece.empty() && piece[0] == ' ' &&
        text.substr(at, piece.size() - 1) == std::string_view(piece).substr(1)) {
      out.push_back({at, at + piece.size() - 1});
      at += piece.size() - 1;
      continue;
    }
    // BOS/EOS and other control tokens that the text does not spell: no bytes.
    if (tk.is_control(id) || piece.empty()) {
      out.push_back({at, at});
      continue;
    }
    throw Error("steering", "cannot map token " + std::to_string(i) + " ('" + piece +
                                "') to the prompt text at byte " + std::to_string(at) +
                                ": steering spans need a tokenizer whose pieces spell the text");
  }
  return out;
}

std::vector<TokenSpan> merge_spans(std::vector<TokenSpan> spans) {
  spans.erase(std::remove_if(spans.begin(), spans.end(),
                             [](const TokenSpan& s) { return s.end <= s.begin; }),
              spans.end());
  std::sort(spans.begin(), spans.end(),
            [](const TokenSpan& a, const TokenSpan& b) { return a.begin < b.begin; });
  std::vector<TokenSpan> out;
  for (const TokenSpan& s : spans) {
    if (!out.empty() && s.begin <= out.back().end)
      out.back().end = std::max(out.back().end, s.end);
    else
      out.push_back(s);
  }
  return out;
}

bool shares_fit_spans(const Steering& s) {
  if (s.shares.size() != s.spans.size()) return false;
  for (size_t i = 0; i < s.spans.size(); ++i)
    if (s.spans[i].end <= s.spans[i].begin || (i && s.spans[i].begin < s.spans[i - 1].end))
      return false;
  return true;
}

std::vector<TokenSpan> token_spans_for(const std::vector<CharSpan>& token_bytes,
                                       const std::vector<CharSpan>& spans, size_t prompt_offset) {
  std::vector<TokenSpan> out;
  for (const CharSpan& c : spans) {
    const size_t b = c.begin + prompt_offset, e = c.end + prompt_offset;
    int first = -1, last = -1;
    for (size_t t = 0; t < token_bytes.size(); ++t) {
      const CharSpan& tb = token_bytes[t];
      if (tb.begin == tb.end) continue;  // BOS, control tokens: never in a span
      if (tb.begin < e && b < tb.end) {
        if (first < 0) first = int(t);
        last = int(t);
      }
    }
    out.push_back(first >= 0 ? TokenSpan{first, last + 1} : TokenSpan{0, 0});
  }
  return out;
}

namespace {
// Per-span shares: each non-empty span keeps its share, sorted by start; a token in two spans
// stays with the earlier one (the later span starts after it), so every key has one share.
void pair_shares(Steering& s, const std::vector<float>& shares, std::vector<TokenSpan> spans) {
  std::vector<std::pair<TokenSpan, float>> pairs;
  for (size_t i = 0; i < spans.size(); ++i)
    if (spans[i].end > spans[i].begin) pairs.push_back({spans[i], shares[i]});
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
  for (auto& [span, share] : pairs) {
    if (!s.spans.empty()) span.begin = std::max(span.begin, s.spans.back().end);
    if (span.end <= span.begin) continue;
    s.spans.push_back(span);
    s.shares.push_back(share);
  }
}
}  // namespace

Steering resolve_steering(const SteeringSpec& spec, int n_layer, int n_head,
                          std::vector<TokenSpan> token_spans, int prompt_tokens) {
  Steering s;
  if (!spec.active()) return s;
  s.prompt_end = prompt_tokens;
  for (int h : spec.heads)
    if (h < 0 || h >= n_head)
      throw SteerError("heads", "head " + std::to_string(h) + " is outside the model's 0.." +
                                    std::to_string(n_head - 1));
  s.rule = spec.rule;
  s.value = spec.value;
  s.layers = resolve_layers(spec.layers, n_layer);
  s.heads = spec.heads;
  std::sort(s.heads.begin(), s.heads.end());
  s.heads.erase(std::unique(s.heads.begin(), s.heads.end()), s.heads.end());
  if (int(s.heads.size()) == n_head) s.heads.clear();  // every head, written one way
  if (spec.shares.empty()) {
    s.spans = merge_spans(std::move(token_spans));
  } else {
    const bool weights = spec.rule == Steering::Redistribute;
    if (spec.shares.size() != token_spans.size())
      throw SteerError("rule", std::to_string(spec.shares.size()) +
                                   (weights ? " per-span weights for " : " per-span shares for ") +
                                   std::to_string(token_spans.size()) + " spans: give one " +
                                   (weights ? "weight" : "share") + " per {spans} span");
    pair_shares(s, spec.shares, std::move(token_spans));
  }
  return s;
}

namespace {
// f(j, inside) for keys j = first..n-1 in order, inside = key j is in a span that ends at or
// before pos. Spans are sorted and disjoint, so their ends are sorted too: the first that ends
// after pos ends the applicable ones.
template <class F>
void for_keys(const Steering& s, int pos, int first, int n, const F& f) {
  int j = first;
  for (const TokenSpan& sp : s.spans) {
    if (sp.end > pos) break;
    const int b = std::min(sp.begin, n), e = std::min(sp.end, n);
    for (; j < b; ++j) f(j, false);
    for (; j < e; ++j) f(j, true);
  }
  for (; j < n; ++j) f(j, false);
}

// PASTA's membership (rescale): f(j, inside) for keys j = first..n-1, inside = key j is in a span
// (the part of it the row sees) or at or past the prompt's end (a generated token).
template <class F>
void for_keys_pasta(const Steering& s, int first, int n, const F& f) {
  const int gen = std::min(std::max(s.prompt_end, 0), n);
  int j = first;
  for (const TokenSpan& sp : s.spans) {
    const int b = std::min(sp.begin, gen), e = std::min(sp.end, gen);
    if (b >= gen) break;
    for (; j < b; ++j) f(j, false);
    for (; j < e; ++j) f(j, true);
  }
  for (; j < gen; ++j) f(j, false);
  for (; j < n; ++j) f(j, true);
}
}  // namespace

namespace {
// Per-span reallocation of one row (Steering::shares): the masses of the applicable spans and of
// the rest summed in double, keys in order; a span without mass gives its share to no one. w[j -
// first] is key j's weight (steer_row).
void reallocate_each(const Steering& s, int pos, float* w, int first, int n) {
  thread_local std::vector<double> mass;
  mass.clear();
  double rest = 0.0;
  int j = first;
  for (const TokenSpan& sp : s.spans) {
    if (sp.end > pos) break;
    const int b = std::min(sp.begin, n), e = std::min(sp.end, n);
    for (; j < b; ++j) rest += double(w[j - first]);
    double m = 0.0;
    for (; j < e; ++j) m += double(w[j - first]);
    mass.push_back(m);
  }
  for (; j < n; ++j) rest += double(w[j - first]);
  double given = 0.0;
  bool any = false;
  for (size_t i = 0; i < mass.size(); ++i)
    if (mass[i] > 0.0) given += double(s.shares[i]), any = true;
  if (rest <= 0.0 || !any) return;
  const float fb = float(std::max(0.0, 1.0 - given) / rest);
  j = first;
  for (size_t i = 0; i < mass.size(); ++i) {
    const TokenSpan& sp = s.spans[i];
    const int b = std::min(sp.begin, n), e = std::min(sp.end, n);
    for (; j < b; ++j) w[j - first] *= fb;
    const float fa = mass[i] > 0.0 ? float(double(s.shares[i]) / mass[i]) : 1.0f;
    for (; j < e; ++j) w[j - first] *= fa;
  }
  for (; j < n; ++j) w[j - first] *= fb;
}
}  // namespace

namespace {
// Found in the Middle's eq. 5-6 on one row (Steering::Redistribute): the applicable spans' masses
// m_i and total C summed in double, keys in order; span i's keys times w_i C / (W m_i), W the
// weights' sum over the spans with mass. Keys outside every span are not touched.
void redistribute_each(const Steering& s, int pos, float* w, int first, int n) {
  thread_local std::vector<double> mass;
  mass.clear();
  double total = 0.0, weights = 0.0;
  for (size_t i = 0; i < s.spans.size() && s.spans[i].end <= pos; ++i) {
    const int b = std::clamp(s.spans[i].begin, first, n), e = std::min(s.spans[i].end, n);
    double m = 0.0;
    for (int j = b; j < e; ++j) m += double(w[j - first]);
    mass.push_back(m);
    total += m;
    if (m > 0.0) weights += double(s.shares[i]);
  }
  if (total <= 0.0 || weights <= 0.0) return;
  for (size_t i = 0; i < mass.size(); ++i) {
    if (mass[i] <= 0.0) continue;
    const float f = float(double(s.shares[i]) / weights * total / mass[i]);
    const int b = std::clamp(s.spans[i].begin, first, n), e = std::min(s.spans[i].end, n);
    for (int j = b; j < e; ++j) w[j - first] *= f;
  }
}
}  // namespace

void steer_row(const Steering& s, int pos, float* w, int n, int first) {
  if (s.spans.empty()) return;
  first = std::clamp(first, 0, n);
  if (s.rule == Steering::Rescale) {
    // A row that sees no span key and no generated key is unchanged (alpha cancels): skip the
    // passes over its keys, as the prefill rows before the first span are.
    if (s.spans.front().begin >= n && n <= s.prompt_end) return;
    // PASTA: the span keys the row sees (and generated keys) against the prompt's other keys.
    double in = 0.0, rest = 0.0;
    for_keys_pasta(s, first, n,
                   [&](int j, bool inside) { (inside ? in : rest) += double(w[j - first]); });
    const double z = rest + double(s.value) * in;
    if (in <= 0.0 || rest <= 0.0 || z <= 0.0) return;  // alpha cancels: the row is unchanged
    const float fa = float(double(s.value) / z), fb = float(1.0 / z);
    for_keys_pasta(s, first, n, [&](int j, bool inside) { w[j - first] *= inside ? fa : fb; });
    return;
  }
  if (s.spans.front().end > pos) return;  // no span before this query
  if (s.rule == Steering::Redistribute) return redistribute_each(s, pos, w, first, n);
  if (!s.shares.empty()) return reallocate_each(s, pos, w, first, n);
  // Span mass and rest mass, summed in double (as the softmax sums), keys in order.
  double in = 0.0, rest = 0.0;
  for_keys(s, pos, first, n,
           [&](int j, bool inside) { (inside ? in : rest) += double(w[j - first]); });
  double a = 1.0, b = 1.0;  // factors for span keys and the others
  if (s.rule == Steering::Reallocate) {
    if (in <= 0.0 || rest <= 0.0) return;
    a = double(s.value) / in;
    b = (1.0 - double(s.value)) / rest;
  } else {
    return;
  }
  const float fa = float(a), fb = float(b);
  for_keys(s, pos, first, n, [&](int j, bool inside) { w[j - first] *= inside ? fa : fb; });
}

}  // namespace ragform::runtime
