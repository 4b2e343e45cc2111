#include "reader/steering_object.h"

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "base/excerpt.h"
#include "base/json_file.h"
#include "base/json_number.h"

namespace ragform::reader {

namespace {

using nlohmann::json;
using runtime::SteerError;
using Problem = SteerError::Problem;

// A whole JSON number within [lo, hi] (3.0 as 3, base/json_number.h), its value in `x`: from
// Python or a request, 2^32 must not wrap into a valid looking index.
bool whole_in(const json& v, long long lo, long long hi, long long& x) {
  return json_whole_number(v, x) && x >= lo && x <= hi;
}

std::vector<runtime::CharSpan> spans_of(const json& v) {
  const char* shape = "expected a non-empty list of [start, end] byte offsets, start below end";
  if (!v.is_array() || v.empty()) throw SteerError("spans", shape, Problem::type);
  std::vector<runtime::CharSpan> out;
  for (const json& sp : v) {
    long long a = 0, b = 0;
    if (!sp.is_array() || sp.size() != 2 || !whole_in(sp[0], 0, LLONG_MAX - 1, a) ||
        !whole_in(sp[1], 0, LLONG_MAX - 1, b) || a >= b)
      throw SteerError("spans", std::string(shape) + ", got " + json_excerpt(sp));
    out.push_back({size_t(a), size_t(b)});
  }
  return out;
}

// Indices as a list (each an int at least `lo`), for layers and heads.
std::vector<int> indices_of(const json& v, const char* key, long long lo, const char* shape) {
  if (!v.is_array()) throw SteerError(key, std::string("expected ") + shape, Problem::type);
  // An empty list steered the default layers and every head (pass 20), where the CLI refuses an
  // empty --steer-layers / --steer-heads: absent or null means the default, [] nothing.
  if (v.empty())
    throw SteerError(key, std::string("expected ") + shape +
                              ", at least one (leave the key out for the default)");
  std::vector<int> out;
  for (const json& x : v) {
    long long i = 0;
    if (!json_whole_number(x, i))
      throw SteerError(key, std::string("expected ") + shape + ", got " + json_excerpt(x),
                       Problem::type);
    if (!whole_in(x, lo, INT_MAX, i))
      throw SteerError(key, std::string(lo == 0 ? "head indices are 0, 1, ..., got "
                                                : "a layer index is an int, got ") +
                                json_excerpt(x));
    out.push_back(int(i));
  }
  return out;
}

}  // namespace

SteeringParams parse_steering(const json& o) {
  SteeringParams s;
  if (o.is_null()) return s;
  if (!o.is_object())
    throw SteerError("", "expected an object {rule, spans, layers, heads}, got " + json_excerpt(o),
                     Problem::type);
  // A null value is a key not given (base/json_keys.h), whatever the key.
  for (const auto& [k, v] : o.items())
    if (!v.is_null() && k != "rule" && k != "spans" && k != "layers" && k != "heads")
      throw SteerError("",
                       "unknown key '" + printable(excerpt(k)) + "' (rule, spans, layers, heads)",
                       Problem::unknown);
  const json rule = o.value("rule", json());
  if (rule.is_null())
    throw SteerError("rule",
                     "missing: rescale:FACTOR, reallocate:SHARE, redistribute:W1,W2,... or off",
                     Problem::missing);
  if (!rule.is_string())
    throw SteerError("rule", "expected a string, got " + json_excerpt(rule), Problem::type);
  runtime::parse_steer_rule(rule.get<std::string>(), s, "rule");
  const json spans = o.value("spans", json());
  if (!spans.is_null())
    s.spans = spans_of(spans);
  else if (s.rule != runtime::Steering::Off)
    throw SteerError("rule", "needs {spans} (the prompt's byte ranges to steer)", Problem::missing);
  const json layers = o.value("layers", json());
  if (layers.is_string())
    s.layers = runtime::parse_layer_list(layers.get<std::string>(), "layers");
  else if (!layers.is_null())
    for (int l : indices_of(layers, "layers", INT_MIN, "layer indices or a string \"A..B,-1\""))
      s.layers.push_back({l, l});
  const json heads = o.value("heads", json());
  if (!heads.is_null()) s.heads = indices_of(heads, "heads", 0, "a list of head indices");
  return s;
}

}  // namespace ragform::reader
