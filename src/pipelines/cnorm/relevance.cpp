#include "pipelines/cnorm/relevance.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "base/error.h"
#include "base/excerpt.h"
#include "base/json_file.h"
#include "base/json_number.h"
#include "base/options.h"
#include "pipelines/cnorm/detail/numeric.h"

namespace ragform::cnorm {

namespace {

size_t parse_offset(std::string_view s, const std::string& flag, std::string_view item) {
  size_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || p != s.data() + s.size())
    throw UsageError(flag, "expected START:END (byte offsets), got '" + excerpt(item) + "'");
  return v;
}

void check_span(const CharSpan& c, const std::string& flag) {
  if (c.end <= c.begin)
    throw UsageError(flag, "span " + std::to_string(c.begin) + ":" + std::to_string(c.end) +
                               " is empty or ends before it starts");
}

[[noreturn]] void too_many_spans(const std::string& flag) {
  throw UsageError(flag, "more than " + std::to_string(kMaxDocSpans) +
                             " document spans (the limit of one request)");
}

}  // namespace

Measure parse_measure(const std::string& s, const std::string& flag) {
  if (s == "mean") return Measure::Mean;
  if (s == "sum") return Measure::Sum;
  throw OptionError(flag, "expected mean or sum, got '" + excerpt(s) + "'");
}

const char* measure_name(Measure m) { return m == Measure::Sum ? "sum" : "mean"; }

std::vector<double> softmax_allocation(const std::vector<double>& relevance, double t) {
  if (!(t > 0) || !std::isfinite(t))
    throw UsageError("--temperature", "must be a finite number above 0");
  if (relevance.empty()) return {};
  const double top = *std::max_element(relevance.begin(), relevance.end());
  std::vector<double> out;
  double z = 0;
  for (double r : relevance) {
    out.push_back(std::exp((r - top) / t));
    z += out.back();
  }
  for (double& a : out) a /= z;  // z >= 1: the largest term is exp(0)
  return out;
}

void check_document_work(size_t spans, size_t rows, size_t positions, const std::string& field) {
  if (spans == 0) return;
  if (rows > kMaxDocSpanRows / spans)
    throw UsageError(field, std::to_string(spans) + " document spans x " + std::to_string(rows) +
                                " attention rows exceed the limit of " +
                                std::to_string(kMaxDocSpanRows) + " (ask for fewer rows)");
  if (positions > kMaxDocSpanWork / (spans * rows))
    throw UsageError(field, std::to_string(spans) + " document spans x " + std::to_string(rows) +
                                " attention rows x " + std::to_string(positions) +
                                " positions exceed the limit of " +
                                std::to_string(kMaxDocSpanWork) + " (ask for fewer rows)");
}

std::vector<CharSpan> parse_char_spans(std::string_view text, const std::string& flag) {
  std::vector<CharSpan> out;
  if (text.empty()) throw UsageError(flag, "expected START:END,... (byte offsets), got nothing");
  size_t from = 0;
  while (from <= text.size()) {
    size_t comma = text.find(',', from);
    std::string_view item =
        text.substr(from, comma == std::string_view::npos ? text.npos : comma - from);
    size_t colon = item.find(':');
    if (colon == std::string_view::npos)
      throw UsageError(flag, "expected START:END (byte offsets), got '" + excerpt(item) + "'");
    CharSpan c{parse_offset(item.substr(0, colon), flag, item),
               parse_offset(item.substr(colon + 1), flag, item)};
    check_span(c, flag);
    if (out.size() == kMaxDocSpans) too_many_spans(flag);
    out.push_back(c);
    if (comma == std::string_view::npos) break;
    from = comma + 1;
  }
  return out;
}

std::vector<CharSpan> char_spans_from_json(const nlohmann::json& j, const std::string& field) {
  const std::string shape = "must be an array of [start, end] byte offsets";
  if (!j.is_array() || j.empty()) throw UsageError(field, shape);
  if (j.size() > kMaxDocSpans) too_many_spans(field);
  std::vector<CharSpan> out;
  for (const auto& s : j) {
    long long a = 0, b = 0;  // whole numbers however written (3.0 as 3)
    if (!s.is_array() || s.size() != 2 || !json_whole_number(s[0], a) ||
        !json_whole_number(s[1], b) || a < 0 || b < 0)
      throw UsageError(field, shape + ", got " + json_excerpt(s));
    CharSpan c{size_t(a), size_t(b)};
    check_span(c, field);
    out.push_back(c);
  }
  return out;
}

std::vector<CharSpan> token_chars(const std::string& prompt, const std::vector<std::string>& pieces,
                                  std::optional<size_t> told_at) {
  // The pieces spell the rendered prompt: BOS, a chat template's turn markers around the user's
  // text, SentencePiece's dummy-prefix space. The user's text is where the reader says it starts
  // (the native reader knows its rendering); else its last occurrence (the user turn follows any
  // system turn), so a template piece equal to the text's first word ("user") is never taken for
  // it, though a text the reply's header repeats ("model") would be.
  std::string spelt;
  std::vector<size_t> at;
  for (const std::string& p : pieces) {
    at.push_back(spelt.size());
    spelt += p;
  }
  at.push_back(spelt.size());
  const bool told =
      told_at && *told_at <= spelt.size() && spelt.compare(*told_at, prompt.size(), prompt) == 0;
  const size_t from = told ? *told_at : spelt.rfind(prompt);
  if (from == std::string::npos)
    throw Error("document spans", "the prompt's tokens do not spell its " +
                                      std::to_string(prompt.size()) +
                                      " bytes (was it truncated to fit the context?)");
  const size_t to = from + prompt.size();
  std::vector<CharSpan> out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const size_t b = std::max(at[i], from), e = std::min(at[i + 1], to);
    out.push_back(b < e ? CharSpan{b - from, e - from} : CharSpan{0, 0});
  }
  return out;
}

std::vector<TokenSpan> resolve_spans(const std::string& prompt,
                                     const std::vector<std::string>& pieces,
                                     const std::vector<CharSpan>& spans, std::optional<size_t> at) {
  for (const CharSpan& s : spans)
    if (s.end > prompt.size())
      throw UsageError("document spans", "span " + std::to_string(s.begin) + ":" +
                                             std::to_string(s.end) + " ends past the prompt's " +
                                             std::to_string(prompt.size()) + " bytes");
  const std::vector<CharSpan> chars = token_chars(prompt, pieces, at);
  std::vector<TokenSpan> out;
  for (const CharSpan& s : spans) {
    TokenSpan t{chars.size(), chars.size()};
    for (size_t i = 0; i < chars.size(); ++i) {
      const CharSpan& c = chars[i];
      if (c.begin == c.end || c.end <= s.begin || c.begin >= s.end) continue;  // no shared byte
      if (t.begin == chars.size()) t.begin = i;
      t.end = i + 1;
    }
    if (t.begin == chars.size()) t = {0, 0};
    out.push_back(t);
  }
  return out;
}

std::vector<double> span_masses(const std::vector<float>& row,
                                const std::vector<TokenSpan>& spans) {
  std::vector<double> out;
  for (const TokenSpan& s : spans) {
    double m = 0;
    for (size_t t = s.begin; t < std::min(s.end, row.size()); ++t) m += row[t];
    out.push_back(m);
  }
  return out;
}

std::vector<double> span_attention(const std::vector<float>& row,
                                   const std::vector<TokenSpan>& spans, Measure m) {
  std::vector<double> out = span_masses(row, spans);
  if (m == Measure::Mean)
    for (size_t i = 0; i < spans.size(); ++i) {
      const size_t n = std::min(spans[i].end, row.size()) - std::min(spans[i].begin, row.size());
      out[i] = n ? out[i] / double(n) : 0.0;
    }
  return out;
}

std::vector<double> layer_mean_attention(reader::Reader& r, const std::string& prompt,
                                         const std::vector<CharSpan>& spans,
                                         const std::vector<int>& layers, Measure measure) {
  reader::AttentionQuery q;
  q.layers = layers;
  q.query_positions = {-1};
  const reader::AttentionResult res = r.attention(prompt, q);
  const std::vector<TokenSpan> tok = resolve_spans(prompt, res.pieces, spans, res.prompt_at);
  std::vector<double> mass(spans.size(), 0.0);
  for (const auto& row : res.rows) {
    const std::vector<double> m = span_attention(row.mean, tok, measure);
    for (size_t i = 0; i < m.size(); ++i) mass[i] += m[i] / double(res.rows.size());
  }
  return mass;
}

std::vector<double> calibrated_relevance(const std::vector<double>& attention,
                                         const std::vector<double>& bias) {
  if (attention.size() != bias.size())
    throw Error("calibrated relevance", std::to_string(attention.size()) +
                                            " documents but a bias curve of " +
                                            std::to_string(bias.size()) + " slots");
  std::vector<double> out(attention.size());
  for (size_t k = 0; k < attention.size(); ++k) out[k] = attention[k] - bias[k];
  return out;
}

std::vector<size_t> rank_documents(const std::vector<double>& scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  return order;
}

std::vector<DocumentRelevance> document_relevance(const std::string& prompt,
                                                  const reader::AttentionResult& r,
                                                  const reader::AttentionRows& row,
                                                  const std::vector<CharSpan>& spans,
                                                  const std::vector<double>* bias, Measure m) {
  // A document's slot in the bias curve is its place among the prompt's documents: with a curve
  // the spans are those documents, in the prompt's order and apart (pass 23: a list in another
  // order calibrated each document with another slot's bias, and a span given twice with two).
  if (bias)
    for (size_t k = 1; k < spans.size(); ++k)
      if (spans[k].begin < spans[k - 1].end)
        throw UsageError("document spans",
                         "span " + std::to_string(spans[k].begin) + ":" +
                             std::to_string(spans[k].end) + " starts before span " +
                             std::to_string(spans[k - 1].begin) + ":" +
                             std::to_string(spans[k - 1].end) +
                             " ends: calibrated relevance takes the documents in the prompt's "
                             "order, apart (a document's slot in the bias curve is its place)");
  const std::vector<TokenSpan> tokens = resolve_spans(prompt, r.pieces, spans, r.prompt_at);
  const std::vector<double> mass = span_masses(row.mean, tokens);
  const std::vector<double> mean = span_attention(row.mean, tokens, Measure::Mean);
  const std::vector<double> cal =
      bias ? calibrated_relevance(m == Measure::Mean ? mean : mass, *bias) : mass;
  std::vector<DocumentRelevance> out;
  for (size_t k = 0; k < spans.size(); ++k)
    out.push_back({k, spans[k], tokens[k], mass[k], mean[k], bias ? (*bias)[k] : 0.0, cal[k]});
  return out;
}

nlohmann::json document_relevance_json(const std::vector<DocumentRelevance>& docs, bool calibrated,
                                       Measure m) {
  nlohmann::json list = nlohmann::json::array();
  std::vector<double> scores;
  for (const DocumentRelevance& d : docs) {
    nlohmann::json j = {{"slot", d.slot},
                        {"start", d.chars.begin},
                        {"end", d.chars.end},
                        {"token_start", d.tokens.begin},
                        {"token_end", d.tokens.end},
                        {"mass", detail::round9(d.mass)},
                        {"mean", detail::round9(d.mean)}};
    if (calibrated) {
      j["bias"] = detail::round9(d.bias);
      j["calibrated"] = detail::round9(d.calibrated);
    }
    list.push_back(j);
    scores.push_back(calibrated ? d.calibrated : d.mass);
  }
  nlohmann::json out = {{"documents", list}, {"ranking", rank_documents(scores)}};
  if (calibrated) out["measure"] = measure_name(m);
  return out;
}

}  // namespace ragform::cnorm
